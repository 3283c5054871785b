/**
 * The kill -9 scenarios every chain's watcher-process test runs (test/cluster/watcher-*-process.test.ts),
 * chain-independent: a chain test says how to start a watcher process, open a checkout, pay it
 * and make blocks; these run the scenario and check that every payment is credited exactly once.
 */
import { Op } from "sequelize";
import type { TestNode } from "./harness";
import { startClusterProcess, type NodeProcess } from "./node-process";
import { until } from "./until";
import { createMerchant, startPaymentsNode, type Merchant } from "../e2e/payments.helpers";

export interface WatcherProcessChain {
	node: TestNode;
	networkId: string;
	/** Starts a watcher process named `name` (its lease owner id starts with it). */
	watcher(name: string, extra?: Record<string, string>): NodeProcess;
	checkout(): Promise<{ txId: string; address: string }>;
	/** Pays the checkout's amount to `address` (not yet in a block). */
	pay(address: string): Promise<unknown>;
	/** Puts what was paid into blocks the watcher reads (and credits). */
	produce(): Promise<unknown>;
}

/** What watcherProcessTest sets up, once its beforeAll has run. */
export interface WatcherProcessTest<C> {
	readonly chainNode: C;
	readonly node: TestNode;
	readonly merchant: Merchant;
	/** Starts a watcher process `name` on the node's database (it runs networks, transactions and the watcher service). */
	watcher(name: string, extra?: Record<string, string>): NodeProcess;
	/** Kills -9 every watcher process started so far. */
	killAll(): Promise<void>;
}

/**
 * The set-up a chain's watcher-process test shares (call it inside its describe): the chain's test
 * node (`startChain`), then a payments node in this process (with `nodeEnv`) and a merchant;
 * watcher processes of `service` on that node's database, polling every 100 ms with a 2 s lease,
 * `env` on top and a test's own settings on top of that; after the tests, every process killed and
 * both nodes stopped.
 */
export function watcherProcessTest<C extends { stop(): Promise<unknown> }>(opts: {
	service: string;
	startChain: () => Promise<C>;
	env: (chainNode: C, node: TestNode) => Record<string, string>;
	nodeEnv?: () => Promise<Record<string, string>>;
	/** The set-up's jest timeout (default 120 s). */
	setupMs?: number;
}): WatcherProcessTest<C> {
	let chainNode: C;
	let node: TestNode;
	let merchant: Merchant;
	const procs: NodeProcess[] = [];

	beforeAll(async () => {
		chainNode = await opts.startChain();
		node = await startPaymentsNode({ env: await opts.nodeEnv?.() });
		merchant = await createMerchant(node);
	}, opts.setupMs ?? 120_000);

	afterAll(async () => {
		await Promise.all(procs.map(p => p.kill()));
		await node?.stop();
		await chainNode?.stop();
	});

	return {
		get chainNode() {
			return chainNode;
		},
		get node() {
			return node;
		},
		get merchant() {
			return merchant;
		},
		watcher(name, extra = {}) {
			const p = startClusterProcess(node, name, ["networks", "transactions", opts.service], { WATCHER_POLL_MS: "100", WATCHER_LEASE_MS: "2000", ...opts.env(chainNode, node), ...extra });
			procs.push(p);
			return p;
		},
		killAll: async () => {
			await Promise.all(procs.map(p => p.kill()));
		},
	};
}

const cursorOf = (c: WatcherProcessChain) => c.node.app.models.ChainCursor.findByPk(c.networkId);
const creditsOf = (c: WatcherProcessChain, txIds: string[]) => c.node.app.models.TransactionCredit.findAll({ where: { transactionId: { [Op.in]: txIds } } });

/** Every checkout credited exactly once with `amount` (each chain event once), and (with `stored`) no chain transfer stored twice. */
export async function expectCreditedOnce(c: WatcherProcessChain, targets: ReadonlyArray<{ txId: string }>, amount: string, stored = false): Promise<void> {
	// A moment for anything that would be credited twice.
	await new Promise(r => setTimeout(r, 1000));
	const rows = await creditsOf(c, targets.map(t => t.txId));
	expect(rows).toHaveLength(targets.length);
	expect(new Set(rows.map(r => r.transactionId)).size).toBe(targets.length);
	expect(rows.every(r => r.amount === amount)).toBe(true);
	// No chain event (transaction hash and log / event index) credited twice.
	expect(new Set(rows.map(r => `${r.txHash}:${r.logIndex}`)).size).toBe(rows.length);
	if (!stored) return;
	const seen = await c.node.app.models.ChainTransfer.findAll({ where: { networkId: c.networkId } });
	expect(seen.filter(s => s.status === "active")).toHaveLength(targets.length);
	expect(new Set(seen.map(s => `${s.txHash}:${s.logIndex}:${s.blockHash}`)).size).toBe(seen.length);
}

/** Waits until all `targets` are credited (by `proc`, whose output is shown on a timeout). */
export async function creditedAll(c: WatcherProcessChain, targets: ReadonlyArray<{ txId: string }>, proc: NodeProcess | (() => string), timeoutMs = 90_000): Promise<void> {
	const output = typeof proc === "function" ? proc : proc.output;
	await until("all credited", async () => (await creditsOf(c, targets.map(t => t.txId))).length === targets.length, timeoutMs, output);
}

/**
 * Two watcher processes `<prefix>-x` and `<prefix>-y`: one leads; two payments credited; the leader
 * killed -9; the other takes the lease and credits two more; each of the four credited once.
 */
export async function leaderFailover(c: WatcherProcessChain, prefix: string, amount: string): Promise<void> {
	const a = c.watcher(`${prefix}-x`);
	const b = c.watcher(`${prefix}-y`);
	const led = await until(
		"a leader",
		async () => {
			const row = await cursorOf(c);
			return row?.leaseOwner && (row.leaseOwner.startsWith(`${prefix}-x`) || row.leaseOwner.startsWith(`${prefix}-y`)) ? row.leaseOwner : null;
		},
		120_000,
		() => a.output() + b.output(),
	);
	const batch1 = [await c.checkout(), await c.checkout()];
	for (const t of batch1) await c.pay(t.address);
	await c.produce();
	await creditedAll(c, batch1, () => a.output() + b.output(), 60_000);

	const [leader, standby] = led.startsWith(`${prefix}-x`) ? [a, b] : [b, a];
	await leader.kill();
	const next = await until(
		"failover",
		async () => {
			const row = await cursorOf(c);
			return row?.leaseOwner && !row.leaseOwner.startsWith(led.split(":")[0]) ? row.leaseOwner : null;
		},
		30_000,
		standby.output,
	);
	expect(next).not.toBe(led);

	const batch2 = [await c.checkout(), await c.checkout()];
	for (const t of batch2) await c.pay(t.address);
	await c.produce();
	const all = [...batch1, ...batch2];
	await creditedAll(c, all, standby, 60_000);
	await expectCreditedOnce(c, all, amount);
}

/** A checkout of `amount` opened by a merchant's API key: its transaction id and deposit address. */
export async function openProcessCheckout(node: TestNode, key: { key: string; secret: string }, intent: { amount: string; currency: string; tokenId: string; networkId: string }): Promise<{ txId: string; address: string }> {
	const created = await node.http("POST", "/payment_intents", { key, body: { ...intent, payment_method_types: ["crypto"], return_url: "https://shop.example.com/r" } });
	expect(created.status).toBe(200);
	const slug = created.body.paymentLink.link.split("/pay/")[1];
	const tx = await node.http("POST", `/payments/links/${slug}/transactions`, { body: {} });
	expect(tx.status).toBe(201);
	return { txId: tx.body.id, address: tx.body.depositAddress };
}

/**
 * Starts watcher `name` on a backlog ending at block `head` and kills it -9 once its cursor is
 * inside `window` (default (head - 45, head - 8), both ends excluded): in the middle of the
 * catch-up. Returns the cursor it was killed at.
 */
export async function killMidCatchUp(c: WatcherProcessChain, name: string, head: number, extra: Record<string, string>, window = { above: head - 45, below: head - 8 }): Promise<number> {
	const proc = c.watcher(name, extra);
	const mid = await until(
		"part of the catch-up",
		async () => {
			const row = await cursorOf(c);
			return row && row.leaseOwner?.startsWith(name) && row.blockNumber! > window.above && row.blockNumber! < window.below ? row.blockNumber : null;
		},
		120_000,
		proc.output,
	);
	await proc.kill();
	return mid!;
}
