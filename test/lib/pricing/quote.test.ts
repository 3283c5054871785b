import fc from "fast-check";
import Decimal from "decimal.js";
import { isDecimalString } from "../../../lib/money";
import { AmountTooLargeError, fraction, round } from "../../../lib/pricing/fraction";
import { convertTokenAmount, exactUsd, invertRate, quoteFiat, QUOTE_USD_DECIMALS } from "../../../lib/pricing/quote";

/** Checks in the tests use a far wider precision than any product can need, so they are exact. */
const D = Decimal.clone({ precision: 1000, toExpNeg: -1000, toExpPos: 1000 });
const ulp = (decimals: number) => new D(10).pow(-decimals);

/** Canonical decimal strings with up to `intDigits` integer digits and `decimals` places. */
const decimalArb = (intDigits: number, decimals: number, opts: { positive?: boolean } = {}) =>
	fc
		.tuple(fc.bigInt({ min: 0n, max: 10n ** BigInt(intDigits) - 1n }), fc.bigInt({ min: 0n, max: 10n ** BigInt(decimals) - 1n }))
		.map(([i, f]) => (decimals === 0 || f === 0n ? i.toString() : `${i}.${f.toString().padStart(decimals, "0")}`.replace(/0+$/, "")))
		.filter(s => !opts.positive || s !== "0");

const rateArb = fc.oneof(decimalArb(6, 18, { positive: true }), decimalArb(2, 6, { positive: true }), decimalArb(20, 2, { positive: true }));

describe("fraction", () => {
	it("parses decimal strings exactly and refuses negatives", () => {
		expect(fraction("123.4500")).toEqual({ num: 12345n, den: 100n });
		expect(fraction("0")).toEqual({ num: 0n, den: 1n });
		expect(fraction("0.000000000000000001")).toEqual({ num: 1n, den: 10n ** 18n });
		expect(() => fraction("-1")).toThrow(RangeError);
	});

	it("rounds up, down and half-up exactly", () => {
		const third = { num: 1n, den: 3n };
		expect(round(third, 6, "down")).toBe("0.333333");
		expect(round(third, 6, "up")).toBe("0.333334");
		expect(round(third, 6, "half-up")).toBe("0.333333");
		expect(round({ num: 5n, den: 10n ** 7n }, 6, "half-up")).toBe("0.000001");
		expect(round({ num: 2n, den: 1n }, 6, "up")).toBe("2");
		expect(() => round({ num: 10n ** 40n, den: 1n }, 0, "down")).toThrow(AmountTooLargeError);
	});
});

describe("quoteFiat", () => {
	it("keeps a USD amount as it is (no rate, nothing lost)", () => {
		fc.assert(
			fc.property(decimalArb(40, 6), amount => {
				expect(quoteFiat({ amount, rate: null }).amountUsd).toBe(amount);
			}),
		);
	});

	it("converts with an X->USD rate: amountUsd is the exact product rounded up to 6 places", () => {
		fc.assert(
			fc.property(decimalArb(30, 2), rateArb, (amount, rate) => {
				const exact = new D(amount).mul(rate);
				let got: string;
				try {
					got = quoteFiat({ amount, rate: { rate, direction: "toUsd" } }).amountUsd;
				} catch (err) {
					expect(err).toBeInstanceOf(AmountTooLargeError);
					expect(exact.gte(new D(10).pow(40))).toBe(true);
					return;
				}
				expect(isDecimalString(got)).toBe(true);
				const usd = new D(got);
				expect(usd.gte(exact)).toBe(true);
				expect(usd.minus(ulp(QUOTE_USD_DECIMALS)).lt(exact)).toBe(true);
			}),
		);
	});

	it("converts with a USD->X rate by exact division, rounded up (never less than the amount is worth)", () => {
		fc.assert(
			fc.property(decimalArb(30, 2), rateArb, (amount, rate) => {
				let got: string;
				try {
					got = quoteFiat({ amount, rate: { rate, direction: "fromUsd" } }).amountUsd;
				} catch (err) {
					expect(err).toBeInstanceOf(AmountTooLargeError);
					return;
				}
				// amountUsd * rate >= amount > (amountUsd - 1e-6) * rate, checked by exact products.
				const usd = new D(got);
				expect(usd.mul(rate).gte(amount)).toBe(true);
				expect(usd.minus(ulp(QUOTE_USD_DECIMALS)).mul(rate).lt(amount)).toBe(true);
			}),
		);
	});

	it("gives the same quote whichever direction of an exactly invertible rate is stored", () => {
		// r = 2^a * 5^b / 10^k has the terminating inverse 10^k / (2^a * 5^b).
		fc.assert(
			fc.property(fc.integer({ min: 0, max: 12 }), fc.integer({ min: 0, max: 12 }), fc.integer({ min: 0, max: 6 }), decimalArb(20, 2), (a, b, k, amount) => {
				const r = new D(2).pow(a).mul(new D(5).pow(b)).div(new D(10).pow(k));
				const inverse = new D(1).div(r);
				const toUsd = quoteFiat({ amount, rate: { rate: r.toFixed(), direction: "toUsd" } });
				const fromUsd = quoteFiat({ amount, rate: { rate: inverse.toFixed(), direction: "fromUsd" } });
				expect(fromUsd).toEqual(toUsd);
			}),
		);
	});

	it("token amounts are rounded up to the token's decimals, for 18-decimal tokens and huge values", () => {
		fc.assert(
			fc.property(
				decimalArb(25, 2),
				rateArb,
				fc.constantFrom<"toUsd" | "fromUsd">("toUsd", "fromUsd"),
				decimalArb(12, 18, { positive: true }),
				fc.integer({ min: 0, max: 18 }),
				(amount, rate, direction, priceUsd, decimals) => {
					let q: ReturnType<typeof quoteFiat>;
					try {
						q = quoteFiat({ amount, rate: { rate, direction }, token: { decimals, priceUsd } });
					} catch (err) {
						expect(err).toBeInstanceOf(AmountTooLargeError);
						return;
					}
					const t = new D(q.tokenAmount!);
					expect(t.decimalPlaces()).toBeLessThanOrEqual(decimals);
					// Compare t * price with the exact USD value: amount * rate, or amount / rate (scaled by rate).
					const covers = (x: InstanceType<typeof D>) =>
						direction === "toUsd" ? x.mul(priceUsd).gte(new D(amount).mul(rate)) : x.mul(priceUsd).mul(rate).gte(amount);
					expect(covers(t)).toBe(true);
					if (t.gt(0)) expect(covers(t.minus(ulp(decimals)))).toBe(false);
				},
			),
		);
	});

	it("a stablecoin at 1 USD with 6 decimals costs exactly amountUsd", () => {
		fc.assert(
			fc.property(decimalArb(20, 2), rateArb, (amount, rate) => {
				const q = quoteFiat({ amount, rate: { rate, direction: "fromUsd" }, token: { decimals: 6, priceUsd: "1" } });
				expect(q.tokenAmount).toBe(q.amountUsd);
			}),
		);
	});

	it("known values", () => {
		expect(quoteFiat({ amount: "100", rate: { rate: "0.92", direction: "fromUsd" } }).amountUsd).toBe("108.695653");
		expect(quoteFiat({ amount: "15000", rate: { rate: "150", direction: "fromUsd" } }).amountUsd).toBe("100");
		expect(quoteFiat({ amount: "10", rate: { rate: "1.25", direction: "toUsd" } }).amountUsd).toBe("12.5");
		const eth = quoteFiat({ amount: "100", rate: null, token: { decimals: 18, priceUsd: "3000" } });
		expect(eth.tokenAmount).toBe("0.033333333333333334");
	});

	it("refuses a zero rate or price instead of dividing by zero", () => {
		expect(() => quoteFiat({ amount: "1", rate: { rate: "0", direction: "fromUsd" } })).toThrow(RangeError);
		expect(() => quoteFiat({ amount: "1", rate: null, token: { decimals: 6, priceUsd: "0" } })).toThrow(RangeError);
		expect(() => exactUsd("1", { rate: "0", direction: "toUsd" })).toThrow(RangeError);
	});
});

describe("convertTokenAmount", () => {
	it("is the identity between tokens of the same price and decimals", () => {
		fc.assert(
			fc.property(decimalArb(30, 18), decimalArb(8, 18, { positive: true }), (amount, price) => {
				expect(convertTokenAmount({ amount, fromPriceUsd: price, toPriceUsd: price, toDecimals: 18 })).toBe(amount);
			}),
		);
	});

	it("rounds up to the target's decimals: the converted amount always covers the source value", () => {
		fc.assert(
			fc.property(decimalArb(20, 18), decimalArb(8, 18, { positive: true }), decimalArb(8, 18, { positive: true }), fc.integer({ min: 0, max: 18 }), (amount, from, to, decimals) => {
				const value = new D(amount).mul(from);
				let converted: string;
				try {
					converted = convertTokenAmount({ amount, fromPriceUsd: from, toPriceUsd: to, toDecimals: decimals });
				} catch (err) {
					// Only a result past the money columns' 40 integer digits is refused.
					expect(err).toBeInstanceOf(AmountTooLargeError);
					expect(value.div(to).gte(new D(10).pow(40).minus(1))).toBe(true);
					return;
				}
				const got = new D(converted);
				expect(got.mul(to).gte(value)).toBe(true);
				if (got.gt(0)) expect(got.minus(ulp(decimals)).mul(to).lt(value)).toBe(true);
			}),
		);
	});
});

describe("invertRate", () => {
	it("is within half a unit of the 18th place of 1 / rate", () => {
		fc.assert(
			fc.property(decimalArb(10, 18, { positive: true }), rate => {
				const inv = new D(invertRate(rate));
				// |inv - 1/r| <= 0.5e-18  <=>  |inv * r - 1| <= 0.5e-18 * r
				expect(inv.mul(rate).minus(1).abs().lte(ulp(18).div(2).mul(rate))).toBe(true);
			}),
		);
		expect(invertRate("150")).toBe("0.006666666666666667");
		expect(invertRate("0.8")).toBe("1.25");
	});
});
