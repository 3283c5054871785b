import { isDelivered, nextAttemptAt, truncateResponse } from "../../../lib/webhooks/policy";
import { webhooksConfigFromEnv } from "../../../lib/webhooks/config";

describe("webhook delivery policy", () => {
	const spec = webhooksConfigFromEnv({}, false);
	const t0 = new Date("2026-11-23T10:00:00.000Z");

	it("has the spec's constants as defaults", () => {
		expect(spec.maxAttempts).toBe(3);
		expect(spec.backoffMs).toBe(2000);
		expect(spec.timeoutMs).toBe(10_000);
		expect(spec.leaseMs).toBeGreaterThan(spec.timeoutMs);
		expect(spec.enforcePublicUrls).toBe(false);
		expect(webhooksConfigFromEnv({}, true).enforcePublicUrls).toBe(true);
	});

	it("retries after 2 s, then 4 s, then stops at 3 attempts", () => {
		expect(nextAttemptAt(spec, 1, t0)!.getTime() - t0.getTime()).toBe(2000);
		expect(nextAttemptAt(spec, 2, t0)!.getTime() - t0.getTime()).toBe(4000);
		expect(nextAttemptAt(spec, 3, t0)).toBeNull();
		expect(nextAttemptAt({ maxAttempts: 5, backoffMs: 100 }, 4, t0)!.getTime() - t0.getTime()).toBe(800);
	});

	it("counts only 200 as delivered", () => {
		expect(isDelivered(200)).toBe(true);
		for (const code of [201, 202, 204, 301, 400, 500, null]) expect(isDelivered(code)).toBe(false);
	});

	it("cuts long responses and says so", () => {
		expect(truncateResponse("short", 10)).toBe("short");
		expect(truncateResponse("x".repeat(20), 10)).toBe(`${"x".repeat(10)}…[truncated]`);
	});

	it("rejects nonsense settings at start", () => {
		expect(() => webhooksConfigFromEnv({ WEBHOOK_MAX_ATTEMPTS: "0" }, false)).toThrow(/WEBHOOK_MAX_ATTEMPTS/);
		expect(() => webhooksConfigFromEnv({ WEBHOOK_TIMEOUT_MS: "abc" }, false)).toThrow(/WEBHOOK_TIMEOUT_MS/);
		expect(() => webhooksConfigFromEnv({ WEBHOOK_LEASE_MS: "1000" }, false)).toThrow(/WEBHOOK_LEASE_MS/);
	});
});
