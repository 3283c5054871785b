import { leaseWatches, WATCHED_GRACE_MS, WatchedCache } from "../../../lib/watchers/watched";

const NOW = 1_000_000_000;

describe("a network is watched", () => {
	it("while its lease is held, and for the grace period after it was last held", () => {
		expect(leaseWatches(new Date(NOW + 10_000), NOW)).toBe(true);
		expect(leaseWatches(new Date(NOW - 1), NOW)).toBe(true);
		expect(leaseWatches(new Date(NOW - WATCHED_GRACE_MS), NOW)).toBe(true);
		expect(leaseWatches(new Date(NOW - WATCHED_GRACE_MS - 1), NOW)).toBe(false);
		expect(leaseWatches(new Date(NOW - 5_000).toISOString(), NOW, 1_000)).toBe(false);
	});

	it("never without a lease", () => {
		expect(leaseWatches(null, NOW)).toBe(false);
		expect(leaseWatches("not a date", NOW)).toBe(false);
	});
});

describe("the watched cache", () => {
	function setup() {
		let now = NOW;
		let ids = new Set<string>();
		const reads: number[] = [];
		const cache = new WatchedCache(
			async at => {
				reads.push(at);
				return new Set(ids);
			},
			{ ttlMs: 5_000, missMs: 1_000, now: () => now },
		);
		return {
			cache,
			reads,
			set: (next: string[]) => (ids = new Set(next)),
			tick: (ms: number) => (now += ms),
		};
	}

	it("trusts a watched network for its lifetime, then reads again", async () => {
		const t = setup();
		t.set(["a"]);
		expect(await t.cache.isWatched("a")).toBe(true);
		t.set([]);
		t.tick(4_999);
		expect(await t.cache.isWatched("a")).toBe(true);
		expect(t.reads).toHaveLength(1);
		t.tick(1);
		expect(await t.cache.isWatched("a")).toBe(false);
		expect(t.reads).toHaveLength(2);
	});

	it("reads an unwatched network again after the miss interval only (a new lease is seen quickly; refusals do not flood the database)", async () => {
		const t = setup();
		expect(await t.cache.isWatched("b")).toBe(false);
		t.set(["b"]);
		for (let i = 0; i < 10; i++) expect(await t.cache.isWatched("b")).toBe(false);
		expect(t.reads).toHaveLength(1);
		t.tick(1_000);
		expect(await t.cache.isWatched("b")).toBe(true);
		expect(t.reads).toHaveLength(2);
	});

	it("reads again at once after an invalidation (a watcher's broadcast), and shares one read between concurrent callers", async () => {
		const t = setup();
		expect(await t.cache.isWatched("c")).toBe(false);
		t.set(["c"]);
		t.cache.invalidate();
		const answers = await Promise.all(Array.from({ length: 5 }, () => t.cache.isWatched("c")));
		expect(answers).toEqual([true, true, true, true, true]);
		expect(t.reads).toHaveLength(2);
		expect(await t.cache.all()).toEqual(new Set(["c"]));
	});

	it("does not keep an answer read before an invalidation", async () => {
		let release!: (ids: Set<string>) => void;
		let calls = 0;
		const cache = new WatchedCache(
			() => {
				calls++;
				return calls === 1 ? new Promise<Set<string>>(r => (release = r)) : Promise.resolve(new Set(["d"]));
			},
			{ ttlMs: 5_000, missMs: 1_000, now: () => NOW },
		);
		const early = cache.isWatched("d");
		cache.invalidate();
		expect(await cache.isWatched("d")).toBe(true);
		release(new Set());
		expect(await early).toBe(false);
		// The stale read was not stored: the fresh one stands.
		expect(await cache.isWatched("d")).toBe(true);
		expect(calls).toBe(2);
	});
});
