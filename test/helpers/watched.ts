/**
 * Live payments are accepted only on networks a chain watcher follows (lib/watchers/watched.ts,
 * docs/watchers.md "Watched networks"). Tests of live payments that need no chain (intents,
 * links, webhooks, dashboards ...) make a network watched with `watchNetwork`: it does what a
 * starting watcher does (lib/watchers/runner.ts `tryLead`, mixins/watcher.mixin.ts `onLead`):
 * the network's `chain_cursors` row (ensureCursor), the lease taken by an owner of its own
 * (acquireLease, wall clock), a started cursor (its first step's), and the WATCHER_LEADS_EVENT
 * broadcast. Instead of renewing every
 * third of WATCHER_LEASE_MS it takes one long lease (an hour by default), so the network stays
 * watched for the test; nothing reads the chain, so no payment is ever detected on it. Tests of
 * detection run a real watcher on anvil / litecoind instead (test/services/watcher-*.test.ts).
 */
import crypto from "node:crypto";
import type { ServiceBroker } from "moleculer";
import { appOf } from "../../lib/app";
import { networkIdFor, catalogueNetwork } from "../../lib/networks/catalogue";
import { acquireLease, ensureCursor, Lease, releaseLease } from "../../lib/watchers/store";
import { WATCHER_LEADS_EVENT } from "../../lib/watchers/watched";

export interface WatchedLease {
	lease: Lease;
	/** Gives the lease up as a stopping watcher does (the network stays watched for WATCHED_GRACE_MS). */
	release(): Promise<void>;
}

/** Makes each network (catalogue slug) watched, as a running watcher's lease does. */
export async function watchNetworks(target: { broker: ServiceBroker }, slugs: string[], leaseMs = 3_600_000): Promise<WatchedLease[]> {
	const { models, clock } = appOf(target.broker);
	const owner = `test-watcher-${crypto.randomBytes(4).toString("hex")}`;
	const out: WatchedLease[] = [];
	for (const slug of slugs) {
		const network = catalogueNetwork(slug);
		if (!network) throw new Error(`watchNetworks: no catalogue network ${slug}`);
		const networkId = networkIdFor(slug);
		await ensureCursor(models, networkId, network.chainType, clock.now());
		const lease = await acquireLease(models, networkId, owner, leaseMs, Date.now());
		if (!lease) throw new Error(`watchNetworks: the lease on ${slug} is held by another watcher`);
		// A watcher's first step starts the cursor; only then is the network watched. Nothing reads
		// these networks' chains in such tests, so a started cursor with no real block will do.
		await models.ChainCursor.update({ blockNumber: 0, blockHash: "test:no-chain-read", recentBlocks: [] }, { where: { networkId, blockNumber: null } });
		await target.broker.broadcast(WATCHER_LEADS_EVENT, { networkId, chainType: network.chainType });
		out.push({ lease, release: () => releaseLease(models, lease, Date.now()) });
	}
	return out;
}

/** The main networks the payments tests pay on (live organizations use main networks only). */
export const LIVE_TEST_NETWORKS = ["ethereum", "base", "polygon", "bitcoin"];
