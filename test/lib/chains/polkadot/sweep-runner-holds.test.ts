/**
 * Polkadot extrinsics that land in a finalized block and FAIL there (System.ExtrinsicFailed: the
 * runtime charged the fee and rolled the call back), on the chopsticks Asset Hub node with the
 * runner's bench (sweep-runner.helpers.ts): the sweep is not taken as swept. It ends `failed` with
 * the fee it paid on its record (and, when the merchant's native paid it, a `fee` entry), the
 * deposit's funds stay in the ledger, a failure counts on the deposit's hold (nothing more is
 * signed from it while held), and the ledger equals the chain's balances.
 */
import { clearHoldsAt } from "../../../../lib/sweeps/holds";
import { fromBaseUnits, money } from "../../../../lib/money";
import { USDT } from "../../../helpers/polkadot-node";
import { NATIVE_ID, NET, PERIOD, polkadotRunnerBench, RUNNER_SETTINGS, USDT_ID } from "./sweep-runner.helpers";

describe("Polkadot sweep runner: extrinsics that fail on chain (chopsticks, Asset Hub runtime)", () => {
	const bench = polkadotRunnerBench();
	const { ledger, runner, free, assetOf, ledgerEqualsChain, checkout, stepUntil } = bench;
	const sweepsFrom = (address: string) => bench.db.app.models.Sweep.findAll({ where: { networkId: NET, fromAddress: address }, order: [["createdAt", "ASC"]] });
	// A pause after a failure longer than any of these tests on a loaded machine: "held" never lapses mid-test.
	const heldRunner = () => runner({ settings: { ...RUNNER_SETTINGS, failureBackoffMs: 3_600_000 } });
	const holdOf = (address: string, tokenId: string) => bench.db.app.models.SweepHold.findOne({ where: { networkId: NET, scope: "deposit", address, tokenId } });

	it("USDT: an asset sweep from an account the asset's freezer froze fails on chain; not swept, held, then swept once after the thaw", async () => {
		const { chain, db, fence } = bench;
		const units = 7_000_000n;
		const c = await checkout(USDT_ID, units);
		await chain.mintAsset(USDT.id, c.depositAddress, units);
		// Tether's freezer freezes the deposit's USDT account: its transfers are refused at dispatch, not at validation.
		await chain.api.tx.assets.freeze(USDT.id, c.depositAddress).signAndSend(chain.assetAdmin);
		await chain.newBlock();
		const merchantBefore = await assetOf(bench.merchant.address);
		const r = heldRunner();
		await stepUntil("top-up confirmed", () => db.app.models.Sweep.findOne({ where: { networkId: NET, kind: "topup", status: "confirmed" } }), r);
		const nativeBefore = await free(c.depositAddress);
		const failed = await stepUntil("asset sweep failed on chain", () => db.app.models.Sweep.findOne({ where: { networkId: NET, fromAddress: c.depositAddress, kind: "token", status: "failed" } }), r);
		expect(failed.reason).toMatch(/^failed on chain: ExtrinsicFailed in 0x[0-9a-f]{64}: /);
		// It landed: the deposit's nonce was used and its fee charged, from the native the top-up left (the operator's).
		expect(BigInt(failed.feePaid!)).toBeGreaterThan(0n);
		expect(nativeBefore - (await free(c.depositAddress))).toBe(BigInt(failed.feePaid!));
		expect(ledger.some(e => e.refId === failed.id)).toBe(false);
		// Nothing moved: the USDT is at the deposit and in the ledger (no sweep entry).
		expect(await assetOf(c.depositAddress)).toBe(units);
		expect((await assetOf(bench.merchant.address)) - merchantBefore).toBe(0n);
		expect(ledger.filter(e => e.tokenId === USDT_ID && e.kind === "sweep" && e.refType === "sweep_item")).toEqual([]);
		await ledgerEqualsChain(USDT_ID);
		const hold = (await holdOf(c.depositAddress, USDT_ID))!;
		expect(hold.failures).toBe(1);
		expect(hold.blockedAt).toBeNull();
		expect(hold.nextAttemptAt.getTime()).toBeGreaterThan(Date.now());
		// Held: past the era, steps sign nothing more from it and send it no second top-up.
		await chain.newBlock(PERIOD + 1);
		for (let i = 0; i < 3; i++) {
			await r.step(fence);
			await chain.newBlock();
		}
		expect((await sweepsFrom(c.depositAddress)).map(s => s.status)).toEqual(["failed"]);
		expect(await db.app.models.Sweep.count({ where: { networkId: NET, kind: "topup" } })).toBe(1);

		// The freezer thaws it and support clears the hold (sweeper-polkadot.support.clearHold): swept once.
		await chain.api.tx.assets.thaw(USDT.id, c.depositAddress).signAndSend(chain.assetAdmin);
		await chain.newBlock();
		expect(await clearHoldsAt(db.app.models, NET, c.depositAddress)).toBe(1);
		const swept = await stepUntil("asset sweep confirmed", () => db.app.models.Sweep.findOne({ where: { networkId: NET, fromAddress: c.depositAddress, kind: "token", status: "confirmed" } }), r);
		expect(swept.txHash).not.toBe(failed.txHash);
		// (One more top-up first when the failure's fee left the deposit less than the next one's.)
		expect((await sweepsFrom(c.depositAddress)).map(s => s.status)).toEqual(["failed", "confirmed"]);
		expect(await assetOf(c.depositAddress)).toBe(0n);
		expect((await assetOf(bench.merchant.address)) - merchantBefore).toBe(units);
		expect(await holdOf(c.depositAddress, USDT_ID)).toBeNull();
		await ledgerEqualsChain(USDT_ID);
	}, 900_000);

	it("native: a withdrawal payment below the ED to an account that does not exist fails on chain; its fee is a ledger entry, the deposit's funds stay, held", async () => {
		const { chain, db, fence, decimals } = bench;
		const amount = 2n * 10n ** BigInt(decimals);
		const c = await checkout(NATIVE_ID, amount);
		await bench.pay(c.depositAddress, amount);
		const ed = BigInt(chain.api.consts.balances.existentialDeposit.toString());
		// A fresh account: a first transfer to it under the ED is refused at dispatch (Token: BelowMinimum).
		const newcomer = chain.pair("//NeverFunded");
		expect(await free(newcomer.address)).toBe(0n);
		const failures: Array<{ id: string; reason: string }> = [];
		bench.ports.failRequest = async p => void failures.push({ id: p.id, reason: p.reason });
		const id = "00000000-0000-4000-8000-0000000d07c1";
		await bench.request(id, NATIVE_ID, fromBaseUnits(ed / 2n, decimals), newcomer.address);
		const r = heldRunner();
		const failed = await stepUntil("payment failed on chain", () => db.app.models.Sweep.findOne({ where: { requestId: id, status: "failed" } }), r);
		expect(failed.kind).toBe("native");
		expect(failed.reason).toMatch(/^failed on chain: ExtrinsicFailed in 0x[0-9a-f]{64}: .*BelowMinimum/);
		// The deposit paid the fee (the merchant's native): a `fee` entry for it, nothing else moved.
		const fee = BigInt(failed.feePaid!);
		expect(fee).toBeGreaterThan(0n);
		expect(await free(c.depositAddress)).toBe(amount - fee);
		expect(await free(newcomer.address)).toBe(0n);
		const entries = ledger.filter(e => e.refId === failed.id);
		expect(entries.map(e => [e.kind, e.tokenId])).toEqual([["fee", NATIVE_ID]]);
		expect(money(entries[0].amount).neg().toFixed()).toBe(money(fromBaseUnits(fee, decimals)).toFixed());
		expect(ledger.some(e => e.kind === "withdrawal" && e.refId === id)).toBe(false);
		await ledgerEqualsChain(NATIVE_ID);
		expect(failures).toEqual([{ id, reason: expect.stringMatching(/failed on chain.*BelowMinimum.*; retried$/) }]);
		expect((await holdOf(c.depositAddress, NATIVE_ID))!.failures).toBe(1);
		// Held: the request is still pending, but nothing more is signed from that deposit (no second fee).
		await chain.newBlock(PERIOD + 1);
		for (let i = 0; i < 3; i++) {
			await r.step(fence);
			await chain.newBlock();
		}
		expect((await sweepsFrom(c.depositAddress)).map(s => s.status)).toEqual(["failed"]);
		expect(await free(c.depositAddress)).toBe(amount - fee);
		await ledgerEqualsChain(NATIVE_ID);
	}, 900_000);
});
