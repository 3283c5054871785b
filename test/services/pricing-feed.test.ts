/**
 * The CoinGecko-compatible feed against a local HTTP server: stored rows with source
 * "coingecko", unchanged prices confirmed rather than duplicated, last-good fallback on
 * timeouts, 5xx and malformed answers, staleness for quotes, and the refresh schedule.
 */
import crypto from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { startNode, TestNode } from "../helpers/harness";
import { CATALOGUE, tokenIdFor } from "../../lib/networks/catalogue";
import type { RefreshResult } from "../../services/pricing.service";

/** Every catalogue token with the symbol ETH (mainnets, L2s, testnets) takes the feed's "ethereum" price. */
const ETH_TOKENS = CATALOGUE.flatMap(n => n.tokens.filter(t => t.symbol === "ETH").map(() => tokenIdFor(n.slug, "ETH")));
const ETH = tokenIdFor("ethereum", "ETH");
const SOL = tokenIdFor("solana", "SOL");
const BTC = tokenIdFor("bitcoin", "BTC");

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

describe("pricing feed", () => {
	let node: TestNode;
	let server: http.Server;
	let feedUrl: string;
	let handler: Handler;
	let requests: Array<{ url: string; key?: string }>;

	const answer = (prices: Record<string, string>): Handler => (_req, res) => {
		res.setHeader("content-type", "application/json");
		// Written by hand so the digits are exactly what a JSON number in the answer would carry.
		res.end(`{${Object.entries(prices).map(([id, usd]) => `"${id}":{"usd":${usd}}`).join(",")}}`);
	};
	const refresh = () => node.broker.call("pricing.refresh", {}) as Promise<RefreshResult>;
	const quoteEth = () => node.http("GET", "/price/fiat-quote", { query: { amount: "100", currency: "USD", tokenId: ETH } });
	const configure = (params: Record<string, unknown>) => node.broker.call("pricing.configureFeed", params);

	beforeAll(async () => {
		server = http.createServer((req, res) => {
			requests.push({ url: req.url || "", key: req.headers["x-cg-demo-api-key"] as string | undefined });
			handler(req, res);
		});
		await new Promise<void>(resolve => server.listen(0, "127.0.0.1", resolve));
		feedUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v3`;
		node = await startNode({ services: ["api", "networks", "pricing"] });
	});
	afterAll(async () => {
		await node?.stop();
		server.closeAllConnections();
		await new Promise(resolve => server.close(resolve));
	});
	beforeEach(() => {
		requests = [];
		handler = answer({ ethereum: "3456.123456789012345678", solana: "150.5" });
	});

	it("starts on the manual feed: a refresh fetches nothing", async () => {
		expect(await refresh()).toMatchObject({ source: "manual", skipped: "manual" });
		expect(requests).toHaveLength(0);
	});

	it("is configurable at run time and never shows the API key", async () => {
		const shown = await configure({ feed: "coingecko", feedUrl, apiKey: "secret-demo-key", timeoutMs: 2000, maxAgeSeconds: 600, refreshSeconds: 3600 });
		expect(shown).toMatchObject({ feed: "coingecko", feedUrl, apiKey: "(set)", apiKeyHeader: "x-cg-demo-api-key", maxAgeSeconds: 600 });
		expect(JSON.stringify(shown)).not.toContain("secret-demo-key");
		await expect(configure({ feed: "binance" })).rejects.toMatchObject({ name: "ValidationError" });
		await expect(configure({ feedIds: { FOO: "Not An Id" } })).rejects.toMatchObject({ code: 400 });
	});

	it("stores every mapped token's price with source coingecko, digits exact", async () => {
		const result = await refresh();
		expect(result.error).toBeUndefined();
		expect(result.inserted).toBeGreaterThanOrEqual(ETH_TOKENS.length + 1);
		expect(result.missing).toEqual(expect.arrayContaining(["bitcoin", "usd-coin"]));
		expect(requests).toHaveLength(1);
		expect(requests[0].key).toBe("secret-demo-key");
		for (const tokenId of ETH_TOKENS) {
			const res = await node.http("GET", `/price/token/${tokenId}`);
			expect(res.body).toMatchObject({ tokenId, priceUsd: "3456.123456789012345678", source: "coingecko" });
		}
		expect((await node.http("GET", `/price/token/${SOL}`)).body).toMatchObject({ priceUsd: "150.5", source: "coingecko" });
		expect((await node.http("GET", `/price/token/${BTC}`)).text).toBe("null");
		const q = await quoteEth();
		expect(q.status).toBe(200);
		expect(q.body).toMatchObject({ tokenAmount: "0.028934151586386675", tokenPriceUsd: "3456.123456789012345678" });
	});

	it("confirms an unchanged price instead of adding a row, and adds one when it changes", async () => {
		const { TokenPrice } = node.app.models;
		const rows = await TokenPrice.count({ where: { tokenId: ETH } });
		const before = await TokenPrice.findOne({ where: { tokenId: ETH }, order: [["createdAt", "DESC"]] });
		node.clock.advance(60_000);
		const same = await refresh();
		expect(same.inserted).toBe(0);
		expect(same.confirmed).toBeGreaterThan(0);
		expect(await TokenPrice.count({ where: { tokenId: ETH } })).toBe(rows);
		const after = await TokenPrice.findByPk(before!.id);
		expect(after!.confirmedAt.getTime()).toBeGreaterThanOrEqual(before!.confirmedAt.getTime() + 60_000);
		expect(after!.createdAt.getTime()).toBe(before!.createdAt.getTime());

		handler = answer({ ethereum: "3500", solana: "150.5" });
		const changed = await refresh();
		expect(changed.inserted).toBe(ETH_TOKENS.length);
		expect(await TokenPrice.count({ where: { tokenId: ETH } })).toBe(rows + 1);
		expect((await node.http("GET", `/price/token/${ETH}`)).body.priceUsd).toBe("3500");
	});

	it("keeps the last good price when the feed times out", async () => {
		await configure({ timeoutMs: 200 });
		handler = () => undefined; // never answers
		const started = Date.now();
		const result = await refresh();
		expect(result).toMatchObject({ error: "timeout", inserted: 0 });
		// Generous: it only says the call gave up instead of hanging (a loaded machine is slow, not wrong).
		expect(Date.now() - started).toBeLessThan(20_000);
		expect((await node.http("GET", `/price/token/${ETH}`)).body.priceUsd).toBe("3500");
		expect((await quoteEth()).status).toBe(200);
		await configure({ timeoutMs: 2000 });
	});

	it("keeps the last good price on 5xx and on malformed answers", async () => {
		handler = (_req, res) => {
			res.statusCode = 502;
			res.end("bad gateway");
		};
		expect(await refresh()).toMatchObject({ error: "http", inserted: 0 });
		handler = (_req, res) => res.end('{"ethereum":{"usd":1');
		expect(await refresh()).toMatchObject({ error: "malformed", inserted: 0 });
		handler = answer({ ethereum: "-1", solana: "0" });
		expect(await refresh()).toMatchObject({ inserted: 0, confirmed: 0, missing: expect.arrayContaining(["ethereum", "solana"]) });
		expect((await node.http("GET", `/price/token/${ETH}`)).body).toMatchObject({ priceUsd: "3500", source: "coingecko" });
	});

	it("does not quote with a stale price, but still shows it; a good refresh makes it usable again", async () => {
		handler = () => undefined;
		await configure({ timeoutMs: 100 });
		node.clock.advance(601_000);
		expect((await refresh()).error).toBe("timeout");
		const q = await quoteEth();
		expect(q.status).toBe(400);
		expect(q.body).toMatchObject({ message: "Price unavailable", errors: { tokenId: "priceUnavailable" } });
		expect(await node.broker.call("pricing.tokenPriceUsd", { tokenId: ETH })).toBeNull();
		await expect(node.broker.call("pricing.convert", { amount: "1", fromTokenId: ETH, toTokenId: SOL })).rejects.toMatchObject({ code: 400 });
		// GET /price/token answers the newest row regardless of age.
		expect((await node.http("GET", `/price/token/${ETH}`)).body).toMatchObject({ priceUsd: "3500" });
		// Quotes without a token do not depend on token prices.
		expect((await node.http("GET", "/price/fiat-quote", { query: { amount: "100", currency: "EUR" } })).status).toBe(200);

		await configure({ timeoutMs: 2000 });
		handler = answer({ ethereum: "3500", solana: "151" });
		const result = await refresh();
		expect(result.error).toBeUndefined();
		expect((await quoteEth()).body).toMatchObject({ tokenPriceUsd: "3500" });
		expect(await node.broker.call("pricing.tokenPriceUsd", { tokenId: ETH })).toMatchObject({ priceUsd: "3500", source: "coingecko" });
	});

	it("a manual edit overrides the feed until its next successful refresh", async () => {
		await node.app.models.TokenPrice.create({
			id: crypto.randomUUID(),
			tokenId: ETH,
			priceUsd: "1234",
			source: "manual",
			createdAt: new Date(node.clock.now().getTime() + 1),
			confirmedAt: node.clock.now(),
		});
		await node.broker.cacher!.clean("pricing.**");
		// Older than the max age would not matter for a manual row.
		node.clock.advance(3_600_000);
		expect((await quoteEth()).body).toMatchObject({ tokenPriceUsd: "1234" });
		handler = answer({ ethereum: "3500", solana: "151" });
		await refresh();
		expect((await quoteEth()).body).toMatchObject({ tokenPriceUsd: "3500" });
	});

	it("refreshes on its schedule, and stops when switched back to manual", async () => {
		await configure({ refreshSeconds: 0.1 });
		const deadline = Date.now() + 10_000;
		while (requests.length < 2 && Date.now() < deadline) await new Promise(r => setTimeout(r, 50));
		expect(requests.length).toBeGreaterThanOrEqual(2);
		await configure({ feed: "manual" });
		await new Promise(r => setTimeout(r, 300));
		const count = requests.length;
		await new Promise(r => setTimeout(r, 400));
		expect(requests.length).toBe(count);
		await configure({ feed: "coingecko", refreshSeconds: 3600 });
	});

	it("scheduled refreshes take a Redis lock when Redis is configured (one node per interval), none without", async () => {
		const first = (await node.broker.call("pricing.refresh", { force: false })) as RefreshResult;
		const second = (await node.broker.call("pricing.refresh", { force: false })) as RefreshResult;
		expect(first.skipped).toBeUndefined();
		expect(first.confirmed + first.inserted).toBeGreaterThan(0);
		if (node.app.redis) {
			// The MySQL project runs with Redis.
			expect(second).toMatchObject({ skipped: "locked", inserted: 0, confirmed: 0 });
			expect(await node.app.redis.pttl(`${node.config.redisPrefix}pricing:refresh`)).toBeGreaterThan(0);
		} else {
			expect(second.skipped).toBeUndefined();
			expect(second.confirmed).toBeGreaterThan(0);
		}
	});
});
