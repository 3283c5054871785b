/**
 * The ledger side of a credit orphaned by a reorg deeper than the required confirmations
 * (docs/withdrawals.md "Reversals"). Written by the payments side inside the DB transaction that
 * reverses (or re-credits) the checkout, under the checkout's locks and then the account's, so
 * the checkout, the intent, the outbox event and the ledger change together or not at all.
 *
 * A checkout's funds enter the ledger as one `credit` entry (refType `transaction`, what it had
 * received when the feed read it as settled). A reversal takes away what of the orphaned transfer
 * that entry holds: at most the transfer's amount, and only down to what the checkout still has
 * received (a transfer that arrived after the credit entry was never in it). References are
 * `<transactionId>:<creditId>:<generation>` under refType `transaction_credit`, the generation
 * being the credit's reversal count: each reversal, and the recredit that undoes it, is one
 * entry, unique like every entry.
 */
import { Op, type Transaction as DbTx } from "sequelize";
import type { App } from "../app";
import { uuid } from "../ids";
import { money, MoneyValue, normalizeDecimal, toAmountString } from "../money";
import type { OrganizationMode } from "../networks/mode";
import { sumAmounts } from "./ledger";
import { lockAccount, NewEntry, REVERSAL_REF_TYPE } from "./store";

/** What the ledger needs of a settled checkout (transactions.settledSince's rows, or the locked checkout). */
export interface SettledCheckout {
	transactionId: string;
	organizationId: string;
	mode: OrganizationMode;
	payerNetworkId: string;
	payerTokenId: string;
	amountReceived: string;
}

/** The checkout's credit entry: what it received, in the payer's token on the payer's network. */
export function checkoutCreditEntry(c: SettledCheckout): NewEntry {
	return { organizationId: c.organizationId, mode: c.mode, networkId: c.payerNetworkId, tokenId: c.payerTokenId, kind: "credit", amount: c.amountReceived, refType: "transaction", refId: c.transactionId };
}

export function reversalRefId(transactionId: string, creditId: number, generation: number): string {
	return `${transactionId}:${creditId}:${generation}`;
}

export interface ReversalBooking {
	/** The checkout before the reversal (amountReceived still counting the orphaned transfer). */
	checkout: SettledCheckout;
	creditId: number;
	generation: number;
	/** The orphaned transfer's amount (payer token units). */
	amount: string;
	/** The checkout's amountReceived after the reversal. */
	receivedAfter: string;
	now: Date;
}

async function create(app: App, t: DbTx, entry: NewEntry, now: Date): Promise<void> {
	await app.models.LedgerEntry.create({ id: uuid(), ...entry, createdAt: now }, { transaction: t });
}

/**
 * Books a reversal of a settled checkout's credit; answers the amount taken away ("0": none of
 * the transfer was in the ledger). The account is locked first, before any plain read of this DB
 * transaction (MySQL REPEATABLE READ: the snapshot then includes what the feed committed). A
 * checkout the feed has not credited yet gets its credit entry here, with what it had received
 * before the reversal: the feed then finds it recorded and skips it, so the order of the two
 * never matters.
 */
export async function bookReversal(app: App, t: DbTx, b: ReversalBooking): Promise<string> {
	const { models } = app;
	const c = b.checkout;
	const account = { organizationId: c.organizationId, networkId: c.payerNetworkId, tokenId: c.payerTokenId };
	await lockAccount(app, t, account);
	const credit = await models.LedgerEntry.findOne({ where: { kind: "credit", refType: "transaction", refId: c.transactionId }, transaction: t });
	if (!credit) await create(app, t, checkoutCreditEntry(c), b.now);
	const adjustments = await models.LedgerEntry.findAll({ where: { refType: REVERSAL_REF_TYPE, refId: { [Op.like]: `${c.transactionId}:%` } }, attributes: ["amount"], transaction: t });
	const inLedger = money(normalizeDecimal(credit?.amount) ?? c.amountReceived).plus(sumAmounts(adjustments.map(a => normalizeDecimal(a.amount) ?? "0")));
	const excess = inLedger.minus(money(b.receivedAfter));
	const take: MoneyValue = excess.lt(money(b.amount)) ? excess : money(b.amount);
	if (take.lte(0)) return "0";
	await create(app, t, { ...account, mode: c.mode, kind: "reversal", amount: toAmountString(take.neg()), refType: REVERSAL_REF_TYPE, refId: reversalRefId(c.transactionId, b.creditId, b.generation) }, b.now);
	return toAmountString(take);
}

/** Undoes the reversal of `generation` (the transfer was mined again): its amount back as a `recredit`; "0" when that reversal took nothing. */
export async function bookRecredit(app: App, t: DbTx, c: SettledCheckout, creditId: number, generation: number, now: Date): Promise<string> {
	const { models } = app;
	const account = { organizationId: c.organizationId, networkId: c.payerNetworkId, tokenId: c.payerTokenId };
	await lockAccount(app, t, account);
	const refId = reversalRefId(c.transactionId, creditId, generation);
	const reversal = await models.LedgerEntry.findOne({ where: { kind: "reversal", refType: REVERSAL_REF_TYPE, refId }, transaction: t });
	if (!reversal) return "0";
	const amount = money(normalizeDecimal(reversal.amount) ?? "0").neg();
	await create(app, t, { ...account, mode: c.mode, kind: "recredit", amount: toAmountString(amount), refType: REVERSAL_REF_TYPE, refId }, now);
	return toAmountString(amount);
}
