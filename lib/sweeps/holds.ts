/**
 * Holds: where the sweeper stops sending after failures (docs/withdrawals.md "Reverted sends and
 * holds"). A destination that refuses native coin (a contract whose receive() reverts), a token
 * deposit that cannot be swept (a blacklisted address, a paused token) or a token destination
 * that cannot receive: each reverted send, and each gas estimate that says the send would revert,
 * counts one failure there. After a failure nothing is sent there before `nextAttemptAt` (the
 * delay doubles with each failure: SWEEP_FAILURE_BACKOFF_MS × 2^(failures−1), at most 64×); after
 * SWEEP_MAX_FAILURES the hold is `blocked`: nothing is sent there until support clears it
 * (`sweeper-<chain>.support.clearHold`) or the merchant sets another address (a new address has no
 * hold). A confirmed send there deletes the hold: failures count only in a row.
 *
 * The records are in the database, not in memory, so a restart or a new leader does not start
 * counting again: no send is retried forever on anyone's gas.
 */
import { Op, UniqueConstraintError } from "sequelize";
import type { Models } from "../../models";
import type { SweepHold, SweepHoldScope } from "../../models/sweep.model";

export interface HoldKey {
	networkId: string;
	scope: SweepHoldScope;
	address: string;
	/** A deposit's token, a token destination's token; "" for native sends to a destination. */
	tokenId: string;
}

export interface HoldPolicy {
	/** Failures in a row after which the hold is blocked (no automatic retry). */
	maxFailures: number;
	/** The delay after the first failure; it doubles with each further one. */
	backoffMs: number;
}

/** Most doublings of the delay: 64 × the first. */
const MAX_DOUBLINGS = 6;

/** How long after its `failures`-th failure in a row a destination or deposit is tried again. */
export function holdDelayMs(failures: number, policy: HoldPolicy): number {
	return policy.backoffMs * 2 ** Math.min(Math.max(failures - 1, 0), MAX_DOUBLINGS);
}

/** Whether a hold keeps the sweeper from sending now. */
export function isHeld(hold: Pick<SweepHold, "blockedAt" | "nextAttemptAt"> | null | undefined, now: Date): boolean {
	return Boolean(hold && (hold.blockedAt || hold.nextAttemptAt.getTime() > now.getTime()));
}

export const holdKeyOf = (k: HoldKey) => `${k.scope}:${k.address}:${k.tokenId}`;

/** The holds of a network, by holdKeyOf (one query a step). */
export async function holdsOf(models: Models, networkId: string): Promise<Map<string, SweepHold>> {
	const rows = await models.SweepHold.findAll({ where: { networkId } });
	return new Map(rows.map(r => [holdKeyOf(r), r]));
}

/**
 * Counts one failure at `key`: the hold is created or its count raised, its next attempt pushed
 * back, and it is blocked once the count reaches the policy's maximum. `blockedNow` is true only
 * for the failure that blocked it (the one to alert on).
 */
export async function recordHoldFailure(models: Models, key: HoldKey, reason: string, policy: HoldPolicy, now: Date): Promise<{ hold: SweepHold; blockedNow: boolean }> {
	const where = { networkId: key.networkId, scope: key.scope, address: key.address, tokenId: key.tokenId };
	for (let attempt = 0; ; attempt++) {
		const existing = await models.SweepHold.findOne({ where });
		const failures = (existing?.failures ?? 0) + 1;
		const blockedNow = !existing?.blockedAt && failures >= policy.maxFailures;
		const fields = {
			failures,
			reason: reason.slice(0, 2000),
			nextAttemptAt: new Date(now.getTime() + holdDelayMs(failures, policy)),
			blockedAt: existing?.blockedAt ?? (blockedNow ? now : null),
			updatedAt: now,
		};
		try {
			if (existing) return { hold: await existing.update(fields), blockedNow };
			return { hold: await models.SweepHold.create({ ...where, ...fields, createdAt: now }), blockedNow };
		} catch (err) {
			// Created by another writer between the read and the insert: count on that row.
			if (!(err instanceof UniqueConstraintError) || attempt > 0) throw err;
		}
	}
}

/**
 * A runner's holds on its network for one step: read once (load), then kept up to date as it
 * counts failures and clears holds, so the rest of the step sees them. What a block is alerted
 * with stays the chain runner's own.
 */
export class StepHolds {
	private holds = new Map<string, SweepHold>();

	constructor(private readonly deps: { models: Models; network: { id: string }; settings: { maxFailures: number; failureBackoffMs: number }; now: () => Date }) {}

	async load(): Promise<void> {
		this.holds = await holdsOf(this.deps.models, this.deps.network.id);
	}

	get(key: HoldKey): SweepHold | undefined {
		return this.holds.get(holdKeyOf(key));
	}

	/** Whether the hold at `key` keeps the sweeper from sending now (backing off, or blocked). */
	held(key: HoldKey): boolean {
		return isHeld(this.get(key), this.deps.now());
	}

	/** Counts one failure at `key` (recordHoldFailure); `blockedNow` only for the failure that blocked it. */
	async fail(key: HoldKey, reason: string): Promise<{ hold: SweepHold; blockedNow: boolean }> {
		const { models, settings, now } = this.deps;
		const out = await recordHoldFailure(models, key, reason, { maxFailures: settings.maxFailures, backoffMs: settings.failureBackoffMs }, now());
		this.holds.set(holdKeyOf(key), out.hold);
		return out;
	}

	/** Sends at these keys were confirmed: the holds there (if any) are deleted. */
	async clear(keys: HoldKey[]): Promise<void> {
		const held = keys.filter(k => this.holds.has(holdKeyOf(k)));
		await clearHolds(this.deps.models, held);
		for (const k of held) this.holds.delete(holdKeyOf(k));
	}
}

/** A send there was confirmed: its failures no longer count. */
export async function clearHolds(models: Models, keys: HoldKey[]): Promise<void> {
	for (const k of keys) await models.SweepHold.destroy({ where: { networkId: k.networkId, scope: k.scope, address: k.address, tokenId: k.tokenId } });
}

/** Two spellings of one address: EVM's checksum case or not by default; a chain with other forms (TON's raw and user-friendly) passes its own. */
export type SameAddress = (a: string, b: string) => boolean;
const sameIgnoringCase: SameAddress = (a, b) => a.toLowerCase() === b.toLowerCase();

/** Support: every hold on `address` of a network (as destination or deposit) is lifted. Answers how many. */
export async function clearHoldsAt(models: Models, networkId: string, address: string, same: SameAddress = sameIgnoringCase): Promise<number> {
	const ids = (await models.SweepHold.findAll({ where: { networkId }, attributes: ["id", "address"] })).filter(h => same(h.address, address)).map(h => h.id);
	return ids.length === 0 ? 0 : models.SweepHold.destroy({ where: { id: { [Op.in]: ids } } });
}
