import { fairShare, ledCounts, pickRelease, rendezvousScore, takeDelay } from "../../../lib/watchers/share";

const nets = (n: number) => Array.from({ length: n }, (_, i) => `net-${i}`);

describe("fair share of a service's networks", () => {
	it("is ceil(networks / replicas), all of them when alone, none of nothing", () => {
		expect(fairShare(4, 1)).toBe(4);
		expect(fairShare(4, 3)).toBe(2);
		expect(fairShare(5, 2)).toBe(3);
		expect(fairShare(4, 8)).toBe(1);
		expect(fairShare(0, 3)).toBe(0);
		expect(fairShare(3, 0)).toBe(3);
	});

	it("takes a free lease at once below the share, after the defer delay at or above it", () => {
		expect(takeDelay({ led: 1, networks: 4, replicas: 3, deferMs: 3000 })).toBe(0);
		expect(takeDelay({ led: 2, networks: 4, replicas: 3, deferMs: 3000 })).toBe(3000);
		expect(takeDelay({ led: 3, networks: 4, replicas: 1, deferMs: 3000 })).toBe(0);
	});

	it("counts only live replicas' leases, every live replica listed", () => {
		const holders = new Map([
			["a", "n1"],
			["b", "n1"],
			["c", "gone"],
			["d", null],
		]);
		expect(ledCounts(["n1", "n2"], holders)).toEqual(new Map([["n1", 2], ["n2", 0]]));
	});

	it("rendezvous scores are stable and differ per node", () => {
		expect(rendezvousScore("x", "n1")).toBe(rendezvousScore("x", "n1"));
		expect(rendezvousScore("x", "n1")).not.toBe(rendezvousScore("x", "n2"));
	});

	it("hands over only to a replica leading at least two fewer, one at a time", () => {
		const holders = new Map(nets(4).map(n => [n, "n1"] as [string, string | null]));
		const base = { self: "n1", holders, pending: new Set<string>(), releasable: nets(4) };
		// Alone: nothing to hand over.
		expect(pickRelease({ ...base, replicas: ["n1"] })).toBeNull();
		expect(pickRelease({ ...base, replicas: ["n1", "n2"] })).not.toBeNull();
		// A hand-over not yet taken by another replica counts as this replica's own: nothing more meanwhile.
		expect(pickRelease({ ...base, replicas: ["n1", "n2"], pending: new Set(["net-0"]) })).toBeNull();
		// 2 / 1 / 1: balanced.
		const spread = new Map<string, string | null>([["net-0", "n1"], ["net-1", "n1"], ["net-2", "n2"], ["net-3", "n3"]]);
		expect(pickRelease({ self: "n1", replicas: ["n1", "n2", "n3"], holders: spread, pending: new Set(), releasable: ["net-0", "net-1"] })).toBeNull();
	});

	it("makes the same pick whatever the order of its inputs", () => {
		const holders = new Map(nets(6).map(n => [n, "n1"] as [string, string | null]));
		const a = pickRelease({ self: "n1", replicas: ["n1", "n2", "n3"], holders, pending: new Set(), releasable: nets(6) });
		const b = pickRelease({ self: "n1", replicas: ["n3", "n2", "n1"], holders, pending: new Set(), releasable: nets(6).reverse() });
		expect(a).toBe(b);
	});

	/** Replicas hand over one network each per round; a released network goes to the replica leading fewest (below its share). */
	function settle(holders: Map<string, string | null>, replicas: string[]): number {
		let moves = 0;
		for (let round = 0; round < 100; round++) {
			let moved = false;
			// Free networks first, to replicas below their share (as takeDelay makes them).
			for (const [n, h] of holders) {
				if (h !== null && replicas.includes(h)) continue;
				const counts = ledCounts(replicas, holders);
				const taker = [...replicas].sort((x, y) => counts.get(x)! - counts.get(y)! || (x < y ? -1 : 1))[0];
				holders.set(n, taker);
			}
			for (const self of replicas) {
				const mine = [...holders].filter(([, h]) => h === self).map(([n]) => n);
				const pick = pickRelease({ self, replicas, holders, pending: new Set(), releasable: mine });
				if (!pick) continue;
				holders.set(pick, null);
				moves++;
				moved = true;
				const counts = ledCounts(replicas, holders);
				const taker = replicas.filter(r => r !== self).sort((x, y) => counts.get(x)! - counts.get(y)! || (x < y ? -1 : 1))[0];
				holders.set(pick, taker);
			}
			if (!moved) return moves;
		}
		throw new Error("did not settle");
	}

	const within = (holders: Map<string, string | null>, replicas: string[]) => {
		const n = holders.size;
		for (const c of ledCounts(replicas, holders).values()) {
			expect(c).toBeGreaterThanOrEqual(Math.floor(n / replicas.length));
			expect(c).toBeLessThanOrEqual(Math.ceil(n / replicas.length));
		}
	};

	it.each([
		[4, 3],
		[5, 2],
		[7, 3],
		[12, 5],
		[3, 5],
	])("%i networks settle between floor and ceil on %i replicas, with the fewest moves", (n, r) => {
		const replicas = Array.from({ length: r }, (_, i) => `node-${i}`);
		const holders = new Map(nets(n).map(x => [x, "node-0"] as [string, string | null]));
		const moves = settle(holders, replicas);
		within(holders, replicas);
		// Each move takes a network from the first replica: no network moves twice.
		expect(moves).toBe(n - ledCounts(replicas, holders).get("node-0")!);
	});

	it("a replica that dies and comes back moves only what it must (no ping-pong)", () => {
		const replicas = ["a", "b", "c"];
		const holders = new Map(nets(9).map(x => [x, "a"] as [string, string | null]));
		settle(holders, replicas);
		within(holders, replicas);
		// c dies: its networks go to a and b (3 moves by takeover, none by hand-over).
		expect(settle(holders, ["a", "b"])).toBe(0);
		within(holders, ["a", "b"]);
		// c is back: it gets 3 networks by hand-over, exactly 3 moves; then nothing moves.
		expect(settle(holders, replicas)).toBe(3);
		within(holders, replicas);
		expect(settle(holders, replicas)).toBe(0);
	});
});
