/** verifyWebhook: signature over the raw bytes, constant-time compare, clear refusals, the time tolerance. */
import { signWebhook, verifyWebhook, WebhookVerificationError } from "../../sdk/src";
import { signWebhookBody } from "../../lib/webhooks/signature";

const secret = "sk_test_abc";
const created = "2026-11-26T12:00:00.000Z";
const now = Date.parse(created) + 1000;
const body = JSON.stringify({ id: "evt_1", type: "payment_intent.completed", created, livemode: false, data: { object: { id: "pi_1", amount: "1.5" } } });

function code(f: () => unknown): string {
	try {
		f();
		return "accepted";
	} catch (e) {
		if (e instanceof WebhookVerificationError) return e.code;
		throw e;
	}
}

describe("sdk/src/webhooks", () => {
	it("signs exactly as the gateway's sender does", () => {
		expect(signWebhook(body, secret)).toBe(signWebhookBody(body, secret));
	});

	it("accepts the signed body (string or bytes, header in any case or as a one-item array) and returns the event", () => {
		const sig = signWebhook(body, secret);
		expect(verifyWebhook(body, sig, secret, { now })).toMatchObject({ id: "evt_1", type: "payment_intent.completed" });
		expect(verifyWebhook(Buffer.from(body), sig.toUpperCase(), secret, { now }).id).toBe("evt_1");
		expect(verifyWebhook(new Uint8Array(Buffer.from(body)), [sig], secret, { now }).id).toBe("evt_1");
	});

	it("refuses with a code saying why", () => {
		const sig = signWebhook(body, secret);
		expect(code(() => verifyWebhook(body, sig, "", { now }))).toBe("missing_secret");
		expect(code(() => verifyWebhook(body, undefined, secret, { now }))).toBe("missing_signature");
		expect(code(() => verifyWebhook(body, "", secret, { now }))).toBe("missing_signature");
		expect(code(() => verifyWebhook(body, "sha256=abc", secret, { now }))).toBe("malformed_signature");
		expect(code(() => verifyWebhook(body, sig.slice(2), secret, { now }))).toBe("malformed_signature");
		expect(code(() => verifyWebhook(body, [sig, sig], secret, { now }))).toBe("malformed_signature");
		expect(code(() => verifyWebhook(body.replace("1.5", "15"), sig, secret, { now }))).toBe("signature_mismatch");
		expect(code(() => verifyWebhook(body, sig, "sk_test_other", { now }))).toBe("signature_mismatch");
		expect(code(() => verifyWebhook("not json", signWebhook("not json", secret), secret, { now }))).toBe("invalid_body");
		expect(code(() => verifyWebhook("{}", signWebhook("{}", secret), secret, { now }))).toBe("invalid_body");
	});

	it("accepts a late delivery by default (an outage's backlog); with toleranceSeconds refuses an event created further from now, either way", () => {
		const sig = signWebhook(body, secret);
		const at = Date.parse(created);
		expect(code(() => verifyWebhook(body, sig, secret, { now: at + 86_400_000 }))).toBe("accepted");
		expect(code(() => verifyWebhook(body, sig, secret, { now: at + 300_000, toleranceSeconds: 300 }))).toBe("accepted");
		expect(code(() => verifyWebhook(body, sig, secret, { now: at + 300_001, toleranceSeconds: 300 }))).toBe("timestamp_outside_tolerance");
		expect(code(() => verifyWebhook(body, sig, secret, { now: at - 300_001, toleranceSeconds: 300 }))).toBe("timestamp_outside_tolerance");
		expect(code(() => verifyWebhook(body, sig, secret, { now: at + 60_000, toleranceSeconds: 30 }))).toBe("timestamp_outside_tolerance");
		expect(code(() => verifyWebhook(body, sig, secret, { now: at + 86_400_000, toleranceSeconds: Infinity }))).toBe("accepted");
		const undated = JSON.stringify({ id: "evt_2", type: "payment_intent.completed" });
		expect(code(() => verifyWebhook(undated, signWebhook(undated, secret), secret, { now, toleranceSeconds: 300 }))).toBe("invalid_body");
	});
});
