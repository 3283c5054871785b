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
import { createSequelize, inDriverTransaction, MYSQL_MAX_PREPARED_STATEMENTS } from "../../lib/db";
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

	describe("inDriverTransaction (START / COMMIT / ROLLBACK through the driver)", () => {
		class Item extends Model {
			declare id: number;
			declare n: number;
		}
		let sequelize: ReturnType<typeof createSequelize>;
		beforeAll(async () => {
			sequelize = createSequelize(`${MYSQL_URL}/${name}`);
			Item.init({ id: { type: DataTypes.INTEGER, primaryKey: true }, n: { type: DataTypes.INTEGER, allowNull: false } }, { sequelize, tableName: "items", timestamps: false });
			await Item.sync();
		});
		afterAll(async () => {
			await sequelize.close();
		});

		it("commits what the callback wrote, runs after-commit hooks once committed, and answers the callback's value", async () => {
			const seen: string[] = [];
			const out = await inDriverTransaction(sequelize, async t => {
				await Item.create({ id: 1, n: 1 }, { transaction: t });
				t.afterCommit(async () => {
					seen.push(`hook sees ${await Item.count({ where: { id: 1 } })}`);
				});
				// Another connection does not see the row before COMMIT: it is a real transaction.
				expect(await Item.count({ where: { id: 1 } })).toBe(0);
				return "done";
			});
			expect(out).toBe("done");
			expect(seen).toEqual(["hook sees 1"]);
			expect(await Item.count({ where: { id: 1 } })).toBe(1);
		});

		it("rolls back everything when the callback throws, runs no hook, and hands the connection back", async () => {
			const hook = jest.fn();
			await expect(
				inDriverTransaction(sequelize, async t => {
					await Item.create({ id: 2, n: 1 }, { transaction: t });
					t.afterCommit(hook);
					// A duplicate key: Sequelize's own error class, as with sequelize.transaction.
					await Item.create({ id: 1, n: 1 }, { transaction: t });
				}),
			).rejects.toMatchObject({ name: "SequelizeUniqueConstraintError" });
			expect(hook).not.toHaveBeenCalled();
			expect(await Item.count({ where: { id: 2 } })).toBe(0);
			// More transactions than the pool has connections, some failing: none is kept.
			const runs = await Promise.allSettled(
				Array.from({ length: 40 }, (_, i) =>
					inDriverTransaction(sequelize, async t => {
						await Item.create({ id: 100 + i, n: i }, { transaction: t });
						if (i % 2) throw new Error("no");
					}),
				),
			);
			expect(runs.filter(r => r.status === "fulfilled")).toHaveLength(20);
			expect(await Item.count({ where: { id: { [Op.gte]: 100 } } })).toBe(20);
		});

		it("runs again from the start when retryOn accepts the failure, as inTransaction does", async () => {
			let attempt = 0;
			await inDriverTransaction(
				sequelize,
				async t => {
					attempt++;
					await Item.create({ id: 3, n: attempt }, { transaction: t });
					if (attempt === 1) throw new Error("transient");
				},
				{ retryOn: err => (err as Error).message === "transient" },
			);
			expect(attempt).toBe(2);
			expect((await Item.findByPk(3))?.n).toBe(2);
		});
	});
});
