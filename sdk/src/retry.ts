/**
 * When a request is tried again (pure rules; the waiting is in client.ts).
 *
 * - 429: always. The gateway's rate limiter answers it before the request runs, so nothing
 *   happened and any request, even a POST without an idempotency key, can be sent again.
 * - 503 and network errors (no answer): only for requests that are safe to repeat: GET, HEAD,
 *   PUT, DELETE, OPTIONS, and any request carrying an Idempotency-Key (the gateway answers a
 *   repeat with the first answer instead of acting twice).
 * - Retry-After (seconds, or an HTTP date) is honoured: the next attempt waits at least that long.
 */

const SAFE_METHODS = new Set(["GET", "HEAD", "PUT", "DELETE", "OPTIONS"]);

/** True when sending the request twice does no more than sending it once. */
export function isIdempotentRequest(method: string, headers: Record<string, string>): boolean {
	if (SAFE_METHODS.has(method.toUpperCase())) return true;
	return Object.keys(headers).some(h => h.toLowerCase() === "idempotency-key");
}

/** Whether an answer with `status` (or no answer: `null`) is worth another attempt. */
export function isRetryableOutcome(status: number | null, idempotent: boolean): boolean {
	if (status === 429) return true;
	if (status === 503 || status === null) return idempotent;
	return false;
}

/**
 * Milliseconds to wait from a Retry-After header: delta-seconds (`"2"`) or an HTTP date
 * (`"Wed, 21 Oct 2026 07:28:00 GMT"`); a date in the past is 0. Absent or malformed: undefined.
 */
export function parseRetryAfter(value: string | null | undefined, nowMs: number): number | undefined {
	if (value === null || value === undefined) return undefined;
	const text = value.trim();
	if (/^\d+$/.test(text)) return Number(text) * 1000;
	if (!/[a-z]/i.test(text)) return undefined;
	const at = Date.parse(text);
	if (Number.isNaN(at)) return undefined;
	return Math.max(0, at - nowMs);
}
