/**
 * What MariaDB does for one credit (docs/benchmarks.md, issue 21): BENCH_CREDIT_N checkouts
 * (default 20,000; one link, checkout and deposit address each, as bench/watcher-evm.ts inserts
 * them) credited through transactions.creditBatch in calls of 200, one call at a time, each
 * transfer settling its checkout and link (the watcher bench's credit path without the chain).
 * Transfers come 1,000 to a transaction hash (the watcher bench's batchTransfer).
 *
 * Measured, per credited transfer, in ways another load on the machine does not change much:
 * - CPU of the mysqld threads serving this run's connections (information_schema.PROCESSLIST's
 *   TID, read in /proc): the statements' own work, without InnoDB's background threads;
 * - rows read / changed / index entries changed per table (TABLE_STATISTICS, when the server
 *   keeps them: `SET GLOBAL userstat = 1`), counted for this run's database only;
 * - statements sent (counted at sequelize.query, and at the driver for rows.ts's direct ones).
 */
import crypto from "node:crypto";
import fs from "node:fs";
import mysql from "mysql2/promise";
import { getAddress } from "ethers";
import { Sequelize } from "sequelize";
import { loadConfig } from "../lib/config";
import { createNode } from "../lib/node";
import { networkIdFor, tokenIdFor } from "../lib/networks/catalogue";
import { createRunDatabase, dropRunState, envInt, inProcessNodeEnv, insertCheckouts, makeLog, prepareRun, runMain, serverPids } from "./common";

const N = envInt("BENCH_CREDIT_N", 20_000, 200);
const PER_CALL = 200;
const mysqlUrl = (process.env.BENCH_MYSQL_URL || "mysql://root@127.0.0.1:3306").replace(/\/+$/, "");
const redisUrl = process.env.BENCH_REDIS_URL || "redis://127.0.0.1:6379/0";
const NET = networkIdFor("anvil-local");
const USDC = tokenIdFor("anvil-local", "USDC");
const log = makeLog("credit-sql");

/** CPU seconds of mysqld's threads serving `dbName`'s connections, by thread id. */
async function threadCpu(admin: mysql.Connection, pid: number, dbName: string): Promise<Map<number, number>> {
	const [rows] = (await admin.query("SELECT TID AS tid FROM information_schema.PROCESSLIST WHERE DB = ?", [dbName])) as unknown as [Array<{ tid: number }>];
	const out = new Map<number, number>();
	for (const { tid } of rows) {
		try {
			const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
			const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
			out.set(Number(tid), (Number(f[11]) + Number(f[12])) / 100);
		} catch {
			/* gone */
		}
	}
	return out;
}

async function tableStats(admin: mysql.Connection, dbName: string): Promise<Map<string, number[]> | null> {
	const [[on]] = (await admin.query("SELECT @@userstat AS on_")) as unknown as [Array<{ on_: number }>];
	if (!Number(on?.on_)) return null;
	const [rows] = (await admin.query("SELECT TABLE_NAME AS t, ROWS_READ AS r, ROWS_CHANGED AS c, ROWS_CHANGED_X_INDEXES AS x FROM information_schema.TABLE_STATISTICS WHERE TABLE_SCHEMA = ?", [dbName])) as unknown as [Array<{ t: string; r: number; c: number; x: number }>];
	return new Map(rows.map(r => [r.t, [Number(r.r), Number(r.c), Number(r.x)]]));
}

// Statements sent, by shape (values masked), and the CPU time of the mysqld thread that served
// each (its /proc schedstat, in ns, read before the statement is sent and when its answer is in).
const statements = new Map<string, number>();
const serverNs = new Map<string, number>();
const tidOf = new Map<number, number>();
let mysqldPid = 0;
const threadNs = (tid: number | undefined) => {
	if (!tid) return NaN;
	try {
		return Number(fs.readFileSync(`/proc/${mysqldPid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
	} catch {
		return NaN;
	}
};
type Callback = (err: unknown, ...rest: unknown[]) => void;
const BaseConnection = require(require("node:path").join(require.resolve("mysql2"), "../lib/base/connection.js")) as { prototype: Record<string, (...a: unknown[]) => unknown> };
for (const method of ["query", "execute"]) {
	const original = BaseConnection.prototype[method];
	BaseConnection.prototype[method] = function (this: { threadId: number }, ...args: unknown[]) {
		const i = args.findIndex(a => typeof a === "function");
		if (!counting || i < 0) return original.apply(this, args);
		const first = args[0];
		const sql = typeof first === "string" ? first : String((first as { sql?: string })?.sql ?? "");
		const k = shape(sql);
		const tid = tidOf.get(this.threadId);
		const before = threadNs(tid);
		const cb = args[i] as Callback;
		args[i] = (err: unknown, ...rest: unknown[]) => {
			const spent = threadNs(tid) - before;
			if (Number.isFinite(spent)) serverNs.set(k, (serverNs.get(k) ?? 0) + spent);
			cb(err, ...rest);
		};
		return original.apply(this, args);
	};
}
const shape = (sql: string) => sql.replace(/'[^']*'/g, "?").replace(/\d+/g, "N").replace(/(\?,?\s*|N,?\s*|\(\?\),?\s*)+/g, "?").slice(0, 90);
const proto = Sequelize.prototype as unknown as { query: (this: Sequelize, sql: unknown, o?: unknown) => Promise<unknown> };
const query = proto.query;
let counting = false;
proto.query = function (this: Sequelize, sql: unknown, o?: unknown) {
	if (counting) {
		const k = shape(typeof sql === "string" ? sql : String((sql as { query?: string })?.query ?? sql));
		statements.set(k, (statements.get(k) ?? 0) + 1);
	}
	return query.call(this, sql, o);
};

async function main(): Promise<void> {
	const run = prepareRun(mysqlUrl, "cpg-bench-credit-sql-");
	const { dbName, redisPrefix, databaseUrl, workDir } = run;
	const admin = await mysql.createConnection(mysqlUrl);
	let broker: Awaited<ReturnType<typeof createNode>> | null = null;
	let created = false;
	try {
		await createRunDatabase(mysqlUrl, dbName);
		created = true;
		const env = inProcessNodeEnv(run, redisUrl, { RPC_URL_ANVIL_LOCAL: "http://127.0.0.1:9", TEST_USDC_ADDRESS: getAddress(`0x${crypto.randomBytes(20).toString("hex")}`) });
		broker = await createNode({ config: loadConfig(env), services: ["networks", "transactions"], env, nodeID: `bench-credit-sql-${crypto.randomBytes(3).toString("hex")}` });
		const addresses = await insertCheckouts(databaseUrl, N, { chainType: "evm", networkId: NET, row: () => ({ address: getAddress(`0x${crypto.randomBytes(20).toString("hex")}`), tokenId: USDC, amount: "1" }) });
		await broker.start();
		const items = addresses.map((toAddress, i) => ({
			txHash: `0x${crypto.createHash("sha256").update(`${dbName}:${Math.floor(i / 1000)}`).digest("hex")}`,
			logIndex: i % 1000,
			blockHash: `0x${crypto.createHash("sha256").update(`${dbName}:block:${Math.floor(i / 5000)}`).digest("hex")}`,
			toAddress,
			tokenId: USDC,
			amount: "1",
			confirmations: 1,
			requiredConfirmations: 1,
		}));
		const call = async (slice: typeof items) => {
			const answers = (await broker!.call("transactions.creditBatch", { networkId: NET, items: slice, brief: true })) as Array<{ credited: boolean }>;
			const bad = answers.filter(a => !a.credited);
			if (bad.length) throw new Error(`not credited: ${JSON.stringify(bad[0])}`);
		};
		// The first call warms the pool, caches and statements; not measured.
		await call(items.slice(0, PER_CALL));
		const measured = N - PER_CALL;
		const pid = serverPids().mysqld!;
		mysqldPid = pid;
		const [ids] = (await admin.query("SELECT ID AS id, TID AS tid FROM information_schema.PROCESSLIST WHERE DB = ?", [dbName])) as unknown as [Array<{ id: number; tid: number }>];
		for (const { id, tid } of ids) tidOf.set(Number(id), Number(tid));
		const tables0 = await tableStats(admin, dbName);
		const threads0 = await threadCpu(admin, pid, dbName);
		const self0 = process.cpuUsage();
		counting = true;
		for (let i = PER_CALL; i < N; i += PER_CALL) await call(items.slice(i, i + PER_CALL));
		counting = false;
		const self = process.cpuUsage(self0);
		const threads1 = await threadCpu(admin, pid, dbName);
		const tables1 = await tableStats(admin, dbName);
		let server = 0;
		for (const [tid, s] of threads1) server += s - (threads0.get(tid) ?? 0);
		const [[done]] = (await admin.query(`SELECT COUNT(*) AS n, SUM(status = 'completed') AS c FROM \`${dbName}\`.transactions`)) as unknown as [Array<{ n: number; c: number }>];
		const us = (s: number) => ((s * 1e6) / measured).toFixed(0);
		console.log(`credit-sql: ${measured} transfers credited in calls of ${PER_CALL} (one at a time), ${done.c} of ${done.n} checkouts completed`);
		console.log(`  CPU per credited transfer: mysqld threads of this run's connections ${us(server)} us, this process (node + driver) ${us((self.user + self.system) / 1e6)} us`);
		const perCall = measured / PER_CALL;
		console.log(`  statements per call (${perCall} calls):`);
		const attributed = [...serverNs.values()].reduce((a, b) => a + b, 0);
		for (const [k, n] of [...statements].sort((a, b) => (serverNs.get(b[0]) ?? 0) - (serverNs.get(a[0]) ?? 0))) console.log(`    ${(n / perCall).toFixed(2)}  ${((serverNs.get(k) ?? 0) / 1e3 / measured).toFixed(1).padStart(6)} us/transfer  ${k}`);
		console.log(`    (statement times from the serving thread's schedstat: ${(attributed / 1e3 / measured).toFixed(0)} us/transfer attributed)`);
		if (tables0 && tables1) {
			console.log("  rows per credited transfer (read / changed / index entries changed):");
			const sum = [0, 0, 0];
			for (const [t, a] of [...tables1].sort(([x], [y]) => x.localeCompare(y))) {
				const b = tables0.get(t) ?? [0, 0, 0];
				const d = a.map((v, i) => v - b[i]);
				if (!d[0] && !d[1]) continue;
				d.forEach((v, i) => (sum[i] += v));
				console.log(`    ${t}: ${d.map(v => (v / measured).toFixed(2)).join(" / ")}`);
			}
			console.log(`    all tables: ${sum.map(v => (v / measured).toFixed(2)).join(" / ")}`);
		}
	} finally {
		if (broker) await broker.stop().catch(() => undefined);
		await admin.end();
		await dropRunState(mysqlUrl, created ? dbName : null, redisUrl, redisPrefix);
		fs.rmSync(workDir, { recursive: true, force: true });
	}
}

runMain("credit-sql", main);
