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
export async function inTransaction<T>(sequelize: Sequelize, fn: (t: Transaction) => Promise<T>, opts: { attempts?: number; retryOn?: (err: unknown) => boolean } = {}): Promise<T> {
	const attempts = opts.attempts ?? 3;
	for (let attempt = 1; ; attempt++) {
		try {
			return await sequelize.transaction(fn);
		} catch (err) {
			if (attempt >= attempts || !(isLockConflict(err) || opts.retryOn?.(err))) throw err;
		}
	}
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
