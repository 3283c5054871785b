/**
 * `npm run bench` (docs/benchmarks.md): throughput and latency of the gateway against its floors,
 * everything on 127.0.0.1.
 *
 * A fresh MySQL database and Redis prefix; the gateway as a child process (`dist/lib/start.js`,
 * production mode, rate limits off); a merchant set up over HTTP as in
 * test/e2e/merchant-onboarding.test.ts; then autocannon with 50 connections against:
 *   create-intent    POST /payment_intents with a Basic API key
 *   retrieve-intent  GET /payment_intents/:id over ~100 intents made in set-up
 *   floor-insert     a bare node:http process doing the same JSON parse and INSERTs with raw mysql2
 *   floor-hello      a bare node:http process answering a small JSON
 *   floor-select     a bare node:http process doing retrieve's one SELECT with raw mysql2 (informational)
 *   key-auth         GET /api-keys/me: the gateway's fixed cost per keyed request (no database)
 *   sqlite-create-intent  create-intent on the embedded default as `npm start` ships it (SQLite in
 *                    DATA_DIR, no Redis), its own gateway and merchant, run first and alone
 * and a profiling pass (a second gateway with the inspector and counting proxies in front of MySQL
 * and Redis) that says where the time of a request goes. A benchmark reports: it exits 0 unless it
 * could not run at all.
 */
import { spawn, fork } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import mysql from "mysql2/promise";
import { runLoad, LoadResult, LoadSpec } from "./load";
import { FLOOR_SCHEMA } from "./floor-schema";
import { InspectorClient } from "./inspector";
import { formatSummary, summarizeProfile } from "./cpu-profile";
import { Counts, diffCounts, mysqlCommandParser, redisCommandParser, startCountingProxy } from "./wire-counter";
import { benchEntry, CHILD_EXEC_ARGV, call, childStopper, cleanUpOnSigint, dropRunState, envInt, expectStatus, freePort, GATEWAY_ENTRY, gatewayEnv, intentBody, machineBusySeconds, makeLog, pickTestToken, prepareRun, preflight, procCpuSeconds, runMain, serverPids, settingsOrExit, setUpMerchant, sleep, tail, waitForRoutes, Child, GatewayEnvOptions } from "./common";

const FLOOR_ENTRY = benchEntry("floor-server");

const CASES = ["create-intent", "retrieve-intent", "key-auth", "floor-insert", "floor-hello", "floor-select", "sqlite-create-intent"];

function loadSettings() {
	const cases = (process.env.BENCH_CASES || CASES.join(",")).split(",").map(s => s.trim()).filter(Boolean);
	const unknown = cases.filter(c => !CASES.includes(c));
	if (unknown.length) throw new Error(`BENCH_CASES: unknown ${unknown.join(", ")} (known: ${CASES.join(", ")})`);
	const connections = envInt("BENCH_CONNECTIONS", 50, 1);
	const profileRequests = envInt("BENCH_PROFILE_REQUESTS", 3000, 0);
	// autocannon spreads a fixed amount over the connections.
	if (profileRequests > 0 && profileRequests < connections) throw new Error(`BENCH_PROFILE_REQUESTS must be 0 or at least BENCH_CONNECTIONS (${connections})`);
	return {
		seconds: envInt("BENCH_SECONDS", 10, 1),
		warmupSeconds: envInt("BENCH_WARMUP_SECONDS", 2, 0),
		connections,
		/** Requests per case in the profiling pass; 0 skips the pass. */
		profileRequests,
		retrieveIds: envInt("BENCH_RETRIEVE_IDS", 100, 1),
		mysqlUrl: (process.env.BENCH_MYSQL_URL || "mysql://root@127.0.0.1:3306").replace(/\/+$/, ""),
		redisUrl: process.env.BENCH_REDIS_URL || "redis://127.0.0.1:6379/0",
		cases,
		services: process.env.BENCH_SERVICES || "",
	};
}

const SETTINGS = settingsOrExit("bench", loadSettings);

const TARGETS = { createRatio: 0.6, createRps: 1500, retrieveRatio: 0.6 };

const log = makeLog("bench");

// ---------------------------------------------------------------- CPU accounting (Linux /proc)

export interface CpuUse {
	/** Cores busy on average during the run, per process. */
	server: number | null;
	loadGenerator: number;
	mysqld: number | null;
	redis: number | null;
	/** Machine-wide busy cores from /proc/stat (everything, including other work). */
	machine: number | null;
	seconds: number;
}


async function withCpu<T>(serverPid: number | undefined, run: () => Promise<T>): Promise<{ value: T; cpu: CpuUse; seconds: number }> {
	const pids = serverPids();
	const t0 = process.hrtime.bigint();
	const s0 = procCpuSeconds(serverPid);
	const m0 = procCpuSeconds(pids.mysqld);
	const r0 = procCpuSeconds(pids.redis);
	const w0 = machineBusySeconds();
	const l0 = process.cpuUsage();
	const value = await run();
	const l = process.cpuUsage(l0);
	const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
	const rate = (a: number | null, b: number | null) => (a === null || b === null ? null : (b - a) / seconds);
	return {
		value,
		seconds,
		cpu: {
			server: rate(s0, procCpuSeconds(serverPid)),
			loadGenerator: (l.user + l.system) / 1e6 / seconds,
			mysqld: rate(m0, procCpuSeconds(pids.mysqld)),
			redis: rate(r0, procCpuSeconds(pids.redis)),
			machine: rate(w0, machineBusySeconds()),
			seconds,
		},
	};
}

// ---------------------------------------------------------------- child processes

const stopChild = childStopper(log, 15_000);

interface Gateway extends Child {
	port: number;
	baseUrl: string;
	inspectorUrl: string | null;
}

interface GatewayOptions extends GatewayEnvOptions {
	workDir: string;
	inspect?: boolean;
}

async function startGateway(o: GatewayOptions): Promise<Gateway> {
	const port = await freePort();
	const logFile = path.join(o.workDir, `${o.name}.log`);
	const out = fs.openSync(logFile, "a");
	const env: NodeJS.ProcessEnv = {
		...gatewayEnv(o, port, "production"),
		...(SETTINGS.services ? { SERVICES: SETTINGS.services } : {}),
	};
	const args = [...CHILD_EXEC_ARGV, ...(o.inspect ? ["--inspect=127.0.0.1:0"] : []), GATEWAY_ENTRY];
	// cwd is the bench's temp folder so a developer's .env is not read.
	const proc = spawn(process.execPath, args, { cwd: o.workDir, env, stdio: ["ignore", out, "pipe"] });
	fs.closeSync(out);
	let inspectorUrl: string | null = null;
	const stderrLog = fs.createWriteStream(logFile, { flags: "a" });
	let inspectorSeen: (url: string) => void = () => undefined;
	const inspectorPromise = new Promise<string>(resolve => (inspectorSeen = resolve));
	let stderrBuf = "";
	proc.stderr!.on("data", (chunk: Buffer) => {
		stderrLog.write(chunk);
		if (!o.inspect || inspectorUrl) return;
		stderrBuf += chunk.toString("utf8");
		const m = /Debugger listening on (ws:\/\/\S+)/.exec(stderrBuf);
		if (m) {
			inspectorUrl = m[1];
			inspectorSeen(m[1]);
		}
	});
	const exited = new Promise<number | null>(resolve => proc.once("exit", code => resolve(code)));
	const gw: Gateway = { proc, logFile, exited, port, baseUrl: `http://127.0.0.1:${port}/api/v1`, inspectorUrl: null };
	await waitForRoutes(gw, o.name, gw.baseUrl, () => stopChild(gw));
	if (o.inspect) gw.inspectorUrl = await Promise.race([inspectorPromise, sleep(5000).then(() => null)]);
	return gw;
}

interface Floor extends Child {
	url: string;
}

async function startFloor(mode: "hello" | "insert" | "select", workDir: string, databaseUrl: string, organizationId = ""): Promise<Floor> {
	const logFile = path.join(workDir, `floor-${mode}.log`);
	const out = fs.openSync(logFile, "a");
	const proc = fork(FLOOR_ENTRY, [mode], {
		cwd: workDir,
		execArgv: CHILD_EXEC_ARGV,
		env: { PATH: process.env.PATH, NODE_ENV: "production", FLOOR_DATABASE_URL: databaseUrl, FLOOR_ORGANIZATION_ID: organizationId },
		stdio: ["ignore", out, out, "ipc"],
	});
	fs.closeSync(out);
	const exited = new Promise<number | null>(resolve => proc.once("exit", code => resolve(code)));
	const port = await Promise.race([
		new Promise<number>(resolve => proc.once("message", (m: { port?: number }) => resolve(Number(m?.port)))),
		exited.then(code => {
			throw new Error(`floor-${mode} exited (code ${code}):\n${tail(logFile)}`);
		}),
		sleep(30_000).then(() => {
			throw new Error(`floor-${mode} did not start within 30 s:\n${tail(logFile)}`);
		}),
	]);
	return { proc, logFile, exited, url: `http://127.0.0.1:${port}` };
}

// ---------------------------------------------------------------- measuring

interface CaseResult {
	name: string;
	available: boolean;
	note?: string;
	load?: LoadResult;
	cpu?: CpuUse;
}

async function measure(name: string, serverPid: number | undefined, spec: Omit<LoadSpec, "connections" | "duration" | "amount">): Promise<CaseResult> {
	if (SETTINGS.warmupSeconds > 0) {
		log(`${name}: warm-up ${SETTINGS.warmupSeconds} s`);
		await runLoad({ ...spec, connections: SETTINGS.connections, duration: SETTINGS.warmupSeconds });
	}
	log(`${name}: ${SETTINGS.seconds} s, ${SETTINGS.connections} connections (load average ${os.loadavg()[0].toFixed(2)})`);
	const { value: load, cpu } = await withCpu(serverPid, () => runLoad({ ...spec, connections: SETTINGS.connections, duration: SETTINGS.seconds }));
	log(`${name}: ${load.rps.toFixed(0)} req/s p50 ${load.p50} ms p99 ${load.p99} ms (${load.ok} ok, ${load.non2xx} non-2xx, ${load.errors} errors); ${cpuLine(cpu, load.total)}`);
	return { name, available: true, load, cpu };
}

/**
 * create-intent's load on the embedded default: a gateway with neither DATABASE_URL nor REDIS_URL
 * (SQLite file in its DATA_DIR, in-memory cache), as `npm start` ships, set up like the other.
 */
async function sqliteCreateIntent(workDir: string, secrets: GatewayEnvOptions["secrets"]): Promise<CaseResult> {
	const name = "sqlite-create-intent";
	const dataDir = path.join(workDir, "data-sqlite");
	fs.mkdirSync(dataDir);
	let gw: Gateway | null = null;
	try {
		gw = await startGateway({ name: "gateway-sqlite", databaseUrl: "", redisUrl: "", redisPrefix: "", dataDir, workDir, secrets });
		log(`gateway-sqlite pid ${gw.proc.pid} on ${gw.baseUrl} (SQLite in ${dataDir}, no Redis)`);
		const { basic } = await setUpMerchant(gw.baseUrl, dataDir);
		const body = intentBody(await pickTestToken(gw.baseUrl));
		const probe = await call(gw.baseUrl, "POST", "/payment_intents", { basic, body: JSON.parse(body) });
		if (probe.status !== 200 && probe.status !== 201) return { name, available: false, note: `${probe.status} ${JSON.stringify(probe.body).slice(0, 300)}` };
		const headers = { Authorization: basic, "Content-Type": "application/json" };
		return await measure(name, gw.proc.pid, { url: gw.baseUrl.replace(/\/api\/v1$/, ""), method: "POST", headers, body, path: () => "/api/v1/payment_intents" });
	} finally {
		await stopChild(gw);
	}
}

function cpuLine(c: CpuUse, requests: number): string {
	const cores = (v: number | null) => (v === null ? "?" : v.toFixed(2));
	const us = c.server === null || requests === 0 ? "" : ` = ${((c.server * c.seconds * 1e6) / requests).toFixed(0)} us CPU/request`;
	return `cores busy: server ${cores(c.server)}${us}, load generator ${cores(c.loadGenerator)}, mariadb ${cores(c.mysqld)}, redis ${cores(c.redis)}, whole machine ${cores(c.machine)} of ${os.cpus().length}`;
}

function errorsNote(l: LoadResult): string {
	if (l.non2xx === 0 && l.errors === 0 && l.timeouts === 0) return "";
	const codes = Object.entries(l.statusCounts)
		.filter(([c]) => !c.startsWith("2"))
		.map(([c, n]) => `${c} x${n}`)
		.join(", ");
	return ` !! ERRORS: ${l.non2xx} non-2xx${codes ? ` (${codes})` : ""}, ${l.errors} socket errors, ${l.timeouts} timeouts: throughput counts 2xx only`;
}

/** Server CPU microseconds per request of a measured case (all requests, as the load generator counted them). */
function cpuUsPerRequest(r: CaseResult | undefined): number | undefined {
	if (!r?.cpu || !r.load || r.cpu.server === null || r.load.total === 0) return undefined;
	return (r.cpu.server * r.cpu.seconds * 1e6) / r.load.total;
}

/**
 * Each gateway case against its floor (issue 21): server CPU per request, whose ratio does not
 * depend on how fast the machine is or how busy its other core is, and req/s beside it.
 */
const FLOORS: { case: string; floor: string; maxCpuRatio: number }[] = [
	{ case: "create-intent", floor: "floor-insert", maxCpuRatio: 2 },
	{ case: "retrieve-intent", floor: "floor-select", maxCpuRatio: 2 },
	{ case: "key-auth", floor: "floor-hello", maxCpuRatio: 3 },
];

function caseLine(r: CaseResult, results: Map<string, CaseResult>): string {
	if (!r.available || !r.load) return `${r.name}: not available${r.note ? ` (${r.note})` : ""}`;
	const l = r.load;
	const us = cpuUsPerRequest(r);
	let line = `${r.name}: ${l.rps.toFixed(0)} req/s p50 ${l.p50} ms p99 ${l.p99} ms${us === undefined ? "" : ` ${us.toFixed(0)} us CPU/request`}`;
	const pair = FLOORS.find(f => f.case === r.name);
	if (pair) {
		const floor = results.get(pair.floor);
		const floorUs = cpuUsPerRequest(floor);
		if (!floor?.load) line += ` ${pair.floor} not measured`;
		else {
			line += ` ${pair.floor} ${floor.load.rps.toFixed(0)} req/s${floorUs === undefined ? "" : ` ${floorUs.toFixed(0)} us`}: req/s ratio ${(l.rps / floor.load.rps).toFixed(2)}`;
			if (us !== undefined && floorUs) line += `, CPU/request ratio ${(us / floorUs).toFixed(2)}`;
		}
	}
	return line + errorsNote(l);
}

function targetsLine(results: Map<string, CaseResult>): string {
	const rps = (n: string) => results.get(n)?.load?.rps;
	const clean = (n: string) => {
		const l = results.get(n)?.load;
		return !!l && l.non2xx === 0 && l.errors === 0;
	};
	const verdict = (value: number | undefined, ok: (v: number) => boolean, fmt: (v: number) => string, name: string) => {
		if (value === undefined || Number.isNaN(value)) return "n/a";
		return `${ok(value) && clean(name) ? "PASS" : "BELOW"} (${fmt(value)}${clean(name) ? "" : `, ${name} had errors`})`;
	};
	// The embedded default has no throughput target: it must answer every request it accepts.
	const sqlite = results.get("sqlite-create-intent")?.load;
	const sqliteVerdict = sqlite ? `${clean("sqlite-create-intent") && sqlite.timeouts === 0 ? "PASS" : "ERRORS"} (${sqlite.rps.toFixed(0)} req/s, ${sqlite.non2xx} non-2xx, ${sqlite.errors} errors, ${sqlite.timeouts} timeouts)` : "n/a";
	const c = rps("create-intent");
	const fi = rps("floor-insert");
	const r = rps("retrieve-intent");
	const fh = rps("floor-hello");
	const cpuRatio = (a: string, b: string) => {
		const x = cpuUsPerRequest(results.get(a));
		const y = cpuUsPerRequest(results.get(b));
		return x === undefined || !y ? undefined : x / y;
	};
	return [
		...FLOORS.map(f => `${f.case} CPU/request <= ${f.maxCpuRatio} x ${f.floor} ${verdict(cpuRatio(f.case, f.floor), v => v <= f.maxCpuRatio, v => `${v.toFixed(2)} x`, f.case)}`),
		`create-intent >= ${TARGETS.createRatio} x floor-insert req/s ${verdict(c !== undefined && fi ? c / fi : undefined, v => v >= TARGETS.createRatio, v => v.toFixed(2), "create-intent")}`,
		`create-intent >= ${TARGETS.createRps} req/s ${verdict(c, v => v >= TARGETS.createRps, v => `${v.toFixed(0)} req/s`, "create-intent")}`,
		`retrieve-intent >= ${TARGETS.retrieveRatio} x floor-hello req/s ${verdict(r !== undefined && fh ? r / fh : undefined, v => v >= TARGETS.retrieveRatio, v => v.toFixed(2), "retrieve-intent")}`,
		`sqlite-create-intent every response 2xx ${sqliteVerdict}`,
	]
		.map((t, i) => (i === 0 ? `targets: ${t}` : t))
		.join("; ");
}

// ---------------------------------------------------------------- where the time goes

function perRequest(counts: Counts, requests: number): string {
	const entries = Object.entries(counts).sort((a, b) => b[1] - a[1]);
	if (entries.length === 0) return "none";
	const total = entries.reduce((s, [, n]) => s + n, 0);
	return `${(total / requests).toFixed(2)} per request: ${entries.map(([k, n]) => `${k} ${(n / requests).toFixed(2)}`).join(", ")}`;
}

interface ProfileCase {
	name: string;
	spec: Omit<LoadSpec, "connections" | "duration" | "amount">;
}

async function profilePass(opts: GatewayOptions, cases: ProfileCase[], floorSpec: (url: string) => ProfileCase["spec"]): Promise<string> {
	const out: string[] = [];
	const sqlProxy = await startCountingProxy({ host: new URL(SETTINGS.mysqlUrl).hostname, port: Number(new URL(SETTINGS.mysqlUrl).port || 3306) }, mysqlCommandParser);
	const redisProxy = await startCountingProxy({ host: new URL(SETTINGS.redisUrl).hostname, port: Number(new URL(SETTINGS.redisUrl).port || 6379) }, redisCommandParser);
	const viaProxy = (url: string, port: number) => {
		const u = new URL(url);
		u.hostname = "127.0.0.1";
		u.port = String(port);
		return u.toString();
	};
	let gw: Gateway | null = null;
	let inspector: InspectorClient | null = null;
	let floor: Floor | null = null;
	try {
		gw = await startGateway({ ...opts, name: "gateway-profiled", inspect: true, databaseUrl: viaProxy(opts.databaseUrl, sqlProxy.port), redisUrl: viaProxy(opts.redisUrl, redisProxy.port) });
		if (!gw.inspectorUrl) throw new Error("the profiled gateway printed no inspector URL");
		inspector = await InspectorClient.connect(gw.inspectorUrl);
		for (const c of cases) {
			const spec = { ...c.spec, url: gw.baseUrl.replace(/\/api\/v1$/, "") };
			log(`profile ${c.name}: warm-up, then ${SETTINGS.profileRequests} requests`);
			await runLoad({ ...spec, connections: SETTINGS.connections, duration: Math.max(2, SETTINGS.warmupSeconds) });
			await sleep(300);
			const sql0 = sqlProxy.snapshot();
			const redis0 = redisProxy.snapshot();
			await inspector.startProfile();
			const { value: load, cpu } = await withCpu(gw.proc.pid, () => runLoad({ ...spec, connections: SETTINGS.connections, amount: SETTINGS.profileRequests }));
			const profile = await inspector.stopProfile();
			await sleep(300);
			const sql = diffCounts(sql0, sqlProxy.snapshot());
			const redis = diffCounts(redis0, redisProxy.snapshot());
			const dir = path.join(opts.workDir, "profiles");
			fs.mkdirSync(dir, { recursive: true });
			const file = path.join(dir, `${c.name}.cpuprofile`);
			fs.writeFileSync(file, JSON.stringify(profile));
			out.push(`${c.name} (profiled gateway behind counting proxies, ${load.total} requests, ${load.ok} 2xx, ${load.rps.toFixed(0)} req/s under the profiler, ${cpu.server === null ? "?" : ((cpu.server * cpu.seconds * 1e6) / load.total).toFixed(0)} us CPU/request)${errorsNote(load)}`);
			out.push(`  MySQL commands: ${perRequest(sql, load.total)}`);
			out.push(`  Redis commands: ${perRequest(redis, load.total)}`);
			out.push(formatSummary(summarizeProfile(profile, 15), load.total));
		}
		inspector.close();
		inspector = null;
		await stopChild(gw);
		gw = null;
		// The floor through the same proxy: checks the counter against a known 4 commands per request.
		floor = await startFloor("insert", opts.workDir, viaProxy(opts.databaseUrl, sqlProxy.port));
		const spec = floorSpec(floor.url);
		await runLoad({ ...spec, connections: SETTINGS.connections, duration: Math.max(2, SETTINGS.warmupSeconds) });
		await sleep(300);
		const sql0 = sqlProxy.snapshot();
		const load = await runLoad({ ...spec, connections: SETTINGS.connections, amount: SETTINGS.profileRequests });
		await sleep(300);
		out.push(`floor-insert (behind the counting proxy, ${load.total} requests)${errorsNote(load)}`);
		out.push(`  MySQL commands: ${perRequest(diffCounts(sql0, sqlProxy.snapshot()), load.total)}`);
	} finally {
		inspector?.close();
		await stopChild(gw);
		await stopChild(floor);
		await sqlProxy.close();
		await redisProxy.close();
	}
	return out.join("\n");
}

// ---------------------------------------------------------------- main

async function main(): Promise<void> {
	preflight(SETTINGS.mysqlUrl, SETTINGS.redisUrl, [GATEWAY_ENTRY, FLOOR_ENTRY]);
	const started = new Date();
	// Other work on the machine skews every number: the report says how busy it was.
	const loadAtStart = os.loadavg()[0].toFixed(2);
	const { workDir, dataDir, dbName, redisPrefix, databaseUrl, secrets } = prepareRun(SETTINGS.mysqlUrl, "cpg-bench-");
	const gwOpts: GatewayOptions = { name: "gateway", databaseUrl, redisUrl: SETTINGS.redisUrl, redisPrefix, dataDir, workDir, secrets };

	let gateway: Gateway | null = null;
	let floor: Floor | null = null;
	let dbCreated = false;
	let ok = false;
	const cleanup = async () => {
		await stopChild(gateway);
		await stopChild(floor);
		await dropRunState(SETTINGS.mysqlUrl, dbCreated ? dbName : null, SETTINGS.redisUrl, redisPrefix);
		if (ok && !process.env.BENCH_KEEP) fs.rmSync(workDir, { recursive: true, force: true });
		else log(`logs and profiles kept in ${workDir}`);
	};
	const interrupted = cleanUpOnSigint(log, cleanup);

	try {
		log(`node ${process.version}, ${os.cpus().length} cpus, work dir ${workDir}`);
		const conn = await mysql.createConnection(SETTINGS.mysqlUrl);
		await conn.query(`CREATE DATABASE \`${dbName}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
		dbCreated = true;
		await conn.query(`USE \`${dbName}\``);
		for (const sql of FLOOR_SCHEMA) await conn.query(sql);
		const [[version]] = (await conn.query("SELECT VERSION() AS v")) as unknown as [[{ v: string }]];
		await conn.end();
		log(`database ${dbName} (${version.v}), Redis prefix ${redisPrefix}`);

		const results = new Map<string, CaseResult>();
		const want = (n: string) => SETTINGS.cases.includes(n);
		let profileReport = "";

		// First, alone on the machine: the embedded default needs neither the MySQL gateway nor its floors.
		if (want("sqlite-create-intent")) results.set("sqlite-create-intent", await sqliteCreateIntent(workDir, secrets));

		if (SETTINGS.cases.some(c => c !== "sqlite-create-intent")) {
			gateway = await startGateway(gwOpts);
			log(`gateway pid ${gateway.proc.pid} on ${gateway.baseUrl}`);
			const { basic, organizationId } = await setUpMerchant(gateway.baseUrl, dataDir);
			const target = await pickTestToken(gateway.baseUrl);
			log(`merchant ready; intents for ${target.label}`);
			const body = intentBody(target);
			const jsonKey = { Authorization: basic, "Content-Type": "application/json" };

			// Probe: the intents endpoint may not exist yet; a case that cannot run says so.
			const probe = await call(gateway.baseUrl, "POST", "/payment_intents", { basic, body: JSON.parse(body) });
			const intentsAvailable = probe.status === 201 || probe.status === 200;
			const ids: string[] = [];
			if (!intentsAvailable) {
				const note = probe.status === 404 ? "404" : `${probe.status} ${JSON.stringify(probe.body).slice(0, 300)}`;
				log(`POST /payment_intents answered ${note}`);
				for (const n of ["create-intent", "retrieve-intent"]) results.set(n, { name: n, available: false, note });
			} else {
				ids.push(probe.body.id);
				while (ids.length < SETTINGS.retrieveIds) {
					const batch = await Promise.all(Array.from({ length: Math.min(10, SETTINGS.retrieveIds - ids.length) }, () => call(gateway!.baseUrl, "POST", "/payment_intents", { basic, body: JSON.parse(body) })));
					for (const r of batch) {
						expectStatus("create intents for retrieve-intent", r, probe.status);
						ids.push(r.body.id);
					}
				}
				const check = await call(gateway.baseUrl, "GET", `/payment_intents/${ids[0]}`, { basic });
				if (check.status !== 200 || check.body?.id !== ids[0]) {
					const note = `GET /payment_intents/:id answered ${check.status} ${JSON.stringify(check.body).slice(0, 200)}`;
					results.set("retrieve-intent", { name: "retrieve-intent", available: false, note });
				}
			}
			const origin = gateway.baseUrl.replace(/\/api\/v1$/, "");
			let next = 0;
			const createSpec = { url: origin, method: "POST" as const, headers: jsonKey, body, path: () => "/api/v1/payment_intents" };
			const retrieveSpec = { url: origin, method: "GET" as const, headers: { Authorization: basic }, path: () => `/api/v1/payment_intents/${ids[next++ % ids.length]}` };

			if (want("create-intent") && intentsAvailable) results.set("create-intent", await measure("create-intent", gateway.proc.pid, createSpec));
			if (want("retrieve-intent") && intentsAvailable && !results.has("retrieve-intent")) results.set("retrieve-intent", await measure("retrieve-intent", gateway.proc.pid, retrieveSpec));
			const keyAuthSpec = { url: origin, method: "GET" as const, headers: { Authorization: basic }, path: () => "/api/v1/api-keys/me" };
			if (want("key-auth")) results.set("key-auth", await measure("key-auth", gateway.proc.pid, keyAuthSpec));

			// Floors run while the gateway idles (it keeps its heartbeat timers only).
			const floorInsertSpec = (url: string) => ({ url, method: "POST" as const, headers: { "Content-Type": "application/json" }, body, path: () => "/api/v1/payment_intents" });
			if (want("floor-insert")) {
				floor = await startFloor("insert", workDir, databaseUrl);
				results.set("floor-insert", await measure("floor-insert", floor.proc.pid, floorInsertSpec(floor.url)));
				await stopChild(floor);
				floor = null;
			}
			if (want("floor-hello")) {
				floor = await startFloor("hello", workDir, databaseUrl);
				results.set("floor-hello", await measure("floor-hello", floor.proc.pid, { url: floor.url, method: "GET", path: () => "/" }));
				await stopChild(floor);
				floor = null;
			}

			if (want("floor-select") && ids.length > 0) {
				floor = await startFloor("select", workDir, databaseUrl, organizationId);
				let n = 0;
				const probeSelect = await fetch(`${floor.url}/api/v1/payment_intents/${ids[0]}`);
				if (probeSelect.status !== 200) throw new Error(`floor-select answered ${probeSelect.status} for an intent made in set-up`);
				results.set("floor-select", await measure("floor-select", floor.proc.pid, { url: floor.url, method: "GET", path: () => `/api/v1/payment_intents/${ids[n++ % ids.length]}` }));
				await stopChild(floor);
				floor = null;
			}

			if (SETTINGS.profileRequests > 0) {
				await stopChild(gateway);
				gateway = null;
				const cases: ProfileCase[] = [];
				if (want("create-intent") && intentsAvailable) cases.push({ name: "create-intent", spec: createSpec });
				if (want("retrieve-intent") && results.get("retrieve-intent")?.available) cases.push({ name: "retrieve-intent", spec: retrieveSpec });
				if (want("key-auth")) cases.push({ name: "key-auth", spec: keyAuthSpec });
				try {
					profileReport = await profilePass(gwOpts, cases, floorInsertSpec);
				} catch (err) {
					profileReport = `profiling pass failed: ${err instanceof Error ? err.message : String(err)}`;
				}
				if (!intentsAvailable) profileReport = `(create-intent and retrieve-intent not profiled: POST /payment_intents is not available)\n${profileReport}`;
			}
		}

		const lines: string[] = [];
		lines.push(`# npm run bench, ${started.toISOString()}, node ${process.version}, ${os.cpus().length} cpus, MySQL ${version.v}, ${SETTINGS.connections} connections, ${SETTINGS.seconds} s per case, load average at start ${loadAtStart}`);
		const cpuReport = [...results.values()].filter(r => r.cpu && r.load).map(r => `${r.name}: ${cpuLine(r.cpu!, r.load!.total)}`);
		lines.push("", "## where the time goes");
		if (cpuReport.length) lines.push("CPU during the measured runs (server = the process under test; cores of this machine):", ...cpuReport.map(l => `  ${l}`));
		if (profileReport) lines.push(profileReport);
		lines.push("");
		for (const n of ["create-intent", "retrieve-intent"]) if (want(n)) lines.push(caseLine(results.get(n) || { name: n, available: false, note: "not run" }, results));
		for (const n of ["key-auth", "floor-insert", "floor-hello", "floor-select"]) if (results.has(n)) lines.push(caseLine(results.get(n)!, results));
		if (want("sqlite-create-intent")) lines.push(caseLine(results.get("sqlite-create-intent") || { name: "sqlite-create-intent", available: false, note: "not run" }, results));
		lines.push(`load average at the end ${os.loadavg().map(v => v.toFixed(2)).join(" ")}`);
		lines.push(targetsLine(results));
		process.stdout.write(`${lines.join("\n")}\n`);
		if (process.env.BENCH_JSON) {
			fs.writeFileSync(process.env.BENCH_JSON, JSON.stringify({ started, settings: SETTINGS, results: Object.fromEntries(results), profileReport }, null, 2));
		}
		ok = true;
	} finally {
		if (!interrupted()) await cleanup();
	}
}

runMain("bench", main);
