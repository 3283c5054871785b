/**
 * A checkout keeps its confirmation count once credited (docs/payments.md, the transaction's
 * `confirmations`): checkouts credited before this shows it have `null` with nothing confirming,
 * and get what their standing counted credits had when credited (the least), as
 * lib/payments/detections.ts `refreshSummary` computes it. A checkout with a transfer still
 * confirming has a count already and is left alone (it is never null then).
 */
import { QueryInterface } from "sequelize";

export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
	await qi.sequelize.query(
		`UPDATE transactions SET confirmations = (
			SELECT MIN(c.confirmations) FROM transaction_credits c
			WHERE c.transactionId = transactions.id AND c.counted = 1 AND c.reversedAt IS NULL AND c.confirmations IS NOT NULL
		) WHERE confirmations IS NULL`,
	);
}

/** Nothing to undo: the older code recomputes the column at the checkout's next detection or credit. */
export async function down(): Promise<void> {}
