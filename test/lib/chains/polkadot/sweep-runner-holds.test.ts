/**
 * Polkadot extrinsics that land in a finalized block and FAIL there (System.ExtrinsicFailed: the
 * runtime charged the fee and rolled the call back), on the chopsticks Asset Hub node with the
 * runner's bench (sweep-runner.helpers.ts): the sweep is not taken as swept. It ends `failed` with
 * the fee it paid on its record (and, when the merchant's native paid it, a `fee` entry), the
 * deposit's funds stay in the ledger, a failure counts on the deposit's hold (nothing more is
 * signed from it while held), and the ledger equals the chain's balances. And a withdrawal the
 * runtime would fail that way (below the ED / min_balance to a new account) is refused before
 * anything is signed.
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

	it("a withdrawal below the ED (native) or the asset's min_balance (USDT) to an account that does not exist is refused before signing: no fee, the chain unchanged; the same amount to an existing account is paid", async () => {
		const { chain, db, fence, decimals } = bench;
		const amount = 2n * 10n ** BigInt(decimals);
		const c = await checkout(NATIVE_ID, amount);
		await bench.pay(c.depositAddress, amount);
		const ed = BigInt(chain.api.consts.balances.existentialDeposit.toString());
		// A fresh account: a first transfer to it under the ED would fail at dispatch (Token: BelowMinimum), its fee charged.
		const newcomer = chain.pair("//NeverFunded");
		expect(await free(newcomer.address)).toBe(0n);
		const failures: Array<{ id: string; reason: string; final?: boolean }> = [];
		bench.ports.failRequest = async p => {
			failures.push({ id: p.id, reason: p.reason, final: p.final });
			if (p.final) bench.requests.find(r => r.id === p.id)!.status = "failed";
		};
		const below = fromBaseUnits(ed / 2n, decimals);
		const refusedNative = "00000000-0000-4000-8000-0000000d07c1";
		const refusedAsset = "00000000-0000-4000-8000-0000000d07c2";
		await bench.request(refusedNative, NATIVE_ID, below, newcomer.address);
		// USDT 1984's min_balance is 700 units: 500 to an account without a USDT account is refused too.
		await bench.request(refusedAsset, USDT_ID, fromBaseUnits(500n, 6), newcomer.address);
		const depositNonce = async () => ((await chain.api.query.system.account(c.depositAddress)) as unknown as { nonce: { toNumber(): number } }).nonce.toNumber();
		const nonceBefore = await depositNonce();
		const sweeperBefore = await free(bench.sweeper.address);
		const r = heldRunner();
		for (let i = 0; i < 3; i++) {
			await r.step(fence);
			await chain.newBlock();
		}
		expect(failures).toEqual([
			{ id: refusedNative, reason: expect.stringMatching(/below Polkadot's existential deposit .*; not sent$/), final: true },
			{ id: refusedAsset, reason: expect.stringMatching(/below the asset's minimum balance .*; not sent$/), final: true },
		]);
		// Nothing signed for either request (no sweep, no top-up), no fee: the deposit, the sweeper wallet and the newcomer as they were.
		expect(await db.app.models.Sweep.count({ where: { requestId: [refusedNative, refusedAsset] } })).toBe(0);
		expect(await depositNonce()).toBe(nonceBefore);
		expect(await free(newcomer.address)).toBe(0n);
		expect(await assetOf(newcomer.address)).toBe(0n);
		expect(await free(bench.sweeper.address)).toBe(sweeperBefore);
		expect(ledger.some(e => e.kind === "fee" || e.kind === "withdrawal")).toBe(false);
		expect(await holdOf(c.depositAddress, NATIVE_ID)).toBeNull();
		await ledgerEqualsChain(NATIVE_ID);

		// The same amount to an account that exists: paid exactly, from the same deposit.
		const existing = chain.pair("//Existing");
		await chain.fund(existing.address, 10n ** BigInt(decimals));
		await chain.newBlock();
		const existingBefore = await free(existing.address);
		const paid = "00000000-0000-4000-8000-0000000d07c3";
		await bench.request(paid, NATIVE_ID, below, existing.address);
		await stepUntil("paid", async () => bench.requests.find(x => x.id === paid)!.status === "completed", r);
		expect((await free(existing.address)) - existingBefore).toBe(ed / 2n);
		const sweep = (await db.app.models.Sweep.findOne({ where: { requestId: paid } }))!;
		expect(sweep.status).toBe("confirmed");
		expect(await free(c.depositAddress)).toBe(amount - ed / 2n - BigInt(sweep.feePaid!));
		expect(failures).toHaveLength(2);
		await ledgerEqualsChain(NATIVE_ID);
	}, 900_000);
});
