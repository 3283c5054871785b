/**
 * The sweeper's records on both backends: a planned sweep that ends unsent gives its nonce back to
 * its wallet (else the wallet's next transaction waits forever behind it), and holds count
 * failures in a row until blocked (lib/sweeps/store.ts, lib/sweeps/holds.ts).
 */
import { clearHoldsAt, recordHoldFailure } from "../../../lib/sweeps/holds";
import { finishSweep, planSweep, type PlanInput, type SweepFence } from "../../../lib/sweeps/store";
import { acquireLease, ensureCursor } from "../../../lib/watchers/store";
import { startNode, TestNode } from "../../helpers/harness";

const NET = "00000000-0000-4000-8000-000000000001";
const WALLET = "0x1111111111111111111111111111111111111111";

describe("sweep records", () => {
	let node: TestNode;
	/** The sweep lease every sweep write is fenced by (lib/sweeps/store.ts assertFence). */
	let fence: SweepFence;
	beforeAll(async () => {
		node = await startNode({ services: [] });
		await ensureCursor(node.app.models, "00000000-0000-4000-8000-0000000000f0", "sweep", new Date());
		fence = (await acquireLease(node.app.models, "00000000-0000-4000-8000-0000000000f0", "test:1:sweeper-evm", 600_000, Date.now()))!;
	}, 60_000);
	afterAll(async () => node?.stop());

	const plan = (deposit: string, chainNonce = 0): PlanInput => ({
		networkId: NET,
		kind: "native",
		tokenId: "00000000-0000-4000-8000-000000000002",
		fromAddress: WALLET,
		toAddress: "0x2222222222222222222222222222222222222222",
		chainNonce,
		items: [{ transactionId: "00000000-0000-4000-8000-000000000003", organizationId: "00000000-0000-4000-8000-000000000004", mode: "sandbox", depositAddress: deposit, derivationIndex: 1, tokenId: "00000000-0000-4000-8000-000000000002", amount: "1" }],
	});

	it("gives an unsent sweep's nonce back when it was the wallet's last, and keeps a gap-free sequence", async () => {
		const { sequelize, models } = node.app;
		const now = new Date();
		const a = (await planSweep(sequelize, models, fence, plan("0xaaaa000000000000000000000000000000000001"), now))!;
		expect(a.nonce).toBe(0);
		expect(await finishSweep(sequelize, models, fence, a, "failed", { reason: "not worth its fee" }, now)).toBe(true);
		expect((await models.SweepWallet.findOne({ where: { networkId: NET, address: WALLET } }))!.nextNonce).toBe(0);
		expect((await models.Sweep.findByPk(a.id))!.nonce).toBe(-1);
		// The next sweep of the wallet takes that nonce: nothing waits behind a nonce nobody sends.
		const b = (await planSweep(sequelize, models, fence, plan("0xaaaa000000000000000000000000000000000002"), now))!;
		expect(b.nonce).toBe(0);
		const c = (await planSweep(sequelize, models, fence, plan("0xaaaa000000000000000000000000000000000003"), now))!;
		expect(c.nonce).toBe(1);
		// Not the last one: a later sweep holds the next nonce, so it is not given back.
		await finishSweep(sequelize, models, fence, b, "failed", { reason: "not worth its fee" }, now);
		expect((await models.SweepWallet.findOne({ where: { networkId: NET, address: WALLET } }))!.nextNonce).toBe(2);
		expect((await models.Sweep.findByPk(b.id))!.nonce).toBe(0);
		// A sweep that was signed (maybe sent) never gives its nonce back.
		c.status = "signed";
		await c.save();
		await finishSweep(sequelize, models, fence, c, "failed", { reason: "reverted on chain" }, now);
		expect((await models.SweepWallet.findOne({ where: { networkId: NET, address: WALLET } }))!.nextNonce).toBe(2);
	});

	it("counts failures in a row at one address, doubles the pause, blocks at the maximum (once), and is cleared by support", async () => {
		const { models } = node.app;
		const key = { networkId: NET, scope: "destination" as const, address: "0x3333333333333333333333333333333333333333", tokenId: "" };
		const policy = { maxFailures: 3, backoffMs: 1_000 };
		const t0 = new Date("2026-01-01T00:00:00Z");
		const first = await recordHoldFailure(models, key, "reverted", policy, t0);
		expect(first).toMatchObject({ blockedNow: false, hold: { failures: 1, blockedAt: null } });
		expect(first.hold.nextAttemptAt.getTime() - t0.getTime()).toBe(1_000);
		const second = await recordHoldFailure(models, key, "reverted", policy, t0);
		expect(second.hold.nextAttemptAt.getTime() - t0.getTime()).toBe(2_000);
		const third = await recordHoldFailure(models, key, "reverted again", policy, t0);
		expect(third).toMatchObject({ blockedNow: true, hold: { failures: 3, reason: "reverted again" } });
		expect(third.hold.blockedAt).not.toBeNull();
		expect((await recordHoldFailure(models, key, "still", policy, t0)).blockedNow).toBe(false);
		expect(await clearHoldsAt(models, NET, key.address.toUpperCase().replace("0X", "0x"))).toBe(1);
		expect(await models.SweepHold.count({ where: { networkId: NET } })).toBe(0);
	});
});
