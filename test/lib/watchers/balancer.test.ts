/**
 * The fair-share balancer both mixins use (lib/watchers/balancer.ts), on two real nodes over NATS
 * sharing one database: the live replicas come from the registry, the holders from the lease
 * rows. The first node holds all four leases of a service; it hands them over one at a time, each
 * only once the other node holds the one before, until both lead two.
 */
import { v5 as uuidv5 } from "uuid";
import { CATALOGUE_NAMESPACE } from "../../../lib/networks/catalogue";
import { LeaseBalancer } from "../../../lib/watchers/balancer";
import { acquireLease, ensureCursor, Lease, releaseLease } from "../../../lib/watchers/store";
import { startNode, TestNode } from "../../helpers/harness";
import { until } from "../../helpers/until";
import { uniqueId } from "../../cluster/cluster.helpers";

const NATS_URL = process.env.TEST_NATS_URL || "nats://127.0.0.1:4222";
const SERVICE = "balanced-probe";
const IDS = [0, 1, 2, 3].map(i => uuidv5(`balancer-test:${i}`, CATALOGUE_NAMESPACE));

describe("the fair-share balancer over two nodes", () => {
	let a: TestNode;
	let b: TestNode;

	beforeAll(async () => {
		const env = { TRANSPORTER: NATS_URL, NAMESPACE: uniqueId("balancer") };
		a = await startNode({ services: [], env, nodeID: uniqueId("bal-a") });
		b = await startNode({ services: [], env, nodeID: uniqueId("bal-b"), shareWith: a });
		for (const node of [a, b]) node.broker.createService({ name: SERVICE });
		await until("both nodes offer the service", () => a.broker.registry.getServiceList({ onlyAvailable: true, skipInternal: true }).filter(s => s.name === SERVICE).length === 2, 30_000);
	}, 90_000);

	afterAll(async () => {
		await b?.stop();
		await a?.stop();
	});

	it("hands over one network at a time until both lead two; a replica at its share then waits before taking", async () => {
		const models = a.app.models;
		const held = new Map<string, Lease>();
		for (const id of IDS) {
			await ensureCursor(models, id, "sweep", new Date());
			held.set(id, (await acquireLease(models, id, `${a.broker.nodeID}:1:x`, 60_000, Date.now()))!);
		}
		const released: string[] = [];
		const balancer = new LeaseBalancer({
			broker: a.broker,
			serviceName: SERVICE,
			models,
			rebalanceMs: 1_000,
			deferMs: 3_000,
			handOverMs: 60_000,
			logger: a.broker.logger,
			leases: () =>
				IDS.map(id => ({
					leaseId: id,
					slug: id.slice(0, 8),
					leading: () => held.has(id),
					releasable: () => held.has(id),
					release: async () => {
						await releaseLease(models, held.get(id)!, Date.now());
						held.delete(id);
						released.push(id);
						return true;
					},
				})),
		});
		expect(balancer.view()).toMatchObject({ replicas: [a.broker.nodeID, b.broker.nodeID].sort(), share: 2, networks: 4, led: 4 });
		// Leading more than its share: a free lease would wait for the others first.
		expect(balancer.takeDelayMs(IDS[0])).toBe(3_000);

		await balancer.rebalance();
		expect(released).toHaveLength(1);
		// The released network counts as a's until b holds it: nothing more meanwhile.
		await balancer.rebalance();
		expect(released).toHaveLength(1);
		// a does not take it back at once (it released it).
		expect(balancer.takeDelayMs(released[0])).toBe(3_000);

		expect(await acquireLease(models, released[0], `${b.broker.nodeID}:1:y`, 60_000, Date.now())).not.toBeNull();
		await balancer.rebalance();
		expect(released).toHaveLength(2);
		expect(await acquireLease(models, released[1], `${b.broker.nodeID}:1:y`, 60_000, Date.now())).not.toBeNull();

		// 2 and 2: balanced, nothing moves.
		await balancer.rebalance();
		await balancer.rebalance();
		expect(released).toHaveLength(2);
		expect(balancer.view()).toMatchObject({ share: 2, led: 2 });
		expect(new Set(released).size).toBe(2);
	});
});
