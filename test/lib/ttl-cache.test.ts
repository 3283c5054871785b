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
});
