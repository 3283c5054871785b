/**
 * Credits orphaned by a reorg deeper than the network's required confirmations (docs/payments.md
 * "Reversals"). The watcher reports the orphaned block's transfer as reverted
 * (`transactions.revertDetection`); for a transfer that was already credited this module undoes
 * the credit in the books, in ONE DB transaction under the payment's locks:
 * - the credit is marked reversed (kept: its key stays unique) and its detections `reverted`;
 * - the checkout's amountReceived drops by the transfer, `amountReversed` and `reversedAt` say
 *   so; its status stays (a settled checkout stays `completed`, the spec's state machine has no
 *   way back), except that a lapsed one left with nothing is `expired` again;
 * - a settled checkout's ledger gets a `reversal` entry (lib/withdrawals/reversals.ts), so the
 *   amount is no longer available;
 * - the intent carries `reversal` and payment_intent.reversed goes to the outbox; an open intent
 *   left with nothing goes back to requires_payment_method as after a shallow reorg.
 * When the transfer is mined again (same network, tx hash and index, another block), the credit
 * path finds its reversed credit and undoes the reversal (`restoreCheckout`, `recordRecredit`):
 * the ledger then equals the chain either way.
 *
 * Idempotent: a credit is reversed only while it stands and only from the block it was credited
 * from, decided under the checkout's row lock; ledger entries are unique per generation. A watcher
 * replay, a report sent twice or a second node reverse nothing more. A revert of an older block
 * that arrives after the transfer was credited from its new block changes nothing.
 */
import type { Transaction as DbTx } from "sequelize";
import { MEMPOOL_BLOCK_HASH } from "../chains/source";
import type { App } from "../app";
import { money, toAmountString } from "../money";
import type { Models } from "../../models";
import type { PaymentIntent } from "../../models/payment-intent.model";
import type { Transaction, TransactionCredit } from "../../models/transaction.model";
import { bookRecredit, bookReversal, SettledCheckout } from "../withdrawals/reversals";
import { isAccountRace } from "../withdrawals/store";
import { refreshSummary, type DetectionKey } from "./detections";
import { OPEN_STATES } from "./intent-state";
import { Effects, forUpdate, moveIntent, recordIntentEvent, withPaymentLocked } from "./store";
import { lapsedStatus } from "./settlement";

export type ReversalOutcome = "reversed" | "already" | "otherBlock" | "simulated" | "unknown";

export interface ReversalResult {
	outcome: ReversalOutcome;
	transactionId?: string;
	intentId?: string | null;
	/** The orphaned transfer's amount (token units), whether it counted for the checkout, and what the ledger gave back ("0": nothing was in it). */
	amount?: string;
	counted?: boolean;
	ledgerAmount?: string;
}

const creditKey = (k: Pick<DetectionKey, "networkId" | "txHash" | "logIndex">) => ({ networkId: k.networkId, txHash: k.txHash, logIndex: k.logIndex });

/** The credit of a transfer (any block), read without locks: which checkout to lock. */
export async function findCredit(models: Models, key: Pick<DetectionKey, "networkId" | "txHash" | "logIndex">): Promise<TransactionCredit | null> {
	return models.TransactionCredit.findOne({ where: creditKey(key), attributes: ["id", "transactionId", "tokenId"] });
}

/** Whether a revert of `blockHash` orphans this credit: only its own block (unknown for old credits: any block, never the mempool). */
function creditedFrom(credit: Pick<TransactionCredit, "blockHash">, blockHash: string): boolean {
	if (blockHash === MEMPOOL_BLOCK_HASH) return false;
	return !credit.blockHash || credit.blockHash.toLowerCase() === blockHash.toLowerCase();
}

/** The ledger's view of a checkout (lib/withdrawals/reversals.ts), a settled real one only. */
function settledCheckout(tx: Transaction, amountReceived: string): SettledCheckout | null {
	if (tx.status !== "completed" || tx.simulated) return null;
	return { transactionId: tx.id, organizationId: tx.organizationId, mode: tx.mode, payerNetworkId: tx.payerNetworkId, payerTokenId: tx.payerTokenId, amountReceived };
}

function intentReversal(tx: Transaction, hash: string, currency: string, now: Date) {
	return { transactionId: tx.id, amount: tx.amountReversed, currency, hash, reversedAt: now.toISOString() };
}

/**
 * Reverses the credit of `key` (a reverted chain transfer) when it stands and was credited from
 * that block. `currency` is the credit token's symbol, lower case (the event's latestTransaction).
 */
export async function reverseCredit(app: App, effects: Effects, key: DetectionKey, currency: string): Promise<ReversalResult> {
	const { models, clock } = app;
	if (key.blockHash === MEMPOOL_BLOCK_HASH) return { outcome: "unknown" };
	const found = await findCredit(models, key);
	if (!found) return { outcome: "unknown" };
	return withPaymentLocked(
		app,
		{ transactionId: found.transactionId },
		async (t, { intent, tx }) => {
			const now = clock.now();
			const credit = await models.TransactionCredit.findByPk(found.id, forUpdate(t));
			if (!tx || !credit) return { outcome: "unknown" };
			const base = { transactionId: tx.id, intentId: intent?.id ?? null, amount: credit.amount, counted: !!credit.counted };
			if (credit.simulated) return { ...base, outcome: "simulated" };
			if (credit.reversedAt) return { ...base, outcome: "already" };
			if (!creditedFrom(credit, key.blockHash)) return { ...base, outcome: "otherBlock" };
			const before = tx.amountReceived;
			const after = credit.counted ? money(before).minus(money(credit.amount)) : money(before);
			const receivedAfter = toAmountString(after.isNeg() ? money(0) : after);
			// The ledger first: it locks the account before this transaction reads anything without a lock.
			const settled = credit.counted ? settledCheckout(tx, before) : null;
			const generation = credit.reversals + 1;
			const ledgerAmount = settled ? await bookReversal(app, t, { checkout: settled, creditId: credit.id, generation, amount: credit.amount, receivedAfter, now }) : "0";

			credit.reversedAt = now;
			credit.reversals = generation;
			await credit.save({ transaction: t });
			await models.PaymentDetection.update(
				{ status: "reverted", updatedAt: now },
				{ where: { ...creditKey(key), blockHash: key.blockHash, status: "credited" }, transaction: t },
			);
			if (!credit.counted) return { ...base, outcome: "reversed", ledgerAmount };

			tx.amountReceived = receivedAfter;
			tx.overpaidAmount = toAmountString(money(receivedAfter).gt(money(tx.totalAmount)) ? money(receivedAfter).minus(money(tx.totalAmount)) : money(0));
			tx.amountReversed = toAmountString(money(tx.amountReversed ?? "0").plus(money(credit.amount)));
			tx.reversedAt = now;
			if (tx.status === "failed") tx.status = lapsedStatus(receivedAfter);
			// The count it kept from this credit goes with it (docs/payments.md).
			await refreshSummary(models, t, tx);
			tx.updatedAt = now;
			await tx.save({ transaction: t });

			if (intent) {
				intent.reversal = intentReversal(tx, key.txHash, currency, now);
				intent.updatedAt = now;
				await intent.save({ transaction: t });
				// As after a shallow reorg: an open intent whose checkout has nothing left asks for a payment again.
				const nothingLeft = money(receivedAfter).isZero() && money(tx.amountConfirming ?? "0").isZero();
				if (nothingLeft && OPEN_STATES.includes(intent.status) && tx.status !== "completed" && tx.status !== "confirmed") await moveIntent(models, t, effects, intent, "revert", now, tx);
				await recordIntentEvent(models, t, effects, intent, "payment_intent.reversed", now, tx, currency);
			}
			return { ...base, outcome: "reversed", ledgerAmount };
		},
		{ retryOn: isAccountRace },
	);
}

/**
 * The credit path met the reversed credit of a transfer mined again: the checkout's reversal of
 * that amount ends (on the locked checkout, before the credit path applies the amount again).
 */
export function restoreCheckout(tx: Transaction, credit: TransactionCredit): void {
	if (!credit.counted) return;
	const left = money(tx.amountReversed ?? "0").minus(money(credit.amount));
	tx.amountReversed = toAmountString(left.isNeg() ? money(0) : left);
	if (money(tx.amountReversed).isZero()) tx.reversedAt = null;
}

/**
 * After the credit path applied a re-mined transfer again (same DB transaction): the ledger gets
 * back what the reversal took (`recredit`), the intent's reversal ends when nothing of that
 * checkout stays reversed, and payment_intent.recredited goes to the outbox. Answers the amount
 * given back to the ledger.
 */
export async function recordRecredit(app: App, t: DbTx, effects: Effects, p: { tx: Transaction; intent: PaymentIntent | null; credit: TransactionCredit; currency: string; now: Date }): Promise<string> {
	const { tx, intent, credit, now } = p;
	const checkout: SettledCheckout = { transactionId: tx.id, organizationId: tx.organizationId, mode: tx.mode, payerNetworkId: tx.payerNetworkId, payerTokenId: tx.payerTokenId, amountReceived: tx.amountReceived };
	const ledgerAmount = credit.counted ? await bookRecredit(app, t, checkout, credit.id, credit.reversals, now) : "0";
	if (intent && credit.counted) {
		if (intent.reversal?.transactionId === tx.id) {
			intent.reversal = money(tx.amountReversed).isZero() ? null : intentReversal(tx, intent.reversal.hash, p.currency, new Date(intent.reversal.reversedAt));
			intent.updatedAt = now;
			await intent.save({ transaction: t });
		}
		await recordIntentEvent(app.models, t, effects, intent, "payment_intent.recredited", now, tx, p.currency);
	}
	return ledgerAmount;
}
