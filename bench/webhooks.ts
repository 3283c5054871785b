/**
 * Webhook-delivery case of `npm run bench` (docs/benchmarks.md "Webhook delivery"): events
 * delivered per second to a local receiver, against a floor measured in the same run. Everything
 * on 127.0.0.1.
 *
 * 1. A fresh MySQL database and Redis prefix; a receiver (bench/webhook-receiver.ts, a bare
 *    node:http process answering 200 "ok", counting, checking one signature in 50).
 * 2. Events: a gateway with every service but `webhooks` (so nothing is delivered yet); a merchant
 *    set up over HTTP with a sandbox API key whose webhookUrl is the receiver; N intents created
 *    and cancelled through the API with that key: one `payment_intent.canceled` outbox row each.
 *    The gateways run with NODE_ENV=development: production refuses http and loopback webhook
 *    URLs (the URL rules are the only production-only part of delivery).
 * 3. Delivery: that gateway stops; a gateway with only `webhooks,keys` starts and delivers the
 *    backlog. Timed until the receiver counted N requests and N deliveries are `delivered`.
 * 4. Floor: a bare Node process (bench/webhook-floor.ts) sends N bodies of the same size with
 *    the gateway's own `sendWebhook` and signature, at the same concurrency, no database.
 * A benchmark reports: it exits 0 unless it could not run at all.
 */
import { spawn, fork } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import mysql from "mysql2/promise";
import { formatSummary, summarizeProfile, CpuProfile } from "./cpu-profile";
import { diffCounts, mysqlCommandParser, startCountingProxy, CountingProxy } from "./wire-counter";
import type { ReceiverStats } from "./webhook-receiver";
import type { FloorDb } from "./webhook-floor";
import { READY_PER_SLOT } from "../lib/webhooks/config";
import { benchEntry, CHILD_EXEC_ARGV, childStopper, cleanUpOnSigint, dropRunState, envInt, freePort, GATEWAY_ENTRY, gatewayEnv, intentBody, machineBusySeconds, makeLog, pickTestToken, prepareRun, preflight, procCpuSeconds, runMain, serverPids, settingsOrExit, setUpMerchant, sleep, tail, waitForRoutes, Child, GatewayEnvOptions } from "./common";

const SERVICES_DIR = path.resolve(__dirname, "../services");
const RECEIVER_ENTRY = benchEntry("webhook-receiver");
const FLOOR_ENTRY = benchEntry("webhook-floor");
/** Issue 21's target (issue 4's was 1,000). */
const TARGET_EVENTS_PER_SECOND = 3000;

/** WEBHOOK_* of the bench's own environment go to the delivering gateway (documented tuning). */
function webhookEnv(): Record<string, string> {
	const out: Record<string, string> = {};
	for (const [k, v] of Object.entries(process.env)) if (k.startsWith("WEBHOOK_") && v !== undefined) out[k] = v;
	return out;
}

function loadSettings() {
	const wh = webhookEnv();
	const num = (k: string, d: number) => (wh[k] !== undefined && wh[k] !== "" ? Number(wh[k]) : d);
	return {
		events: envInt("BENCH_WEBHOOK_EVENTS", 20_000, 1),
		clients: envInt("BENCH_WEBHOOK_CLIENTS", 50, 1),
		timeoutSeconds: envInt("BENCH_WEBHOOK_TIMEOUT", 600, 10),
		profile: process.env.BENCH_WEBHOOK_PROFILE === "1",
		mysqlUrl: (process.env.BENCH_MYSQL_URL || "mysql://root@127.0.0.1:3306").replace(/\/+$/, ""),
		redisUrl: process.env.BENCH_REDIS_URL || "redis://127.0.0.1:6379/0",
		webhookEnv: wh,
		// One API key, one endpoint: the service sends at most min(global, per-endpoint) at once.
		concurrency: Math.min(num("WEBHOOK_CONCURRENCY", 64), num("WEBHOOK_CONCURRENCY_PER_ENDPOINT", 8)),
	};
}

// `npm run bench` runs this after run.ts; a run narrowed with BENCH_CASES (run.ts's cases) skips
// it unless BENCH_WEBHOOKS=1; BENCH_WEBHOOKS=0 always skips it.
if (process.env.BENCH_WEBHOOKS === "0" || (process.env.BENCH_CASES && process.env.BENCH_WEBHOOKS !== "1")) {
	process.stderr.write("[bench webhooks] skipped (BENCH_WEBHOOKS=0, or BENCH_CASES set without BENCH_WEBHOOKS=1)\n");
	process.exit(0);
}

const SETTINGS = settingsOrExit("bench webhooks", loadSettings);

const log = makeLog("bench webhooks");

const monoMs = () => Number(process.hrtime.bigint()) / 1e6;

// ---------------------------------------------------------------- CPU (Linux /proc), as run.ts

interface CpuSnap {
	at: number;
	gateway: number | null;
	receiver: number | null;
	mysqld: number | null;
	machine: number | null;
	bench: number;
}

function cpuSnap(gatewayPid: number | undefined, receiverPid: number | undefined, dbPid: number | undefined): CpuSnap {
	const u = process.cpuUsage();
	return { at: monoMs(), gateway: procCpuSeconds(gatewayPid), receiver: procCpuSeconds(receiverPid), mysqld: procCpuSeconds(dbPid), machine: machineBusySeconds(), bench: (u.user + u.system) / 1e6 };
}

/** CPU microseconds per event of the process under test (gateway or floor) and of mariadbd; null where /proc had no figure. */
function cpuPerEvent(a: CpuSnap, b: CpuSnap, events: number): { process: number | null; mysqld: number | null } {
	const us = (x: number | null, y: number | null) => (x === null || y === null ? null : ((y - x) * 1e6) / events);
	return { process: us(a.gateway, b.gateway), mysqld: us(a.mysqld, b.mysqld) };
}

function cpuReport(a: CpuSnap, b: CpuSnap, events: number): string {
	const seconds = (b.at - a.at) / 1000;
	const part = (name: string, x: number | null, y: number | null) => {
		if (x === null || y === null) return `${name} ?`;
		return `${name} ${((y - x) / seconds).toFixed(2)} (${(((y - x) * 1e6) / events).toFixed(0)} us/event)`;
	};
	return `cores busy over ${seconds.toFixed(1)} s: ${part("gateway", a.gateway, b.gateway)}, ${part("receiver", a.receiver, b.receiver)}, ${part("mariadb", a.mysqld, b.mysqld)}, ${part("bench process", a.bench, b.bench)}, whole machine ${a.machine === null || b.machine === null ? "?" : ((b.machine - a.machine) / seconds).toFixed(2)} of ${os.cpus().length}`;
}

// ---------------------------------------------------------------- child processes

/** A child process and when it was spawned (monoMs). */
interface Spawned extends Child {
	spawnedAt: number;
}

const stopChild = childStopper(log, 30_000);

/** The Redis URL is the bench's own (SETTINGS.redisUrl). */
interface GatewayOptions extends Omit<GatewayEnvOptions, "redisUrl"> {
	services: string[];
	workDir: string;
	extraEnv?: Record<string, string>;
	nodeArgs?: string[];
}

function spawnGateway(o: GatewayOptions, port: number): Spawned {
	const logFile = path.join(o.workDir, `${o.name}.log`);
	const out = fs.openSync(logFile, "a");
	const env: NodeJS.ProcessEnv = {
		// Development, not production: production refuses http:// and loopback webhook URLs, and the
		// receiver is http://127.0.0.1. Nothing else on the delivery path depends on NODE_ENV.
		...gatewayEnv({ ...o, redisUrl: SETTINGS.redisUrl }, port, "development"),
		SERVICES: o.services.join(","),
		...(o.extraEnv || {}),
	};
	const spawnedAt = monoMs();
	const proc = spawn(process.execPath, [...CHILD_EXEC_ARGV, ...(o.nodeArgs || []), GATEWAY_ENTRY], { cwd: o.workDir, env, stdio: ["ignore", out, out] });
	fs.closeSync(out);
	const exited = new Promise<number | null>(resolve => proc.once("exit", code => resolve(code)));
	return { proc, logFile, exited, spawnedAt };
}

/** The API gateway of set-up: waits until the business routes answer (GET /auth/me: 401). */
async function startApiGateway(o: GatewayOptions): Promise<Spawned & { baseUrl: string }> {
	const port = await freePort();
	const child = spawnGateway(o, port);
	const baseUrl = `http://127.0.0.1:${port}/api/v1`;
	await waitForRoutes(child, o.name, baseUrl, () => stopChild(child));
	return { ...child, baseUrl };
}

interface Receiver extends Spawned {
	url: string;
	request<T>(msg: Record<string, unknown>): Promise<T>;
}

async function startReceiver(workDir: string): Promise<Receiver> {
	const logFile = path.join(workDir, "receiver.log");
	const out = fs.openSync(logFile, "a");
	const spawnedAt = monoMs();
	const proc = fork(RECEIVER_ENTRY, [], { execArgv: CHILD_EXEC_ARGV, cwd: workDir, env: { PATH: process.env.PATH, NODE_ENV: "production" }, stdio: ["ignore", out, out, "ipc"] });
	fs.closeSync(out);
	const exited = new Promise<number | null>(resolve => proc.once("exit", code => resolve(code)));
	const port = await Promise.race([
		new Promise<number>(resolve => {
			const onPort = (m: { port?: number }) => {
				if (m?.port) {
					proc.off("message", onPort);
					resolve(m.port);
				}
			};
			proc.on("message", onPort);
		}),
		exited.then(code => {
			throw new Error(`receiver exited (code ${code}):\n${tail(logFile)}`);
		}),
		sleep(30_000).then(() => {
			throw new Error(`receiver did not start within 30 s:\n${tail(logFile)}`);
		}),
	]);
	let seq = 0;
	const waiting = new Map<number, (m: unknown) => void>();
	proc.on("message", (m: { seq?: number }) => {
		if (typeof m?.seq === "number") {
			waiting.get(m.seq)?.(m);
			waiting.delete(m.seq);
		}
	});
	const request = <T>(msg: Record<string, unknown>) =>
		new Promise<T>((resolve, reject) => {
			const id = ++seq;
			waiting.set(id, m => resolve(m as T));
			proc.send({ ...msg, seq: id }, err => err && reject(err));
		});
	return { proc, logFile, exited, spawnedAt, url: `http://127.0.0.1:${port}/hooks/bench`, request };
}

async function receiverStats(r: Receiver): Promise<ReceiverStats> {
	return (await r.request<{ stats: ReceiverStats }>({ cmd: "stats" })).stats;
}

interface FloorResult {
	ok: number;
	failed: number;
	seconds: number;
	p50: number;
	p99: number;
	firstError: string | null;
}

async function runFloor(workDir: string, job: { url: string; body: string; secret: string; events: number; concurrency: number; timeoutMs: number; db: FloorDb }, receiverPid: number | undefined, dbPid: number | undefined): Promise<{ result: FloorResult; cpu: string; perEvent: ReturnType<typeof cpuPerEvent> }> {
	const logFile = path.join(workDir, "floor.log");
	const out = fs.openSync(logFile, "a");
	const proc = fork(FLOOR_ENTRY, [], { execArgv: CHILD_EXEC_ARGV, cwd: workDir, env: { PATH: process.env.PATH, NODE_ENV: "production" }, stdio: ["ignore", out, out, "ipc"] });
	fs.closeSync(out);
	const exited = new Promise<number | null>(resolve => proc.once("exit", code => resolve(code)));
	const child: Spawned = { proc, logFile, exited, spawnedAt: monoMs() };
	try {
		await Promise.race([
			new Promise<void>(resolve => proc.once("message", () => resolve())),
			exited.then(code => {
				throw new Error(`floor exited (code ${code}):\n${tail(logFile)}`);
			}),
		]);
		const a = cpuSnap(proc.pid, receiverPid, dbPid);
		proc.send(job);
		const msg = await Promise.race([
			new Promise<{ done?: FloorResult; error?: string }>(resolve => proc.once("message", m => resolve(m as { done?: FloorResult; error?: string }))),
			exited.then(code => {
				throw new Error(`floor exited (code ${code}) before reporting:\n${tail(logFile)}`);
			}),
			sleep(SETTINGS.timeoutSeconds * 1000).then(() => {
				throw new Error(`floor did not finish within ${SETTINGS.timeoutSeconds} s`);
			}),
		]);
		const b = cpuSnap(proc.pid, receiverPid, dbPid);
		if (!msg.done) throw new Error(`floor failed: ${msg.error}`);
		return { result: msg.done, cpu: cpuReport(a, b, job.events).replace("gateway", "floor"), perEvent: cpuPerEvent(a, b, job.events) };
	} finally {
		await stopChild(child);
	}
}

// ---------------------------------------------------------------- HTTP set-up

/** The create-intent body of run.ts's create-intent case, for an active test token. */
async function eventIntentBody(baseUrl: string): Promise<string> {
	const target = await pickTestToken(baseUrl);
	log(`intents in ${target.label}`);
	return intentBody(target);
}

/** N intents created and cancelled with the key, `clients` at a time: one canceled event each. */
async function makeEvents(baseUrl: string, basic: string, body: string, n: number, clients: number): Promise<number> {
	const headers = { Authorization: basic, "Content-Type": "application/json" };
	let started = 0;
	let done = 0;
	let lastLog = Date.now();
	const worker = async () => {
		while (started < n) {
			started++;
			const created = await fetch(`${baseUrl}/payment_intents`, { method: "POST", headers, body, signal: AbortSignal.timeout(30_000) });
			const intent = (await created.json()) as { id?: string };
			if ((created.status !== 201 && created.status !== 200) || !intent.id) throw new Error(`POST /payment_intents answered ${created.status} ${JSON.stringify(intent).slice(0, 200)}`);
			const canceled = await fetch(`${baseUrl}/payment_intents/${intent.id}/cancel`, { method: "POST", headers, body: "{}", signal: AbortSignal.timeout(30_000) });
			const text = await canceled.text();
			if (canceled.status !== 200) throw new Error(`POST /payment_intents/:id/cancel answered ${canceled.status} ${text.slice(0, 200)}`);
			done++;
			if (Date.now() - lastLog > 5000) {
				lastLog = Date.now();
				log(`  ${done} / ${n} intents created and cancelled`);
			}
		}
	};
	const t0 = monoMs();
	await Promise.all(Array.from({ length: Math.min(clients, n) }, worker));
	return (monoMs() - t0) / 1000;
}

// ---------------------------------------------------------------- measuring

function percentile(sorted: number[], p: number): number {
	if (sorted.length === 0) return NaN;
	return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** Keeps the samples of a --cpu-prof profile between two monotonic instants (ms; V8's ticks are CLOCK_MONOTONIC us). */
function trimProfile(p: CpuProfile, fromMs: number, toMs: number): CpuProfile {
	const samples: number[] = [];
	const deltas: number[] = [];
	let t = p.startTime;
	let last = -1;
	for (let i = 0; i < p.samples.length; i++) {
		t += p.timeDeltas[i];
		if (t < fromMs * 1000 || t > toMs * 1000) continue;
		deltas.push(last < 0 ? 0 : t - last);
		last = t;
		samples.push(p.samples[i]);
	}
	return { ...p, samples, timeDeltas: deltas, startTime: fromMs * 1000, endTime: toMs * 1000 };
}

async function main(): Promise<void> {
	preflight(SETTINGS.mysqlUrl, SETTINGS.redisUrl, [GATEWAY_ENTRY, RECEIVER_ENTRY, FLOOR_ENTRY]);
	const allServices = fs
		.readdirSync(SERVICES_DIR)
		.map(f => /^(.+)\.service\.[jt]s$/.exec(f)?.[1])
		.filter((s): s is string => !!s);
	if (!allServices.includes("webhooks")) throw new Error(`no webhooks service in ${SERVICES_DIR}`);
	const started = new Date();
	const loadAtStart = os.loadavg()[0].toFixed(2);
	const { workDir, dataDir, dbName, redisPrefix, databaseUrl, secrets } = prepareRun(SETTINGS.mysqlUrl, "cpg-bench-webhooks-");
	const N = SETTINGS.events;

	let gateway: Child | null = null;
	let receiver: Receiver | null = null;
	let proxy: CountingProxy | null = null;
	let db: mysql.Connection | null = null;
	let dbCreated = false;
	let ok = false;
	const cleanup = async () => {
		await stopChild(gateway);
		await stopChild(receiver);
		await proxy?.close().catch(() => undefined);
		await db?.end().catch(() => undefined);
		await dropRunState(SETTINGS.mysqlUrl, dbCreated ? dbName : null, SETTINGS.redisUrl, redisPrefix);
		if (ok && !process.env.BENCH_KEEP) fs.rmSync(workDir, { recursive: true, force: true });
		else log(`logs${SETTINGS.profile ? " and profiles" : ""} kept in ${workDir}`);
	};
	const interrupted = cleanUpOnSigint(log, cleanup);

	try {
		log(`node ${process.version}, ${os.cpus().length} cpus, ${N} events, work dir ${workDir}`);
		const admin = await mysql.createConnection(SETTINGS.mysqlUrl);
		await admin.query(`CREATE DATABASE \`${dbName}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
		dbCreated = true;
		const [[version]] = (await admin.query("SELECT VERSION() AS v")) as unknown as [[{ v: string }]];
		await admin.end();
		db = await mysql.createConnection(`${databaseUrl}`);
		// The gateway writes DATETIMEs in UTC: read them back the same way.
		await db.query("SET time_zone = '+00:00'");
		log(`database ${dbName} (${version.v}), Redis prefix ${redisPrefix}`);

		receiver = await startReceiver(workDir);
		log(`receiver pid ${receiver.proc.pid} at ${receiver.url}`);
		const dbPid = serverPids().mysqld;
		const base: Omit<GatewayOptions, "name" | "services"> = { databaseUrl, redisPrefix, dataDir, workDir, secrets };

		// ---- events, with nothing delivering them
		const api = await startApiGateway({ ...base, name: "gateway-events", services: allServices.filter(s => s !== "webhooks") });
		gateway = api;
		log(`events gateway pid ${api.proc.pid} (every service but webhooks)`);
		const merchant = await setUpMerchant(api.baseUrl, dataDir, receiver.url);
		const body = await eventIntentBody(api.baseUrl);
		log(`creating and cancelling ${N} intents, ${SETTINGS.clients} clients`);
		const genSeconds = await makeEvents(api.baseUrl, merchant.basic, body, N, SETTINGS.clients);
		log(`events made in ${genSeconds.toFixed(1)} s (${(N / genSeconds).toFixed(0)} intents/s, each a create and a cancel)`);
		await stopChild(gateway);
		gateway = null;
		const [outbox] = (await db.query("SELECT type, COUNT(*) AS n, SUM(publishedAt IS NULL) AS unpublished, SUM(apiKeyId = ?) AS ofKey FROM outbox_events GROUP BY type", [merchant.keyId])) as unknown as [Array<{ type: string; n: number; unpublished: number; ofKey: number }>];
		const canceled = outbox.find(r => r.type === "payment_intent.canceled");
		const totalOutbox = outbox.reduce((s, r) => s + Number(r.n), 0);
		if (!canceled || Number(canceled.n) !== N || Number(canceled.unpublished) !== N || Number(canceled.ofKey) !== N || totalOutbox !== N) {
			throw new Error(`expected ${N} unpublished payment_intent.canceled outbox rows of the key and nothing else, found ${JSON.stringify(outbox)}`);
		}
		log(`${N} unpublished payment_intent.canceled outbox rows`);

		// ---- delivery
		await receiver.request({ cmd: "reset", secret: merchant.secret, sampleEvery: 50 });
		let deliverUrl = databaseUrl;
		if (SETTINGS.profile) {
			const u = new URL(SETTINGS.mysqlUrl);
			proxy = await startCountingProxy({ host: u.hostname, port: Number(u.port || 3306) }, mysqlCommandParser);
			const p = new URL(databaseUrl);
			p.hostname = "127.0.0.1";
			p.port = String(proxy.port);
			deliverUrl = p.toString();
		}
		const profileDir = path.join(workDir, "profiles");
		const deliverOpts: GatewayOptions = {
			...base,
			databaseUrl: deliverUrl,
			name: "gateway-deliver",
			services: ["webhooks", "keys"],
			extraEnv: SETTINGS.webhookEnv,
			nodeArgs: SETTINGS.profile ? ["--cpu-prof", `--cpu-prof-dir=${profileDir}`] : [],
		};
		const wh = Object.entries(SETTINGS.webhookEnv).map(([k, v]) => `${k}=${v}`).join(" ");
		log(`delivering: gateway with SERVICES=webhooks,keys${wh ? `, ${wh}` : " (WEBHOOK_* defaults)"}${SETTINGS.profile ? ", --cpu-prof and a counting MySQL proxy" : ""}`);
		const cpu0 = cpuSnap(undefined, receiver.proc.pid, dbPid);
		const deliver = spawnGateway(deliverOpts, await freePort());
		gateway = deliver;
		const sql0 = proxy?.snapshot() ?? {};
		let relayStartedAt: number | null = null;
		let cpuStart: CpuSnap | null = null;
		let doneAt: number | null = null;
		let stats: ReceiverStats = await receiverStats(receiver);
		let delivered = 0;
		const deadline = monoMs() + SETTINGS.timeoutSeconds * 1000;
		let lastLog = monoMs();
		while (doneAt === null) {
			if (deliver.proc.exitCode !== null || deliver.proc.signalCode !== null) throw new Error(`delivering gateway exited (code ${deliver.proc.exitCode}); log ${deliver.logFile}:\n${tail(deliver.logFile)}`);
			if (monoMs() > deadline) break;
			if (relayStartedAt === null) {
				// Before the relay starts the database is idle: look often (start-up vs. delivery).
				const [rows] = (await db.query("SELECT 1 AS x FROM outbox_events WHERE publishedAt IS NOT NULL LIMIT 1")) as unknown as [unknown[]];
				if (rows.length) {
					relayStartedAt = monoMs();
					cpuStart = cpuSnap(deliver.proc.pid, receiver.proc.pid, dbPid);
				} else {
					await sleep(20);
					continue;
				}
			}
			stats = await receiverStats(receiver);
			if (stats.requests >= N) {
				const [[row]] = (await db.query("SELECT COUNT(*) AS n FROM webhook_deliveries WHERE status = 'delivered'")) as unknown as [[{ n: number }]];
				delivered = Number(row.n);
				if (delivered >= N) {
					doneAt = monoMs();
					break;
				}
				await sleep(20);
				continue;
			}
			if (monoMs() - lastLog > 5000) {
				lastLog = monoMs();
				log(`  receiver has ${stats.requests} / ${N}`);
			}
			await sleep(100);
		}
		const cpuEnd = cpuSnap(deliver.proc.pid, receiver.proc.pid, dbPid);
		const sql = proxy ? diffCounts(sql0, proxy.snapshot()) : null;
		stats = await receiverStats(receiver);
		await stopChild(gateway);
		gateway = null;

		const [[times]] = (await db.query(
			`SELECT UNIX_TIMESTAMP(MIN(o.publishedAt)) * 1000 AS relayFrom, UNIX_TIMESTAMP(MAX(o.publishedAt)) * 1000 AS relayTo,
			        (SELECT UNIX_TIMESTAMP(MAX(deliveredAt)) * 1000 FROM webhook_deliveries) AS lastDelivered,
			        (SELECT COUNT(*) FROM webhook_deliveries WHERE status = 'delivered') AS delivered,
			        (SELECT COUNT(*) FROM webhook_deliveries) AS deliveries
			 FROM outbox_events o`,
		)) as unknown as [[{ relayFrom: string | null; relayTo: string | null; lastDelivered: string | null; delivered: number; deliveries: number }]];
		const [logs] = (await db.query("SELECT durationMs, success, attemptNumber FROM webhook_logs")) as unknown as [Array<{ durationMs: number | null; success: number; attemptNumber: number }>];
		const [[sample]] = (await db.query("SELECT body, organizationId, apiKeyId, userId, type FROM webhook_deliveries LIMIT 1")) as unknown as [[{ body: string; organizationId: string; apiKeyId: number; userId: number | null; type: string } | undefined]];
		const durations = logs.map(l => Number(l.durationMs ?? NaN)).filter(n => !Number.isNaN(n)).sort((a, b) => a - b);
		const failedAttempts = logs.filter(l => !l.success).length;
		delivered = Number(times.delivered);
		const complete = doneAt !== null;
		// Headline window: from the relay's first commit (the first outbox row published) to the last
		// delivery recorded, both from the gateway's own clock; the bench's polling adds nothing to it.
		const dbWindow = times.relayFrom !== null && times.lastDelivered !== null ? (Number(times.lastDelivered) - Number(times.relayFrom)) / 1000 : NaN;
		const eventsPerSecond = complete && dbWindow > 0 ? N / dbWindow : NaN;
		const fromSpawn = complete ? (doneAt! - deliver.spawnedAt) / 1000 : NaN;
		const relaySeconds = times.relayFrom !== null && times.relayTo !== null ? (Number(times.relayTo) - Number(times.relayFrom)) / 1000 : NaN;
		const startup = relayStartedAt !== null ? (relayStartedAt - deliver.spawnedAt) / 1000 : NaN;
		const receiverWindow = stats.firstAt !== null && stats.lastAt !== null ? (stats.lastAt - stats.firstAt) / 1000 : NaN;

		let profileReport = "";
		if (SETTINGS.profile && cpuStart) {
			const file = fs.existsSync(profileDir) ? fs.readdirSync(profileDir).find(f => f.endsWith(".cpuprofile")) : undefined;
			if (file) {
				const full = JSON.parse(fs.readFileSync(path.join(profileDir, file), "utf8")) as CpuProfile;
				const trimmed = trimProfile(full, cpuStart.at, (doneAt ?? cpuEnd.at));
				profileReport = `profile of the delivering gateway from the relay's start to the last delivery (${trimmed.samples.length} samples of ${full.samples.length}; ${path.join(profileDir, file)}):\n${formatSummary(summarizeProfile(trimmed, 20), N)}`;
			} else profileReport = "profile: no .cpuprofile written";
		}
		if (!sample) throw new Error("no delivery row to take the floor's body from");

		// ---- floor
		await receiver.request({ cmd: "reset", secret: merchant.secret, sampleEvery: 50 });
		// The floor writes what a delivery must (relay, claim, outcome and log rows) into the same
		// tables, in claims of the size the gateway makes (half of what one endpoint may hold).
		const floorDb: FloorDb = { url: databaseUrl, organizationId: sample.organizationId, apiKeyId: Number(sample.apiKeyId), userId: sample.userId === null ? null : Number(sample.userId), type: sample.type, leaseMs: 30_000, batch: Math.ceil((SETTINGS.concurrency * (1 + READY_PER_SLOT)) / 2) };
		log(`floor: ${N} sends of ${Buffer.byteLength(sample.body)}-byte bodies, concurrency ${SETTINGS.concurrency}, with the database writes in batches of ${floorDb.batch}`);
		const floor = await runFloor(workDir, { url: receiver.url, body: sample.body, secret: merchant.secret, events: N, concurrency: SETTINGS.concurrency, timeoutMs: 10_000, db: floorDb }, receiver.proc.pid, dbPid);
		const floorStats = await receiverStats(receiver);
		const floorRate = floor.result.ok / floor.result.seconds;

		const lines: string[] = [];
		lines.push(`# webhook delivery, ${started.toISOString()}, node ${process.version}, ${os.cpus().length} cpus, MySQL ${version.v}, ${N} events, one API key (endpoint), concurrency ${SETTINGS.concurrency} (min of WEBHOOK_CONCURRENCY, WEBHOOK_CONCURRENCY_PER_ENDPOINT), load average at start ${loadAtStart}`);
		lines.push(`set-up: ${N} intents created and cancelled over HTTP in ${genSeconds.toFixed(1)} s; delivering gateway: SERVICES=webhooks,keys, NODE_ENV=development${wh ? `, ${wh}` : ""}`);
		lines.push("", "## where the time goes");
		lines.push(`delivering gateway: start-up ${startup.toFixed(2)} s (spawn to first outbox row published), relay of the outbox ${relaySeconds.toFixed(2)} s, first to last request at the receiver ${receiverWindow.toFixed(2)} s, relay start to last delivery recorded ${dbWindow.toFixed(2)} s; spawn to done ${fromSpawn.toFixed(2)} s (${(N / fromSpawn).toFixed(0)} events/s including start-up)`);
		if (cpuStart) lines.push(`CPU from relay start to done: ${cpuReport(cpuStart, cpuEnd, N)}`);
		else lines.push(`CPU from spawn: ${cpuReport(cpu0, cpuEnd, N)}`);
		lines.push(`deliveries: ${times.deliveries} rows, ${delivered} delivered; attempts logged ${logs.length} (${failedAttempts} failed); receiver: ${stats.requests} requests, ${stats.distinctIds} distinct event ids, ${stats.checked} signatures checked, ${stats.badSignatures} bad`);
		lines.push(`attempt durationMs (webhook_logs): p50 ${percentile(durations, 50)} p90 ${percentile(durations, 90)} p99 ${percentile(durations, 99)} max ${durations[durations.length - 1]}`);
		if (sql) {
			const total = Object.values(sql).reduce((a, b) => a + b, 0);
			lines.push(`MySQL commands (counting proxy, spawn to done): ${(total / N).toFixed(2)} per event: ${Object.entries(sql).sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${(n / N).toFixed(3)}`).join(", ")}`);
		}
		if (profileReport) lines.push(profileReport);
		lines.push(`floor: ${floor.result.ok} ok, ${floor.result.failed} failed${floor.result.firstError ? ` (${floor.result.firstError})` : ""} in ${floor.result.seconds.toFixed(2)} s, attempt p50 ${floor.result.p50} ms p99 ${floor.result.p99} ms; receiver ${floorStats.requests} requests, ${floorStats.badSignatures} bad of ${floorStats.checked} checked; ${floor.cpu}`);
		lines.push("");
		const problems: string[] = [];
		if (!complete) problems.push(`not finished within ${SETTINGS.timeoutSeconds} s: ${stats.requests} received, ${delivered} delivered`);
		if (stats.distinctIds !== N && complete) problems.push(`receiver saw ${stats.distinctIds} distinct event ids for ${N} events`);
		if (stats.badSignatures > 0) problems.push(`${stats.badSignatures} bad signatures`);
		if (failedAttempts > 0) problems.push(`${failedAttempts} failed attempts`);
		if (floor.result.failed > 0) problems.push(`floor: ${floor.result.failed} failed`);
		const note = problems.length ? ` !! ${problems.join("; ")}` : "";
		const rate = Number.isNaN(eventsPerSecond) ? "n/a" : eventsPerSecond.toFixed(0);
		const verdict = !Number.isNaN(eventsPerSecond) && eventsPerSecond >= TARGET_EVENTS_PER_SECOND && problems.length === 0 ? "PASS" : "BELOW";
		// CPU per event (process + mariadbd) against the floor's: stable across machines where events/s is not.
		const gw = cpuStart ? cpuPerEvent(cpuStart, cpuEnd, N) : { process: null, mysqld: null };
		const fl = floor.perEvent;
		const fmt = (x: number | null) => (x === null ? "?" : x.toFixed(0));
		const sum = (p: { process: number | null; mysqld: number | null }) => (p.process === null || p.mysqld === null ? null : p.process + p.mysqld);
		const cpuRatio = sum(gw) !== null && sum(fl) ? (sum(gw)! / sum(fl)!).toFixed(2) : "n/a";
		lines.push(
			`webhook-delivery CPU per event: gateway ${fmt(gw.process)} us + mariadb ${fmt(gw.mysqld)} us, floor ${fmt(fl.process)} us + mariadb ${fmt(fl.mysqld)} us, ratio ${cpuRatio}; load average now ${os.loadavg()[0].toFixed(2)}`,
		);
		lines.push(
			`webhook-delivery: ${rate} events/s p50 ${percentile(durations, 50)} ms p99 ${percentile(durations, 99)} ms floor ${floorRate.toFixed(0)} events/s ratio ${Number.isNaN(eventsPerSecond) ? "n/a" : (eventsPerSecond / floorRate).toFixed(2)} (target >= ${TARGET_EVENTS_PER_SECOND} events/s ${verdict})${note}`,
		);
		process.stdout.write(`${lines.join("\n")}\n`);
		if (process.env.BENCH_WEBHOOK_JSON) {
			fs.writeFileSync(process.env.BENCH_WEBHOOK_JSON, JSON.stringify({ started, settings: SETTINGS, eventsPerSecond, floorRate, dbWindow, startup, relaySeconds, receiverWindow, stats, floor: floor.result }, null, 2));
		}
		ok = true;
	} finally {
		if (!interrupted()) await cleanup();
	}
}

runMain("bench webhooks", main);
