/**
 * Checkout quote maths (the Quote resource of POST /payments/links/:slug/quote and the amounts
 * of a checkout transaction). Pure and exact: decimal strings in, exact fractions inside
 * (lib/pricing/fraction.ts), each shown amount rounded once.
 *
 * Rounding: every amount the payer pays is rounded UP to the decimals of the token it is in
 * (USD amounts to 6 places), so the merchant never receives less than asked. Hence
 *   totalAmount * payerPrice >= (originalAmount + supportAmount) * originalPrice + bridgeFeeUsd
 * and totalAmount exceeds the exact value by less than two units of the payer token's last
 * decimal (one per rounding: the converted subtotal and the bridge fee).
 *
 * - supportAmount       = originalAmount * supportPercent / 100, up, original token decimals
 * - originalAmountInPayerToken = originalAmount converted by USD prices, up, payer decimals
 * - bridgeFeeUsd        = bridge adapter fee on the USD value of original + support, up, 6 places
 * - bridgeFee           = bridgeFeeUsd in the original token, up
 * - bridgeFeeInPayerToken = bridgeFeeUsd in the payer token, up
 * - totalAmount         = (originalAmount + supportAmount) converted, up, + bridgeFeeInPayerToken
 * Paying in the link's own token needs no prices: the conversion is the identity.
 */
import { badRequest } from "../errors";
import { div, fraction, Fraction, mul, round } from "../pricing/fraction";
import type { BridgeQuoteAdapter } from "./bridge";

export const USD_DECIMALS = 6;
export const MAX_SUPPORT_PERCENT = "10";
const SUPPORT_PATTERN = /^(\d{1,2})(\.\d{1,4})?$/;

export interface QuoteToken {
	id: string;
	networkId: string;
	symbol: string;
	decimals: number;
	/** Needed unless paying in the link's own token without a bridge. */
	priceUsd?: string | null;
}

export interface QuoteInput {
	originalAmount: string;
	original: QuoteToken;
	payer: QuoteToken;
	/** Canonical decimal string, 0..10 (0.1 = 0.1 %). */
	supportPercent: string;
	bridge: BridgeQuoteAdapter;
}

export interface QuoteAmounts {
	originalAmount: string;
	supportPercent: string;
	supportAmount: string;
	originalTokenSymbol: string;
	payerTokenSymbol: string;
	bridgeFee: string;
	bridgeFeeUsd: string;
	bridgeFeeInPayerToken: string;
	originalAmountInPayerToken: string;
	totalAmount: string;
	requiresBridge: boolean;
}

/** A price is missing for a conversion the quote needs. */
export class PriceUnavailableError extends Error {
	constructor(readonly tokenId: string, readonly symbol: string) {
		super(`No USD price available for ${symbol}`);
		this.name = "PriceUnavailableError";
	}
}

export function add(a: Fraction, b: Fraction): Fraction {
	return { num: a.num * b.den + b.num * a.den, den: a.den * b.den };
}

/**
 * supportPercent as given by a client (JSON number or decimal string): 0..10 with at most 4
 * decimals, returned as a canonical decimal string. Anything else is 400 errors.supportPercent.
 */
export function parseSupportPercent(value: unknown, field = "supportPercent"): string {
	if (value === undefined || value === null) return "0";
	// String(n) of a JS number is its shortest round-trip form (0.1 -> "0.1"), so no float noise enters.
	const raw = typeof value === "number" && Number.isFinite(value) ? String(value) : typeof value === "string" ? value.trim() : "";
	const m = SUPPORT_PATTERN.exec(raw);
	if (!m) throw badRequest("supportPercent must be a number from 0 to 10", { [field]: "invalidSupportPercent" });
	const f = fraction(raw);
	if (f.num * 1n > 10n * f.den) throw badRequest("supportPercent must be a number from 0 to 10", { [field]: "invalidSupportPercent" });
	return round(f, 4, "down");
}

function priceOf(token: QuoteToken): Fraction {
	if (!token.priceUsd) throw new PriceUnavailableError(token.id, token.symbol);
	const p = fraction(token.priceUsd);
	if (p.num === 0n) throw new PriceUnavailableError(token.id, token.symbol);
	return p;
}

export function computeQuote(input: QuoteInput): QuoteAmounts {
	const { original, payer } = input;
	const amount = fraction(input.originalAmount);
	const pct = fraction(input.supportPercent);
	const sameToken = original.id === payer.id;
	const requiresBridge = original.networkId !== payer.networkId;

	const supportAmount = round(mul(amount, div(pct, { num: 100n, den: 1n })), original.decimals, "up");
	const subtotal = add(amount, fraction(supportAmount));

	// Exact factor from original token units to payer token units.
	let rate: Fraction = { num: 1n, den: 1n };
	if (!sameToken) rate = div(priceOf(original), priceOf(payer));
	const originalAmountInPayerToken = round(mul(amount, rate), payer.decimals, "up");
	const convertedSubtotal = round(mul(subtotal, rate), payer.decimals, "up");

	let bridgeFeeUsd = "0";
	let bridgeFee = "0";
	let bridgeFeeInPayerToken = "0";
	if (requiresBridge) {
		const originalPrice = priceOf(original);
		const fee = input.bridge.feeUsd({ amountUsd: mul(subtotal, originalPrice), fromNetworkId: payer.networkId, toNetworkId: original.networkId });
		bridgeFeeUsd = round(fee, USD_DECIMALS, "up");
		const feeUsd = fraction(bridgeFeeUsd);
		bridgeFee = round(div(feeUsd, originalPrice), original.decimals, "up");
		bridgeFeeInPayerToken = round(div(feeUsd, priceOf(payer)), payer.decimals, "up");
	}
	const totalAmount = round(add(fraction(convertedSubtotal), fraction(bridgeFeeInPayerToken)), payer.decimals, "up");

	return {
		originalAmount: round(amount, original.decimals, "up"),
		supportPercent: input.supportPercent,
		supportAmount,
		originalTokenSymbol: original.symbol,
		payerTokenSymbol: payer.symbol,
		bridgeFee,
		bridgeFeeUsd,
		bridgeFeeInPayerToken,
		originalAmountInPayerToken,
		totalAmount,
		requiresBridge,
	};
}
