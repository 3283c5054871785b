/**
 * Which events of an Asset Hub block are payments (lib/chains/polkadot/events.ts). The examples
 * are the shapes the test node's runtime gives (test/helpers/polkadot-node.test.ts): fields as
 * strings, accounts in SS58 of prefix 2, phases ApplyExtrinsic(i) or Initialization (null).
 */
import { blockCredits, successfulExtrinsics, type EventView } from "../../../../lib/chains/polkadot/events";

const ALICE = "HNZata7iMYWmk5RvZRTiAsSDhV8366zq2YGb3tLH5Upf74F";
const DEPOSIT = "FoQJpPyadYccjavVdTWxpxU7rUEaYhfLCPwXgkfD6Zat9QP";
const COLLATOR = "J4gB7Ux7vJHwhQrbsDuDtcJrUgdpRDcCqA8eg6nQyHrHcdh";
const ASSETS = new Set(["1984", "1337"]);

let index = 0;
const ev = (extrinsic: number | null, section: string, method: string, ...data: string[]): EventView => ({ index: index++, section, method, extrinsic, data });

/** A block as the runtime writes it: the collator reward in Initialization, then each extrinsic's events, its outcome last. */
function block(): EventView[] {
	index = 0;
	return [
		ev(null, "balances", "Transfer", "Ea6ewqmgqT3J3K6nS6xNVZmNyNJd8qbA3VspbwDeRiyLxsY", COLLATOR, "12000000"),
		// 0: timestamp.set
		ev(0, "system", "ExtrinsicSuccess", "{}"),
		// 1: balances.transferKeepAlive to the deposit
		ev(1, "balances", "Withdraw", ALICE, "157000000"),
		ev(1, "balances", "Transfer", ALICE, DEPOSIT, "1234567890"),
		ev(1, "transactionPayment", "TransactionFeePaid", ALICE, "157000000", "0"),
		ev(1, "system", "ExtrinsicSuccess", "{}"),
		// 2: assets.transfer of USDT, and of an asset the catalogue does not list
		ev(2, "assets", "Transferred", "1984", ALICE, DEPOSIT, "25000000"),
		ev(2, "assets", "Transferred", "7777", ALICE, DEPOSIT, "25000000"),
		ev(2, "system", "ExtrinsicSuccess", "{}"),
		// 3: assets.mint of USDC
		ev(3, "assets", "Issued", "1337", DEPOSIT, "5000000"),
		ev(3, "system", "ExtrinsicSuccess", "{}"),
		// 4: failed (BalanceLow): its fee charged, and a transfer event that must not count
		ev(4, "balances", "Withdraw", ALICE, "157000000"),
		ev(4, "assets", "Transferred", "1984", ALICE, DEPOSIT, "1000000000"),
		ev(4, "system", "ExtrinsicFailed", '{"module":{"index":50,"error":"0x00000000"}}', "{}"),
		// Finalization-phase mint (an XCM arrival from the message queue): not an extrinsic outcome
		ev(null, "balances", "Minted", DEPOSIT, "999"),
		ev(null, "assets", "Issued", "1984", DEPOSIT, "999"),
	];
}

describe("Polkadot events: which are payments", () => {
	it("takes native transfers and catalogue asset transfers / issues of successful extrinsics, with their event index", () => {
		const credits = blockCredits(block(), ASSETS);
		expect(credits.map(c => [c.eventIndex, c.extrinsic, c.to, c.asset, c.amount])).toEqual([
			[3, 1, DEPOSIT, "", 1_234_567_890n],
			[6, 2, DEPOSIT, "1984", 25_000_000n],
			[9, 3, DEPOSIT, "1337", 5_000_000n],
		]);
	});

	it("skips Initialization / Finalization phases: the collator reward, XCM-style mints", () => {
		const credits = blockCredits(block(), ASSETS);
		expect(credits.some(c => c.to === COLLATOR)).toBe(false);
		expect(credits.some(c => c.amount === 999n)).toBe(false);
	});

	it("skips every event of a failed extrinsic and of an extrinsic with no outcome event", () => {
		const events = block();
		expect([...successfulExtrinsics(events)].sort()).toEqual([0, 1, 2, 3]);
		expect(blockCredits(events, ASSETS).some(c => c.extrinsic === 4)).toBe(false);
		// Without its ExtrinsicSuccess (a truncated read), extrinsic 1's transfer is not taken either.
		const truncated = events.filter(e => !(e.extrinsic === 1 && e.method === "ExtrinsicSuccess"));
		expect(blockCredits(truncated, ASSETS).map(c => c.extrinsic)).toEqual([2, 3]);
	});

	it("takes only the asset ids asked for: none, when the network lists none", () => {
		expect(blockCredits(block(), new Set(["1984"])).map(c => c.asset)).toEqual(["", "1984"]);
		expect(blockCredits(block(), new Set()).map(c => c.asset)).toEqual([""]);
	});

	it("refuses fields that are not what the runtime gives: zero, negative or non-integer amounts, missing fields", () => {
		index = 0;
		const events = [
			ev(0, "balances", "Transfer", ALICE, DEPOSIT, "0"),
			ev(0, "balances", "Transfer", ALICE, DEPOSIT, "-5"),
			ev(0, "balances", "Transfer", ALICE, DEPOSIT, "1.5"),
			ev(0, "balances", "Transfer", ALICE, DEPOSIT),
			ev(0, "assets", "Transferred", "0x07c0", ALICE, DEPOSIT, "5"),
			ev(0, "balances", "Transfer", ALICE, DEPOSIT, "340282366920938463463374607431768211455"),
			ev(0, "system", "ExtrinsicSuccess", "{}"),
		];
		// u128::MAX is a valid amount, kept exact.
		expect(blockCredits(events, ASSETS).map(c => c.amount)).toEqual([340282366920938463463374607431768211455n]);
	});
});
