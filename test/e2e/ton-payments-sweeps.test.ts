/**
 * TON end to end on one node: the payments services (checkouts opened over the REST gateway as a
 * merchant's server and pay page use them), webhooks, watcher-ton, withdrawals and sweeper-ton on
 * `ton`, against the TON test node (test/helpers/ton-node.ts: @ton/sandbox runs the real wallet
 * and jetton contracts behind our toncenter v3 facade; USDT is the reference jetton of
 * @ton-community/assets-sdk placed at the catalogue's USDT master, not the exact USDT-on-TON code).
 * A payer wallet pays a TON checkout and three USDT checkouts; each is credited once its
 * masterchain block is sealed, with signed webhooks; then the merchant saves a TON withdrawal
 * address and the sweeper sweeps: the TON deposit whole (destroyed, at 0), the USDT deposits
 * after ONE batched top-up from the sweeper wallet. The merchant's ledger equals what the emulator
 * holds at the deposits and at the merchant's address, and the sweeper wallet spent exactly the
 * top-up and the fee recorded for it, less the excesses the jetton wallets returned.
 */
import { Address, toNano } from "@ton/core";
import { money, fromBaseUnits } from "../../lib/money";
import { signedOf } from "../../lib/chains/ton/sweep-runner";
import { JETTON_SWEEP_TON, OP_JETTON_EXCESSES } from "../../lib/chains/ton/sweep";
import { verifyWebhookSignature } from "../../lib/webhooks/signature";
import { rawAddress, type TxRecord } from "../helpers/ton-facade";
import { startTonSweeperChain, tonLedger, tonMerchant, TON_NET, TON_TOKEN, USDT_TOKEN, type TonMerchant, type TonSweeperChain } from "../helpers/ton-sweeper-node";
import { until } from "../helpers/until";
import type { TestNode } from "../helpers/harness";
import { startReceiver, type WebhookReceiver } from "../helpers/webhook-receiver";
import { openCheckout, startPaymentsNode, PAYMENTS_SERVICES, type OpenedCheckout } from "./payments.helpers";

const nanotons = (tx: TxRecord, side: "before" | "after") => BigInt((tx.json[`account_state_${side}`] as { balance: string }).balance);
const inValue = (tx: TxRecord) => BigInt((tx.json.in_msg as { value: string | null } | null)?.value ?? "0");

describe("TON end to end: checkouts paid, credited with webhooks, swept; the ledger equals the emulator", () => {
	let chain: TonSweeperChain;
	let node: TestNode;
	let receiver: WebhookReceiver;
	let merchant: TonMerchant & { withdrawTo(): Promise<void> };

	beforeAll(async () => {
		chain = await startTonSweeperChain();
		receiver = await startReceiver();
		node = await startPaymentsNode({ services: [...PAYMENTS_SERVICES, "webhooks", "watcher-ton", "withdrawals", "sweeper-ton"], env: chain.env({ WEBHOOK_POLL_MS: "50", SWEEP_BATCH_SIZE: "3", SWEEP_MAX_AGE_MINUTES: "60" }) });
		merchant = await tonMerchant(node, chain.ton, receiver.url);
	}, 180_000);

	afterAll(async () => {
		await node?.stop();
		await receiver?.close();
		chain?.ton.autoSeal(null);
		await chain?.ton.stop();
	});

	const getTx = async (id: string) => (await node.http("GET", `/payments/transactions/${id}`)).body;
	const completed = (c: OpenedCheckout) => until(`checkout ${c.txId} completed`, async () => (await getTx(c.txId)).status === "completed", 60_000);
	const ledger = (tokenId: string) => tonLedger(node, merchant.user.live.id, tokenId);
	const sweepsOf = async (depositAddress: string) => {
		const items = await node.app.models.SweepItem.findAll({ where: { depositAddress } });
		return node.app.models.Sweep.findAll({ where: { id: items.map(i => i.sweepId) } });
	};
	const txsOf = (address: Address) => chain.ton.facade.sealedTransactions().filter(t => t.account === rawAddress(address));

	it("credits TON and USDT at finality with signed webhooks, then sweeps them; ledger, merchant address and sweeper wallet agree with the emulator", async () => {
		const { ton, payer, usdt, sweeper } = chain;
		// Paid: one TON checkout, three USDT checkouts.
		const tonCheckout = await openCheckout(node, merchant.key, { amount: "1.5", currency: "ton", tokenId: TON_TOKEN, networkId: TON_NET });
		expect(tonCheckout.address).toMatch(/^UQ/); // non-bounceable: the deposit is not deployed
		await ton.pay(payer, tonCheckout.address, toNano("1.5"));
		const amounts = [5_000_000n, 7_250_000n, 20_000_000n];
		const usdtCheckouts: OpenedCheckout[] = [];
		for (const units of amounts) {
			const c = await openCheckout(node, merchant.key, { amount: fromBaseUnits(units, 6), currency: "usdt", tokenId: USDT_TOKEN, networkId: TON_NET });
			await ton.jettonTransfer(payer, usdt, Address.parse(c.address), units);
			usdtCheckouts.push(c);
		}
		const checkouts = [tonCheckout, ...usdtCheckouts];
		for (const c of checkouts) await completed(c);

		// Signed webhooks for each, verifiable with the key's secret.
		for (const c of checkouts) {
			const hook = await until(`webhook of ${c.intentId}`, async () => receiver.received.find(h => h.json?.data?.object?.id === c.intentId && h.json.type === "payment_intent.completed"), 60_000);
			expect(verifyWebhookSignature(hook.rawBody, hook.headers["x-webhook-signature"] as string, merchant.key.secret)).toBe(true);
		}
		const creditsBefore = await node.app.models.TransactionCredit.count({ where: { transactionId: checkouts.map(c => c.txId) } });
		expect(creditsBefore).toBe(4); // the USDT payers' forward TON is no payment

		// Credited, not swept (no withdrawal address yet): the ledger is what the deposits hold.
		const tonDeposit = Address.parse(tonCheckout.address);
		const usdtDeposits = usdtCheckouts.map(c => Address.parse(c.address));
		expect(ton.balance(tonDeposit)).toBe(toNano("1.5"));
		expect((await ledger(TON_TOKEN)).eq(money("1.5"))).toBe(true);
		for (const [n, d] of usdtDeposits.entries()) expect(await ton.jettonBalance(usdt, d)).toBe(amounts[n]);
		expect((await ledger(USDT_TOKEN)).eq(money("32.25"))).toBe(true);
		expect(await node.app.models.Sweep.count()).toBe(0);

		// The merchant saves a TON withdrawal address: the sweeper sweeps.
		const sweeperBefore = ton.balance(sweeper.address);
		await merchant.withdrawTo();
		await until(
			"every deposit swept and confirmed",
			async () => (await Promise.all(checkouts.map(c => sweepsOf(c.address)))).every(list => list.some(s => s.status === "confirmed" && s.kind !== "topup")),
			120_000,
		);
		// A moment for anything that would be swept or credited twice.
		await new Promise(r => setTimeout(r, 2000));

		// TON: one sweep of the whole deposit, which is destroyed.
		const [tonSweep] = await sweepsOf(tonCheckout.address);
		expect(await sweepsOf(tonCheckout.address)).toHaveLength(1);
		expect(tonSweep).toMatchObject({ kind: "native", status: "confirmed" });
		expect(ton.status(tonDeposit)).toBe("nonexist");
		expect(ton.balance(tonDeposit)).toBe(0n);
		const tonEntries = await node.app.models.LedgerEntry.findAll({ where: { organizationId: merchant.user.live.id, networkId: TON_NET, tokenId: TON_TOKEN } });
		const sweptTon = money(tonEntries.find(e => e.kind === "sweep")!.amount).neg();
		const tonFee = money(tonEntries.find(e => e.kind === "fee")!.amount).neg();
		expect(tonEntries.map(e => e.kind).sort()).toEqual(["credit", "fee", "sweep"]);
		expect(tonFee.eq(money(fromBaseUnits(BigInt(tonSweep.feePaid!), 9)))).toBe(true);
		expect(sweptTon.plus(tonFee).eq(money("1.5"))).toBe(true);
		// The merchant's address: one transaction, receiving exactly the sweep entry; it holds that less its own storage fee.
		const [received] = txsOf(merchant.wallet.address);
		expect(txsOf(merchant.wallet.address)).toHaveLength(1);
		expect(money(fromBaseUnits(inValue(received), 9)).eq(sweptTon)).toBe(true);
		expect(ton.balance(merchant.wallet.address)).toBe(inValue(received) - BigInt(received.json.total_fees as string));
		expect((await ledger(TON_TOKEN)).isZero()).toBe(true);

		// USDT: ONE batched top-up for the three deposits, then one jetton sweep each.
		const topups = await node.app.models.Sweep.findAll({ where: { networkId: TON_NET, kind: "topup" } });
		expect(topups).toHaveLength(1);
		expect(topups[0].status).toBe("confirmed");
		expect(await node.app.models.SweepItem.count({ where: { sweepId: topups[0].id } })).toBe(3);
		expect(BigInt(signedOf(topups[0])!.total!)).toBe(3n * JETTON_SWEEP_TON);
		for (const [n, c] of usdtCheckouts.entries()) {
			const own = (await sweepsOf(c.address)).filter(s => s.kind === "token");
			expect(own.map(s => s.status)).toEqual(["confirmed"]);
			expect(signedOf(own[0])!.jettonAmount).toBe(amounts[n].toString());
			expect(await ton.jettonBalance(usdt, usdtDeposits[n])).toBe(0n);
		}
		const usdtEntries = await node.app.models.LedgerEntry.findAll({ where: { organizationId: merchant.user.live.id, networkId: TON_NET, tokenId: USDT_TOKEN } });
		// No fee entry for the merchant: the TON the transfers carried was the sweeper's.
		expect(usdtEntries.map(e => e.kind).sort()).toEqual(["credit", "credit", "credit", "sweep", "sweep", "sweep"]);
		const sweptUsdt = usdtEntries.filter(e => e.kind === "sweep").reduce((sum, e) => sum.plus(money(e.amount).neg()), money(0));
		expect(money(fromBaseUnits(await ton.jettonBalance(usdt, merchant.wallet.address), 6)).eq(sweptUsdt)).toBe(true);
		expect(sweptUsdt.eq(money("32.25"))).toBe(true);
		expect((await ledger(USDT_TOKEN)).isZero()).toBe(true);

		// The sweeper wallet: its top-up message (the total and the fee recorded) and nothing else
		// left it; what came back is the three jetton transfers' excesses.
		const sweeperTxs = txsOf(sweeper.address);
		const outgoing = sweeperTxs.filter(t => (t.json.in_msg as { source: string | null }).source === null);
		const excesses = sweeperTxs.filter(t => t.msgs.some(m => m.direction === "in" && m.opcode === OP_JETTON_EXCESSES));
		expect(outgoing).toHaveLength(1);
		expect(excesses).toHaveLength(3);
		expect(sweeperTxs).toHaveLength(4);
		expect(nanotons(outgoing[0], "before") - nanotons(outgoing[0], "after")).toBe(BigInt(signedOf(topups[0])!.total!) + BigInt(topups[0].feePaid!));
		const returned = excesses.reduce((sum, t) => sum + nanotons(t, "after") - nanotons(t, "before"), 0n);
		expect(sweeperBefore - ton.balance(sweeper.address)).toBe(BigInt(signedOf(topups[0])!.total!) + BigInt(topups[0].feePaid!) - returned);
		console.log(`sweep-ton e2e: the sweeper wallet spent ${sweeperBefore - ton.balance(sweeper.address)} nanotons for 3 jetton deposits (top-up ${signedOf(topups[0])!.total}, its fee ${topups[0].feePaid}, excesses back ${returned})`);

		// Nothing counted from the sweeps' own messages. The top-ups are plain TON arriving at the USDT
		// deposits: recorded on their checkouts as TON (not the checkout's token: not counted, not in
		// the ledger, as any TON sent to a USDT checkout), one row each.
		const credits = await node.app.models.TransactionCredit.findAll({ where: { transactionId: checkouts.map(c => c.txId) } });
		expect(credits.filter(r => r.counted)).toHaveLength(creditsBefore);
		const uncounted = credits.filter(r => !r.counted);
		expect(uncounted.map(r => [r.tokenId, r.amount]).sort()).toEqual(usdtCheckouts.map(() => [TON_TOKEN, fromBaseUnits(JETTON_SWEEP_TON, 9)]));
		expect(new Set(uncounted.map(r => r.transactionId))).toEqual(new Set(usdtCheckouts.map(c => c.txId)));
		expect(await node.app.models.Sweep.count()).toBe(5);
	}, 300_000);
});
