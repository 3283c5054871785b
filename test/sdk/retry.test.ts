/** The retry rules: which outcomes are retried for which requests, and Retry-After parsing. */
import { isIdempotentRequest, isRetryableOutcome, parseRetryAfter } from "../../sdk/src";

describe("sdk/src/retry", () => {
	it("parses Retry-After as seconds or an HTTP date", () => {
		const now = Date.parse("2026-11-26T12:00:00Z");
		expect(parseRetryAfter("2", now)).toBe(2000);
		expect(parseRetryAfter(" 0 ", now)).toBe(0);
		expect(parseRetryAfter("Thu, 26 Nov 2026 12:00:05 GMT", now)).toBe(5000);
		expect(parseRetryAfter("Thu, 26 Nov 2026 11:00:00 GMT", now)).toBe(0);
		for (const bad of [null, undefined, "", "-1", "1.5", "soon", "12abc"]) expect([bad, parseRetryAfter(bad, now)]).toEqual([bad, undefined]);
	});

	it("retries 429 always, 503 and no answer only for requests safe to repeat", () => {
		expect(isIdempotentRequest("GET", {})).toBe(true);
		expect(isIdempotentRequest("delete", {})).toBe(true);
		expect(isIdempotentRequest("POST", {})).toBe(false);
		expect(isIdempotentRequest("POST", { "idempotency-key": "k" })).toBe(true);
		expect(isIdempotentRequest("PATCH", {})).toBe(false);
		expect(isRetryableOutcome(429, false)).toBe(true);
		expect(isRetryableOutcome(503, false)).toBe(false);
		expect(isRetryableOutcome(null, false)).toBe(false);
		expect(isRetryableOutcome(503, true)).toBe(true);
		expect(isRetryableOutcome(null, true)).toBe(true);
		for (const s of [400, 401, 404, 409, 500, 502]) expect([s, isRetryableOutcome(s, true)]).toEqual([s, false]);
	});
});
