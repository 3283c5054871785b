/**
 * Fair share of a watcher's (or sweeper's) networks among the live replicas of its service
 * (docs/deployment.md "Load sharing"). Pure: the balancer (lib/watchers/balancer.ts) feeds it the
 * live replicas (the Moleculer registry) and who holds which lease (the lease rows).
 *
 * - Each replica leads at most its share, ceil(networks / replicas).
 * - A free lease is taken at once by a replica below its share; a replica at or above its share
 *   waits (WATCHER_TAKE_DEFER_MS) before taking one, so a free network goes to the replica that
 *   needs it, and is still never left unled.
 * - A replica hands one network over when another live replica leads at least two fewer (then
 *   every replica ends between floor and ceil of networks / replicas, and a move never makes
 *   another move necessary: no ping-pong). Never while a network it released has no new holder
 *   yet: that network still counts as its own.
 * - Which one: the network whose rendezvous hash (network x node id) ranks this replica lowest
 *   among the live replicas: the same choice every time, whatever the restart order.
 */
import crypto from "node:crypto";

/** At most this many networks a replica leads: ceil(networks / replicas); all of them when alone. */
export function fairShare(networks: number, replicas: number): number {
	if (networks <= 0) return 0;
	return Math.ceil(networks / Math.max(1, replicas));
}

/** The rendezvous (highest random weight) score of a node for a network: a stable pseudo-random 48-bit number. */
export function rendezvousScore(networkId: string, nodeId: string): number {
	return crypto.createHash("sha256").update(`${networkId}\u0000${nodeId}`).digest().readUIntBE(0, 6);
}

/** Who leads each network now: the node id of its holder (a live replica's), or null (free, expired, or held by a node no longer live). */
export type Holders = ReadonlyMap<string, string | null>;

/** Networks led per live replica (every live replica listed, 0 when it leads none). */
export function ledCounts(replicas: readonly string[], holders: Holders): Map<string, number> {
	const out = new Map(replicas.map(r => [r, 0]));
	for (const holder of holders.values()) if (holder !== null && out.has(holder)) out.set(holder, out.get(holder)! + 1);
	return out;
}

export interface ReleaseInput {
	self: string;
	/** Live replicas of the service, self included. */
	replicas: readonly string[];
	/** Every network of the service and who leads it now. */
	holders: Holders;
	/** Networks this replica released and nobody else holds yet: still counted as its own. */
	pending: ReadonlySet<string>;
	/** Networks this replica leads and may hand over now (leading, cursor started): a subset of those it holds. */
	releasable: readonly string[];
}

/**
 * The one network this replica should hand over now, or null. Only when no earlier hand-over is
 * pending and another live replica leads at least two fewer than this one.
 */
export function pickRelease(input: ReleaseInput): string | null {
	const { self, replicas, holders, pending, releasable } = input;
	if (pending.size > 0 || releasable.length === 0) return null;
	const live = replicas.includes(self) ? replicas : [...replicas, self];
	const counts = ledCounts(live, holders);
	const mine = (counts.get(self) ?? 0) + [...pending].filter(n => holders.get(n) !== self).length;
	const others = live.filter(r => r !== self);
	if (others.length === 0) return null;
	const fewest = Math.min(...others.map(r => counts.get(r) ?? 0));
	if (mine - fewest < 2) return null;
	const below = others.filter(r => (counts.get(r) ?? 0) <= mine - 2);
	// Where this replica is least preferred against a replica that needs a network: the same pick every time.
	const margin = (n: string) => rendezvousScore(n, self) - Math.max(...below.map(r => rendezvousScore(n, r)));
	return [...releasable].sort((a, b) => margin(a) - margin(b) || (a < b ? -1 : 1))[0];
}

/**
 * How long a network's lease must have been free before this replica takes it: 0 while it leads
 * fewer than its share (or is alone), else `deferMs`, so a replica below its share takes it first.
 */
export function takeDelay(p: { led: number; networks: number; replicas: number; deferMs: number }): number {
	return p.led < fairShare(p.networks, p.replicas) ? 0 : p.deferMs;
}
