/**
 * The sweeper-ton service wired on a node (services/sweeper-ton.service.ts): it follows the TON
 * networks with an API URL (the TON test node for ton-testnet), takes the network's sweep lease,
 * steps against the API, and logs the sweeper wallet's address (never its key). The sweeps
 * themselves are tested on the runner (test/lib/chains/ton/sweep-runner.test.ts).
 */
import { walletAddress } from "../../lib/chains/ton/sweep";
import { startTonNode, type TonNode } from "../helpers/ton-node";
import { until } from "../helpers/until";
import type { LogLine, TestNode } from "../helpers/harness";
import { startPaymentsNode, PAYMENTS_SERVICES } from "../e2e/payments.helpers";

const SEED_HEX = "4b".repeat(32);

describe("sweeper-ton service", () => {
	let chain: TonNode;
	let node: TestNode;
	const logs: LogLine[] = [];

	beforeAll(async () => {
		chain = await startTonNode({ testnet: true, autoSealMs: 200 });
		node = await startPaymentsNode({
			services: [...PAYMENTS_SERVICES, "withdrawals", "sweeper-ton"],
			logs,
			env: { RPC_URL_TON_TESTNET: chain.url, SWEEPER_PRIVATE_KEY_TON: SEED_HEX, SWEEP_POLL_MS: "200", SWEEP_LEASE_MS: "3000" },
		});
	}, 120_000);

	afterAll(async () => {
		await node?.stop();
		await chain?.stop();
	});

	it("leads ton-testnet, steps against the TON API, and logs the sweeper wallet's address but not its key", async () => {
		const status = await until(
			"ton-testnet led",
			async () => {
				const s = (await node.broker.call("sweeper-ton.status")) as Array<{ slug: string; leader: boolean }>;
				return s.find(n => n.slug === "ton-testnet" && n.leader) ?? null;
			},
			30_000,
		);
		expect(status.leader).toBe(true);
		// A step reads the last masterchain block first.
		await until("masterchainInfo read", async () => (chain.facade.calls["/api/v3/masterchainInfo"] ?? 0) > 0, 30_000);
		const address = walletAddress(Buffer.from(SEED_HEX, "hex"), "v5r1");
		await until("sweeper wallet logged", async () => logs.some(l => l.text.includes(address)), 30_000);
		expect(logs.some(l => l.text.includes(SEED_HEX))).toBe(false);
	});
});
