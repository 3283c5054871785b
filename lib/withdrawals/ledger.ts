/**
 * The withdrawals ledger's rules (docs/withdrawals.md "Ledger"). Pure: kinds and their signs,
 * exact sums, what is available, and the summary's maths. Amounts are decimal strings in token
 * units; the sign says the direction:
 *   positive: adds to what the organization may withdraw (credit, refund, recredit);
 *   negative: takes away (sweep, withdrawal, fee, reversal).
 * `reversal` undoes (part of) a checkout's credit whose transfer a reorg deeper than the required
 * confirmations orphaned; `recredit` undoes a reversal when the transfer is mined again
 * (docs/withdrawals.md "Reversals").
 */
import { money, MoneyValue, toAmountString } from "../money";
import { USDC_DECIMALS } from "../payments/dashboard";

export const LEDGER_KINDS = ["credit", "sweep", "withdrawal", "fee", "refund", "reversal", "recredit"] as const;
export type LedgerKind = (typeof LEDGER_KINDS)[number];

export const WITHDRAWAL_REQUEST_STATUSES = ["pending", "completed", "failed"] as const;
export type WithdrawalRequestStatus = (typeof WITHDRAWAL_REQUEST_STATUSES)[number];

export const WITHDRAWAL_STRATEGIES = [1, 2] as const;

/** The sign each kind must carry: +1 adds, -1 takes away. Zero is never an entry. */
export const KIND_SIGN: Record<LedgerKind, 1 | -1> = { credit: 1, refund: 1, recredit: 1, sweep: -1, withdrawal: -1, fee: -1, reversal: -1 };

/** Kinds `withdrawals.record` takes (the sweeper's movements); reversals are written only with the checkout's change (lib/withdrawals/reversals.ts). */
export const RECORDABLE_KINDS = LEDGER_KINDS.filter(k => k !== "reversal" && k !== "recredit");

/** Kinds that change what was earned (a reversed credit was never earned), not what left. */
const EARNING_KINDS: readonly LedgerKind[] = ["credit", "reversal", "recredit"];

/** null when `amount` has the sign its kind requires, else why not. */
export function signProblem(kind: LedgerKind, amount: string): "zero" | "mustBePositive" | "mustBeNegative" | null {
	const d = money(amount);
	if (d.isZero()) return "zero";
	if (KIND_SIGN[kind] === 1 && d.isNeg()) return "mustBePositive";
	if (KIND_SIGN[kind] === -1 && d.isPos()) return "mustBeNegative";
	return null;
}

export function sumAmounts(amounts: Iterable<string>): MoneyValue {
	let total = money(0);
	for (const a of amounts) total = total.plus(money(a));
	return total;
}

export interface AccountBalance {
	/** Σ of the account's entries (what its deposits hold). */
	balance: string;
	/** Σ of its pending requests not being sent yet. */
	reserved: string;
	/**
	 * Funds that are not the merchant's to ask for: in sweeps in flight (a request being sent
	 * included) and at checkouts with their own withdrawal address (until swept).
	 */
	held: string;
	/** balance − reserved − held: what a new request may take. */
	available: string;
}

export function accountBalance(entries: Iterable<string>, pendingRequests: Iterable<string>, held: Iterable<string> = []): AccountBalance {
	const balance = sumAmounts(entries);
	const reserved = sumAmounts(pendingRequests);
	const kept = sumAmounts(held);
	return { balance: toAmountString(balance), reserved: toAmountString(reserved), held: toAmountString(kept), available: toAmountString(balance.minus(reserved).minus(kept)) };
}

/** The id of an account's lock row. */
export function accountKey(organizationId: string, networkId: string, tokenId: string): string {
	return `${organizationId}:${networkId}:${tokenId}`;
}

export interface KindSum {
	networkId: string;
	tokenId: string;
	kind: LedgerKind;
	amount: string;
}

export interface TokenTotals {
	networkId: string;
	tokenId: string;
	/** Σ credits, less reversals, plus recredits. */
	earned: MoneyValue;
	/** −Σ (sweeps + withdrawals + refunds): what left for the merchant, less what came back. */
	withdrawn: MoneyValue;
	/** −Σ fees. */
	fees: MoneyValue;
	/** Σ of every entry = earned − withdrawn − fees. */
	balance: MoneyValue;
}

/** Folds per-kind sums into per-(network, token) totals. */
export function tokenTotals(sums: KindSum[]): TokenTotals[] {
	const byKey = new Map<string, TokenTotals>();
	for (const s of sums) {
		const key = `${s.networkId}|${s.tokenId}`;
		let t = byKey.get(key);
		if (!t) byKey.set(key, (t = { networkId: s.networkId, tokenId: s.tokenId, earned: money(0), withdrawn: money(0), fees: money(0), balance: money(0) }));
		const amount = money(s.amount);
		t.balance = t.balance.plus(amount);
		if (EARNING_KINDS.includes(s.kind)) t.earned = t.earned.plus(amount);
		else if (s.kind === "fee") t.fees = t.fees.minus(amount);
		else t.withdrawn = t.withdrawn.minus(amount);
	}
	return [...byKey.values()];
}

/** amount × USD price, at USDC's 6 decimals (truncated); null without a price. */
export function usdcValue(amount: MoneyValue, priceUsd: string | null): string | null {
	if (priceUsd === null) return null;
	return toAmountString(amount.mul(money(priceUsd)), USDC_DECIMALS);
}

export interface SummaryTotals {
	totalEarnedUsdc: string;
	totalWithdrawnUsdc: string;
	remainingUsdc: string;
}

/** GET /withdrawals/summary (spec "Withdrawal summary"; its schema: lib/openapi/schemas.ts WithdrawalSummary). USDC values are null for a token without a price. */
export interface WithdrawalSummary {
	byNetwork: Array<{ networkId: string; networkName: string | null; totalAmount: string; totalUsdcValue: string | null }>;
	byToken: Array<{ tokenId: string; networkId: string; tokenSymbol: string | null; totalAmount: string; totalUsdcValue: string | null }>;
	totals: SummaryTotals;
}

/** The totals over priced tokens only (a token without a price is left out, never guessed). */
export function summaryTotals(totals: TokenTotals[], prices: Map<string, string | null>): SummaryTotals {
	let earned = money(0);
	let withdrawn = money(0);
	let remaining = money(0);
	for (const t of totals) {
		const price = prices.get(t.tokenId) ?? null;
		if (price === null) continue;
		const p = money(price);
		earned = earned.plus(t.earned.mul(p));
		withdrawn = withdrawn.plus(t.withdrawn.mul(p));
		remaining = remaining.plus(t.balance.mul(p));
	}
	return {
		totalEarnedUsdc: toAmountString(earned, USDC_DECIMALS),
		totalWithdrawnUsdc: toAmountString(withdrawn, USDC_DECIMALS),
		remainingUsdc: toAmountString(remaining, USDC_DECIMALS),
	};
}
