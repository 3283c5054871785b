/**
 * Plain statements for the delivery hot path (claims, outcomes, log rows, relayed deliveries),
 * without the ORM's per-row work (instance building, `Model.set` per attribute, query building):
 * docs/benchmarks.md "Webhook delivery" measured Sequelize at about half of the gateway's CPU per
 * delivered event. Statements are written with `?` placeholders; an array value is an IN list.
 *
 * - MySQL: Sequelize's replacements (escaped into the text, the text protocol): no prepared
 *   statement per distinct id-list length, which mysql2 would prepare and close again and again.
 *   Dates go as UTC strings with milliseconds (the connection's time zone is +00:00): Sequelize
 *   would escape a Date to whole seconds.
 * - SQLite: bound parameters (`$n`), dates as the string the dialect's DATE type writes (so the
 *   string comparisons of `nextAttemptAt <= ?` hold): escaping inlined into SQL text cannot carry
 *   every string there (a NUL byte cuts the statement short), and a response body can hold one.
 */
import { QueryTypes, type Sequelize, type Transaction } from "sequelize";

export type SqlValue = string | number | boolean | null | Date;

/** The DATE(3) string SQLite rows hold (Sequelize writes them with the +00:00 offset). */
function sqliteDate(d: Date): string {
	return `${d.toISOString().slice(0, 23).replace("T", " ")} +00:00`;
}

/** A DATETIME(3) literal in UTC. */
function mysqlValue(v: SqlValue | SqlValue[]): SqlValue | SqlValue[] {
	if (v instanceof Date) return v.toISOString().slice(0, 23).replace("T", " ");
	if (Array.isArray(v)) {
		if (v.length === 0) throw new Error("SQL: empty IN list");
		return v.map(x => mysqlValue(x) as SqlValue);
	}
	return v;
}

function sqliteValue(v: SqlValue): string | number | null {
	if (v instanceof Date) return sqliteDate(v);
	if (typeof v === "boolean") return v ? 1 : 0;
	return v;
}

/** SQLite: `?` → `$n`, IN lists flattened, values converted. */
function sqliteBind(sql: string, values: Array<SqlValue | SqlValue[]>): { sql: string; bind: Array<string | number | null> } {
	const bind: Array<string | number | null> = [];
	let i = 0;
	const text = sql.replace(/\?/g, () => {
		const v = values[i++];
		if (v === undefined) throw new Error(`SQL: fewer values than placeholders in ${sql.slice(0, 80)}`);
		if (Array.isArray(v)) {
			if (v.length === 0) throw new Error("SQL: empty IN list");
			return v.map(x => `$${bind.push(sqliteValue(x))}`).join(", ");
		}
		return `$${bind.push(sqliteValue(v))}`;
	});
	if (i !== values.length) throw new Error(`SQL: more values than placeholders in ${sql.slice(0, 80)}`);
	return { sql: text, bind };
}

function options(sequelize: Sequelize, sql: string, values: Array<SqlValue | SqlValue[]>, type: QueryTypes, transaction?: Transaction) {
	if (sequelize.getDialect() === "sqlite") {
		const b = sqliteBind(sql, values);
		return { sql: b.sql, opts: { bind: b.bind, type, transaction, raw: true } };
	}
	return { sql, opts: { replacements: values.map(mysqlValue), type, transaction, raw: true } };
}

/** Rows of a SELECT, as plain objects. */
export async function selectRows<T>(sequelize: Sequelize, sql: string, values: Array<SqlValue | SqlValue[]>, transaction?: Transaction): Promise<T[]> {
	const q = options(sequelize, sql, values, QueryTypes.SELECT, transaction);
	return (await sequelize.query(q.sql, q.opts)) as unknown as T[];
}

/** An UPDATE (or DELETE): the rows it changed. */
export async function changeRows(sequelize: Sequelize, sql: string, values: Array<SqlValue | SqlValue[]>, transaction?: Transaction): Promise<number> {
	const q = options(sequelize, sql, values, QueryTypes.BULKUPDATE, transaction);
	return Number(await sequelize.query(q.sql, q.opts));
}

/** Rows per multi-row INSERT: SQLite binds at most 32,766 parameters a statement (older builds 999). */
function rowsPerInsert(sequelize: Sequelize, columns: number): number {
	return sequelize.getDialect() === "sqlite" ? Math.max(1, Math.floor(900 / columns)) : 500;
}

/** Multi-row INSERT of `rows` (each the values of `columns`, in order), in as few statements as the dialect allows. */
export async function insertRows(sequelize: Sequelize, table: string, columns: readonly string[], rows: SqlValue[][], transaction?: Transaction): Promise<void> {
	const per = rowsPerInsert(sequelize, columns.length);
	const head = `INSERT INTO ${table} (${columns.map(c => `\`${c}\``).join(", ")}) VALUES `;
	const tuple = `(${columns.map(() => "?").join(", ")})`;
	for (let from = 0; from < rows.length; from += per) {
		const chunk = rows.slice(from, from + per);
		for (const r of chunk) if (r.length !== columns.length) throw new Error(`SQL: a row of ${table} has ${r.length} values for ${columns.length} columns`);
		const q = options(sequelize, head + chunk.map(() => tuple).join(", "), chunk.flat(), QueryTypes.INSERT, transaction);
		await sequelize.query(q.sql, q.opts);
	}
}
