/**
 * No live payer is handed an address nobody watches (docs/payments.md "Watched networks only").
 * A gateway/core node with the payments services and no RPC URLs, as in a cluster, and later a
 * second node on the same database running the real EVM watcher for Base against an anvil started
 * with Base's chain id (8453): the core node learns that Base is watched from the watcher's lease
 * only. Before the watcher: live intents, links, quotes and checkouts on Base (and on Solana, a
 * chain type with no watcher at all) are 400 `networkNotWatched`; after: accepted, paid on the
 * chain and completed; the network list and the pay page say which networks are watched; the
 * lease's renewals never make Base flap; sandbox keeps simulating on unwatched test networks.
 */
import { parseEther } from "ethers";
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { WATCHED_GRACE_MS, watchedNetworkIds } from "../../lib/watchers/watched";
import { startAnvil, Anvil } from "../helpers/anvil";
import { startNode, TestNode } from "../helpers/harness";
import { until } from "../helpers/until";
import { createMerchant, intentBody, Merchant, startPaymentsNode } from "../e2e/payments.helpers";

const BASE = networkIdFor("base");
const BASE_ETH = tokenIdFor("base", "ETH");
const ETHEREUM = networkIdFor("ethereum");
const ETHEREUM_ETH = tokenIdFor("ethereum", "ETH");
const SOLANA = networkIdFor("solana");
const SOLANA_SOL = tokenIdFor("solana", "SOL");
const DEVNET = networkIdFor("solana-devnet");
const DEVNET_SOL = tokenIdFor("solana-devnet", "SOL");
const NOT_WATCHED = "No chain watcher follows this network: it does not accept live payments";
/** What both nodes share (a cluster's ConfigMap); only the watcher node has the RPC URL. */
const SHARED_ENV = { REQUIRED_CONFIRMATIONS_BASE: "1" };

describe("live payments only on watched networks", () => {
	let anvil: Anvil;
	let core: TestNode;
	let watcher: TestNode | null = null;
	let merchant: Merchant;

	const liveIntent = (networkId: string, tokenId: string, currency: string) =>
		core.http("POST", "/payment_intents", { key: merchant.liveKey, body: intentBody({ amount: "0.01", currency, tokenId, networkId }) });
	const liveLink = (networkId: string, tokenId: string) =>
		core.http("POST", "/payments/links", { token: merchant.token, headers: { "x-organization-id": merchant.live.id }, body: { title: "Live", amount: "0.01", tokenId, networkId } });
	const slugOf = (intent: { paymentLink: { link: string } }) => intent.paymentLink.link.split("/pay/")[1];
	const listed = async () => (await core.http("GET", "/payments/networks", { query: { active: "true" } })).body as Array<{ id: string; watched: boolean }>;
	/** The JSON the hosted pay page renders from (HTML `#pay-boot`). */
	const payPage = async (slug: string) => {
		const res = await fetch(`${core.baseUrl.replace(/\/api\/v1$/, "")}/pay/${slug}`);
		expect(res.status).toBe(200);
		const m = /<script id="pay-boot" type="application\/json">([\s\S]*?)<\/script>/.exec(await res.text());
		return JSON.parse(m![1]).page as { sandbox: boolean; options: Array<{ tokenId: string; networkId: string; watched: boolean }> };
	};
	const expectNotWatched = (res: { status: number; body: any }, field: string) => {
		expect([res.status, res.body]).toEqual([400, { statusCode: 400, error: "Bad Request", message: NOT_WATCHED, errors: { [field]: "networkNotWatched" } }]);
	};

	beforeAll(async () => {
		anvil = await startAnvil({ chainId: 8453 });
		core = await startPaymentsNode({ env: SHARED_ENV });
		merchant = await createMerchant(core);
	}, 120_000);

	afterAll(async () => {
		await watcher?.stop();
		await core?.stop();
		await anvil?.stop();
	});

	it("refuses live intents, links, quotes and checkouts where no watcher follows the network", async () => {
		expectNotWatched(await liveIntent(BASE, BASE_ETH, "eth"), "networkId");
		expectNotWatched(await liveIntent(SOLANA, SOLANA_SOL, "sol"), "networkId");
		expectNotWatched(await liveLink(BASE, BASE_ETH), "networkId");
		expect(await core.app.models.PaymentIntent.count({ where: { organizationId: merchant.live.id } })).toBe(0);
		expect(await core.app.models.PaymentLink.count({ where: { organizationId: merchant.live.id } })).toBe(0);
		expect((await listed()).filter(n => n.watched)).toEqual([]);
	});

	it("keeps sandbox simulation on an unwatched test network, and the pay page says only simulation works there", async () => {
		const created = await core.http("POST", "/payment_intents", { key: merchant.sandboxKey, body: intentBody({ amount: "0.5", currency: "sol", tokenId: DEVNET_SOL, networkId: DEVNET }) });
		expect(created.status).toBe(200);
		const page = await payPage(slugOf(created.body));
		expect(page.sandbox).toBe(true);
		expect(page.options[0]).toMatchObject({ tokenId: DEVNET_SOL, networkId: DEVNET, watched: false });
		expect(page.options.every(o => o.watched === false)).toBe(true);
		const simulated = await core.http("POST", `/payment_intents/${created.body.id}/simulate`, { key: merchant.sandboxKey });
		expect(simulated.status).toBe(200);
		expect(simulated.body).toMatchObject({ status: "succeeded", latestTransaction: { status: "completed" } });
	});

	it("accepts them once a real watcher follows the network, pays on the chain, and refuses again when nobody does", async () => {
		// The watcher node: same database, the EVM watcher with Base's RPC URL (the core node has none).
		watcher = await startNode({
			shareWith: core,
			services: ["networks", "transactions", "watcher-evm"],
			env: { ...SHARED_ENV, RPC_URL_BASE: anvil.url, WATCHER_POLL_MS: "100", WATCHER_LEASE_MS: "1000" },
		});
		// No broadcast reaches the core node (no transporter between these two): it learns from the lease row.
		await until("Base listed as watched on the core node", async () => (await listed()).find(n => n.id === BASE)?.watched);
		expect((await listed()).filter(n => n.watched).map(n => n.id)).toEqual([BASE]);

		const intent = await liveIntent(BASE, BASE_ETH, "eth");
		expect(intent.status).toBe(200);
		expectNotWatched(await liveIntent(SOLANA, SOLANA_SOL, "sol"), "networkId");
		const link = await liveLink(BASE, BASE_ETH);
		expect(link.status).toBe(201);
		const linkSlug = link.body.slug as string;
		const slug = slugOf(intent.body);

		// The payer's own choice of network is checked too: Ethereum has no watcher here.
		const payer = { payerTokenId: ETHEREUM_ETH, payerNetworkId: ETHEREUM };
		expectNotWatched(await core.http("POST", `/payments/links/${slug}/quote`, { body: payer }), "payerNetworkId");
		expectNotWatched(await core.http("POST", `/payments/links/${slug}/transactions`, { body: payer }), "payerNetworkId");
		expect((await core.http("POST", `/payments/links/${slug}/quote`, { body: {} })).body).toMatchObject({ payerNetworkId: BASE, totalAmount: "0.01" });

		// The live pay page offers only what a watcher follows.
		const page = await payPage(slug);
		expect(page.sandbox).toBe(false);
		expect(page.options.length).toBeGreaterThan(0);
		expect(page.options.every(o => o.networkId === BASE && o.watched)).toBe(true);

		const checkout = await core.http("POST", `/payments/links/${slug}/transactions`, { body: {} });
		expect(checkout.status).toBe(201);
		// Moving an open checkout to an unwatched network would hand out a new address there: refused too.
		expectNotWatched(await core.http("PATCH", `/payments/transactions/${checkout.body.id}/payer`, { body: payer }), "payerNetworkId");
		expect((await core.http("GET", `/payments/transactions/${checkout.body.id}`)).body).toMatchObject({ payerNetworkId: BASE, depositAddress: checkout.body.depositAddress });
		await (await anvil.accounts[2].sendTransaction({ to: checkout.body.depositAddress, value: parseEther("0.01") })).wait();
		await until("the live payment completed", async () => (await core.http("GET", `/payment_intents/${intent.body.id}`, { key: merchant.liveKey })).body.status === "succeeded");
		expect((await core.http("GET", `/payments/transactions/${checkout.body.id}`)).body).toMatchObject({ status: "completed", amountReceived: "0.01" });

		// Renewals (every third of the 1 s lease here) never make Base flap to unwatched: read the
		// lease itself at every step until it was renewed several times.
		const cursor = () => core.app.models.ChainCursor.findByPk(BASE);
		const first = (await cursor())!;
		await until("several lease renewals", async () => {
			expect((await watchedNetworkIds(core.app.models, Date.now())).has(BASE)).toBe(true);
			expect((await core.http("POST", `/payments/links/${linkSlug}/quote`, { body: {} })).status).toBe(200);
			const now = (await cursor())!;
			return now.leaseUntil!.getTime() - first.leaseUntil!.getTime() >= 3_000;
		}, 60_000);

		// A graceful stop gives the lease up: still watched through a restart or a failover ...
		await watcher.stop();
		watcher = null;
		expect((await cursor())!.leaseOwner).toBeNull();
		expect((await watchedNetworkIds(core.app.models, Date.now())).has(BASE)).toBe(true);
		expect((await liveLink(BASE, BASE_ETH)).status).toBe(201);
		// ... but not once WATCHED_GRACE_MS have passed (the row as it is a minute after that stop):
		// no live payer is handed a Base address any more.
		await core.app.models.ChainCursor.update({ leaseUntil: new Date(Date.now() - WATCHED_GRACE_MS - 1_000) }, { where: { networkId: BASE } });
		await until("Base listed as not watched on the core node", async () => !(await listed()).find(n => n.id === BASE)?.watched);
		expectNotWatched(await core.http("POST", `/payments/links/${linkSlug}/transactions`, { body: {} }), "payerNetworkId");
		expectNotWatched(await liveIntent(BASE, BASE_ETH, "eth"), "networkId");
	}, 180_000);
});
