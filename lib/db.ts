/**
 * One Sequelize instance per node, and versioned migrations (umzug) run at start. On MySQL the
 * migrations run under a named lock so several nodes starting together migrate once.
 */
import fs from "node:fs";
import path from "node:path";
import { Sequelize, Options, Transaction } from "sequelize";
import { Umzug, SequelizeStorage } from "umzug";
import { migrations } from "../models/migrations";
import { serializeSqliteWrites } from "./sqlite-writer";

/**
 * Prepared statements mysql2 keeps per connection (least recently used closed on the server).
 * Sequelize inlines `Op.in` lists into the SQL, so each `update({...}, { where: { id: { [Op.in]:
 * ids } } })` of other rows (the watcher's markReported: one per transfer) is a new statement text; with mysql2's default (16,000 a connection) a busy node fills MariaDB's server-wide
 * max_prepared_stmt_count (16,382) and every further statement fails (seen in the watcher
 * bench, docs/benchmarks.md). 100 x a pool of 20 = 2,000 a process: eight processes fit.
 */
export const MYSQL_MAX_PREPARED_STATEMENTS = 100;

export function createSequelize(databaseUrl: string): Sequelize {
	const common: Options = { logging: false, define: { timestamps: true } };
	if (databaseUrl.startsWith("sqlite:")) {
		const storage = databaseUrl.slice("sqlite:".length) || ":memory:";
		if (storage !== ":memory:") fs.mkdirSync(path.dirname(path.resolve(storage)), { recursive: true });
		const sequelize = new Sequelize({
			...common,
			dialect: "sqlite",
			storage,
			// Writers take the lock when the transaction begins, so a writer of another process (a
			// REPL, a script) waits in busy_timeout instead of failing when it upgrades a read lock.
			transactionType: "IMMEDIATE" as Options["transactionType"],
			// Only another process can still make a statement fail with SQLITE_BUSY (this one queues
			// its writers: lib/sqlite-writer.ts); such a statement is tried again.
			retry: { max: 5, match: [/SQLITE_BUSY/] },
		});
		serializeSqliteWrites(sequelize, storage);
		return sequelize;
	}
	if (databaseUrl.startsWith("mysql:") || databaseUrl.startsWith("mariadb:")) {
		return new Sequelize(databaseUrl.replace(/^mariadb:/, "mysql:"), {
			...common,
			dialect: "mysql",
			timezone: "+00:00",
			// mysql2 returns DECIMAL as strings; keep it that way (money never becomes a JS number).
			// maxPreparedStatements: see MYSQL_MAX_PREPARED_STATEMENTS. A database that does not answer
			// costs a request seconds, not half a minute: connecting gives up after 5 s (503 at the
			// gateway). Waiting for a pooled connection is queueing under load, not an outage (a pool
			// whose connections wait on one hot row's lock): it may take 20 s, most of a call's 30 s.
			dialectOptions: { decimalNumbers: false, supportBigNumbers: true, bigNumberStrings: true, dateStrings: false, maxPreparedStatements: MYSQL_MAX_PREPARED_STATEMENTS, connectTimeout: 5000 },
			pool: { max: 20, min: 0, idle: 10000, acquire: 20000 },
		});
	}
	throw new Error(`Configuration: DATABASE_URL must start with mysql:// or sqlite:, got "${databaseUrl.split(":")[0]}:"`);
}

export async function prepareSqlite(sequelize: Sequelize): Promise<void> {
	if (sequelize.getDialect() !== "sqlite") return;
	// WAL (kept in the file): reads proceed beside the one writer. busy_timeout and foreign keys are
	// set on every connection as it opens (lib/sqlite-writer.ts).
	await sequelize.query("PRAGMA journal_mode = WAL");
}

export function migrator(sequelize: Sequelize): Umzug<ReturnType<Sequelize["getQueryInterface"]>> {
	return new Umzug({
		migrations: migrations.map(m => ({ name: m.name, up: m.up, down: m.down })),
		context: sequelize.getQueryInterface(),
		storage: new SequelizeStorage({ sequelize, tableName: "schema_migrations" }),
		logger: undefined,
	});
}

export async function runMigrations(sequelize: Sequelize): Promise<string[]> {
	await prepareSqlite(sequelize);
	const umzug = migrator(sequelize);
	if (sequelize.getDialect() !== "mysql") {
		return (await umzug.up()).map(m => m.name);
	}
	// GET_LOCK is held by one pooled connection while the migrations run on others.
	const cm = sequelize.connectionManager as unknown as {
		getConnection(o: object): Promise<{ query: (sql: string, cb: (e: Error | null, r: unknown) => void) => void }>;
		releaseConnection(c: unknown): Promise<void>;
	};
	const conn = await cm.getConnection({ type: "write" });
	const q = (sql: string) => new Promise<unknown>((resolve, reject) => conn.query(sql, (e, r) => (e ? reject(e) : resolve(r))));
	try {
		const rows = (await q("SELECT GET_LOCK('cpg_migrations', 120) AS ok")) as Array<{ ok: number }>;
		if (!rows[0] || Number(rows[0].ok) !== 1) throw new Error("Could not obtain the migration lock within 120 s");
		return (await umzug.up()).map(m => m.name);
	} finally {
		await q("SELECT RELEASE_LOCK('cpg_migrations')").catch(() => undefined);
		await cm.releaseConnection(conn);
	}
}

/** InnoDB deadlock / lock wait timeout: the transaction was rolled back and may simply run again. */
export function isLockConflict(err: unknown): boolean {
	const parent = (err as { parent?: { errno?: number; code?: string } })?.parent;
	return parent?.errno === 1213 || parent?.errno === 1205 || parent?.code === "ER_LOCK_DEADLOCK" || parent?.code === "ER_LOCK_WAIT_TIMEOUT";
}

/**
 * Runs `fn` in a DB transaction. A deadlock victim (MySQL) or a failure `retryOn` accepts runs
 * once more from the start, up to `attempts` times: InnoDB documents that the application
 * should simply re-run a transaction it rolled back for a deadlock.
 */
export async function inTransaction<T>(sequelize: Sequelize, fn: (t: Transaction) => Promise<T>, opts: TransactionOptions = {}): Promise<T> {
	const readCommitted = opts.isolation === "readCommitted" && sequelize.getDialect() === "mysql";
	return withRetries(() => (readCommitted ? sequelize.transaction({ isolationLevel: Transaction.ISOLATION_LEVELS.READ_COMMITTED }, fn) : sequelize.transaction(fn)), opts);
}

type RetryOptions = { attempts?: number; retryOn?: (err: unknown) => boolean };
/**
 * `isolation: "readCommitted"`: on MySQL the transaction runs at READ COMMITTED (`SET TRANSACTION
 * ISOLATION LEVEL`, for that one transaction), where InnoDB's locking reads lock the rows they
 * return and no gaps. Only for transactions whose guarantees all come from row locks and unique
 * keys (docs/payments.md, "Isolation"). SQLite ignores it (its writers are serialised).
 */
export type TransactionOptions = RetryOptions & { isolation?: "readCommitted" };

/** Transactions run again after a deadlock or lock wait timeout, since the process started (tests, diagnostics). */
export const lockConflictRetries = { count: 0 };

async function withRetries<T>(run: () => Promise<T>, opts: RetryOptions): Promise<T> {
	const attempts = opts.attempts ?? 3;
	for (let attempt = 1; ; attempt++) {
		try {
			return await run();
		} catch (err) {
			const conflict = isLockConflict(err);
			if (attempt >= attempts || !(conflict || opts.retryOn?.(err))) throw err;
			if (conflict) lockConflictRetries.count++;
		}
	}
}

export type DriverError = Error & { sql?: string; errno?: number };
interface DriverConnection {
	query(sql: string, callback: (err: DriverError | null) => void): unknown;
}
interface TransactionSql {
	startTransactionQuery(t: Transaction): string;
	commitTransactionQuery(t: Transaction): string;
	rollbackTransactionQuery(t: Transaction): string;
}
type SequelizeInternals = {
	getQueryInterface(): { queryGenerator: TransactionSql };
	dialect: { Query: new (connection: unknown, sequelize: Sequelize, options: object) => { formatError(err: DriverError, stack?: string): Error } };
};
type TransactionInternals = Transaction & {
	connection: DriverConnection & { uuid?: string };
	finished?: string;
	_afterCommitHooks: Array<(t: Transaction) => unknown>;
	prepareEnvironment(useCls: boolean): Promise<unknown>;
	cleanup(): void;
	forceCleanup(): Promise<void>;
};

/**
 * A driver error of a statement sent past sequelize.query, as sequelize.query would throw it: the
 * dialect's own formatError (a duplicate key is a UniqueConstraintError, a deadlock a
 * DatabaseError whose `parent.errno` is 1213), so callers see the same errors.
 */
export function sequelizeError(sequelize: Sequelize, connection: unknown, err: DriverError, sql: string, transaction?: Transaction): Error {
	err.sql = sql;
	const Query = (sequelize as unknown as SequelizeInternals).dialect.Query;
	return new Query(connection, sequelize, transaction ? { transaction } : {}).formatError(err, new Error().stack);
}

/** One statement of the transaction's control (START / COMMIT / ROLLBACK) straight on its connection. */
function controlStatement(sequelize: Sequelize, t: TransactionInternals, sql: string): Promise<void> {
	return new Promise((resolve, reject) => t.connection.query(sql, err => (err ? reject(sequelizeError(sequelize, t.connection, err, sql, t)) : resolve())));
}

/**
 * A Sequelize transaction (the same Transaction object: model calls and lib/payments/rows.ts run
 * in it as in any other) whose START TRANSACTION, COMMIT and ROLLBACK go to its mysql2
 * connection directly: through sequelize.query they cost about 60 us of CPU a transaction
 * (bench/orm-micro.ts, docs/benchmarks.md), on the hot POST /payment_intents. The statements are
 * Sequelize's own (its query generator); connection handling, clean-up after a failed COMMIT
 * (the connection is destroyed, its state unknown) and after-commit hooks are as in
 * Transaction.commit / rollback. Other dialects: sequelize.transaction.
 */
async function driverTransaction<T>(sequelize: Sequelize, fn: (t: Transaction) => Promise<T>): Promise<T> {
	if (sequelize.getDialect() !== "mysql") return sequelize.transaction(fn);
	const sql = (sequelize as unknown as SequelizeInternals).getQueryInterface().queryGenerator;
	const t = new Transaction(sequelize, {}) as TransactionInternals;
	// Acquires the connection and runs begin(), replaced here by the driver's START TRANSACTION.
	(t as unknown as { begin(): Promise<void> }).begin = () => controlStatement(sequelize, t, sql.startTransactionQuery(t));
	await t.prepareEnvironment(false);
	let result: T;
	try {
		result = await fn(t);
	} catch (err) {
		if (!t.finished) {
			try {
				await controlStatement(sequelize, t, sql.rollbackTransactionQuery(t));
				t.cleanup();
			} catch {
				await t.forceCleanup().catch(() => undefined);
			}
			t.finished = "rollback";
		}
		throw err;
	}
	if (t.finished) throw new Error(`Transaction cannot be committed because it has been finished with state: ${t.finished}`);
	try {
		await controlStatement(sequelize, t, sql.commitTransactionQuery(t));
		t.cleanup();
	} catch (err) {
		// Committed or not is unknown: the connection goes (as Transaction.commit does).
		await t.forceCleanup().catch(() => undefined);
		throw err;
	} finally {
		t.finished = "commit";
	}
	for (const hook of t._afterCommitHooks) await hook.call(t, t);
	return result;
}

/**
 * inTransaction for hot paths on MySQL: the same retries, with the transaction's own START /
 * COMMIT / ROLLBACK sent through the driver (driverTransaction above).
 */
export async function inDriverTransaction<T>(sequelize: Sequelize, fn: (t: Transaction) => Promise<T>, opts: RetryOptions = {}): Promise<T> {
	return withRetries(() => driverTransaction(sequelize, fn), opts);
}

/** Sequelize's errors for "no connection to the database" (by name: they keep it across the transporter). */
const UNREACHABLE_ERRORS = new Set([
	"SequelizeConnectionError",
	"SequelizeConnectionRefusedError",
	"SequelizeConnectionTimedOutError",
	"SequelizeConnectionAcquireTimeoutError",
	"SequelizeHostNotFoundError",
	"SequelizeHostNotReachableError",
	"SequelizeInvalidConnectionError",
]);
/** Driver codes of a connection lost under a query (Sequelize reports those as a DatabaseError). */
const LOST_CONNECTION_CODES = new Set(["PROTOCOL_CONNECTION_LOST", "ECONNRESET", "ECONNREFUSED", "EPIPE", "ETIMEDOUT", "PROTOCOL_SEQUENCE_TIMEOUT"]);

/** The database could not be reached (down, restarting, network cut): a transient failure, not a bug. */
export function isDatabaseUnreachable(err: unknown): boolean {
	const e = err as { name?: unknown; parent?: { code?: unknown }; original?: { code?: unknown } } | null;
	if (!e || typeof e !== "object") return false;
	if (typeof e.name === "string" && UNREACHABLE_ERRORS.has(e.name)) return true;
	const code = e.parent?.code ?? e.original?.code;
	return typeof code === "string" && LOST_CONNECTION_CODES.has(code);
}
