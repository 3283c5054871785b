/**
 * The SQLite writer queue (lib/sqlite-writer.ts) on a real SQLite file made by createSequelize:
 * concurrent transactions and writes outside them all succeed, in order, on one writer
 * connection; reads never wait for the writer; a write that would wait for its own transaction
 * fails at once; the FIFO lock itself.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { QueryTypes, Sequelize, Transaction } from "sequelize";
import { createSequelize, prepareSqlite } from "../../lib/db";
import { FifoLock, writerLockOf } from "../../lib/sqlite-writer";

describe("FifoLock", () => {
	it("hands the lock over in call order, once per release", async () => {
		const lock = new FifoLock();
		const order: number[] = [];
		const first = await lock.acquire();
		const waiters = [1, 2, 3].map(n => lock.acquire().then(release => (order.push(n), release)));
		expect(lock.queued).toBe(3);
		first();
		first(); // a second call is a no-op: it must not release a later holder
		await new Promise(r => setImmediate(r));
		expect(order).toEqual([1]);
		(await waiters[0])();
		(await waiters[1])();
		(await waiters[2])();
		expect(order).toEqual([1, 2, 3]);
		expect(lock.queued).toBe(0);
		// Free again: taken at once.
		(await lock.acquire())();
	});

	it("run releases when the work fails", async () => {
		const lock = new FifoLock();
		await expect(lock.run(async () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
		await expect(lock.run(async () => 7)).resolves.toBe(7);
	});
});

describe("SQLite writer queue", () => {
	let dir: string;
	let sequelize: Sequelize;

	beforeEach(async () => {
		dir = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-sqlite-writer-"));
		sequelize = createSequelize(`sqlite:${path.join(dir, "w.sqlite")}`);
		await prepareSqlite(sequelize);
		await sequelize.query("CREATE TABLE counter (id INTEGER PRIMARY KEY, n INTEGER NOT NULL)");
		await sequelize.query("INSERT INTO counter (id, n) VALUES (1, 0)");
		await sequelize.query("CREATE TABLE note (id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT NOT NULL)");
	});
	afterEach(async () => {
		await sequelize.close();
		fs.rmSync(dir, { recursive: true, force: true });
	});

	const counter = async (t?: Transaction) => {
		const [row] = await sequelize.query<{ n: number }>("SELECT n FROM counter WHERE id = 1", { type: QueryTypes.SELECT, transaction: t });
		return Number(row.n);
	};
	const notes = async () => Number((await sequelize.query<{ c: number }>("SELECT COUNT(*) AS c FROM note", { type: QueryTypes.SELECT }))[0].c);
	const gate = () => {
		let open!: () => void;
		const opened = new Promise<void>(r => (open = r));
		return { open, opened };
	};

	it("uses WAL", async () => {
		const [row] = await sequelize.query<{ journal_mode: string }>("PRAGMA journal_mode", { type: QueryTypes.SELECT });
		expect(row.journal_mode).toBe("wal");
	});

	it("runs 200 read-modify-write transactions and 100 writes outside them at once, all of them", async () => {
		const increments = Array.from({ length: 200 }, () =>
			sequelize.transaction(async t => {
				const n = await counter(t);
				await sequelize.query("UPDATE counter SET n = ? WHERE id = 1", { replacements: [n + 1], transaction: t });
			}),
		);
		const inserts = Array.from({ length: 100 }, (_, i) => sequelize.query("INSERT INTO note (body) VALUES (?)", { replacements: [`n${i}`] }));
		const results = await Promise.allSettled([...increments, ...inserts]);
		expect(results.filter(r => r.status === "rejected")).toEqual([]);
		expect(await counter()).toBe(200);
		expect(await notes()).toBe(100);
	});

	it("shares the queue between two instances on one file, not with another file", async () => {
		const same = createSequelize(`sqlite:${path.join(dir, "w.sqlite")}`);
		const other = createSequelize(`sqlite:${path.join(dir, "other.sqlite")}`);
		try {
			expect(writerLockOf(same)).toBe(writerLockOf(sequelize));
			expect(writerLockOf(other)).not.toBe(writerLockOf(sequelize));
			await other.query("CREATE TABLE x (id INTEGER PRIMARY KEY)");
			const both = [sequelize, same].flatMap(s =>
				Array.from({ length: 50 }, () => s.transaction(async t => s.query("UPDATE counter SET n = n + 1 WHERE id = 1", { transaction: t }))),
			);
			// Holding this file's writer does not stop a write to another file.
			both.push(sequelize.transaction(async () => other.query("INSERT INTO x (id) VALUES (1)")));
			const results = await Promise.allSettled(both);
			expect(results.filter(r => r.status === "rejected")).toEqual([]);
			expect(await counter()).toBe(100);
		} finally {
			await same.close();
			await other.close();
		}
	});

	it("runs every transaction on one writer connection", async () => {
		const connections = new Set<unknown>();
		await Promise.all(Array.from({ length: 20 }, () => sequelize.transaction(async t => void connections.add((t as unknown as { connection: unknown }).connection))));
		expect(connections.size).toBe(1);
		const open = Object.keys((sequelize.connectionManager as unknown as { connections: Record<string, unknown> }).connections);
		expect(open.sort()).toEqual(["default", "writer"]);
	});

	it("lets reads through while a transaction holds the writer, and queues writes behind it", async () => {
		const hold = gate();
		const inside = gate();
		const held = sequelize.transaction(async t => {
			await sequelize.query("UPDATE counter SET n = 41 WHERE id = 1", { transaction: t });
			inside.open();
			await hold.opened;
		});
		await inside.opened;
		// A read outside the transaction answers now, from the last commit.
		expect(await counter()).toBe(0);
		let written = false;
		const write = sequelize.query("UPDATE counter SET n = n + 1 WHERE id = 1").then(() => (written = true));
		await new Promise(r => setTimeout(r, 50));
		expect(written).toBe(false);
		expect(writerLockOf(sequelize)!.queued).toBe(1);
		hold.open();
		await Promise.all([held, write]);
		expect(await counter()).toBe(42);
	});

	it("releases the writer after a failed transaction (rolled back) and after an unmanaged one", async () => {
		await expect(
			sequelize.transaction(async t => {
				await sequelize.query("UPDATE counter SET n = 99 WHERE id = 1", { transaction: t });
				throw new Error("boom");
			}),
		).rejects.toThrow("boom");
		expect(await counter()).toBe(0);
		const t = await sequelize.transaction();
		const next = sequelize.transaction(async t2 => sequelize.query("UPDATE counter SET n = n + 10 WHERE id = 1", { transaction: t2 }));
		await sequelize.query("UPDATE counter SET n = 5 WHERE id = 1", { transaction: t });
		await t.commit();
		await next;
		expect(await counter()).toBe(15);
	});

	it("runs a savepoint inside a transaction, and refuses at once what would wait for its own transaction", async () => {
		await sequelize.transaction(async t => {
			await sequelize.transaction({ transaction: t }, async sp => sequelize.query("UPDATE counter SET n = 3 WHERE id = 1", { transaction: sp }));
			await expect(sequelize.transaction(async () => undefined)).rejects.toThrow(/would wait for that transaction forever/);
			await expect(sequelize.query("INSERT INTO note (body) VALUES ('x')")).rejects.toThrow(/would wait for that transaction forever/);
			// Reads outside it are fine.
			expect(await counter()).toBe(0);
		});
		expect(await counter()).toBe(3);
		expect(await notes()).toBe(0);
		// Work started by the callback that goes on after it has returned queues normally.
		let later: Promise<unknown> = Promise.resolve();
		await sequelize.transaction(async () => {
			later = new Promise(r => setTimeout(r, 20)).then(() => sequelize.query("INSERT INTO note (body) VALUES ('after')"));
		});
		await later;
		expect(await notes()).toBe(1);
	});
});
