/**
 * Withdrawals settings from the environment (docs/withdrawals.md "Configuration").
 */
import { wholeNumber } from "../env";

export interface WithdrawalsConfig {
	/** How often the ledger feed reads settled checkouts when no event woke it. 0: never (tests drive it). */
	feedPollMs: number;
	/**
	 * How far behind the clock the feed's cursor stays. A checkout's completedAt is stamped before
	 * its DB transaction commits, so one stamped earlier may become visible after a later one; rows
	 * younger than this are read again on the next pass (idempotently) instead of being passed by.
	 */
	feedLagMs: number;
	/** Settled checkouts read per page. */
	feedBatch: number;
}

export function withdrawalsConfigFromEnv(env: Record<string, string | undefined>): WithdrawalsConfig {
	return {
		feedPollMs: wholeNumber(env, "WITHDRAWALS_FEED_POLL_MS", 5_000, 0, 3_600_000),
		feedLagMs: wholeNumber(env, "WITHDRAWALS_FEED_LAG_MS", 120_000, 0, 86_400_000),
		feedBatch: wholeNumber(env, "WITHDRAWALS_FEED_BATCH", 200, 1, 1_000),
	};
}
