/**
 * Exact non-negative rationals over bigint for quote maths. Decimal strings are parsed with
 * lib/money.ts; products and quotients are kept as exact fractions and rounded once, at the
 * end, in an explicit direction. Nothing here ever goes through a JS number.
 */
import { fromBaseUnits, money, MoneyValue, MAX_INTEGER_DIGITS } from "../money";

export type Rounding = "up" | "down" | "half-up";

export interface Fraction {
	num: bigint;
	den: bigint;
}

/** Thrown when a result would not fit the money columns (MAX_INTEGER_DIGITS integer digits). */
export class AmountTooLargeError extends RangeError {
	constructor() {
		super(`Amount exceeds ${MAX_INTEGER_DIGITS} integer digits`);
		this.name = "AmountTooLargeError";
	}
}

const pow10 = (n: number): bigint => 10n ** BigInt(n);

/** A decimal string (or Decimal) as an exact fraction; refuses negatives. */
export function fraction(value: string | MoneyValue): Fraction {
	const d = money(value);
	if (!d.isFinite() || d.isNegative()) throw new RangeError(`Not a non-negative decimal: ${String(value)}`);
	// toFixed() without arguments is plain notation of every digit the value has.
	const plain = d.toFixed();
	const dot = plain.indexOf(".");
	if (dot < 0) return { num: BigInt(plain), den: 1n };
	const decimals = plain.length - dot - 1;
	return { num: BigInt(plain.slice(0, dot) + plain.slice(dot + 1)), den: pow10(decimals) };
}

export function mul(a: Fraction, b: Fraction): Fraction {
	return { num: a.num * b.num, den: a.den * b.den };
}

export function div(a: Fraction, b: Fraction): Fraction {
	if (b.num === 0n) throw new RangeError("Division by zero");
	return { num: a.num * b.den, den: a.den * b.num };
}

export function isZero(a: Fraction): boolean {
	return a.num === 0n;
}

/** -1, 0 or 1. */
export function compare(a: Fraction, b: Fraction): number {
	const l = a.num * b.den;
	const r = b.num * a.den;
	return l < r ? -1 : l > r ? 1 : 0;
}

/**
 * Rounds to `decimals` places in the given direction and formats canonically ("0", no trailing
 * zeros). "up" is towards +infinity (all values are non-negative), "half-up" rounds ties up.
 * Refuses results with more than MAX_INTEGER_DIGITS integer digits.
 */
export function round(a: Fraction, decimals: number, mode: Rounding): string {
	const scaled = a.num * pow10(decimals);
	let q = scaled / a.den;
	const r = scaled % a.den;
	if (r !== 0n && (mode === "up" || (mode === "half-up" && 2n * r >= a.den))) q += 1n;
	if (q >= pow10(MAX_INTEGER_DIGITS + decimals)) throw new AmountTooLargeError();
	return fromBaseUnits(q, decimals);
}
