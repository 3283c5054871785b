/**
 * Which events of an Asset Hub block are payments (lib/chains/polkadot/events.ts). The examples
 * are the shapes the test node's runtime gives (test/helpers/polkadot-node.test.ts): fields as
 * strings, accounts in SS58 of prefix 2, phases ApplyExtrinsic(i) or Initialization (null).
 */
import { blockCredits, successfulExtrinsics, xcmMessageEvents, type EventView } from "../../../../lib/chains/polkadot/events";

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

/** The account the pot / fee receiver events name on the test runtime (the collators' pot). */
const POT = "F3opxRUwkBj1LqjZ7DyiHCRh9Z4zVPLaVjoxfD5ddbip8mt";
const OTHER = "F7Y7Qojf2LNLCD6gDzFzoWn4Y7zG3HN1s9GPThMkGd1KptQ";
const WEIGHT = '{"refTime":163503000,"proofSize":0}';
/** The relay chain's account on Asset Hub (ParentIsPreset: "Parent" then zeros), prefix 2. */
const RELAY = "EPiJ96P2JMW2hzcy27zdfsrQ5SWnDZELiKKzbFjYiKpdR9y";

describe("Polkadot events: XCM arrivals", () => {
	// Events in the shapes the test runtime (Kusama Asset Hub, DMP queue) wrote for downward
	// messages injected with chopsticks' dev_newBlock `dmp` (test/lib/chains/polkadot/source.test.ts
	// runs them): a teleport, a USDT withdraw-and-deposit given the Incomplete outcome the Trap run
	// had, and a deposit address signing a batch.
	function dmpBlock(): EventView[] {
		index = 0;
		return [
			ev(0, "system", "ExtrinsicSuccess", "{}"),
			// 1: parachainSystem.setValidationData executes the downward messages.
			ev(1, "parachainSystem", "DownwardMessagesReceived", "2"),
			// A teleport: ReceiveTeleportedAsset, BuyExecution, DepositAsset.
			ev(1, "balances", "Deposit", DEPOSIT, "999995619384"),
			ev(1, "system", "NewAccount", DEPOSIT),
			ev(1, "balances", "Endowed", DEPOSIT, "999995619384"),
			ev(1, "dmpQueue", "ExecutedDownward", "0xf712", "0xf712", `{"complete":${WEIGHT}}`),
			// USDT withdrawn from the relay chain's account and deposited: Assets.Issued.
			ev(1, "balances", "Withdraw", RELAY, "1000000000000"),
			ev(1, "assets", "Burned", "1984", RELAY, "20000000"),
			ev(1, "assets", "Issued", "1984", DEPOSIT, "20000000"),
			ev(1, "assets", "Issued", "7777", DEPOSIT, "20000000"),
			ev(1, "dmpQueue", "ExecutedDownward", "0x97c5", "0x97c5", `{"incomplete":[${WEIGHT},{"trap":7}]}`),
			ev(1, "parachainSystem", "DownwardMessagesProcessed", WEIGHT, "0xb1c3"),
			ev(1, "system", "ExtrinsicSuccess", '{"weight":{"refTime":125000000,"proofSize":0},"class":"Mandatory","paysFee":"No"}'),
			// 2: a deposit address signs (the sweeper does): fee withdrawn, paid to the pot, the unused part refunded to it.
			ev(2, "balances", "Withdraw", DEPOSIT, "172108914"),
			ev(2, "utility", "BatchInterrupted", "0", "{}"),
			ev(2, "balances", "Deposit", DEPOSIT, "81000000"),
			ev(2, "balances", "Deposit", POT, "91108914"),
			ev(2, "transactionPayment", "TransactionFeePaid", DEPOSIT, "91108914", "0"),
			ev(2, "system", "ExtrinsicSuccess", '{"weight":{"refTime":287734000,"proofSize":3593},"class":"Normal","paysFee":"Yes"}'),
		];
	}

	it("credits Balances.Deposit and Assets.Issued of each downward message's execution, once each, whatever the outcome", () => {
		const events = dmpBlock();
		expect([...xcmMessageEvents(events)].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 6, 7, 8, 9]);
		expect(blockCredits(events, ASSETS).map(c => [c.eventIndex, c.extrinsic, c.xcm, c.to, c.asset, c.amount])).toEqual([
			[2, 1, true, DEPOSIT, "", 999_995_619_384n],
			// The second message ended Incomplete (Trap) after its DepositAsset: the deposit is in the block, so in the account.
			[8, 1, true, DEPOSIT, "1984", 20_000_000n],
		]);
	});

	it("never credits Balances.Deposit in a signed extrinsic's phase: the fee refund to the signer, the fee to the pot", () => {
		const credits = blockCredits(dmpBlock(), ASSETS);
		expect(credits.some(c => c.extrinsic === 2)).toBe(false);
		expect(credits.some(c => c.to === POT)).toBe(false);
	});

	it("never credits Balances.Deposit / Minted outside a message's execution: after its outcome, or with no outcome event in the phase", () => {
		index = 0;
		const events = [
			ev(null, "balances", "Minted", DEPOSIT, "5"),
			ev(0, "system", "ExtrinsicSuccess", "{}"),
			// 1: someone runs an overweight message by extrinsic: its deposit before the outcome, the signer's refund after.
			ev(1, "balances", "Withdraw", OTHER, "100"),
			ev(1, "balances", "Minted", DEPOSIT, "7000"),
			ev(1, "messageQueue", "Processed", "0x01", '{"parent":null}', WEIGHT, "true"),
			ev(1, "balances", "Deposit", OTHER, "40"),
			ev(1, "balances", "Deposit", DEPOSIT, "40"),
			ev(1, "system", "ExtrinsicSuccess", "{}"),
			ev(null, "balances", "Deposit", DEPOSIT, "6"),
		];
		expect(blockCredits(events, ASSETS).map(c => [c.eventIndex, c.amount])).toEqual([[3, 7000n]]);
	});

	it("credits a sibling parachain's (HRMP) arrivals executed by the XCMP queue in the inherent, after the downward ones, whatever the outcome", () => {
		index = 0;
		// XcmpQueue.Success { message_hash, message_id, weight } / Fail { message_hash, message_id, error, weight }
		// after each message's events (cumulus' xcmp-queue of the test runtime, field names from its metadata).
		const events = [
			ev(0, "system", "ExtrinsicSuccess", "{}"),
			ev(1, "parachainSystem", "DownwardMessagesReceived", "1"),
			ev(1, "balances", "Deposit", DEPOSIT, "100"),
			ev(1, "dmpQueue", "ExecutedDownward", "0x01", "0x01", `{"complete":${WEIGHT}}`),
			ev(1, "parachainSystem", "DownwardMessagesProcessed", WEIGHT, "0xb1c3"),
			// Native from the sibling's sovereign account (WithdrawAsset, BuyExecution, DepositAsset).
			ev(1, "balances", "Withdraw", OTHER, "1000000000000"),
			ev(1, "balances", "Deposit", DEPOSIT, "999990000000"),
			ev(1, "balances", "Deposit", POT, "10000000"),
			ev(1, "xcmpQueue", "Success", "0x02", "0x02", WEIGHT),
			// USDT from its account, then an error after DepositAsset: Incomplete, the deposit stays.
			ev(1, "assets", "Burned", "1984", OTHER, "5000000"),
			ev(1, "assets", "Issued", "1984", DEPOSIT, "5000000"),
			ev(1, "xcmpQueue", "Fail", "0x03", "0x03", '{"trap":7}', WEIGHT),
			ev(1, "system", "ExtrinsicSuccess", '{"weight":{"refTime":125000000,"proofSize":0},"class":"Mandatory","paysFee":"No"}'),
		];
		const credits = blockCredits(events, ASSETS);
		expect(credits.filter(c => c.to === DEPOSIT).map(c => [c.eventIndex, c.extrinsic, c.xcm, c.asset, c.amount])).toEqual([
			[2, 1, true, "", 100n],
			[6, 1, true, "", 999_990_000_000n],
			[10, 1, true, "1984", 5_000_000n],
		]);
	});

	it("credits the message queue's arrivals in Initialization / Finalization (the live runtimes' shape), not the hooks' other events", () => {
		index = 0;
		// MessageQueue.Processed { id, origin, weight_used, success } after each message's events (polkadot-sdk's pallet-message-queue).
		const events = [
			ev(null, "balances", "Transfer", POT, COLLATOR, "12000000"),
			ev(null, "balances", "Minted", DEPOSIT, "3000000000"),
			ev(null, "balances", "Minted", POT, "100"),
			ev(null, "messageQueue", "Processed", "0xaa", '{"parent":null}', WEIGHT, "true"),
			ev(null, "balances", "Deposit", DEPOSIT, "25"),
			ev(null, "messageQueue", "Processed", "0xbb", '{"sibling":1000}', WEIGHT, "false"),
			ev(null, "balances", "Minted", DEPOSIT, "99"),
			ev(0, "system", "ExtrinsicSuccess", "{}"),
			ev(1, "system", "ExtrinsicSuccess", "{}"),
			ev(null, "assets", "Issued", "1984", DEPOSIT, "4000000"),
			ev(null, "messageQueue", "Processed", "0xcc", '{"sibling":2000}', WEIGHT, "true"),
		];
		const credits = blockCredits(events, ASSETS).filter(c => c.to === DEPOSIT);
		expect(credits.map(c => [c.eventIndex, c.extrinsic, c.xcm, c.asset, c.amount])).toEqual([
			[1, null, true, "", 3_000_000_000n],
			[4, null, true, "", 25n],
			[9, null, true, "1984", 4_000_000n],
		]);
	});
});
