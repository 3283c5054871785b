import fc from "fast-check";
import { fromBaseUnits, isDecimalString, money, normalizeDecimal, toAmountString, toBaseUnits } from "../../lib/money";

/** Arbitrary canonical amount with up to 40 integer digits and `decimals` places. */
const amountArb = (decimals: number) =>
	fc
		.tuple(fc.bigInt({ min: 0n, max: 10n ** 40n - 1n }), fc.bigInt({ min: 0n, max: 10n ** BigInt(decimals) - 1n }))
		.map(([i, f]) => (decimals === 0 || f === 0n ? i.toString() : `${i}.${f.toString().padStart(decimals, "0")}`.replace(/0+$/, "")));

describe("money", () => {
	it("base-unit conversion round-trips for 18-decimal tokens and huge values", () => {
		fc.assert(
			fc.property(amountArb(18), amount => {
				const units = toBaseUnits(amount, 18);
				expect(fromBaseUnits(units, 18)).toBe(toAmountString(amount));
			}),
		);
	});

	it("round-trips any decimals from 0 to 18", () => {
		fc.assert(
			fc.property(fc.integer({ min: 0, max: 18 }), fc.bigInt({ min: 0n, max: 10n ** 45n }), (decimals, units) => {
				expect(toBaseUnits(fromBaseUnits(units, decimals), decimals)).toBe(units);
			}),
		);
	});

	it("base units -> token units with bigint and strings gives decimal.js's canonical string, signs and zeros included", () => {
		const viaDecimal = (units: bigint, decimals: number) => toAmountString(money(units).div(money(10).pow(decimals)), decimals);
		fc.assert(
			fc.property(fc.integer({ min: 0, max: 18 }), fc.bigInt({ min: -(10n ** 60n), max: 10n ** 60n }), (decimals, units) => {
				expect(fromBaseUnits(units, decimals)).toBe(viaDecimal(units, decimals));
				expect(fromBaseUnits(units.toString(), decimals)).toBe(viaDecimal(units, decimals));
			}),
		);
		expect(fromBaseUnits(0n, 9)).toBe("0");
		expect(fromBaseUnits(10_000_000n, 9)).toBe("0.01");
		expect(fromBaseUnits(-5n, 2)).toBe("-0.05");
		expect(fromBaseUnits("120", 0)).toBe("120");
	});

	it("toAmountString hands a canonical string back as is and canonicalises anything else as decimal.js does", () => {
		for (const s of ["0", "1", "-1", "0.5", "-0.05", "12.000000000000000001", "1".repeat(40)]) expect(toAmountString(s)).toBe(s);
		expect(toAmountString("0.123", 2)).toBe("0.12");
		expect(toAmountString("-0")).toBe("0");
		expect(toAmountString("1.50")).toBe("1.5");
		expect(toAmountString("007")).toBe("7");
		expect(toAmountString("1e3")).toBe("1000");
		expect(toAmountString("1.0000000000000000009")).toBe("1");
		// MySQL's DECIMAL(65,18) form: closing zeros cut off without decimal.js.
		expect(toAmountString("10.000000000000000000")).toBe("10");
		expect(toAmountString("0.500000000000000000")).toBe("0.5");
		expect(toAmountString("-0.000000000000000000")).toBe("0");
		expect(toAmountString("-0.050000000000000000")).toBe("-0.05");
		expect(toAmountString("1.0500")).toBe("1.05");
		expect(toAmountString("0.12300", 2)).toBe("0.12");
		expect(toAmountString("00.500")).toBe("0.5");
		fc.assert(
			fc.property(fc.integer({ min: 0, max: 18 }), fc.bigInt({ min: -(10n ** 40n), max: 10n ** 40n }), fc.integer({ min: 0, max: 24 }), fc.integer({ min: 1, max: 20 }), (decimals, n, scale, zeros) => {
				const fixed = money(n).div(money(10).pow(scale)).toFixed(scale + zeros);
				const viaDecimal = money(fixed).toDecimalPlaces(decimals, 1);
				expect(toAmountString(fixed, decimals)).toBe(viaDecimal.isZero() ? "0" : viaDecimal.toFixed());
			}),
		);
		fc.assert(
			fc.property(fc.integer({ min: 0, max: 18 }), fc.bigInt({ min: -(10n ** 40n), max: 10n ** 40n }), fc.integer({ min: 0, max: 24 }), (decimals, n, scale) => {
				const s = money(n).div(money(10).pow(scale)).toFixed();
				expect(toAmountString(s, decimals)).toBe(money(s).toDecimalPlaces(decimals, 1).isZero() ? "0" : money(s).toDecimalPlaces(decimals, 1).toFixed());
			}),
		);
	});

	it("refuses amounts with more decimals than the token has", () => {
		expect(() => toBaseUnits("1.0000001", 6)).toThrow(RangeError);
		expect(toBaseUnits("1.000001", 6)).toBe(1000001n);
	});

	it("normalises database values from MySQL strings and SQLite text alike", () => {
		expect(normalizeDecimal("1.500000000000000000")).toBe("1.5");
		expect(normalizeDecimal("0.000000000000000000")).toBe("0");
		expect(normalizeDecimal("123456789012345678901234567890.123456789012345678")).toBe("123456789012345678901234567890.123456789012345678");
		expect(normalizeDecimal(null)).toBeNull();
		expect(normalizeDecimal(42)).toBe("42");
		expect(() => normalizeDecimal(0.1)).toThrow(TypeError);
	});

	it("never accepts a fractional JS number as money", () => {
		expect(() => money(0.1)).toThrow(TypeError);
		expect(money(7).toFixed()).toBe("7");
	});

	it("validates decimal strings", () => {
		for (const ok of ["0", "1", "0.1", "10.000000000000000001", "1".repeat(40)]) expect(isDecimalString(ok)).toBe(true);
		for (const bad of ["", "01", "-1", "1.", ".5", "1e5", "1.0000000000000000001", "1".repeat(41), " 1", "NaN", "Infinity"]) {
			expect(isDecimalString(bad)).toBe(false);
		}
	});

	it("canonical strings keep exact sums (no float drift)", () => {
		fc.assert(
			fc.property(fc.array(amountArb(18), { minLength: 1, maxLength: 20 }), amounts => {
				const total = amounts.reduce((acc, a) => acc.plus(money(a)), money("0"));
				const viaUnits = amounts.reduce((acc, a) => acc + toBaseUnits(a, 18), 0n);
				expect(toBaseUnits(toAmountString(total), 18)).toBe(viaUnits);
			}),
		);
	});
});
