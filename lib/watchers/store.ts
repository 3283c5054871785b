/**
 * A watcher's own tables (chain_cursors, chain_transfers): the lease that makes one watcher the
 * writer of a network, and the cursor committed in the same DB transaction as the transfers of
 * the range it covers. Every write of a leader is fenced: it names the lease token it holds, and
 * a write after another watcher took over (a new, higher token) changes nothing and fails with
 * LeaseLostError, so two watchers never both record for one network.
 */
import { Attributes, Op, QueryOptions, Sequelize, Transaction, UniqueConstraintError } from "sequelize";
import { inTransaction } from "../db";
import { toAmountString } from "../money";
import { selectRows } from "../payments/rows";
import type { Models } from "../../models";
import type { ChainCursor, ChainTransfer, ChainTransferReported } from "../../models/chain.model";
import { MEMPOOL_BLOCK_HASH } from "../chains/source";
import type { RecentBlocks } from "./reorg";

export class LeaseLostError extends Error {
	constructor(networkId: string) {
		super(`Lease on network ${networkId} was lost to another watcher`);
		this.name = "LeaseLostError";
	}
}

export interface Lease {
	networkId: string;
	owner: string;
	token: number;
}

/**
 * Creates the network's cursor row once (several watchers may race: the primary key decides).
 * True when the cursor has a block already (the network was read before).
 */
export async function ensureCursor(models: Models, networkId: string, chainType: string, now: Date): Promise<boolean> {
	const row = await models.ChainCursor.findByPk(networkId, { attributes: ["networkId", "blockNumber"] });
	if (row) return row.blockNumber !== null;
	try {
		await models.ChainCursor.create({ networkId, chainType, blockNumber: null, blockHash: null, recentBlocks: [], leaseOwner: null, leaseToken: 0, leaseUntil: null, reconciledAt: null, updatedAt: now });
	} catch (err) {
		if (!(err instanceof UniqueConstraintError)) throw err;
	}
	return false;
}

/**
 * Takes the lease when it is free or expired (a new fencing token), or renews it for its holder.
 * Lease times are wall-clock (`nowMs`), not the payments clock: they are about process liveness.
 */
export async function acquireLease(models: Models, networkId: string, owner: string, leaseMs: number, nowMs: number, freeForMs = 0): Promise<Lease | null> {
	const now = new Date(nowMs);
	const until = new Date(nowMs + leaseMs);
	// freeForMs > 0 (a replica at or above its fair share, lib/watchers/share.ts): only a lease
	// free or expired for that long (a released lease's leaseUntil is its release time), so a
	// replica below its share takes it first.
	const free = freeForMs > 0 ? [{ leaseUntil: null }, { leaseUntil: { [Op.lt]: new Date(nowMs - freeForMs) } }] : [{ leaseOwner: null }, { leaseUntil: null }, { leaseUntil: { [Op.lt]: now } }];
	const [taken] = await models.ChainCursor.update(
		{ leaseOwner: owner, leaseToken: Sequelize.literal("leaseToken + 1") as unknown as number, leaseUntil: until },
		{ where: { networkId, [Op.or]: free } },
	);
	const row = await models.ChainCursor.findByPk(networkId, { attributes: ["leaseOwner", "leaseToken", "leaseUntil"] });
	if (!row || row.leaseOwner !== owner) return null;
	if (taken === 0) {
		// Already ours (a restart with the same owner id would not be: owner ids are per process).
		const renewed = await renewLease(models, { networkId, owner, token: row.leaseToken }, leaseMs, nowMs);
		return renewed ? { networkId, owner, token: row.leaseToken } : null;
	}
	return { networkId, owner, token: row.leaseToken };
}

/**
 * Extends the lease while it is still held with this token; false: it was lost (taken by another
 * owner, or released). A lease that ran out but that nobody took since is still this holder's:
 * every take bumps the token, so an unchanged token proves no other holder wrote in between (the
 * fence). Its holder may then have been starved past the expiry (a busy machine, a long start-up,
 * a queue of writes ahead of the renewal); it keeps the lease instead of dropping and retaking it.
 */
export async function renewLease(models: Models, lease: Lease, leaseMs: number, nowMs: number): Promise<boolean> {
	const [n] = await models.ChainCursor.update(
		{ leaseUntil: new Date(nowMs + leaseMs) },
		{ where: { networkId: lease.networkId, leaseOwner: lease.owner, leaseToken: lease.token } },
	);
	return n === 1;
}

/**
 * Gives the lease up at a graceful stop, so a standby takes over at once. With `nowMs` (a
 * watcher), the lease is recorded as held until then rather than cleared: its network stays
 * "watched" through a restart or a rolling update (lib/watchers/watched.ts, WATCHED_GRACE_MS).
 */
export async function releaseLease(models: Models, lease: Lease, nowMs?: number): Promise<void> {
	await models.ChainCursor.update(
		{ leaseOwner: null, leaseUntil: nowMs === undefined ? null : new Date(nowMs) },
		{ where: { networkId: lease.networkId, leaseOwner: lease.owner, leaseToken: lease.token } },
	);
}

export async function loadCursor(models: Models, networkId: string): Promise<ChainCursor | null> {
	return models.ChainCursor.findByPk(networkId);
}

export interface NewTransfer {
	networkId: string;
	txHash: string;
	logIndex: number;
	blockNumber: number;
	blockHash: string;
	toAddress: string;
	tokenId: string;
	amount: string;
}

/**
 * Moves the cursor to (number, hash) and stores the transfers of the range, in one DB
 * transaction, fenced by the lease token. A transfer stored before (a range read again after a
 * crash) is skipped by the unique index.
 */
export async function commitRange(
	sequelize: Sequelize,
	models: Models,
	lease: Lease,
	cursor: { number: number; hash: string; recent: RecentBlocks },
	transfers: readonly NewTransfer[],
	now: Date,
): Promise<void> {
	await inTransaction(sequelize, async t => {
		const [n] = await models.ChainCursor.update(
			{ blockNumber: cursor.number, blockHash: cursor.hash, recentBlocks: cursor.recent, updatedAt: now },
			{ where: { networkId: lease.networkId, leaseOwner: lease.owner, leaseToken: lease.token }, transaction: t },
		);
		if (n !== 1) throw new LeaseLostError(lease.networkId);
		if (transfers.length === 0) return;
		await insertTransfers(models, transfers, now, t);
	});
}

/**
 * Stores new transfers (status active, not yet reported), skipping any stored before (unique
 * index: INSERT IGNORE / INSERT OR IGNORE). The statement bulkCreate would send, without its
 * model instance per row: at thousands of transfers a second building them was most of a
 * watcher's CPU (docs/benchmarks.md, TON chain watcher). Values go through the same column types
 * (validation, DATE(3) with milliseconds, booleans) and the amount through the money setter's
 * canonical form, so a row is stored exactly as bulkCreate stored it. The values every row shares
 * (status, reported, pending, the times) and those a range repeats (network, token, block, amount)
 * are escaped once, by those types, not once a row.
 */
async function insertTransfers(models: Models, transfers: readonly NewTransfer[], now: Date, transaction: Transaction): Promise<void> {
	const model = models.ChainTransfer;
	const sequelize = model.sequelize!;
	const queryInterface = sequelize.getQueryInterface();
	const attributes = model.getAttributes();
	const generator = queryInterface.queryGenerator as { escape(value: unknown, field: unknown, options: { context: string }): string };
	const escaped = (value: unknown, attribute: keyof typeof attributes) => sequelize.literal(generator.escape(value, attributes[attribute], { context: "INSERT" }));
	// Values repeated across a range's rows (network, token, block, its hash, the usual amount) escaped once each.
	const memo = new Map<string, ReturnType<typeof escaped>>();
	const once = (value: string | number, attribute: "networkId" | "tokenId" | "blockNumber" | "blockHash" | "amount") => {
		const key = `${attribute}\u0000${value}`;
		let lit = memo.get(key);
		if (!lit) memo.set(key, (lit = escaped(value, attribute)));
		return lit;
	};
	const status = escaped("active", "status");
	const reported = escaped("none", "reported");
	const pending = escaped(true, "pending");
	const createdAt = escaped(now, "createdAt");
	const updatedAt = escaped(now, "updatedAt");
	for (let i = 0; i < transfers.length; i += 500) {
		const rows = transfers.slice(i, i + 500).map(tr => ({
			id: null,
			networkId: once(tr.networkId, "networkId"),
			txHash: tr.txHash,
			logIndex: tr.logIndex,
			blockNumber: once(tr.blockNumber, "blockNumber"),
			blockHash: once(tr.blockHash, "blockHash"),
			toAddress: tr.toAddress,
			tokenId: once(tr.tokenId, "tokenId"),
			amount: once(toAmountString(String(tr.amount)), "amount"),
			status,
			reported,
			reportedConfirmations: null,
			pending,
			createdAt,
			updatedAt,
		}));
		// ignoreDuplicates is read by bulkInsertQuery (as for bulkCreate) but missing from the QueryOptions type.
		await queryInterface.bulkInsert(model.getTableName(), rows, { transaction, ignoreDuplicates: true } as QueryOptions, attributes);
	}
}

/**
 * A reorg: the cursor goes back to the common ancestor and every transfer seen above it becomes
 * `reverted` (kept). Those the payments side had heard of stay pending until it hears the revert.
 */
export async function rewindTo(sequelize: Sequelize, models: Models, lease: Lease, ancestor: { number: number; hash: string; recent: RecentBlocks }, now: Date): Promise<number> {
	return inTransaction(sequelize, async t => {
		const [n] = await models.ChainCursor.update(
			{ blockNumber: ancestor.number, blockHash: ancestor.hash, recentBlocks: ancestor.recent, updatedAt: now },
			{ where: { networkId: lease.networkId, leaseOwner: lease.owner, leaseToken: lease.token }, transaction: t },
		);
		if (n !== 1) throw new LeaseLostError(lease.networkId);
		const above = { networkId: lease.networkId, status: "active", blockNumber: { [Op.gt]: ancestor.number } };
		const [told] = await models.ChainTransfer.update({ status: "reverted", pending: true, updatedAt: now }, { where: { ...above, reported: { [Op.ne]: "none" } }, transaction: t });
		const [untold] = await models.ChainTransfer.update({ status: "reverted", pending: false, updatedAt: now }, { where: above, transaction: t });
		return told + untold;
	});
}

/** A network's stored cursor and lease as support sees them (`watcher-*.support.cursors`). */
export interface SupportCursor {
	networkId: string;
	slug: string | null;
	chainType: string;
	blockNumber: number | null;
	leaseOwner: string | null;
	leaseUntil: string | null;
	updatedAt: string | null;
}

/** A stored transfer as support sees it (`watcher-*.support.transfers`). */
export interface SupportTransfer {
	networkId: string;
	slug: string | null;
	txHash: string;
	logIndex: number;
	blockNumber: number;
	toAddress: string;
	tokenId: string;
	amount: string;
	status: string;
	reported: string;
	pending: boolean;
}

/** `watcher-*.support.rewind`: the cursor moved from `from` back to `to` (block `hash`). */
export interface SupportRewind {
	networkId: string;
	slug: string;
	from: number;
	to: number;
	hash: string;
}

export type ReplayRewind = { ok: true; from: number; to: number } | { ok: false; reason: string };

/**
 * Support's replay of a range (REPL `watchers rewind`, docs/operations.md): the cursor goes back
 * to `target` (a block the chain has now) so every block after it is read again, and the lease is
 * taken from whoever holds it (a new fencing token, no owner). A leader in the middle of a step
 * so cannot write its older cursor over this one: its next write or renewal fails, it stands by,
 * and the next holder (any replica) reads on from `target`. Transfers stored before are kept and
 * skipped when read again (unique index); one missed the first time is stored and reported like
 * any other. Only backwards: a cursor never skips blocks.
 */
export async function rewindForReplay(sequelize: Sequelize, models: Models, networkId: string, target: { number: number; hash: string }, now: Date): Promise<ReplayRewind> {
	return inTransaction(sequelize, async t => {
		const row = await models.ChainCursor.findByPk(networkId, { transaction: t, lock: t.LOCK.UPDATE });
		if (!row || row.blockNumber === null) return { ok: false, reason: "the network has no cursor yet: nothing was read, nothing to replay" };
		if (target.number >= row.blockNumber) return { ok: false, reason: `block ${target.number} is not before the cursor (block ${row.blockNumber}): a rewind only goes back` };
		const recent = row.recentBlocks.filter(([n]) => n < target.number);
		recent.push([target.number, target.hash]);
		await models.ChainCursor.update(
			{
				blockNumber: target.number,
				blockHash: target.hash,
				recentBlocks: recent,
				leaseOwner: null,
				// Free to take at once (no owner), and still "watched" meanwhile (lib/watchers/watched.ts): wall clock, like every lease time.
				leaseUntil: new Date(),
				leaseToken: Sequelize.literal("leaseToken + 1") as unknown as number,
				updatedAt: now,
			},
			{ where: { networkId }, transaction: t },
		);
		return { ok: true, from: row.blockNumber, to: target.number };
	});
}

/** Transfers a watcher stored with this transaction hash (as given or lower case) on the given networks. */
export async function transfersByHash(models: Models, networkIds: string[], txHash: string): Promise<ChainTransfer[]> {
	if (networkIds.length === 0) return [];
	return models.ChainTransfer.findAll({ where: { networkId: networkIds, txHash: [...new Set([txHash, txHash.toLowerCase()])] }, order: [["id", "ASC"]], limit: 100 });
}

/**
 * Transfers the payments side still has to hear about, oldest first: plain rows as a read of the
 * model gives them (amount normalised by its getter), without a model instance per row (a burst
 * reads thousands).
 */
export async function pendingTransfers(models: Models, networkId: string, limit: number, afterId = 0): Promise<Array<Attributes<ChainTransfer>>> {
	return selectRows(models.ChainTransfer, { networkId, pending: true }, undefined, { after: ["id", afterId], orderBy: "id", limit });
}

/** Records what the payments side acknowledged (no fencing needed: reports are idempotent). */
export async function markReported(models: Models, ids: readonly number[], reported: ChainTransferReported, pending: boolean, confirmations: number | null, now: Date): Promise<void> {
	if (ids.length === 0) return;
	await models.ChainTransfer.update({ reported, pending, reportedConfirmations: confirmations, updatedAt: now }, { where: { id: { [Op.in]: [...ids] } } });
}

/** Sum of the native amounts seen (not reverted) per address up to a block: what reconciliation compares balances with. */
export async function seenNativeAmounts(models: Models, networkId: string, tokenId: string, addresses: readonly string[], upToBlock: number): Promise<Map<string, string[]>> {
	const rows = await models.ChainTransfer.findAll({
		where: { networkId, tokenId, status: "active", toAddress: { [Op.in]: [...addresses] }, blockNumber: { [Op.lte]: upToBlock } },
		attributes: ["toAddress", "amount"],
	});
	const out = new Map<string, string[]>();
	for (const r of rows) out.set(r.toAddress, [...(out.get(r.toAddress) ?? []), r.amount]);
	return out;
}

/** Stores a transfer found by reconciliation (fenced like a range). */
export async function recordReconciled(sequelize: Sequelize, models: Models, lease: Lease, transfer: NewTransfer, now: Date): Promise<void> {
	await inTransaction(sequelize, async t => {
		const [n] = await models.ChainCursor.update({ reconciledAt: now }, { where: { networkId: lease.networkId, leaseOwner: lease.owner, leaseToken: lease.token }, transaction: t });
		if (n !== 1) throw new LeaseLostError(lease.networkId);
		await insertTransfers(models, [transfer], now, t);
	});
}

/**
 * Unconfirmed transfers as the node's mempool shows them now, after the range up to the head was
 * stored (so a transaction that left the mempool because it was mined is already in a block row):
 * - new sightings are stored (block hash MEMPOOL_BLOCK_HASH, block number 0);
 * - a stored sighting whose transaction is now in a block is `superseded` (the payments side
 *   drops it when it hears of the block's transfer: nothing to report);
 * - a stored sighting neither in the mempool nor in a block was dropped (replaced, double-spent,
 *   evicted): `reverted`, reported like a reorg.
 * Fenced by the lease like every write of the leader.
 */
export async function syncMempool(sequelize: Sequelize, models: Models, lease: Lease, seen: readonly NewTransfer[], now: Date): Promise<{ added: number; superseded: number; dropped: number }> {
	return inTransaction(sequelize, async t => {
		const [n] = await models.ChainCursor.update({ updatedAt: now }, { where: { networkId: lease.networkId, leaseOwner: lease.owner, leaseToken: lease.token }, transaction: t });
		if (n !== 1) throw new LeaseLostError(lease.networkId);
		const stored = await models.ChainTransfer.findAll({ where: { networkId: lease.networkId, blockHash: MEMPOOL_BLOCK_HASH }, transaction: t });
		const key = (x: { txHash: string; logIndex: number }) => `${x.txHash}:${x.logIndex}`;
		const known = new Set(stored.map(key));
		const inPool = new Set(seen.map(key));
		const fresh = seen.filter(x => !known.has(key(x)));
		if (fresh.length) {
			await insertTransfers(models, fresh, now, t);
		}
		let superseded = 0;
		let dropped = 0;
		for (const row of stored) {
			if (row.status !== "active" || inPool.has(key(row))) continue;
			const mined = await models.ChainTransfer.count({ where: { networkId: lease.networkId, txHash: row.txHash, logIndex: row.logIndex, blockHash: { [Op.ne]: MEMPOOL_BLOCK_HASH }, status: "active" }, transaction: t });
			if (mined > 0) {
				row.status = "superseded";
				row.pending = false;
				superseded++;
			} else {
				row.status = "reverted";
				row.pending = row.reported !== "none";
				dropped++;
			}
			row.updatedAt = now;
			await row.save({ transaction: t });
		}
		return { added: fresh.length, superseded, dropped };
	});
}
