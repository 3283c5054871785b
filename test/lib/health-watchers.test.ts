/**
 * /readyz of watcher nodes (lib/health.ts, lib/watchers/readiness.ts) on a real anvil chain: two
 * nodes running the EVM watcher on one database. The one holding the network's lease is ready
 * while its cursor is within WATCHER_READY_MAX_LAG blocks of the head and its RPC answers; the
 * standby is ready throughout. Each lists the networks it leads or stands by for (role, lag), and
 * a sweeper node the networks it sweeps.
 */
import type { Wallet } from "ethers";
import { networkIdFor } from "../../lib/networks/catalogue";
import { HealthServer, startHealthServer } from "../../lib/health";
import type { WatcherStatus } from "../../lib/watchers/runner";
import { startAnvil, Anvil } from "../helpers/anvil";
import { startRpcProxy, RpcProxy } from "../helpers/rpc-proxy";
import { startNode, TestNode } from "../helpers/harness";
import { until } from "../helpers/until";

const NET = networkIdFor("anvil-local");
const MAX_LAG = 5;
const WATCHER_SERVICES = ["networks", "transactions", "watcher-evm"];
const WATCHER_ENV = {
	WATCHER_POLL_MS: "50",
	// One block per step: a jump of the head takes many steps to catch up, long enough to be seen.
	WATCHER_MAX_RANGE: "1",
	WATCHER_READY_MAX_LAG: String(MAX_LAG),
	WATCHER_RECONCILE_MS: "0",
};

async function readyz(health: HealthServer): Promise<{ status: number; body: any }> {
	const res = await fetch(`http://127.0.0.1:${health.port}/readyz`);
	return { status: res.status, body: await res.json() };
}

describe("readiness of watcher nodes", () => {
	let anvil: Anvil;
	let rpc: RpcProxy;
	let leader: TestNode;
	let standby: TestNode;
	let leaderHealth: HealthServer;
	let standbyHealth: HealthServer;
	let sweeper: TestNode | undefined;
	let sweeperHealth: HealthServer | undefined;

	const status = async (node: TestNode) => ((await node.broker.call("watcher-evm.status")) as WatcherStatus[]).find(s => s.networkId === NET);

	beforeAll(async () => {
		anvil = await startAnvil();
		await anvil.setAutomine(false);
		rpc = await startRpcProxy(anvil.url);
		leader = await startNode({ services: WATCHER_SERVICES, env: { ...WATCHER_ENV, RPC_URL_ANVIL_LOCAL: rpc.url } });
		await until("the first node to lead anvil-local and read its head", async () => {
			const s = await status(leader);
			return s?.leader && s.lag !== null;
		});
		standby = await startNode({ services: WATCHER_SERVICES, env: { ...WATCHER_ENV, RPC_URL_ANVIL_LOCAL: anvil.url }, shareWith: leader });
		await until("the second node to follow anvil-local", async () => !!(await status(standby)));
		leaderHealth = await startHealthServer(leader.broker, { port: 0, host: "127.0.0.1" });
		standbyHealth = await startHealthServer(standby.broker, { port: 0, host: "127.0.0.1" });
	}, 120_000);

	afterAll(async () => {
		await sweeperHealth?.close();
		await sweeper?.stop();
		await leaderHealth?.close();
		await standbyHealth?.close();
		await standby?.stop();
		await leader?.stop();
		await rpc?.stop();
		await anvil?.stop();
	});

	it("the leader is ready once it has read the chain, with the database and watchers checks; the standby is ready", async () => {
		const led = await readyz(leaderHealth);
		expect(led).toMatchObject({ status: 200, body: { status: "ready", checks: { database: { ok: true }, watchers: { ok: true } } } });
		expect((await status(standby))?.leader).toBe(false);
		expect(await readyz(standbyHealth)).toMatchObject({ status: 200, body: { status: "ready", checks: { database: { ok: true }, watchers: { ok: true } } } });
	});

	it("each lists the networks it leads or stands by for, with the lag", async () => {
		const led = await readyz(leaderHealth);
		// With the node's fair share: no transporter here, so each node is the only replica it knows.
		const self = leader.broker.nodeID;
		expect(led.body.checks.watchers).toEqual({
			ok: true,
			networks: [{ slug: "anvil-local", chainType: "evm", role: "leader", lag: expect.any(Number) }],
			shares: [{ service: "watcher-evm", nodeID: self, replicas: [self], networks: 1, share: 1, led: 1 }],
		});
		expect(led.body.checks.watchers.networks[0].lag).toBeLessThanOrEqual(MAX_LAG);
		const standing = await readyz(standbyHealth);
		expect(standing.body.checks.watchers).toMatchObject({ ok: true, networks: [{ slug: "anvil-local", chainType: "evm", role: "standby" }] });
		// A standby's lag is what it last read (null before any head).
		expect(standing.body.checks.watchers.networks[0]).toHaveProperty("lag");
		expect([null, "number"]).toContain(standing.body.checks.watchers.networks[0].lag === null ? null : typeof standing.body.checks.watchers.networks[0].lag);
		// No transporter here: no gateway could reach them, none is asked (lib/gateway-discovery.ts).
		for (const r of [led, standing]) expect(r.body.checks).not.toHaveProperty("gateways");
	});

	it("a sweeper node lists the networks it sweeps as their leader (reported only)", async () => {
		sweeper = await startNode({
			services: ["networks", "transactions", "withdrawals", "sweeper-evm"],
			env: { RPC_URL_ANVIL_LOCAL: anvil.url, SWEEPER_PRIVATE_KEY: (anvil.accounts[5].signer as Wallet).privateKey, SWEEP_POLL_MS: "200", SWEEP_LEASE_MS: "2000" },
			shareWith: leader,
		});
		sweeperHealth = await startHealthServer(sweeper.broker, { port: 0, host: "127.0.0.1" });
		const leading = await until("the sweeper node to lead anvil-local", async () => {
			const r = await readyz(sweeperHealth!);
			return r.body.checks.sweepers?.networks?.[0]?.role === "leader" ? r : null;
		}, 60_000);
		expect(leading.status).toBe(200);
		const self = sweeper.broker.nodeID;
		expect(leading.body.checks.sweepers).toEqual({
			ok: true,
			required: false,
			networks: [{ slug: "anvil-local", chainType: "evm", role: "leader" }],
			shares: [{ service: "sweeper-evm", nodeID: self, replicas: [self], networks: 1, share: 1, led: 1 }],
		});
		expect(leading.body.checks).not.toHaveProperty("watchers");
		await sweeperHealth.close();
		sweeperHealth = undefined;
		await sweeper.stop();
		sweeper = undefined;
	});

	it("the leader is not ready while more than WATCHER_READY_MAX_LAG blocks behind, and ready again once caught up", async () => {
		await anvil.mine(150);
		const behind = await until("the leader not ready", async () => {
			const r = await readyz(leaderHealth);
			return r.status === 503 ? r : null;
		});
		expect(behind.body.checks.watchers).toEqual({
			ok: false,
			error: expect.stringMatching(new RegExp(`^anvil-local: \\d+ blocks behind the head \\(over ${MAX_LAG}\\)$`)),
			networks: [{ slug: "anvil-local", chainType: "evm", role: "leader", lag: expect.any(Number) }],
			shares: [expect.objectContaining({ service: "watcher-evm", led: 1 })],
		});
		expect(behind.body.checks.watchers.networks[0].lag).toBeGreaterThan(MAX_LAG);
		expect(behind.body.checks.database).toEqual({ ok: true });
		// The standby writes nothing and is not behind anything.
		expect((await readyz(standbyHealth)).status).toBe(200);
		// 150 steps of one block: over 60 s with both cores busy (seen: 121 blocks behind after 60 s).
		await until("the leader ready again", async () => (await readyz(leaderHealth)).status === 200, 180_000);
		const caughtUp = await status(leader);
		expect([caughtUp?.leader, caughtUp!.lag! <= MAX_LAG]).toEqual([true, true]);
		// Above the sum of its waits (20 s + 180 s).
	}, 230_000);

	it("the leader is not ready while its RPC is unreachable, and ready again when it is back", async () => {
		await rpc.stop();
		await anvil.mine(1);
		const down = await until(
			"the leader not ready",
			async () => {
				const r = await readyz(leaderHealth);
				return r.status === 503 ? r : null;
			},
			30_000,
		);
		expect(down.body.checks.watchers).toMatchObject({ ok: false, error: "anvil-local: RPC unreachable", networks: [{ slug: "anvil-local", role: "leader" }] });
		expect((await readyz(standbyHealth)).status).toBe(200);
		await rpc.start();
		await until("the leader ready again", async () => (await readyz(leaderHealth)).status === 200, 30_000);
		expect((await status(leader))?.leader).toBe(true);
	}, 90_000);
});
