/**
 * Error tracking on a real node, against a local endpoint receiving the Sentry SDK's envelopes:
 * GET /api/debug-sentry (a reported 500 when configured, a 404 when not), a route's real 500
 * reported and its 4xx not, a request full of credentials leaving none of them in any envelope,
 * a chain watcher's failure reported once with its service and network, and `npm start`
 * (lib/start.ts) setting error tracking up from its environment.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Context, Service, ServiceSchema } from "moleculer";
import { generateMnemonic } from "@scure/bip39";
import { wordlist } from "@scure/bip39/wordlists/english";
import { closeErrorTracking, flushErrorTracking, initErrorTracking } from "../../lib/error-tracking";
import { freePort, startAnvil, Anvil } from "../helpers/anvil";
import { startNode, TestNode } from "../helpers/harness";
import { startNodeProcess, NodeProcess } from "../helpers/node-process";
import { exceptionMessage, startSentryReceiver, SentryReceiver } from "../helpers/sentry-receiver";
import { until } from "../helpers/until";
import { PAYMENTS_SERVICES, sandboxMerchant, startPaymentsNode } from "../e2e/payments.helpers";
import { addService } from "./api.helpers";
import pkg from "../../package.json";

const ERROR_500 = { statusCode: 500, message: "Internal Server Error", error: "Internal Server Error" };
const sleep = (ms: number) => new Promise(r => setTimeout(r, ms));

/** A route whose action fails unexpectedly, and writes a careless log line first (a breadcrumb). */
const probe = {
	name: "sentry-probe",
	settings: { rest: "/" },
	actions: {
		fail: {
			rest: "POST /sentry-probe/fail",
			auth: "key",
			handler(this: Service, ctx: Context<Record<string, unknown>>) {
				this.logger.error("probe called with", JSON.stringify(ctx.params));
				throw new Error(`probe failed for ${JSON.stringify(ctx.params)}`);
			},
		},
	},
} as unknown as ServiceSchema;

async function get(url: string, headers: Record<string, string> = {}) {
	const res = await fetch(url, { headers });
	return { status: res.status, body: await res.json().catch(() => null) };
}

describe("error tracking on a node", () => {
	let receiver: SentryReceiver;
	let anvil: Anvil;
	let node: TestNode;
	let key: { key: string; secret: string };
	/** Origin of the node's gateway (the debug route is outside /api/v1). */
	let origin: string;

	beforeAll(async () => {
		receiver = await startSentryReceiver();
		// A node on another chain than the network's: the watcher fails every step (not an outage).
		anvil = await startAnvil({ chainId: 1 });
		node = await startPaymentsNode({
			services: [...PAYMENTS_SERVICES, "watcher-evm"],
			env: { SENTRY_DSN: receiver.dsn, RPC_URL_ANVIL_LOCAL: anvil.url, WATCHER_POLL_MS: "500" },
		});
		// lib/start.ts does this for `npm start`; a test node is set up here.
		expect(initErrorTracking(node.config)).toBe(true);
		origin = new URL(node.baseUrl).origin;
		({ key } = await sandboxMerchant(node));
		await addService(node, probe);
	}, 120_000);

	afterAll(async () => {
		await closeErrorTracking();
		await node?.stop();
		await anvil?.stop();
		await receiver?.close();
	});

	const eventsOf = (route: string) => receiver.events().filter(e => e.tags?.route === route);

	it("answers GET /api/debug-sentry with a 500 in the error shape and reports it, without credentials", async () => {
		const res = await get(`${origin}/api/debug-sentry`);
		expect(res).toEqual({ status: 500, body: ERROR_500 });
		const event = await receiver.waitForEvent("debug route", e => e.tags?.route === "GET /api/debug-sentry");
		expect(exceptionMessage(event)).toBe("Deliberate error of GET /api/debug-sentry, to check error tracking");
		expect(event).toMatchObject({ level: "error", environment: "test", tags: { service: "api", status: "500" } });
		// A second request, a second report (the limit per IP is far off).
		expect((await get(`${origin}/api/debug-sentry`)).status).toBe(500);
		await until("second report", () => eventsOf("GET /api/debug-sentry").length === 2);
	});

	it("reports a route's unexpected 500 and none of its 4xx", async () => {
		const fourXx = [
			await node.http("POST", "/payment_intents", { key, body: { amount: "-1" } }),
			await node.http("GET", `/payment_intents/${crypto.randomUUID()}`, { key }),
			await node.http("GET", "/auth/me"),
			await node.http("POST", "/sentry-probe/fail", { body: {} }),
			await node.http("GET", "/no/such/route"),
		];
		expect(fourXx.map(r => r.status)).toEqual([400, 404, 401, 401, 404]);
		const failed = await node.http("POST", "/sentry-probe/fail", { key, body: { order: "42" } });
		expect(failed).toMatchObject({ status: 500, body: ERROR_500 });
		const event = await receiver.waitForEvent("probe 500", e => e.tags?.route === "POST /api/v1/sentry-probe/fail");
		expect(exceptionMessage(event)).toBe('probe failed for {"order":"42"}');
		await flushErrorTracking();
		// Every event of the gateway so far is a 500: the two debug calls and the probe.
		const gateway = receiver.events().filter(e => e.tags?.service === "api");
		expect(gateway.map(e => [e.tags.route, e.tags.status])).toEqual([
			["GET /api/debug-sentry", "500"],
			["GET /api/debug-sentry", "500"],
			["POST /api/v1/sentry-probe/fail", "500"],
		]);
	});

	it("leaves no credential, cookie, query secret or body secret of the request in any envelope", async () => {
		const mnemonic = generateMnemonic(wordlist, 256);
		const bodySecret = `sk_test_${crypto.randomBytes(24).toString("hex")}`;
		const password = `pw-${crypto.randomBytes(8).toString("hex")}`;
		const cookie = `sid-${crypto.randomBytes(8).toString("hex")}`;
		const queryToken = `qt-${crypto.randomBytes(8).toString("hex")}`;
		const basic = Buffer.from(`${key.key}:${key.secret}`).toString("base64");
		const before = eventsOf("POST /api/v1/sentry-probe/fail").length;
		const res = await node.http("POST", "/sentry-probe/fail", {
			key,
			query: { token: queryToken },
			headers: { "X-Api-Key": key.key, Cookie: `session=${cookie}` },
			body: { secret: bodySecret, password, note: `restore with ${mnemonic}` },
		});
		expect(res.status).toBe(500);
		await until("the probe's report", () => eventsOf("POST /api/v1/sentry-probe/fail").length === before + 1);
		await flushErrorTracking();
		const bytes = receiver.bytes();
		for (const leaked of [key.key, key.secret, key.secret.slice(8), key.key.slice(8), basic, bodySecret.slice(8), password, cookie, queryToken, mnemonic, mnemonic.split(" ").slice(10, 14).join(" ")]) {
			expect({ leaked, found: bytes.includes(leaked) }).toEqual({ leaked, found: false });
		}
		// The scrubber had something to do: the message kept its shape with the values filtered.
		const event = eventsOf("POST /api/v1/sentry-probe/fail").at(-1);
		expect(exceptionMessage(event)).toBe('probe failed for {"secret":"[Filtered]","password":"[Filtered]","note":"restore with [Filtered]","token":"[Filtered]"}');
		// The careless log line of the action came along as a breadcrumb, scrubbed the same way.
		const logged = event.breadcrumbs.filter((b: { message?: string }) => b.message?.includes("probe called with")).at(-1);
		expect(logged.message).toContain('"secret":"[Filtered]","password":"[Filtered]"');
		expect(event.request).toBeUndefined();
		expect(event.user).toBeUndefined();
	});

	it("reports the chain watcher's failing step once, tagged with its service and network", async () => {
		const match = (e: any) => e.tags?.service === "watcher-evm" && e.tags?.network === "anvil-local";
		const event = await receiver.waitForEvent("watcher failure", match, 30_000);
		expect(exceptionMessage(event)).toBe("RPC endpoint is on chain 1, expected 31337");
		expect(event.exception.values.at(-1).type).toBe("ChainMismatchError");
		// The watcher keeps failing every 500 ms; the same failure is not reported again.
		await sleep(2_000);
		await flushErrorTracking();
		expect(receiver.events().filter(match)).toHaveLength(1);
		expect(node.broker.getLocalService("watcher-evm")).toBeTruthy();
	});

	describe("without SENTRY_DSN", () => {
		let plain: TestNode;
		beforeAll(async () => {
			plain = await startNode({ services: ["api"] });
		});
		afterAll(async () => plain?.stop());

		it("answers GET /api/debug-sentry with 404 in the error shape, and reports nothing", async () => {
			const before = receiver.events().length;
			const res = await get(`${new URL(plain.baseUrl).origin}/api/debug-sentry`);
			expect(res).toEqual({ status: 404, body: { statusCode: 404, message: "Not Found", error: "Not Found" } });
			await flushErrorTracking();
			expect(receiver.events().length).toBe(before);
		});
	});
});

describe("npm start with SENTRY_DSN", () => {
	let receiver: SentryReceiver;
	let proc: NodeProcess | null = null;
	let dataDir: string;

	beforeAll(async () => {
		receiver = await startSentryReceiver();
		dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-sentry-start-"));
	});
	afterAll(async () => {
		await proc?.stop();
		await receiver?.close();
		fs.rmSync(dataDir, { recursive: true, force: true });
	});

	it("sets error tracking up from the environment: the debug route is reported with the package's release", async () => {
		const port = await freePort();
		proc = startNodeProcess({
			SERVICES: "api",
			PORT: String(port),
			DATA_DIR: dataDir,
			DATABASE_URL: `sqlite:${path.join(dataDir, "gw.sqlite")}`,
			SENTRY_DSN: receiver.dsn,
			SENTRY_ENVIRONMENT: "ci",
		});
		const origin = `http://127.0.0.1:${port}`;
		await until("the node answering", async () => (await fetch(`${origin}/api/v1/`).catch(() => null))?.ok, 60_000, () => proc!.output());
		expect((await get(`${origin}/api/debug-sentry`)).status).toBe(500);
		const event = await receiver.waitForEvent("debug route of npm start", e => e.tags?.route === "GET /api/debug-sentry");
		expect(event).toMatchObject({ environment: "ci", release: `${pkg.name}@${pkg.version}`, tags: { service: "api", status: "500" } });
		await proc.stop();
		expect(proc.child.exitCode).toBe(0);
	}, 90_000);
});
