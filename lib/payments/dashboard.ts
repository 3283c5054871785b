/**
 * Dashboard maths (GET /dashboard/summary). Pure: months of the volume series and the USD value
 * of settled amounts, summed exactly (decimal.js through lib/money.ts, never SQL floats).
 */
import { money, MoneyValue, toAmountString } from "../money";
import type { TransactionStatus } from "./settlement";

/** One of the latest checkouts, with its link's and tokens' names (null when one is gone). */
export interface RecentTransaction {
	id: string;
	status: TransactionStatus;
	amount: string;
	amountReceived: string;
	createdAt: string;
	paymentLinkTitle: string | null;
	paymentLinkSlug: string | null;
	tokenSymbol: string | null;
	networkName: string | null;
	payerTokenSymbol: string | null;
	payerAmount: string;
}

/** GET /dashboard/summary (spec "Dashboard summary"; its schema: lib/openapi/schemas.ts DashboardSummary). */
export interface DashboardSummary {
	totals: { links: number; intents: number; transactions: number; totalEarnedUsdc: string; withdrawnUsdc: string; remainingUsdc: string };
	volumeSeries: Array<{ month: string; transactionCount: string }>;
	recentTransactions: RecentTransaction[];
}

export const SERIES_MONTHS = 12;
/** USD values carry USDC's 6 decimals, truncated (a total is never overstated). */
export const USDC_DECIMALS = 6;

/** `YYYY-MM` of the last `count` months up to and including `now`'s month (UTC), oldest first. */
export function lastMonths(now: Date, count = SERIES_MONTHS): string[] {
	const out: string[] = [];
	for (let i = count - 1; i >= 0; i--) {
		const d = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - i, 1));
		out.push(`${d.getUTCFullYear()}-${String(d.getUTCMonth() + 1).padStart(2, "0")}`);
	}
	return out;
}

/** First instant of the oldest month of the series. */
export function seriesStart(now: Date, count = SERIES_MONTHS): Date {
	return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - (count - 1), 1));
}

/** Zero-filled series; counts as strings (the spec's type). */
export function volumeSeries(now: Date, counts: Record<string, number>, count = SERIES_MONTHS): Array<{ month: string; transactionCount: string }> {
	return lastMonths(now, count).map(month => ({ month, transactionCount: String(counts[month] ?? 0) }));
}

/** Sums amounts per token exactly. */
export function sumByToken(rows: Array<{ tokenId: string; amount: string }>): Map<string, MoneyValue> {
	const out = new Map<string, MoneyValue>();
	for (const row of rows) out.set(row.tokenId, (out.get(row.tokenId) ?? money(0)).plus(money(row.amount)));
	return out;
}

/** Σ amount × price over tokens that have a price; tokens without one are reported, not guessed. */
export function usdValue(sums: Map<string, MoneyValue>, prices: Map<string, string | null>): { total: string; unpriced: string[] } {
	let total = money(0);
	const unpriced: string[] = [];
	for (const [tokenId, amount] of sums) {
		const price = prices.get(tokenId);
		if (!price) {
			if (!amount.isZero()) unpriced.push(tokenId);
			continue;
		}
		total = total.plus(amount.mul(money(price)));
	}
	return { total: toAmountString(total, USDC_DECIMALS), unpriced };
}

export function remaining(earned: string, withdrawn: string): string {
	const r = money(earned).minus(money(withdrawn));
	return r.gt(0) ? toAmountString(r, USDC_DECIMALS) : "0";
}
