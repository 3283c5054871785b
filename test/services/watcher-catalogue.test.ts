/**
 * Catalogue changes reach a running watcher (docs/watchers.md "Catalogue changes"): a node with
 * the payments services and the EVM watcher on a real anvil, started WITHOUT the test stablecoin's
 * address (USDC is not deployed, so not followed). Tokens and confirmations are then changed in
 * the database while the watcher runs, never restarted or rewound. Blocks are mined by hand.
 */
import { Contract, parseUnits } from "ethers";
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { deployTestUsdc, startAnvil, Anvil } from "../helpers/anvil";
import { until } from "../helpers/until";
import { TestNode } from "../helpers/harness";
import { openCheckout, sandboxMerchant, startPaymentsNode, PAYMENTS_SERVICES } from "../e2e/payments.helpers";

const NET = networkIdFor("anvil-local");
const ETH = tokenIdFor("anvil-local", "ETH");
const USDC = tokenIdFor("anvil-local", "USDC");
const REQUIRED = 2;

describe("catalogue changes reach a running EVM watcher", () => {
	let anvil: Anvil;
	let node: TestNode;
	let token: Contract;
	let key: { key: string; secret: string };

	beforeAll(async () => {
		anvil = await startAnvil();
		token = await deployTestUsdc(anvil, [1]);
		await anvil.setAutomine(false);
		node = await startPaymentsNode({
			services: [...PAYMENTS_SERVICES, "watcher-evm"],
			env: { RPC_URL_ANVIL_LOCAL: anvil.url, REQUIRED_CONFIRMATIONS_ANVIL_LOCAL: String(REQUIRED), WATCHER_POLL_MS: "50" },
		});
		({ key } = await sandboxMerchant(node));
		// The watcher leads and has read the chain: it runs before anything changes.
		await until("watcher leading", async () => {
			const [s] = (await node.broker.call("watcher-evm.status")) as Array<{ leader: boolean; cursor: number | null }>;
			return s?.leader && s.cursor !== null;
		});
	}, 120_000);

	afterAll(async () => {
		await node?.stop();
		await anvil?.stop();
	});

	const checkout = (amount: string, tokenId: string, currency: string) => openCheckout(node, key, { amount, currency, tokenId, networkId: NET });
	const getTx = async (id: string) => (await node.http("GET", `/payments/transactions/${id}`)).body;
	const payUsdc = async (to: string, usdc: string) => ((await (token.connect(anvil.accounts[1]) as Contract).transfer(to, parseUnits(usdc, 6))) as { hash: string }).hash;
	const payEth = async (to: string, eth: string) => (await anvil.accounts[2].sendTransaction({ to, value: parseUnits(eth, 18) })).hash;
	const completed = (id: string) =>
		until(`checkout ${id} completed`, async () => {
			const tx = await getTx(id);
			return tx.status === "completed" ? tx : null;
		});
	/** Mines blocks until the checkout shows `n` confirmations (a block at a time: the watcher reports each). */
	const confirming = (id: string, n: number) =>
		until(`checkout ${id} at ${n} confirmation(s)`, async () => {
			const tx = await getTx(id);
			return tx.confirmations === n ? tx : null;
		});

	it("watches a token switched on while it runs: a checkout in it paid right after is credited", async () => {
		const refused = await node.http("POST", "/payment_intents", { key, body: { payment_method_types: ["crypto"], return_url: "https://shop.example.com/r", amount: "5", currency: "usdc", tokenId: USDC, networkId: NET } });
		expect(refused.status).toBe(400);
		// What the seed does when TEST_USDC_ADDRESS is first given: the address, and the token switched on.
		await node.app.models.Token.update({ contractAddress: await token.getAddress(), isActive: true }, { where: { id: USDC } });
		await node.broker.call("networks.seed");
		const c = await checkout("5", USDC, "usdc");
		const hash = await payUsdc(c.address, "5");
		await anvil.mine(REQUIRED);
		const done = await completed(c.txId);
		expect(done).toMatchObject({ amountReceived: "5", hash });
	});

	it("applies a raised requiredConfirmations at once and shows it, with the core's cached catalogue still older", async () => {
		// The core's look-up cache holds the network with REQUIRED; the database is changed under it.
		expect(((await node.broker.call("networks.getNetwork", { id: NET })) as { requiredConfirmations: number }).requiredConfirmations).toBe(REQUIRED);
		await node.app.models.Network.update({ requiredConfirmations: 4 }, { where: { id: NET } });
		const c = await checkout("0.25", ETH, "eth");
		await payEth(c.address, "0.25");
		await anvil.mine(1);
		expect(await confirming(c.txId, 1)).toMatchObject({ status: "pending", requiredConfirmations: 4 });
		await anvil.mine(2);
		// 3 of 4: still confirming (the old requirement, 2, would have credited it).
		expect(await confirming(c.txId, 3)).toMatchObject({ status: "pending", requiredConfirmations: 4, amountReceived: "0" });
		await anvil.mine(1);
		expect(await completed(c.txId)).toMatchObject({ amountReceived: "0.25", requiredConfirmations: 4 });
	});

	it("credits at a lowered requiredConfirmations even while the core's cached catalogue says more (never dropped)", async () => {
		// The core's look-up cache holds 6 (read after its caches were cleared); the database then says 1.
		await node.app.models.Network.update({ requiredConfirmations: 6 }, { where: { id: NET } });
		await node.broker.broadcastLocal("networks.catalogue.changed", {});
		await until("core caches 6", async () => ((await node.broker.call("networks.getNetwork", { id: NET })) as { requiredConfirmations: number }).requiredConfirmations === 6);
		await node.app.models.Network.update({ requiredConfirmations: 1 }, { where: { id: NET } });
		const c = await checkout("4", USDC, "usdc");
		const hash = await payUsdc(c.address, "4");
		await anvil.mine(1);
		expect(await completed(c.txId)).toMatchObject({ amountReceived: "4", hash, requiredConfirmations: 1 });
		const [row] = await node.app.models.ChainTransfer.findAll({ where: { txHash: hash } });
		expect(row.reported).toBe("credited");
	});

	it("keeps watching a token switched off while a checkout in it is open", async () => {
		await node.app.models.Network.update({ requiredConfirmations: REQUIRED }, { where: { id: NET } });
		const c = await checkout("3", USDC, "usdc");
		await node.app.models.Token.update({ isActive: false }, { where: { id: USDC } });
		await node.broker.call("networks.seed");
		const refused = await node.http("POST", "/payment_intents", { key, body: { payment_method_types: ["crypto"], return_url: "https://shop.example.com/r", amount: "1", currency: "usdc", tokenId: USDC, networkId: NET } });
		expect(refused.status).toBe(400);
		const hash = await payUsdc(c.address, "3");
		await anvil.mine(REQUIRED);
		expect(await completed(c.txId)).toMatchObject({ amountReceived: "3", hash });
	});
});
