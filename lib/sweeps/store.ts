/**
 * The sweeper's records (sweep_wallets, sweeps, sweep_items). The rules that make a sweep safe to
 * interrupt anywhere (docs/withdrawals.md "Sweeper"):
 * - a sweep is planned in one DB transaction that takes the sending wallet's next nonce under its
 *   row lock and opens its items (UNIQUE openKey = deposit address + token): the same funds are
 *   never in two sweeps at once, and one wallet never uses a nonce twice;
 * - its signed bytes and hash are recorded (`signed`) BEFORE they are broadcast, so after a crash
 *   the same transaction is broadcast again (same nonce, same hash), never a new one;
 * - a fee bump re-signs with the same nonce: only one of the hashes can be mined;
 * - a withdrawal request is in at most one sweep at a time (UNIQUE openRequestKey, kept until the
 *   sweep is confirmed or proven failed);
 * - it ends `confirmed` (items closed, ledger written by the caller), `failed` (items closed,
 *   the funds are planned again later: only with proof it was not mined), or `stalled` (the
 *   nonce was taken by a transaction we do not know: items stay open for an operator);
 * - every write is fenced by the sweeper's lease (the network's sweep lease row, read under its
 *   lock in the same DB transaction): a node that lost the lease mid-step writes nothing
 *   (LeaseLostError), so two leaders never plan, record or end the same funds.
 */
import { Op, Sequelize, UniqueConstraintError, type Transaction } from "sequelize";
import { inTransaction } from "../db";
import { uuid } from "../ids";
import type { Models } from "../../models";
import { FUNDS_SWEEP_KINDS, OPEN_SWEEP_STATUSES, type Sweep, type SweepKind, type SweepStatus } from "../../models/sweep.model";
import { forUpdate } from "../payments/store";
import type { SweepOutcome } from "../metrics";
import { fromBaseUnits } from "../money";
import type { SweepableCheckout, SweeperPorts, SweepToken } from "./ports";
import { LeaseLostError, type Lease } from "../watchers/store";

/** The sweep lease a write is made under (lib/watchers/store.ts leases; `networkId` is the lease row's id). */
export type SweepFence = Lease;

/**
 * Refuses (LeaseLostError) unless `fence` still holds its lease row (same owner, same token), read
 * under the row's lock inside the write's own transaction: a takeover commits before the write
 * (it is refused) or after it (the write was made by the leader of that moment).
 */
export async function assertFence(models: Models, fence: SweepFence, t: Transaction): Promise<void> {
	const row = await models.ChainCursor.findOne({ where: { networkId: fence.networkId, leaseOwner: fence.owner, leaseToken: fence.token }, attributes: ["networkId"], ...forUpdate(t) });
	if (!row) throw new LeaseLostError(fence.networkId);
}

/** A checkout the sweeper found sweepable, with the amount it sweeps from it. */
export interface PlanItem extends Omit<SweepableCheckout, "completedAt"> {
	amount: string;
}

export interface PlanInput {
	networkId: string;
	kind: SweepKind;
	tokenId: string;
	fromAddress: string;
	toAddress: string;
	/** The wallet's nonce on chain: the floor of the stored counter (a wallet used elsewhere moves it). */
	chainNonce: number;
	items: PlanItem[];
	/** A withdrawal request this sweep pays (exact amount). */
	requestId?: string;
	/** Strategy 2: the bridge quote whose deposit address this sweep pays (exact amount). */
	bridge?: { provider: string; quoteId: string };
	/**
	 * Run first in the planning DB transaction; false: nothing is planned (lib/sweeps/reservations.ts:
	 * the funds must stay for pending withdrawal requests).
	 */
	admit?: (t: Transaction) => Promise<boolean>;
}

export const openKeyOf = (depositAddress: string, tokenId: string) => `${depositAddress}:${tokenId}`;

/** Deposits (address + token) already in a sweep in flight. */
export async function openKeys(models: Models, keys: readonly string[]): Promise<Set<string>> {
	if (keys.length === 0) return new Set();
	const rows = await models.SweepItem.findAll({ where: { openKey: { [Op.in]: [...keys] } }, attributes: ["openKey"] });
	return new Set(rows.map(r => r.openKey!));
}

/** Plans a sweep: nonce from the wallet's row lock, items opened. Null when another sweep holds one of the items. */
export async function planSweep(sequelize: Sequelize, models: Models, fence: SweepFence, input: PlanInput, now: Date): Promise<Sweep | null> {
	try {
		return await inTransaction(sequelize, async t => {
			await assertFence(models, fence, t);
			if (input.admit && !(await input.admit(t))) return null;
			let wallet = await models.SweepWallet.findOne({ where: { networkId: input.networkId, address: input.fromAddress }, ...forUpdate(t) });
			if (!wallet) {
				wallet = await models.SweepWallet.create({ networkId: input.networkId, address: input.fromAddress, nextNonce: input.chainNonce, updatedAt: now }, { transaction: t });
			}
			const nonce = Math.max(wallet.nextNonce, input.chainNonce);
			wallet.nextNonce = nonce + 1;
			wallet.updatedAt = now;
			await wallet.save({ transaction: t });
			const sweep = await models.Sweep.create(
				{
					id: uuid(),
					networkId: input.networkId,
					kind: input.kind,
					status: "planned",
					tokenId: input.tokenId,
					fromAddress: input.fromAddress,
					toAddress: input.toAddress,
					nonce,
					rawTx: null,
					txHash: null,
					hashes: [],
					feeStep: 0,
					gasUsed: null,
					feePaid: null,
					reason: null,
					requestId: input.requestId ?? null,
					openRequestKey: input.requestId ?? null,
					unseenPolls: 0,
					unseenSince: null,
					minedBlock: null,
					bridgeProvider: input.bridge?.provider ?? null,
					bridgeQuoteId: input.bridge?.quoteId ?? null,
					bridgeState: input.bridge ? "pending" : null,
					bridgeTxHash: null,
					broadcastAt: null,
					createdAt: now,
					updatedAt: now,
				},
				{ transaction: t },
			);
			await models.SweepItem.bulkCreate(
				input.items.map(i => ({ ...i, sweepId: sweep.id, openKey: openKeyOf(i.depositAddress, i.tokenId), createdAt: now })),
				{ transaction: t },
			);
			return sweep;
		});
	} catch (err) {
		// Another planner opened one of these deposits or this request first (or took the wallet row's first insert).
		if (err instanceof UniqueConstraintError) return null;
		throw err;
	}
}

/** Saves a sweep's changed fields in one fenced transaction. */
export async function saveSweep(sequelize: Sequelize, models: Models, fence: SweepFence, sweep: Sweep): Promise<void> {
	await inTransaction(sequelize, async t => {
		await assertFence(models, fence, t);
		await sweep.save({ transaction: t });
	});
}

/** Records signed bytes (before they are broadcast); a bump keeps the earlier hashes. */
export async function recordSigned(sequelize: Sequelize, models: Models, fence: SweepFence, sweep: Sweep, signed: { raw: string; hash: string }, feeStep: number, now: Date): Promise<void> {
	sweep.rawTx = signed.raw;
	sweep.txHash = signed.hash;
	sweep.hashes = [...sweep.hashes.filter(h => h !== signed.hash), signed.hash];
	sweep.feeStep = feeStep;
	if (sweep.status === "planned") sweep.status = "signed";
	sweep.updatedAt = now;
	await saveSweep(sequelize, models, fence, sweep);
}

export async function recordBroadcast(sequelize: Sequelize, models: Models, fence: SweepFence, sweep: Sweep, now: Date): Promise<void> {
	if (sweep.status === "signed") sweep.status = "broadcast";
	sweep.broadcastAt = sweep.broadcastAt ?? now;
	sweep.updatedAt = now;
	await saveSweep(sequelize, models, fence, sweep);
}

/**
 * One more poll that found the sweep's nonce used (or its inputs spent) and none of its own
 * transactions; answers the count and since when. `seen: true` (one of them was found) resets it.
 */
export async function recordUnseen(sequelize: Sequelize, models: Models, fence: SweepFence, sweep: Sweep, seen: boolean, now: Date): Promise<{ polls: number; since: Date | null }> {
	if (seen && sweep.unseenPolls === 0) return { polls: 0, since: null };
	sweep.unseenPolls = seen ? 0 : sweep.unseenPolls + 1;
	sweep.unseenSince = seen ? null : (sweep.unseenSince ?? now);
	sweep.updatedAt = now;
	await saveSweep(sequelize, models, fence, sweep);
	return { polls: sweep.unseenPolls, since: sweep.unseenSince };
}

/** Remembers the block a UTXO sweep's transaction was found in (null: it left the chain). */
export async function recordMinedBlock(sequelize: Sequelize, models: Models, fence: SweepFence, sweep: Sweep, blockHash: string | null, now: Date): Promise<void> {
	if (sweep.minedBlock === blockHash) return;
	sweep.minedBlock = blockHash;
	sweep.updatedAt = now;
	await saveSweep(sequelize, models, fence, sweep);
}

/**
 * Ends a sweep. confirmed / failed: its items and its request are closed (a failed sweep's funds
 * and request may be planned again). stalled: both stay open (an operator decides, docs/operations.md).
 * False when it had ended already.
 */
export async function finishSweep(sequelize: Sequelize, models: Models, fence: SweepFence | null, sweep: Sweep, status: Extract<SweepStatus, "confirmed" | "failed" | "stalled">, fields: { txHash?: string; gasUsed?: string; feePaid?: string; reason?: string }, now: Date): Promise<boolean> {
	return inTransaction(sequelize, async t => {
		if (fence) await assertFence(models, fence, t);
		const row = await models.Sweep.findByPk(sweep.id, forUpdate(t));
		if (!row || row.status === "confirmed" || row.status === "failed" || row.status === status) return false;
		if (row.status === "planned") await releaseNonce(models, row, now, t);
		row.status = status;
		if (fields.txHash) row.txHash = fields.txHash;
		row.gasUsed = fields.gasUsed ?? row.gasUsed;
		row.feePaid = fields.feePaid ?? row.feePaid;
		row.reason = fields.reason ?? null;
		row.updatedAt = now;
		if (status !== "stalled") row.openRequestKey = null;
		await row.save({ transaction: t });
		if (status !== "stalled") await models.SweepItem.update({ openKey: null }, { where: { sweepId: row.id }, transaction: t });
		sweep.status = row.status;
		return true;
	});
}

/**
 * A planned sweep was never signed, so never sent: its nonce goes back to the wallet when no
 * later sweep took the next one (the record keeps a negative placeholder nonce), else the wallet's next transaction would wait forever behind a
 * nonce nobody sends. (A later sweep already planned keeps its nonce; the gap then stays until
 * the wallet's counter is reset from the chain: docs/withdrawals.md "Reverted sends and holds".)
 */
async function releaseNonce(models: Models, row: Sweep, now: Date, t: Transaction): Promise<void> {
	const wallet = await models.SweepWallet.findOne({ where: { networkId: row.networkId, address: row.fromAddress }, ...forUpdate(t) });
	if (!wallet || wallet.nextNonce !== row.nonce + 1) return;
	// The record gives up its nonce too (UNIQUE wallet + nonce): a placeholder below every nonce the
	// wallet has used, chosen under the wallet's lock, so the next sweep can take the real one.
	const lowest = Number((await models.Sweep.min("nonce", { where: { networkId: row.networkId, fromAddress: row.fromAddress }, transaction: t })) ?? 0);
	row.nonce = Math.min(lowest, 0) - 1;
	wallet.nextNonce = wallet.nextNonce - 1;
	wallet.updatedAt = now;
	await wallet.save({ transaction: t });
}

/**
 * Takes deposits out of a planned (never signed) sweep, e.g. the deposits that make a batch
 * revert; their funds are free to be planned again. False when the sweep was signed meanwhile.
 */
export async function dropItems(sequelize: Sequelize, models: Models, fence: SweepFence, sweep: Sweep, itemIds: number[], now: Date): Promise<boolean> {
	if (itemIds.length === 0) return true;
	return inTransaction(sequelize, async t => {
		await assertFence(models, fence, t);
		const row = await models.Sweep.findByPk(sweep.id, forUpdate(t));
		if (!row || row.status !== "planned") return false;
		await models.SweepItem.destroy({ where: { sweepId: row.id, id: { [Op.in]: itemIds } }, transaction: t });
		row.updatedAt = now;
		await row.save({ transaction: t });
		return true;
	});
}

/** Refuses to go on (LeaseLostError) once the service's heartbeat says the lease is gone. */
export function checkLease(fence: SweepFence, lost: AbortSignal | null): void {
	if (lost?.aborted) throw new LeaseLostError(fence.networkId);
}

/**
 * A step's first part on every chain: each sweep in flight carried one state further, oldest
 * first; one that cannot be is logged and reported (`onFailure`) and the others go on; a lost lease
 * ends the step.
 */
export async function advanceInFlight(
	ctx: { models: Models; network: { id: string; slug: string }; logger: { warn(...a: unknown[]): void }; onFailure?: (err: unknown) => void },
	fence: SweepFence,
	lost: AbortSignal | null,
	advance: (s: Sweep) => Promise<void>,
): Promise<void> {
	for (const s of await sweepsInFlight(ctx.models, ctx.network.id)) {
		checkLease(fence, lost);
		await advance(s).catch(err => {
			if (err instanceof LeaseLostError) throw err;
			ctx.logger.warn(`Sweep ${s.id} on ${ctx.network.slug}: ${(err as Error).message}`);
			ctx.onFailure?.(err);
		});
	}
	checkLease(fence, lost);
}

/** Sweeps of a network not ended yet, oldest first (stalled ones too: one of their transactions may still turn up). */
export async function sweepsInFlight(models: Models, networkId: string): Promise<Sweep[]> {
	return models.Sweep.findAll({ where: { networkId, status: { [Op.in]: [...OPEN_SWEEP_STATUSES] } }, order: [["createdAt", "ASC"]] });
}

/** Checkouts whose funds were swept (a confirmed sweep that moved them all: not a gas top-up, not a request's exact amount). */
export async function sweptTransactions(models: Models, transactionIds: readonly string[]): Promise<Set<string>> {
	if (transactionIds.length === 0) return new Set();
	const items = await models.SweepItem.findAll({ where: { transactionId: { [Op.in]: [...transactionIds] } }, attributes: ["sweepId", "transactionId"] });
	if (items.length === 0) return new Set();
	const confirmed = await models.Sweep.findAll({ where: { id: { [Op.in]: [...new Set(items.map(i => i.sweepId))] }, status: "confirmed", kind: { [Op.in]: [...FUNDS_SWEEP_KINDS] }, requestId: null }, attributes: ["id"] });
	const ok = new Set(confirmed.map(s => s.id));
	return new Set(items.filter(i => ok.has(i.sweepId)).map(i => i.transactionId));
}

/** The network's sweepable checkouts whose funds are not swept yet (at their deposit, or in a sweep in flight). */
export async function unsweptCheckouts(ports: Pick<SweeperPorts, "sweepable">, models: Models, networkId: string): Promise<SweepableCheckout[]> {
	const all = await ports.sweepable({ networkId });
	const swept = await sweptTransactions(models, all.map(c => c.transactionId));
	return all.filter(c => !swept.has(c.transactionId));
}

/** What a runner ends, signs and sends sweeps with. */
export interface SweepRunContext {
	sequelize: Sequelize;
	models: Models;
	now: () => Date;
	onOutcome?: (outcome: SweepOutcome) => void;
}

/** Ends a sweep (finishSweep) and reports its outcome, once: false when it had ended already. */
export async function endSweep(ctx: SweepRunContext, fence: SweepFence, s: Sweep, status: "confirmed" | "failed" | "stalled", fields: Parameters<typeof finishSweep>[5], outcome: SweepOutcome = status): Promise<boolean> {
	const ended = await finishSweep(ctx.sequelize, ctx.models, fence, s, status, fields, ctx.now());
	if (ended) ctx.onOutcome?.(outcome);
	return ended;
}

/** A sweep item: a settled checkout's `amount` (base units) of `token` at its deposit. */
export function planItem(c: SweepableCheckout, token: SweepToken, amount: bigint): PlanItem {
	return { transactionId: c.transactionId, organizationId: c.organizationId, mode: c.mode, depositAddress: c.depositAddress, derivationIndex: c.derivationIndex, tokenId: token.tokenId, amount: fromBaseUnits(amount, token.decimals) };
}

/**
 * A sweep's first states where the signed bytes are a JSON record in `rawTx` (TON, Polkadot):
 * planned -> signed by `sign` (null: nothing to send, the sweep ends failed as skipped; "later":
 * not this step), recorded BEFORE anything is sent; then signed -> broadcast once `send` succeeds
 * (a failure is logged as `failed.verb`, and the same bytes go again at the next step:
 * `failed.again` says so). True when the step is done with the sweep; false: the caller judges
 * its fate on chain.
 */
export async function signThenBroadcast<R>(
	ctx: SweepRunContext & { logger: { warn(...a: unknown[]): void } },
	fence: SweepFence,
	s: Sweep,
	sign: () => Promise<{ hash: string; record: R } | null | "later">,
	send: () => Promise<void>,
	failed: { verb: string; again: string },
): Promise<boolean> {
	if (s.status === "planned") {
		const signed = await sign();
		if (signed === "later") return true;
		if (!signed) {
			await endSweep(ctx, fence, s, "failed", { reason: "nothing to send, or not worth its fee" }, "skipped");
			return true;
		}
		await recordSigned(ctx.sequelize, ctx.models, fence, s, { raw: JSON.stringify(signed.record), hash: signed.hash }, 0, ctx.now());
	}
	const sent = () =>
		send().then(
			() => true,
			err => (ctx.logger.warn(`Sweep ${s.id}: ${failed.verb}: ${briefly(err)}; ${failed.again}`), false),
		);
	if (s.status === "signed" && (await sent())) {
		await recordBroadcast(ctx.sequelize, ctx.models, fence, s, ctx.now());
		ctx.onOutcome?.("broadcast");
		return true;
	}
	return false;
}

/** An error for a log line: its message, at most 200 characters. */
export function briefly(err: unknown): string {
	const text = err instanceof Error ? err.message : String(err);
	return text.length > 200 ? `${text.slice(0, 200)}...` : text;
}
