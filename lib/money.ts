/**
 * Money in one place. Amounts are decimal strings on the wire, decimal.js in code, and exact
 * columns in the database: DECIMAL(65,18) on MySQL (mysql2 returns strings) and TEXT holding the
 * canonical decimal string on SQLite (whose DECIMAL affinity would turn values into lossy floats).
 * Every value read from a column goes through `normalizeDecimal`, so both backends give the same
 * canonical string. No JavaScript number ever holds money.
 */
import Decimal from "decimal.js";
import { DataTypes, ModelAttributeColumnOptions } from "sequelize";

/** Decimal constructor for money: wide precision, no exponent notation, truncation unless asked otherwise. */
export const Money = Decimal.clone({ precision: 120, rounding: Decimal.ROUND_DOWN, toExpNeg: -120, toExpPos: 120 });
export type MoneyValue = InstanceType<typeof Money>;

/** Up to 40 integer digits and 18 decimals: 18-decimal tokens in token units with room to spare. */
export const MAX_INTEGER_DIGITS = 40;
export const MAX_DECIMALS = 18;
export const DECIMAL_PATTERN = /^(0|[1-9]\d{0,39})(\.\d{1,18})?$/;

/** The same with an optional leading minus: signed amounts (ledger entries). "-0" is refused. */
export const SIGNED_DECIMAL_PATTERN = /^(0|-?[1-9]\d{0,39}(\.\d{1,18})?|-?0\.\d{1,18})$/;

/** fastest-validator rule for a non-negative decimal amount string. */
export const amountRule = { type: "string", pattern: DECIMAL_PATTERN, messages: { stringPattern: "decimal" } } as const;

/** fastest-validator rule for a signed decimal amount string. */
export const signedAmountRule = { type: "string", pattern: SIGNED_DECIMAL_PATTERN, messages: { stringPattern: "signedDecimal" } } as const;

export function isDecimalString(value: unknown): value is string {
	return typeof value === "string" && DECIMAL_PATTERN.test(value);
}

/** Parses a money value. Numbers are accepted only when they are safe integers (counts, not money). */
export function money(value: string | bigint | number | MoneyValue): MoneyValue {
	if (typeof value === "number") {
		if (!Number.isSafeInteger(value)) throw new TypeError("Refusing a non-integer JS number as money");
		return new Money(value);
	}
	if (typeof value === "bigint") return new Money(value.toString());
	return new Money(value);
}

/** toAmountString's own output form: plain notation, an optional minus, no leading zeros, no trailing fraction zeros. */
const CANONICAL = /^-?(0|[1-9]\d*)(\.\d*[1-9])?$/;

/** Fixed point with zeros closing the fraction, as MySQL reads DECIMAL(65,18): `10.500000000000000000` (groups: integer part, fraction without those zeros). */
const FIXED_TRAILING_ZEROS = /^(-?(?:0|[1-9]\d*))\.(\d*?)0+$/;

/** Canonical string: plain notation, no trailing zeros, "0" for zero, at most `decimals` places (truncated). */
export function toAmountString(value: string | bigint | MoneyValue, decimals: number = MAX_DECIMALS): string {
	if (typeof value === "string" && value.length <= 90) {
		// Already canonical (what the watchers mostly hand in): as is, without a decimal.js round trip.
		if (value.length <= 60 && CANONICAL.test(value) && value !== "-0") {
			const dot = value.indexOf(".");
			if (dot < 0 || value.length - dot - 1 <= decimals) return value;
		}
		// A database read (every money field of every response on MySQL): the closing zeros cut off as strings.
		const m = FIXED_TRAILING_ZEROS.exec(value);
		if (m && m[2].length <= decimals) {
			if (m[2]) return `${m[1]}.${m[2]}`;
			return m[1] === "-0" ? "0" : m[1];
		}
	}
	const d = money(value).toDecimalPlaces(decimals, Decimal.ROUND_DOWN);
	if (d.isZero()) return "0";
	return d.toFixed();
}

/** Normalises a value read from a DECIMAL/TEXT column (string on MySQL and SQLite TEXT; tolerates integers). */
export function normalizeDecimal(raw: unknown): string | null {
	if (raw === null || raw === undefined) return null;
	if (typeof raw === "number") {
		if (!Number.isSafeInteger(raw)) throw new TypeError(`Lossy money value from the database: ${raw}`);
		return String(raw);
	}
	if (typeof raw === "bigint") return raw.toString();
	return toAmountString(String(raw));
}

const POW10 = new Map<number, MoneyValue>();
/** 10^decimals, built once per token precision (a watcher converts every transfer it stores: thousands a second). */
function pow10(decimals: number): MoneyValue {
	let p = POW10.get(decimals);
	if (!p) POW10.set(decimals, (p = new Money(10).pow(decimals)));
	return p;
}

/** Token units -> base units (bigint); refuses more decimals than the token has. */
export function toBaseUnits(amount: string, decimals: number): bigint {
	const d = money(amount);
	const scaled = d.mul(pow10(decimals));
	if (!scaled.isInteger()) throw new RangeError(`Amount ${amount} has more than ${decimals} decimals`);
	return BigInt(scaled.toFixed(0));
}

/** Base units -> token units string. */
export function fromBaseUnits(units: bigint | string, decimals: number): string {
	// Integers: the digits moved past the point with bigint and strings (exact; a watcher converts
	// every transfer it stores, thousands a second). Anything else through decimal.js as before.
	if (Number.isInteger(decimals) && decimals >= 0 && decimals <= MAX_DECIMALS && (typeof units === "bigint" || /^-?\d{1,80}$/.test(units))) {
		const n = BigInt(units);
		const digits = (n < 0n ? -n : n).toString();
		let out = digits;
		if (decimals > 0) {
			const padded = digits.padStart(decimals + 1, "0");
			const fraction = padded.slice(-decimals).replace(/0+$/, "");
			out = fraction ? `${padded.slice(0, -decimals)}.${fraction}` : padded.slice(0, -decimals);
		}
		return n < 0n ? `-${out}` : out;
	}
	return toAmountString(new Money(units.toString()).div(pow10(decimals)), decimals);
}

/** Column type for money in a migration. */
export function moneyColumnType(dialect: string) {
	return dialect === "mysql" ? DataTypes.DECIMAL(65, MAX_DECIMALS) : DataTypes.TEXT;
}

/** Model attribute for a money column: stores canonical strings, reads back normalised strings. */
export function moneyAttribute(field: string, dialect: string, allowNull = false): ModelAttributeColumnOptions {
	return {
		type: moneyColumnType(dialect),
		allowNull,
		get(this: { getDataValue(k: string): unknown }) {
			return normalizeDecimal(this.getDataValue(field));
		},
		set(this: { setDataValue(k: string, v: unknown): void }, value: unknown) {
			this.setDataValue(field, value === null || value === undefined ? value : toAmountString(String(value)));
		},
	};
}
