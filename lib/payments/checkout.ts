/**
 * Asks the networks and pricing services what a checkout needs: the payer's token and network
 * (checked against the organization's mode), fresh USD prices, and the quote
 * (lib/payments/quote.ts). Never inside a DB transaction: these calls may query the database on
 * their own connection (SQLite has one).
 */
import type { Context } from "moleculer";
import { badRequest } from "../errors";
import type { NetworkView, TokenView, TokenWithNetworkView } from "../networks/view";
import type { OrganizationMode } from "../networks/mode";
import { AmountTooLargeError } from "../pricing/fraction";
import { feeModelAdapter, BridgeFeeModel } from "./bridge";
import { computeQuote, PriceUnavailableError, QuoteAmounts } from "./quote";

export interface PayerPair {
	token: TokenView;
	network: NetworkView;
}

export interface LinkTarget {
	tokenId: string;
	networkId: string;
	mode: OrganizationMode;
}

const isClientError = (err: unknown) => {
	const code = Number((err as { code?: unknown })?.code);
	return Number.isInteger(code) && code >= 400 && code < 500;
};

/**
 * networks.resolvePair for a payment, with its field names moved to the caller's (payerTokenId /
 * payerNetworkId). A live payment on a network no chain watcher follows is 400
 * `networkNotWatched` (docs/payments.md "Watched networks only"): every intent, link, quote and
 * checkout comes through here.
 */
export async function resolvePair(ctx: Context, networkId: string, tokenId: string, mode: OrganizationMode, fields = { networkId: "networkId", tokenId: "tokenId" }): Promise<PayerPair> {
	try {
		return (await ctx.call("networks.resolvePair", { networkId, tokenId, mode, payment: true })) as PayerPair;
	} catch (err) {
		if (!isClientError(err)) throw err;
		const data = (err as { data?: { errors?: Record<string, string> } }).data;
		const errors: Record<string, string> = {};
		for (const [field, code] of Object.entries(data?.errors ?? {})) errors[field === "networkId" ? fields.networkId : field === "tokenId" ? fields.tokenId : field] = code;
		throw badRequest((err as Error).message, Object.keys(errors).length ? errors : undefined);
	}
}

/**
 * The payer's token and network: both given, one given (a token implies its network; a network
 * alone means the link's token when it is the link's network), or neither (the link's own).
 */
export async function resolvePayer(ctx: Context, link: LinkTarget, payerTokenId?: string, payerNetworkId?: string): Promise<PayerPair> {
	let tokenId = payerTokenId;
	let networkId = payerNetworkId;
	if (!tokenId && !networkId) {
		tokenId = link.tokenId;
		networkId = link.networkId;
	} else if (tokenId && !networkId) {
		try {
			networkId = ((await ctx.call("networks.getToken", { id: tokenId })) as TokenWithNetworkView).networkId;
		} catch (err) {
			if (!isClientError(err)) throw err;
			throw badRequest("Token not found", { payerTokenId: "tokenNotFound" });
		}
	} else if (!tokenId && networkId) {
		if (networkId !== link.networkId) throw badRequest("payerTokenId is required for another network", { payerTokenId: "required" });
		tokenId = link.tokenId;
	}
	return resolvePair(ctx, networkId as string, tokenId as string, link.mode, { networkId: "payerNetworkId", tokenId: "payerTokenId" });
}

/** A fresh USD price, or null. */
export async function priceUsd(ctx: Context, tokenId: string): Promise<string | null> {
	try {
		const found = (await ctx.call("pricing.tokenPriceUsd", { tokenId })) as { priceUsd?: string } | string | null;
		if (!found) return null;
		return typeof found === "string" ? found : found.priceUsd ?? null;
	} catch (err) {
		if (isClientError(err)) return null;
		throw err;
	}
}

export interface CheckoutQuote {
	amounts: QuoteAmounts;
	payer: PayerPair;
	original: PayerPair;
}

/** The quote of paying `link` with the payer's token; prices are asked only when a conversion needs them. */
export async function quoteCheckout(ctx: Context, link: LinkTarget & { amount: string }, payer: PayerPair, supportPercent: string, bridgeFee: BridgeFeeModel): Promise<CheckoutQuote> {
	const [originalToken, originalNetwork] = await Promise.all([
		ctx.call("networks.getToken", { id: link.tokenId }) as Promise<TokenView>,
		ctx.call("networks.getNetwork", { id: link.networkId }) as Promise<NetworkView>,
	]);
	const sameToken = originalToken.id === payer.token.id;
	const needsPrices = !sameToken || originalNetwork.id !== payer.network.id;
	const [originalPrice, payerPrice] = needsPrices ? await Promise.all([priceUsd(ctx, originalToken.id), priceUsd(ctx, payer.token.id)]) : [null, null];
	try {
		const amounts = computeQuote({
			originalAmount: link.amount,
			original: { id: originalToken.id, networkId: originalNetwork.id, symbol: originalToken.symbol, decimals: originalToken.decimals, priceUsd: originalPrice },
			payer: { id: payer.token.id, networkId: payer.network.id, symbol: payer.token.symbol, decimals: payer.token.decimals, priceUsd: payerPrice },
			supportPercent,
			bridge: feeModelAdapter(bridgeFee),
		});
		return { amounts, payer, original: { token: originalToken, network: originalNetwork } };
	} catch (err) {
		if (err instanceof PriceUnavailableError) {
			const field = err.tokenId === payer.token.id && !sameToken ? "payerTokenId" : "tokenId";
			throw badRequest(`No USD price is available for ${err.symbol}`, { [field]: "priceUnavailable" });
		}
		if (err instanceof AmountTooLargeError) throw badRequest("Amount is too large", { amount: "tooLarge" });
		throw err;
	}
}

/** The Quote resource (spec "Quote"). */
export function quoteView(q: CheckoutQuote) {
	return {
		...q.amounts,
		payerTokenId: q.payer.token.id,
		payerNetworkId: q.payer.network.id,
		payerNetworkName: q.payer.network.name,
		payerNetwork: q.payer.network,
		payerToken: q.payer.token,
	};
}
