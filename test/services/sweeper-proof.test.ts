/**
 * The EVM sweeper on a real anvil node behind a misbehaving RPC proxy (test/helpers/rpc-proxy.ts):
 * - every transaction receipt answers `null` once (a lagging node behind a load balancer): a sweep
 *   is failed only with proof it was not mined, so a withdrawal request is paid exactly once and a
 *   swept deposit leaves the ledger;
 * - a nonce taken by a transaction we do not know stalls the sweep (operator alert): its funds stay
 *   locked until an operator releases them;
 * - the sweep lease is fenced: a leader whose lease was taken over mid-step writes nothing, and a
 *   stalled RPC call ends within SWEEP_RPC_TIMEOUT_MS instead of holding the step.
 * Every case ends with the ledger equal to what the chain holds.
 */
import { formatUnits, parseEther, Wallet } from "ethers";
import { v5 as uuidv5 } from "uuid";
import { CATALOGUE_NAMESPACE, networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { money } from "../../lib/money";
import { acquireLease, releaseLease, LeaseLostError } from "../../lib/watchers/store";
import { planSweep, recordSigned, finishSweep } from "../../lib/sweeps/store";
import { freePort, startAnvil, Anvil } from "../helpers/anvil";
import type { TestNode } from "../helpers/harness";
import { startRpcProxy, RpcProxy } from "../helpers/rpc-proxy";
import { until } from "../helpers/until";
import { createUserWithToken, UserWithToken } from "../helpers/users";
import { openCheckout, startPaymentsNode, PAYMENTS_SERVICES } from "../e2e/payments.helpers";

const NET = networkIdFor("anvil-local");
const ETH = tokenIdFor("anvil-local", "ETH");
const LEASE_ID = uuidv5(`sweep:${NET}`, CATALOGUE_NAMESPACE);

/** A node with the payments services, the watcher, the ledger and the sweeper, all reading the chain through `proxy`. */
function startSweeperNode(proxy: RpcProxy, env: Record<string, string> = {}): Promise<TestNode> {
	return startPaymentsNode({
		services: [...PAYMENTS_SERVICES, "watcher-evm", "withdrawals", "sweeper-evm"],
		env: { RPC_URL_ANVIL_LOCAL: proxy.url, WATCHER_POLL_MS: "100", WATCHER_RECONCILE_MS: "0", EIP7702_ANVIL_LOCAL: "false", SWEEP_POLL_MS: "200", SWEEP_LEASE_MS: "3000", SWEEP_MIN_VALUE_MULTIPLE: "2", ...env },
	});
}

/** A merchant with an API key on its sandbox organization (and withdrawal settings when `destination` is given). */
async function merchant(node: TestNode, destination?: string): Promise<{ user: UserWithToken; key: { key: string; secret: string } }> {
	const user = await createUserWithToken(node);
	const made = await node.http("POST", `/organizations/${user.sandbox.id}/api-keys`, { token: user.token, body: { name: "shop" } });
	expect(made.status).toBe(201);
	if (destination) expect((await node.http("PUT", "/withdrawals/settings", { token: user.token, body: { addresses: { evm: destination } } })).status).toBe(200);
	return { user, key: { key: made.body.key, secret: made.body.secret } };
}

/** A settled ETH payment of `amount` to a fresh deposit address of the merchant; answers the deposit address. */
async function paid(node: TestNode, anvil: Anvil, key: { key: string; secret: string }, amount: string): Promise<string> {
	const c = await openCheckout(node, key, { amount, currency: "eth", tokenId: ETH, networkId: NET });
	await (await anvil.accounts[2].sendTransaction({ to: c.address, value: parseEther(amount) })).wait();
	await until("settled", async () => (await node.http("GET", `/payments/transactions/${c.txId}`)).body.status === "completed", 30_000);
	return c.address;
}

async function ledgerBalance(node: TestNode, organizationId: string): Promise<string> {
	return ((await node.broker.call("withdrawals.balance", { organizationId, networkId: NET, tokenId: ETH })) as { balance: string }).balance;
}

/** What the deposit addresses hold on chain, in ETH. */
async function onChain(anvil: Anvil, deposits: string[]): Promise<string> {
	let sum = 0n;
	for (const d of deposits) sum += await anvil.provider.getBalance(d);
	return formatUnits(sum, 18);
}

/** An anvil, a proxy in front of it (set up by `misbehave`) and a sweeper node reading through it, for one describe block. */
function chainBehindProxy(env: () => Promise<Record<string, string>>, misbehave: (proxy: RpcProxy) => void = () => undefined) {
	const ctx = {} as { anvil: Anvil; proxy: RpcProxy; node: TestNode };
	beforeAll(async () => {
		ctx.anvil = await startAnvil();
		await ctx.anvil.setAutomine(true);
		ctx.proxy = await startRpcProxy(ctx.anvil.url);
		misbehave(ctx.proxy);
		ctx.node = await startSweeperNode(ctx.proxy, await env());
	}, 120_000);
	afterAll(async () => {
		await ctx.node?.stop();
		await ctx.proxy?.stop();
		await ctx.anvil?.stop();
	});
	return ctx;
}

describe("EVM sweeper: a sweep is failed only with proof it was not mined", () => {
	const ctx = chainBehindProxy(
		async () => ({ SWEEP_PROOF_POLLS: "3", SWEEP_PROOF_MS: "1000", METRICS: "true", METRICS_PORT: String(await freePort()) }),
		proxy => proxy.nullReceiptsOnce(true),
	);

	it("pays a withdrawal request exactly once when every receipt answers null once; the ledger equals the chain", async () => {
		const { anvil, proxy, node } = ctx;
		const { user, key } = await merchant(node);
		// Two deposits that can each pay the request: a sweep wrongly failed would be paid again from the other.
		const deposits = [await paid(node, anvil, key, "0.5"), await paid(node, anvil, key, "0.5")];
		await until("credited", async () => money(await ledgerBalance(node, user.sandbox.id)).eq(money("1")), 30_000);
		const payee = Wallet.createRandom().address;
		const asked = await node.http("POST", "/withdrawals/requests", { token: user.token, body: { amount: "0.3", tokenId: ETH, sourceNetworkId: NET, address: payee, strategy: 1 } });
		expect(asked.status).toBe(201);
		// Completed and its sweep closed (the request completes just before its sweep), or (the old fault) a second sweep for the same request.
		await until("request completed or paid twice", async () => {
			const r = (await node.http("GET", "/withdrawals/requests", { token: user.token })).body as Array<{ id: string; status: string }>;
			const sweeps = await node.app.models.Sweep.findAll({ where: { requestId: asked.body.id } });
			return (r.some(x => x.id === asked.body.id && x.status === "completed") && sweeps.every(s => s.status === "confirmed")) || sweeps.length > 1;
		}, 60_000);
		const done = (await node.app.models.WithdrawalRequest.findByPk(asked.body.id))!;
		const sweeps = await node.app.models.Sweep.findAll({ where: { requestId: asked.body.id } });
		expect(sweeps.map(s => ({ status: s.status, txHash: s.txHash, openRequestKey: s.openRequestKey }))).toEqual([{ status: "confirmed", txHash: done.txHash, openRequestKey: null }]);
		expect(done.status).toBe("completed");
		// The sweeper's first receipt lookup of its own transaction answered null.
		expect(proxy.nulledReceipts()).toContain(done.txHash!.toLowerCase());
		expect(await anvil.provider.getBalance(payee)).toBe(parseEther("0.3"));
		// credits 1.0 - withdrawal 0.3 - the send's gas = what the deposits hold.
		await until("ledger equals chain", async () => money(await ledgerBalance(node, user.sandbox.id)).eq(money(await onChain(anvil, deposits))), 10_000);
	}, 180_000);

	it("confirms a native sweep whose receipt answered null once: the deposit leaves the ledger, the merchant gets the value once", async () => {
		const { anvil, proxy, node } = ctx;
		const destination = Wallet.createRandom().address;
		const { user, key } = await merchant(node, destination);
		const deposit = await paid(node, anvil, key, "0.5");
		const ended = await until("native sweep ended", async () => node.app.models.Sweep.findOne({ where: { fromAddress: deposit, status: ["confirmed", "failed"] } }), 60_000);
		expect({ status: ended.status, reason: ended.reason }).toEqual({ status: "confirmed", reason: null });
		const sweep = ended;
		expect(proxy.nulledReceipts()).toContain(sweep.txHash!.toLowerCase());
		expect(await node.app.models.Sweep.count({ where: { fromAddress: deposit } })).toBe(1);
		const sent = await anvil.provider.getTransaction(sweep.txHash!);
		expect(await anvil.provider.getBalance(destination)).toBe(sent!.value);
		await until("ledger equals chain", async () => money(await ledgerBalance(node, user.sandbox.id)).eq(money(await onChain(anvil, [deposit]))), 10_000);
	}, 180_000);

	it("stalls a sweep whose nonce a transaction we do not know took: an alert, the funds stay locked until an operator releases them", async () => {
		const { anvil, proxy, node } = ctx;
		const destination = Wallet.createRandom().address;
		const { user, key } = await merchant(node, destination);
		// The sweep's transaction never reaches the node; the deposit's nonce is then used by another (free) transaction.
		proxy.dropSends(true);
		const deposit = await paid(node, anvil, key, "0.5");
		const sent = await until("sweep broadcast", async () => node.app.models.Sweep.findOne({ where: { fromAddress: deposit, status: "broadcast" } }), 30_000);
		await anvil.rpc("anvil_impersonateAccount", [deposit]);
		await anvil.rpc("anvil_setNextBlockBaseFeePerGas", ["0x0"]);
		await anvil.rpc("eth_sendTransaction", [{ from: deposit, to: deposit, value: "0x0", nonce: `0x${sent.nonce.toString(16)}`, gas: "0x5208", maxFeePerGas: "0x0", maxPriorityFeePerGas: "0x0" }]);
		await anvil.rpc("anvil_stopImpersonatingAccount", [deposit]);
		const stalled = await until("sweep stalled", async () => node.app.models.Sweep.findOne({ where: { id: sent.id, status: "stalled" } }), 30_000);
		expect(stalled.unseenPolls).toBeGreaterThanOrEqual(3);
		expect(stalled.reason).toMatch(/used by a transaction we do not know/);
		// Locked: the deposit's item stays open, nothing else is planned for it, the ledger still holds it (as the chain does).
		const items = await node.app.models.SweepItem.findAll({ where: { sweepId: sent.id } });
		expect(items.every(i => i.openKey !== null)).toBe(true);
		const status = (await node.broker.call("sweeper-evm.status")) as Array<{ alerts: Array<{ id: string }> }>;
		expect(status[0].alerts.map(a => a.id)).toContain(sent.id);
		expect((node.broker.metrics.getMetric("sweeps.outcomes")!.get({ network: "anvil-local", outcome: "stalled" }) as { value: number }).value).toBe(1);
		// Later steps look at it again (its nonce each time) and plan nothing new.
		const asked = proxy.calls("eth_getTransactionCount");
		await until("three more steps", async () => proxy.calls("eth_getTransactionCount") >= asked + 3, 30_000);
		expect(await node.app.models.Sweep.count({ where: { fromAddress: deposit } })).toBe(1);
		expect(money(await ledgerBalance(node, user.sandbox.id)).eq(money(await onChain(anvil, [deposit])))).toBe(true);

		// The operator checked the deposit still holds its funds and releases them: they are swept again, once.
		proxy.dropSends(false);
		const released = (await node.broker.call("sweeper-evm.support.resolveStalled", { sweepId: sent.id, resolution: "release" })) as { status: string };
		expect(released.status).toBe("failed");
		const again = await until("swept after the release", async () => node.app.models.Sweep.findOne({ where: { fromAddress: deposit, status: "confirmed" } }), 60_000);
		expect(again.nonce).toBe(sent.nonce + 1);
		await until("ledger equals chain", async () => money(await ledgerBalance(node, user.sandbox.id)).eq(money(await onChain(anvil, [deposit]))), 10_000);
	}, 180_000);
});

describe("EVM sweeper lease: fenced writes and a short RPC timeout", () => {
	const ctx = chainBehindProxy(async () => ({ SWEEP_RPC_TIMEOUT_MS: "3000" }));

	const leader = async () => ((await ctx.node.broker.call("sweeper-evm.status")) as Array<{ leader: boolean }>)[0]?.leader;

	/** A merchant's settled deposit while the sweeper's nonce lookups are held by the proxy (mid-step, between reading the chain and planning). */
	async function paidWhileNonceHeld() {
		const { anvil, proxy, node } = ctx;
		const destination = Wallet.createRandom().address;
		const { user, key } = await merchant(node, destination);
		await until("the sweeper leads", leader, 30_000);
		proxy.swallowAnswers("eth_getTransactionCount");
		return { user, destination, deposit: await paid(node, anvil, key, "0.5") };
	}

	/** The deposit swept exactly once to the destination, and the ledger equal to what it still holds. */
	async function sweptOnce(organizationId: string, deposit: string, destination: string) {
		const { anvil, node } = ctx;
		const sweep = await until("native sweep confirmed", async () => node.app.models.Sweep.findOne({ where: { fromAddress: deposit, status: "confirmed" } }), 60_000);
		expect(await node.app.models.Sweep.count({ where: { fromAddress: deposit } })).toBe(1);
		expect(await anvil.provider.getBalance(destination)).toBe((await anvil.provider.getTransaction(sweep.txHash!))!.value);
		await until("ledger equals chain", async () => money(await ledgerBalance(node, organizationId)).eq(money(await onChain(anvil, [deposit]))), 10_000);
	}

	it("a leader whose lease is taken over mid-step writes nothing; the funds are swept once", async () => {
		const { anvil, proxy, node } = ctx;
		const { user, deposit, destination } = await paidWhileNonceHeld();
		await until("a step waits on the node", async () => proxy.heldCount() > 0, 30_000);
		// Another node takes the lease over (this one's has run out).
		await node.app.models.ChainCursor.update({ leaseUntil: new Date(0) }, { where: { networkId: LEASE_ID } });
		const usurper = await acquireLease(node.app.models, LEASE_ID, "usurper:1:sweeper-evm", 600_000, Date.now());
		expect(usurper).not.toBeNull();
		proxy.swallowAnswers(null);
		proxy.releaseHeld();
		await until("the old leader knows it lost the lease", async () => (await leader()) === false, 30_000);
		expect(await node.app.models.Sweep.count({ where: { fromAddress: deposit } })).toBe(0);
		expect(await anvil.provider.getBalance(destination)).toBe(0n);

		// The other node goes away: this one leads again and sweeps the deposit once.
		await releaseLease(node.app.models, usurper!);
		await sweptOnce(user.sandbox.id, deposit, destination);
	}, 180_000);

	it("refuses every sweep write and ledger write under a lease that was taken over (same DB transaction)", async () => {
		const { node } = ctx;
		const held = await until("the sweeper leads", async () => {
			const row = await node.app.models.ChainCursor.findByPk(LEASE_ID);
			return row?.leaseOwner ? { networkId: LEASE_ID, owner: row.leaseOwner, token: row.leaseToken } : null;
		}, 30_000);
		const stale = { ...held, token: held.token - 1 };
		const { user } = await merchant(node);
		const item = { transactionId: uuidv5("t", CATALOGUE_NAMESPACE), organizationId: user.sandbox.id, mode: "sandbox", depositAddress: Wallet.createRandom().address, derivationIndex: 999_999, tokenId: ETH, amount: "0.1" };
		const input = { networkId: NET, kind: "native" as const, tokenId: ETH, fromAddress: item.depositAddress, toAddress: Wallet.createRandom().address, chainNonce: 0, items: [item] };
		const { sequelize, models } = node.app;
		await expect(planSweep(sequelize, models, stale, input, new Date())).rejects.toBeInstanceOf(LeaseLostError);
		expect(await models.Sweep.count({ where: { fromAddress: item.depositAddress } })).toBe(0);
		// A sweep planned by the leader of the moment; then the stale one tries to record and end it.
		await models.ChainCursor.update({ leaseOwner: "planner", leaseToken: held.token + 10 }, { where: { networkId: LEASE_ID } });
		const planner = { networkId: LEASE_ID, owner: "planner", token: held.token + 10 };
		const s = (await planSweep(sequelize, models, planner, input, new Date()))!;
		await expect(recordSigned(sequelize, models, stale, s, { raw: "0x01", hash: "0x" + "11".repeat(32) }, 0, new Date())).rejects.toBeInstanceOf(LeaseLostError);
		await expect(finishSweep(sequelize, models, stale, s, "confirmed", {}, new Date())).rejects.toBeInstanceOf(LeaseLostError);
		const fresh = (await models.Sweep.findByPk(s.id))!;
		expect({ status: fresh.status, hashes: fresh.hashes }).toEqual({ status: "planned", hashes: [] });
		const entry = { organizationId: user.sandbox.id, mode: "sandbox", networkId: NET, tokenId: ETH, kind: "fee", amount: "-0.001", refType: "sweep", refId: s.id };
		await expect(node.broker.call("withdrawals.record", { ...entry, fence: stale })).rejects.toThrow(/lost/);
		expect(await models.LedgerEntry.count({ where: { refId: s.id } })).toBe(0);
		await node.broker.call("withdrawals.record", { ...entry, fence: planner });
		expect(await models.LedgerEntry.count({ where: { refId: s.id } })).toBe(1);
		// Clean up: the sweep ends under the planner's lease, and the lease is free again for the node.
		expect(await finishSweep(sequelize, models, planner, s, "failed", { reason: "test" }, new Date())).toBe(true);
		await models.ChainCursor.update({ leaseOwner: null, leaseUntil: null }, { where: { networkId: LEASE_ID } });
	}, 180_000);

	it("a stalled RPC call ends within SWEEP_RPC_TIMEOUT_MS instead of holding the step; the sweep goes through once the node answers", async () => {
		const { proxy } = ctx;
		const { user, deposit, destination } = await paidWhileNonceHeld();
		// Each held call is given up after 3 s and the next step asks again: never stuck in one call.
		await until("a second step asked again", async () => proxy.heldCount() >= 2, 60_000);
		proxy.swallowAnswers(null);
		proxy.releaseHeld();
		await sweptOnce(user.sandbox.id, deposit, destination);
	}, 180_000);
});
