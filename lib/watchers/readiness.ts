/**
 * Whether a watcher node is ready (/readyz "watchers" check, docs/deployment.md "Health checks"):
 * for each network it leads, the lease is still known to be held and the cursor is at most
 * WATCHER_READY_MAX_LAG blocks behind the head. A standby for a network is ready: it writes
 * nothing and takes over when the leader's lease runs out.
 */
import type { WatcherStatus } from "./runner";

export interface NetworkReadiness {
	slug: string;
	leader: boolean;
	ok: boolean;
	/** Why not ready. */
	reason?: string;
}

export function networkReadiness(
	status: Pick<WatcherStatus, "slug" | "leader" | "lag" | "rpcDown">,
	leaseHeldUntil: number | null,
	nowMs: number,
	maxLag: number,
): NetworkReadiness {
	const { slug, leader, lag } = status;
	if (!leader) return { slug, leader, ok: true };
	const fail = (reason: string): NetworkReadiness => ({ slug, leader, ok: false, reason });
	if (leaseHeldUntil === null || leaseHeldUntil <= nowMs) return fail("lease not renewed in time");
	// A head not read since the RPC went away: the lag is unknown, and growing.
	if (status.rpcDown) return fail("RPC unreachable");
	if (lag === null) return fail("no block read yet");
	if (lag > maxLag) return fail(`${lag} blocks behind the head (over ${maxLag})`);
	return { slug, leader, ok: true };
}

/** What a watcher service reports for the node's /readyz (the watcher mixin's `watcherReadiness()`). */
export interface WatcherReadiness {
	chainType: string;
	networks: NetworkReadiness[];
	/** The networks to follow could not be read at the last refresh (the watcher may follow none). */
	error: string | null;
}

/** The watchers check of one node: every network it follows (services may run several). */
export function watchersCheck(services: readonly WatcherReadiness[]): { ok: boolean; error?: string } {
	const problems = services.flatMap(s => [...(s.error ? [s.error] : []), ...s.networks.filter(n => !n.ok).map(n => `${n.slug}: ${n.reason}`)]);
	return problems.length ? { ok: false, error: problems.join("; ") } : { ok: true };
}
