/**
 * The EVM sweeper against destinations and deposits that do not take a plain transfer, on a real
 * anvil node (docs/withdrawals.md "Reverted sends and holds"):
 * - a contract destination whose receive() writes storage (a Safe, a smart account): the ETH sweep
 *   and an ETH withdrawal request get the gas the node estimates, and land;
 * - a destination that always reverts: a bounded number of sends (each one's gas booked as a
 *   `fee`), then the destination is held for good: an error log, the `sweeps.blocked` metric, the
 *   sweeper's `status`, and nothing more is sent; a request to such a destination fails for good;
 * - a token batch holding a blacklisted deposit: that deposit leaves the batch before anything is
 *   signed and is backed off until held for good; the others are swept.
 * Every test ends with the ledger equal to what the chain holds.
 */
import { Op } from "sequelize";
import { Contract, formatEther, formatUnits, parseEther, parseUnits, Wallet } from "ethers";
import { deployContract } from "../../lib/chains/evm/contracts";
import { deploySweepContracts } from "../../lib/chains/evm/sweep";
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { money } from "../../lib/money";
import { freePort, startAnvil, Anvil } from "../helpers/anvil";
import { LogLine, TestNode } from "../helpers/harness";
import { startRpcProxy, RpcProxy } from "../helpers/rpc-proxy";
import { until } from "../helpers/until";
import { createUserWithToken, UserWithToken } from "../helpers/users";
import { openCheckout, sandboxMerchant, startPaymentsNode, PAYMENTS_SERVICES } from "../e2e/payments.helpers";

const NET = networkIdFor("anvil-local");
const ETH = tokenIdFor("anvil-local", "ETH");
const USDC = tokenIdFor("anvil-local", "USDC");
const SWEEPER = 5;

async function startSweeperNode(rpcUrl: string, anvil: Anvil, env: Record<string, string>, logs?: LogLine[]): Promise<TestNode> {
	return startPaymentsNode({
		services: [...PAYMENTS_SERVICES, "watcher-evm", "withdrawals", "sweeper-evm"],
		env: {
			RPC_URL_ANVIL_LOCAL: rpcUrl,
			WATCHER_POLL_MS: "100",
			WATCHER_RECONCILE_MS: "0",
			SWEEPER_PRIVATE_KEY: (anvil.accounts[SWEEPER].signer as Wallet).privateKey,
			SWEEP_POLL_MS: "200",
			SWEEP_LEASE_MS: "5000",
			SWEEP_MIN_VALUE_MULTIPLE: "2",
			SWEEP_MAX_FAILURES: "3",
			SWEEP_FAILURE_BACKOFF_MS: "300",
			...env,
		},
		logs,
	});
}

/** The merchant's ledger for a token on the test network: `balance` is the sum of its entries. */
async function ledger(node: TestNode, organizationId: string, tokenId: string): Promise<{ balance: string; available: string }> {
	return (await node.broker.call("withdrawals.balance", { organizationId, networkId: NET, tokenId })) as { balance: string; available: string };
}

/** A settled ETH checkout of `user`'s sandbox organization: its deposit address. */
async function paidEth(node: TestNode, anvil: Anvil, key: { key: string; secret: string }, amount: string): Promise<{ address: string; txId: string }> {
	const c = await openCheckout(node, key, { amount, currency: "eth", tokenId: ETH, networkId: NET });
	await (await anvil.accounts[2].sendTransaction({ to: c.address, value: parseEther(amount) })).wait();
	await until("settled", async () => (await node.http("GET", `/payments/transactions/${c.txId}`)).body.status === "completed", 60_000);
	return c;
}

describe("EVM sweeper: a contract destination that needs more than 21,000 gas", () => {
	let anvil: Anvil;
	let node: TestNode;
	let sweepTo: Contract;
	let requestTo: Contract;

	beforeAll(async () => {
		anvil = await startAnvil();
		await anvil.setAutomine(true);
		sweepTo = await deployContract(anvil.accounts[0], "StoringReceiver");
		requestTo = await deployContract(anvil.accounts[0], "StoringReceiver");
		node = await startSweeperNode(anvil.url, anvil, { EIP7702_ANVIL_LOCAL: "false" });
	}, 120_000);

	afterAll(async () => {
		await node?.stop();
		await anvil?.stop();
	});

	it("sweeps ETH to it with the estimated gas; the ledger equals the deposit's balance", async () => {
		const { user, key } = await sandboxMerchant(node);
		expect((await node.http("PUT", "/withdrawals/settings", { token: user.token, body: { addresses: { evm: await sweepTo.getAddress() } } })).status).toBe(200);
		const c = await paidEth(node, anvil, key, "0.5");
		const done = await until("native sweep confirmed", async () => node.app.models.Sweep.findOne({ where: { kind: "native", fromAddress: c.address, status: "confirmed" } }), 60_000);
		const tx = await anvil.provider.getTransaction(done.txHash!);
		expect(tx!.gasLimit).toBeGreaterThan(21_000n);
		// The contract ran its receive(): it counted the payment.
		expect(await sweepTo.count()).toBe(1n);
		expect(await sweepTo.received()).toBe(tx!.value);
		expect(await anvil.provider.getBalance(await sweepTo.getAddress())).toBe(tx!.value);
		expect(await node.app.models.Sweep.count({ where: { fromAddress: c.address, status: "failed" } })).toBe(0);
		const left = await anvil.provider.getBalance(c.address);
		await until("ledger equals the chain", async () => money((await ledger(node, user.sandbox.id, ETH)).balance).eq(money(formatEther(left))), 30_000);
	}, 120_000);

	it("pays an ETH withdrawal request to it; the ledger equals the deposit's balance", async () => {
		const other: UserWithToken = await createUserWithToken(node);
		const made = await node.http("POST", `/organizations/${other.sandbox.id}/api-keys`, { token: other.token, body: { name: "shop" } });
		const c = await paidEth(node, anvil, { key: made.body.key, secret: made.body.secret }, "0.5");
		await until("credited", async () => money((await ledger(node, other.sandbox.id, ETH)).available).eq(money("0.5")), 30_000);
		const asked = await node.http("POST", "/withdrawals/requests", { token: other.token, body: { amount: "0.3", tokenId: ETH, sourceNetworkId: NET, address: await requestTo.getAddress(), strategy: 1 } });
		expect(asked.status).toBe(201);
		await until("request completed", async () => ((await node.http("GET", "/withdrawals/requests", { token: other.token })).body as Array<{ id: string; status: string }>).find(r => r.id === asked.body.id)?.status === "completed", 60_000);
		expect(await anvil.provider.getBalance(await requestTo.getAddress())).toBe(parseEther("0.3"));
		expect(await requestTo.count()).toBe(1n);
		const left = await anvil.provider.getBalance(c.address);
		await until("ledger equals the chain", async () => money((await ledger(node, other.sandbox.id, ETH)).balance).eq(money(formatEther(left))), 30_000);
	}, 150_000);
});

describe("EVM sweeper: a destination that always reverts", () => {
	let anvil: Anvil;
	let proxy: RpcProxy;
	let node: TestNode;
	let refuser: Contract;
	let requestRefuser: Contract;
	const logs: LogLine[] = [];

	beforeAll(async () => {
		anvil = await startAnvil();
		await anvil.setAutomine(true);
		refuser = await deployContract(anvil.accounts[0], "RevertingReceiver");
		requestRefuser = await deployContract(anvil.accounts[0], "RevertingReceiver");
		proxy = await startRpcProxy(anvil.url);
		node = await startSweeperNode(proxy.url, anvil, { EIP7702_ANVIL_LOCAL: "false", METRICS: "true", METRICS_PORT: String(await freePort()) }, logs);
	}, 120_000);

	afterAll(async () => {
		await node?.stop();
		await proxy?.stop();
		await anvil?.stop();
	});

	const blockedMetric = () => {
		const metric = node.broker.metrics.getMetric("sweeps.blocked");
		return (metric?.get({ network: "anvil-local", scope: "destination" })?.value as number | undefined) ?? 0;
	};

	it("sends a bounded number of times, books each reverted send's gas as a fee, then holds the destination for good", async () => {
		const { user, key } = await sandboxMerchant(node);
		const destination = await refuser.getAddress();
		expect((await node.http("PUT", "/withdrawals/settings", { token: user.token, body: { addresses: { evm: destination } } })).status).toBe(200);
		// The node's estimate says the send passes (the destination's state changed between the
		// estimate and the block, or the node estimates wrongly): each send goes out and reverts.
		proxy.answer("eth_estimateGas", "0x186a0");
		const c = await paidEth(node, anvil, key, "0.5");
		const status = async () => ((await node.broker.call("sweeper-evm.status")) as Array<{ networkId: string; holds: Array<{ scope: string; address: string; failures: number; blocked: boolean; reason: string }> }>).find(n => n.networkId === NET)!;
		const hold = await until("destination held for good", async () => (await status()).holds.find(h => h.address === destination && h.blocked), 90_000);
		expect(hold).toMatchObject({ scope: "destination", failures: 3 });
		// Nothing more is sent there while the sweeper keeps stepping (it reads the deposit's balance each step).
		const calls = proxy.calls("eth_getBalance");
		await until("ten more sweeper steps", async () => proxy.calls("eth_getBalance") >= calls + 10, 60_000);
		const sent = await node.app.models.Sweep.findAll({ where: { toAddress: destination } });
		expect(sent).toHaveLength(3);
		for (const s of sent) {
			expect(s).toMatchObject({ status: "failed", reason: "reverted on chain" });
			const receipt = await anvil.provider.getTransactionReceipt(s.txHash!);
			expect(receipt!.status).toBe(0);
			expect(s.feePaid).toBe((receipt!.gasUsed * receipt!.gasPrice).toString());
		}
		// Each reverted send's gas is a fee entry: the ledger equals what the deposit holds.
		const fees = await node.app.models.LedgerEntry.findAll({ where: { organizationId: user.sandbox.id, kind: "fee" } });
		expect(fees).toHaveLength(3);
		const left = await anvil.provider.getBalance(c.address);
		expect(left).toBeLessThan(parseEther("0.5"));
		expect(money((await ledger(node, user.sandbox.id, ETH)).balance).eq(money(formatEther(left)))).toBe(true);
		// The alert: an error line, the metric, and the status entry above.
		expect(logs.some(l => l.level === "error" && l.text.includes(destination) && l.text.includes("failed 3 times in a row"))).toBe(true);
		expect(blockedMetric()).toBe(1);
		proxy.answer("eth_estimateGas", null);

		// Support clears the hold: the sweeper tries again (and the real estimate now says it reverts: held again, nothing sent).
		const cleared = (await node.broker.call("sweeper-evm.support.clearHold", { network: "anvil-local", address: destination.toLowerCase() })) as { cleared: number };
		expect(cleared.cleared).toBe(1);
		await until("held again after estimates", async () => (await status()).holds.find(h => h.address === destination && h.blocked), 60_000);
		expect(await node.app.models.Sweep.count({ where: { toAddress: destination } })).toBe(3);
	}, 240_000);

	it("fails a withdrawal request to such a destination for good after its estimates keep reverting, sending nothing", async () => {
		const other: UserWithToken = await createUserWithToken(node);
		const made = await node.http("POST", `/organizations/${other.sandbox.id}/api-keys`, { token: other.token, body: { name: "shop" } });
		const c = await paidEth(node, anvil, { key: made.body.key, secret: made.body.secret }, "0.4");
		await until("credited", async () => money((await ledger(node, other.sandbox.id, ETH)).available).eq(money("0.4")), 30_000);
		const destination = await requestRefuser.getAddress();
		const asked = await node.http("POST", "/withdrawals/requests", { token: other.token, body: { amount: "0.1", tokenId: ETH, sourceNetworkId: NET, address: destination, strategy: 1 } });
		expect(asked.status).toBe(201);
		const failed = await until("request failed for good", async () => ((await node.http("GET", "/withdrawals/requests", { token: other.token })).body as Array<{ id: string; status: string; reason: string }>).find(r => r.id === asked.body.id && r.status === "failed"), 60_000);
		expect(failed.reason).toContain("refuses payments");
		expect(await node.app.models.Sweep.count({ where: { toAddress: destination } })).toBe(0);
		expect(await anvil.provider.getBalance(c.address)).toBe(parseEther("0.4"));
		const book = await ledger(node, other.sandbox.id, ETH);
		expect(money(book.balance).eq(money("0.4")) && money(book.available).eq(money("0.4"))).toBe(true);
	}, 120_000);
});

describe("EVM sweeper: a token batch with a blacklisted deposit", () => {
	let anvil: Anvil;
	let node: TestNode;
	let token: Contract;
	const destination = Wallet.createRandom().address;

	beforeAll(async () => {
		anvil = await startAnvil();
		await anvil.setAutomine(true);
		token = await deployContract(anvil.accounts[0], "RestrictedToken", ["Test USD Coin", "USDC"]);
		await (await token.mint(anvil.addresses[1], parseUnits("1000", 6))).wait();
		const contracts = await deploySweepContracts(anvil.accounts[SWEEPER]);
		node = await startSweeperNode(anvil.url, anvil, {
			TEST_USDC_ADDRESS: await token.getAddress(),
			SWEEP_CONTRACTS_ANVIL_LOCAL: `${contracts.batcher},${contracts.delegate}`,
			// Every deposit is due at once, and the blacklisted one is tried again after each pause.
			SWEEP_MAX_AGE_MINUTES: "0",
		});
	}, 120_000);

	afterAll(async () => {
		await node?.stop();
		await anvil?.stop();
	});

	it("drops the deposit that makes the batch revert, sweeps the others, and backs it off until held for good", async () => {
		const { user, key } = await sandboxMerchant(node);
		const payer = token.connect(anvil.accounts[1]) as Contract;
		const deposits: string[] = [];
		// Paid and settled before the merchant has a destination: nothing is swept yet.
		for (let i = 0; i < 3; i++) {
			const c = await openCheckout(node, key, { amount: "2.5", currency: "usdc", tokenId: USDC, networkId: NET });
			await (await payer.transfer(c.address, parseUnits("2.5", 6))).wait();
			await until("settled", async () => (await node.http("GET", `/payments/transactions/${c.txId}`)).body.status === "completed", 60_000);
			deposits.push(c.address);
		}
		await until("credited", async () => money((await ledger(node, user.sandbox.id, USDC)).available).eq(money("7.5")), 30_000);
		const bad = deposits[1];
		await (await (token.connect(anvil.accounts[0]) as Contract).setBlacklisted(bad, true)).wait();
		expect((await node.http("PUT", "/withdrawals/settings", { token: user.token, body: { addresses: { evm: destination } } })).status).toBe(200);

		// The first plan may read a checkout's destination just before the settings were saved: the
		// good deposits go in one batch or two, never with the blacklisted one.
		const good = [deposits[0], deposits[2]].sort();
		const swept = async () => {
			const batches = await node.app.models.Sweep.findAll({ where: { kind: "batch7702", status: "confirmed" } });
			const items = await node.app.models.SweepItem.findAll({ where: { sweepId: { [Op.in]: batches.map(b => b.id) } } });
			return items.length === 2 ? items.map(i => i.depositAddress).sort() : null;
		};
		expect(await until("the good deposits swept", swept, 90_000)).toEqual(good);
		expect((await token.balanceOf(destination)) as bigint).toBe(parseUnits("5", 6));
		const held = await until("the bad deposit held for good", async () => node.app.models.SweepHold.findOne({ where: { scope: "deposit", address: bad, tokenId: USDC, blockedAt: { [Op.ne]: null } } }), 60_000);
		expect(held.failures).toBe(3);
		// Never signed into a batch: no sweep item of it, no batch reverted on chain, nothing paid for it.
		expect(await node.app.models.SweepItem.count({ where: { depositAddress: bad } })).toBe(0);
		expect(await node.app.models.Sweep.count({ where: { status: "failed", reason: "reverted on chain" } })).toBe(0);
		expect((await token.balanceOf(bad)) as bigint).toBe(parseUnits("2.5", 6));
		// The ledger holds what the deposits still hold: the blacklisted 2.5.
		let onChain = 0n;
		for (const d of deposits) onChain += (await token.balanceOf(d)) as bigint;
		await until("ledger equals the chain", async () => money((await ledger(node, user.sandbox.id, USDC)).balance).eq(money(formatUnits(onChain, 6))), 30_000);
	}, 300_000);
});
