/**
 * Fiat quote and token conversion maths (docs/pricing.md, "Rounding"). Pure: inputs are decimal
 * strings, the maths is exact (lib/pricing/fraction.ts) and each result is rounded once.
 *
 * - amountUsd: the exact USD value rounded UP to 6 places (USDC precision), so a quote never
 *   asks the payer for less than the fiat amount is worth.
 * - tokenAmount: the exact USD value (not the rounded amountUsd: one rounding only) divided by
 *   the token's USD price, rounded UP to the token's decimals: the merchant is never short.
 * - An inverted rate shown to a client (GET /price/currency-rate for the stored pair's other
 *   direction) is rounded half-up to 18 places; quotes never use that rounded value, they divide
 *   by the stored rate exactly.
 */
import { div, fraction, Fraction, mul, round } from "./fraction";

/** USD amounts in quotes carry USDC's 6 decimals. */
export const QUOTE_USD_DECIMALS = 6;
/** Decimals of rates and prices as stored (DECIMAL(65,18)). */
export const RATE_DECIMALS = 18;

/**
 * A stored rate that links a currency to USD. `toUsd`: the row is X->USD (1 X = rate USD);
 * `fromUsd`: the row is USD->X (1 USD = rate X).
 */
export interface UsdRate {
	rate: string;
	direction: "toUsd" | "fromUsd";
}

export interface TokenPriceInput {
	decimals: number;
	priceUsd: string;
}

export interface FiatQuoteResult {
	amountUsd: string;
	tokenAmount?: string;
}

function positive(value: string, what: string): Fraction {
	const f = fraction(value);
	if (f.num === 0n) throw new RangeError(`${what} must be positive`);
	return f;
}

/** Exact USD value of `amount` of a currency; `rate` null means the amount is already USD. */
export function exactUsd(amount: string, rate: UsdRate | null): Fraction {
	const a = fraction(amount);
	if (!rate) return a;
	const r = positive(rate.rate, "rate");
	return rate.direction === "toUsd" ? mul(a, r) : div(a, r);
}

/** Exact token amount worth `usd` at `priceUsd`, rounded up to the token's decimals. */
export function tokenAmountFor(usd: Fraction, token: TokenPriceInput): string {
	return round(div(usd, positive(token.priceUsd, "priceUsd")), token.decimals, "up");
}

export function quoteFiat(input: { amount: string; rate: UsdRate | null; token?: TokenPriceInput }): FiatQuoteResult {
	const usd = exactUsd(input.amount, input.rate);
	const out: FiatQuoteResult = { amountUsd: round(usd, QUOTE_USD_DECIMALS, "up") };
	if (input.token) out.tokenAmount = tokenAmountFor(usd, input.token);
	return out;
}

/**
 * `amount` of one token in another by their USD prices, rounded up to the target's decimals
 * (what a payer must send in the target token to cover the amount).
 */
export function convertTokenAmount(input: { amount: string; fromPriceUsd: string; toPriceUsd: string; toDecimals: number }): string {
	const usd = mul(fraction(input.amount), fraction(input.fromPriceUsd));
	return tokenAmountFor(usd, { decimals: input.toDecimals, priceUsd: input.toPriceUsd });
}

/** 1 / rate, half-up to `decimals` places: for display of the other direction of a stored rate. */
export function invertRate(rate: string, decimals = RATE_DECIMALS): string {
	return round(div({ num: 1n, den: 1n }, positive(rate, "rate")), decimals, "half-up");
}
