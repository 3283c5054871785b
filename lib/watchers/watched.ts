/**
 * Which networks a chain watcher follows, as every node of a cluster sees it (docs/watchers.md
 * "Watched networks"). Gateway and core nodes do not have the watchers' RPC_URL_<SLUG> settings,
 * so the answer is the one thing every node shares: the lease in `chain_cursors`. The watcher
 * leading a network renews it every third of WATCHER_LEASE_MS (lib/watchers/store.ts), so while
 * a watcher runs for a network, its `leaseUntil` is always ahead of the clock.
 *
 * A network is watched while its lease is held, and for WATCHED_GRACE_MS after it ran out or was
 * given up: a restart, a rolling update or a failover to a standby leaves a gap of a few seconds,
 * and the next holder reads on from the cursor, so an address handed out meanwhile is still seen.
 * Longer than that, nobody follows the network: a live payer must not be sent there. A network
 * never followed has no lease at all (no `chain_cursors` row, or a lease never taken).
 *
 * A lease alone is not enough: the network's cursor must have started (a block number stored by
 * its first leader's first step, lib/watchers/runner.ts). Until then no block of the network is
 * known to be read, and a leader that died before storing one would leave its successor starting
 * at its own, later head: a checkout opened in between (or in the grace period after that death)
 * could be paid in a block nobody reads. Once the cursor has started, every later leader reads on
 * from it.
 *
 * Read-only use of the watchers' table by the networks service, declared here (like
 * lib/payments/store.ts declares the payments tables' sharing).
 */
import { Op } from "sequelize";
import type { Models } from "../../models";

/** How long after its lease was last held a network still counts as watched. */
export const WATCHED_GRACE_MS = 60_000;

/**
 * Broadcast by a watcher that took a network's lease (payload: `{ networkId, chainType }`): every
 * node forgets its cached answer at once, so a network is offered as soon as a watcher leads it
 * (a node's start-up, a watcher added) instead of after the cache's lifetime. The database stays
 * the truth: the event only says "read it again".
 */
export const WATCHER_LEADS_EVENT = "watchers.lease.taken";

/** Whether a lease held until `leaseUntil` still makes its network watched at `nowMs`. Pure. */
export function leaseWatches(leaseUntil: Date | string | null, nowMs: number, graceMs = WATCHED_GRACE_MS): boolean {
	if (!leaseUntil) return false;
	const until = leaseUntil instanceof Date ? leaseUntil.getTime() : Date.parse(leaseUntil);
	return Number.isFinite(until) && until + graceMs >= nowMs;
}

/** Ids of the networks a watcher follows now (wall clock: leases are about process liveness). One small indexed read. */
export async function watchedNetworkIds(models: Models, nowMs: number, graceMs = WATCHED_GRACE_MS): Promise<Set<string>> {
	// Sweepers keep their leases in the same table, on rows of their own (chainType "sweep"): not a watcher.
	// A cursor never started (blockNumber null) does not count: see above.
	const rows = await models.ChainCursor.findAll({ where: { chainType: { [Op.ne]: "sweep" }, blockNumber: { [Op.ne]: null }, leaseUntil: { [Op.gte]: new Date(nowMs - graceMs) } }, attributes: ["networkId", "leaseUntil"] });
	return new Set(rows.filter(r => leaseWatches(r.leaseUntil, nowMs, graceMs)).map(r => r.networkId));
}

/**
 * A node's cached view of watchedNetworkIds, for the payments hot path (every checkout asks):
 * - a network found watched is trusted for `ttlMs` (5 s): a watcher that goes away is noticed
 *   within the grace period plus that;
 * - a network not found is read again, at most once per `missMs` (1 s), so a watcher that just
 *   took its lease is seen at once even without its broadcast, and refusals cannot flood the
 *   database;
 * - `invalidate()` (the WATCHER_LEADS_EVENT) drops the cached answer.
 * Concurrent misses share one read.
 */
export class WatchedCache {
	private ids: Set<string> | null = null;
	private readAt = 0;
	private loading: Promise<Set<string>> | null = null;
	private generation = 0;

	constructor(
		private readonly load: (nowMs: number) => Promise<Set<string>>,
		private readonly opts: { ttlMs: number; missMs: number; now?: () => number } = { ttlMs: 5_000, missMs: 1_000 },
	) {}

	async isWatched(networkId: string): Promise<boolean> {
		const now = (this.opts.now ?? Date.now)();
		const age = now - this.readAt;
		if (this.ids && age < this.opts.ttlMs && (this.ids.has(networkId) || age < this.opts.missMs)) return this.ids.has(networkId);
		return (await this.read(now)).has(networkId);
	}

	/** Every watched network id (read again when the cached answer is older than the miss interval). */
	async all(): Promise<Set<string>> {
		const now = (this.opts.now ?? Date.now)();
		if (this.ids && now - this.readAt < this.opts.missMs) return this.ids;
		return this.read(now);
	}

	invalidate(): void {
		this.generation++;
		this.ids = null;
		this.readAt = 0;
		// A read in flight may predate the lease that caused this: the next caller reads again.
		this.loading = null;
	}

	private read(now: number): Promise<Set<string>> {
		if (this.loading) return this.loading;
		const generation = this.generation;
		const loading = this.load(now).then(ids => {
			if (generation === this.generation) {
				this.ids = ids;
				this.readAt = now;
			}
			return ids;
		});
		this.loading = loading;
		const done = () => {
			if (this.loading === loading) this.loading = null;
		};
		loading.then(done, done);
		return loading;
	}
}
