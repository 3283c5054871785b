import { SIGNED_DECIMAL_PATTERN } from "../../../lib/money";
import { accountBalance, RECORDABLE_KINDS, signProblem, summaryTotals, tokenTotals, usdcValue } from "../../../lib/withdrawals/ledger";
import { money } from "../../../lib/money";

describe("withdrawals ledger rules", () => {
	it("accepts signed canonical decimals only", () => {
		for (const ok of ["0", "1", "-1", "-0.5", "0.000000000000000001", "-123456789.123456789012345678"]) expect([ok, SIGNED_DECIMAL_PATTERN.test(ok)]).toEqual([ok, true]);
		for (const bad of ["-0", "01", "-01", "1.", "-", "+1", "1e3", "0.1234567890123456789", " 1"]) expect([bad, SIGNED_DECIMAL_PATTERN.test(bad)]).toEqual([bad, false]);
	});

	it("gives each kind its sign and refuses zero", () => {
		expect(signProblem("credit", "1")).toBeNull();
		expect(signProblem("refund", "0.1")).toBeNull();
		expect(signProblem("credit", "-1")).toBe("mustBePositive");
		for (const kind of ["sweep", "withdrawal", "fee"] as const) {
			expect(signProblem(kind, "-1")).toBeNull();
			expect(signProblem(kind, "1")).toBe("mustBeNegative");
		}
		expect(signProblem("fee", "0")).toBe("zero");
	});

	it("sums exactly and reserves pending requests", () => {
		expect(accountBalance(["0.1", "0.2", "-0.000000000000000001"], ["0.1"])).toEqual({ balance: "0.299999999999999999", reserved: "0.1", held: "0", available: "0.199999999999999999" });
		// Funds in a sweep in flight, or of a checkout with its own withdrawal address, are not available.
		expect(accountBalance(["0.5"], ["0.1"], ["0.25", "0.15"])).toEqual({ balance: "0.5", reserved: "0.1", held: "0.4", available: "0" });
	});

	it("folds kinds into earned, withdrawn, fees and balance, and values only priced tokens", () => {
		const totals = tokenTotals([
			{ networkId: "n", tokenId: "a", kind: "credit", amount: "2" },
			{ networkId: "n", tokenId: "a", kind: "sweep", amount: "-1.5" },
			{ networkId: "n", tokenId: "a", kind: "refund", amount: "0.5" },
			{ networkId: "n", tokenId: "a", kind: "fee", amount: "-0.01" },
			{ networkId: "n", tokenId: "b", kind: "credit", amount: "7" },
		]);
		const a = totals.find(t => t.tokenId === "a")!;
		expect([a.earned.toFixed(), a.withdrawn.toFixed(), a.fees.toFixed(), a.balance.toFixed()]).toEqual(["2", "1", "0.01", "0.99"]);
		expect(summaryTotals(totals, new Map([["a", "3"], ["b", null]]))).toEqual({ totalEarnedUsdc: "6", totalWithdrawnUsdc: "3", remainingUsdc: "2.97" });
		expect(usdcValue(money("0.1234567"), "1")).toBe("0.123456");
		expect(usdcValue(money("1"), null)).toBeNull();
	});

	it("counts a reorg's reversal against what was earned, a recredit for it, and lets the balance go negative", () => {
		expect(signProblem("reversal", "-1")).toBeNull();
		expect(signProblem("reversal", "1")).toBe("mustBeNegative");
		expect(signProblem("recredit", "1")).toBeNull();
		expect(signProblem("recredit", "-1")).toBe("mustBePositive");
		expect(RECORDABLE_KINDS).not.toContain("reversal");
		expect(RECORDABLE_KINDS).not.toContain("recredit");
		// Credited 2, swept 2 to the merchant, then a deep reorg took the 2 back: −2, nothing withdrawable.
		const [t] = tokenTotals([
			{ networkId: "n", tokenId: "a", kind: "credit", amount: "2" },
			{ networkId: "n", tokenId: "a", kind: "sweep", amount: "-2" },
			{ networkId: "n", tokenId: "a", kind: "reversal", amount: "-2" },
		]);
		expect([t.earned.toFixed(), t.withdrawn.toFixed(), t.balance.toFixed()]).toEqual(["0", "2", "-2"]);
		expect(accountBalance(["2", "-2", "-2"], [])).toEqual({ balance: "-2", reserved: "0", held: "0", available: "-2" });
		const [back] = tokenTotals([
			{ networkId: "n", tokenId: "a", kind: "credit", amount: "2" },
			{ networkId: "n", tokenId: "a", kind: "reversal", amount: "-2" },
			{ networkId: "n", tokenId: "a", kind: "recredit", amount: "2" },
		]);
		expect([back.earned.toFixed(), back.withdrawn.toFixed(), back.balance.toFixed()]).toEqual(["2", "0", "2"]);
	});
});
