/**
 * A small bounded map whose entries expire; for per-node caches cleared by broadcast events.
 *
 * `generation` changes on every `delete`/`clear`. A caller that looks a value up elsewhere
 * (database, another service) reads the generation first and passes it to `set`: if an
 * invalidation happened meanwhile the stale answer is not stored (no "revoked, then re-cached
 * as valid by a request that was already in flight"). `lookup` does that for the caller and makes
 * concurrent look-ups of one key share one load.
 */
export class TtlCache<K, V> {
	private entries = new Map<K, { value: V; expiresAt: number }>();
	private gen = 0;
	private flights = new Map<K, { gen: number; promise: Promise<V> }>();

	constructor(private readonly ttlMs: number, private readonly maxEntries: number, private readonly now: () => number = Date.now) {}

	get generation(): number {
		return this.gen;
	}

	get(key: K): V | undefined {
		const entry = this.entries.get(key);
		if (!entry) return undefined;
		if (entry.expiresAt <= this.now()) {
			this.entries.delete(key);
			return undefined;
		}
		return entry.value;
	}

	/** Stores the value; with `ifGeneration`, only when nothing was invalidated since that generation. Returns whether it stored. */
	set(key: K, value: V, ifGeneration?: number): boolean {
		if (ifGeneration !== undefined && ifGeneration !== this.gen) return false;
		if (!this.entries.has(key) && this.entries.size >= this.maxEntries) {
			// Maps iterate in insertion order: drop the oldest entry.
			const oldest = this.entries.keys().next();
			if (!oldest.done) this.entries.delete(oldest.value);
		}
		// Re-insert so a refreshed entry counts as the newest.
		this.entries.delete(key);
		this.entries.set(key, { value, expiresAt: this.now() + this.ttlMs });
		return true;
	}

	/**
	 * The cached value, else `load`'s answer, stored unless an invalidation came meanwhile.
	 * Concurrent look-ups of one key share one load (a burst of requests with one credential asks
	 * once, not once a request), but never across an invalidation: a look-up made after a
	 * `delete`/`clear` starts its own load. A failed load is shared by its waiters and not kept.
	 */
	lookup(key: K, load: () => Promise<V>): Promise<V> {
		const cached = this.get(key);
		if (cached !== undefined) return Promise.resolve(cached);
		const flight = this.flights.get(key);
		if (flight && flight.gen === this.gen) return flight.promise;
		const gen = this.gen;
		const promise = load().then(value => {
			this.set(key, value, gen);
			return value;
		});
		const entry = { gen, promise };
		this.flights.set(key, entry);
		const forget = () => {
			if (this.flights.get(key) === entry) this.flights.delete(key);
		};
		promise.then(forget, forget);
		return promise;
	}

	delete(key: K): void {
		this.gen++;
		this.entries.delete(key);
	}

	clear(): void {
		this.gen++;
		this.entries.clear();
	}

	get size(): number {
		return this.entries.size;
	}
}
