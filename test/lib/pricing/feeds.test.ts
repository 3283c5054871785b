import http from "node:http";
import type { AddressInfo } from "node:net";
import { CoinGeckoFeed, FeedError, createFeed, manualFeed, parseJsonLossless, parseSimplePrice, priceFromSource } from "../../../lib/pricing/feeds";
import { parsePricingConfig } from "../../../lib/pricing/config";

describe("parseSimplePrice", () => {
	it("keeps the digits as written: no float ever holds the price", () => {
		// 0.1 + 17 more digits and a 16-significant-digit integer part: both beyond a double.
		const text = '{"ethereum":{"usd":3456.123456789012345678},"bitcoin":{"usd":98765432109876543.21},"usd-coin":{"usd":0.999812345678901234}}';
		const got = parseSimplePrice(text, ["ethereum", "bitcoin", "usd-coin"]);
		expect(got.prices.get("ethereum")).toBe("3456.123456789012345678");
		expect(got.prices.get("bitcoin")).toBe("98765432109876543.21");
		expect(got.prices.get("usd-coin")).toBe("0.999812345678901234");
		expect(got.missing).toEqual([]);
	});

	it("reads exponent notation exactly and cuts past 18 places", () => {
		const got = parseSimplePrice('{"a":{"usd":1.5e-7},"b":{"usd":2E+3},"c":{"usd":0.1234567890123456789999}}', ["a", "b", "c"]);
		expect(got.prices.get("a")).toBe("0.00000015");
		expect(got.prices.get("b")).toBe("2000");
		expect(got.prices.get("c")).toBe("0.123456789012345678");
	});

	it("treats unusable entries as missing: zero, negative, strings, absent, too small, too large", () => {
		const text = JSON.stringify({ zero: { usd: 0 }, neg: { usd: -1 }, str: { usd: "1.5" }, nousd: { eur: 1 }, flat: 3 }).replace("}}", "},\"tiny\":{\"usd\":1e-30},\"huge\":{\"usd\":1e45}}");
		const ids = ["zero", "neg", "str", "nousd", "flat", "tiny", "huge", "absent"];
		const got = parseSimplePrice(text, ids);
		expect(got.prices.size).toBe(0);
		expect(got.missing.sort()).toEqual([...ids].sort());
	});

	it("refuses malformed JSON and non-object answers", () => {
		for (const text of ["{not json", "", "[1,2]", "42", "null", '"x"']) {
			expect(() => parseSimplePrice(text, ["a"])).toThrow(FeedError);
		}
	});

	it("does not let __proto__ keys reach objects", () => {
		const parsed = parseJsonLossless('{"__proto__":{"usd":1},"a":{"usd":2}}') as Record<string, unknown>;
		expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
		expect(Object.prototype.hasOwnProperty.call(parsed, "__proto__")).toBe(false);
	});

	it("priceFromSource refuses anything that is not a positive decimal", () => {
		expect(priceFromSource("12.5")).toBe("12.5");
		expect(priceFromSource("NaN")).toBeNull();
		expect(priceFromSource("-0")).toBeNull();
		expect(priceFromSource("abc")).toBeNull();
	});
});

describe("CoinGeckoFeed over HTTP", () => {
	let server: http.Server;
	let baseUrl: string;
	let handler: (req: http.IncomingMessage, res: http.ServerResponse) => void;
	const seen: Array<{ url: string; headers: http.IncomingHttpHeaders }> = [];

	beforeAll(async () => {
		server = http.createServer((req, res) => {
			seen.push({ url: req.url || "", headers: req.headers });
			handler(req, res);
		});
		await new Promise<void>(resolve => server.listen(0, "127.0.0.1", resolve));
		baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v3`;
	});
	afterAll(async () => {
		server.closeAllConnections();
		await new Promise(resolve => server.close(resolve));
	});
	beforeEach(() => {
		seen.length = 0;
	});

	const feed = (opts: Partial<ConstructorParameters<typeof CoinGeckoFeed>[0]> = {}) =>
		new CoinGeckoFeed({ baseUrl, apiKey: "demo-key-123", apiKeyHeader: "x-cg-demo-api-key", timeoutMs: 2000, ...opts });

	it("asks /simple/price for the ids in USD with the key header, and parses the answer", async () => {
		handler = (_req, res) => {
			res.setHeader("content-type", "application/json");
			res.end('{"ethereum":{"usd":3000.123456789012345678},"solana":{"usd":150.5}}');
		};
		const got = await feed().fetchUsdPrices(["ethereum", "solana", "bitcoin"]);
		expect(Object.fromEntries(got.prices)).toEqual({ ethereum: "3000.123456789012345678", solana: "150.5" });
		expect(got.missing).toEqual(["bitcoin"]);
		expect(seen).toHaveLength(1);
		const url = new URL(seen[0].url, "http://x");
		expect(url.pathname).toBe("/api/v3/simple/price");
		expect(url.searchParams.get("ids")).toBe("ethereum,solana,bitcoin");
		expect(url.searchParams.get("vs_currencies")).toBe("usd");
		expect(seen[0].headers["x-cg-demo-api-key"]).toBe("demo-key-123");
	});

	it("sends no key header without a key, and batches many ids", async () => {
		handler = (req, res) => {
			const ids = new URL(req.url || "", "http://x").searchParams.get("ids")!.split(",");
			res.end(JSON.stringify(Object.fromEntries(ids.map(id => [id, { usd: 1 }]))));
		};
		const ids = Array.from({ length: 120 }, (_, i) => `token-${i}`);
		const got = await feed({ apiKey: null }).fetchUsdPrices(ids);
		expect(got.prices.size).toBe(120);
		expect(seen).toHaveLength(3);
		expect(seen.every(s => s.headers["x-cg-demo-api-key"] === undefined)).toBe(true);
	});

	it("fails with kind http on 5xx and 4xx", async () => {
		handler = (_req, res) => {
			res.statusCode = 503;
			res.end("down");
		};
		await expect(feed().fetchUsdPrices(["ethereum"])).rejects.toMatchObject({ name: "FeedError", kind: "http" });
		handler = (_req, res) => {
			res.statusCode = 429;
			res.end("{}");
		};
		await expect(feed().fetchUsdPrices(["ethereum"])).rejects.toMatchObject({ kind: "http" });
	});

	it("times out on a server that never answers", async () => {
		handler = () => undefined; // never answers
		const started = Date.now();
		await expect(feed({ timeoutMs: 200 }).fetchUsdPrices(["ethereum"])).rejects.toMatchObject({ kind: "timeout" });
		// Generous: it only says the call gave up instead of hanging (a loaded machine is slow, not wrong).
		expect(Date.now() - started).toBeLessThan(20_000);
	});

	it("times out on a body that never ends", async () => {
		handler = (_req, res) => {
			res.writeHead(200, { "content-type": "application/json" });
			res.write('{"ethereum":');
		};
		await expect(feed({ timeoutMs: 200 }).fetchUsdPrices(["ethereum"])).rejects.toMatchObject({ kind: "timeout" });
	});

	it("refuses redirects (the key header would follow them)", async () => {
		handler = (_req, res) => {
			res.writeHead(302, { location: "http://127.0.0.1:1/elsewhere" });
			res.end();
		};
		await expect(feed().fetchUsdPrices(["ethereum"])).rejects.toMatchObject({ kind: "network" });
		expect(seen).toHaveLength(1);
	});

	it("refuses malformed and oversized answers", async () => {
		handler = (_req, res) => res.end("<html>oops</html>");
		await expect(feed().fetchUsdPrices(["ethereum"])).rejects.toMatchObject({ kind: "malformed" });
		handler = (_req, res) => res.end(`{"a":"${"x".repeat(2 * 1024 * 1024)}"}`);
		await expect(feed().fetchUsdPrices(["ethereum"])).rejects.toMatchObject({ kind: "malformed" });
	});

	it("reports an unreachable feed as network", async () => {
		await expect(feed({ baseUrl: "http://127.0.0.1:1" }).fetchUsdPrices(["ethereum"])).rejects.toMatchObject({ kind: "network" });
	});
});

describe("createFeed", () => {
	it("manual fetches nothing; coingecko is the HTTP adapter", async () => {
		expect(createFeed(parsePricingConfig({}))).toBe(manualFeed);
		expect(await manualFeed.fetchUsdPrices(["ethereum"])).toEqual({ prices: new Map(), missing: ["ethereum"] });
		const cg = createFeed(parsePricingConfig({ PRICE_FEED: "coingecko" }));
		expect(cg).toBeInstanceOf(CoinGeckoFeed);
		expect(cg.source).toBe("coingecko");
	});
});
