/**
 * Whether a watcher node is ready (/readyz "watchers" check, docs/deployment.md "Health checks"):
 * for each network it leads, the lease is still known to be held and the cursor is at most
 * WATCHER_READY_MAX_LAG blocks behind the head. A standby for a network is ready: it writes
 * nothing and takes over when the leader's lease runs out.
 */
import type { WatcherStatus } from "./runner";
import type { ShareView } from "./balancer";

export interface NetworkReadiness {
	slug: string;
	leader: boolean;
	/** Blocks behind the head at the last read (null: none read yet). */
	lag: number | null;
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
	if (!leader) return { slug, leader, lag, ok: true };
	const fail = (reason: string): NetworkReadiness => ({ slug, leader, lag, ok: false, reason });
	if (leaseHeldUntil === null || leaseHeldUntil <= nowMs) return fail("lease not renewed in time");
	// A head not read since the RPC went away: the lag is unknown, and growing.
	if (status.rpcDown) return fail("RPC unreachable");
	if (lag === null) return fail("no block read yet");
	if (lag > maxLag) return fail(`${lag} blocks behind the head (over ${maxLag})`);
	return { slug, leader, lag, ok: true };
}

/** What a watcher service reports for the node's /readyz (the watcher mixin's `watcherReadiness()`). */
export interface WatcherReadiness {
	chainType: string;
	networks: NetworkReadiness[];
	/** The networks to follow could not be read at the last refresh (the watcher may follow none). */
	error: string | null;
	/** This replica's fair share of the service's networks (lib/watchers/balancer.ts). */
	share?: ShareView;
}

/** One network of a watcher or sweeper node as /readyz lists it: which it leads, which it stands by for. */
export interface LedNetwork {
	slug: string;
	chainType: string;
	role: "leader" | "standby";
	/** Watchers only: blocks behind the head at the last read (null: none read yet). */
	lag?: number | null;
}

/** What a sweeper service reports for the node's /readyz (the sweeper mixin's `sweeperReadiness()`). */
export interface SweeperReadiness {
	networks: LedNetwork[];
	/** Per sweeper service on the node: its fair share of the service's networks. */
	shares?: ShareView[];
}

/** The watchers check of one node: every network it follows (services may run several), listed for operators. */
export function watchersCheck(services: readonly WatcherReadiness[]): { ok: boolean; error?: string; networks: LedNetwork[] } {
	const problems = services.flatMap(s => [...(s.error ? [s.error] : []), ...s.networks.filter(n => !n.ok).map(n => `${n.slug}: ${n.reason}`)]);
	const networks = services
		.flatMap(s => s.networks.map((n): LedNetwork => ({ slug: n.slug, chainType: s.chainType, role: n.leader ? "leader" : "standby", lag: n.lag })))
		.sort((a, b) => a.slug.localeCompare(b.slug));
	return problems.length ? { ok: false, error: problems.join("; "), networks } : { ok: true, networks };
}
