import { TtlCache } from "../../lib/ttl-cache";

describe("TtlCache", () => {
	let now = 1_000_000;
	const clock = () => now;
	beforeEach(() => {
		now = 1_000_000;
	});

	it("returns stored values until they expire", () => {
		const cache = new TtlCache<string, number>(1000, 10, clock);
		cache.set("a", 1);
		expect(cache.get("a")).toBe(1);
		now += 999;
		expect(cache.get("a")).toBe(1);
		now += 1;
		expect(cache.get("a")).toBeUndefined();
		expect(cache.size).toBe(0);
	});

	it("stores falsy values as values", () => {
		const cache = new TtlCache<string, boolean | null>(1000, 10, clock);
		cache.set("f", false);
		cache.set("n", null);
		expect(cache.get("f")).toBe(false);
		expect(cache.get("n")).toBeNull();
		expect(cache.get("missing")).toBeUndefined();
	});

	it("drops the oldest entry when full, counting a refreshed entry as new", () => {
		const cache = new TtlCache<string, number>(10_000, 3, clock);
		cache.set("a", 1);
		cache.set("b", 2);
		cache.set("c", 3);
		cache.set("a", 10);
		cache.set("d", 4);
		expect(cache.get("b")).toBeUndefined();
		expect(cache.get("a")).toBe(10);
		expect(cache.get("c")).toBe(3);
		expect(cache.get("d")).toBe(4);
		expect(cache.size).toBe(3);
		// Overwriting at capacity does not evict anything else.
		cache.set("d", 5);
		expect(cache.size).toBe(3);
		expect(cache.get("c")).toBe(3);
	});

	it("refreshes the expiry on set", () => {
		const cache = new TtlCache<string, number>(1000, 10, clock);
		cache.set("a", 1);
		now += 800;
		cache.set("a", 2);
		now += 800;
		expect(cache.get("a")).toBe(2);
	});

	it("deletes and clears", () => {
		const cache = new TtlCache<string, number>(1000, 10, clock);
		cache.set("a", 1);
		cache.set("b", 2);
		cache.delete("a");
		expect(cache.get("a")).toBeUndefined();
		expect(cache.get("b")).toBe(2);
		cache.clear();
		expect(cache.size).toBe(0);
	});

	it("refuses to store a look-up that started before an invalidation", () => {
		const cache = new TtlCache<string, string>(1000, 10, clock);
		const before = cache.generation;
		expect(cache.set("k", "v1", before)).toBe(true);
		const inFlight = cache.generation;
		cache.delete("other");
		expect(cache.set("k", "stale", inFlight)).toBe(false);
		expect(cache.get("k")).toBe("v1");
		const afterDelete = cache.generation;
		cache.clear();
		expect(cache.generation).toBeGreaterThan(afterDelete);
		expect(cache.set("k", "stale", afterDelete)).toBe(false);
		expect(cache.get("k")).toBeUndefined();
		expect(cache.set("k", "fresh", cache.generation)).toBe(true);
		// Expiry is not an invalidation.
		const g = cache.generation;
		now += 5000;
		expect(cache.get("k")).toBeUndefined();
		expect(cache.generation).toBe(g);
	});

	/** A load the test answers by hand, counting how often it was asked. */
	const manualLoads = <V>() => {
		const pending: Array<{ resolve(v: V): void; reject(e: Error): void }> = [];
		const load = () => new Promise<V>((resolve, reject) => pending.push({ resolve, reject }));
		return { pending, load };
	};

	it("lookup: concurrent look-ups of one key share one load, and the answer is cached", async () => {
		const cache = new TtlCache<string, boolean | null>(1000, 10, clock);
		const { pending, load } = manualLoads<boolean | null>();
		const answers = Promise.all([cache.lookup("s", load), cache.lookup("s", load), cache.lookup("s", load)]);
		const other = cache.lookup("t", load);
		expect(pending).toHaveLength(2);
		pending[0].resolve(null);
		pending[1].resolve(true);
		await expect(answers).resolves.toEqual([null, null, null]);
		await expect(other).resolves.toBe(true);
		// null is a value (an unknown key), served from the cache without a load.
		await expect(cache.lookup("s", load)).resolves.toBeNull();
		expect(pending).toHaveLength(2);
	});

	it("lookup: a look-up after an invalidation does not join the flight before it, whose stale answer is not stored", async () => {
		const cache = new TtlCache<string, boolean>(1000, 10, clock);
		const { pending, load } = manualLoads<boolean>();
		const before = cache.lookup("s", load);
		cache.delete("s"); // the session ended while the first look-up was asking
		const after = cache.lookup("s", load);
		expect(pending).toHaveLength(2);
		pending[1].resolve(false);
		pending[0].resolve(true);
		await expect(before).resolves.toBe(true);
		await expect(after).resolves.toBe(false);
		expect(cache.get("s")).toBe(false);
	});

	it("lookup: a failed load reaches every waiter and is not kept", async () => {
		const cache = new TtlCache<string, boolean>(1000, 10, clock);
		const { pending, load } = manualLoads<boolean>();
		const both = [cache.lookup("s", load), cache.lookup("s", load)];
		pending[0].reject(new Error("auth away"));
		for (const p of both) await expect(p).rejects.toThrow("auth away");
		expect(cache.get("s")).toBeUndefined();
		const again = cache.lookup("s", load);
		expect(pending).toHaveLength(2);
		pending[1].resolve(true);
		await expect(again).resolves.toBe(true);
	});
});
