/**
 * Response shapes of the payments resources: the spec's fields per operation, camelCase, ISO
 * timestamps, amounts as decimal strings. Pure: rows in, plain JSON out.
 */
import { eventStatus, IntentState } from "./intent-state";
import type { LinkStatus } from "./link-state";
import type { TransactionStatus } from "./settlement";
import type { NetworkView, TokenView } from "../networks/view";

const iso = (d: Date | string): string => (d instanceof Date ? d : new Date(d)).toISOString();
const isoOrNull = (d: Date | string | null | undefined): string | null => (d ? iso(d) : null);

/**
 * A credit of one of the intent's checkouts that a reorg deeper than the network's required
 * confirmations orphaned (docs/payments.md "Reversals"): shown on the intent while it stands.
 * `amount` is what stays reversed on that checkout, in the payer token (`currency`, lower case).
 */
export interface IntentReversal {
	transactionId: string;
	amount: string;
	currency: string;
	/** The orphaned transfer's chain transaction hash. */
	hash: string;
	reversedAt: string;
}

export interface IntentLike {
	id: string;
	amount: string;
	currency: string;
	status: IntentState;
	paymentMethodTypes: string[];
	returnUrl: string;
	metadata: Record<string, unknown>;
	/** Present (not null) only while a reversal stands: the spec's objects are unchanged otherwise. */
	reversal?: IntentReversal | null;
	createdAt: Date;
	updatedAt: Date;
}

/** `reversal` on an intent's read view and event object, only when one stands. */
function reversalField(intent: Pick<IntentLike, "reversal">): { reversal?: IntentReversal } {
	return intent.reversal ? { reversal: intent.reversal } : {};
}

export interface LinkLike {
	id: string;
	title: string;
	slug: string;
	amount: string;
	tokenId: string;
	networkId: string;
	status: LinkStatus;
	expiresAt: Date | null;
	metadata: Record<string, unknown>;
	withdrawalAddresses: Record<string, string> | null;
	createdAt: Date;
	updatedAt: Date;
}

export interface TransactionLike {
	id: string;
	paymentLinkId: string;
	amount: string;
	totalAmount: string;
	amountReceived: string;
	overpaidAmount: string;
	amountConfirming?: string | null;
	confirmations?: number | null;
	requiredConfirmations?: number | null;
	amountReversed?: string | null;
	reversedAt?: Date | null;
	status: TransactionStatus;
	payerTokenId: string;
	payerNetworkId: string;
	supportPercent: string;
	depositAddress: string;
	simulated: boolean;
	hash: string | null;
	expiresAt: Date;
	createdAt: Date;
	updatedAt: Date;
}

/** `<public pay-page URL>/pay/<slug>`. */
export function payPageUrl(publicUrl: string, slug: string): string {
	return `${publicUrl.replace(/\/+$/, "")}/pay/${encodeURIComponent(slug)}`;
}

export interface LatestTransactionView {
	id: string;
	status: TransactionStatus;
	hash: string | null;
	amount: string;
	currency?: string;
}

export function latestTransactionView(tx: TransactionLike | null | undefined, currency?: string): LatestTransactionView | null {
	if (!tx) return null;
	return { id: tx.id, status: tx.status, hash: tx.hash ?? null, amount: tx.amount, ...(currency !== undefined ? { currency } : {}) };
}

/** POST /payment_intents. */
export function intentCreatedView(intent: IntentLike, link: { id: string; slug: string }, clientSecret: string, publicUrl: string) {
	return {
		id: intent.id,
		amount: intent.amount,
		currency: intent.currency,
		status: intent.status,
		paymentMethodTypes: [...intent.paymentMethodTypes],
		clientSecret,
		returnUrl: intent.returnUrl,
		paymentLink: { id: link.id, link: payPageUrl(publicUrl, link.slug) },
		createdAt: iso(intent.createdAt),
	};
}

/** What intentView shows of an intent. */
export const INTENT_VIEW_ATTRIBUTES = ["id", "amount", "currency", "status", "paymentMethodTypes", "reversal", "createdAt", "updatedAt"] as const;

/** What GET /payment_intents/:id reads of an intent: the view's columns and what the expiry check (`fresh`) reads. */
export const INTENT_GET_ATTRIBUTES = [...INTENT_VIEW_ATTRIBUTES, "expiresAt", "latestTransactionId", "paymentLinkId"] as const;

/** GET /payment_intents/:id (and the simulate answer). */
export function intentView(intent: Pick<IntentLike, (typeof INTENT_VIEW_ATTRIBUTES)[number]>, latest: TransactionLike | null) {
	return {
		id: intent.id,
		amount: intent.amount,
		currency: intent.currency,
		status: intent.status,
		paymentMethodTypes: [...intent.paymentMethodTypes],
		latestTransaction: latestTransactionView(latest),
		...reversalField(intent),
		createdAt: iso(intent.createdAt),
		updatedAt: iso(intent.updatedAt),
	};
}

export function nextActionView(url: string) {
	return { type: "redirect_to_url" as const, redirectToUrl: { url } };
}

/** confirm (merchant and pay page). */
export function intentConfirmedView(intent: { id: string; status: IntentState }, url: string) {
	return { id: intent.id, status: intent.status, nextAction: nextActionView(url) };
}

/** cancel / complete. */
export function intentStatusView(intent: { id: string; status: IntentState; updatedAt: Date }) {
	return { id: intent.id, status: intent.status, updatedAt: iso(intent.updatedAt) };
}

/** PATCH. */
export function intentUpdatedView(intent: IntentLike) {
	return { id: intent.id, amount: intent.amount, currency: intent.currency, status: intent.status, updatedAt: iso(intent.updatedAt) };
}

/**
 * `data.object` of a webhook event: status says `completed` for succeeded; latestTransaction
 * (with the payer token's currency) in the completed event, as the spec's Events say, and in our
 * own reversed / recredited events; `reversal` while one stands.
 */
export function intentEventObject(intent: IntentLike, latest: TransactionLike | null, latestCurrency: string | undefined, withLatest: boolean) {
	return {
		id: intent.id,
		amount: intent.amount,
		currency: intent.currency,
		status: eventStatus(intent.status),
		paymentMethodTypes: [...intent.paymentMethodTypes],
		metadata: intent.metadata ?? {},
		...reversalField(intent),
		createdAt: iso(intent.createdAt),
		updatedAt: iso(intent.updatedAt),
		...(withLatest ? { latestTransaction: latestTransactionView(latest, latestCurrency) } : {}),
	};
}

/** The merchant's view of a link (create, list, PATCH). */
export function linkView(link: LinkLike) {
	return {
		id: link.id,
		title: link.title,
		slug: link.slug,
		amount: link.amount,
		tokenId: link.tokenId,
		networkId: link.networkId,
		status: link.status,
		expiresAt: isoOrNull(link.expiresAt),
		metadata: link.metadata ?? {},
		withdrawalAddresses: link.withdrawalAddresses ?? null,
		createdAt: iso(link.createdAt),
		updatedAt: iso(link.updatedAt),
	};
}

/** GET /payments/links/:slug (public): without the merchant's withdrawal addresses. */
export function linkPublicView(link: LinkLike) {
	const { withdrawalAddresses: _omit, ...rest } = linkView(link);
	return rest;
}

/** GET /pay/:slug: the public view without `updatedAt`. */
export function payDetailsView(link: LinkLike) {
	const { updatedAt: _omit, ...rest } = linkPublicView(link);
	return rest;
}

/**
 * A checkout transaction as the payer and the merchant see it. Nothing internal (organization,
 * intent, derivation index) is shown: the id is the payer's handle on their checkout.
 */
export function transactionView(tx: TransactionLike) {
	return {
		id: tx.id,
		paymentLinkId: tx.paymentLinkId,
		amount: tx.amount,
		totalAmount: tx.totalAmount,
		amountReceived: tx.amountReceived,
		overpaidAmount: tx.overpaidAmount,
		// Seen on chain and still confirming (decisions.md "On-chain payments"): n of m.
		amountConfirming: tx.amountConfirming ?? "0",
		confirmations: tx.confirmations ?? null,
		requiredConfirmations: tx.requiredConfirmations ?? null,
		// Credited, then orphaned by a deep reorg (docs/payments.md "Reversals"): no longer in amountReceived.
		amountReversed: tx.amountReversed ?? "0",
		reversedAt: isoOrNull(tx.reversedAt),
		status: tx.status,
		payerTokenId: tx.payerTokenId,
		payerNetworkId: tx.payerNetworkId,
		// The spec's type is number; a percent with at most 4 decimals is exact as a JS number.
		supportPercent: Number(tx.supportPercent),
		depositAddress: tx.depositAddress,
		hash: tx.hash ?? null,
		simulated: Boolean(tx.simulated),
		expiresAt: iso(tx.expiresAt),
		createdAt: iso(tx.createdAt),
		updatedAt: iso(tx.updatedAt),
	};
}

/** GET /payments/transactions/:id/full: the checkout with what a wallet needs of its payer token and network. */
export function transactionFullView(
	tx: TransactionLike,
	token: Pick<TokenView, "id" | "symbol" | "decimals" | "contractAddress">,
	network: Pick<NetworkView, "id" | "name" | "chainId" | "publicRpcUrls">,
) {
	return {
		...transactionView(tx),
		payerToken: { id: token.id, symbol: token.symbol, decimals: token.decimals, contractAddress: token.contractAddress },
		payerNetwork: { id: network.id, name: network.name, chainId: network.chainId, publicRpcUrls: network.publicRpcUrls },
	};
}
