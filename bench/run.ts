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
 * and a profiling pass (a second gateway with the inspector and counting proxies in front of MySQL
 * and Redis) that says where the time of a request goes. A benchmark reports: it exits 0 unless it
 * could not run at all.
 */
import { spawn, fork, ChildProcess } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import mysql from "mysql2/promise";
import Redis from "ioredis";
import { runLoad, LoadResult, LoadSpec } from "./load";
import { FLOOR_SCHEMA } from "./floor-schema";
import { InspectorClient } from "./inspector";
import { formatSummary, summarizeProfile } from "./cpu-profile";
import { Counts, diffCounts, mysqlCommandParser, redisCommandParser, startCountingProxy } from "./wire-counter";

// Compiled to dist/bench/: the gateway's entry is dist/lib/start.js.
const GATEWAY_ENTRY = path.resolve(__dirname, "../lib/start.js");
const FLOOR_ENTRY = path.join(__dirname, "floor-server.js");

function envInt(name: string, fallback: number, min = 0): number {
	const raw = process.env[name];
	if (raw === undefined || raw === "") return fallback;
	const n = Number(raw);
	if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be a whole number >= ${min}, got "${raw}"`);
	return n;
}

const CASES = ["create-intent", "retrieve-intent", "key-auth", "floor-insert", "floor-hello", "floor-select"];

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

let SETTINGS: ReturnType<typeof loadSettings>;
try {
	SETTINGS = loadSettings();
} catch (err) {
	console.error(`bench: ${(err as Error).message}`);
	process.exit(1);
}

const TARGETS = { createRatio: 0.6, createRps: 1500, retrieveRatio: 0.6 };

function log(msg: string): void {
	process.stderr.write(`[bench] ${msg}\n`);
}

function assertLoopback(url: string): void {
	const host = new URL(url).hostname;
	if (host !== "127.0.0.1" && host !== "localhost" && host !== "[::1]") throw new Error(`the bench only talks to 127.0.0.1, not ${host}`);
}

async function freePort(): Promise<number> {
	return new Promise((resolve, reject) => {
		const srv = net.createServer();
		srv.once("error", reject);
		srv.listen(0, "127.0.0.1", () => {
			const { port } = srv.address() as net.AddressInfo;
			srv.close(() => resolve(port));
		});
	});
}

const sleep = (ms: number) => new Promise(r => setTimeout(r, ms));

// ---------------------------------------------------------------- CPU accounting (Linux /proc)

/** CPU seconds (user + system) a process has used, or null where /proc cannot tell. */
function procCpuSeconds(pid: number | undefined): number | null {
	if (!pid) return null;
	try {
		const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
		// Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
		const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
		return (Number(fields[11]) + Number(fields[12])) / 100; // USER_HZ is 100 on Linux
	} catch {
		return null;
	}
}

/** The database and Redis server processes on this machine, by name (shared with other work: indicative only). */
function serverPids(): { mysqld?: number; redis?: number } {
	const out: { mysqld?: number; redis?: number } = {};
	try {
		for (const entry of fs.readdirSync("/proc")) {
			if (!/^\d+$/.test(entry)) continue;
			let comm = "";
			try {
				comm = fs.readFileSync(`/proc/${entry}/comm`, "utf8").trim();
			} catch {
				continue;
			}
			if (comm === "mariadbd" || comm === "mysqld") out.mysqld = Number(entry);
			if (comm === "redis-server") out.redis = Number(entry);
		}
	} catch {
		/* no /proc */
	}
	return out;
}

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

function machineBusySeconds(): number | null {
	try {
		const cpu = fs.readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
		const idle = cpu[3] + (cpu[4] || 0);
		return (cpu.reduce((a, b) => a + b, 0) - idle) / 100;
	} catch {
		return null;
	}
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

interface Child {
	proc: ChildProcess;
	logFile: string;
	exited: Promise<number | null>;
}

function tail(file: string, lines = 40): string {
	try {
		return fs.readFileSync(file, "utf8").split("\n").slice(-lines).join("\n");
	} catch {
		return "(no log)";
	}
}

async function stopChild(child: Child | null, timeoutMs = 15_000): Promise<void> {
	if (!child || child.proc.exitCode !== null || child.proc.signalCode !== null) return;
	child.proc.kill("SIGTERM");
	const done = await Promise.race([child.exited.then(() => true), sleep(timeoutMs).then(() => false)]);
	if (!done) {
		log(`pid ${child.proc.pid} did not stop in ${timeoutMs} ms: SIGKILL`);
		child.proc.kill("SIGKILL");
		await child.exited;
	}
}

interface Gateway extends Child {
	port: number;
	baseUrl: string;
	inspectorUrl: string | null;
}

interface GatewayOptions {
	name: string;
	databaseUrl: string;
	redisUrl: string;
	redisPrefix: string;
	dataDir: string;
	workDir: string;
	secrets: { jwt: string; refresh: string; master: string };
	inspect?: boolean;
}

async function startGateway(o: GatewayOptions): Promise<Gateway> {
	const port = await freePort();
	const logFile = path.join(o.workDir, `${o.name}.log`);
	const out = fs.openSync(logFile, "a");
	const env: NodeJS.ProcessEnv = {
		// Only what the node needs: a developer's shell (TRANSPORTER, SERVICES ...) must not leak in.
		PATH: process.env.PATH,
		HOME: process.env.HOME,
		NODE_ENV: "production",
		PORT: String(port),
		PUBLIC_URL: `http://127.0.0.1:${port}`,
		DATA_DIR: o.dataDir,
		DATABASE_URL: o.databaseUrl,
		REDIS_URL: o.redisUrl,
		REDIS_PREFIX: o.redisPrefix,
		RATE_LIMIT: "off",
		LOG_LEVEL: "warn",
		AUTH_JWT_SECRET: o.secrets.jwt,
		AUTH_REFRESH_SECRET: o.secrets.refresh,
		MASTER_KEY: o.secrets.master,
		// Only makes the set-up sign-up fast; no request of a measured case may hash a password.
		BCRYPT_ROUNDS: "4",
		NODE_ID: `bench-${o.name}-${crypto.randomBytes(3).toString("hex")}`,
		...(SETTINGS.services ? { SERVICES: SETTINGS.services } : {}),
	};
	const args = [...(o.inspect ? ["--inspect=127.0.0.1:0"] : []), GATEWAY_ENTRY];
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
	const deadline = Date.now() + 120_000;
	for (;;) {
		if (proc.exitCode !== null || proc.signalCode !== null) {
			throw new Error(`gateway ${o.name} exited during start-up (code ${proc.exitCode}); log ${logFile}:\n${tail(logFile)}`);
		}
		try {
			// The info route answers as soon as the HTTP server listens; the business routes once
			// every service has started (the gateway builds them on $broker.started).
			const info = await fetch(`${gw.baseUrl}/`, { signal: AbortSignal.timeout(2000) });
			const me = info.status === 200 ? await fetch(`${gw.baseUrl}/auth/me`, { signal: AbortSignal.timeout(2000) }) : null;
			if (me && me.status === 401) break;
		} catch {
			/* not listening yet */
		}
		if (Date.now() > deadline) {
			await stopChild(gw);
			throw new Error(`gateway ${o.name} did not serve its routes (GET /api/v1/auth/me: 401) within 120 s; log ${logFile}:\n${tail(logFile)}`);
		}
		await sleep(200);
	}
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

// ---------------------------------------------------------------- HTTP set-up

interface Http {
	status: number;
	body: any;
}

async function call(baseUrl: string, method: string, urlPath: string, opts: { body?: unknown; token?: string; basic?: string } = {}): Promise<Http> {
	const headers: Record<string, string> = {};
	if (opts.body !== undefined) headers["Content-Type"] = "application/json";
	if (opts.token) headers.Authorization = `Bearer ${opts.token}`;
	if (opts.basic) headers.Authorization = opts.basic;
	const res = await fetch(`${baseUrl}${urlPath}`, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body), signal: AbortSignal.timeout(30_000) });
	const text = await res.text();
	let body: any = text;
	try {
		body = text ? JSON.parse(text) : null;
	} catch {
		/* not JSON */
	}
	return { status: res.status, body };
}

function expectStatus(step: string, res: Http, status: number): void {
	if (res.status !== status) throw new Error(`set-up ${step}: expected ${status}, got ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
}

async function readConfirmationHash(dataDir: string, email: string): Promise<string> {
	const dir = path.join(dataDir, "mail");
	const deadline = Date.now() + 10_000;
	for (;;) {
		if (fs.existsSync(dir)) {
			for (const f of fs.readdirSync(dir).filter(n => n.endsWith(".json")).sort().reverse()) {
				const mail = JSON.parse(fs.readFileSync(path.join(dir, f), "utf8")) as { to?: string; data?: { hash?: unknown } };
				if (mail.to?.toLowerCase() === email && typeof mail.data?.hash === "string") return mail.data.hash;
			}
		}
		if (Date.now() > deadline) throw new Error(`set-up: no confirmation mail to ${email} in ${dir}`);
		await sleep(100);
	}
}

/** Sign-up to sandbox API key, over HTTP as a merchant does it. Returns the Basic header value. */
async function setUpMerchant(baseUrl: string, dataDir: string): Promise<{ basic: string; organizationId: string }> {
	const email = `bench-${crypto.randomBytes(4).toString("hex")}@example.com`;
	const password = crypto.randomBytes(12).toString("base64url");
	expectStatus("register", await call(baseUrl, "POST", "/auth/email/register", { body: { email, password, firstName: "Bench", lastName: "Mark" } }), 204);
	const hash = await readConfirmationHash(dataDir, email);
	expectStatus("confirm", await call(baseUrl, "POST", "/auth/email/confirm", { body: { hash } }), 200);
	const login = await call(baseUrl, "POST", "/auth/email/login", { body: { email, password } });
	expectStatus("login", login, 200);
	const token = login.body.token as string;
	const orgs = await call(baseUrl, "GET", "/organizations", { token });
	expectStatus("organizations", orgs, 200);
	const sandbox = (orgs.body as Array<{ id: string; mode: string }>).find(o => o.mode === "sandbox");
	if (!sandbox) throw new Error("set-up: the new account has no sandbox organization");
	const created = await call(baseUrl, "POST", `/organizations/${sandbox.id}/api-keys`, { token, body: { name: "bench" } });
	expectStatus("create API key", created, 201);
	const basic = `Basic ${Buffer.from(`${created.body.key}:${created.body.secret}`).toString("base64")}`;
	expectStatus("key check", await call(baseUrl, "GET", "/api-keys/me", { basic }), 200);
	return { basic, organizationId: sandbox.id };
}

interface Target {
	networkId: string;
	tokenId: string;
	symbol: string;
	label: string;
}

/** An active test-network token, preferring USDC on Ethereum Sepolia, from the public listing. */
async function pickTestToken(baseUrl: string): Promise<Target> {
	const nets = await call(baseUrl, "GET", "/payments/networks?testnet=true&active=true");
	expectStatus("list test networks", nets, 200);
	const networks = (nets.body as Array<{ id: string; name: string; isActive: boolean }>).filter(n => n.isActive);
	if (networks.length === 0) throw new Error("set-up: no active test network is listed");
	networks.sort((a, b) => Number(b.name === "Ethereum Sepolia") - Number(a.name === "Ethereum Sepolia"));
	for (const network of networks) {
		const toks = await call(baseUrl, "GET", `/payments/networks/${network.id}/tokens?active=true`);
		expectStatus("list tokens", toks, 200);
		const tokens = (toks.body as Array<{ id: string; symbol: string; isActive: boolean }>).filter(t => t.isActive);
		const token = tokens.find(t => t.symbol === "USDC") || tokens[0];
		if (token) return { networkId: network.id, tokenId: token.id, symbol: token.symbol.toLowerCase(), label: `${token.symbol} on ${network.name}` };
	}
	throw new Error("set-up: no active token on any test network");
}

function intentBody(t: Target): string {
	return JSON.stringify({
		amount: "12.50",
		currency: t.symbol,
		payment_method_types: ["crypto"],
		tokenId: t.tokenId,
		networkId: t.networkId,
		return_url: "https://merchant.example.com/orders/1234/return",
		description: "Order 1234",
		metadata: { orderId: "1234" },
	});
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

function caseLine(r: CaseResult, floor?: CaseResult): string {
	if (!r.available || !r.load) return `${r.name}: not available${r.note ? ` (${r.note})` : ""}`;
	const l = r.load;
	let line = `${r.name}: ${l.rps.toFixed(0)} req/s p50 ${l.p50} ms p99 ${l.p99} ms`;
	if (floor) {
		line += floor.load ? ` floor ${floor.load.rps.toFixed(0)} req/s ratio ${(l.rps / floor.load.rps).toFixed(2)}` : " floor not measured";
	}
	return line + errorsNote(l);
}

function targetsLine(results: Map<string, CaseResult>): string {
	const rps = (n: string) => results.get(n)?.load?.rps;
	const clean = (n: string) => {
		const l = results.get(n)?.load;
		return !!l && l.non2xx === 0 && l.errors === 0;
	};
	const verdict = (value: number | undefined, min: number, fmt: (v: number) => string, name: string, ...needs: string[]) => {
		if (value === undefined || Number.isNaN(value)) return "n/a";
		const ok = value >= min && needs.every(clean);
		return `${ok ? "PASS" : "BELOW"} (${fmt(value)}${needs.every(clean) ? "" : `, ${name} had errors`})`;
	};
	const c = rps("create-intent");
	const fi = rps("floor-insert");
	const r = rps("retrieve-intent");
	const fh = rps("floor-hello");
	return [
		`targets: create-intent >= ${TARGETS.createRatio} x floor-insert ${verdict(c !== undefined && fi ? c / fi : undefined, TARGETS.createRatio, v => v.toFixed(2), "create-intent", "create-intent")}`,
		`create-intent >= ${TARGETS.createRps} req/s ${verdict(c, TARGETS.createRps, v => `${v.toFixed(0)} req/s`, "create-intent", "create-intent")}`,
		`retrieve-intent >= ${TARGETS.retrieveRatio} x floor-hello ${verdict(r !== undefined && fh ? r / fh : undefined, TARGETS.retrieveRatio, v => v.toFixed(2), "retrieve-intent", "retrieve-intent")}`,
	].join("; ");
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
	assertLoopback(SETTINGS.mysqlUrl);
	assertLoopback(SETTINGS.redisUrl);
	for (const f of [GATEWAY_ENTRY, FLOOR_ENTRY]) {
		if (!fs.existsSync(f)) throw new Error(`${f} is missing: run \`npm run build\` first (npm run bench does)`);
	}
	const started = new Date();
	// Other work on the machine skews every number: the report says how busy it was.
	const loadAtStart = os.loadavg()[0].toFixed(2);
	const workDir = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-bench-"));
	const dataDir = path.join(workDir, "data");
	fs.mkdirSync(dataDir);
	const dbName = `cpg_bench_${crypto.randomBytes(5).toString("hex")}`;
	const redisPrefix = `cpgb:${crypto.randomBytes(5).toString("hex")}:`;
	const databaseUrl = `${SETTINGS.mysqlUrl}/${dbName}`;
	const secrets = { jwt: crypto.randomBytes(32).toString("hex"), refresh: crypto.randomBytes(32).toString("hex"), master: crypto.randomBytes(32).toString("hex") };
	const gwOpts: GatewayOptions = { name: "gateway", databaseUrl, redisUrl: SETTINGS.redisUrl, redisPrefix, dataDir, workDir, secrets };

	let gateway: Gateway | null = null;
	let floor: Floor | null = null;
	let dbCreated = false;
	let ok = false;
	const cleanup = async () => {
		await stopChild(gateway);
		await stopChild(floor);
		if (dbCreated) {
			const conn = await mysql.createConnection(SETTINGS.mysqlUrl);
			await conn.query(`DROP DATABASE IF EXISTS \`${dbName}\``);
			await conn.end();
		}
		const redis = new Redis(SETTINGS.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
		try {
			await redis.connect();
			let cursor = "0";
			do {
				const [next, keys] = await redis.scan(cursor, "MATCH", `${redisPrefix}*`, "COUNT", 500);
				cursor = next;
				if (keys.length) await redis.del(...keys);
			} while (cursor !== "0");
		} finally {
			redis.disconnect();
		}
		if (ok && !process.env.BENCH_KEEP) fs.rmSync(workDir, { recursive: true, force: true });
		else log(`logs and profiles kept in ${workDir}`);
	};
	let interrupted = false;
	process.once("SIGINT", () => {
		interrupted = true;
		log("interrupted: cleaning up");
		void cleanup().finally(() => process.exit(130));
	});

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

		gateway = await startGateway(gwOpts);
		log(`gateway pid ${gateway.proc.pid} on ${gateway.baseUrl}`);
		const { basic, organizationId } = await setUpMerchant(gateway.baseUrl, dataDir);
		const target = await pickTestToken(gateway.baseUrl);
		log(`merchant ready; intents for ${target.label}`);
		const body = intentBody(target);
		const jsonKey = { Authorization: basic, "Content-Type": "application/json" };

		const results = new Map<string, CaseResult>();
		const want = (n: string) => SETTINGS.cases.includes(n);

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

		let profileReport = "";
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

		const lines: string[] = [];
		lines.push(`# npm run bench, ${started.toISOString()}, node ${process.version}, ${os.cpus().length} cpus, MySQL ${version.v}, ${SETTINGS.connections} connections, ${SETTINGS.seconds} s per case, load average at start ${loadAtStart}`);
		const cpuReport = [...results.values()].filter(r => r.cpu && r.load).map(r => `${r.name}: ${cpuLine(r.cpu!, r.load!.total)}`);
		lines.push("", "## where the time goes");
		if (cpuReport.length) lines.push("CPU during the measured runs (server = the process under test; cores of this machine):", ...cpuReport.map(l => `  ${l}`));
		if (profileReport) lines.push(profileReport);
		lines.push("");
		if (want("create-intent")) lines.push(caseLine(results.get("create-intent") || { name: "create-intent", available: false, note: "not run" }, results.get("floor-insert")));
		if (want("retrieve-intent")) lines.push(caseLine(results.get("retrieve-intent") || { name: "retrieve-intent", available: false, note: "not run" }, results.get("floor-hello")));
		for (const n of ["key-auth", "floor-insert", "floor-hello", "floor-select"]) if (results.has(n)) lines.push(caseLine(results.get(n)!));
		lines.push(targetsLine(results));
		process.stdout.write(`${lines.join("\n")}\n`);
		if (process.env.BENCH_JSON) {
			fs.writeFileSync(process.env.BENCH_JSON, JSON.stringify({ started, settings: SETTINGS, results: Object.fromEntries(results), profileReport }, null, 2));
		}
		ok = true;
	} finally {
		if (!interrupted) await cleanup();
	}
}

main().then(
	() => process.exit(0),
	err => {
		console.error(`bench failed: ${err instanceof Error ? err.message : String(err)}`);
		process.exit(1);
	},
);
