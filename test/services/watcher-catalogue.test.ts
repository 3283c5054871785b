/**
 * Catalogue changes reach a running watcher (docs/watchers.md "Catalogue changes"): a node with
 * the payments services and the EVM watcher on a real anvil, started WITHOUT the test stablecoin's
 * address (USDC is not deployed, so not followed). Tokens and confirmations are then changed in
 * the database while the watcher runs, never rewound (restarted only to show a restart follows a
 * switched-off token too). Blocks are mined by hand. Then the same for a running sweeper.
 */
import { Contract, parseUnits, Wallet } from "ethers";
import { availableServices, loadServiceSchema } from "../../lib/node";
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

	/** The watcher service stopped and started again on the node (as a restart or a failover would). */
	const restartWatcher = async () => {
		await node.broker.destroyService(node.broker.getLocalService("watcher-evm")!);
		node.broker.createService(loadServiceSchema(availableServices()["watcher-evm"]));
		await until("watcher leading again", async () => {
			// Not available until the new service has started.
			const [s] = (await node.broker.call("watcher-evm.status").catch(() => [])) as Array<{ leader: boolean }>;
			return s?.leader;
		});
	};

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
		// What the watcher applies, as `call watcher-evm.status` shows it.
		const [status] = (await node.broker.call("watcher-evm.status")) as Array<{ tokens: string[]; requiredConfirmations: number }>;
		expect(status).toMatchObject({ tokens: expect.arrayContaining(["ETH", "USDC"]), requiredConfirmations: REQUIRED });
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

	it("applies a requirement raised while a payment confirms to that payment, and shows it", async () => {
		await node.app.models.Network.update({ requiredConfirmations: 2 }, { where: { id: NET } });
		const c = await checkout("0.125", ETH, "eth");
		await payEth(c.address, "0.125");
		await anvil.mine(1);
		expect(await confirming(c.txId, 1)).toMatchObject({ status: "pending", requiredConfirmations: 2 });
		await node.app.models.Network.update({ requiredConfirmations: 3 }, { where: { id: NET } });
		await anvil.mine(1);
		// 2 of 3, not credited at the old requirement.
		expect(await confirming(c.txId, 2)).toMatchObject({ status: "pending", requiredConfirmations: 3, amountReceived: "0" });
		await anvil.mine(1);
		expect(await completed(c.txId)).toMatchObject({ amountReceived: "0.125", requiredConfirmations: 3 });
	});

	it("keeps watching a token switched off while checkouts in it are open, also after the watcher restarts", async () => {
		await node.app.models.Network.update({ requiredConfirmations: REQUIRED }, { where: { id: NET } });
		const a = await checkout("3", USDC, "usdc");
		const b = await checkout("2", USDC, "usdc");
		await node.app.models.Token.update({ isActive: false }, { where: { id: USDC } });
		await node.broker.call("networks.seed");
		const refused = await node.http("POST", "/payment_intents", { key, body: { payment_method_types: ["crypto"], return_url: "https://shop.example.com/r", amount: "1", currency: "usdc", tokenId: USDC, networkId: NET } });
		expect(refused.status).toBe(400);
		const paidA = await payUsdc(a.address, "3");
		await anvil.mine(REQUIRED);
		expect(await completed(a.txId)).toMatchObject({ amountReceived: "3", hash: paidA });
		// A watcher that starts after the switch (a restart, a failover) follows the token too.
		await restartWatcher();
		const paidB = await payUsdc(b.address, "2");
		await anvil.mine(REQUIRED);
		expect(await completed(b.txId)).toMatchObject({ amountReceived: "2", hash: paidB });
	});

	it("keeps following a network switched off while a checkout on it is open, also after the watcher restarts", async () => {
		const c = await checkout("0.5", ETH, "eth");
		await node.app.models.Network.update({ isActive: false }, { where: { id: NET } });
		await node.broker.call("networks.seed");
		try {
			const refused = await node.http("POST", "/payment_intents", { key, body: { payment_method_types: ["crypto"], return_url: "https://shop.example.com/r", amount: "1", currency: "eth", tokenId: ETH, networkId: NET } });
			expect(refused.status).toBe(400);
			await restartWatcher();
			const hash = await payEth(c.address, "0.5");
			await anvil.mine(REQUIRED);
			expect(await completed(c.txId)).toMatchObject({ amountReceived: "0.5", hash });
		} finally {
			await node.app.models.Network.update({ isActive: true }, { where: { id: NET } });
			await node.broker.call("networks.seed");
		}
	});
});

describe("catalogue changes reach a running EVM sweeper", () => {
	let anvil: Anvil;
	let node: TestNode;
	let token: Contract;
	const destination = Wallet.createRandom().address;
	let key: { key: string; secret: string };

	beforeAll(async () => {
		anvil = await startAnvil();
		token = await deployTestUsdc(anvil, [1]);
		await anvil.setAutomine(true);
		node = await startPaymentsNode({
			services: [...PAYMENTS_SERVICES, "watcher-evm", "withdrawals", "sweeper-evm"],
			env: {
				RPC_URL_ANVIL_LOCAL: anvil.url,
				REQUIRED_CONFIRMATIONS_ANVIL_LOCAL: "1",
				WATCHER_POLL_MS: "100",
				WATCHER_RECONCILE_MS: "0",
				SWEEPER_PRIVATE_KEY: (anvil.accounts[5].signer as Wallet).privateKey,
				SWEEP_POLL_MS: "200",
				SWEEP_LEASE_MS: "2000",
				SWEEP_MIN_VALUE_MULTIPLE: "2",
				EIP7702_ANVIL_LOCAL: "false",
			},
		});
		let user;
		({ user, key } = await sandboxMerchant(node));
		expect((await node.http("PUT", "/withdrawals/settings", { token: user.token, body: { addresses: { evm: destination } } })).status).toBe(200);
		await until("sweeper leading", async () => ((await node.broker.call("sweeper-evm.status")) as Array<{ leader: boolean }>)[0]?.leader);
	}, 120_000);

	afterAll(async () => {
		await node?.stop();
		await anvil?.stop();
	});

	it("sweeps a token switched on while it runs", async () => {
		await node.app.models.Token.update({ contractAddress: await token.getAddress(), isActive: true }, { where: { id: USDC } });
		await node.broker.call("networks.seed");
		const c = await openCheckout(node, key, { amount: "4", currency: "usdc", tokenId: USDC, networkId: NET });
		await (await (token.connect(anvil.accounts[1]) as Contract).transfer(c.address, parseUnits("4", 6))).wait();
		await until("token sweep confirmed", async () => node.app.models.Sweep.findOne({ where: { kind: "token", tokenId: USDC, status: "confirmed" } }), 90_000);
		expect((await token.balanceOf(destination)) as bigint).toBe(parseUnits("4", 6));
		expect((await token.balanceOf(c.address)) as bigint).toBe(0n);
	}, 150_000);
});
