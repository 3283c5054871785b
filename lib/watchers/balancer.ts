/**
 * The fair share of one watcher or sweeper service's networks among its live replicas
 * (docs/deployment.md "Load sharing"; the rule: lib/watchers/share.ts). Shared by the watcher and
 * sweeper mixins: each gives its leases (one per network), and this
 * - knows the live replicas: the nodes the Moleculer registry lists as offering the service;
 * - tells each lease how long it must have been free before this replica takes it (takeDelayMs);
 * - every WATCHER_REBALANCE_MS, reads who holds the service's leases and, when another live
 *   replica leads at least two fewer, hands one network over (at its step boundary); the next
 *   hand-over waits until another replica holds that network.
 */
import type { ServiceBroker } from "moleculer";
import { Op } from "sequelize";
import type { Models } from "../../models";
import { METRIC, setGauge } from "../metrics";
import { fairShare, pickRelease, takeDelay } from "./share";

/**
 * Broadcast when a replica gives a lease up: `{ service, leaseId, stopping }` (`stopping`: a
 * graceful stop, not a hand-over). The standbys of that service read the lease again at once; a
 * stopping replica's lease is taken by whichever comes first, without the take delay.
 */
export const LEASE_RELEASED_EVENT = "watchers.lease.released";

export interface BalancedLease {
	/** The lease row's id (chain_cursors.networkId: the network id for watchers, the sweep lease id for sweepers). */
	leaseId: string;
	slug: string;
	/** This replica leads it now. */
	leading(): boolean;
	/** Leading and able to hand it over now (a watcher: its cursor has started). */
	releasable(): boolean;
	/** Hands it over at the next step boundary; true once released. */
	release(): Promise<boolean>;
	/** Watchers: blocks behind the head at the last step while leading (null: unknown). */
	lag?(): number | null;
}

export interface BalancerOptions {
	broker: ServiceBroker;
	serviceName: string;
	models: Models;
	/** How often the spread is checked; 0: never hand a network over (the leases are still taken by whoever is first). */
	rebalanceMs: number;
	/** How long a free lease waits for a replica below its share before one at or above it takes it. */
	deferMs: number;
	/** How long a released network is awaited by another replica before it may be handed over again. */
	handOverMs: number;
	logger: { info(...a: unknown[]): void; warn(...a: unknown[]): void };
	leases(): BalancedLease[];
}

export interface ShareView {
	/** The service and this replica's node (filled in by the mixin). */
	service?: string;
	nodeID?: string;
	/** Live replicas of the service (node ids), sorted. */
	replicas: string[];
	/** ceil(networks / replicas). */
	share: number;
	networks: number;
	/** Networks this replica leads. */
	led: number;
}

/** How often the replica's gauges are written. */
const METRICS_MS = 5_000;

export class LeaseBalancer {
	private timer: NodeJS.Timeout | null = null;
	private metricsTimer: NodeJS.Timeout | null = null;
	private running: Promise<void> | null = null;
	/** Networks this replica released and nobody else holds yet, with when. */
	private readonly pending = new Map<string, number>();
	/** Networks released lately (lease id -> when): this replica waits deferMs before taking one back. */
	private readonly released = new Map<string, number>();
	/** Leases a stopping replica gave up (lease id -> when): taken without the take delay for a while. */
	private readonly orphaned = new Map<string, number>();

	constructor(private readonly opts: BalancerOptions) {}

	/** The live replicas of the service, this node included (the registry, over the transporter). */
	replicas(): string[] {
		const { broker, serviceName } = this.opts;
		const nodes = new Set(
			broker.registry
				.getServiceList({ onlyAvailable: true, skipInternal: true })
				.filter(s => s.name === serviceName)
				.map(s => s.nodeID as string),
		);
		nodes.add(broker.nodeID);
		return [...nodes].sort();
	}

	view(): ShareView {
		const leases = this.opts.leases();
		const replicas = this.replicas();
		return { replicas, share: fairShare(leases.length, replicas.length), networks: leases.length, led: leases.filter(l => l.leading()).length };
	}

	/** How long `leaseId` must have been free before this replica takes it (acquireLease's freeForMs). */
	takeDelayMs(leaseId: string): number {
		if (this.opts.rebalanceMs === 0) return 0;
		const orphanedAt = this.orphaned.get(leaseId);
		if (orphanedAt !== undefined && Date.now() - orphanedAt < this.opts.handOverMs) return 0;
		const releasedAt = this.released.get(leaseId);
		if (releasedAt !== undefined && Date.now() - releasedAt < this.opts.handOverMs) return this.opts.deferMs;
		const { led, networks, replicas } = this.view();
		return takeDelay({ led, networks, replicas: replicas.length, deferMs: this.opts.deferMs });
	}

	/** Another replica released `leaseId`; `stopping`: it is going away, so its lease is taken at once by anyone. */
	heardRelease(leaseId: string, stopping: boolean): void {
		if (stopping) this.orphaned.set(leaseId, Date.now());
	}

	start(): void {
		if (!this.metricsTimer) this.metricsTimer = setInterval(() => this.publish(), METRICS_MS);
		if (this.opts.rebalanceMs === 0 || this.timer) return;
		this.timer = setInterval(() => void this.rebalance(), this.opts.rebalanceMs);
	}

	async stop(): Promise<void> {
		if (this.timer) clearInterval(this.timer);
		if (this.metricsTimer) clearInterval(this.metricsTimer);
		this.timer = null;
		this.metricsTimer = null;
		await this.running;
	}

	/** The replica's gauges: networks led, its share, the highest lag among those it leads (a no-op with metrics off). */
	publish(): void {
		const { broker, serviceName } = this.opts;
		if (!broker.isMetricsEnabled()) return;
		const view = this.view();
		const labels = { service: serviceName };
		setGauge(broker, METRIC.networksLed, view.led, labels);
		setGauge(broker, METRIC.networksShare, view.share, labels);
		const lags = this.opts.leases().filter(l => l.leading() && l.lag).map(l => l.lag!() ?? 0);
		setGauge(broker, METRIC.watcherLagMax, Math.max(0, ...lags), labels);
	}

	/** One check of the spread (one at a time); hands at most one network over. */
	rebalance(): Promise<void> {
		if (this.running) return this.running;
		this.running = this.check()
			.catch(err => this.opts.logger.warn(`Fair share of ${this.opts.serviceName}: ${(err as Error).message}`))
			.finally(() => {
				this.running = null;
			});
		return this.running;
	}

	private async check(): Promise<void> {
		const { models, broker, logger, serviceName, handOverMs } = this.opts;
		const leases = this.opts.leases();
		if (leases.length === 0) return;
		const replicas = this.replicas();
		const nowMs = Date.now();
		const rows = await models.ChainCursor.findAll({ where: { networkId: { [Op.in]: leases.map(l => l.leaseId) } }, attributes: ["networkId", "leaseOwner", "leaseUntil"] });
		// Owner ids start with the node id and a colon (watcherOwnerId; the sweeper's owner).
		const holderOf = (owner: string | null, until: Date | null) => (owner && until && until.getTime() >= nowMs ? (replicas.find(r => owner.startsWith(`${r}:`)) ?? null) : null);
		const holders = new Map<string, string | null>(leases.map(l => [l.leaseId, null]));
		for (const row of rows) holders.set(row.networkId, holderOf(row.leaseOwner, row.leaseUntil));
		const self = broker.nodeID;
		for (const [id, at] of this.pending) {
			const holder = holders.get(id);
			const slug = leases.find(l => l.leaseId === id)?.slug ?? id;
			if (holder && holder !== self) {
				logger.info(`Fair share of ${serviceName}: ${slug} handed over to ${holder} (${nowMs - at} ms after its release)`);
				this.pending.delete(id);
			} else if (holder === self || nowMs - at > handOverMs) {
				// Taken back (nobody below its share took it) or still free: no more hand-overs for a while.
				this.pending.delete(id);
			}
		}
		for (const [id, at] of this.released) if (nowMs - at >= handOverMs) this.released.delete(id);
		for (const [id, at] of this.orphaned) if (nowMs - at >= handOverMs) this.orphaned.delete(id);
		const byId = new Map(leases.map(l => [l.leaseId, l]));
		const pick = pickRelease({
			self,
			replicas,
			holders,
			pending: new Set(this.pending.keys()),
			releasable: leases.filter(l => holders.get(l.leaseId) === self && l.releasable() && !this.released.has(l.leaseId)).map(l => l.leaseId),
		});
		if (!pick) return;
		const lease = byId.get(pick)!;
		const share = fairShare(leases.length, replicas.length);
		logger.info(`Fair share of ${serviceName}: ${replicas.length} replica(s), ${leases.length} network(s), share ${share}; handing ${lease.slug} over`);
		this.pending.set(pick, Date.now());
		this.released.set(pick, Date.now());
		if (!(await lease.release())) {
			this.pending.delete(pick);
			return;
		}
		this.pending.set(pick, Date.now());
		this.released.set(pick, Date.now());
	}
}
