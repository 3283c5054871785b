/**
 * The cluster scenario every transporter must pass: node A runs only the gateway (`api`), node B
 * the core services on A's database; HTTP requests to A are served by B over the transporter,
 * errors keep their shape across nodes, and broadcasts (keys.changed, a probe event) reach the
 * other node. Each run uses its own NAMESPACE so parallel runs on one NATS/Kafka never meet.
 */
import crypto from "node:crypto";
import net from "node:net";
import type { Context } from "moleculer";
import { systemClock } from "../../lib/clock";
import { Env } from "../../lib/config";
import { availableServices } from "../../lib/node";
import { httpClient, REDIS_URL, startNode, TestNode } from "../helpers/harness";
import { startNodeProcess, type NodeProcess } from "../helpers/node-process";
import { until as waitFor } from "../helpers/until";
import { createUserWithToken } from "../helpers/users";

/** The k8s `core` group (k8s/core.yaml), as far as those services exist yet. */
export const CORE_SERVICES = ["auth", "users", "files", "mail", "organizations", "keys"];
/** What the deployment files' core group runs: the platform, the payments core and webhooks. */
export const DEPLOYED_CORE_SERVICES = [...CORE_SERVICES, "networks", "pricing", "intents", "links", "transactions", "dashboard", "webhooks", "withdrawals"];

export interface ClusterTransport {
	/** Environment of each node (TRANSPORTER and its settings), given their node ids and namespace. */
	env(ids: { a: string; b: string }, namespace: string): Promise<{ a: Env; b: Env }> | { a: Env; b: Env };
}

export function uniqueId(prefix: string): string {
	return `${prefix}-${crypto.randomBytes(4).toString("hex")}`;
}

/** A TCP port nothing listens on right now (for Moleculer's TCP transporter, which needs them up front). */
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

/**
 * A cluster of real node processes (lib/start.ts) as deployed, on one MySQL database over a
 * transporter, and the test's own node (`observer`, in this process): it owns the database
 * (migrated) and DATA_DIR with the shared secrets, and is a member of the cluster without
 * services, to read the registry and the tables. Each process gets the cluster's settings
 * (`start`'s) and its own.
 */
export class ProcessCluster {
	readonly procs = new Map<string, NodeProcess>();
	observer!: TestNode;
	private common: Record<string, string> = {};

	/** The processes' output (the tail of each), for a failure message. */
	readonly output = (): string => [...this.procs].map(([name, p]) => `--- ${name} ---\n${p.output().slice(-3000)}`).join("\n");

	/** Starts the observer in `namespace` over `transportEnv` (TRANSPORTER and its settings); `env` goes to every process. */
	async start(namespace: string, transportEnv: Record<string, string>, env: Record<string, string> = {}): Promise<TestNode> {
		this.observer = await startNode({ services: [], env: { ...transportEnv, NAMESPACE: namespace }, clock: systemClock, nodeID: uniqueId("observer") });
		this.common = {
			...transportEnv,
			NAMESPACE: namespace,
			DATABASE_URL: this.observer.config.databaseUrl,
			DATA_DIR: this.observer.dataDir,
			REDIS_URL,
			REDIS_PREFIX: this.observer.config.redisPrefix,
			BCRYPT_ROUNDS: "4",
			RATE_LIMIT_SCALE: "1000",
			METRICS: "off",
			HEALTH_PORT: "0",
			LOG_LEVEL: "warn",
			...env,
		};
		return this.observer;
	}

	/** A process `name` running `services`. */
	node(name: string, services: string[], extra: Record<string, string> = {}): NodeProcess {
		const p = startNodeProcess({ ...this.common, NODE_ID: uniqueId(name), SERVICES: services.join(","), ...extra });
		this.procs.set(name, p);
		return p;
	}

	/** Until the observer sees `count` nodes offering `service` (the registry, over the transporter). */
	async nodesOffering(service: string, count: number): Promise<void> {
		await waitFor(
			`${count} node(s) offering ${service}`,
			() => this.observer.broker.registry.getServiceList({ onlyAvailable: true, skipInternal: true }).filter(s => s.name === service).length === count,
			90_000,
			this.output,
		);
	}

	/** The gateway process listening on `port`, as a TestNode (the observer's database), once it routes the payments API. */
	async gatewayOn(port: number): Promise<TestNode> {
		const baseUrl = `http://127.0.0.1:${port}/api/v1`;
		const gateway = { ...this.observer, baseUrl, http: httpClient(baseUrl) };
		// The gateway builds routes from remote services shortly after it learns of them.
		await waitFor("the gateway's payments routes", async () => (await gateway.http("GET", "/payment_intents/pi_none")).status === 401, 60_000, this.output);
		return gateway;
	}

	/** Kills -9 every process and stops the observer. */
	async stop(): Promise<void> {
		await Promise.all([...this.procs.values()].map(p => p.kill()));
		await this.observer?.stop();
	}
}

async function until(what: string, cond: () => Promise<boolean> | boolean, timeoutMs = 20_000): Promise<void> {
	const deadline = Date.now() + timeoutMs;
	while (!(await cond())) {
		if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
		await new Promise(r => setTimeout(r, 50));
	}
}

const WELL_FORMED_UNKNOWN_KEY = { key: `ak_test_${"A".repeat(32)}`, secret: `sk_test_${"b".repeat(48)}` };

export function describeCluster(title: string, transport: ClusterTransport | null, skipReason?: string): void {
	if (!transport) {
		console.warn(`${title}: skipped (${skipReason})`);
		describe.skip(title, () => it("needs its transport", () => undefined));
		return;
	}

	describe(title, () => {
		let a: TestNode;
		let b: TestNode;
		let ids: { a: string; b: string };
		const probes: Array<{ on: string; from: string | null; params: unknown }> = [];

		beforeAll(async () => {
			ids = { a: uniqueId("gw"), b: uniqueId("core") };
			const namespace = uniqueId("cl");
			const env = await transport.env(ids, namespace);
			const core = CORE_SERVICES.filter(s => s in availableServices());
			a = await startNode({ services: ["api"], env: env.a, nodeID: ids.a });
			b = await startNode({ services: core, env: env.b, nodeID: ids.b, shareWith: a });
			for (const node of [a, b]) {
				node.broker.createService({
					name: `probe-${node.broker.nodeID}`,
					events: {
						"cluster.probe"(ctx: Context<unknown>) {
							probes.push({ on: ctx.broker.nodeID, from: ctx.nodeID, params: ctx.params });
						},
					},
				});
			}
			await a.broker.waitForServices(["keys", "organizations", `probe-${ids.b}`], 30_000, 100);
			await b.broker.waitForServices([`probe-${ids.a}`], 30_000, 100);
			// The gateway builds routes from remote services shortly after it learns of them.
			await until("the gateway to publish the keys routes", async () => (await a.http("GET", "/api-keys/me")).status !== 404);
		}, 60_000);

		afterAll(async () => {
			await b?.stop();
			await a?.stop();
		});

		it("serves GET /api/v1/ on the gateway node, which runs no business service", async () => {
			const res = await a.http("GET", "/");
			expect(res.status).toBe(200);
			expect(res.body).toMatchObject({ name: "Crypto Payment Gateway", apiVersion: "v1" });
			expect(a.broker.getLocalService("keys")).toBeFalsy();
			const keysNodes = a.broker.registry
				.getServiceList({ onlyAvailable: true, skipInternal: true })
				.filter(s => s.name === "keys")
				.map(s => s.nodeID);
			expect(keysNodes).toEqual([ids.b]);
		});

		it("answers a call served on the other node, with errors in the API's shape", async () => {
			const bad = await a.http("POST", "/api-keys/test", { body: WELL_FORMED_UNKNOWN_KEY });
			expect(bad.status).toBe(401);
			expect(bad.body).toEqual({ statusCode: 401, message: "Invalid API key", error: "Unauthorized" });

			// Validation runs on node B; the field errors survive the trip back.
			const invalid = await a.http("POST", "/api-keys/test", { body: { key: WELL_FORMED_UNKNOWN_KEY.key } });
			expect(invalid.status).toBe(400);
			expect(invalid.body).toMatchObject({ statusCode: 400, error: "Bad Request" });
			expect(Object.keys(invalid.body.errors)).toEqual(["secret"]);
		});

		it("runs a merchant's key flow across nodes; a revocation on B reaches A's gateway at once", async () => {
			// organizations.createDefaults runs on B, called from A.
			const owner = await createUserWithToken(a);
			const created = await a.http("POST", `/organizations/${owner.sandbox.id}/api-keys`, { token: owner.token, body: { name: "cluster" } });
			expect(created.status).toBe(201);
			const key = { key: created.body.key as string, secret: created.body.secret as string };

			const test = await a.http("POST", "/api-keys/test", { body: key });
			expect(test.status).toBe(200);
			expect(test.body).toEqual({ ok: true, organizationId: owner.sandbox.id, mode: "sandbox" });
			// Twice: the second answer comes from A's credential cache.
			for (let i = 0; i < 2; i++) {
				const me = await a.http("GET", "/api-keys/me", { key });
				expect(me.status).toBe(200);
				expect(me.body).toMatchObject({ id: created.body.apiKey.id, organizationId: owner.sandbox.id, mode: "sandbox" });
			}

			const revoked = await a.http("POST", `/api-keys/${created.body.apiKey.id}/revoke`, { token: owner.token });
			expect(revoked.status).toBe(200);
			expect(revoked.body.status).toBe("revoked");
			// Only keys.changed (broadcast by B) clears A's cache before its 30 s expiry.
			const after = await a.http("GET", "/api-keys/me", { key });
			expect(after.status).toBe(401);
			expect(after.body.message).toBe("Invalid API key");
		});

		it("delivers a broadcast event to the other node, in both directions", async () => {
			const marker = crypto.randomUUID();
			await b.broker.broadcast("cluster.probe", { marker, dir: "b->a" });
			await a.broker.broadcast("cluster.probe", { marker, dir: "a->b" });
			await until("both probes", () => probes.filter(p => (p.params as { marker?: string }).marker === marker).length === 4, 10_000);
			const mine = probes.filter(p => (p.params as { marker?: string }).marker === marker);
			// Each node hears its own broadcast locally and the other's over the transporter.
			expect(mine).toEqual(
				expect.arrayContaining([
					{ on: ids.a, from: ids.b, params: { marker, dir: "b->a" } },
					{ on: ids.b, from: ids.a, params: { marker, dir: "a->b" } },
					{ on: ids.a, from: ids.a, params: { marker, dir: "a->b" } },
					{ on: ids.b, from: ids.b, params: { marker, dir: "b->a" } },
				]),
			);
		});
	});
}
