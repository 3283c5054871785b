/**
 * The TON parser (lib/chains/ton/transactions.ts) on real toncenter v3 transactions copied from the
 * published docs (test/fixtures/toncenter-v3/README.md), and on variants of them, each changing
 * one thing a payment depends on.
 */
import { Address, beginCell } from "@ton/core";
import fixture from "../../../fixtures/toncenter-v3/traces-cookbook.json";
import { candidates, hashHex, internalTransferAmount, notificationAmount, OP_INTERNAL_TRANSFER, OP_TRANSFER_NOTIFICATION, rawKey, rejection, type V3Transaction } from "../../../../lib/chains/ton/transactions";

const trace = fixture.traces[0];
const txs = Object.values(trace.transactions) as unknown as V3Transaction[];
const byHash = (h: string) => structuredClone(trace.transactions[h as keyof typeof trace.transactions]) as unknown as V3Transaction;

// A plain transfer (comment "0x00000000") of 0.5438 TON from a wallet to 0:852443F8...: real, succeeded.
const PLAIN = "bNFFOB9Y5fZuu1AEURYpe6jogFxsdhGG4Vh+/L5rC90=";
const PLAIN_TO = "0:852443f8599fe6a5da34fe43049ac4e0beb3071bb2bfb56635ea9421287c283a";
// The trace's root: an external-in message to a wallet (no internal inbound message).
const EXTERNAL = "Vy11B+AiGGrDBcGx3UiUFUJozUQ3U2yHvaATSrS03og=";
const EXTERNAL_ACCOUNT = "0:9b14407f88ab1a73c5d09e26f98b7db9664f11d5251094c129a71c7cfa2b27d1";
// A transfer without a body (opcode null) of 0.0065256 TON to 0:7D877313...
const NO_BODY = "iN9p23eXWvYDkkQv2qUIa2vsoRzk57/4xD2Ny4QYCqA=";
const NO_BODY_TO = "0:7d877313eff8f86333e143b5ef46331992057cbd044595c0c9bcc3f40c255e19";

const only = (set: string[]) => (raw: string) => set.includes(raw);

describe("toncenter v3 transactions (published examples)", () => {
	it("reads the documented answer: every transaction is an accepted ordinary one of masterchain block 52372896", () => {
		expect(txs).toHaveLength(6);
		for (const tx of txs) expect(tx.mc_block_seqno).toBe(52372896);
		expect(txs.filter(tx => rejection(tx) === null)).toHaveLength(5);
		expect(rejection(byHash(EXTERNAL))).toBe("no internal inbound message");
	});

	it("finds the TON transfers to the watched accounts, with exact amounts, hex hashes and raw accounts", () => {
		const found = candidates(txs, only([PLAIN_TO, NO_BODY_TO, EXTERNAL_ACCOUNT]), true);
		expect(found).toHaveLength(2);
		expect(found).toEqual(
			expect.arrayContaining([
				{ kind: "ton", txHash: hashHex(PLAIN), lt: "61949829000012", mcSeqno: 52372896, account: PLAIN_TO, amount: 543800000n },
				{ kind: "ton", txHash: hashHex(NO_BODY), lt: byHash(NO_BODY).lt, mcSeqno: 52372896, account: NO_BODY_TO, amount: 6525600n },
			]),
		);
		expect(hashHex(PLAIN)).toBe(Buffer.from(PLAIN, "base64").toString("hex"));
		expect(hashHex(PLAIN)).toMatch(/^[0-9a-f]{64}$/);
	});

	it("matches nothing for an account that is not watched", () => {
		expect(candidates(txs, only(["0:" + "00".repeat(32)]), true)).toEqual([]);
	});

	it("lower-cases raw addresses and refuses anything else as a key", () => {
		expect(rawKey("0:852443F8599FE6A5DA34FE43049AC4E0BEB3071BB2BFB56635EA9421287C283A")).toBe(PLAIN_TO);
		expect(rawKey(null)).toBeNull();
		expect(rawKey("EQDtFpEwcFAEcRe5mLVh2N6C0x-_hJEM7W61_JLnSF74p4q2")).toBeNull();
		expect(Address.parseRaw(PLAIN_TO).toRawString()).toBe(PLAIN_TO);
		expect(rawKey(" 0:852443F8599FE6A5DA34FE43049AC4E0BEB3071BB2BFB56635EA9421287C283A\n")).toBe(PLAIN_TO);
		expect(rawKey("-1:" + "AB".repeat(32))).toBe("-1:" + "ab".repeat(32));
		for (const bad of ["1:" + "ab".repeat(32), "0:" + "ab".repeat(31), "0:" + "ab".repeat(32) + "a", "0:" + "gg".repeat(32), "", "0:"]) expect(rawKey(bad)).toBeNull();
	});

	it("reads a destination spelled in another case as the same account, and one to another account as no payment", () => {
		const tx = txs.find(t => rawKey(t.account) === PLAIN_TO)!;
		const lower = { ...tx, in_msg: { ...tx.in_msg!, destination: tx.in_msg!.destination!.toLowerCase() } };
		expect(candidates([lower], only([PLAIN_TO]), false)).toHaveLength(1);
		const elsewhere = { ...tx, in_msg: { ...tx.in_msg!, destination: "0:" + "00".repeat(32) } };
		expect(candidates([elsewhere], only([PLAIN_TO]), false)).toEqual([]);
	});
});

describe("what is not a payment (variants of the documented transfer)", () => {
	const variant = (change: (tx: V3Transaction) => void) => {
		const tx = byHash(PLAIN);
		change(tx);
		return tx;
	};
	const found = (tx: V3Transaction) => candidates([tx], only([PLAIN_TO]), true);

	it("a bounced message (a refund of something the deposit sent) is not a payment", () => {
		const tx = variant(t => (t.in_msg!.bounced = true));
		expect(rejection(tx)).toBe("bounced message");
		expect(found(tx)).toEqual([]);
	});

	it("an aborted transaction whose compute phase failed is not a payment", () => {
		const tx = variant(t => {
			t.description.aborted = true;
			t.description.compute_ph = { skipped: false, success: false, exit_code: 33 };
		});
		expect(rejection(tx)).toBe("aborted");
		expect(found(tx)).toEqual([]);
	});

	it("a failed action phase is not a payment", () => {
		const tx = variant(t => (t.description.action = { success: false, result_code: 37 }));
		expect(rejection(tx)).toBe("action phase failed");
		expect(found(tx)).toEqual([]);
	});

	it("a value sent back by a bounce phase is not a payment", () => {
		const tx = variant(t => {
			t.description.aborted = true;
			t.description.compute_ph = { skipped: true, reason: "no_state" };
			t.description.bounce = { type: "ok" };
		});
		expect(rejection(tx)).toBe("bounce phase");
		expect(found(tx)).toEqual([]);
	});

	it("a message to another account than the transaction's is not a payment to it", () => {
		expect(found(variant(t => (t.in_msg!.destination = NO_BODY_TO)))).toEqual([]);
	});

	it("a non-bounceable transfer to an undeployed deposit (compute skipped, no_state, aborted) IS a payment: its value stays", () => {
		const tx = variant(t => {
			t.orig_status = "uninit";
			t.end_status = "uninit";
			t.description.aborted = true;
			t.description.compute_ph = { skipped: true, reason: "no_state" };
			delete t.description.action;
		});
		expect(rejection(tx)).toBeNull();
		expect(found(tx)).toEqual([expect.objectContaining({ kind: "ton", amount: 543800000n })]);
	});

	it("a compute phase skipped for another reason (no gas) is not a payment", () => {
		expect(rejection(variant(t => (t.description.compute_ph = { skipped: true, reason: "no_gas" })))).toBe("compute phase skipped (no_gas)");
	});
});

describe("jetton transfer notifications", () => {
	const jettonWallet = "0:" + "ab".repeat(32);
	const body = (amount: bigint, op = OP_TRANSFER_NOTIFICATION) =>
		beginCell().storeUint(op, 32).storeUint(7n, 64).storeCoins(amount).storeAddress(Address.parseRaw("0:" + "cd".repeat(32))).storeBit(false).endCell().toBoc().toString("base64");
	const notification = (amount: bigint, op = OP_TRANSFER_NOTIFICATION) => {
		const tx = byHash(PLAIN);
		tx.in_msg!.source = jettonWallet.toUpperCase(); // v3 prints raw addresses in upper case
		tx.in_msg!.opcode = "0x" + op.toString(16).padStart(8, "0");
		tx.in_msg!.value = "1";
		tx.in_msg!.message_content = { hash: null, body: body(amount, op), decoded: null };
		return tx;
	};

	it("decodes the amount from the body as a bigint, beyond 2^53", () => {
		expect(notificationAmount(body(12_345_678_901_234_567_890n))).toBe(12_345_678_901_234_567_890n);
		expect(notificationAmount(body(5n, 0x0f8a7ea5))).toBeNull();
		expect(notificationAmount("not a boc")).toBeNull();
	});

	it("proposes a notification naming its source wallet, with its TON value aside", () => {
		expect(candidates([notification(2_500_000n)], only([PLAIN_TO]), true)).toEqual([
			{ kind: "notification", txHash: hashHex(PLAIN), lt: "61949829000012", mcSeqno: 52372896, account: PLAIN_TO, jettonWallet, amount: 2_500_000n, tonValue: 1n },
		]);
	});

	it("without watched jettons a notification is only the TON it carried", () => {
		expect(candidates([notification(2_500_000n)], only([PLAIN_TO]), false)).toEqual([expect.objectContaining({ kind: "ton", amount: 1n })]);
	});

	it("a bounced notification is nothing", () => {
		const tx = notification(2_500_000n);
		tx.in_msg!.bounced = true;
		expect(candidates([tx], only([PLAIN_TO]), true)).toEqual([]);
	});

	// The same documented transaction turned into an internal_transfer received by a jetton wallet.
	const WALLET = PLAIN_TO;
	const internalTransfer = (amount: bigint) => {
		const tx = notification(amount, OP_INTERNAL_TRANSFER);
		tx.in_msg!.source = ("0:" + "ef".repeat(32)).toUpperCase(); // the sender's jetton wallet
		return tx;
	};
	const wallets = (list: string[]) => (raw: string) => list.includes(raw);

	it("decodes an internal_transfer's amount", () => {
		expect(internalTransferAmount(body(12_345_678_901_234_567_890n, OP_INTERNAL_TRANSFER))).toBe(12_345_678_901_234_567_890n);
		expect(internalTransferAmount(body(5n))).toBeNull();
	});

	it("proposes an internal_transfer a watched jetton wallet accepted as the jetton payment, keyed by the wallet's transaction", () => {
		expect(candidates([internalTransfer(7_000_000n)], only([]), true, wallets([WALLET]))).toEqual([
			{ kind: "jetton", txHash: hashHex(PLAIN), lt: "61949829000012", mcSeqno: 52372896, account: WALLET, amount: 7_000_000n },
		]);
		// A wallet nobody watches, or another op at a watched wallet (a transfer its owner sent, excesses): nothing.
		expect(candidates([internalTransfer(7_000_000n)], only([]), true, wallets([]))).toEqual([]);
		expect(candidates([notification(7_000_000n, 0x0f8a7ea5)], only([]), true, wallets([WALLET]))).toEqual([]);
		const plain = byHash(PLAIN);
		expect(candidates([plain], only([]), true, wallets([WALLET]))).toEqual([]);
	});

	it("an internal_transfer the wallet did not keep is nothing: bounced, aborted, failed compute or action phase, bounce phase, or left to an undeployed account", () => {
		const variants: Array<[string, (tx: V3Transaction) => void]> = [
			["bounced", tx => void (tx.in_msg!.bounced = true)],
			["aborted", tx => void (tx.description.aborted = true)],
			["compute failed", tx => void (tx.description.compute_ph = { skipped: false, success: false, exit_code: 707 })],
			["action failed", tx => void (tx.description.action = { success: false, result_code: 37 })],
			["bounce phase", tx => void (tx.description.bounce = { type: "ok" })],
			["no state", tx => {
				tx.description.aborted = true;
				tx.description.compute_ph = { skipped: true, reason: "no_state" };
			}],
		];
		for (const [name, change] of variants) {
			const tx = internalTransfer(7_000_000n);
			change(tx);
			expect([name, candidates([tx], only([]), true, wallets([WALLET]))]).toEqual([name, []]);
		}
	});
});
