/**
 * Two pricing nodes on one database (NATS between them): the second start seeds nothing twice,
 * and an admin edit on one node reaches the other's cache (memory cacher: `pricing.changed`;
 * Redis cacher: shared) long before the cache's TTL.
 */
import crypto from "node:crypto";
import { startNode, TestNode } from "../helpers/harness";
import { createUserWithToken } from "../helpers/users";
import { tokenIdFor } from "../../lib/networks/catalogue";

const USDC = tokenIdFor("polygon", "USDC");

describe("pricing on two nodes (NATS)", () => {
	let first: TestNode;
	let second: TestNode;

	beforeAll(async () => {
		// Own namespace: other test runs on the same NATS server never meet these nodes.
		const env = { TRANSPORTER: "nats://127.0.0.1:4222", NAMESPACE: `pricing-${crypto.randomBytes(4).toString("hex")}` };
		first = await startNode({ services: ["api", "auth", "organizations", "networks", "pricing"], env });
		second = await startNode({ services: ["api", "networks", "pricing"], env, shareWith: first });
		const deadline = Date.now() + 15_000;
		const knows = (a: TestNode, b: TestNode) => a.broker.registry.nodes.list({ onlyAvailable: true }).some((n: { id: string }) => n.id === b.broker.nodeID);
		while (!knows(first, second) || !knows(second, first)) {
			if (Date.now() > deadline) throw new Error("the two nodes never discovered each other");
			await new Promise(r => setTimeout(r, 100));
		}
	}, 40_000);
	afterAll(async () => {
		await second?.stop();
		await first?.stop();
	});

	it("seeds once for both nodes", async () => {
		const { Currency, CurrencyRate, TokenPrice } = first.app.models;
		expect(await Currency.count({ where: { code: "EUR" } })).toBe(1);
		expect(await CurrencyRate.count()).toBe(9);
		expect(await TokenPrice.count({ where: { tokenId: USDC } })).toBe(1);
		expect(await second.broker.call("pricing.seed", {})).toEqual({ currencies: 0, rates: 0, prices: 0 });
	});

	it("an edit on one node is read on the other without waiting for the cache TTL", async () => {
		const admin = await createUserWithToken(first, { role: "admin" });
		const read = () => second.http("GET", `/price/token/${USDC}`);
		expect((await read()).body.priceUsd).toBe("1");
		const quote = () => second.http("GET", "/price/fiat-quote", { query: { amount: "50", currency: "USD", tokenId: USDC } });
		expect((await quote()).body.tokenAmount).toBe("50");
		const edit = await first.http("PUT", `/price/admin/token/${USDC}`, { token: admin.token, body: { priceUsd: "0.5" } });
		expect(edit.status).toBe(200);
		// The event crosses the transporter in milliseconds; the cache TTL is 30 s.
		const deadline = Date.now() + 5_000;
		let seen = (await read()).body.priceUsd;
		while (seen !== "0.5" && Date.now() < deadline) {
			await new Promise(r => setTimeout(r, 25));
			seen = (await read()).body.priceUsd;
		}
		expect(seen).toBe("0.5");
		expect((await quote()).body.tokenAmount).toBe("100");
	});
});
