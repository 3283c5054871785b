/** A small bounded map whose entries expire; for per-node caches cleared by broadcast events. */
export class TtlCache<K, V> {
	private entries = new Map<K, { value: V; expiresAt: number }>();

	constructor(private readonly ttlMs: number, private readonly maxEntries: number, private readonly now: () => number = Date.now) {}

	get(key: K): V | undefined {
		const entry = this.entries.get(key);
		if (!entry) return undefined;
		if (entry.expiresAt <= this.now()) {
			this.entries.delete(key);
			return undefined;
		}
		return entry.value;
	}

	set(key: K, value: V): void {
		if (this.entries.size >= this.maxEntries) {
			// Maps iterate in insertion order: drop the oldest entry.
			const oldest = this.entries.keys().next();
			if (!oldest.done) this.entries.delete(oldest.value);
		}
		this.entries.set(key, { value, expiresAt: this.now() + this.ttlMs });
	}

	delete(key: K): void {
		this.entries.delete(key);
	}

	clear(): void {
		this.entries.clear();
	}

	get size(): number {
		return this.entries.size;
	}
}
