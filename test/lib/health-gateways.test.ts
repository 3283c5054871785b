/**
 * Readiness that means reachable (lib/gateway-discovery.ts): a core node over NATS is ready only
 * once every gateway node it sees lists its services, and a gateway's /readyz says which services
 * it reaches. The race of a restart (the core up, a gateway not yet holding its INFO packet: one
 * request got 503 in between) is staged on real brokers by holding the core's INFO packets on the
 * gateway until the test lets them through, which is how a slow or lost discovery looks to it.
 */
import type { ServiceBroker } from "moleculer";
import { HealthServer, startHealthServer } from "../../lib/health";
import { startNode, TestNode } from "../helpers/harness";
import { until } from "../helpers/until";
import { CORE_SERVICES, uniqueId } from "../cluster/cluster.helpers";

const NATS_URL = process.env.TEST_NATS_URL || "nats://127.0.0.1:4222";
const UNKNOWN_KEY = { key: `ak_test_${"A".repeat(32)}`, secret: `sk_test_${"b".repeat(48)}` };

async function readyz(health: HealthServer): Promise<{ status: number; body: any }> {
	const res = await fetch(`http://127.0.0.1:${health.port}/readyz`);
	return { status: res.status, body: await res.json() };
}

interface Discoverer {
	processRemoteNodeInfo(sender: string, payload: unknown): unknown;
}

/** On `broker`, INFO packets of `nodeID` wait until `release()`; requests from it are counted by action. */
function holdDiscovery(broker: ServiceBroker, nodeID: string) {
	const transit = broker.transit as unknown as { discoverer: Discoverer; requestHandler(payload: { action: string; sender: string }): unknown };
	const discoverer = transit.discoverer;
	const process = discoverer.processRemoteNodeInfo.bind(discoverer);
	const held: unknown[] = [];
	let holding = true;
	discoverer.processRemoteNodeInfo = (sender, payload) => {
		if (holding && sender === nodeID) return void held.push(payload);
		return process(sender, payload);
	};
	const requests = new Map<string, number>();
	const handle = transit.requestHandler.bind(transit);
	transit.requestHandler = payload => {
		if (payload.sender === nodeID) requests.set(payload.action, (requests.get(payload.action) ?? 0) + 1);
		return handle(payload);
	};
	return {
		/** How many times `nodeID` asked this node for its node list. */
		asked: () => requests.get("$node.list") ?? 0,
		held: () => held.length,
		release() {
			holding = false;
			for (const payload of held.splice(0)) process(nodeID, payload);
		},
	};
}

describe("readiness of a core node and of gateway nodes over NATS", () => {
	const namespace = uniqueId("ready");
	const env = { TRANSPORTER: NATS_URL, NAMESPACE: namespace };
	const ids = { core: uniqueId("core"), gw1: uniqueId("gw1"), gw2: uniqueId("gw2") };
	let core: TestNode;
	let gw1: TestNode;
	let gw2: TestNode | undefined;
	let coreHealth: HealthServer;
	let gw1Health: HealthServer;
	let gw1Hold: ReturnType<typeof holdDiscovery>;

	beforeAll(async () => {
		core = await startNode({ services: CORE_SERVICES, env, nodeID: ids.core });
		coreHealth = await startHealthServer(core.broker, { port: 0, host: "127.0.0.1" });
	}, 60_000);

	afterAll(async () => {
		await coreHealth?.close();
		await gw1Health?.close();
		await gw2?.stop();
		await gw1?.stop();
		await core?.stop();
	});

	it("a core node that sees no gateway is ready after one heartbeat round, and says it saw none", async () => {
		// Right after connecting a gateway may not be known yet: the check waits a heartbeat round.
		const first = await readyz(coreHealth);
		if (first.status === 503) expect(first.body.checks.gateways).toEqual({ ok: false, error: expect.stringMatching(/^discovering the cluster \(one heartbeat round after connecting, \d+ s more\)$/), gateways: [] });
		const r = await until("the core node ready", async () => {
			const probe = await readyz(coreHealth);
			return probe.status === 200 ? probe : null;
		});
		expect(r).toMatchObject({ status: 200, body: { status: "ready", checks: { database: { ok: true }, transporter: { ok: true } } } });
		expect(r.body.checks.gateways).toEqual({ ok: true, gateways: [], note: "no gateway seen" });
	});

	it("is not ready while a gateway it sees has not discovered its services, and ready once it has", async () => {
		gw1 = await startNode({ services: ["api"], env, nodeID: ids.gw1, shareWith: core, beforeStart: b => (gw1Hold = holdDiscovery(b, ids.core)) });
		gw1Health = await startHealthServer(gw1.broker, { port: 0, host: "127.0.0.1" });
		const waiting = await until("the core node not ready", async () => {
			const r = await readyz(coreHealth);
			return r.status === 503 ? r : null;
		});
		expect(waiting.body.checks.gateways).toEqual({ ok: false, error: `gateway ${ids.gw1} has not discovered this node yet`, gateways: [], waiting: [ids.gw1] });
		expect(waiting.body.checks.database).toEqual({ ok: true });
		expect(gw1Hold.held()).toBeGreaterThan(0);
		// The gateway meanwhile reaches no service: it says so, and stays ready (it answers 503 itself).
		const gwWaiting = await readyz(gw1Health);
		expect(gwWaiting).toMatchObject({ status: 200, body: { status: "ready", checks: { transporter: { ok: true } } } });
		expect(gwWaiting.body.checks.services).toEqual({ ok: false, required: false, error: "no service reached yet", services: {} });
		expect(gwWaiting.body.checks).not.toHaveProperty("gateways");

		gw1Hold.release();
		const ready = await until("the core node ready", async () => {
			const r = await readyz(coreHealth);
			return r.status === 200 ? r : null;
		});
		expect(ready.body.checks.gateways).toEqual({ ok: true, gateways: [ids.gw1] });
		// Ready means reachable: the gateway lists the core node's services ...
		const listed = gw1.broker.registry.getServiceList({ onlyAvailable: true, skipInternal: true }).filter(s => s.nodeID === ids.core).map(s => s.name);
		expect(listed.sort()).toEqual([...CORE_SERVICES].sort());
		// ... and its /readyz names each with the node offering it.
		const gwReady = await readyz(gw1Health);
		expect(gwReady.status).toBe(200);
		expect(gwReady.body.checks.services).toEqual({ ok: true, required: false, services: Object.fromEntries([...CORE_SERVICES].sort().map(s => [s, [ids.core]])) });
		await until("a call through the gateway", async () => (await gw1.http("POST", "/api-keys/test", { body: UNKNOWN_KEY })).body?.message === "Invalid API key");
	});

	it("asks a gateway that listed it nothing more: probes stay cheap", async () => {
		const asked = gw1Hold.asked();
		expect(asked).toBeGreaterThan(0);
		for (let i = 0; i < 3; i++) expect((await readyz(coreHealth)).status).toBe(200);
		expect(gw1Hold.asked()).toBe(asked);
	});

	it("a gateway that appears later is asked until it lists the core node, the first one is not asked again", async () => {
		const asked = gw1Hold.asked();
		let gw2Hold!: ReturnType<typeof holdDiscovery>;
		gw2 = await startNode({ services: ["api"], env, nodeID: ids.gw2, shareWith: core, beforeStart: b => (gw2Hold = holdDiscovery(b, ids.core)) });
		const waiting = await until("the core node not ready", async () => {
			const r = await readyz(coreHealth);
			return r.status === 503 ? r : null;
		});
		expect(waiting.body.checks.gateways).toEqual({ ok: false, error: `gateway ${ids.gw2} has not discovered this node yet`, gateways: [ids.gw1], waiting: [ids.gw2] });
		gw2Hold.release();
		const ready = await until("the core node ready", async () => {
			const r = await readyz(coreHealth);
			return r.status === 200 ? r : null;
		});
		expect(ready.body.checks.gateways).toEqual({ ok: true, gateways: [ids.gw1, ids.gw2].sort() });
		expect(gw2Hold.asked()).toBeGreaterThan(0);
		expect(gw1Hold.asked()).toBe(asked);
	});

	it("a gateway whose routes lead to a service no node offers says which, and stays ready", async () => {
		await core.stop();
		const away = await until("the gateway to see the core node gone", async () => {
			const r = await readyz(gw1Health);
			return r.body.checks.services?.away ? r : null;
		}, 60_000);
		expect(away.status).toBe(200);
		expect(away.body.checks.services).toMatchObject({ ok: false, required: false, services: {}, error: expect.stringMatching(/^no node offers /) });
		// Its routes are kept (services/api.service.ts): those of the keys service among them.
		expect(away.body.checks.services.away).toEqual(expect.arrayContaining(["auth", "keys", "organizations"]));
		expect(away.body.checks.services.away).not.toContain("api");
	});
});
