/**
 * What the fair-share process tests share (test/cluster/watcher-fair-share.test.ts and
 * sweeper-fair-share.test.ts; issue 23): four EVM networks with an anvil each, a sampler of their
 * lease rows (who leads what, how long a network was unled, the order its leaders came in), the
 * "evened out" condition, a payer that opens and pays checkouts round the networks, and the
 * scenario's steps (one replica, scale-up to three, kill -9, graceful stop).
 */
import { parseEther } from "ethers";
import { Op } from "sequelize";
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { systemClock } from "../../lib/clock";
import { startAnvil, Anvil } from "./anvil";
import { REDIS_URL, type TestNode } from "./harness";
import { startClusterProcess, type NodeProcess } from "./node-process";
import { until } from "./until";
import { createMerchant, openCheckout, PAYMENTS_SERVICES, startPaymentsNode, type Merchant } from "../e2e/payments.helpers";
import { uniqueId } from "../cluster/cluster.helpers";

/** The four Sepolia test networks (their chain ids), each on its own anvil. */
export const FAIR_SHARE_NETWORKS = [
	{ slug: "ethereum-sepolia", chainId: 11155111 },
	{ slug: "base-sepolia", chainId: 84532 },
	{ slug: "arbitrum-sepolia", chainId: 421614 },
	{ slug: "optimism-sepolia", chainId: 11155420 },
].map(n => ({ ...n, id: networkIdFor(n.slug), eth: tokenIdFor(n.slug, "ETH"), env: `RPC_URL_${n.slug.toUpperCase().replace(/-/g, "_")}` }));

export type FairShareNetwork = (typeof FAIR_SHARE_NETWORKS)[number];

/** One anvil per network (a block a second). */
export async function startFairShareAnvils(): Promise<Anvil[]> {
	const anvils: Anvil[] = [];
	for (const n of FAIR_SHARE_NETWORKS) anvils.push(await startAnvil({ chainId: n.chainId, blockTime: 1 }));
	return anvils;
}

/**
 * The gateway's side of a sweeper test over NATS (namespace `namespace`), in this process: API, pay
 * pages, the watcher (straight to `anvils`, one for each of `networks`) and the withdrawals ledger;
 * a merchant whose EVM withdrawal address is `destination`.
 */
export async function startSweepGateway(namespace: string, networks: readonly FairShareNetwork[], anvils: readonly Anvil[], destination: string): Promise<{ node: TestNode; merchant: Merchant }> {
	const node = await startPaymentsNode({
		services: [...PAYMENTS_SERVICES, "watcher-evm", "withdrawals"],
		env: { TRANSPORTER: process.env.TEST_NATS_URL || "nats://127.0.0.1:4222", NAMESPACE: namespace, WATCHER_POLL_MS: "200", WATCHER_RECONCILE_MS: "0", ...Object.fromEntries(networks.map((n, i) => [n.env, anvils[i].url])) },
		clock: systemClock,
		nodeID: uniqueId("gateway"),
	});
	const merchant = await createMerchant(node);
	expect((await node.http("PUT", "/withdrawals/settings", { token: merchant.token, body: { addresses: { evm: destination } } })).status).toBe(200);
	return { node, merchant };
}

/**
 * A replica process of `service` named `id` in `node`'s cluster (its database, NATS namespace and
 * Redis), with the fair-share settings the tests use (shared by watchers and sweepers) and `env`.
 */
export function startReplica(node: TestNode, id: string, service: string, env: Record<string, string>): NodeProcess {
	return startClusterProcess(node, id, [service], {
		TRANSPORTER: process.env.TEST_NATS_URL || "nats://127.0.0.1:4222",
		NAMESPACE: node.broker.namespace,
		REDIS_URL,
		REDIS_PREFIX: node.config.redisPrefix,
		METRICS: "off",
		LOG_LEVEL: "info",
		WATCHER_REBALANCE_MS: "1000",
		WATCHER_TAKE_DEFER_MS: "2000",
		...env,
	});
}

/**
 * The lease rows, sampled every 50 ms: who leads each lease (the node id, the owner id's first
 * part), the periods a lease had no live holder, and per lease the order its holders came in.
 */
export class LeaseWatch {
	private timer: NodeJS.Timeout | null = null;
	private unledSince = new Map<string, number>();
	readonly gaps: Array<{ network: string; ms: number; phase: string }> = [];
	holders = new Map<string, string | null>();
	/** Per lease id, its successive holders (a holder listed again after another one led between). */
	readonly history = new Map<string, string[]>();
	phase = "start";

	/** `leases`: the lease row ids (a watcher's: the network id; a sweeper's: its sweep lease id) and their networks' slugs. */
	constructor(
		private readonly node: TestNode,
		private readonly leases: ReadonlyArray<{ leaseId: string; slug: string }>,
	) {}

	start(): void {
		let busy = false;
		this.timer = setInterval(async () => {
			if (busy) return;
			busy = true;
			try {
				const rows = await this.node.app.models.ChainCursor.findAll({ where: { networkId: { [Op.in]: this.leases.map(l => l.leaseId) } } });
				const now = Date.now();
				for (const r of rows) {
					const led = r.leaseOwner !== null && r.leaseUntil !== null && r.leaseUntil.getTime() >= now;
					const holder = led ? r.leaseOwner!.split(":")[0] : null;
					this.holders.set(r.networkId, holder);
					const seen = this.history.get(r.networkId) ?? [];
					if (holder && seen[seen.length - 1] !== holder) this.history.set(r.networkId, [...seen, holder]);
					const since = this.unledSince.get(r.networkId);
					if (!led && since === undefined) this.unledSince.set(r.networkId, now);
					if (led && since !== undefined) {
						this.unledSince.delete(r.networkId);
						this.gaps.push({ network: this.leases.find(l => l.leaseId === r.networkId)!.slug, ms: now - since, phase: this.phase });
					}
				}
			} catch {
				// the next sample
			} finally {
				busy = false;
			}
		}, 50);
	}

	stop(): void {
		if (this.timer) clearInterval(this.timer);
	}

	/** Leases led per node id (live leases). */
	counts(): Map<string, number> {
		const out = new Map<string, number>();
		for (const h of this.holders.values()) if (h) out.set(h, (out.get(h) ?? 0) + 1);
		return out;
	}

	allLed(): boolean {
		return this.holders.size === this.leases.length && [...this.holders.values()].every(h => h !== null);
	}

	/** Every lease led, each of `ids` leading between floor and ceil of its share, and nobody else leading. */
	evenedOut(ids: string[]): boolean {
		const counts = this.counts();
		const lo = Math.floor(this.leases.length / ids.length);
		const hi = Math.ceil(this.leases.length / ids.length);
		return this.allLed() && ids.every(id => (counts.get(id) ?? 0) >= lo && (counts.get(id) ?? 0) <= hi) && [...counts.keys()].every(k => ids.includes(k));
	}

	/** The unled periods of `phase` and the longest of them. */
	phaseGaps(phase: string): { gaps: Array<{ network: string; ms: number }>; worst: number; text: string } {
		const gaps = this.gaps.filter(g => g.phase === phase);
		return { gaps, worst: Math.max(0, ...gaps.map(g => g.ms)), text: gaps.map(g => `${g.network} ${g.ms} ms`).join(", ") };
	}
}

/**
 * Opens a checkout of 0.01 ETH on each network in turn and pays it (from anvil account 1), one
 * every 250 ms, until stopped. A checkout refused (a network unwatched, say) is recorded as
 * "failed: …", for the test to fail on.
 */
export class Payer {
	readonly payments: Array<{ txId: string; network: string; address: string }> = [];
	private paying = false;
	private loop: Promise<void> | null = null;

	constructor(
		private readonly node: TestNode,
		private readonly merchant: Merchant,
		private readonly anvils: Anvil[],
	) {}

	start(): void {
		this.paying = true;
		this.loop = (async () => {
			for (let i = 0; this.paying; i++) {
				const k = i % FAIR_SHARE_NETWORKS.length;
				const n = FAIR_SHARE_NETWORKS[k];
				try {
					const c = await openCheckout(this.node, this.merchant.sandboxKey, { amount: "0.01", currency: "eth", tokenId: n.eth, networkId: n.id });
					await this.anvils[k].accounts[1].sendTransaction({ to: c.address, value: parseEther("0.01") });
					this.payments.push({ txId: c.txId, network: n.slug, address: c.address });
				} catch (err) {
					this.payments.push({ txId: `failed: ${(err as Error).message}`, network: n.slug, address: "" });
				}
				await new Promise(r => setTimeout(r, 250));
			}
		})();
	}

	async stop(): Promise<void> {
		this.paying = false;
		await this.loop;
	}

	/** The payments made so far; none refused. */
	made(): Array<{ txId: string; network: string; address: string }> {
		const made = [...this.payments];
		expect(made.filter(p => p.txId.startsWith("failed")).map(p => p.txId)).toEqual([]);
		return made;
	}
}

/** A replica process of a fair-share test: its node id (its leases' owner ids start with it). */
export interface Replica {
	id: string;
	proc: NodeProcess;
}

/**
 * One run of the fair-share scenario: the lease sampler and the payer, how a test starts a replica
 * (`start`) and calls it in its waits' names (`noun`), the replicas started, and how long each
 * step took to even out (printed, never asserted).
 */
export interface FairShareRun {
	watch: LeaseWatch;
	payer: Payer;
	noun: string;
	start(name: string): Replica | Promise<Replica>;
	output(): string;
	replicas: Replica[];
	took: { evenUp: number; evenKill: number; evenStop: number };
}

export function fairShareRun(r: Pick<FairShareRun, "watch" | "payer" | "noun" | "start" | "output">): FairShareRun {
	return { ...r, replicas: [], took: { evenUp: 0, evenKill: 0, evenStop: 0 } };
}

const withCounts = (run: FairShareRun) => () => `${JSON.stringify([...run.watch.counts()])}\n${run.output()}`;

/** Step 1: one replica `name`, leading all four leases; then the payer starts, until a few payments. */
export async function oneLeadsAll(run: FairShareRun, name: string): Promise<void> {
	const first = await run.start(name);
	run.replicas.push(first);
	await until(`one ${run.noun} leading all four networks`, () => run.watch.allLed() && run.watch.counts().get(first.id) === FAIR_SHARE_NETWORKS.length, 120_000, run.output);
	run.payer.start();
	await until("a few payments", () => run.payer.payments.length >= 8, 240_000, run.output);
}

/** Step 2: two more replicas; each of the three ends leading between floor and ceil of 4/3 (1 or 2), and still so a few rebalance rounds later. */
export async function scaleUpToThree(run: FairShareRun, names: [string, string]): Promise<void> {
	run.watch.phase = "scale-up";
	const scaledAt = Date.now();
	for (const name of names) run.replicas.push(await run.start(name));
	const three = run.replicas.map(r => r.id);
	await until(`three ${run.noun}s between floor and ceil of 4/3`, () => run.watch.evenedOut(three), 180_000, withCounts(run));
	run.took.evenUp = Date.now() - scaledAt;
	// Stable: still so a few rebalance rounds later.
	await new Promise(r => setTimeout(r, 4000));
	expect(run.watch.evenedOut(three)).toBe(true);
}

/** Step 3: kill -9 the replica leading the most: its leases run out, and the two left take them and even out. */
export async function killBusiest(run: FairShareRun): Promise<void> {
	run.watch.phase = "kill";
	const counts = run.watch.counts();
	const victim = [...run.replicas].sort((a, b) => (counts.get(b.id) ?? 0) - (counts.get(a.id) ?? 0))[0];
	const killedAt = Date.now();
	await victim.proc.kill();
	run.replicas = run.replicas.filter(r => r !== victim);
	await until(`two ${run.noun}s leading two networks each`, () => run.watch.evenedOut(run.replicas.map(r => r.id)), 240_000, withCounts(run));
	run.took.evenKill = Date.now() - killedAt;
}

/** Step 4: SIGTERM one of the two: the last takes its networks at once (released leases); then the payer stops. */
export async function stopOneGracefully(run: FairShareRun): Promise<void> {
	run.watch.phase = "graceful";
	const [stopping, last] = run.replicas;
	const stoppedAt = Date.now();
	await stopping.proc.stop();
	run.replicas = [last];
	await until(`the last ${run.noun} leading all four`, () => run.watch.evenedOut([last.id]), 120_000, run.output);
	run.took.evenStop = Date.now() - stoppedAt;
	await run.payer.stop();
}
