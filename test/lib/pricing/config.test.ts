import { DEFAULT_FEED_URL, parseFeedIds, parsePricingConfig } from "../../../lib/pricing/config";
import { isFresh } from "../../../lib/pricing/staleness";
import { CURRENCIES, currencyIdFor, SEED_USD_RATES } from "../../../lib/pricing/catalogue";

describe("parsePricingConfig", () => {
	it("has the documented defaults", () => {
		const c = parsePricingConfig({});
		expect(c).toMatchObject({
			feed: "manual",
			feedUrl: DEFAULT_FEED_URL,
			apiKey: null,
			apiKeyHeader: "x-cg-demo-api-key",
			refreshSeconds: 60,
			timeoutMs: 5000,
			maxAgeSeconds: 900,
		});
		expect(c.feedIds).toMatchObject({ ETH: "ethereum", USDC: "usd-coin", SOL: "solana", BTC: "bitcoin" });
	});

	it("reads every setting and picks the pro key header for the pro API", () => {
		const c = parsePricingConfig({
			PRICE_FEED: "CoinGecko",
			PRICE_FEED_URL: "https://pro-api.coingecko.com/api/v3/",
			PRICE_FEED_API_KEY: " k1 ",
			PRICE_REFRESH_SECONDS: "30",
			PRICE_FEED_TIMEOUT_MS: "2500",
			PRICE_MAX_AGE_SECONDS: "120",
			PRICE_FEED_IDS: "foo=foo-token, ETH=weth",
		});
		expect(c).toMatchObject({ feed: "coingecko", feedUrl: "https://pro-api.coingecko.com/api/v3", apiKey: "k1", apiKeyHeader: "x-cg-pro-api-key", refreshSeconds: 30, timeoutMs: 2500, maxAgeSeconds: 120 });
		expect(c.feedIds.FOO).toBe("foo-token");
		expect(c.feedIds.ETH).toBe("weth");
		expect(parsePricingConfig({ PRICE_FEED_API_KEY_HEADER: "x-custom" }).apiKeyHeader).toBe("x-custom");
	});

	it("refuses invalid settings with a message naming the variable", () => {
		expect(() => parsePricingConfig({ PRICE_FEED: "binance" })).toThrow(/PRICE_FEED/);
		expect(() => parsePricingConfig({ PRICE_FEED_URL: "ftp://x" })).toThrow(/PRICE_FEED_URL/);
		expect(() => parsePricingConfig({ PRICE_REFRESH_SECONDS: "0" })).toThrow(/PRICE_REFRESH_SECONDS/);
		expect(() => parsePricingConfig({ PRICE_FEED_TIMEOUT_MS: "soon" })).toThrow(/PRICE_FEED_TIMEOUT_MS/);
		expect(() => parsePricingConfig({ PRICE_MAX_AGE_SECONDS: "-5" })).toThrow(/PRICE_MAX_AGE_SECONDS/);
		expect(() => parsePricingConfig({ PRICE_FEED_API_KEY_HEADER: "bad header" })).toThrow(/PRICE_FEED_API_KEY_HEADER/);
		expect(() => parseFeedIds("ETH")).toThrow(/PRICE_FEED_IDS/);
		expect(() => parseFeedIds("ETH=Bad Id")).toThrow(/PRICE_FEED_IDS/);
		expect(() => parseFeedIds("ETH=a=b")).toThrow(/PRICE_FEED_IDS/);
	});
});

describe("isFresh", () => {
	const now = new Date("2025-01-01T12:00:00.000Z");
	it("feed rows are fresh up to the max age, manual rows always", () => {
		const at = (s: number) => new Date(now.getTime() - s * 1000);
		expect(isFresh({ source: "coingecko", confirmedAt: at(900) }, now, 900)).toBe(true);
		expect(isFresh({ source: "coingecko", confirmedAt: at(901) }, now, 900)).toBe(false);
		expect(isFresh({ source: "manual", confirmedAt: at(10 * 365 * 86400) }, now, 900)).toBe(true);
	});
});

describe("currency catalogue", () => {
	it("has ISO 4217 codes and minor units, deterministic ids, and a placeholder rate for each non-USD currency", () => {
		const byCode = Object.fromEntries(CURRENCIES.map(c => [c.code, c]));
		expect(byCode.JPY.decimals).toBe(0);
		for (const code of ["USD", "EUR", "GBP", "CHF", "CAD", "AUD", "BRL", "INR", "NGN"]) expect(byCode[code].decimals).toBe(2);
		expect(new Set(CURRENCIES.map(c => c.code)).size).toBe(CURRENCIES.length);
		expect(currencyIdFor("eur")).toBe(currencyIdFor("EUR"));
		expect(currencyIdFor("EUR")).not.toBe(currencyIdFor("USD"));
		for (const c of CURRENCIES) if (c.code !== "USD") expect(SEED_USD_RATES[c.code]).toMatch(/^\d+(\.\d+)?$/);
	});
});
