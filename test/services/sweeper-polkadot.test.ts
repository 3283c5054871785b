/**
 * sweeper-polkadot as a service, on one node (one broker) with watcher-polkadot, withdrawals and
 * the payments services, on the chopsticks Asset Hub node (test/helpers/polkadot-sweeper-node.ts,
 * a block built every 300 ms and finalized at once): a DOT payment the watcher credits is then
 * swept by the sweeper to the merchant's withdrawal address, once, the deposit reaped to 0, and
 * the merchant's ledger equal to the chain.
 */
import { fromBaseUnits, money } from "../../lib/money";
import { startPolkadotSweeperNodes, DOT_NET, DOT_TOKEN, type PolkadotSweeperNodes } from "../helpers/polkadot-sweeper-node";
import { until } from "../helpers/until";

describe("sweeper-polkadot with watcher-polkadot on one node", () => {
	let nodes: PolkadotSweeperNodes;

	beforeAll(async () => {
		nodes = await startPolkadotSweeperNodes();
	}, 300_000);

	afterAll(async () => {
		await nodes?.stop();
	});

	it("sweeps a DOT payment the watcher credited to the merchant's address; the ledger equals the chain", async () => {
		const { bench, node, merchant } = nodes;
		const merchantBefore = await bench.free(merchant.address);
		const c = await nodes.paidCheckout("0.8");
		const planck = 8_000_000_000n;
		const sweep = await until("sweep confirmed", async () => (await nodes.sweepsOf(c.address)).find(s => s.status === "confirmed"), 180_000);
		expect(sweep.kind).toBe("native");
		expect(sweep.networkId).toBe(DOT_NET);
		expect(await bench.free(c.address)).toBe(0n);
		const fee = BigInt(sweep.feePaid!);
		expect((await bench.free(merchant.address)) - merchantBefore).toBe(planck - fee);
		// credit 0.8, sweep −(0.8 − fee), fee −fee: the deposit's 0.
		expect((await nodes.ledger()).isZero()).toBe(true);
		const entries = await node.app.models.LedgerEntry.findAll({ where: { organizationId: nodes.user.live.id, networkId: DOT_NET, tokenId: DOT_TOKEN } });
		expect(entries.map(e => e.kind).sort()).toEqual(["credit", "fee", "sweep"]);
		expect(money(entries.find(e => e.kind === "fee")!.amount).neg().toFixed()).toBe(money(fromBaseUnits(fee, 10)).toFixed());
		// Swept once: later steps send nothing more.
		await new Promise(r => setTimeout(r, 2_000));
		expect(await nodes.sweepsOf(c.address)).toHaveLength(1);
	}, 400_000);
});
