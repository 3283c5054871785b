/**
 * The node's one Redis connection: rate-limit counters, the Moleculer cache (`RedisCacher` below)
 * and the pricing refresh lock all use it. Redis holds nothing that cannot be rebuilt, so while it
 * is unreachable every command fails at once and each user falls back: the cache is bypassed
 * (the database answers), counters are kept per node in memory, the lock is taken locally.
 * ioredis reconnects with its own backoff; the outage is logged once and the recovery once.
 */
import Redis, { type RedisOptions } from "ioredis";
import { Cachers, type Logger, type ServiceBroker } from "moleculer";

const REDIS_OPTIONS: RedisOptions = {
	// A command sent while disconnected is refused at once instead of waiting for the reconnect.
	enableOfflineQueue: false,
	// A command in flight when the connection drops fails rather than being sent again later
	// (a counter's INCR must not count twice, and the request has long moved on).
	maxRetriesPerRequest: 0,
	connectTimeout: 2_000,
	// A Redis that accepts connections but stops answering costs at most this per command.
	commandTimeout: 1_000,
};

/** How long a starting node waits for Redis before it serves without it. */
const START_WAIT_MS = REDIS_OPTIONS.connectTimeout!;

export function createRedis(url: string): Redis {
	const redis = new Redis(url, REDIS_OPTIONS);
	// Failures reach the callers of each command; the connection's own are logged by logOutages.
	redis.on("error", () => undefined);
	return redis;
}

/** Logs when Redis becomes unreachable and when it is back: one line each per outage, no stacks. */
export function logOutages(redis: Redis, logger: Logger): void {
	let down = false;
	const lost = (reason: string) => {
		if (down) return;
		down = true;
		logger.warn(`Redis unreachable (${reason}): cache bypassed and rate limits counted per node until it is back`);
	};
	redis.on("error", (err: Error) => lost(err.message));
	// A dropped connection that ioredis will re-open (not a deliberate disconnect).
	redis.on("reconnecting", () => lost("connection lost"));
	redis.on("ready", () => {
		if (!down) return;
		down = false;
		logger.info("Redis reachable again");
	});
}

/** Resolves once Redis is ready, has failed once, or after START_WAIT_MS: a node starts without it. */
export function waitForRedis(redis: Redis): Promise<void> {
	if (redis.status === "ready") return Promise.resolve();
	return new Promise(resolve => {
		const done = () => {
			clearTimeout(timer);
			redis.off("ready", done);
			redis.off("error", done);
			resolve();
		};
		const timer = setTimeout(done, START_WAIT_MS);
		redis.once("ready", done);
		redis.once("error", done);
	});
}

/**
 * Moleculer's Redis cacher on the node's shared connection. Moleculer's own opens a connection of
 * its own, logs each failed reconnect as an error with its stack, fails the action when a read
 * fails and leaves a failed write as an unhandled rejection. Here a failed read is a miss, a
 * failed write is dropped, and an invalidation that could not reach Redis clears the whole cache
 * once Redis is back (entries written before the outage could otherwise outlive the change).
 */
export class RedisCacher extends Cachers.Redis<Redis> {
	private missedInvalidation = false;

	constructor(private readonly shared: Redis, opts: { prefix: string }) {
		// Moleculer's init builds a client from `redis`: a lazy one, which never connects and is
		// replaced by the shared connection right after.
		super({ ...opts, redis: { lazyConnect: true } });
	}

	init(broker: ServiceBroker): void {
		super.init(broker);
		this.client.disconnect();
		this.client = this.shared;
		// While not connected, Moleculer's middleware calls the action without the cache.
		this.connected = this.client.status === "ready";
		this.client.on("close", () => (this.connected = false));
		this.client.on("ready", () => {
			this.connected = true;
			if (!this.missedInvalidation) return;
			this.missedInvalidation = false;
			this.clean().catch(() => undefined);
		});
	}

	/** The connection belongs to the node (lib/node.ts closes it). */
	close(): Promise<void> {
		return Promise.resolve();
	}

	get(key: string) {
		return super.get(key).catch(() => this.opts.missingResponse);
	}

	set(key: string, data: unknown, ttl?: number) {
		return super.set(key, data, ttl).catch(() => undefined);
	}

	del(key: string | string[]) {
		return this.invalidating(() => super.del(key));
	}

	clean(match?: string | string[]) {
		return this.invalidating(() => super.clean(match));
	}

	private async invalidating(run: () => Promise<void>): Promise<void> {
		if (this.client.status !== "ready") {
			this.missedInvalidation = true;
			return;
		}
		try {
			await run();
		} catch {
			this.missedInvalidation = true;
		}
	}
}
