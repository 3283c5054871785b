/**
 * lib/db.ts createSequelize on MySQL: a connection keeps a bounded number of prepared statements.
 * Sequelize inlines `Op.in` lists into the SQL, so every `UPDATE ... WHERE id IN (<ids>)` of other
 * rows (the watcher's markReported, one per transfer) is a new statement text; mysql2 prepares and caches each one (16,000 a connection by default) and
 * MariaDB refuses new ones past max_prepared_stmt_count (16,382 for the whole server). The
 * watcher bench hit that after ~30,000 credits: every statement failed, the watcher lost its lease.
 */
import crypto from "node:crypto";
import mysql from "mysql2/promise";
import { DataTypes, Model, Op } from "sequelize";
import { createSequelize, MYSQL_MAX_PREPARED_STATEMENTS } from "../../lib/db";
import { BACKEND } from "../helpers/harness";

const MYSQL_URL = (process.env.TEST_MYSQL_URL || "mysql://root@127.0.0.1:3306").replace(/\/+$/, "");

(BACKEND === "mysql" ? describe : describe.skip)("createSequelize on MySQL", () => {
	const name = `cpg_test_${crypto.randomBytes(6).toString("hex")}`;

	beforeAll(async () => {
		const conn = await mysql.createConnection(MYSQL_URL);
		await conn.query(`CREATE DATABASE \`${name}\``);
		await conn.end();
	});

	afterAll(async () => {
		const conn = await mysql.createConnection(MYSQL_URL);
		await conn.query(`DROP DATABASE IF EXISTS \`${name}\``);
		await conn.end();
	});

	it("keeps at most MYSQL_MAX_PREPARED_STATEMENTS statements prepared on a connection, however many distinct `IN (...)` updates run", async () => {
		const sequelize = createSequelize(`${MYSQL_URL}/${name}`);
		class Row extends Model {
			declare id: number;
			declare n: number;
		}
		Row.init({ id: { type: DataTypes.INTEGER, primaryKey: true }, n: { type: DataTypes.INTEGER, allowNull: false } }, { sequelize, tableName: "rows", timestamps: false });
		try {
			await Row.sync();
			const count = MYSQL_MAX_PREPARED_STATEMENTS + 150;
			await Row.bulkCreate(Array.from({ length: count }, (_, i) => ({ id: i + 1, n: 0 })));
			// One connection, so every statement lands in the same cache.
			await sequelize.transaction(async transaction => {
				for (let i = 1; i <= count; i++) await Row.update({ n: 1 }, { where: { id: { [Op.in]: [i] } }, transaction });
				const conn = (transaction as unknown as { connection: { _statements: { size: number } } }).connection;
				expect(conn._statements.size).toBeLessThanOrEqual(MYSQL_MAX_PREPARED_STATEMENTS);
			});
			expect(await Row.count({ where: { n: 1 } })).toBe(count);
		} finally {
			await sequelize.close();
		}
	});
});
