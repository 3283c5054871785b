/**
 * Micro-benchmark behind docs/benchmarks.md "What was changed": CPU per operation of the ways to
 * write an intent and its link, and to read an intent, through the real models on a fresh MySQL
 * database (dropped at the end). Sequential on one process, several rounds so the JIT is warm;
 * compare within a round. Run: `npm run build && node dist/bench/orm-micro.js`, or from source
 * `node -r ./test/helpers/ts-register.js bench/orm-micro.ts`.
 */
import crypto from "node:crypto";
import mysqlCallback from "mysql2";
import mysql from "mysql2/promise";
import { QueryTypes, Sequelize } from "sequelize";
import { createSequelize, inDriverTransaction, runMigrations } from "../lib/db";
import { insertRow, selectOne, selectRow } from "../lib/payments/rows";
import { INTENT_GET_ATTRIBUTES } from "../lib/payments/views";
import { defineModels, Models } from "../models";

const MYSQL_URL = (process.env.BENCH_MYSQL_URL || "mysql://root@127.0.0.1:3306").replace(/\/+$/, "");
const ROUNDS = Number(process.env.BENCH_ROUNDS || 3);
const OPS = Number(process.env.BENCH_OPS || 400);

function rows(org: string, token: string, network: string) {
	const id = crypto.randomUUID();
	const linkId = crypto.randomUUID();
	const now = new Date();
	const link = {
		id: linkId, organizationId: org, mode: "sandbox" as const, intentId: id, ownedByIntent: true, slug: `pl_${crypto.randomBytes(12).toString("hex")}`,
		title: "Order 1234", amount: "12.5", tokenId: token, networkId: network, status: "active" as const, expiresAt: null, metadata: { orderId: "1234" },
		withdrawalAddresses: null, singleUse: true, payerEmail: null, payerAddress: null, createdByUserId: null, createdAt: now, updatedAt: now, deletedAt: null,
	};
	const intent = {
		id, organizationId: org, apiKeyId: 1, mode: "sandbox" as const, amount: "12.5", currency: "usdc", tokenAmount: "12.5", currencyRateId: null, amountUsd: null,
		rate: null, tokenId: token, networkId: network, status: "requires_payment_method" as const, paymentMethodTypes: ["crypto"], clientSecretDigest: "0".repeat(64),
		returnUrl: "https://merchant.example.com/return", cancelUrl: null, description: "Order 1234", metadata: { orderId: "1234" }, expiresAt: null,
		withdrawalAddresses: null, paymentLinkId: linkId, latestTransactionId: null, cancellationReason: null, canceledAt: null, succeededAt: null, reversal: null, createdAt: now, updatedAt: now,
	};
	return { link, intent };
}

/** Plain INSERT of a row object (JSON columns serialised as the models' setters do). */
async function rawInsert(sequelize: Sequelize, table: string, row: Record<string, unknown>, transaction: unknown): Promise<void> {
	const cols = Object.keys(row);
	const values = cols.map(k => {
		const v = row[k];
		return v !== null && typeof v === "object" && !(v instanceof Date) ? JSON.stringify(v) : v;
	});
	await sequelize.query(`INSERT INTO ${table} (${cols.map(c => `\`${c}\``).join(",")}) VALUES (${cols.map(() => "?").join(",")})`, {
		replacements: values,
		transaction: transaction as never,
		type: QueryTypes.INSERT,
	});
}

async function measure(name: string, op: (i: number) => Promise<unknown>): Promise<void> {
	for (let i = 0; i < 50; i++) await op(i);
	const c0 = process.cpuUsage();
	const t0 = process.hrtime.bigint();
	for (let i = 0; i < OPS; i++) await op(i);
	const c = process.cpuUsage(c0);
	const wall = Number(process.hrtime.bigint() - t0) / 1e3 / OPS;
	console.log(`  ${name.padEnd(62)} ${((c.user + c.system) / OPS).toFixed(0).padStart(5)} us CPU/op ${wall.toFixed(0).padStart(6)} us wall/op`);
}

async function main(): Promise<void> {
	const db = `cpg_bench_orm_${crypto.randomBytes(4).toString("hex")}`;
	const admin = await mysql.createConnection(MYSQL_URL);
	await admin.query(`CREATE DATABASE \`${db}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
	const sequelize = createSequelize(`${MYSQL_URL}/${db}`);
	const closers: Array<() => Promise<void>> = [];
	try {
		await runMigrations(sequelize);
		const models: Models = defineModels(sequelize);
		const org = crypto.randomUUID();
		const token = crypto.randomUUID();
		const network = crypto.randomUUID();
		const fast = { validate: false, hooks: false };
		// The driver Sequelize uses, on the same database: the floor of a statement.
		const raw = mysqlCallback.createConnection(`${MYSQL_URL}/${db}`);
		const rawRun = (sql: string) => new Promise<void>((resolve, reject) => raw.query(sql, err => (err ? reject(err) : resolve())));
		closers.push(() => new Promise<void>(resolve => raw.end(() => resolve())));
		for (let round = 1; round <= ROUNDS; round++) {
			console.log(`round ${round} of ${ROUNDS}, ${OPS} operations each`);
			await measure("empty sequelize.transaction()", () => sequelize.transaction(async () => undefined));
			await measure("empty inDriverTransaction() (lib/db.ts, create now)", () => inDriverTransaction(sequelize, async () => undefined));
			await measure("START TRANSACTION + COMMIT on a raw mysql2 connection (callback API)", async () => {
				await rawRun("START TRANSACTION");
				await rawRun("COMMIT");
			});
			await measure("link + intent: Model.create in a transaction (before)", () => {
				const r = rows(org, token, network);
				return sequelize.transaction(async t => {
					await models.PaymentLink.create(r.link, { transaction: t });
					await models.PaymentIntent.create(r.intent, { transaction: t });
				});
			});
			await measure("link + intent: Model.create { validate: false, hooks: false }", () => {
				const r = rows(org, token, network);
				return sequelize.transaction(async t => {
					await models.PaymentLink.create(r.link, { transaction: t, ...fast });
					await models.PaymentIntent.create(r.intent, { transaction: t, ...fast });
				});
			});
			await measure("link + intent: sequelize.query INSERT", () => {
				const r = rows(org, token, network);
				return sequelize.transaction(async t => {
					await rawInsert(sequelize, "payment_links", r.link, t);
					await rawInsert(sequelize, "payment_intents", r.intent, t);
				});
			});
			await measure("link + intent: insertRow in sequelize.transaction (create before)", () => {
				const r = rows(org, token, network);
				return sequelize.transaction(async t => {
					await insertRow(models.PaymentLink, r.link, t);
					await insertRow(models.PaymentIntent, r.intent, t);
				});
			});
			await measure("link + intent: insertRow in inDriverTransaction (create now)", () => {
				const r = rows(org, token, network);
				return inDriverTransaction(sequelize, async t => {
					await insertRow(models.PaymentLink, r.link, t);
					await insertRow(models.PaymentIntent, r.intent, t);
				});
			});
			const ids = (await models.PaymentIntent.findAll({ attributes: ["id"], where: { organizationId: org }, limit: 100 })).map(r => r.id);
			const idOf = (i: number) => ids[i % ids.length];
			const sql = "SELECT * FROM payment_intents WHERE id = ? AND organizationId = ? LIMIT 1";
			await measure("read intent: findOne({ where }) (findOwn before)", i => models.PaymentIntent.findOne({ where: { id: idOf(i), organizationId: org } }));
			await measure("read intent: findOne({ where, raw: true })", i => models.PaymentIntent.findOne({ where: { id: idOf(i), organizationId: org }, raw: true }));
			await measure("read intent: sequelize.query(sql, { model, mapToModel })", i =>
				sequelize.query(sql, { replacements: [idOf(i), org], model: models.PaymentIntent, mapToModel: true }),
			);
			await measure("read intent: selectOne (lib/payments/rows.ts, findOwn; GET before)", i => selectOne(models.PaymentIntent, { id: idOf(i), organizationId: org }));
			await measure("read intent: selectRow, every column (GET before)", i => selectRow(models.PaymentIntent, { id: idOf(i), organizationId: org }));
			await measure("read intent: selectRow, GET's 11 columns (GET now)", i => selectRow(models.PaymentIntent, { id: idOf(i), organizationId: org }, INTENT_GET_ATTRIBUTES));
			await measure("read intent: SELECT * on a raw mysql2 connection (execute, floor-select's read)", i =>
				new Promise((resolve, reject) => raw.execute(sql, [idOf(i), org], (err, r) => (err ? reject(err) : resolve(r)))),
			);
		}
	} finally {
		for (const close of closers) await close().catch(() => undefined);
		await sequelize.close().catch(() => undefined);
		await admin.query(`DROP DATABASE IF EXISTS \`${db}\``);
		await admin.end();
	}
}

main().catch(err => {
	console.error(`orm-micro failed: ${err instanceof Error ? err.message : String(err)}`);
	process.exit(1);
});
