import { lastMonths, remaining, seriesStart, sumByToken, usdValue, volumeSeries } from "../../../lib/payments/dashboard";
import { money } from "../../../lib/money";

describe("dashboard maths", () => {
	it("lists the last 12 months up to the current one, across a year boundary", () => {
		const now = new Date("2031-02-15T12:00:00Z");
		expect(lastMonths(now)).toEqual(["2030-03", "2030-04", "2030-05", "2030-06", "2030-07", "2030-08", "2030-09", "2030-10", "2030-11", "2030-12", "2031-01", "2031-02"]);
		expect(seriesStart(now).toISOString()).toBe("2030-03-01T00:00:00.000Z");
	});

	it("zero-fills the series with string counts", () => {
		const series = volumeSeries(new Date("2031-02-01T00:00:00Z"), { "2031-01": 3, "2020-01": 9 });
		expect(series).toHaveLength(12);
		expect(series[10]).toEqual({ month: "2031-01", transactionCount: "3" });
		expect(series[11]).toEqual({ month: "2031-02", transactionCount: "0" });
		expect(series.every(s => typeof s.transactionCount === "string")).toBe(true);
	});

	it("sums exactly per token and values at the price, truncating to 6 places", () => {
		const sums = sumByToken([
			{ tokenId: "a", amount: "0.1" },
			{ tokenId: "a", amount: "0.2" },
			{ tokenId: "b", amount: "123456789012345678901234.000000000000000001" },
			{ tokenId: "c", amount: "5" },
		]);
		expect(sums.get("a")!.toFixed()).toBe("0.3");
		expect(sums.get("b")!.toFixed()).toBe("123456789012345678901234.000000000000000001");
		const value = usdValue(sums, new Map([["a", "3000"], ["b", "1"], ["c", null]]));
		expect(value).toEqual({ total: "123456789012345678902134", unpriced: ["c"] });
		expect(usdValue(new Map([["a", money("0.0000001")]]), new Map([["a", "1"]])).total).toBe("0");
	});

	it("never shows a negative remainder", () => {
		expect(remaining("10.5", "0")).toBe("10.5");
		expect(remaining("1", "2")).toBe("0");
	});
});
