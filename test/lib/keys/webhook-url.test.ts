import { isInternalAddress, webhookUrlProblem } from "../../../lib/keys/webhook-url";

const dev = { production: false };
const prod = { production: true };

describe("lib/keys/webhook-url", () => {
	it("accepts http(s) URLs in development, including local ones", () => {
		for (const url of ["http://localhost:4000/hook", "https://merchant.example/hooks?x=1", "http://127.0.0.1:9/h", "http://[::1]:8080/"]) {
			expect(webhookUrlProblem(url, dev)).toBeNull();
		}
	});

	it("refuses anything that is not an absolute http(s) URL without credentials", () => {
		for (const url of ["ftp://example.com/", "javascript:alert(1)", "example.com/hook", "", "http://", "https://user:pw@example.com/", "file:///etc/passwd", "https://x.example/" + "a".repeat(2048)]) {
			expect(webhookUrlProblem(url, dev)).toBe("invalidUrl");
		}
	});

	it("in production requires HTTPS and a public address", () => {
		expect(webhookUrlProblem("https://merchant.example/hooks", prod)).toBeNull();
		expect(webhookUrlProblem("https://93.184.216.34/hooks", prod)).toBeNull();
		expect(webhookUrlProblem("http://merchant.example/hooks", prod)).toBe("httpsRequired");
		for (const url of [
			"https://localhost/",
			"https://api.localhost/",
			"https://127.0.0.1/",
			"https://0x7f.1/",
			"https://10.1.2.3/",
			"https://172.20.0.1/",
			"https://192.168.1.1/",
			"https://169.254.169.254/latest/meta-data",
			"https://100.64.0.1/",
			"https://0.0.0.0/",
			"https://[::1]/",
			"https://[fd00::1]/",
			"https://[fe80::1]/",
			"https://[::ffff:127.0.0.1]/",
			"https://[::ffff:a00:1]/",
		]) {
			expect([url, webhookUrlProblem(url, prod)]).toEqual([url, "privateAddress"]);
		}
	});

	it("classifies literal addresses", () => {
		expect(isInternalAddress("8.8.8.8")).toBe(false);
		expect(isInternalAddress("2606:4700::1111")).toBe(false);
		expect(isInternalAddress("192.168.0.10")).toBe(true);
		expect(isInternalAddress("merchant.example")).toBe(false);
	});
});
