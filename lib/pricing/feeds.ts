/**
 * Price feed adapters. `manual` fetches nothing: the stored rows an operator edits are the
 * prices. `coingecko` reads `GET {baseUrl}/simple/price?ids=..&vs_currencies=usd` from any
 * CoinGecko-compatible API. JSON numbers are taken from the response text as written (the
 * reviver's source text), so a price never passes through a float.
 */
import { MAX_DECIMALS, money, toAmountString, isDecimalString } from "../money";
import type { PricingConfig } from "./config";
import { isFeedId } from "./config";

export interface FeedPrices {
	/** feed id -> USD price as a canonical decimal string (at most 18 places, cut). */
	prices: Map<string, string>;
	/** Requested ids the answer had no usable price for. */
	missing: string[];
}

export interface PriceFeed {
	/** Stored as the price row's `source`. */
	readonly source: string;
	/** false: nothing to fetch (manual prices are the stored rows). */
	readonly remote: boolean;
	fetchUsdPrices(ids: string[]): Promise<FeedPrices>;
}

export type FeedErrorKind = "timeout" | "network" | "http" | "malformed";

export class FeedError extends Error {
	constructor(
		public readonly kind: FeedErrorKind,
		message: string,
	) {
		super(message);
		this.name = "FeedError";
	}
}

export const manualFeed: PriceFeed = {
	source: "manual",
	remote: false,
	async fetchUsdPrices(ids: string[]) {
		return { prices: new Map(), missing: [...ids] };
	},
};

/** A JSON number kept as its source text. */
class RawNumber {
	constructor(public readonly source: string) {}
}

type Reviver = (this: unknown, key: string, value: unknown) => unknown;

/** JSON.parse keeping numbers as their source text (Node >= 21: the reviver's third argument). */
export function parseJsonLossless(text: string): unknown {
	const reviver = (key: string, value: unknown, context?: { source?: string }) => {
		if (key === "__proto__") return undefined;
		if (typeof value !== "number") return value;
		if (!context || typeof context.source !== "string") throw new FeedError("malformed", "JSON source text access is not available");
		return new RawNumber(context.source);
	};
	try {
		return JSON.parse(text, reviver as unknown as Reviver);
	} catch (err) {
		if (err instanceof FeedError) throw err;
		throw new FeedError("malformed", "Response is not valid JSON");
	}
}

/** A feed's number source text as a positive price: 18 places at most (finer digits cut). */
export function priceFromSource(source: string): string | null {
	let value: string;
	try {
		value = toAmountString(money(source), MAX_DECIMALS);
	} catch {
		return null;
	}
	if (!isDecimalString(value) || value === "0") return null;
	return value;
}

/** Prices of `ids` from a `/simple/price` answer; ids without a positive numeric `usd` are missing. */
export function parseSimplePrice(text: string, ids: string[]): FeedPrices {
	const body = parseJsonLossless(text);
	if (body === null || typeof body !== "object" || Array.isArray(body) || body instanceof RawNumber) {
		throw new FeedError("malformed", "Response is not a JSON object");
	}
	const prices = new Map<string, string>();
	const missing: string[] = [];
	for (const id of ids) {
		const entry = Object.prototype.hasOwnProperty.call(body, id) ? (body as Record<string, unknown>)[id] : undefined;
		const usd = entry && typeof entry === "object" && Object.prototype.hasOwnProperty.call(entry, "usd") ? (entry as Record<string, unknown>).usd : undefined;
		const price = usd instanceof RawNumber ? priceFromSource(usd.source) : null;
		if (price) prices.set(id, price);
		else missing.push(id);
	}
	return { prices, missing };
}

const MAX_RESPONSE_BYTES = 1024 * 1024;
/** Ids per request: keeps URLs short on every CoinGecko plan. */
const IDS_PER_REQUEST = 50;

async function readCapped(res: Response, maxBytes: number): Promise<string> {
	if (!res.body) return "";
	const reader = res.body.getReader();
	const chunks: Uint8Array[] = [];
	let total = 0;
	for (;;) {
		const { done, value } = await reader.read();
		if (done) break;
		total += value.byteLength;
		if (total > maxBytes) {
			await reader.cancel().catch(() => undefined);
			throw new FeedError("malformed", "Response too large");
		}
		chunks.push(value);
	}
	return Buffer.concat(chunks).toString("utf8");
}

export interface CoinGeckoOptions {
	baseUrl: string;
	apiKey: string | null;
	apiKeyHeader: string;
	timeoutMs: number;
	fetch?: typeof fetch;
}

export class CoinGeckoFeed implements PriceFeed {
	readonly source = "coingecko";
	readonly remote = true;
	private readonly fetchFn: typeof fetch;

	constructor(private readonly opts: CoinGeckoOptions) {
		this.fetchFn = opts.fetch || fetch;
	}

	async fetchUsdPrices(ids: string[]): Promise<FeedPrices> {
		const wanted = [...new Set(ids)].filter(isFeedId);
		const prices = new Map<string, string>();
		const missing = ids.filter(id => !isFeedId(id));
		for (let i = 0; i < wanted.length; i += IDS_PER_REQUEST) {
			const batch = wanted.slice(i, i + IDS_PER_REQUEST);
			const got = parseSimplePrice(await this.request(batch), batch);
			for (const [id, price] of got.prices) prices.set(id, price);
			missing.push(...got.missing);
		}
		return { prices, missing };
	}

	private async request(ids: string[]): Promise<string> {
		// Ids are [a-z0-9-] (isFeedId): nothing to escape.
		const url = `${this.opts.baseUrl}/simple/price?ids=${ids.join(",")}&vs_currencies=usd`;
		const headers: Record<string, string> = { accept: "application/json" };
		if (this.opts.apiKey) headers[this.opts.apiKeyHeader] = this.opts.apiKey;
		try {
			// One deadline for connecting, headers and body. No redirects: the key header would follow them.
			const res = await this.fetchFn(url, { headers, redirect: "error", signal: AbortSignal.timeout(this.opts.timeoutMs) });
			if (!res.ok) {
				await res.body?.cancel().catch(() => undefined);
				throw new FeedError("http", `Price feed answered HTTP ${res.status}`);
			}
			return await readCapped(res, MAX_RESPONSE_BYTES);
		} catch (err) {
			if (err instanceof FeedError) throw err;
			const name = (err as { name?: string })?.name;
			if (name === "TimeoutError" || name === "AbortError") throw new FeedError("timeout", `Price feed did not answer within ${this.opts.timeoutMs} ms`);
			throw new FeedError("network", "Price feed unreachable");
		}
	}
}

export function createFeed(config: PricingConfig, fetchFn?: typeof fetch): PriceFeed {
	if (config.feed === "coingecko") {
		return new CoinGeckoFeed({ baseUrl: config.feedUrl, apiKey: config.apiKey, apiKeyHeader: config.apiKeyHeader, timeoutMs: config.timeoutMs, fetch: fetchFn });
	}
	return manualFeed;
}
