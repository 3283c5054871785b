/**
 * Starts a real node for a test: its own database (a fresh MySQL database, or a SQLite file),
 * its own DATA_DIR and Redis key prefix, the gateway on port 0. Talk to it over HTTP with
 * `node.http(...)`; read mails from the outbox folder with `node.mails()`.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import crypto from "node:crypto";
import mysql from "mysql2/promise";
import { Loggers, type ServiceBroker } from "moleculer";
import { Env, loadConfig, AppConfig } from "../../lib/config";
import { createNode } from "../../lib/node";
import { appOf, App } from "../../lib/app";
import { Clock, ManualClock } from "../../lib/clock";
import { recordValidatedCount, validateResponse } from "./openapi-validate";

export const BACKEND = (process.env.TEST_BACKEND || "sqlite") as "mysql" | "sqlite";
export const MYSQL_URL = (process.env.TEST_MYSQL_URL || "mysql://root@127.0.0.1:3306").replace(/\/+$/, "");
export const REDIS_URL = process.env.TEST_REDIS_URL || "redis://127.0.0.1:6379/0";

/** Under jest, every response node.http receives is validated against docs/openapi.json (test/helpers/openapi-validate.ts); OPENAPI_VALIDATE=0 turns it off (diagnosis only). */
const VALIDATE_RESPONSES = process.env.JEST_WORKER_ID !== undefined && process.env.OPENAPI_VALIDATE !== "0";
if (VALIDATE_RESPONSES && typeof afterAll === "function") afterAll(() => recordValidatedCount(expect.getState().testPath, BACKEND));

export interface HttpResponse<T = any> {
	status: number;
	headers: Headers;
	body: T;
	text: string;
}

export interface RequestOptions {
	body?: unknown;
	/** Sent as-is (for malformed JSON tests). */
	rawBody?: string | Buffer | FormData;
	headers?: Record<string, string>;
	token?: string;
	key?: { key: string; secret: string };
	query?: Record<string, string | number | boolean>;
}

export interface TestNode {
	broker: ServiceBroker;
	app: App;
	config: AppConfig;
	clock: ManualClock;
	baseUrl: string;
	dataDir: string;
	http<T = any>(method: string, urlPath: string, opts?: RequestOptions): Promise<HttpResponse<T>>;
	/** Mails written to the outbox, oldest first. */
	mails(to?: string): MailFile[];
	lastMail(to: string): MailFile;
	stop(): Promise<void>;
}

export interface MailFile {
	to: string;
	subject: string;
	text: string;
	html: string;
	template: string;
	data: Record<string, any>;
	createdAt: string;
}

export interface StartOptions {
	env?: Env;
	services?: string[];
	/** Reuse another node's database (two brokers on one database). */
	shareWith?: TestNode;
	clock?: Clock;
	nodeID?: string;
	/**
	 * The node reaches its database or Redis at another address (e.g. through test/helpers/tcp-proxy.ts).
	 * `redis` gives the node Redis on either backend.
	 */
	via?: { database?: (url: string) => string; redis?: (url: string) => string };
	/** Collects the node's log lines (level `info` and above) here, besides the console. */
	logs?: LogLine[];
	/** Runs on the created broker before it starts (e.g. to add a service of the test's own). */
	beforeStart?: (broker: ServiceBroker) => void;
}

export interface LogLine {
	level: string;
	/** The logging module (`redis`, `api`, `broker`, ...). */
	mod: string;
	text: string;
}

function logText(arg: unknown): string {
	if (arg instanceof Error) return `${arg.name}: ${arg.message}`;
	if (typeof arg === "string") return arg;
	try {
		return JSON.stringify(arg);
	} catch {
		return String(arg);
	}
}

/** A Moleculer logger that appends to an array, for tests that assert on what a node logs. */
/** Collects the log lines of `level` and above into `lines` (tests of what a node logs). */
export class CapturingLogger extends Loggers.Base<{ level?: Loggers.LogLevels }> {
	constructor(
		private readonly lines: LogLine[],
		private readonly minLevel: Loggers.LogLevels = "info",
	) {
		super({ level: minLevel });
	}

	getLogHandler(bindings: { mod?: string }) {
		const rank = Loggers.LEVELS.indexOf(this.minLevel);
		return (type: string, args: unknown[]) => {
			if (Loggers.LEVELS.indexOf(type) > rank) return;
			const text = args.map(logText).join(" ");
			this.lines.push({ level: type, mod: bindings.mod || "", text });
		};
	}
}

async function createMysqlDatabase(): Promise<string> {
	const name = `cpg_test_${crypto.randomBytes(6).toString("hex")}`;
	const conn = await mysql.createConnection(MYSQL_URL);
	await conn.query(`CREATE DATABASE \`${name}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci`);
	await conn.end();
	return name;
}

async function dropMysqlDatabase(name: string): Promise<void> {
	const conn = await mysql.createConnection(MYSQL_URL);
	await conn.query(`DROP DATABASE IF EXISTS \`${name}\``);
	await conn.end();
}

/** The action the node's gateway routes `method path` to (null: a handler of its own; undefined: no route). */
type ServedBy = (method: string, path: string) => string | null | undefined;

function servedByGateway(broker: ServiceBroker): ServedBy {
	return (method, path) => {
		const api = broker.getLocalService("api") as unknown as { aliases?: Array<{ action: string | null; isMethod(m: string): boolean; match(url: string): unknown }> } | undefined;
		for (const alias of api?.aliases || []) {
			try {
				if (alias.isMethod(method) && alias.match(path)) return alias.action;
			} catch {
				return undefined;
			}
		}
		return undefined;
	};
}

/**
 * `node.http` for a gateway at `baseUrl` (`http://host:port/api/v1`): JSON in and out, API key or
 * bearer token. Under jest each response is validated against docs/openapi.json; `servedBy` tells
 * which action served it, so a test's stand-in service on a documented path is not held to the document.
 */
export function httpClient(baseUrl: string, servedBy?: ServedBy): TestNode["http"] {
	return async (method, urlPath, o = {}) => {
		// A connection per request: fetch's shared pool could otherwise hand a request a kept-alive
		// socket to a stopped node whose ephemeral port a new node was given (ECONNRESET seen in CI).
		const headers: Record<string, string> = { Connection: "close", ...(o.headers || {}) };
		let body: RequestInit["body"];
		if (o.rawBody !== undefined) body = o.rawBody as RequestInit["body"];
		else if (o.body !== undefined) {
			body = JSON.stringify(o.body);
			headers["Content-Type"] ||= "application/json";
		}
		if (o.token) headers.Authorization = `Bearer ${o.token}`;
		if (o.key) headers.Authorization = `Basic ${Buffer.from(`${o.key.key}:${o.key.secret}`).toString("base64")}`;
		const qs = o.query ? `?${new URLSearchParams(Object.entries(o.query).map(([k, v]) => [k, String(v)] as [string, string]))}` : "";
		const res = await fetch(`${baseUrl}${urlPath}${qs}`, { method, headers, body });
		const text = await res.text();
		let parsed: any = text;
		try {
			parsed = text ? JSON.parse(text) : null;
		} catch {
			/* not JSON */
		}
		if (VALIDATE_RESPONSES) {
			const pathname = new URL(res.url).pathname;
			validateResponse(method, pathname, res.status, res.headers.get("content-type"), text, parsed, servedBy?.(method.toUpperCase(), pathname));
		}
		return { status: res.status, headers: res.headers, body: parsed, text };
	};
}

export async function startNode(opts: StartOptions = {}): Promise<TestNode> {
	const dataDir = opts.shareWith ? opts.shareWith.dataDir : fs.mkdtempSync(path.join(os.tmpdir(), "cpg-test-"));
	let mysqlDb: string | null = null;
	let databaseUrl: string;
	if (opts.shareWith) {
		databaseUrl = opts.shareWith.config.databaseUrl;
	} else if (BACKEND === "mysql") {
		mysqlDb = await createMysqlDatabase();
		databaseUrl = `${MYSQL_URL}/${mysqlDb}`;
	} else {
		databaseUrl = `sqlite:${path.join(dataDir, "test.sqlite")}`;
	}
	const env: Env = {
		NODE_ENV: "test",
		PORT: "0",
		DATA_DIR: dataDir,
		DATABASE_URL: opts.via?.database ? opts.via.database(databaseUrl) : databaseUrl,
		REDIS_URL: opts.via?.redis ? opts.via.redis(REDIS_URL) : BACKEND === "mysql" ? REDIS_URL : undefined,
		REDIS_PREFIX: opts.shareWith ? opts.shareWith.config.redisPrefix : `cpgt:${crypto.randomBytes(5).toString("hex")}:`,
		BCRYPT_ROUNDS: "4",
		// Unrelated suites never trip a limit; rate-limit tests set RATE_LIMIT_SCALE=1.
		RATE_LIMIT_SCALE: "1000",
		LOG_LEVEL: process.env.TEST_LOG_LEVEL || "error",
		...opts.env,
	};
	const config = loadConfig(env);
	const clock = (opts.clock as ManualClock) || new ManualClock();
	const broker = await createNode({
		config,
		services: opts.services,
		clock,
		env: { ...opts.env },
		nodeID: opts.nodeID || `test-${crypto.randomBytes(3).toString("hex")}`,
		extraLogger: opts.logs ? new CapturingLogger(opts.logs) : undefined,
	});
	opts.beforeStart?.(broker);
	await broker.start();
	const api = broker.getLocalService("api") as unknown as { server?: { address(): { port: number } } } | undefined;
	const port = api?.server ? api.server.address().port : 0;
	const baseUrl = `http://127.0.0.1:${port}/api/v1`;
	const mailDir = path.join(dataDir, "mail");

	const node: TestNode = {
		broker,
		app: appOf(broker),
		config,
		clock,
		baseUrl,
		dataDir,
		http: httpClient(baseUrl, servedByGateway(broker)),
		mails(to) {
			if (!fs.existsSync(mailDir)) return [];
			const all = fs
				.readdirSync(mailDir)
				.filter(f => f.endsWith(".json"))
				.sort()
				.map(f => JSON.parse(fs.readFileSync(path.join(mailDir, f), "utf8")) as MailFile);
			return to ? all.filter(m => m.to.toLowerCase() === to.toLowerCase()) : all;
		},
		lastMail(to) {
			const list = node.mails(to);
			if (list.length === 0) throw new Error(`No mail to ${to}`);
			return list[list.length - 1];
		},
		async stop() {
			await broker.stop();
			if (!opts.shareWith) {
				if (mysqlDb) await dropMysqlDatabase(mysqlDb);
				fs.rmSync(dataDir, { recursive: true, force: true });
			}
		},
	};
	return node;
}
