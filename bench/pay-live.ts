/**
 * Pay page live status (docs/benchmarks.md "Pay page live status"): what idle event streams cost.
 * Everything on 127.0.0.1.
 *
 * 1. A fresh MySQL database and Redis prefix; the gateway as `npm start` ships it (one process,
 *    every service, production, MySQL, Redis), its DATABASE_URL through a counting TCP proxy in
 *    this process (bench/wire-counter.ts: every command the node sends to MySQL).
 * 2. N open sandbox checkouts (default 2,000, the per-node stream limit) inserted directly.
 * 3. Baseline: SECONDS (default 30) with no stream open: the node's CPU (/proc) and its MySQL
 *    commands per second (its background loops: expiry sweep, outbox relay, withdrawals feed...).
 * 4. N streams `GET /pay/:slug/events?transaction=<id>` opened from this process, each waited for
 *    its first `event: status`; a few seconds' settling; then the same SECONDS measured again.
 *    The difference is what the idle streams cost; the commands are compared with what the
 *    safety-net poll alone should cost (ceil(N / 1,000) batched calls x 4 reads per mean delay of
 *    0.75 x PAY_EVENTS_POLL_MS) and with the 1 s poll per stream it replaced (computed).
 * 5. One checkout paid with the sandbox simulation: how long until its stream shows it.
 * Prints the report on stdout; exits 0 unless it could not run.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import mysql from "mysql2/promise";
import { getAddress } from "ethers";
import { networkIdFor, tokenIdFor } from "../lib/networks/catalogue";
import { childStopper, cleanUpOnSigint, createRunDatabase, dropRunState, envInt, freePort, gatewayEnv, insertCheckouts, makeLog, prepareRun, preflight, procCpuSeconds, runMain, settingsOrExit, sleep, startNodeChild, waitForRoutes, GATEWAY_ENTRY, Child } from "./common";
import { sseParser } from "./sse-client";
import { diffCounts, mysqlCommandParser, startCountingProxy, Counts, CountingProxy } from "./wire-counter";

const log = makeLog("pay-live");
const stopChild = childStopper(log, 30_000);

const SETTINGS = settingsOrExit("pay-live bench", () => ({
	mysqlUrl: (process.env.BENCH_MYSQL_URL || "mysql://root@127.0.0.1:3306").replace(/\/+$/, ""),
	redisUrl: process.env.BENCH_REDIS_URL || "redis://127.0.0.1:6379/0",
	streams: envInt("BENCH_LIVE_STREAMS", 2_000, 1),
	seconds: envInt("BENCH_LIVE_SECONDS", 30, 5),
	/** The gateway's PAY_EVENTS_POLL_MS; unset: its default. */
	pollMs: process.env.BENCH_LIVE_POLL_MS ? envInt("BENCH_LIVE_POLL_MS", 30_000, 100) : null,
}));

const NET = networkIdFor("ethereum-sepolia");
const USDC = tokenIdFor("ethereum-sepolia", "USDC");
const DEFAULT_POLL_MS = 30_000;

interface Stream {
	req: http.ClientRequest;
	statuses: Array<{ at: number; data: any }>;
	ended: boolean;
}

/** One event stream, resolved at its first `event: status`. */
function openStream(agent: http.Agent, url: string): Promise<Stream> {
	return new Promise((resolve, reject) => {
		const stream: Stream = { req: null as unknown as http.ClientRequest, statuses: [], ended: false };
		stream.req = http.get(url, { agent, headers: { Accept: "text/event-stream" } }, res => {
			if (res.statusCode !== 200) {
				res.resume();
				return reject(new Error(`${url}: HTTP ${res.statusCode}`));
			}
			res.setEncoding("utf8");
			res.on(
				"data",
				sseParser((event, data) => {
					if (event !== "status") return;
					stream.statuses.push({ at: performance.now(), data: JSON.parse(data) });
					if (stream.statuses.length === 1) resolve(stream);
				}),
			);
			res.on("end", () => (stream.ended = true));
			res.on("error", () => undefined);
		});
		stream.req.on("error", reject);
	});
}

interface Mark {
	at: number;
	cpu: number | null;
	sql: Counts;
}

function total(c: Counts): number {
	return Object.values(c).reduce((a, b) => a + b, 0);
}

async function main(): Promise<void> {
	preflight(SETTINGS.mysqlUrl, SETTINGS.redisUrl, [GATEWAY_ENTRY]);
	const run = prepareRun(SETTINGS.mysqlUrl, "cpg-bench-live-");
	const N = SETTINGS.streams;
	const pollMs = SETTINGS.pollMs ?? DEFAULT_POLL_MS;
	let gateway: Child | null = null;
	let proxy: CountingProxy | null = null;
	let dbCreated = false;
	let ok = false;
	const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
	const streams: Stream[] = [];
	const cleanup = async () => {
		for (const s of streams) s.req.destroy();
		await stopChild(gateway);
		await proxy?.close().catch(() => undefined);
		await dropRunState(SETTINGS.mysqlUrl, dbCreated ? run.dbName : null, SETTINGS.redisUrl, run.redisPrefix);
		if (ok && !process.env.BENCH_KEEP) fs.rmSync(run.workDir, { recursive: true, force: true });
		else log(`logs kept in ${run.workDir}`);
	};
	const interrupted = cleanUpOnSigint(log, cleanup);
	const loadAtStart = os.loadavg().map(l => l.toFixed(2)).join(" ");
	try {
		await createRunDatabase(SETTINGS.mysqlUrl, run.dbName);
		dbCreated = true;
		const u = new URL(SETTINGS.mysqlUrl);
		proxy = await startCountingProxy({ host: u.hostname, port: Number(u.port || 3306) }, mysqlCommandParser);
		const proxied = new URL(run.databaseUrl);
		proxied.port = String(proxy.port);
		const port = await freePort();
		const env = gatewayEnv({ name: "live", databaseUrl: proxied.toString(), redisUrl: SETTINGS.redisUrl, redisPrefix: run.redisPrefix, dataDir: run.dataDir, secrets: run.secrets }, port, "production");
		if (SETTINGS.pollMs !== null) env.PAY_EVENTS_POLL_MS = String(SETTINGS.pollMs);
		gateway = startNodeChild(env as Record<string, string>, run.workDir, path.join(run.workDir, "gateway.log"));
		const origin = `http://127.0.0.1:${port}`;
		await waitForRoutes(gateway, "live", `${origin}/api/v1`, () => stopChild(gateway));
		const pid = gateway.proc.pid;
		log(`gateway pid ${pid} (every service, MySQL through a counting proxy), PAY_EVENTS_POLL_MS=${pollMs}`);

		await insertCheckouts(run.databaseUrl, N, { chainType: "evm", networkId: NET, row: () => ({ address: getAddress(`0x${crypto.randomBytes(20).toString("hex")}`), tokenId: USDC, amount: "1" }) });
		const db = await mysql.createConnection(run.databaseUrl);
		// Pay page slugs are `pl_` and letters/digits (insertCheckouts makes the watcher benches' own).
		await db.query("UPDATE payment_links SET slug = CONCAT('pl_', REPLACE(id, '-', ''))");
		const [rows] = (await db.query("SELECT t.id, l.slug FROM transactions t JOIN payment_links l ON l.id = t.paymentLinkId ORDER BY t.id")) as unknown as [Array<{ id: string; slug: string }>];
		await db.end();
		log(`${rows.length} open checkouts inserted`);

		const mark = (): Mark => ({ at: performance.now(), cpu: procCpuSeconds(pid), sql: proxy!.snapshot() });
		const measure = async (label: string) => {
			const a = mark();
			await sleep(SETTINGS.seconds * 1000);
			const b = mark();
			const wall = (b.at - a.at) / 1000;
			const cpuPct = a.cpu === null || b.cpu === null ? null : ((b.cpu - a.cpu) / wall) * 100;
			const sql = diffCounts(a.sql, b.sql);
			log(`${label}: ${wall.toFixed(1)} s, CPU ${cpuPct?.toFixed(2) ?? "n/a"} % of a core, MySQL ${JSON.stringify(sql)}`);
			return { wall, cpuPct, sql, perSecond: total(sql) / wall };
		};

		log(`baseline: ${SETTINGS.seconds} s with no stream open`);
		await sleep(3_000);
		const idle = await measure("no streams");

		log(`opening ${N} event streams`);
		const beforeOpen = proxy.snapshot();
		const t0 = performance.now();
		for (let i = 0; i < rows.length; i += 200) {
			streams.push(...(await Promise.all(rows.slice(i, i + 200).map(r => openStream(agent, `${origin}/pay/${r.slug}/events?transaction=${r.id}`)))));
		}
		const openCommands = total(diffCounts(beforeOpen, proxy.snapshot()));
		const perRead = openCommands / N;
		log(`${streams.length} streams open in ${((performance.now() - t0) / 1000).toFixed(1)} s; ${openCommands} MySQL commands for their first reads (${perRead.toFixed(1)} a read)`);
		await sleep(3_000);
		const live = await measure(`${N} idle streams`);
		const dropped = streams.filter(s => s.ended).length;

		// A payment on one checkout: its stream shows it (woken by the event, not the poll).
		const target = streams[Math.floor(streams.length / 2)];
		const tx = target.statuses[0].data.transaction as { id: string };
		const slug = rows.find(r => r.id === tx.id)!.slug;
		const t1 = performance.now();
		const sim = await fetch(`${origin}/api/v1/payments/links/${slug}/simulate`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ transactionId: tx.id }) });
		if (sim.status !== 201 && sim.status !== 200) throw new Error(`simulate: HTTP ${sim.status} ${await sim.text()}`);
		const answered = performance.now();
		while (!target.statuses.some(s => s.data.transaction.status === "completed")) {
			if (performance.now() - t1 > 60_000) throw new Error("the simulated payment did not reach its stream within 60 s");
			await sleep(5);
		}
		const shown = target.statuses.find(s => s.data.transaction.status === "completed")!.at;

		const meanPollS = (0.75 * pollMs) / 1000;
		const expected = (Math.ceil(N / 1000) * 4) / meanPollS;
		const streamsCpu = live.cpuPct !== null && idle.cpuPct !== null ? live.cpuPct - idle.cpuPct : null;
		const streamsSql = live.perSecond - idle.perSecond;
		const loadAtEnd = os.loadavg().map(l => l.toFixed(2)).join(" ");
		ok = true;
		console.log(`# Pay page live status (bench/pay-live.ts), ${new Date().toISOString()}, node ${process.version}, ${os.cpus().length} cpus`);
		console.log(`load average at start ${loadAtStart}, at end ${loadAtEnd}`);
		console.log(
			`pay-live: ${N} idle event streams on one gateway node (every service, MySQL), PAY_EVENTS_POLL_MS=${pollMs}, ${SETTINGS.seconds} s each: ` +
				`node CPU ${live.cpuPct?.toFixed(2) ?? "n/a"} % of a core with the streams, ${idle.cpuPct?.toFixed(2) ?? "n/a"} % without (the streams: ${streamsCpu?.toFixed(2) ?? "n/a"} %); ` +
				`MySQL commands ${live.perSecond.toFixed(1)}/s with, ${idle.perSecond.toFixed(1)}/s without (the streams: ${streamsSql.toFixed(1)}/s; ` +
				`the safety-net poll alone: ${Math.ceil(N / 1000)} batched calls x 4 reads / ${meanPollS.toFixed(1)} s mean delay = ${expected.toFixed(2)}/s; ` +
				`a 1 s poll per stream, as before: ${(N * perRead).toFixed(0)}/s, computed); ${dropped} streams ended early`,
		);
		console.log(`pay-live: a simulated payment (POST .../simulate answered in ${(answered - t1).toFixed(0)} ms) showed on its stream ${(shown - t1).toFixed(0)} ms after the request`);
		console.log(`pay-live MySQL commands, with streams: ${JSON.stringify(live.sql)}; without: ${JSON.stringify(idle.sql)}`);
	} finally {
		if (!interrupted()) await cleanup();
	}
}

runMain("pay-live bench", main);
