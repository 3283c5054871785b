/**
 * The node's health endpoint (docs/deployment.md "Health checks"), on every node type: a tiny
 * node:http server apart from the gateway, started by lib/start.ts (not by createNode, so
 * in-process test nodes open no port unless a test asks).
 *
 * - `GET /healthz`: 200 while the process and its event loop answer (liveness, start-up).
 * - `GET /readyz`: 200 when every required check of this node passes, else 503 (readiness):
 *   `database` (nodes running a service that uses it: all but the gateway), `transporter`
 *   (TRANSPORTER), `watchers` (nodes running watcher-* services: each network with its role and
 *   lag), `gateways` (nodes offering services: every gateway seen routes to this node,
 *   lib/gateway-discovery.ts). `redis` (REDIS_URL) is reported but advisory: every use of Redis
 *   (cache, rate-limit counters, the pricing refresh dedupe) falls back while it is away, so a
 *   Redis outage must not take every pod out of rotation; so is a gateway's `services` (what it
 *   reaches) and a sweeper's `sweepers` (the networks it leads).
 * Each check answers within CHECK_TIMEOUT_MS; a check still running from an earlier probe is
 * waited for, never started twice (a hung database holds one pooled connection, not one a probe).
 * Errors are one line, URLs without credentials or paths.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Transporters, type ServiceBroker } from "moleculer";
import { QueryTypes } from "sequelize";
import { appOf, type App } from "./app";
import { redactUrlsIn } from "./watchers/config";
import { CheckFailed, discoveryOf, gatewaysProbe, servicesProbe } from "./gateway-discovery";
import { watchersCheck, type SweeperReadiness, type WatcherReadiness } from "./watchers/readiness";

export interface CheckResult {
	ok: boolean;
	error?: string;
	/** false: reported only, the node stays ready while it fails (the node degrades, it still serves). */
	required?: false;
	/** What the check found, for operators (the networks a watcher leads, the gateways that route here ...). */
	[detail: string]: unknown;
}

export interface Readiness {
	ready: boolean;
	checks: Record<string, CheckResult>;
	/** Set while the broker is starting or stopping (then not ready whatever the checks say). */
	reason?: string;
}

export interface HealthServer {
	port: number;
	close(): Promise<void>;
}

/** Each check answers within this, so /readyz answers within ~2 s even when a server hangs. */
export const CHECK_TIMEOUT_MS = 1_500;

/**
 * Checks a node stays ready without: it degrades (Redis: cache misses, per-node rate limits), a
 * gateway answers 503 itself for a service away, a sweeper's networks are reported only.
 */
const ADVISORY_CHECKS = new Set(["redis", "services", "sweepers"]);

/** Services that never query the database themselves: the gateway calls services that do. */
const NO_DATABASE_SERVICES = new Set(["api", "pages"]);

/** One line of an error for the probe's answer: URLs reduced to scheme, host and port. */
export function safeError(err: unknown): string {
	const e = err as { message?: unknown; code?: unknown; name?: unknown } | null;
	const text = (typeof e?.message === "string" && e.message) || (typeof e?.code === "string" && e.code) || (typeof e?.name === "string" && e.name) || String(err);
	return redactUrlsIn(text.split("\n")[0]).slice(0, 200);
}

function appIfAny(broker: ServiceBroker): App | null {
	try {
		return appOf(broker);
	} catch {
		return null;
	}
}

/** Resolves (with what it found, if anything) when the check passes; throws (CheckFailed: with what it found) when not. */
type Detail = Record<string, unknown>;
type Probe = () => Promise<Detail | void> | Detail | void;

/** The checks that apply to this node now, by name. */
export function probesFor(broker: ServiceBroker, timeoutMs = CHECK_TIMEOUT_MS): Record<string, Probe> {
	const probes: Record<string, Probe> = {};
	const app = appIfAny(broker);
	const services = broker.services.filter(s => !s.name.startsWith("$"));
	if (app && services.some(s => !NO_DATABASE_SERVICES.has(s.name))) {
		const { sequelize } = app;
		probes.database = async () => {
			await sequelize.query("SELECT 1", { type: QueryTypes.SELECT });
		};
	}
	if (app?.redis) {
		const redis = app.redis;
		probes.redis = async () => {
			// No offline queue (lib/redis.ts): a PING while disconnected fails at once.
			if (redis.status !== "ready") throw new Error(`not connected (${redis.status})`);
			await redis.ping();
		};
	}
	const transit = broker.transit;
	if (transit) {
		probes.transporter = async () => {
			if (!transit.connected || !transit.tx.connected) throw new Error("not connected");
			// `connected` stays true while a client reconnects by itself: ask the server.
			const tx = transit.tx as unknown as { client?: { rtt(): Promise<number> } | null; probe?: () => Promise<void> };
			if (transit.tx instanceof Transporters.NATS) {
				if (!tx.client) throw new Error("not connected");
				await tx.client.rtt();
			} else if (typeof tx.probe === "function") {
				await tx.probe();
			}
		};
	}
	const watchers = services.filter(s => typeof (s as unknown as { watcherReadiness?: unknown }).watcherReadiness === "function");
	if (watchers.length) {
		probes.watchers = () => {
			const readiness = watchers.map(s => (s as unknown as { watcherReadiness(): WatcherReadiness }).watcherReadiness());
			const check = watchersCheck(readiness);
			// Each watcher service's fair share on this node (docs/deployment.md "Load sharing").
			const shares = readiness.flatMap(r => (r.share ? [r.share] : []));
			if (!check.ok) throw new CheckFailed(check.error!, { networks: check.networks, shares });
			return { networks: check.networks, shares };
		};
	}
	const sweepers = services.filter(s => typeof (s as unknown as { sweeperReadiness?: unknown }).sweeperReadiness === "function");
	if (sweepers.length) {
		probes.sweepers = () => {
			const readiness = sweepers.map(s => (s as unknown as { sweeperReadiness(): SweeperReadiness }).sweeperReadiness());
			return { networks: readiness.flatMap(r => r.networks), shares: readiness.flatMap(r => r.shares ?? []) };
		};
	}
	const gateways = transit ? gatewaysProbe(broker, timeoutMs) : null;
	if (gateways) probes.gateways = gateways;
	const reached = servicesProbe(broker);
	if (reached) probes.services = reached;
	return probes;
}

/** Runs each check with its timeout; `inFlight` carries checks still running between probes. */
export async function checkReadiness(broker: ServiceBroker, inFlight = new Map<string, Promise<Detail | void>>(), timeoutMs = CHECK_TIMEOUT_MS): Promise<Readiness> {
	const probes = probesFor(broker, timeoutMs);
	const results = await Promise.all(
		Object.entries(probes).map(async ([name, probe]): Promise<[string, CheckResult]> => {
			let running = inFlight.get(name);
			if (!running) {
				const started = (async () => probe())().finally(() => {
					if (inFlight.get(name) === started) inFlight.delete(name);
				});
				inFlight.set(name, started);
				running = started;
			}
			let timer: NodeJS.Timeout | undefined;
			const timeout = new Promise<never>((_, reject) => {
				timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
			});
			const advisory = ADVISORY_CHECKS.has(name) ? { required: false as const } : {};
			try {
				const detail = await Promise.race([running, timeout]);
				return [name, { ok: true, ...advisory, ...(detail || {}) }];
			} catch (err) {
				return [name, { ok: false, ...advisory, error: safeError(err), ...(err instanceof CheckFailed ? err.detail : {}) }];
			} finally {
				clearTimeout(timer);
			}
		}),
	);
	const checks = Object.fromEntries(results);
	const reason = broker.stopping ? "the node is stopping" : !broker.started ? "the node is starting" : undefined;
	return { ready: !reason && results.every(([, r]) => r.ok || r.required === false), checks, ...(reason ? { reason } : {}) };
}

/** Listens on `port` (0: a free one) and `host`; fails with a clear message when the port is taken. */
export async function startHealthServer(broker: ServiceBroker, opts: { port: number; host: string }): Promise<HealthServer> {
	// Follows the transporter's connects from the start (the gateways check's discovery round).
	discoveryOf(broker);
	const inFlight = new Map<string, Promise<Detail | void>>();
	const server = http.createServer((req, res) => {
		const send = (status: number, body: object) => {
			const text = JSON.stringify(body);
			res.writeHead(status, { "Content-Type": "application/json", "Cache-Control": "no-store", "Content-Length": Buffer.byteLength(text) });
			res.end(req.method === "HEAD" ? undefined : text);
		};
		const path = (req.url || "/").split("?")[0];
		if (req.method !== "GET" && req.method !== "HEAD") {
			res.setHeader("Allow", "GET, HEAD");
			return send(405, { status: "method_not_allowed" });
		}
		if (path === "/healthz") return send(200, { status: "ok", nodeID: broker.nodeID });
		if (path !== "/readyz") return send(404, { status: "not_found" });
		checkReadiness(broker, inFlight).then(
			r => send(r.ready ? 200 : 503, { status: r.ready ? "ready" : "not_ready", nodeID: broker.nodeID, checks: r.checks, ...(r.reason ? { reason: r.reason } : {}) }),
			err => send(503, { status: "not_ready", nodeID: broker.nodeID, checks: {}, reason: safeError(err) }),
		);
	});
	await new Promise<void>((resolve, reject) => {
		server.once("error", (err: NodeJS.ErrnoException) => {
			const where = `${opts.host}:${opts.port}`;
			reject(
				new Error(
					err.code === "EADDRINUSE"
						? `the health endpoint's port ${where} is in use: set HEALTH_PORT to a free port (0: any) or "off"`
						: `the health endpoint could not listen on ${where}: ${safeError(err)}`,
				),
			);
		});
		server.listen(opts.port, opts.host, () => resolve());
	});
	const port = (server.address() as AddressInfo).port;
	broker.logger.info(`Health endpoint on ${opts.host}:${port} (GET /healthz, /readyz)`);
	return {
		port,
		close: () =>
			new Promise<void>(resolve => {
				server.close(() => resolve());
				server.closeAllConnections();
			}),
	};
}
