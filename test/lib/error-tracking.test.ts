/**
 * Error tracking (lib/error-tracking.ts) against a local endpoint that receives the Sentry SDK's
 * envelopes: off without SENTRY_DSN, events with tags when on, the scrubber (what never leaves the
 * process), the loop reporter (outages not reported, a repeated failure once), and a crash of a
 * process with the process handlers (reported, then exit code 1).
 */
import { spawn } from "node:child_process";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Errors } from "moleculer";
import { generateMnemonic } from "@scure/bip39";
import { wordlist } from "@scure/bip39/wordlists/english";
import { loadConfig, Env } from "../../lib/config";
import {
	captureError,
	captureLoopError,
	closeErrorTracking,
	createScrubber,
	errorTrackingEnabled,
	FILTERED,
	flushErrorTracking,
	initErrorTracking,
	isOutage,
	knownSecrets,
	LOOP_REPEAT_MS,
} from "../../lib/error-tracking";
import { exceptionMessage, startSentryReceiver, SentryReceiver } from "../helpers/sentry-receiver";

const ROOT = path.resolve(__dirname, "../..");
const base62 = (n: number) => Array.from(crypto.randomBytes(n), b => "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"[b % 62]).join("");

describe("error tracking", () => {
	let dataDir: string;
	let receiver: SentryReceiver;
	const config = (env: Env = {}) => loadConfig({ NODE_ENV: "test", DATA_DIR: dataDir, ...env });

	beforeAll(async () => {
		dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-sentry-"));
		receiver = await startSentryReceiver();
	});
	afterAll(async () => {
		await closeErrorTracking();
		await receiver?.close();
		fs.rmSync(dataDir, { recursive: true, force: true });
	});

	describe("configuration", () => {
		it("is off without SENTRY_DSN; the environment defaults to NODE_ENV, the release is optional", () => {
			expect(config().errorTracking).toEqual({ dsn: null, environment: "test", release: null });
			expect(config({ SENTRY_DSN: receiver.dsn, SENTRY_ENVIRONMENT: "staging", SENTRY_RELEASE: "gw@1.2.3" }).errorTracking).toEqual({
				dsn: receiver.dsn,
				environment: "staging",
				release: "gw@1.2.3",
			});
			expect(loadConfig({ DATA_DIR: dataDir, NODE_ENV: "development" }).errorTracking.environment).toBe("development");
		});

		it("refuses a malformed DSN without echoing it, and bad environment or release names", () => {
			for (const dsn of ["not a url", "ftp://key@host/1", "https://sentry.example.com/1", "https://key@sentry.example.com/"]) {
				let message = "";
				try {
					config({ SENTRY_DSN: dsn });
				} catch (e) {
					message = (e as Error).message;
				}
				expect(message).toBe("Configuration: SENTRY_DSN must be a Sentry DSN, https://<public key>@<host>/<project id>");
			}
			expect(() => config({ SENTRY_ENVIRONMENT: "prod east" })).toThrow(/SENTRY_ENVIRONMENT/);
			expect(() => config({ SENTRY_RELEASE: "a/b" })).toThrow(/SENTRY_RELEASE/);
		});
	});

	describe("the scrubber", () => {
		const scrubber = createScrubber(["the-master-key-value-0123", "rpc-provider-key-abcdef0123456789"]);
		const key = `ak_live_${base62(32)}`;
		const secret = `sk_live_${base62(48)}`;
		const mnemonic = generateMnemonic(wordlist, 256);
		const jwt = `eyJhbGciOiJIUzI1NiJ9.${Buffer.from('{"sub":"1"}').toString("base64url")}.${base62(43)}`;

		it("removes our keys and secrets, tokens, credentials in URLs, named secrets and mnemonics from text", () => {
			const text = [
				`key ${key} secret ${secret}`,
				`Authorization: Basic ${Buffer.from(`${key}:${secret}`).toString("base64")}`,
				`Bearer ${jwt}`,
				"mysql://gateway:db-pass-123@db.internal:3306/cpg",
				"https://rpc.example.com/v3/rpc-provider-key-abcdef0123456789?apikey=qwertyuiop123&page=2",
				'{"password":"hunter2-hunter2","tokenId":"tok-1","clientSecret":"pi_1_secret_abc"}',
				"intent 0a1b2c3d-0000-4000-8000-000000000000_secret_Zx9y8w7v6u5t",
				`MASTER_KEY is the-master-key-value-0123`,
				`the recovery phrase was ${mnemonic}.`,
				`words ${mnemonic.split(" ").join(", ")}`,
			].join("\n");
			const out = scrubber.text(text);
			for (const leaked of [key.slice(8), secret.slice(8), Buffer.from(`${key}:${secret}`).toString("base64"), jwt, "db-pass-123", "rpc-provider-key", "qwertyuiop123", "hunter2", "Zx9y8w7v6u5t", "the-master-key-value", mnemonic, mnemonic.split(" ").slice(5, 9).join(" ")]) {
				expect({ leaked, found: out.includes(leaked) }).toEqual({ leaked, found: false });
			}
			// What support needs stays: key modes, ids, hosts, ordinary words.
			expect(out).toContain("ak_live_[Filtered]");
			expect(out).toContain("sk_live_[Filtered]");
			expect(out).toContain('"tokenId":"tok-1"');
			expect(out).toContain("mysql://[Filtered]@db.internal:3306/cpg");
			expect(out).toContain("page=2");
			expect(out).toContain("intent 0a1b2c3d-0000-4000-8000-000000000000_secret_[Filtered]");
			expect(out).toContain(`the recovery phrase was ${FILTERED}.`);
			expect(out).toContain(`words ${FILTERED}`);
		});

		it("keeps ordinary messages, transaction hashes and short word runs intact", () => {
			const plain = "Watcher step failed on network anvil-local: RPC endpoint is on chain 1, expected 31337 (tx 0x" + "ab".repeat(32) + ")";
			expect(scrubber.text(plain)).toBe(plain);
			const words = "the node sending it stopped before recording the result of the attempt";
			expect(scrubber.text(words)).toBe(words);
			// Eleven list words are not a mnemonic.
			const eleven = mnemonic.split(" ").slice(0, 11).join(" ");
			expect(scrubber.text(eleven)).toBe(eleven);
		});

		it("reduces a request to its method and URL without query, drops the user, local variables and sensitive keys", () => {
			const event = scrubber.event({
				type: undefined,
				request: {
					method: "POST",
					url: "https://gw.example.com/api/v1/payment_intents?client_secret=x_secret_y&token=abc",
					headers: { authorization: `Basic ${base62(40)}`, "x-api-key": key, cookie: "sid=1" },
					cookies: { sid: "1" },
					data: { secret },
					query_string: "token=abc",
				},
				user: { ip_address: "203.0.113.9", email: "a@b.c" },
				exception: { values: [{ type: "Error", value: `failed for ${secret}`, stacktrace: { frames: [{ filename: "x.js", vars: { secret } }] } }] },
				extra: { params: { apiKey: "k-123456789", privateKey: "0x" + "1".repeat(64), webhookUrl: "https://u:p@hooks.example.com/x", amount: "1.5" } },
			});
			expect(event.request).toEqual({ method: "POST", url: "https://gw.example.com/api/v1/payment_intents" });
			expect(event.user).toBeUndefined();
			expect(event.exception!.values![0].value).toBe("failed for sk_live_[Filtered]");
			expect(event.exception!.values![0].stacktrace!.frames![0]).toEqual({ filename: "x.js" });
			expect(event.extra).toEqual({ params: { apiKey: FILTERED, privateKey: FILTERED, webhookUrl: "https://[Filtered]@hooks.example.com/x", amount: "1.5" } });
		});

		it("drops a console breadcrumb's raw arguments and scrubs its message", () => {
			const b = scrubber.breadcrumb({ category: "console", level: "error", message: `\x1b[31mfailed\x1b[39m ${secret}`, data: { arguments: [{ secret }], logger: "console" } });
			expect(b).toEqual({ category: "console", level: "error", message: "failed sk_live_[Filtered]", data: { logger: "console" } });
		});

		it("knows the node's configured secrets and the credentials in its URLs", () => {
			const c = config({
				MASTER_KEY: "m-secret-".repeat(4),
				MASTER_SEED: mnemonic,
				DATABASE_URL: "mysql://gw:database-password@127.0.0.1:3306/cpg",
				RPC_URL_ETHEREUM: "https://eth.example.com/v2/abcdefghijklmnopqrstuvwx",
				SWEEPER_PRIVATE_KEY: "0x" + "c".repeat(64),
			});
			const secrets = knownSecrets(c, { PRICE_FEED_API_KEY: "price-feed-key-123", LOG_LEVEL: "error" });
			for (const s of [c.secrets.jwt, "m-secret-".repeat(4), mnemonic, "database-password", "abcdefghijklmnopqrstuvwx", "c".repeat(64), "price-feed-key-123"]) expect(secrets).toContain(s);
			expect(secrets).not.toContain("error");
		});
	});

	describe("outages", () => {
		it("tells outages (database, services, hosts unreachable) from defects", () => {
			expect(isOutage(new Errors.ServiceNotAvailableError({ action: "keys.get", nodeID: "n1" }))).toBe(true);
			expect(isOutage(Object.assign(new Error("connect ECONNREFUSED"), { name: "SequelizeConnectionRefusedError" }))).toBe(true);
			expect(isOutage(Object.assign(new TypeError("fetch failed"), { cause: { code: "ECONNREFUSED" } }))).toBe(true);
			expect(isOutage(Object.assign(new Error("missing response"), { code: "TIMEOUT" }))).toBe(true);
			expect(isOutage(new TypeError("Cannot read properties of undefined (reading 'id')"))).toBe(false);
			expect(isOutage(Object.assign(new Error("duplicate"), { name: "SequelizeUniqueConstraintError" }))).toBe(false);
		});
	});

	describe("with the SDK", () => {
		it("does nothing before it is configured, then reports with environment, release and tags", async () => {
			expect(initErrorTracking(config())).toBe(false);
			expect(errorTrackingEnabled()).toBe(false);
			captureError(new Error("before configuration"));
			expect(initErrorTracking(config({ SENTRY_DSN: receiver.dsn, SENTRY_RELEASE: "gw@9.9.9" }))).toBe(true);
			// Once per process: a second set-up keeps the first.
			expect(initErrorTracking(config({ SENTRY_DSN: "http://other@127.0.0.1:9/2" }))).toBe(true);
			captureError(new Error("after configuration"), { service: "test", network: "anvil-local" });
			expect(await flushErrorTracking()).toBe(true);
			const events = receiver.events();
			expect(events.map(exceptionMessage)).toEqual(["after configuration"]);
			expect(events[0]).toMatchObject({ environment: "test", release: "gw@9.9.9", level: "error", tags: { service: "test", network: "anvil-local" } });
			expect(events[0].exception.values[0].stacktrace.frames.length).toBeGreaterThan(0);
		});

		it("sends nothing secret: not in the message, the cause, the breadcrumbs, or anywhere in the envelope", async () => {
			const secret = `sk_test_${base62(48)}`;
			const mnemonic = generateMnemonic(wordlist, 128);
			const dbPassword = `db-${base62(12)}`;
			const before = receiver.envelopes.length;
			await closeErrorTracking();
			initErrorTracking(config({ SENTRY_DSN: receiver.dsn, DATABASE_URL: `mysql://gw:${dbPassword}@127.0.0.1:3306/cpg` }));
			// A careless log line before the failure becomes a breadcrumb.
			console.log(`calling the provider with ${secret} and ${mnemonic}`);
			const cause = new Error(`connect as gw:${dbPassword} refused`);
			captureError(new Error(`settle failed: {"secret":"${secret}","seed":"${mnemonic}"}`, { cause }), { service: "test" });
			await flushErrorTracking();
			const raw = receiver.envelopes.slice(before).map(e => e.raw).join("\n");
			expect(raw).toContain("settle failed");
			expect(raw).toContain(FILTERED);
			for (const leaked of [secret.slice(8), mnemonic, dbPassword]) expect({ leaked, found: raw.includes(leaked) }).toEqual({ leaked, found: false });
			const event = receiver.events().at(-1);
			expect(event.exception.values.map((v: { value: string }) => v.value)).toEqual(["connect as gw:[Filtered] refused", 'settle failed: {"secret":"[Filtered]","seed":"[Filtered]"}']);
			expect(event.breadcrumbs.some((b: { message?: string }) => b.message?.startsWith("calling the provider with sk_test_[Filtered]"))).toBe(true);
		});

		it("reports a loop's failure once per LOOP_REPEAT_MS, per loop, and never an outage", async () => {
			const before = receiver.events().length;
			const t0 = Date.now();
			const failure = () => new TypeError("Cannot read properties of undefined (reading 'hash')");
			captureLoopError(failure(), { service: "watcher-evm", network: "ethereum" }, t0);
			captureLoopError(failure(), { service: "watcher-evm", network: "ethereum" }, t0 + 1_000);
			captureLoopError(failure(), { service: "watcher-evm", network: "polygon" }, t0 + 2_000);
			captureLoopError(new Errors.ServiceNotAvailableError({ action: "transactions.credit", nodeID: "core-1" }), { service: "watcher-evm", network: "ethereum" }, t0 + 3_000);
			captureLoopError(failure(), { service: "watcher-evm", network: "ethereum" }, t0 + LOOP_REPEAT_MS + 1);
			await flushErrorTracking();
			const events = receiver.events().slice(before);
			expect(events.map(e => [exceptionMessage(e), e.tags.network])).toEqual([
				["Cannot read properties of undefined (reading 'hash')", "ethereum"],
				["Cannot read properties of undefined (reading 'hash')", "polygon"],
				["Cannot read properties of undefined (reading 'hash')", "ethereum"],
			]);
		});
	});

	describe("a process with the process handlers", () => {
		/** Runs a script in a child node that sets error tracking up as `npm start` does, and returns its exit code. */
		const run = (body: string) =>
			new Promise<{ code: number | null; output: string }>((resolve, reject) => {
				const script = `
					const { loadConfig } = require("./lib/config");
					const { initErrorTracking } = require("./lib/error-tracking");
					initErrorTracking(loadConfig({ NODE_ENV: "test", DATA_DIR: ${JSON.stringify(dataDir)}, SENTRY_DSN: ${JSON.stringify(receiver.dsn)} }), { processHandlers: true });
					${body}`;
				const child = spawn(process.execPath, ["-r", path.join(ROOT, "test/helpers/ts-register.js"), "-e", script], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
				let output = "";
				child.stdout.on("data", d => (output += d));
				child.stderr.on("data", d => (output += d));
				child.once("error", reject);
				child.once("exit", code => resolve({ code, output }));
			});

		it.each([
			["an uncaught exception", 'setTimeout(() => { throw new Error("crashed with sk_live_' + "q".repeat(48) + '"); }, 10);', "auto.node.onuncaughtexception"],
			["an unhandled rejection", 'setTimeout(() => { Promise.reject(new Error("rejected with sk_live_' + "q".repeat(48) + '")); }, 10);', "auto.node.onunhandledrejection"],
		])("reports %s, then exits with code 1", async (_what, body, mechanism) => {
			const before = receiver.envelopes.length;
			const { code, output } = await run(body);
			expect({ code, output: code === 1 ? "" : output }).toEqual({ code: 1, output: "" });
			const events = receiver.envelopes.slice(before).flatMap(e => e.items.filter(i => i.header.type === "event").map(i => i.payload));
			expect(events).toHaveLength(1);
			expect(exceptionMessage(events[0])).toMatch(/^(crashed|rejected) with sk_live_\[Filtered\]$/);
			expect(events[0].exception.values.at(-1).mechanism).toMatchObject({ type: mechanism, handled: false });
			expect(receiver.envelopes.slice(before).map(e => e.raw).join("")).not.toContain("q".repeat(48));
		}, 60_000);
	});
});
