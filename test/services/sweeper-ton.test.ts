/**
 * The sweeper-ton service wired on a node (services/sweeper-ton.service.ts): it follows the TON
 * networks with an API URL (the TON test node for ton-testnet), takes the network's sweep lease,
 * steps against the API, and logs the sweeper wallet's address (never its key); support lifts a
 * deposit's hold by any spelling of its address. The sweeps
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
	}, 120_000);

	it("support.clearHold lifts a deposit's hold (kept by its raw address) given the address in any TON form; status lists it until then", async () => {
		const [net] = (await node.broker.call("sweeper-ton.status")) as Array<{ networkId: string; slug: string }>;
		const deposit = (await chain.wallet()).address;
		const now = new Date();
		await node.app.models.SweepHold.create({ networkId: net.networkId, scope: "deposit", address: deposit.toRawString(), tokenId: "", failures: 3, reason: "test", nextAttemptAt: now, blockedAt: now, createdAt: now, updatedAt: now });
		const listed = (await node.broker.call("sweeper-ton.status")) as Array<{ holds: Array<{ address: string; blocked: boolean }> }>;
		expect(listed[0].holds).toEqual([expect.objectContaining({ address: deposit.toRawString(), blocked: true })]);
		// Another address clears nothing; the user-friendly (non-bounceable, test-only) form of the deposit clears it.
		const other = (await chain.wallet()).address.toString({ bounceable: false, testOnly: true });
		expect(((await node.broker.call("sweeper-ton.support.clearHold", { network: net.slug, address: other })) as { cleared: number }).cleared).toBe(0);
		const friendly = deposit.toString({ bounceable: false, testOnly: true });
		expect(((await node.broker.call("sweeper-ton.support.clearHold", { network: net.slug, address: friendly })) as { cleared: number }).cleared).toBe(1);
		expect(await node.app.models.SweepHold.count({ where: { networkId: net.networkId } })).toBe(0);
	});
});
