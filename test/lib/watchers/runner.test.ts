/**
 * NetworkWatcher against a scripted chain source and a real database (a node's): where the
 * cursor of a network never read before starts; a fair-share hand-over between two watchers; a
 * leader starved past its lease's expiry keeps the lease nobody took.
 */
import { networkIdFor } from "../../../lib/networks/catalogue";
import type { BlockRef, ChainSource } from "../../../lib/chains/source";
import type { NetworkWatcher, PaymentsPort } from "../../../lib/watchers/runner";
import { acquireLease, ensureCursor, releaseLease, renewLease } from "../../../lib/watchers/store";
import type { TestNode } from "../../helpers/harness";
import { loggerInto, nodeForTests, testWatcher } from "../../helpers/network-watcher";
import { until } from "../../helpers/until";

const NET = networkIdFor("anvil-local");
const OTHER = networkIdFor("base-sepolia");
const STARVED = networkIdFor("ethereum-sepolia");
/** anvil-local watched for no token: the tests here are about the cursor and the lease. */
const ANVIL = { id: NET, slug: "anvil-local", chainType: "evm", requiredConfirmations: 1, tokens: [] };

/** A chain at `before` until `advanced()` says otherwise, then at `after` (blocks mined meanwhile). */
function scriptedSource(before: number, after: number, advanced: () => Promise<boolean>): ChainSource {
	const ref = (n: number): BlockRef => ({ number: n, hash: `0x${n.toString(16).padStart(64, "0")}`, parentHash: `0x${Math.max(0, n - 1).toString(16).padStart(64, "0")}`, timestamp: n });
	return {
		async head() {
			return ref((await advanced()) ? after : before);
		},
		async block(n: number) {
			return n <= after ? ref(n) : null;
		},
		async blocks(from: number, to: number) {
			const out: BlockRef[] = [];
			for (let n = from; n <= to; n++) out.push(ref(n));
			return out;
		},
		async transfers() {
			return [];
		},
		async close() {},
	};
}

const payments: PaymentsPort = {
	depositAddresses: async () => [],
	openAddresses: async () => [],
	detectBatch: async ({ items }) => items.map(() => ({ outcome: "unknownAddress" })),
	creditBatch: async ({ items }) => items.map(() => ({ credited: false, duplicate: false, reason: "unknownAddress" })),
	revert: async () => ({ outcome: "unknown" }),
};

// One node (its database) for all the groups.
let node: TestNode;
nodeForTests(n => (node = n));

describe("a network watcher on a network never read", () => {
	it("starts its cursor at a head read before it took the lease (which opens the network to live checkouts), not after", async () => {
		// Block 10 is the head until the lease is taken; then blocks 11..20 are mined at once. A
		// checkout made once the lease is held can be paid in block 11: the cursor must not start above it.
		const source = scriptedSource(10, 20, async () => Boolean((await node.app.models.ChainCursor.findByPk(NET))?.leaseOwner));
		const logs: string[] = [];
		const runner = testWatcher(node, { source, network: ANVIL, payments, logger: loggerInto(logs) });
		runner.start();
		try {
			await until("cursor at the head", async () => (await node.app.models.ChainCursor.findByPk(NET))?.blockNumber === 20);
		} finally {
			await runner.stop();
		}
		expect(logs).toContain("Watcher: network anvil-local starts after block 9");
	});
});

/**
 * A hand-over of the fair share (docs/deployment.md "Load sharing") between two watchers of one
 * network: the leader gives the lease up at a step boundary, takeable at once by a replica below
 * its share, while one at or above its share waits for the take delay (acquireLease's freeForMs).
 */
describe("a fair-share hand-over between two watchers of one network", () => {
	function watcher(owner: string, delay: { ms: number }, released: string[]): NetworkWatcher {
		return testWatcher(node, {
			source: scriptedSource(10, 10, async () => false),
			network: ANVIL,
			payments,
			config: { leaseMs: 60_000 },
			owner,
			takeDelayMs: () => delay.ms,
			onRelease: () => released.push(owner),
		});
	}

	it("releases at a step boundary; a replica below its share takes it at once, one at or above waits for the take delay", async () => {
		const released: string[] = [];
		const aDelay = { ms: 0 };
		const bDelay = { ms: 60_000 };
		const a = watcher("node-a:1:x", aDelay, released);
		const b = watcher("node-b:1:x", bDelay, released);
		const row = () => node.app.models.ChainCursor.findByPk(NET);
		a.start();
		try {
			await until("a leads with a started cursor", async () => a.handOverReady && (await row())?.blockNumber === 10);
			b.start();
			const before = (await row())!.leaseToken;
			// a is now at or above its share: it hands over and does not take the network back at once.
			aDelay.ms = 60_000;
			bDelay.ms = 0;
			expect(await a.handOver()).toBe(true);
			expect(a.status.leader).toBe(false);
			expect(released).toEqual(["node-a:1:x"]);
			b.nudge();
			const taken = await until("b leads", async () => {
				const r = await row();
				return r?.leaseOwner === "node-b:1:x" ? r : null;
			});
			expect(taken.leaseToken).toBe(before + 1);
			expect(taken.blockNumber).toBe(10);
			// Not leading: nothing to hand over.
			expect(await a.handOver()).toBe(false);

			// b stops (a graceful stop releases too); a, at or above its share, leaves it free for now.
			await b.stop();
			expect(released).toEqual(["node-a:1:x", "node-b:1:x"]);
			await new Promise(r => setTimeout(r, 300));
			expect((await row())!.leaseOwner).toBeNull();
			// Below its share again: a takes it.
			aDelay.ms = 0;
			a.nudge();
			await until("a leads again", async () => (await row())?.leaseOwner === "node-a:1:x");
		} finally {
			await a.stop();
			await b.stop();
		}
	});

	it("acquireLease with freeForMs takes only a lease free or expired for that long", async () => {
		const models = node.app.models;
		await ensureCursor(models, OTHER, "evm", new Date());
		const now = Date.now();
		const held = (await acquireLease(models, OTHER, "x:1:a", 60_000, now))!;
		expect(held).toMatchObject({ owner: "x:1:a" });
		// Held: nobody takes it, whatever the delay.
		expect(await acquireLease(models, OTHER, "y:1:b", 60_000, now, 0)).toBeNull();
		// Released now (as a watcher does: leaseUntil the release time).
		await releaseLease(models, held, now);
		expect(await acquireLease(models, OTHER, "y:1:b", 60_000, now + 1_000, 3_000)).toBeNull();
		expect(await acquireLease(models, OTHER, "y:1:b", 60_000, now + 4_000, 3_000)).toMatchObject({ owner: "y:1:b", token: held.token + 1 });
		// Released without a time (a sweeper's graceful stop): anyone at once.
		await releaseLease(models, { networkId: OTHER, owner: "y:1:b", token: held.token + 1 });
		expect(await acquireLease(models, OTHER, "z:1:c", 60_000, Date.now(), 3_000)).toMatchObject({ owner: "z:1:c" });
	});
});

/**
 * A busy machine (a process starting up, both cores taken) can hold a leader's event loop, or its
 * renewal's query, past the lease's expiry. The fencing token says whether anyone took the lease
 * meanwhile: nobody did, so the renewal holds it (no loss, no new token, no hand-over to itself);
 * somebody did, so it is lost.
 */
describe("a leader starved past its lease's expiry", () => {
	/** Holds the event loop, as a long synchronous piece of start-up work or a starved process does. */
	const hold = (ms: number) => {
		const end = Date.now() + ms;
		while (Date.now() < end);
	};

	it("renewLease: an expired lease nobody took is renewed with its token; one taken since is not", async () => {
		const models = node.app.models;
		await ensureCursor(models, STARVED, "evm", new Date());
		const long = Date.now() - 10_000;
		const held = (await acquireLease(models, STARVED, "s:1:a", 1_000, long))!;
		// Ran out 9 s ago; untaken: still this holder's.
		expect(await renewLease(models, held, 1_000, Date.now())).toBe(true);
		expect((await models.ChainCursor.findByPk(STARVED))!.leaseToken).toBe(held.token);
		// Taken by another once expired again (a new token): the old holder's renewal is refused.
		const taken = (await acquireLease(models, STARVED, "s:1:b", 60_000, Date.now() + 5_000))!;
		expect(taken).toMatchObject({ owner: "s:1:b", token: held.token + 1 });
		expect(await renewLease(models, held, 1_000, Date.now() + 5_000)).toBe(false);
		await releaseLease(models, taken);
	});

	it("keeps leading with the same token when its event loop was held longer than the lease", async () => {
		const logs: string[] = [];
		const runner = testWatcher(node, {
			source: scriptedSource(10, 10, async () => false),
			network: { id: STARVED, slug: "ethereum-sepolia", chainType: "evm", requiredConfirmations: 1, tokens: [] },
			payments,
			config: { leaseMs: 1_000 },
			logger: loggerInto(logs),
			owner: "starved:1:x",
		});
		const row = () => node.app.models.ChainCursor.findByPk(STARVED);
		runner.start();
		try {
			await until("the watcher leads with a started cursor", async () => runner.handOverReady && (await row())?.blockNumber === 10);
			const token = (await row())!.leaseToken;
			// Longer than the lease: any renewal begun before the hold wrote leaseUntil at most 1 s after
			// its start, so the stored lease has run out when the renewal timer next fires.
			hold(1_600);
			// The late renewal holds it again: the stored lease runs ahead of the clock, same token.
			await until("the lease renewed after the hold", async () => ((await row())?.leaseUntil?.getTime() ?? 0) > Date.now());
			const after = (await row())!;
			expect(after.leaseOwner).toBe("starved:1:x");
			expect(after.leaseToken).toBe(token);
			expect(runner.status.leader).toBe(true);
			expect(logs.filter(l => /lost the lease/.test(l))).toEqual([]);
		} finally {
			await runner.stop();
		}
	});
});
