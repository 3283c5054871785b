/**
 * Two gateway nodes and a core node over Moleculer's TCP transporter: a credit on the core wakes
 * the pay page's streams of the checkout on BOTH gateway nodes (`payments.checkouts.changed` is
 * broadcast; an emitted event would reach one of them). The safety-net poll is 10 minutes, so it
 * cannot be what delivered the change.
 */
import { openSse, SseStream } from "../helpers/sse";
import { startNode, TestNode } from "../helpers/harness";
import { createMerchant, IDS, Merchant, openCheckout, PAYMENTS_SERVICES, setPrices } from "../e2e/payments.helpers";
import { freePort, uniqueId } from "./cluster.helpers";

describe("pay page streams on two gateway nodes", () => {
	let core: TestNode;
	let gwA: TestNode;
	let gwB: TestNode;
	let merchant: Merchant;
	const streams: SseStream[] = [];

	beforeAll(async () => {
		const ids = { core: uniqueId("core"), a: uniqueId("gwa"), b: uniqueId("gwb") };
		const ports = { core: await freePort(), a: await freePort(), b: await freePort() };
		const urls = `127.0.0.1:${ports.core}/${ids.core},127.0.0.1:${ports.a}/${ids.a},127.0.0.1:${ports.b}/${ids.b}`;
		const namespace = uniqueId("pay");
		const env = (port: number) => ({ TRANSPORTER: "tcp", TCP_PORT: String(port), TCP_URLS: urls, NAMESPACE: namespace, PAY_EVENTS_POLL_MS: "600000" });
		core = await startNode({ services: PAYMENTS_SERVICES.filter(s => s !== "api" && s !== "pages"), env: env(ports.core), nodeID: ids.core });
		gwA = await startNode({ services: ["api", "pages"], env: env(ports.a), nodeID: ids.a, shareWith: core });
		gwB = await startNode({ services: ["api", "pages"], env: env(ports.b), nodeID: ids.b, shareWith: core });
		for (const gw of [gwA, gwB]) {
			await gw.broker.waitForServices(["links", "transactions", "intents", "organizations"], 30_000, 100);
			// The gateway builds routes from remote services shortly after it learns of them.
			const deadline = Date.now() + 30_000;
			while ((await gw.http("GET", "/payments/networks")).status !== 200 && Date.now() < deadline) await new Promise(r => setTimeout(r, 100));
		}
		// The core must know both gateways' event subscriptions before it broadcasts.
		const deadline = Date.now() + 30_000;
		while (core.broker.registry.getServiceList({ onlyAvailable: true }).filter(s => s.name === "api").length < 2 && Date.now() < deadline) await new Promise(r => setTimeout(r, 100));
		merchant = await createMerchant(gwA);
		await setPrices(gwA, { [IDS.sepoliaEth]: "2000" });
	}, 120_000);

	afterAll(async () => {
		for (const s of streams) s.close();
		await gwB?.stop();
		await gwA?.stop();
		await core?.stop();
	});

	it("a credit on the core reaches the checkout's stream on each gateway node", async () => {
		const c = await openCheckout(gwA, merchant.sandboxKey, { amount: "0.5", currency: "eth", tokenId: IDS.sepoliaEth, networkId: IDS.sepolia });
		const [onA, onB] = await Promise.all(
			[gwA, gwB].map(async gw => {
				const s = await openSse(`${gw.baseUrl.replace(/\/api\/v1$/, "")}/pay/${c.slug}/events?transaction=${c.txId}`);
				streams.push(s);
				expect(s.status).toBe(200);
				await s.next(e => e.event === "status");
				return s;
			}),
		);
		await core.broker.call("transactions.credit", { networkId: IDS.sepolia, txHash: "0xcluster1", logIndex: 0, toAddress: c.address, tokenId: IDS.sepoliaEth, amount: "0.2" });
		for (const s of [onA, onB]) {
			const partial = await s.next(e => e.data.transaction.amountReceived === "0.2");
			expect(partial.data).toMatchObject({ linkStatus: "active", amountDue: "0.3", transaction: { id: c.txId, status: "pending" } });
		}
		await core.broker.call("transactions.credit", { networkId: IDS.sepolia, txHash: "0xcluster2", logIndex: 0, toAddress: c.address, tokenId: IDS.sepoliaEth, amount: "0.3" });
		for (const s of [onA, onB]) await s.next(e => e.data.transaction.status === "completed");
	});
});
