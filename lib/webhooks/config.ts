/**
 * Webhook settings from the environment (docs/webhooks.md "Configuration"). The spec's
 * constants are the defaults; tests shorten the waits.
 */
import { int } from "../env";
import type { RetryPolicy } from "./policy";

export interface WebhooksConfig extends RetryPolicy {
	/** Per-attempt request timeout (spec: 10 s). */
	timeoutMs: number;
	/** How often a node looks for due deliveries when nothing woke it earlier. 0: never (tests drive it). */
	pollMs: number;
	/** Deliveries one node sends at once, all endpoints together. */
	concurrency: number;
	/** Deliveries one node sends at once to one API key's endpoint, so a slow endpoint holds few slots. */
	concurrencyPerEndpoint: number;
	/** How long a claimed attempt belongs to its node; past it, another node finishes the attempt. */
	leaseMs: number;
	/** Characters of a response body kept in the log. */
	responseMaxChars: number;
	/** Days webhook logs, finished deliveries and inbound events are kept; 0 keeps them forever. */
	retentionDays: number;
	/** In production: HTTPS only and no internal address, checked on the address connected to. */
	enforcePublicUrls: boolean;
}

/**
 * Claimed attempts a node keeps ready per endpoint beyond its slots, in units of the per-endpoint
 * cap: claims come in batches and the next attempt starts from memory the moment a slot frees.
 */
export const READY_PER_SLOT = 16;

export function webhooksConfigFromEnv(env: Record<string, string | undefined>, production: boolean): WebhooksConfig {
	const timeoutMs = int("WEBHOOK_TIMEOUT_MS", env.WEBHOOK_TIMEOUT_MS, 10_000, 100, 60_000);
	return {
		maxAttempts: int("WEBHOOK_MAX_ATTEMPTS", env.WEBHOOK_MAX_ATTEMPTS, 3, 1, 10),
		backoffMs: int("WEBHOOK_BACKOFF_MS", env.WEBHOOK_BACKOFF_MS, 2_000, 10, 3_600_000),
		timeoutMs,
		pollMs: int("WEBHOOK_POLL_MS", env.WEBHOOK_POLL_MS, 1_000, 0, 60_000),
		concurrency: int("WEBHOOK_CONCURRENCY", env.WEBHOOK_CONCURRENCY, 64, 1, 1_000),
		concurrencyPerEndpoint: int("WEBHOOK_CONCURRENCY_PER_ENDPOINT", env.WEBHOOK_CONCURRENCY_PER_ENDPOINT, 8, 1, 100),
		// The timeout plus room for recording the outcome: an attempt in flight is never taken over.
		leaseMs: int("WEBHOOK_LEASE_MS", env.WEBHOOK_LEASE_MS, timeoutMs + 20_000, timeoutMs + 1_000, 3_600_000),
		responseMaxChars: int("WEBHOOK_RESPONSE_MAX_CHARS", env.WEBHOOK_RESPONSE_MAX_CHARS, 2_000, 0, 65_536),
		retentionDays: int("WEBHOOK_RETENTION_DAYS", env.WEBHOOK_RETENTION_DAYS, 30, 0, 3_650),
		enforcePublicUrls: production,
	};
}
