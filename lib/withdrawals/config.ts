/**
 * Withdrawals settings from the environment (docs/withdrawals.md "Configuration").
 */
import { int } from "../env";

export interface BridgeProviderConfig {
	/** Base URL of the bridge provider's API (POST {url}/quote, GET {url}/status/:id); null: no provider, strategy 2 cannot bridge. */
	url: string | null;
	/** Sent as a header, never logged; null when the provider needs none. */
	apiKey: string | null;
	/** Per-attempt request timeout. */
	timeoutMs: number;
}

export interface WithdrawalsConfig {
	/** How often the ledger feed reads settled checkouts when no event woke it. 0: never (tests drive it). */
	feedPollMs: number;
	/**
	 * How far behind the clock the feed's cursor stays. A checkout's completedAt is stamped before
	 * its DB transaction commits, so one stamped earlier may become visible after a later one; rows
	 * younger than this are read again on the next pass (idempotently) instead of being passed by.
	 */
	feedLagMs: number;
	/** Settled checkouts read per page. */
	feedBatch: number;
	/** Strategy 2's bridge provider (lib/withdrawals/bridge-provider.ts). */
	bridge: BridgeProviderConfig;
}

/** BRIDGE_PROVIDER_URL: an http(s) URL without a trailing slash; production accepts https only (the API key travels in a header). */
export function bridgeProviderUrl(value: string | undefined, production: boolean): string | null {
	const raw = (value ?? "").trim();
	if (raw === "") return null;
	let url: URL;
	try {
		url = new URL(raw);
	} catch {
		throw new Error(`Configuration: BRIDGE_PROVIDER_URL must be an http(s) URL, got "${raw}"`);
	}
	if (url.protocol !== "https:" && (production || url.protocol !== "http:")) {
		throw new Error(`Configuration: BRIDGE_PROVIDER_URL must be an ${production ? "https" : "http(s)"} URL${production ? " in production" : ""}, got "${raw}"`);
	}
	if (url.username || url.password || url.search || url.hash) throw new Error("Configuration: BRIDGE_PROVIDER_URL must have no credentials, query or fragment (use BRIDGE_PROVIDER_API_KEY)");
	return url.toString().replace(/\/+$/, "");
}

export function withdrawalsConfigFromEnv(env: Record<string, string | undefined>, production = false): WithdrawalsConfig {
	return {
		feedPollMs: int("WITHDRAWALS_FEED_POLL_MS", env.WITHDRAWALS_FEED_POLL_MS, 5_000, 0, 3_600_000),
		feedLagMs: int("WITHDRAWALS_FEED_LAG_MS", env.WITHDRAWALS_FEED_LAG_MS, 120_000, 0, 86_400_000),
		feedBatch: int("WITHDRAWALS_FEED_BATCH", env.WITHDRAWALS_FEED_BATCH, 200, 1, 1_000),
		bridge: {
			url: bridgeProviderUrl(env.BRIDGE_PROVIDER_URL, production),
			apiKey: env.BRIDGE_PROVIDER_API_KEY?.trim() || null,
			timeoutMs: int("BRIDGE_TIMEOUT_MS", env.BRIDGE_TIMEOUT_MS, 15_000, 100, 120_000),
		},
	};
}
