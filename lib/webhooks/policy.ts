/**
 * The delivery rules of the spec (Events, "Delivery rules"; constants table) as pure functions:
 * what counts as success, when the next attempt is due, what is kept of a response.
 */

export interface RetryPolicy {
	/** Attempts in all, the first included (spec: 3). */
	maxAttempts: number;
	/** Wait before the second attempt; doubles for each further one (spec: 2 s, so 2 s then 4 s). */
	backoffMs: number;
}

/** Only a 200 answer is a delivery (spec rule 3: "a non-200 answer ... is retried"). */
export function isDelivered(statusCode: number | null): boolean {
	return statusCode === 200;
}

/**
 * When attempt `attempt + 1` is due after attempt `attempt` (1-based) failed at `failedAt`;
 * null when `attempt` was the last one. Exponential: backoff × 2^(attempt − 1).
 * The queue is the database (durable across restarts), so this is a schedule, not a sleep:
 * an in-memory retry library does not fit.
 */
export function nextAttemptAt(policy: RetryPolicy, attempt: number, failedAt: Date): Date | null {
	if (attempt >= policy.maxAttempts) return null;
	return new Date(failedAt.getTime() + policy.backoffMs * 2 ** (attempt - 1));
}

/** A response body as kept in the log: at most `max` characters, marked when cut. */
export function truncateResponse(body: string, max: number): string {
	if (body.length <= max) return body;
	return `${body.slice(0, max)}…[truncated]`;
}
