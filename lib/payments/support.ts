/**
 * What support staff see of a payment (the REPL's `intent`, `tx` and `link` commands,
 * lib/support/commands.ts): one intent, link or checkout with what happened around it, across
 * organizations. Served by internal actions without routes (`intents.support.get`,
 * `links.support.get`, `transactions.support.find`); docs/operations.md. Amounts stay decimal
 * strings; the client secret (its digest) and the merchant's metadata are never part of it.
 */
import { Op, WhereOptions } from "sequelize";
import type { Models } from "../../models";
import type { PaymentIntent } from "../../models/payment-intent.model";
import type { PaymentLink } from "../../models/payment-link.model";
import type { PaymentDetection, Transaction, TransactionCredit } from "../../models/transaction.model";

const iso = (d: Date | null | undefined): string | null => (d ? new Date(d).toISOString() : null);

/** Most checkouts, detections, credits and events listed for one payment (support reads stay bounded). */
export const SUPPORT_LIST_LIMIT = 50;

export function supportIntentView(intent: PaymentIntent) {
	return {
		id: intent.id,
		organizationId: intent.organizationId,
		mode: intent.mode,
		apiKeyId: intent.apiKeyId ?? null,
		status: intent.status,
		amount: intent.amount,
		currency: intent.currency,
		tokenId: intent.tokenId,
		networkId: intent.networkId,
		tokenAmount: intent.tokenAmount,
		amountUsd: intent.amountUsd ?? null,
		description: intent.description ?? null,
		paymentLinkId: intent.paymentLinkId,
		latestTransactionId: intent.latestTransactionId ?? null,
		cancellationReason: intent.cancellationReason ?? null,
		expiresAt: iso(intent.expiresAt),
		canceledAt: iso(intent.canceledAt),
		succeededAt: iso(intent.succeededAt),
		reversal: intent.reversal ?? null,
		createdAt: iso(intent.createdAt),
		updatedAt: iso(intent.updatedAt),
	};
}

export function supportLinkView(link: PaymentLink) {
	return {
		id: link.id,
		organizationId: link.organizationId,
		mode: link.mode,
		slug: link.slug,
		title: link.title,
		intentId: link.intentId ?? null,
		status: link.status,
		amount: link.amount,
		tokenId: link.tokenId,
		networkId: link.networkId,
		singleUse: !!link.singleUse,
		expiresAt: iso(link.expiresAt),
		createdAt: iso(link.createdAt),
		deletedAt: iso(link.deletedAt),
	};
}

export function supportTransactionView(tx: Transaction) {
	return {
		id: tx.id,
		organizationId: tx.organizationId,
		mode: tx.mode,
		paymentLinkId: tx.paymentLinkId,
		intentId: tx.intentId ?? null,
		status: tx.status,
		payerTokenId: tx.payerTokenId,
		payerNetworkId: tx.payerNetworkId,
		depositAddress: tx.depositAddress,
		amount: tx.amount,
		totalAmount: tx.totalAmount,
		amountReceived: tx.amountReceived,
		amountConfirming: tx.amountConfirming ?? "0",
		overpaidAmount: tx.overpaidAmount,
		confirmations: tx.confirmations ?? null,
		requiredConfirmations: tx.requiredConfirmations ?? null,
		amountReversed: tx.amountReversed ?? "0",
		reversedAt: iso(tx.reversedAt),
		hash: tx.hash ?? null,
		simulated: !!tx.simulated,
		expiresAt: iso(tx.expiresAt),
		completedAt: iso(tx.completedAt),
		createdAt: iso(tx.createdAt),
		updatedAt: iso(tx.updatedAt),
	};
}

/** What a detection and a credit share: the transfer's key, its amount, whether it counts. */
function transferView(r: Pick<PaymentDetection, "networkId" | "txHash" | "logIndex" | "amount" | "counted">) {
	return { networkId: r.networkId, txHash: r.txHash, logIndex: Number(r.logIndex), amount: r.amount, counted: !!r.counted };
}

function detectionView(d: PaymentDetection) {
	return { ...transferView(d), blockNumber: Number(d.blockNumber), blockHash: d.blockHash, confirmations: Number(d.confirmations), status: d.status, updatedAt: iso(d.updatedAt) };
}

function creditView(c: TransactionCredit) {
	const confirmations = c.confirmations === null || c.confirmations === undefined ? null : Number(c.confirmations);
	return { ...transferView(c), confirmations, simulated: !!c.simulated, blockHash: c.blockHash ?? null, reversedAt: iso(c.reversedAt), reversals: Number(c.reversals ?? 0), createdAt: iso(c.createdAt) };
}

/**
 * Credits a deep reorg reversed (still reversed, or credited again since), newest first, each
 * with its checkout: the REPL's `reversals` (docs/operations.md).
 */
export async function reversedCredits(models: Models, limit: number) {
	const credits = await models.TransactionCredit.findAll({ where: { reversals: { [Op.gt]: 0 } }, order: [["id", "DESC"]], limit });
	const txs = credits.length ? await models.Transaction.findAll({ where: { id: [...new Set(credits.map(c => c.transactionId))] } }) : [];
	const byId = new Map(txs.map(tx => [tx.id, tx]));
	return credits.map(c => {
		const tx = byId.get(c.transactionId);
		return { ...creditView(c), transactionId: c.transactionId, tokenId: c.tokenId, transaction: tx ? supportTransactionView(tx) : null };
	});
}

export interface SupportEvent {
	id: string;
	type: string;
	createdAt: string;
	publishedAt: string | null;
}

/**
 * The webhook events (outbox rows) of an intent written at or after `since`, oldest first. The
 * outbox has no intent column: rows of the intent's organization from then on whose payload
 * names the intent (the index on organizationId + createdAt bounds the scan).
 */
export async function intentEvents(models: Models, intent: Pick<PaymentIntent, "id" | "organizationId">, since: Date): Promise<SupportEvent[]> {
	// The payload is JSON text; the intent id (a UUID: no LIKE wildcards) narrows the rows read.
	const where: WhereOptions = { organizationId: intent.organizationId, createdAt: { [Op.gte]: since }, payload: { [Op.like]: `%${intent.id}%` } };
	const rows = await models.OutboxEvent.findAll({
		where,
		order: [["createdAt", "ASC"]],
		limit: SUPPORT_LIST_LIMIT,
	});
	return rows
		.filter(r => (r.payload as { id?: unknown }).id === intent.id)
		.map(r => ({ id: r.id, type: r.type, createdAt: iso(r.createdAt) as string, publishedAt: iso(r.publishedAt) }));
}

export async function checkoutsOf(models: Models, where: { intentId?: string; paymentLinkId?: string }) {
	const rows = await models.Transaction.findAll({ where, order: [["createdAt", "ASC"]], limit: SUPPORT_LIST_LIMIT });
	return rows.map(supportTransactionView);
}

/** A checkout with the transfers seen (detections) and counted (credits) for it, and its intent's events since it opened. */
export async function checkoutDetails(models: Models, tx: Transaction) {
	const [detections, credits, events] = await Promise.all([
		models.PaymentDetection.findAll({ where: { transactionId: tx.id }, order: [["id", "ASC"]], limit: SUPPORT_LIST_LIMIT }),
		models.TransactionCredit.findAll({ where: { transactionId: tx.id }, order: [["id", "ASC"]], limit: SUPPORT_LIST_LIMIT }),
		tx.intentId ? intentEvents(models, { id: tx.intentId, organizationId: tx.organizationId }, tx.createdAt) : Promise.resolve([]),
	]);
	return { transaction: supportTransactionView(tx), detections: detections.map(detectionView), credits: credits.map(creditView), events };
}

/**
 * Checkouts that a chain transaction paid or was seen paying: by its hash in the credits and the
 * detections, on any of `networkIds` (the unique indexes start with the network, so the look-up
 * uses them). The hash is matched as given and in lower case (EVM hashes are stored lower case).
 */
export async function checkoutIdsByHash(models: Models, networkIds: string[], hash: string): Promise<string[]> {
	const hashes = [...new Set([hash, hash.toLowerCase()])];
	const where = { networkId: networkIds, txHash: hashes };
	const [credits, detections] = await Promise.all([
		models.TransactionCredit.findAll({ where, attributes: ["transactionId"], limit: SUPPORT_LIST_LIMIT }),
		models.PaymentDetection.findAll({ where, attributes: ["transactionId"], limit: SUPPORT_LIST_LIMIT }),
	]);
	return [...new Set([...credits, ...detections].map(r => r.transactionId))];
}

export type SupportIntent = ReturnType<typeof supportIntentView>;
export type SupportLink = ReturnType<typeof supportLinkView> & { payPageUrl: string };
export type SupportTransaction = ReturnType<typeof supportTransactionView>;
export type SupportCheckout = Awaited<ReturnType<typeof checkoutDetails>>;
export type SupportReversal = Awaited<ReturnType<typeof reversedCredits>>[number];

/** `intents.support.get`. */
export interface SupportIntentDetails {
	intent: SupportIntent;
	link: SupportLink | null;
	transactions: SupportTransaction[];
	events: SupportEvent[];
}

/** `links.support.get`. */
export interface SupportLinkDetails {
	link: SupportLink;
	transactions: SupportTransaction[];
}
