/**
 * A small bounded map whose entries expire; for per-node caches cleared by broadcast events.
 *
 * `generation` changes on every `delete`/`clear`. A caller that looks a value up elsewhere
 * (database, another service) reads the generation first and passes it to `set`: if an
 * invalidation happened meanwhile the stale answer is not stored (no "revoked, then re-cached
 * as valid by a request that was already in flight").
 */
export class TtlCache<K, V> {
	private entries = new Map<K, { value: V; expiresAt: number }>();
	private gen = 0;

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
