/**
 * One writer at a time on a SQLite file, queued in the process (docs/deployment.md "SQLite under
 * concurrency").
 *
 * SQLite lets one connection write at a time. Left to SQLite, concurrent writers wait in
 * busy_timeout: node-sqlite3 runs every statement on libuv's thread pool (4 threads), and a
 * statement waiting for the lock sleeps on its thread. A few waiting writers take every thread,
 * the transaction that holds the lock cannot run its next statement, and the waiters fail with
 * SQLITE_BUSY (a 500). Sequelize 6 also opens a new connection for every transaction. So here:
 * - every transaction and every write outside one waits its turn in a FIFO queue, in JavaScript,
 *   where waiting costs no thread;
 * - transactions run one after the other on one long-lived writer connection; reads outside a
 *   transaction use Sequelize's default connection beside it and never wait (WAL journal);
 * - a transaction or write outside it requested while the same async flow holds the queue (a
 *   transaction inside a transaction's callback without `transaction: t`) would wait for itself:
 *   it throws at once instead.
 * busy_timeout and Sequelize's SQLITE_BUSY retries stay for another process on the same file.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import path from "node:path";
import type { Sequelize, Transaction } from "sequelize";

/** A FIFO mutex: acquire() resolves, in call order, with the function that releases it. */
export class FifoLock {
	private held = false;
	private readonly waiting: Array<() => void> = [];

	/** Callers waiting for the lock (not counting the holder). */
	get queued(): number {
		return this.waiting.length;
	}

	async acquire(): Promise<() => void> {
		if (this.held) await new Promise<void>(resolve => this.waiting.push(resolve));
		else this.held = true;
		let released = false;
		return () => {
			if (released) return;
			released = true;
			const next = this.waiting.shift();
			// Handed straight to the next waiter: nobody can slip in between.
			if (next) next();
			else this.held = false;
		};
	}

	async run<T>(fn: () => Promise<T>): Promise<T> {
		const release = await this.acquire();
		try {
			return await fn();
		} finally {
			release();
		}
	}
}

/** Writes outside a transaction: anything but a SELECT (a PRAGMA or a WITH also queues: harmless). */
const READ = /^\s*SELECT\b/i;

/** Per connection: wait for another process's lock instead of failing at once; enforce foreign keys. */
export const SQLITE_CONNECTION_PRAGMAS = ["PRAGMA busy_timeout = 5000", "PRAGMA foreign_keys = ON"];

interface SqliteConnection {
	filename?: string;
	run(sql: string, cb: (err: Error | null) => void): unknown;
	close(cb?: (err: Error | null) => void): void;
}

interface SqliteConnectionManager {
	connections: Record<string, SqliteConnection>;
	getConnection(options?: { uuid?: string | number }): Promise<SqliteConnection>;
	releaseConnection(connection: SqliteConnection, force?: boolean): unknown;
	destroyConnection(connection: SqliteConnection): Promise<void>;
}

/** One queue per database file: two Sequelize instances of one process on a file share it. */
const locks = new Map<string, FifoLock>();
/** The async flows that hold a queue (which one), while their transaction's callback runs. */
const holders = new AsyncLocalStorage<{ lock: FifoLock; active: boolean }>();

const WRITER = "writer";

function exec(db: SqliteConnection, sql: string): Promise<void> {
	return new Promise((resolve, reject) => db.run(sql, err => (err ? reject(err) : resolve())));
}

function selfWait(): Error {
	return new Error(
		"SQLite: a transaction or a write outside the transaction was started inside a transaction's callback; it would wait for that transaction forever. Pass { transaction: t }.",
	);
}

const LOCK = Symbol("sqliteWriterLock");

/** The queue of a SQLite Sequelize instance (undefined for other dialects). */
export function writerLockOf(sequelize: Sequelize): FifoLock | undefined {
	return (sequelize as unknown as { [LOCK]?: FifoLock })[LOCK];
}

/**
 * Installs the queue and the writer connection on a SQLite Sequelize instance (`storage` as
 * given to it). Managed transactions (`sequelize.transaction(fn)`) hold the queue from BEGIN to
 * COMMIT or ROLLBACK; unmanaged ones until commit() or rollback().
 */
export function serializeSqliteWrites(sequelize: Sequelize, storage: string): void {
	const inMemory = storage === ":memory:";
	const key = inMemory ? Symbol("memory") : path.resolve(storage);
	let lock = typeof key === "string" ? locks.get(key) : undefined;
	if (!lock) {
		lock = new FifoLock();
		if (typeof key === "string") locks.set(key, lock);
	}
	(sequelize as unknown as { [LOCK]: FifoLock })[LOCK] = lock;
	const queue = lock;
	const holdsQueue = () => {
		const flow = holders.getStore();
		return !!flow && flow.active && flow.lock === queue;
	};

	// ---- connections: the default one for reads and single writes, one writer for transactions
	const cm = sequelize.connectionManager as unknown as SqliteConnectionManager;
	const open = cm.getConnection.bind(cm);
	const release = cm.releaseConnection.bind(cm);
	const destroy = cm.destroyConnection.bind(cm);
	const configured = new WeakSet<SqliteConnection>();
	let writer: SqliteConnection | null = null;
	const configure = async (db: SqliteConnection) => {
		if (configured.has(db)) return;
		configured.add(db);
		for (const sql of SQLITE_CONNECTION_PRAGMAS) await exec(db, sql);
	};
	cm.getConnection = async (options = {}) => {
		// In memory every "connection" is the same one database: nothing to swap.
		const transactional = !inMemory && options.uuid !== undefined && options.uuid !== "default";
		if (!transactional) {
			const db = await open(options);
			await configure(db);
			return db;
		}
		if (!writer) {
			const db = await open({ uuid: WRITER });
			await configure(db);
			writer = db;
		}
		return writer;
	};
	// A finished transaction leaves the writer open for the next one.
	cm.releaseConnection = (connection, force) => (connection === writer ? undefined : release(connection, force));
	// After a failed COMMIT or ROLLBACK the connection's state is unknown: it is closed, the next
	// transaction opens a new one.
	cm.destroyConnection = async connection => {
		if (connection !== writer) return destroy(connection);
		writer = null;
		delete cm.connections[WRITER];
		await new Promise<void>(resolve => connection.close(() => resolve()));
	};

	// ---- transactions wait their turn
	const transaction = sequelize.transaction.bind(sequelize) as (options?: object, fn?: (t: Transaction) => Promise<unknown>) => Promise<unknown>;
	sequelize.transaction = (async (options?: object | ((t: Transaction) => Promise<unknown>), fn?: (t: Transaction) => Promise<unknown>) => {
		if (typeof options === "function") {
			fn = options as (t: Transaction) => Promise<unknown>;
			options = undefined;
		}
		// A savepoint inside an open transaction runs on its connection: no turn to wait for.
		if ((options as { transaction?: Transaction } | undefined)?.transaction) return transaction(options, fn);
		if (holdsQueue()) throw selfWait();
		const done = await queue.acquire();
		if (fn) {
			const callback = fn;
			const flow = { lock: queue, active: true };
			try {
				return await holders.run(flow, () =>
					transaction(options, async t => {
						try {
							return await callback(t);
						} finally {
							flow.active = false;
						}
					}),
				);
			} finally {
				done();
			}
		}
		let t: Transaction;
		try {
			t = (await transaction(options)) as Transaction;
		} catch (err) {
			done();
			throw err;
		}
		const commit = t.commit.bind(t);
		const rollback = t.rollback.bind(t);
		t.commit = async () => {
			try {
				return await commit();
			} finally {
				done();
			}
		};
		t.rollback = async () => {
			try {
				return await rollback();
			} finally {
				done();
			}
		};
		return t;
	}) as Sequelize["transaction"];

	// ---- so do writes outside a transaction
	const query = sequelize.query.bind(sequelize) as (sql: unknown, options?: { transaction?: unknown }) => Promise<unknown>;
	sequelize.query = ((sql: string | { query: string }, options?: { transaction?: unknown }) => {
		const text = typeof sql === "string" ? sql : sql?.query;
		if (options?.transaction || (typeof text === "string" && READ.test(text))) return query(sql, options);
		if (holdsQueue()) return Promise.reject(selfWait());
		return queue.run(() => query(sql, options));
	}) as Sequelize["query"];
}
