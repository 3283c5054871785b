/**
 * When a sweep that cannot be found is known to be taken over (docs/withdrawals.md "Failed only
 * with proof"): a lookup that answers "not found" is not proof (a lagging node, a block between two
 * calls). Only `proofPolls` consecutive polls over at least `proofMs`, each finding the sending
 * nonce used (UTXO: the inputs spent) and none of the sweep's own transactions, make it so. Even
 * then the sweep is `stalled` (an operator alert, its funds kept locked), never `failed`.
 */
import type { Sequelize } from "sequelize";
import type { Models } from "../../models";
import type { Sweep } from "../../models/sweep.model";
import type { SweepOutcome } from "../metrics";
import { finishSweep, recordUnseen, type SweepFence } from "./store";

export interface ProofRule {
	proofPolls: number;
	proofMs: number;
}

/** Pure: whether `polls` consecutive unseen polls since `since` are proof by `rule`. */
export function isProven(polls: number, since: Date | null, now: Date, rule: ProofRule): boolean {
	return since !== null && polls >= rule.proofPolls && now.getTime() - since.getTime() >= rule.proofMs;
}

/** A sweep stalled for an operator (error tracking sees it as its own kind of problem). */
export class SweepStalledError extends Error {
	constructor(
		readonly sweepId: string,
		readonly network: string,
		reason: string,
	) {
		super(`Sweep ${sweepId} on ${network} stalled: ${reason}`);
		this.name = "SweepStalledError";
	}
}

export interface StallContext {
	sequelize: Sequelize;
	models: Models;
	network: { slug: string };
	rule: ProofRule;
	now: () => Date;
	logger: { error(...a: unknown[]): void };
	onFailure?: (err: unknown) => void;
	onOutcome?: (outcome: SweepOutcome) => void;
}

/**
 * One poll's finding for a sweep none of whose transactions was found while its nonce / inputs are
 * taken: `seen` (one of them turned up after all) resets the count; otherwise it is counted, and once
 * proven the sweep is stalled and the operator alerted (log, error tracking, metric outcome).
 * `what` says what was taken, for the reason.
 */
export async function countUnseen(ctx: StallContext, fence: SweepFence, s: Sweep, seen: boolean, what: string): Promise<void> {
	const { sequelize, models, network, now, logger } = ctx;
	if (s.status === "stalled" && !seen) return; // alerted already; it stays as it is
	const { polls, since } = await recordUnseen(sequelize, models, fence, s, seen, now());
	if (seen || !isProven(polls, since, now(), ctx.rule)) return;
	const reason = `${what} by a transaction we do not know; none of this sweep's ${s.hashes.length} transaction(s) found in ${polls} polls since ${since!.toISOString()}. Funds stay locked until an operator resolves it (docs/operations.md "A stalled sweep")`;
	if (!(await finishSweep(sequelize, models, fence, s, "stalled", { reason }, now()))) return;
	ctx.onOutcome?.("stalled");
	logger.error(`ALERT sweep ${s.id} on ${network.slug} stalled: ${reason}`);
	ctx.onFailure?.(new SweepStalledError(s.id, network.slug, reason));
}
