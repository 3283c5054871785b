import crypto from "node:crypto";
import { signWebhookBody, verifyWebhookSignature } from "../../../lib/webhooks/signature";

describe("webhook signatures", () => {
	const secret = "sk_test_secret_value";
	const body = '{"id":"evt_1","type":"payment_intent.completed","data":{"object":{"amount":"1.5"}}}';

	it("is the hex HMAC-SHA256 of the raw body", () => {
		const expected = crypto.createHmac("sha256", secret).update(body).digest("hex");
		expect(signWebhookBody(body, secret)).toBe(expected);
		expect(signWebhookBody(Buffer.from(body), secret)).toBe(expected);
	});

	it("verifies the signature of the exact bytes, in either case", () => {
		const sig = signWebhookBody(body, secret);
		expect(verifyWebhookSignature(body, sig, secret)).toBe(true);
		expect(verifyWebhookSignature(Buffer.from(body), sig.toUpperCase(), secret)).toBe(true);
		expect(verifyWebhookSignature(body, [sig], secret)).toBe(true);
	});

	it("refuses another body, another secret and malformed headers", () => {
		const sig = signWebhookBody(body, secret);
		// Re-serialised JSON is other bytes: receivers must verify before parsing.
		expect(verifyWebhookSignature(JSON.stringify(JSON.parse(body), null, 1), sig, secret)).toBe(false);
		expect(verifyWebhookSignature(body, sig, "other")).toBe(false);
		expect(verifyWebhookSignature(body, sig.slice(0, 63), secret)).toBe(false);
		expect(verifyWebhookSignature(body, `${sig}00`, secret)).toBe(false);
		expect(verifyWebhookSignature(body, "z".repeat(64), secret)).toBe(false);
		expect(verifyWebhookSignature(body, undefined, secret)).toBe(false);
		expect(verifyWebhookSignature(body, null, secret)).toBe(false);
		expect(verifyWebhookSignature(body, sig, "")).toBe(false);
	});
});
