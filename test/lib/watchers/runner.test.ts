/**
 * NetworkWatcher against a scripted chain source and a real database (a node's): where the
 * cursor of a network never read before starts.
 */
import { networkIdFor } from "../../../lib/networks/catalogue";
import type { BlockRef, ChainSource } from "../../../lib/chains/source";
import { watchersConfigFromEnv } from "../../../lib/watchers/config";
import { NetworkWatcher, PaymentsPort } from "../../../lib/watchers/runner";
import { startNode, TestNode } from "../../helpers/harness";
import { until } from "../../helpers/until";

const NET = networkIdFor("anvil-local");

/** A chain at `before` until `advanced()` says otherwise, then at `after` (blocks mined meanwhile). */
function scriptedSource(before: number, after: number, advanced: () => Promise<boolean>): ChainSource {
	const ref = (n: number): BlockRef => ({ number: n, hash: `0x${n.toString(16).padStart(64, "0")}`, parentHash: `0x${Math.max(0, n - 1).toString(16).padStart(64, "0")}`, timestamp: n });
	return {
		async head() {
			return ref((await advanced()) ? after : before);
		},
		async block(n: number) {
			return n <= after ? ref(n) : null;
		},
		async blocks(from: number, to: number) {
			const out: BlockRef[] = [];
			for (let n = from; n <= to; n++) out.push(ref(n));
			return out;
		},
		async transfers() {
			return [];
		},
		async close() {},
	};
}

const payments: PaymentsPort = {
	depositAddresses: async () => [],
	openAddresses: async () => [],
	detectBatch: async ({ items }) => items.map(() => ({ outcome: "unknownAddress" })),
	creditBatch: async ({ items }) => items.map(() => ({ credited: false, duplicate: false, reason: "unknownAddress" })),
	revert: async () => ({ outcome: "unknown" }),
};

describe("a network watcher on a network never read", () => {
	let node: TestNode;

	beforeAll(async () => {
		node = await startNode({ services: ["networks"] });
	}, 60_000);

	afterAll(async () => {
		await node?.stop();
	});

	it("starts its cursor at a head read before it took the lease (which opens the network to live checkouts), not after", async () => {
		// Block 10 is the head until the lease is taken; then blocks 11..20 are mined at once. A
		// checkout made once the lease is held can be paid in block 11: the cursor must not start above it.
		const source = scriptedSource(10, 20, async () => Boolean((await node.app.models.ChainCursor.findByPk(NET))?.leaseOwner));
		const logs: string[] = [];
		const logger = { info: (m: unknown) => logs.push(String(m)), warn: (m: unknown) => logs.push(String(m)), error: (m: unknown) => logs.push(String(m)) };
		const runner = new NetworkWatcher({
			sequelize: node.app.sequelize,
			models: node.app.models,
			source,
			network: { id: NET, slug: "anvil-local", chainType: "evm", requiredConfirmations: 1, tokens: [] },
			payments,
			config: { ...watchersConfigFromEnv({}), pollMs: 20 },
			logger,
			now: () => new Date(),
			owner: "test-owner",
		});
		runner.start();
		try {
			await until("cursor at the head", async () => (await node.app.models.ChainCursor.findByPk(NET))?.blockNumber === 20);
		} finally {
			await runner.stop();
		}
		expect(logs).toContain("Watcher: network anvil-local starts after block 9");
	});
});
