/**
 * Price feed settings from the environment (docs/pricing.md): the `pricing` section of
 * lib/config.ts, parsed once per node by loadConfig; tests override them at run time with the
 * internal action `pricing.configureFeed`.
 */
import { EnvVars, httpUrl, list, num } from "../env";
import { DEFAULT_FEED_IDS } from "./catalogue";

export type FeedKind = "manual" | "coingecko";
export const FEED_KINDS: FeedKind[] = ["manual", "coingecko"];

export interface PricingConfig {
	feed: FeedKind;
	/** Base URL of a CoinGecko-compatible API, without trailing slash. */
	feedUrl: string;
	apiKey: string | null;
	/** Header carrying the API key: pro keys go to pro-api.coingecko.com, demo keys elsewhere. */
	apiKeyHeader: string;
	refreshSeconds: number;
	timeoutMs: number;
	/** A feed price older than this is not used for quotes. */
	maxAgeSeconds: number;
	/** Token symbol (upper case) -> feed id. */
	feedIds: Record<string, string>;
}

export const DEFAULT_FEED_URL = "https://api.coingecko.com/api/v3";
const FEED_ID = /^[a-z0-9][a-z0-9-]{0,99}$/;
const SYMBOL = /^[A-Z0-9.]{1,20}$/;
const HEADER = /^[A-Za-z0-9-]{1,64}$/;

/** An http(s) base URL without trailing slash. */
export function feedUrl(name: string, value: string): string {
	return httpUrl(name, value).replace(/\/+$/, "");
}

/** "ETH=ethereum,FOO=foo-token" -> { ETH: "ethereum", FOO: "foo-token" }. */
export function parseFeedIds(value: string | undefined): Record<string, string> {
	const out: Record<string, string> = {};
	for (const part of list(value)) {
		const [symbol, id, extra] = part.split("=").map(s => s.trim());
		if (extra !== undefined || !symbol || !id || !SYMBOL.test(symbol.toUpperCase()) || !FEED_ID.test(id)) {
			throw new Error(`Configuration: PRICE_FEED_IDS entries must look like SYMBOL=feed-id, got "${part}"`);
		}
		out[symbol.toUpperCase()] = id;
	}
	return out;
}

export function isFeedId(value: string): boolean {
	return FEED_ID.test(value);
}

export function defaultApiKeyHeader(url: string): string {
	return new URL(url).hostname === "pro-api.coingecko.com" ? "x-cg-pro-api-key" : "x-cg-demo-api-key";
}

export function parsePricingConfig(env: EnvVars): PricingConfig {
	const feed = (env.PRICE_FEED || "manual").trim().toLowerCase() as FeedKind;
	if (!FEED_KINDS.includes(feed)) throw new Error(`Configuration: PRICE_FEED must be manual or coingecko, got "${env.PRICE_FEED}"`);
	const url = feedUrl("PRICE_FEED_URL", env.PRICE_FEED_URL || DEFAULT_FEED_URL);
	const header = env.PRICE_FEED_API_KEY_HEADER?.trim() || defaultApiKeyHeader(url);
	if (!HEADER.test(header)) throw new Error(`Configuration: PRICE_FEED_API_KEY_HEADER must be a header name, got "${header}"`);
	return {
		feed,
		feedUrl: url,
		apiKey: env.PRICE_FEED_API_KEY?.trim() || null,
		apiKeyHeader: header,
		refreshSeconds: num("PRICE_REFRESH_SECONDS", env.PRICE_REFRESH_SECONDS, 60, 1),
		timeoutMs: num("PRICE_FEED_TIMEOUT_MS", env.PRICE_FEED_TIMEOUT_MS, 5000, 100),
		maxAgeSeconds: num("PRICE_MAX_AGE_SECONDS", env.PRICE_MAX_AGE_SECONDS, 900, 1),
		feedIds: { ...DEFAULT_FEED_IDS, ...parseFeedIds(env.PRICE_FEED_IDS) },
	};
}
