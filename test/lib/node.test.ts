/**
 * A node takes its settings from the environment object it is started with (lib/config.ts), not
 * from the process's environment: per-node settings given to createNode (as every test and a
 * `.env` file do) reach the payments and pricing services too.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { startNode, TestNode } from "../helpers/harness";
import { until } from "../helpers/until";
import { openCheckout, PAYMENTS_SERVICES, sandboxMerchant, IDS } from "../e2e/payments.helpers";

describe("a node started with an environment object", () => {
	let node: TestNode;
	let feed: http.Server;
	const feedRequests: string[] = [];

	beforeAll(async () => {
		feed = http.createServer((req, res) => {
			feedRequests.push(req.url || "");
			res.setHeader("content-type", "application/json");
			res.end('{"ethereum":{"usd":2500}}');
		});
		await new Promise<void>(resolve => feed.listen(0, "127.0.0.1", resolve));
		const feedUrl = `http://127.0.0.1:${(feed.address() as AddressInfo).port}/api/v3`;
		expect(process.env.PAYMENT_WINDOW_MINUTES).toBeUndefined();
		expect(process.env.PRICE_FEED).toBeUndefined();
		node = await startNode({
			services: PAYMENTS_SERVICES,
			env: { PAYMENT_WINDOW_MINUTES: "7", PRICE_FEED: "coingecko", PRICE_FEED_URL: feedUrl, PRICE_REFRESH_SECONDS: "3600" },
		});
	});

	afterAll(async () => {
		await node?.stop();
		feed.closeAllConnections();
		await new Promise(resolve => feed.close(resolve));
	});

	it("gives the payments services its payment window", async () => {
		expect(node.config.payments.paymentWindowMs).toBe(7 * 60_000);
		const { key } = await sandboxMerchant(node);
		const { checkout } = await openCheckout(node, key, { amount: "1", currency: "usdc", tokenId: IDS.sepoliaUsdc, networkId: IDS.sepolia });
		expect(new Date(checkout.expiresAt).getTime() - new Date(checkout.createdAt).getTime()).toBe(7 * 60_000);
	});

	it("gives the pricing service its price feed: refreshed from the configured URL at start", async () => {
		const price = await until("a price from the feed", async () => {
			const res = await node.http("GET", `/price/token/${IDS.sepoliaEth}`);
			return res.body?.source === "coingecko" ? res : null;
		}, 10_000);
		expect(price.body).toMatchObject({ tokenId: IDS.sepoliaEth, priceUsd: "2500", source: "coingecko" });
		expect(feedRequests.length).toBeGreaterThanOrEqual(1);
		expect(feedRequests[0]).toMatch(/^\/api\/v3\/simple\/price\?/);
	});
});
