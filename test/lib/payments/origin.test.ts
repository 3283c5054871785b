import { frontendOrigin } from "../../../lib/payments/origin";

describe("frontendOrigin", () => {
	const pub = "https://pay.example.com/base";
	it("uses a trusted Origin or Referer, reduced to its origin", () => {
		expect(frontendOrigin("https://shop.example.com", ["https://shop.example.com"], pub)).toBe("https://shop.example.com");
		expect(frontendOrigin("https://shop.example.com/cart?x=1", ["https://shop.example.com"], pub)).toBe("https://shop.example.com");
		expect(frontendOrigin("https://a.example.org", ["https://*.example.org"], pub)).toBe("https://a.example.org");
		expect(frontendOrigin("https://pay.example.com/pay/pl_x", [], pub)).toBe("https://pay.example.com");
	});
	it("falls back to the public URL for anything else", () => {
		expect(frontendOrigin(undefined, [], pub)).toBe("https://pay.example.com");
		expect(frontendOrigin("https://evil.example.net", ["https://shop.example.com"], pub)).toBe("https://pay.example.com");
		expect(frontendOrigin("https://a.b.example.org", ["https://*.example.org"], pub)).toBe("https://pay.example.com");
		expect(frontendOrigin("javascript:alert(1)", ["*"], pub)).toBe("https://pay.example.com");
		expect(frontendOrigin("not a url", ["*"], pub)).toBe("https://pay.example.com");
	});
	it("accepts any http(s) origin when the operator allows every origin", () => {
		expect(frontendOrigin("http://localhost:5173", ["*"], pub)).toBe("http://localhost:5173");
	});
});
