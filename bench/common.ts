/**
 * What bench/run.ts and bench/webhooks.ts share: settings, logging, child processes, CPU
 * accounting from /proc, the HTTP set-up of a merchant and the clean-up of a run's database and
 * Redis keys. Everything on 127.0.0.1.
 */
import { ChildProcess, spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import mysql from "mysql2/promise";
import Redis from "ioredis";
import { Keypair } from "@solana/web3.js";
import { encodeBase58 } from "ethers";
import type { ServiceBroker } from "moleculer";
import type { NetworkWatcher, RunnerDeps, StepTimings } from "../lib/watchers/runner";

/** Run from source (`node -r ./test/helpers/ts-register.js bench/<name>.ts`) rather than built to dist/bench/. */
export const FROM_SOURCE = path.extname(__filename) === ".ts";
/** Node options a child needs to run a sibling module: the tests' TS loader when run from source. */
export const CHILD_EXEC_ARGV = FROM_SOURCE ? ["-r", path.resolve(__dirname, "../test/helpers/ts-register.js")] : [];
// Compiled to dist/bench/: the gateway's entry is dist/lib/start.js; from source, lib/start.ts.
export const GATEWAY_ENTRY = path.resolve(__dirname, FROM_SOURCE ? "../lib/start.ts" : "../lib/start.js");
/** A sibling bench module (`floor-server`, ...) as this run can start it: `.ts` from source, `.js` built. */
export function benchEntry(name: string): string {
	return path.join(__dirname, `${name}${FROM_SOURCE ? ".ts" : ".js"}`);
}

export function envInt(name: string, fallback: number, min = 0): number {
	const raw = process.env[name];
	if (raw === undefined || raw === "") return fallback;
	const n = Number(raw);
	if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be a whole number >= ${min}, got "${raw}"`);
	return n;
}

/** The settings, or `<label>: <message>` on stderr and exit 1. */
export function settingsOrExit<T>(label: string, load: () => T): T {
	try {
		return load();
	} catch (err) {
		console.error(`${label}: ${(err as Error).message}`);
		process.exit(1);
	}
}

/** Runs main: exit 0 when it resolves, `<label> failed: <message>` on stderr and exit 1 when it throws. */
export function runMain(label: string, main: () => Promise<void>): void {
	main().then(
		() => process.exit(0),
		err => {
			console.error(`${label} failed: ${err instanceof Error ? err.message : String(err)}`);
			process.exit(1);
		},
	);
}

export type Log = (msg: string) => void;

/** Progress on stderr as `[<prefix>] msg`. */
export function makeLog(prefix: string): Log {
	return msg => {
		process.stderr.write(`[${prefix}] ${msg}\n`);
	};
}

function assertLoopback(url: string): void {
	const host = new URL(url).hostname;
	if (host !== "127.0.0.1" && host !== "localhost" && host !== "[::1]") throw new Error(`the bench only talks to 127.0.0.1, not ${host}`);
}

export async function freePort(): Promise<number> {
	return new Promise((resolve, reject) => {
		const srv = net.createServer();
		srv.once("error", reject);
		srv.listen(0, "127.0.0.1", () => {
			const { port } = srv.address() as net.AddressInfo;
			srv.close(() => resolve(port));
		});
	});
}

export const sleep = (ms: number) => new Promise(r => setTimeout(r, ms));

// ---------------------------------------------------------------- CPU accounting (Linux /proc)

/** CPU seconds (user + system) a process has used, or null where /proc cannot tell. */
export function procCpuSeconds(pid: number | undefined): number | null {
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
export function serverPids(): { mysqld?: number; redis?: number } {
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

/** Machine-wide busy CPU seconds from /proc/stat (everything, including other work). */
export function machineBusySeconds(): number | null {
	try {
		const cpu = fs.readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
		const idle = cpu[3] + (cpu[4] || 0);
		return (cpu.reduce((a, b) => a + b, 0) - idle) / 100;
	} catch {
		return null;
	}
}

// ---------------------------------------------------------------- child processes

export interface Child {
	proc: ChildProcess;
	logFile: string;
	exited: Promise<number | null>;
}

export function tail(file: string, lines = 40): string {
	try {
		return fs.readFileSync(file, "utf8").split("\n").slice(-lines).join("\n");
	} catch {
		return "(no log)";
	}
}

/** stopChild(child, timeoutMs?): SIGTERM, then SIGKILL (said on `log`) if the child has not exited within timeoutMs. */
export function childStopper(log: Log, defaultTimeoutMs: number): (child: Child | null, timeoutMs?: number) => Promise<void> {
	return async (child, timeoutMs = defaultTimeoutMs) => {
		if (!child || child.proc.exitCode !== null || child.proc.signalCode !== null) return;
		child.proc.kill("SIGTERM");
		const done = await Promise.race([child.exited.then(() => true), sleep(timeoutMs).then(() => false)]);
		if (!done) {
			log(`pid ${child.proc.pid} did not stop in ${timeoutMs} ms: SIGKILL`);
			child.proc.kill("SIGKILL");
			await child.exited;
		}
	};
}

/**
 * A gateway node of its own process (lib/start), running `env.SERVICES`, with its output in
 * `logFile`: a watcher bench's core services placed on another node, as a deployment places them
 * (docker-compose.yml, k8s/: `core` beside `watcher-*`). Built: dist/lib/start.js; from source,
 * lib/start.ts through the tests' TS loader.
 */
export function startNodeChild(env: Record<string, string>, cwd: string, logFile: string): Child {
	const out = fs.openSync(logFile, "a");
	const proc = spawn(process.execPath, [...CHILD_EXEC_ARGV, GATEWAY_ENTRY], { cwd, env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", HEALTH_PORT: "0", ...env }, stdio: ["ignore", out, out] });
	fs.closeSync(out);
	const exited = new Promise<number | null>(resolve => proc.once("exit", code => resolve(code)));
	return { proc, logFile, exited };
}

export interface GatewayEnvOptions {
	name: string;
	databaseUrl: string;
	redisUrl: string;
	redisPrefix: string;
	dataDir: string;
	secrets: { jwt: string; refresh: string; master: string };
}

/** A gateway's environment built from scratch: a developer's shell (TRANSPORTER, SERVICES, WEBHOOK_* ...) must not leak in. */
export function gatewayEnv(o: GatewayEnvOptions, port: number, nodeEnv: "production" | "development"): NodeJS.ProcessEnv {
	return {
		PATH: process.env.PATH,
		HOME: process.env.HOME,
		NODE_ENV: nodeEnv,
		PORT: String(port),
		PUBLIC_URL: `http://127.0.0.1:${port}`,
		DATA_DIR: o.dataDir,
		// Empty: unset, the embedded default (SQLite in DATA_DIR, in-memory cache).
		DATABASE_URL: o.databaseUrl || undefined,
		REDIS_URL: o.redisUrl || undefined,
		REDIS_PREFIX: o.redisPrefix,
		RATE_LIMIT: "off",
		LOG_LEVEL: "warn",
		HEALTH_PORT: "0",
		AUTH_JWT_SECRET: o.secrets.jwt,
		AUTH_REFRESH_SECRET: o.secrets.refresh,
		MASTER_KEY: o.secrets.master,
		// Only makes the set-up sign-up fast; no request of a measured case may hash a password.
		BCRYPT_ROUNDS: "4",
		NODE_ID: `bench-${o.name}-${crypto.randomBytes(3).toString("hex")}`,
		// Production refuses the EVM, Solana, TON and Polkadot sweepers without their wallets' keys. Fresh keys
		// each run, never funded and never used: no RPC_URL_* is set, so the sweepers follow no network.
		// The node keeps every service, as `npm start` ships it, so the numbers stay comparable.
		SWEEPER_PRIVATE_KEY: crypto.randomBytes(32).toString("hex"),
		SWEEPER_PRIVATE_KEY_SOLANA: encodeBase58(Keypair.generate().secretKey),
		SWEEPER_PRIVATE_KEY_TON: crypto.randomBytes(32).toString("hex"),
		SWEEPER_PRIVATE_KEY_POLKADOT: `0x${crypto.randomBytes(32).toString("hex")}`,
	};
}

/**
 * Waits until a starting gateway serves its business routes (GET /auth/me: 401), for 120 s; on
 * time-out `stop` is awaited before the error. Throws if the child exits meanwhile.
 */
export async function waitForRoutes(child: Child, name: string, baseUrl: string, stop: () => Promise<void>): Promise<void> {
	const deadline = Date.now() + 120_000;
	for (;;) {
		if (child.proc.exitCode !== null || child.proc.signalCode !== null) {
			throw new Error(`gateway ${name} exited during start-up (code ${child.proc.exitCode}); log ${child.logFile}:\n${tail(child.logFile)}`);
		}
		try {
			// The info route answers as soon as the HTTP server listens; the business routes once
			// every service has started (the gateway builds them on $broker.started).
			const info = await fetch(`${baseUrl}/`, { signal: AbortSignal.timeout(2000) });
			const me = info.status === 200 ? await fetch(`${baseUrl}/auth/me`, { signal: AbortSignal.timeout(2000) }) : null;
			if (me && me.status === 401) return;
		} catch {
			/* not listening yet */
		}
		if (Date.now() > deadline) {
			await stop();
			throw new Error(`gateway ${name} did not serve its routes (GET /api/v1/auth/me: 401) within 120 s; log ${child.logFile}:\n${tail(child.logFile)}`);
		}
		await sleep(200);
	}
}

// ---------------------------------------------------------------- a run's database and Redis keys

/** On Ctrl-C: says so on `log`, runs cleanup and exits 130. Returns whether that has begun (then the run must not clean up itself). */
export function cleanUpOnSigint(log: Log, cleanup: () => Promise<void>): () => boolean {
	let interrupted = false;
	process.once("SIGINT", () => {
		interrupted = true;
		log("interrupted: cleaning up");
		void cleanup().finally(() => process.exit(130));
	});
	return () => interrupted;
}

/** Refuses a database or Redis off loopback, and a missing build of the entries. */
export function preflight(mysqlUrl: string, redisUrl: string, entries: string[]): void {
	assertLoopback(mysqlUrl);
	assertLoopback(redisUrl);
	for (const f of entries) {
		if (!fs.existsSync(f)) throw new Error(`${f} is missing: run \`npm run build\` first (npm run bench does)`);
	}
}

/** One run's temp folder (`<tmpPrefix>XXXXXX`, with data/ inside), fresh database name, Redis prefix and gateway secrets. */
export function prepareRun(mysqlUrl: string, tmpPrefix: string) {
	const workDir = fs.mkdtempSync(path.join(os.tmpdir(), tmpPrefix));
	const dataDir = path.join(workDir, "data");
	fs.mkdirSync(dataDir);
	const dbName = `cpg_bench_${crypto.randomBytes(5).toString("hex")}`;
	return {
		workDir,
		dataDir,
		dbName,
		redisPrefix: `cpgb:${crypto.randomBytes(5).toString("hex")}:`,
		databaseUrl: `${mysqlUrl}/${dbName}`,
		secrets: { jwt: crypto.randomBytes(32).toString("hex"), refresh: crypto.randomBytes(32).toString("hex"), master: crypto.randomBytes(32).toString("hex") },
	};
}

/** Drops the run's database (when it was created) and deletes the keys under its Redis prefix. */
export async function dropRunState(mysqlUrl: string, dbName: string | null, redisUrl: string, redisPrefix: string): Promise<void> {
	if (dbName) {
		const conn = await mysql.createConnection(mysqlUrl);
		await conn.query(`DROP DATABASE IF EXISTS \`${dbName}\``);
		await conn.end();
	}
	const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
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
}

// ---------------------------------------------------------------- HTTP set-up

export interface Http {
	status: number;
	body: any;
}

export async function call(baseUrl: string, method: string, urlPath: string, opts: { body?: unknown; token?: string; basic?: string } = {}): Promise<Http> {
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

export function expectStatus(step: string, res: Http, status: number): void {
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

export interface Merchant {
	/** The Basic header value of the sandbox API key. */
	basic: string;
	/** The key's secret (what webhooks are signed with). */
	secret: string;
	keyId: number;
	organizationId: string;
	/** The merchant's session token (dashboard endpoints: withdrawal settings). */
	token: string;
}

/** Sign-up to a sandbox API key (with webhookUrl when given), over HTTP as a merchant does it. */
export async function setUpMerchant(baseUrl: string, dataDir: string, webhookUrl?: string): Promise<Merchant> {
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
	const keyBody = webhookUrl === undefined ? { name: "bench" } : { name: "bench-webhooks", webhookUrl };
	const created = await call(baseUrl, "POST", `/organizations/${sandbox.id}/api-keys`, { token, body: keyBody });
	expectStatus(webhookUrl === undefined ? "create API key" : "create API key with webhookUrl", created, 201);
	const basic = `Basic ${Buffer.from(`${created.body.key}:${created.body.secret}`).toString("base64")}`;
	expectStatus("key check", await call(baseUrl, "GET", "/api-keys/me", { basic }), 200);
	return { basic, secret: created.body.secret as string, keyId: Number(created.body.apiKey.id), organizationId: sandbox.id, token };
}

export interface Target {
	networkId: string;
	tokenId: string;
	symbol: string;
	label: string;
}

/** An active test-network token, preferring USDC on Ethereum Sepolia, from the public listing. */
export async function pickTestToken(baseUrl: string): Promise<Target> {
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

/** The body of a create-intent request for the target. */
export function intentBody(t: Target): string {
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

export function percentile(sorted: number[], p: number): number {
	if (sorted.length === 0) return NaN;
	return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

export interface CheckoutRow {
	address: string;
	tokenId: string;
	/** The checkout's amount, a decimal string of the token. */
	amount: string;
}

/**
 * `n` open checkouts inserted directly, as a checkout creates them (a payment link, transaction and
 * deposit address row each, multi-row INSERTs; sandbox mode, no payment intents): the watcher
 * benches' 100,000 deposit addresses in seconds. `row(i)` gives each one's address (not derived:
 * the watcher only compares them), token and amount. Returns the addresses in order.
 */
export async function insertCheckouts(databaseUrl: string, n: number, o: { chainType: string; networkId: string; row: (i: number) => CheckoutRow }): Promise<string[]> {
	const conn = await mysql.createConnection(databaseUrl);
	const org = crypto.randomUUID();
	const now = new Date();
	const expires = new Date(now.getTime() + 24 * 3_600_000);
	const addresses: string[] = [];
	try {
		for (let start = 0; start < n; start += 2_000) {
			const links: unknown[][] = [];
			const txs: unknown[][] = [];
			const deps: unknown[][] = [];
			for (let i = start; i < Math.min(n, start + 2_000); i++) {
				const linkId = crypto.randomUUID();
				const txId = crypto.randomUUID();
				const depId = crypto.randomUUID();
				const { address, tokenId, amount } = o.row(i);
				addresses.push(address);
				links.push([linkId, org, "sandbox", null, false, `bench${crypto.randomBytes(9).toString("hex")}`, "bench", amount, tokenId, o.networkId, "active", null, null, null, true, null, null, null, now, now, null]);
				txs.push([txId, org, "sandbox", linkId, null, tokenId, o.networkId, "0", amount, amount, "0", "0", null, depId, address, "pending", false, null, null, null, expires, null, null, now, now, "0", null, null]);
				deps.push([depId, o.chainType, o.networkId, i, address, "bench", org, txId, now]);
			}
			await conn.query(
				"INSERT INTO payment_links (id, organizationId, mode, intentId, ownedByIntent, slug, title, amount, tokenId, networkId, status, expiresAt, metadata, withdrawalAddresses, singleUse, payerEmail, payerAddress, createdByUserId, createdAt, updatedAt, deletedAt) VALUES ?",
				[links],
			);
			await conn.query(
				"INSERT INTO transactions (id, organizationId, mode, paymentLinkId, intentId, payerTokenId, payerNetworkId, supportPercent, amount, totalAmount, amountReceived, overpaidAmount, quote, depositAddressId, depositAddress, status, simulated, hash, payerEmail, payerAddress, expiresAt, confirmedAt, completedAt, createdAt, updatedAt, amountConfirming, confirmations, requiredConfirmations) VALUES ?",
				[txs],
			);
			await conn.query("INSERT INTO deposit_addresses (id, chainType, networkId, derivationIndex, address, seedFingerprint, organizationId, transactionId, createdAt) VALUES ?", [deps]);
		}
		// The derivation counter past the rows inserted, as the real allocator would leave it.
		await conn.query("UPDATE deposit_address_counters SET nextIndex = ? WHERE chainType = ?", [n, o.chainType]);
	} finally {
		await conn.end();
	}
	return addresses;
}

/** The run's fresh database (prepareRun's name). */
export async function createRunDatabase(mysqlUrl: string, dbName: string): Promise<void> {
	const admin = await mysql.createConnection(mysqlUrl);
	try {
		await admin.query(`CREATE DATABASE \`${dbName}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
	} finally {
		await admin.end();
	}
}

/** The environment of a node the watcher benches run in their own process (createNode), on the run's database and Redis prefix; `extra` says which chain. */
export function inProcessNodeEnv(run: ReturnType<typeof prepareRun>, redisUrl: string, extra: Record<string, string>): Record<string, string> {
	return {
		NODE_ENV: "development",
		PORT: "0",
		DATA_DIR: run.dataDir,
		DATABASE_URL: run.databaseUrl,
		REDIS_URL: redisUrl,
		REDIS_PREFIX: run.redisPrefix,
		LOG_LEVEL: "warn",
		AUTH_JWT_SECRET: run.secrets.jwt,
		AUTH_REFRESH_SECRET: run.secrets.refresh,
		MASTER_KEY: run.secrets.master,
		...extra,
	};
}

/** Counts of the rows a watcher bench waits for. */
export interface CreditCounters {
	ChainTransfer: { count(): Promise<number> };
	TransactionCredit: { count(): Promise<number> };
}

/** Waits until `total` transfers are credited, or `timeoutS` after `since`; progress every 10 s. */
export async function awaitCredits(models: CreditCounters, total: number, since: number, timeoutS: number, log: Log): Promise<void> {
	let detected = false;
	let lastNote = Date.now();
	for (;;) {
		// A COUNT(*) reads every row of its table (tens of ms at 50,000 rows, in MariaDB's CPU the
		// bench measures): the detections are counted only until all are stored, twice a second.
		const [d, c] = await Promise.all([detected ? total : models.ChainTransfer.count(), models.TransactionCredit.count()]);
		if (!detected && d >= total) {
			detected = true;
			log(`all ${total} detections stored; ${c} credited so far`);
		}
		if (c >= total) return;
		if (Date.now() - since > timeoutS * 1000) {
			log(`stopped waiting after ${timeoutS} s: ${d} detections, ${c} credits`);
			return;
		}
		if (Date.now() - lastNote > 10_000) {
			lastNote = Date.now();
			log(`${d} detections, ${c} credits`);
		}
		await sleep(500);
	}
}

/** CPU seconds at one instant (the chain node's process and mysqld from /proc), for the watcher benches' "CPU per transfer". */
export interface CpuMark {
	/** This process's usage: absolute for the first mark, since it for the later ones. */
	self: NodeJS.CpuUsage;
	node: number | null;
	mysqld: number | null;
	/** The process of the core services when they run on a node of their own (null: in this process). */
	core: number | null;
	wall: number;
}

/** A mark now; with `since`, this process's usage counted from that mark. `nodePid` undefined: the chain node runs in this process. */
export function cpuMark(nodePid: number | undefined, mysqldPid: number | undefined, since?: CpuMark, corePid?: number): CpuMark {
	return { self: process.cpuUsage(since?.self), node: nodePid === undefined ? null : procCpuSeconds(nodePid), mysqld: procCpuSeconds(mysqldPid), core: corePid === undefined ? null : procCpuSeconds(corePid), wall: Date.now() };
}

/** "over N s ...: this process X s (Y us/transfer), <node> ..., mysqld ..." between two marks. */
export function cpuText(a: CpuMark, b: CpuMark, transfers: number, selfLabel: string, nodeLabel: string | null, coreLabel = "core services (networks, transactions)"): string {
	const wall = (b.wall - a.wall) / 1000;
	const diff = (x: number | null, y: number | null) => (x === null || y === null ? null : y - x);
	const perTransfer = (sec: number | null) => (sec === null ? "n/a" : `${sec.toFixed(1)} s (${((sec * 1e6) / transfers).toFixed(0)} us/transfer)`);
	const node = nodeLabel === null ? "" : `, ${nodeLabel} ${perTransfer(diff(a.node, b.node))}`;
	const core = a.core === null ? "" : `, ${coreLabel} ${perTransfer(diff(a.core, b.core))}`;
	return `over ${wall.toFixed(1)} s (${os.cpus().length} cores = ${(os.cpus().length * wall).toFixed(0)} core-s): this process (${selfLabel}) ${perTransfer((b.self.user + b.self.system) / 1e6)}${node}${core}, mysqld ${perTransfer(diff(a.mysqld, b.mysqld))}`;
}

/** Where the watcher's steps spent their wall time (the runner's onStepTimings hook), over the steps that stored something. */
export function stepsText(steps: readonly StepTimings[], transfers: number, blocksLabel: string, transfersLabel: string): string {
	const measured = steps.filter(st => st.stored > 0);
	const phase = (k: keyof Omit<StepTimings, "stored" | "fromBlock" | "toBlock" | "readAhead">) => measured.reduce((n, st) => n + st[k], 0);
	const stepMs = (["head", "addresses", "cursor", "blocks", "transfers", "commit", "reconcile"] as const).reduce((n, k) => n + phase(k), 0);
	return `where the watcher's time goes: ${measured.length} steps stored ${measured.reduce((n, st) => n + st.stored, 0)} transfers in ${stepMs.toFixed(0)} ms of steps (${((stepMs * 1000) / Math.max(1, transfers)).toFixed(0)} us/transfer wall): head ${phase("head").toFixed(0)}, addresses ${phase("addresses").toFixed(0)}, cursor + reorg check ${phase("cursor").toFixed(0)}, blocks (${blocksLabel}) ${phase("blocks").toFixed(0)}, transfers (${transfersLabel}) ${phase("transfers").toFixed(0)}, commit ${phase("commit").toFixed(0)}, reconcile ${phase("reconcile").toFixed(0)} ms (${measured.filter(st => st.readAhead).length} of the ${measured.length} ranges read ahead, beside the commit before: their transfers phase is the wait for that read); the reports (detect, credit) run beside the steps in the same process`;
}

/**
 * The run of a watcher bench whose gateway node runs in this process: a fresh database name and
 * Redis prefix (prepareRun); `state` says what to stop and drop, `cleanup` does it (also on SIGINT).
 */
export function watcherBenchRun(mysqlUrl: string, redisUrl: string, tmpPrefix: string) {
	preflight(mysqlUrl, redisUrl, []);
	const run = prepareRun(mysqlUrl, tmpPrefix);
	const state = { broker: null as ServiceBroker | null, chainNode: null as { stop(): Promise<unknown> } | null, dbCreated: false };
	const cleanup = async () => {
		if (state.broker) await state.broker.stop().catch(() => undefined);
		await state.chainNode?.stop().catch(() => undefined);
		await dropRunState(mysqlUrl, state.dbCreated ? run.dbName : null, redisUrl, run.redisPrefix);
		fs.rmSync(run.workDir, { recursive: true, force: true });
	};
	process.once("SIGINT", () => void cleanup().finally(() => process.exit(130)));
	return { run, state, cleanup };
}

/**
 * Starts the broker, takes `service`'s runner of `networkId`, records where its steps' time goes
 * (the runner's onStepTimings bench hook) and waits until its cursor is at the chain's `head()`.
 */
export async function startWatcherAtHead(broker: ServiceBroker, service: string, networkId: string, head: () => Promise<number>, log: Log): Promise<{ runner: NetworkWatcher; steps: StepTimings[] }> {
	const t0 = Date.now();
	await broker.start();
	const runner = (broker.getLocalService(service) as unknown as { runners: Map<string, NetworkWatcher> }).runners.get(networkId);
	if (!runner) throw new Error(`${service} follows no network ${networkId} (is it active? its RPC_URL_<SLUG> set?)`);
	const steps: StepTimings[] = [];
	(runner as unknown as { deps: RunnerDeps }).deps.onStepTimings = st => steps.push(st);
	for (;;) {
		const h = await head();
		if (runner.status.leader && runner.status.cursor !== null && runner.status.cursor >= h) break;
		if (Date.now() - t0 > 120_000) throw new Error(`the watcher did not reach the head within 120 s (status ${JSON.stringify(runner.status)})`);
		await sleep(100);
	}
	log(`node started, watcher at the head in ${Date.now() - t0} ms`);
	return { runner, steps };
}

/**
 * The measured window of a watcher bench whose chain node runs in a child process (`nodePid`):
 * marks the CPU, calls `release()` (puts the pre-built blocks on the chain), waits until `total`
 * detections are stored, then until every credit (or `timeoutS`). The CPU marks: at the last
 * detection (null if not reached) and at the end.
 */
export async function detectionWindow(o: { models: CreditCounters; total: number; nodePid: number | undefined; corePid?: number; timeoutS: number; release: () => Promise<unknown>; log: Log }) {
	const pids = serverPids();
	const cpu0 = cpuMark(o.nodePid, pids.mysqld, undefined, o.corePid);
	const releaseStart = Date.now();
	// Monotonic microseconds, the clock of a --cpu-prof profile: the window to look at there.
	o.log(`window starts at ${process.hrtime.bigint() / 1000n} us (monotonic)`);
	const released = o.release();
	let detectedAt = 0;
	let cpuDetect: CpuMark | null = null;
	for (;;) {
		if ((await o.models.ChainTransfer.count()) >= o.total) {
			detectedAt = Date.now();
			o.log(`last detection stored by ${process.hrtime.bigint() / 1000n} us (monotonic)`);
			cpuDetect = cpuMark(o.nodePid, pids.mysqld, cpu0, o.corePid);
			break;
		}
		if (Date.now() - releaseStart > o.timeoutS * 1000) break;
		await sleep(100);
	}
	await released;
	o.log(`${detectedAt ? `all ${o.total} detections stored after ${detectedAt - releaseStart} ms` : "not all detections stored"}`);
	await awaitCredits(o.models, o.total, releaseStart, o.timeoutS, o.log);
	return { cpu0, cpuDetect, cpu1: cpuMark(o.nodePid, pids.mysqld, cpu0, o.corePid) };
}
