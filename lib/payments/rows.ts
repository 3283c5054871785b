/**
 * Single-row SQL for the payments hot paths (POST and GET /payment_intents), without the ORM's
 * per-row work (instance building, per-attribute `set`, DataType validation, query generation,
 * option cloning): docs/benchmarks.md measured Model.create / findOne at several times the cost
 * of the statement itself.
 *
 * Nothing about a table is written twice: the column list, column names and value conversions
 * come from the model's own attribute definitions (`getAttributes()`). Every value goes through the
 * attribute's setter, as Model.create does (money -> canonical decimal string, JSON -> text), and
 * is sent as a bound parameter, never written into the statement: escaping inlined into SQL text
 * cannot carry every string (a NUL byte cut SQLite's statement short). Dates are bound as the
 * string the dialect's DATE type writes. A column of the model without a value is an error, never
 * a silent NULL, so a column added to a model cannot be forgotten here.
 */
import type { Attributes, Model, ModelStatic, Sequelize, Transaction } from "sequelize";
import { QueryTypes } from "sequelize";
import { sequelizeError, type DriverError } from "../db";

type Setter = (this: { setDataValue(key: string, value: unknown): void }, value: unknown) => void;
type Getter = (this: { getDataValue(key: string): unknown }) => unknown;

interface Column {
	/** The model's attribute name. */
	name: string;
	set?: Setter;
	get?: Getter;
	/** For DATE columns: the dialect's string for a Date. */
	date?: (d: Date) => string;
}

interface Plan {
	columns: Column[];
	/** `INSERT INTO t (cols) VALUES ($1,...,$n)`: Sequelize's `bind` placeholders. */
	insertSql: string;
	/** The same with `?` placeholders: mysql2's `execute` (a prepared statement, cached per connection). */
	insertSqlPositional: string;
	/** `SELECT <the model's columns> FROM t WHERE ` */
	selectHead: string;
	/** Attribute name -> quoted column name. */
	fieldOf: Map<string, string>;
	/** Attribute name -> the quoted attribute name (the alias a column read under another field name gets). */
	quotedName: Map<string, string>;
	/** The quoted table name. */
	table: string;
}

const plans = new WeakMap<ModelStatic<Model>, Plan>();

interface DateType {
	key?: string;
	stringify(value: unknown, options: { timezone?: string }): string;
}

/**
 * The dialect's DATE string for a Date (what Model.create writes). With the UTC offset both our
 * dialects use, it is built from toISOString (the ORM goes through moment for every date); the
 * shape is checked once against the DataType itself, and anything else uses the DataType.
 */
function dateWriter(type: DateType, timezone: string | undefined): (d: Date) => string {
	const exact = (d: Date) => type.stringify(d, { timezone });
	if (timezone !== "+00:00") return exact;
	const probe = new Date(Date.UTC(2001, 1, 3, 4, 5, 6, 789));
	const expected = exact(probe);
	for (const length of [23, 19]) {
		const head = probe.toISOString().slice(0, length).replace("T", " ");
		if (!expected.startsWith(head) || (length === 19 && expected[19] === ".")) continue;
		const tail = expected.slice(length);
		return d => {
			const year = d.getUTCFullYear();
			// toISOString writes other years as +YYYYYY: leave those to the DataType.
			if (!(year >= 1000 && year <= 9999)) return exact(d);
			return d.toISOString().slice(0, length).replace("T", " ") + tail;
		};
	}
	return exact;
}

function planOf(model: ModelStatic<Model>): Plan {
	let plan = plans.get(model);
	if (plan) return plan;
	const sequelize = model.sequelize as Sequelize;
	const qg = (sequelize.getQueryInterface() as unknown as { queryGenerator: { quoteIdentifier(s: string): string; quoteTable(t: unknown): string } }).queryGenerator;
	const timezone = (sequelize as unknown as { options: { timezone?: string } }).options.timezone;
	const columns: Column[] = [];
	const fieldOf = new Map<string, string>();
	const quotedName = new Map<string, string>();
	const selected: string[] = [];
	for (const [name, attr] of Object.entries(model.getAttributes())) {
		const field = attr.field ?? name;
		fieldOf.set(name, qg.quoteIdentifier(field));
		quotedName.set(name, qg.quoteIdentifier(name));
		selected.push(field === name ? qg.quoteIdentifier(field) : `${qg.quoteIdentifier(field)} AS ${qg.quoteIdentifier(name)}`);
		const type = attr.type as unknown as DateType;
		columns.push({
			name,
			set: attr.set as Setter | undefined,
			get: attr.get as Getter | undefined,
			date: type?.key === "DATE" ? dateWriter(type, timezone) : undefined,
		});
	}
	const table = qg.quoteTable(model.getTableName());
	const insertHead = `INSERT INTO ${table} (${columns.map(c => fieldOf.get(c.name)).join(",")}) VALUES (`;
	plan = {
		columns,
		insertSql: `${insertHead}${columns.map((_, i) => `$${i + 1}`).join(",")})`,
		insertSqlPositional: `${insertHead}${columns.map(() => "?").join(",")})`,
		selectHead: `SELECT ${selected.join(",")} FROM ${table} WHERE `,
		fieldOf,
		quotedName,
		table,
	};
	plans.set(model, plan);
	return plan;
}

/** What the attribute's setter stores for `value` (the value itself without a setter). */
function stored(column: Column, value: unknown): unknown {
	if (!column.set) return value;
	let out: unknown = value;
	column.set.call({ setDataValue: (_key, v) => (out = v) }, value);
	return out;
}

/** What a read of the stored value gives (the attribute's getter applied). */
function readBack(column: Column, value: unknown): unknown {
	return column.get ? column.get.call({ getDataValue: () => value }) : value;
}

/**
 * INSERTs one row of `model` with every column of the model, in `transaction`. Answers the row as
 * a read of it would (the model's getters applied to what was stored: canonical money strings,
 * parsed JSON), for building the response.
 */
export async function insertRow<M extends Model>(model: ModelStatic<M>, values: Attributes<M>, transaction: Transaction): Promise<Attributes<M>> {
	const plan = planOf(model as unknown as ModelStatic<Model>);
	const given = values as Record<string, unknown>;
	const bound: unknown[] = [];
	const row: Record<string, unknown> = {};
	for (const column of plan.columns) {
		const value = given[column.name];
		if (value === undefined) throw new Error(`insertRow(${model.name}): no value for column ${column.name}`);
		const s = stored(column, value);
		row[column.name] = readBack(column, s);
		bound.push(s instanceof Date && column.date ? column.date(s) : s);
	}
	await execute(model.sequelize as Sequelize, plan, bound, transaction);
	return row as Attributes<M>;
}

interface Mysql2Connection {
	execute(sql: string, values: unknown[], callback: (err: DriverError | null) => void): unknown;
}

/**
 * Runs the plan's INSERT with `values` bound, in `transaction`. On MySQL it goes straight to the
 * transaction's own mysql2 connection (`execute`, as Sequelize itself runs bound statements):
 * sequelize.query's per-statement work (option merging, the retry wrapper, query hooks, a stack
 * captured for every statement) cost about 20 us a statement (bench/orm-micro.ts). A failure is
 * turned into Sequelize's error classes (lib/db.ts sequelizeError). Other dialects use
 * sequelize.query with `bind`.
 */
async function execute(sequelize: Sequelize, plan: Plan, values: unknown[], transaction: Transaction): Promise<void> {
	const connection = (transaction as unknown as { connection?: Partial<Mysql2Connection> }).connection;
	if (sequelize.getDialect() !== "mysql" || typeof connection?.execute !== "function") {
		await sequelize.query(plan.insertSql, { bind: values, transaction, type: QueryTypes.INSERT, raw: true });
		return;
	}
	const finished = (transaction as unknown as { finished?: string }).finished;
	if (finished) throw new Error(`${finished} has been called on this transaction, you can no longer use it`);
	const conn = connection as Mysql2Connection;
	const sql = plan.insertSqlPositional;
	await new Promise<void>((resolve, reject) =>
		conn.execute(sql, values, err => {
			if (!err) return resolve();
			reject(sequelizeError(sequelize, conn, err, sql, transaction));
		}),
	);
}

/**
 * The one row of `model` matching every `where` column (equality; give the primary key or a
 * unique column), as a model instance with the model's getters, or null. One SELECT ... LIMIT 1.
 */
export async function selectOne<M extends Model>(model: ModelStatic<M>, where: Where<M>, transaction?: Transaction): Promise<M | null> {
	const plan = planOf(model as unknown as ModelStatic<Model>);
	const { sql, bound } = selectStatement(model, plan, where, false);
	const found = await (model.sequelize as Sequelize).query(sql, {
		bind: bound,
		transaction,
		model,
		mapToModel: true,
		type: QueryTypes.SELECT,
	});
	return (found[0] as M | undefined) ?? null;
}

type Where<M extends Model> = Partial<Record<keyof Attributes<M> & string, string | number>>;

/** `<selectHead><field> = ? AND ...  LIMIT 1` with `?` (driver) or `$n` (Sequelize bind) placeholders, and the bound values. */
function selectStatement<M extends Model>(model: ModelStatic<M>, plan: Plan, where: Where<M>, positional: boolean): { sql: string; bound: Array<string | number> } {
	const conditions: string[] = [];
	const bound: Array<string | number> = [];
	for (const [name, value] of Object.entries(where)) {
		const field = plan.fieldOf.get(name);
		if (field === undefined || value === undefined || value === null) throw new Error(`select(${model.name}): bad condition on ${name}`);
		bound.push(value as string | number);
		conditions.push(`${field} = ${positional ? "?" : `$${bound.length}`}`);
	}
	if (conditions.length === 0) throw new Error(`select(${model.name}): no condition`);
	return { sql: `${plan.selectHead}${conditions.join(" AND ")} LIMIT 1`, bound };
}

interface PooledConnections {
	getConnection(options: { type: "read" | "write" }): Promise<{ execute(sql: string, values: unknown[], callback: (err: DriverError | null, rows: unknown) => void): unknown }>;
	releaseConnection(connection: unknown): Promise<void> | void;
}

/** A narrowed SELECT of selectRow: its statement and the columns it reads, per model, where-columns and attributes. */
interface Narrowed {
	sql: string;
	columns: Column[];
}
const narrowed = new WeakMap<ModelStatic<Model>, Map<string, Narrowed>>();

/** `SELECT <attributes> FROM t WHERE <where> = ? ... LIMIT 1` (positional), built once per shape. */
function narrowedSelect(model: ModelStatic<Model>, plan: Plan, whereNames: string[], attributes: readonly string[]): Narrowed {
	let byShape = narrowed.get(model);
	if (!byShape) narrowed.set(model, (byShape = new Map()));
	const key = `${whereNames.join(",")}|${attributes.join(",")}`;
	let found = byShape.get(key);
	if (found) return found;
	const columns = attributes.map(name => {
		const column = plan.columns.find(c => c.name === name);
		if (!column) throw new Error(`selectRow(${model.name}): no attribute ${name}`);
		return column;
	});
	const selected = columns.map(c => (plan.fieldOf.get(c.name) === plan.quotedName.get(c.name) ? plan.fieldOf.get(c.name) : `${plan.fieldOf.get(c.name)} AS ${plan.quotedName.get(c.name)}`));
	const conditions = whereNames.map(name => {
		const field = plan.fieldOf.get(name);
		if (field === undefined) throw new Error(`selectRow(${model.name}): bad condition on ${name}`);
		return `${field} = ?`;
	});
	if (conditions.length === 0) throw new Error(`selectRow(${model.name}): no condition`);
	found = { sql: `SELECT ${selected.join(",")} FROM ${plan.table} WHERE ${conditions.join(" AND ")} LIMIT 1`, columns };
	byShape.set(key, found);
	return found;
}

/**
 * The one row of `model` matching every `where` column, as a plain object of its attributes read
 * through the model's getters (what `instance.get()` gives), or null. For reads that only build a
 * response (GET /payment_intents/:id): no instance is built. `attributes`: only these columns are
 * read (and the row has only these): the server sends, and the driver parses, a column
 * definition and a value per column, so a response that shows a third of a wide row reads a
 * third. On MySQL the prepared statement goes to a connection of Sequelize's own pool through the
 * driver (the pool's type casting, so dates and decimals come back as Sequelize reads them);
 * elsewhere through sequelize.query.
 */
export async function selectRow<M extends Model, K extends keyof Attributes<M> & string = keyof Attributes<M> & string>(
	model: ModelStatic<M>,
	where: Where<M>,
	attributes?: readonly K[],
): Promise<Pick<Attributes<M>, K> | null> {
	const plan = planOf(model as unknown as ModelStatic<Model>);
	const sequelize = model.sequelize as Sequelize;
	if (sequelize.getDialect() !== "mysql") {
		for (const name of attributes ?? []) if (!plan.fieldOf.has(name)) throw new Error(`selectRow(${model.name}): no attribute ${name}`);
		const found = attributes
			? await model.findOne({ where: where as never, attributes: attributes as unknown as string[] })
			: await selectOne(model, where);
		return found ? (found.get() as Pick<Attributes<M>, K>) : null;
	}
	let sql: string;
	let bound: Array<string | number>;
	let columns = plan.columns;
	if (attributes) {
		const names = Object.keys(where);
		bound = [];
		for (const name of names) {
			const value = (where as Record<string, string | number | undefined | null>)[name];
			if (value === undefined || value === null) throw new Error(`selectRow(${model.name}): bad condition on ${name}`);
			bound.push(value);
		}
		const shape = narrowedSelect(model as unknown as ModelStatic<Model>, plan, names, attributes);
		sql = shape.sql;
		columns = shape.columns;
	} else ({ sql, bound } = selectStatement(model, plan, where, true));
	const pool = (sequelize as unknown as { connectionManager: PooledConnections }).connectionManager;
	const conn = await pool.getConnection({ type: "read" });
	let rows: Array<Record<string, unknown>>;
	try {
		rows = await new Promise((resolve, reject) =>
			conn.execute(sql, bound, (err: DriverError | null, result: unknown) => {
				if (!err) return resolve(result as Array<Record<string, unknown>>);
				reject(sequelizeError(sequelize, conn, err, sql));
			}),
		);
	} finally {
		await pool.releaseConnection(conn);
	}
	const raw = rows[0];
	if (!raw) return null;
	const row: Record<string, unknown> = {};
	for (const column of columns) row[column.name] = readBack(column, raw[column.name]);
	return row as Pick<Attributes<M>, K>;
}

// ---------------------------------------------------------------------------------------------
// Multi-row work without model instances (a credit batch: lib/payments/credits.ts)

type Bindable = string | number | boolean | null;
type Condition = Bindable | readonly Bindable[];

interface ColumnType {
	key?: string;
}

/** Attribute name -> whether it is a BOOLEAN / DATE column, and which attribute auto-increments (skipped by insertRows). */
function kindsOf(model: ModelStatic<Model>) {
	const booleans = new Set<string>();
	const dates = new Set<string>();
	let autoIncrement: string | null = null;
	for (const [name, attr] of Object.entries(model.getAttributes())) {
		const key = (attr.type as unknown as ColumnType)?.key;
		if (key === "BOOLEAN") booleans.add(name);
		if (key === "DATE") dates.add(name);
		if (attr.autoIncrement) autoIncrement = name;
	}
	return { booleans, dates, autoIncrement };
}
const kinds = new WeakMap<ModelStatic<Model>, ReturnType<typeof kindsOf>>();
function kindOf(model: ModelStatic<Model>) {
	let k = kinds.get(model);
	if (!k) kinds.set(model, (k = kindsOf(model)));
	return k;
}

/** The value to bind for `column` (its setter applied, a Date as the dialect's DATE string). */
function bindValue(column: Column, value: unknown): unknown {
	const s = stored(column, value);
	return s instanceof Date && column.date ? column.date(s) : s;
}

function dialectOf(model: ModelStatic<Model>): string {
	return (model.sequelize as Sequelize).getDialect();
}

/** MySQL's escape of a string needs no change without one of these (Sequelize's sql-string.js escapes exactly these). */
const NEEDS_ESCAPE = /[\0\n\r\b\t\\'"\x1a]/;

/**
 * A value written into a MySQL statement: what sequelize.escape writes, directly for the common
 * cases (a number; a string with nothing to escape: ids, hashes, amounts, addresses), which a
 * batch of 200 credits writes thousands of; anything else through sequelize.escape.
 */
export function inlineValue(sequelize: Sequelize, value: unknown): string {
	if (typeof value === "string" && !NEEDS_ESCAPE.test(value)) return `'${value}'`;
	if (typeof value === "number") return String(value);
	return sequelize.escape(value as string);
}

/**
 * The values of one multi-row statement. SQLite: bound (`$n`). MySQL: written into the text,
 * escaped by the dialect's escape (which carries every string, NUL included, as \0): a statement
 * whose shape changes with its row count would otherwise be prepared for one use, and the
 * server answers a prepare with one definition packet per parameter (thousands for a batch).
 */
class Values {
	readonly bound: unknown[] = [];
	private readonly inline: boolean;
	constructor(private readonly sequelize: Sequelize) {
		this.inline = sequelize.getDialect() === "mysql";
	}
	mark(value: unknown): string {
		if (this.inline) return inlineValue(this.sequelize, value);
		return `$${this.bound.push(value)}`;
	}
	get options(): { bind?: unknown[] } {
		return this.inline ? {} : { bind: this.bound };
	}
}

const partialPlans = new WeakMap<ModelStatic<Model>, Map<string, Plan>>();

/** The plan of a read of only `columns` of `model` (selectRows' `columns`): its select head and those columns. */
function partialPlan(model: ModelStatic<Model>, columns: readonly string[]): Plan {
	const full = planOf(model);
	const key = columns.join(",");
	let byKey = partialPlans.get(model);
	if (!byKey) partialPlans.set(model, (byKey = new Map()));
	let plan = byKey.get(key);
	if (!plan) {
		const picked = columns.map(name => {
			const column = full.columns.find(c => c.name === name);
			if (!column) throw new Error(`selectRows(${model.name}): no column ${name}`);
			return column;
		});
		const table = full.selectHead.slice(full.selectHead.lastIndexOf(" FROM "));
		plan = { ...full, columns: picked, selectHead: `SELECT ${picked.map(c => `${full.fieldOf.get(c.name)} AS ${model.sequelize!.getQueryInterface().quoteIdentifier(c.name)}`).join(",")}${table}` };
		byKey.set(key, plan);
	}
	return plan;
}

/**
 * Rows of `model` matching every `where` column (equality, or IN for an array), as plain objects
 * the way a read of the model gives them (its getters applied: money through normalizeDecimal,
 * JSON parsed; booleans as booleans, dates as Dates), without building model instances. `lock`:
 * SELECT ... FOR UPDATE on MySQL (SQLite's transactions are IMMEDIATE: writers run one at a time).
 * `after`: also `column > value` (a keyset page, with `orderBy` the same column); `limit`: at most
 * that many rows. `columns`: only these columns are read (and the rows have only them).
 */
export async function selectRows<M extends Model>(
	model: ModelStatic<M>,
	where: Partial<Record<keyof Attributes<M> & string, Condition>>,
	transaction: Transaction | undefined,
	opts: { lock?: boolean; orderBy?: keyof Attributes<M> & string; index?: string; after?: [keyof Attributes<M> & string, number]; limit?: number; columns?: ReadonlyArray<keyof Attributes<M> & string> } = {},
): Promise<Array<Attributes<M>>> {
	const m = model as unknown as ModelStatic<Model>;
	const plan = opts.columns ? partialPlan(m, opts.columns as readonly string[]) : planOf(m);
	const { booleans, dates } = kindOf(m);
	const sequelize = model.sequelize as Sequelize;
	const values = new Values(sequelize);
	const conditions: string[] = [];
	for (const [name, value] of Object.entries(where) as Array<[string, Condition | undefined]>) {
		const field = plan.fieldOf.get(name);
		if (field === undefined || value === undefined) throw new Error(`selectRows(${model.name}): bad condition on ${name}`);
		if (Array.isArray(value)) {
			if (value.length === 0) return [];
			conditions.push(`${field} IN (${value.map(v => values.mark(v)).join(",")})`);
		} else if (value === null) conditions.push(`${field} IS NULL`);
		else conditions.push(`${field} = ${values.mark(value)}`);
	}
	if (opts.after) {
		const [name, value] = opts.after;
		const field = plan.fieldOf.get(name);
		if (field === undefined || !Number.isSafeInteger(value)) throw new Error(`selectRows(${model.name}): bad after on ${name}`);
		conditions.push(`${field} > ${values.mark(value)}`);
	}
	if (conditions.length === 0) throw new Error(`selectRows(${model.name}): no condition`);
	if (opts.limit !== undefined && !(Number.isSafeInteger(opts.limit) && opts.limit > 0)) throw new Error(`selectRows(${model.name}): bad limit`);
	const order = (opts.orderBy ? ` ORDER BY ${plan.fieldOf.get(opts.orderBy)} ASC` : "") + (opts.limit !== undefined ? ` LIMIT ${opts.limit}` : "");
	const lock = opts.lock && dialectOf(m) === "mysql" ? " FOR UPDATE" : "";
	// `index` (MySQL): the locking read goes through that index whatever the optimizer estimates (a
	// scan of PRIMARY, chosen for ORDER BY id on a small table, would wait on every row it passes).
	const head = opts.index && dialectOf(m) === "mysql" ? `${plan.selectHead.slice(0, -" WHERE ".length)} FORCE INDEX (${sequelize.getQueryInterface().quoteIdentifier(opts.index)}) WHERE ` : plan.selectHead;
	const found = (await sequelize.query(`${head}${conditions.join(" AND ")}${order}${lock}`, { ...values.options, transaction, type: QueryTypes.SELECT, raw: true })) as Array<Record<string, unknown>>;
	const timezone = (sequelize as unknown as { options: { timezone?: string } }).options.timezone ?? "+00:00";
	return found.map(raw => {
		const row: Record<string, unknown> = {};
		for (const column of plan.columns) {
			let value = raw[column.name];
			if (value !== null && value !== undefined) {
				// SQLite hands back its DATE text and 0/1 (as Sequelize's SQLite DATE parser reads them); MySQL's driver Dates.
				if (dates.has(column.name) && typeof value === "string") value = new Date(value.includes("+") ? value : value + timezone);
				else if (booleans.has(column.name) && typeof value !== "boolean") value = Number(value) !== 0;
			}
			row[column.name] = readBack(column, value);
		}
		return row as Attributes<M>;
	});
}

/**
 * INSERTs `rows` of `model` in one statement, every column bound (setters applied, as
 * Model.bulkCreate writes them). A column a row leaves undefined takes the attribute's default,
 * else NULL when it allows it, else it is an error; an auto-increment key is left to the database.
 * The model's beforeBulkCreate / afterBulkCreate hooks run with the rows, as bulkCreate runs them.
 */
export async function insertRows<M extends Model>(model: ModelStatic<M>, rows: ReadonlyArray<Partial<Attributes<M>>>, transaction: Transaction): Promise<void> {
	if (rows.length === 0) return;
	const m = model as unknown as ModelStatic<Model> & { runHooks(name: string, ...args: unknown[]): Promise<void> };
	const plan = planOf(m);
	// Bound values per statement under SQLite's limit (32,766) and MySQL's (65,535).
	const perStatement = Math.max(1, Math.floor(30_000 / plan.columns.length));
	if (rows.length > perStatement) {
		for (let i = 0; i < rows.length; i += perStatement) await insertRows(model, rows.slice(i, i + perStatement), transaction);
		return;
	}
	const attributes = m.getAttributes() as Record<string, { defaultValue?: unknown; allowNull?: boolean }>;
	const { autoIncrement } = kindOf(m);
	const columns = plan.columns.filter(c => c.name !== autoIncrement);
	const options = { transaction };
	await m.runHooks("beforeBulkCreate", rows, options);
	const values = new Values(m.sequelize as Sequelize);
	const tuples: string[] = [];
	for (const given of rows as ReadonlyArray<Record<string, unknown>>) {
		const marks: string[] = [];
		for (const column of columns) {
			let value = given[column.name];
			if (value === undefined) {
				const attr = attributes[column.name];
				if (attr.defaultValue !== undefined && typeof attr.defaultValue !== "function" && typeof attr.defaultValue !== "object") value = attr.defaultValue;
				else if (attr.allowNull !== false) value = null;
				else throw new Error(`insertRows(${model.name}): no value for column ${column.name}`);
			}
			marks.push(values.mark(bindValue(column, value)));
		}
		tuples.push(`(${marks.join(",")})`);
	}
	const table = (m.sequelize!.getQueryInterface() as unknown as { queryGenerator: { quoteTable(t: unknown): string } }).queryGenerator.quoteTable(m.getTableName());
	const sql = `INSERT INTO ${table} (${columns.map(c => plan.fieldOf.get(c.name)).join(",")}) VALUES ${tuples.join(",")}`;
	await (m.sequelize as Sequelize).query(sql, { ...values.options, transaction, type: QueryTypes.INSERT, raw: true });
	await m.runHooks("afterBulkCreate", rows, options);
}

const requiredOf = new WeakMap<ModelStatic<Model>, Promise<Set<string>>>();

/**
 * MySQL: the quoted names of `model`'s table columns that are NOT NULL without a default (nor
 * auto-increment), as the database's own schema says (the models do not declare nullability),
 * read once per model (its table exists and keeps its columns while the process runs: migrations run first).
 */
function requiredColumns(model: ModelStatic<Model>, transaction: Transaction): Promise<Set<string>> {
	let found = requiredOf.get(model);
	if (!found) {
		const sequelize = model.sequelize as Sequelize;
		const qi = sequelize.getQueryInterface();
		found = sequelize
			.query("SELECT COLUMN_NAME AS name FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND IS_NULLABLE = 'NO' AND COLUMN_DEFAULT IS NULL AND EXTRA NOT LIKE '%auto_increment%'", {
				replacements: [model.getTableName() as string],
				// On the caller's connection: a batch waiting for a free one of the pool could wait on itself.
				transaction,
				type: QueryTypes.SELECT,
				raw: true,
			})
			.then(rows => new Set((rows as Array<{ name: string }>).map(r => qi.quoteIdentifier(r.name))));
		// A failed read is not kept: the next batch asks again.
		found.catch(() => requiredOf.delete(model));
		requiredOf.set(model, found);
	}
	return found;
}

/**
 * UPDATEs `rows` of `model` (plain rows with their primary key `id`, every column read: selectRows)
 * in one statement, each column in `fields` set per row, setters applied. Only for rows the caller
 * holds locked (they exist until its commit). The model's afterBulkCreate hooks run with the rows
 * (what listens to multi-row writes of checkouts: lib/payments/checkout-changes.ts).
 *
 * MySQL: a multi-row `INSERT … ON DUPLICATE KEY UPDATE field = VALUES(field)` of the rows' key,
 * changed fields and NOT NULL columns without a default (requiredColumns), each row found by its key once. `UPDATE … SET field = CASE id WHEN … END` (the first version)
 * compares every row's id with every WHEN under the column's collation: rows x rows x fields
 * comparisons, about 200 us of MariaDB's CPU per checkout row in a batch of 200 (docs/benchmarks.md).
 * SQLite (one writer at a time, binary comparisons): the CASE form.
 */
export async function updateRows<M extends Model>(model: ModelStatic<M>, rows: ReadonlyArray<Attributes<M>>, fields: ReadonlyArray<keyof Attributes<M> & string>, transaction: Transaction): Promise<void> {
	if (rows.length === 0 || fields.length === 0) return;
	const m = model as unknown as ModelStatic<Model> & { runHooks(name: string, ...args: unknown[]): Promise<void> };
	const plan = planOf(m);
	const upsert = dialectOf(m) === "mysql";
	// Bound values per statement under SQLite's limit (32,766) and MySQL's (65,535).
	const perStatement = Math.max(1, Math.floor(30_000 / (upsert ? plan.columns.length : 2 * fields.length + 1)));
	if (rows.length > perStatement) {
		for (let i = 0; i < rows.length; i += perStatement) await updateRows(model, rows.slice(i, i + perStatement), fields, transaction);
		return;
	}
	const idField = plan.fieldOf.get("id");
	if (!idField || m.primaryKeyAttribute !== "id") throw new Error(`updateRows(${model.name}): needs the primary key id`);
	const byName = new Map(plan.columns.map(c => [c.name, c]));
	for (const name of fields) if (!byName.has(name) || name === "id") throw new Error(`updateRows(${model.name}): bad field ${name}`);
	const values = new Values(m.sequelize as Sequelize);
	const table = (m.sequelize!.getQueryInterface() as unknown as { queryGenerator: { quoteTable(t: unknown): string } }).queryGenerator.quoteTable(m.getTableName());
	let sql: string;
	if (upsert) {
		// The key, the changed fields and the columns an INSERT must name (NOT NULL without a default:
		// strict mode refuses the statement without them, though every row exists). Not the whole row:
		// each value is a literal MariaDB parses and stores into the record first (docs/benchmarks.md).
		const required = await requiredColumns(m, transaction);
		const named = new Set<string>(["id", ...fields]);
		const columns = plan.columns.filter(c => named.has(c.name) || required.has(plan.fieldOf.get(c.name)!));
		const tuples = rows.map(r => {
			const row = r as Record<string, unknown>;
			return `(${columns
				.map(column => {
					const value = row[column.name];
					if (value === undefined) throw new Error(`updateRows(${model.name}): the row has no ${column.name} (rows must be read in full)`);
					return values.mark(bindValue(column, value));
				})
				.join(",")})`;
		});
		const updates = fields.map(name => `${plan.fieldOf.get(name)}=VALUES(${plan.fieldOf.get(name)})`);
		sql = `INSERT INTO ${table} (${columns.map(c => plan.fieldOf.get(c.name)).join(",")}) VALUES ${tuples.join(",")} ON DUPLICATE KEY UPDATE ${updates.join(",")}`;
	} else {
		const sets = fields.map(name => {
			const column = byName.get(name)!;
			const field = plan.fieldOf.get(name)!;
			const cases = rows.map(r => {
				const row = r as Record<string, unknown>;
				return `WHEN ${values.mark(row.id)} THEN ${values.mark(bindValue(column, row[name]))}`;
			});
			return `${field} = CASE ${idField} ${cases.join(" ")} ELSE ${field} END`;
		});
		const ids = rows.map(r => values.mark((r as Record<string, unknown>).id));
		sql = `UPDATE ${table} SET ${sets.join(", ")} WHERE ${idField} IN (${ids.join(",")})`;
	}
	await (m.sequelize as Sequelize).query(sql, { ...values.options, transaction, type: upsert ? QueryTypes.INSERT : QueryTypes.UPDATE, raw: true });
	await m.runHooks("afterBulkCreate", rows, { transaction });
}
