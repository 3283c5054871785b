import fc from "fast-check";
import Decimal from "decimal.js";
import { Errors } from "moleculer";
import { isDecimalString } from "../../../lib/money";
import { DEFAULT_BRIDGE_FEE, bridgeFeeModelFromEnv, feeModelAdapter } from "../../../lib/payments/bridge";
import { computeQuote, parseSupportPercent, PriceUnavailableError, QuoteToken } from "../../../lib/payments/quote";
import { AmountTooLargeError } from "../../../lib/pricing/fraction";

/** Wide enough that every check below is exact. */
const D = Decimal.clone({ precision: 1000, toExpNeg: -1000, toExpPos: 1000 });
const ulp = (decimals: number) => new D(10).pow(-decimals);
const decimalsOf = (s: string) => (s.includes(".") ? s.split(".")[1].length : 0);

const decimalArb = (intDigits: number, decimals: number, opts: { positive?: boolean } = {}) =>
	fc
		.tuple(fc.bigInt({ min: 0n, max: 10n ** BigInt(intDigits) - 1n }), fc.bigInt({ min: 0n, max: 10n ** BigInt(decimals) - 1n }))
		.map(([i, f]) => (decimals === 0 || f === 0n ? i.toString() : `${i}.${f.toString().padStart(decimals, "0")}`.replace(/0+$/, "")))
		.filter(s => !opts.positive || s !== "0");

const supportArb = fc.oneof(fc.constant("0"), decimalArb(1, 4), fc.constant("10"), fc.constant("0.1"));
const priceArb = fc.oneof(decimalArb(6, 8, { positive: true }), decimalArb(1, 18, { positive: true }), fc.constant("1"));
const decimalsArb = fc.constantFrom(0, 2, 6, 8, 9, 18);
const bridge = feeModelAdapter(DEFAULT_BRIDGE_FEE);

const token = (id: string, networkId: string, decimals: number, priceUsd?: string): QuoteToken => ({ id, networkId, symbol: id.toUpperCase(), decimals, priceUsd });

describe("parseSupportPercent", () => {
	it("accepts 0..10 with up to 4 decimals, numbers or strings, canonically", () => {
		expect(parseSupportPercent(undefined)).toBe("0");
		expect(parseSupportPercent(0)).toBe("0");
		expect(parseSupportPercent(0.1)).toBe("0.1");
		expect(parseSupportPercent("2.50")).toBe("2.5");
		expect(parseSupportPercent(10)).toBe("10");
		expect(parseSupportPercent(1.2345)).toBe("1.2345");
	});
	it.each([-1, 10.0001, 11, 1e-7, "abc", "1.23456", NaN, Infinity, true, {}])("refuses %p with errors.supportPercent", value => {
		let err: unknown;
		try {
			parseSupportPercent(value);
		} catch (e) {
			err = e;
		}
		expect(err).toBeInstanceOf(Errors.MoleculerClientError);
		expect((err as Errors.MoleculerClientError).data).toEqual({ errors: { supportPercent: "invalidSupportPercent" } });
	});
});

describe("bridge fee model", () => {
	it("is flat + bps of the USD value, exact", () => {
		const fee = feeModelAdapter({ flatUsd: "0.5", bps: 30 }).feeUsd({ amountUsd: { num: 1000n, den: 1n }, fromNetworkId: "a", toNetworkId: "b" });
		expect(new D(fee.num.toString()).div(fee.den.toString()).toString()).toBe("3.5");
	});
	it("reads its settings from the environment and refuses nonsense", () => {
		expect(bridgeFeeModelFromEnv({})).toEqual(DEFAULT_BRIDGE_FEE);
		expect(bridgeFeeModelFromEnv({ BRIDGE_FEE_FLAT_USD: "2.25", BRIDGE_FEE_BPS: "45" })).toEqual({ flatUsd: "2.25", bps: 45 });
		expect(() => bridgeFeeModelFromEnv({ BRIDGE_FEE_BPS: "1.5" })).toThrow(/BRIDGE_FEE_BPS/);
		expect(() => bridgeFeeModelFromEnv({ BRIDGE_FEE_FLAT_USD: "-1" })).toThrow(/BRIDGE_FEE_FLAT_USD/);
	});
});

describe("computeQuote", () => {
	it("is the identity for the link's own token without support", () => {
		fc.assert(
			fc.property(decimalsArb, fc.integer({ min: 1, max: 40 }), (decimals, intDigits) => {
				const t = token("eth", "net1", decimals);
				return fc.assert(
					fc.property(decimalArb(intDigits, decimals, { positive: true }), amount => {
						const q = computeQuote({ originalAmount: amount, original: t, payer: t, supportPercent: "0", bridge });
						expect(q.totalAmount).toBe(amount);
						expect(q.originalAmountInPayerToken).toBe(amount);
						expect(q.requiresBridge).toBe(false);
						expect([q.bridgeFee, q.bridgeFeeUsd, q.bridgeFeeInPayerToken, q.supportAmount]).toEqual(["0", "0", "0", "0"]);
					}),
					{ numRuns: 5 },
				);
			}),
			{ numRuns: 30 },
		);
	});

	it("adds the support exactly (rounded up to the token's decimals) in the same token", () => {
		fc.assert(
			fc.property(decimalArb(38, 18, { positive: true }), supportArb, (amount, pct) => {
				const t = token("eth", "net1", 18);
				const q = computeQuote({ originalAmount: amount, original: t, payer: t, supportPercent: pct, bridge });
				const exactSupport = new D(amount).mul(pct).div(100);
				expect(new D(q.supportAmount).gte(exactSupport)).toBe(true);
				expect(new D(q.supportAmount).minus(exactSupport).lt(ulp(18))).toBe(true);
				expect(q.totalAmount).toBe(new D(amount).plus(q.supportAmount).toFixed());
			}),
		);
	});

	it("never asks the payer for less than the value across tokens and networks, and at most two units more", () => {
		fc.assert(
			fc.property(
				decimalArb(20, 18, { positive: true }),
				supportArb,
				decimalsArb,
				decimalsArb,
				priceArb,
				priceArb,
				fc.boolean(),
				(amount, pct, origDecimals, payerDecimals, origPrice, payerPrice, bridged) => {
					const originalAmount = new D(amount).toDecimalPlaces(origDecimals, Decimal.ROUND_DOWN).toFixed();
					if (originalAmount === "0") return;
					const original = token("orig", "net1", origDecimals, origPrice);
					const payer = token("payer", bridged ? "net2" : "net1", payerDecimals, payerPrice);
					let q;
					try {
						q = computeQuote({ originalAmount, original, payer, supportPercent: pct, bridge });
					} catch (err) {
						// Only amounts beyond the money columns' 40 integer digits are refused.
						expect(err).toBeInstanceOf(AmountTooLargeError);
						return;
					}
					for (const [k, v] of Object.entries(q)) if (typeof v === "string" && k !== "originalTokenSymbol" && k !== "payerTokenSymbol") expect(isDecimalString(v)).toBe(true);
					expect(decimalsOf(q.totalAmount)).toBeLessThanOrEqual(payerDecimals);
					expect(decimalsOf(q.originalAmountInPayerToken)).toBeLessThanOrEqual(payerDecimals);
					expect(decimalsOf(q.supportAmount)).toBeLessThanOrEqual(origDecimals);
					expect(decimalsOf(q.bridgeFeeUsd)).toBeLessThanOrEqual(6);
					expect(q.requiresBridge).toBe(bridged);

					const valueUsd = new D(originalAmount).plus(q.supportAmount).mul(origPrice);
					const paidUsd = new D(q.totalAmount).mul(payerPrice);
					expect(paidUsd.gte(valueUsd.plus(q.bridgeFeeUsd))).toBe(true);
					// Upper bound: one unit per rounding (subtotal and bridge fee).
					const exactTotal = valueUsd.div(payerPrice).plus(new D(q.bridgeFeeUsd).div(payerPrice));
					expect(new D(q.totalAmount).minus(exactTotal).lt(ulp(payerDecimals).mul(2))).toBe(true);
					// The parts add up: total >= converted original + bridge fee in the payer token.
					expect(new D(q.totalAmount).gte(new D(q.originalAmountInPayerToken).plus(q.bridgeFeeInPayerToken))).toBe(true);
					if (bridged) {
						const exactFee = new D(DEFAULT_BRIDGE_FEE.flatUsd).plus(new D(originalAmount).plus(q.supportAmount).mul(origPrice).mul(DEFAULT_BRIDGE_FEE.bps).div(10000));
						expect(new D(q.bridgeFeeUsd).gte(exactFee)).toBe(true);
						expect(new D(q.bridgeFeeUsd).minus(exactFee).lt(ulp(6))).toBe(true);
						expect(new D(q.bridgeFee).mul(origPrice).gte(q.bridgeFeeUsd)).toBe(true);
					} else {
						expect(q.bridgeFeeUsd).toBe("0");
					}
				},
			),
			{ numRuns: 500 },
		);
	});

	it("keeps every digit of large 18-decimal amounts", () => {
		const t = token("eth", "net1", 18, "3000");
		const usdc = token("usdc", "net1", 6, "1");
		const amount = "1234567890123456789012.123456789012345678";
		const q = computeQuote({ originalAmount: amount, original: t, payer: t, supportPercent: "0", bridge });
		expect(q.totalAmount).toBe(amount);
		const inUsdc = computeQuote({ originalAmount: amount, original: t, payer: usdc, supportPercent: "0", bridge });
		// 3000 * amount = ...370.370367037037034, rounded up to 6 places.
		expect(inUsdc.totalAmount).toBe("3703703670370370367036370.370368");
	});

	it("needs prices only for conversions", () => {
		const a = token("a", "net1", 6);
		const b = token("b", "net1", 6, "1");
		expect(() => computeQuote({ originalAmount: "1", original: a, payer: b, supportPercent: "0", bridge })).toThrow(PriceUnavailableError);
		const bridged = token("c", "net2", 6, "1");
		expect(() => computeQuote({ originalAmount: "1", original: { ...a, priceUsd: "0" }, payer: bridged, supportPercent: "0", bridge })).toThrow(PriceUnavailableError);
	});

	it("quotes a worked example", () => {
		// 100 USDC on net1 paid in ETH on net2 at 2500 USD, 1 % support, 0.5 USD + 10 bps bridge.
		const q = computeQuote({
			originalAmount: "100",
			original: token("usdc", "net1", 6, "1"),
			payer: token("eth", "net2", 18, "2500"),
			supportPercent: "1",
			bridge,
		});
		expect(q).toMatchObject({
			originalAmount: "100",
			supportAmount: "1",
			originalAmountInPayerToken: "0.04",
			bridgeFeeUsd: "0.601",
			bridgeFee: "0.601",
			bridgeFeeInPayerToken: "0.0002404",
			totalAmount: "0.0406404",
			requiresBridge: true,
		});
	});
});
