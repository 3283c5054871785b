/**
 * Detections: transfers a chain watcher saw going to a checkout's deposit address, shown on the
 * checkout while they confirm (decisions.md "On-chain payments"). Payments-side database work,
 * next to the credit path in services/transactions.service.ts:
 * - first sight (below the required confirmations): a `confirming` row, the transaction shows
 *   the hash, the amount seen (`amountConfirming`) and n of m confirmations, and the intent goes
 *   to `processing` (payment_intent.processing);
 * - later reports raise the confirmation count;
 * - the credit (at the required confirmations) marks the row `credited` in the credit's own DB
 *   transaction and moves its amount from confirming to received;
 * - a reorg that orphans the block marks it `reverted` (kept, never credited); when nothing else
 *   is seen or received, the transaction shows nothing again and the intent goes back to
 *   requires_payment_method (payment_intent.requires_payment_method).
 * Every operation is idempotent on (networkId, txHash, logIndex, blockHash): watchers re-report.
 * Rows are locked in the payments order (withPaymentLocked: intent, link, transaction); a checkout's
 * detections are only written under its transaction's lock, so they are read without locks.
 */
import type { ServiceBroker } from "moleculer";
import { col, fn, Op, type Transaction as DbTx } from "sequelize";
import { chainParamsFor, codecFor } from "../chains";
import { MEMPOOL_BLOCK_HASH } from "../chains/source";
import type { App } from "../app";
import type { NetworkView, TokenView } from "../networks/view";
import { money, toAmountString } from "../money";
import type { Models } from "../../models";
import type { PaymentDetection, Transaction } from "../../models/transaction.model";
import { selectRows } from "./rows";
import { DeferredWrites, Effects, forUpdate, inSlices, moveIntent, withPaymentLocked } from "./store";

export interface DetectionKey {
	networkId: string;
	txHash: string;
	logIndex: number;
	blockHash: string;
}

export interface DetectionInput extends DetectionKey {
	blockNumber: number;
	transactionId: string;
	tokenId: string;
	/** Token units (decimal string). */
	amount: string;
	/** Whether the token is the checkout's payer token (others are recorded, not counted). */
	counted: boolean;
	confirmations: number;
	requiredConfirmations: number;
	/** The token's symbol, lower case, for the event's latestTransaction. */
	currency: string;
}

export type DetectOutcome = "recorded" | "updated" | "unchanged" | "final";

const keyWhere = (k: DetectionKey) => ({ networkId: k.networkId, txHash: k.txHash, logIndex: k.logIndex, blockHash: k.blockHash });

/**
 * The checkout's confirming summary, from its rows still confirming (counted ones only). With
 * nothing confirming, `confirmations` keeps what its standing counted credits had when credited
 * (the least of them; docs/payments.md), so a completed checkout still shows its count; null when
 * none reported one (simulations) or every credit was reversed.
 */
export async function refreshSummary(models: Models, t: DbTx, tx: Transaction, known?: KnownDetections): Promise<void> {
	const rows = known ? known.confirmingOf(tx.id).filter(r => r.counted) : await models.PaymentDetection.findAll({ where: { transactionId: tx.id, status: "confirming", counted: true }, transaction: t });
	let sum = money(0);
	let least: number | null = null;
	for (const row of rows) {
		sum = sum.plus(money(row.amount));
		least = least === null ? row.confirmations : Math.min(least, row.confirmations);
	}
	tx.amountConfirming = toAmountString(sum);
	if (least === null) {
		const credited = known ? known.creditedLeast.get(tx.id) : await models.TransactionCredit.min("confirmations", { where: { transactionId: tx.id, counted: true, reversedAt: null, confirmations: { [Op.ne]: null } }, transaction: t });
		least = credited === null || credited === undefined ? null : Number(credited);
	}
	tx.confirmations = least;
}

/**
 * A credit batch's reads of its checkouts' detections and credits, in one statement each instead
 * of one per credit (lib/payments/credits.ts), for checkouts credited once in the batch with their
 * credit rows already written: what settleDetection and refreshSummary would read for them.
 */
export class KnownDetections {
	private constructor(
		private readonly confirming: Map<string, PaymentDetection[]>,
		readonly creditedLeast: ReadonlyMap<string, number | null>,
		/** Where the detections' changes go (written at the batch's end, one statement). */
		readonly writes: DeferredWrites,
	) {}

	/**
	 * `detectedIds`: the checkouts among them that may have detections, those with a
	 * requiredConfirmations (recordDetection sets it with the first one, and nothing clears it);
	 * the others' detections are not read (none exist: settleDetection's rule too).
	 */
	static async load(models: Models, t: DbTx, transactionIds: string[], writes: DeferredWrites, detectedIds: string[] = transactionIds): Promise<KnownDetections> {
		if (transactionIds.length === 0) return new KnownDetections(new Map(), new Map(), writes);
		// Plain reads under the checkouts' locks (as refreshSummary's: no gap locks), as plain rows.
		const rows = (await inSlices(detectedIds, slice => selectRows(models.PaymentDetection, { transactionId: slice, status: "confirming" }, t, { orderBy: "id" }))) as unknown as PaymentDetection[];
		writes.hold(models.PaymentDetection, rows as never);
		const confirming = new Map<string, PaymentDetection[]>();
		for (const row of rows) confirming.set(row.transactionId, [...(confirming.get(row.transactionId) ?? []), row]);
		const mins = (await inSlices(transactionIds, slice =>
			models.TransactionCredit.findAll({
				attributes: ["transactionId", [fn("MIN", col("confirmations")), "least"]],
				where: { transactionId: { [Op.in]: slice }, counted: true, reversedAt: null, confirmations: { [Op.ne]: null } },
				group: ["transactionId"],
				raw: true,
				transaction: t,
			}),
		)) as unknown as Array<{ transactionId: string; least: number | string | null }>;
		return new KnownDetections(confirming, new Map(mins.map(m => [m.transactionId, m.least === null ? null : Number(m.least)])), writes);
	}

	confirmingOf(transactionId: string): PaymentDetection[] {
		return (this.confirming.get(transactionId) ?? []).filter(r => r.status === "confirming");
	}
}

/** Unconfirmed sightings of a transfer now seen in a block: reverted quietly (no intent move: the block's sighting counts). */
async function supersedeMempool(models: Models, t: DbTx, key: Omit<DetectionKey, "blockHash">, now: Date): Promise<void> {
	await models.PaymentDetection.update(
		{ status: "reverted", updatedAt: now },
		{ where: { networkId: key.networkId, txHash: key.txHash, logIndex: key.logIndex, blockHash: MEMPOOL_BLOCK_HASH, status: "confirming" }, transaction: t },
	);
}

/** Records (or updates) a detection below the required confirmations. */
export async function recordDetection(app: App, effects: Effects, input: DetectionInput): Promise<DetectOutcome> {
	const { models, clock } = app;
	return withPaymentLocked(app, { transactionId: input.transactionId }, async (t, { intent, tx }) => {
		const now = clock.now();
		if (!tx) return "unchanged";
		// A plain read: the checkout's row lock (held) serialises every writer of its detections, and a
		// locking read of a missing key would take InnoDB gap locks that deadlock concurrent detections
		// of neighbouring keys (other transfers of the same chain transaction, other checkouts).
		const existing = await models.PaymentDetection.findOne({ where: keyWhere(input), transaction: t });
		if (existing) {
			if (existing.status !== "confirming") return "final";
			// The watcher's requirement changed (the catalogue's did): the checkout shows the new one.
			const required = tx.requiredConfirmations !== input.requiredConfirmations;
			if (existing.confirmations >= input.confirmations && !required) return "unchanged";
			if (existing.confirmations < input.confirmations) {
				existing.confirmations = input.confirmations;
				existing.updatedAt = now;
				await existing.save({ transaction: t });
			}
			tx.requiredConfirmations = input.requiredConfirmations;
			await refreshSummary(models, t, tx);
			tx.updatedAt = now;
			await tx.save({ transaction: t });
			return "updated";
		}
		// The same transfer seen unconfirmed before (UTXO mempool): its block's sighting takes over.
		if (input.blockHash !== MEMPOOL_BLOCK_HASH) await supersedeMempool(models, t, input, now);
		await models.PaymentDetection.create(
			{
				networkId: input.networkId,
				txHash: input.txHash,
				logIndex: input.logIndex,
				blockHash: input.blockHash,
				blockNumber: input.blockNumber,
				transactionId: tx.id,
				tokenId: input.tokenId,
				amount: input.amount,
				counted: input.counted,
				confirmations: input.confirmations,
				status: "confirming",
				createdAt: now,
				updatedAt: now,
			},
			{ transaction: t },
		);
		tx.requiredConfirmations = input.requiredConfirmations;
		if (input.counted) {
			await refreshSummary(models, t, tx);
			tx.hash = input.txHash;
		}
		tx.updatedAt = now;
		await tx.save({ transaction: t });
		if (intent && input.counted) await moveIntent(models, t, effects, intent, "funds", now, tx, { currency: input.currency, latestTransactionId: tx.id });
		return "recorded";
	});
}

/**
 * Inside the credit's DB transaction (checkout already locked), after the credit row is written:
 * the detection of this transfer, if any, becomes `credited` and leaves the confirming summary. A
 * credit without an earlier detection (seen first with enough confirmations, e.g. after downtime)
 * only sets the summary's count.
 */
export async function settleDetection(models: Models, t: DbTx, tx: Transaction, key: Omit<DetectionKey, "blockHash"> & { blockHash?: string | null }, now: Date, known?: KnownDetections): Promise<void> {
	const where: Record<string, unknown> = { networkId: key.networkId, txHash: key.txHash, logIndex: key.logIndex, status: "confirming" };
	// The block's sighting, and the unconfirmed (mempool) one of the same transfer if there was one.
	if (key.blockHash) where.blockHash = { [Op.in]: [key.blockHash, MEMPOOL_BLOCK_HASH] };
	// A checkout nothing was ever detected for (simulations, first seen already confirmed) has no rows.
	if (tx.requiredConfirmations !== null && tx.requiredConfirmations !== undefined) {
		// Plain read under the checkout's lock (see recordDetection: no gap locks).
		const blocks = key.blockHash ? [key.blockHash, MEMPOOL_BLOCK_HASH] : null;
		const rows = known
			? known.confirmingOf(tx.id).filter(r => r.networkId === key.networkId && r.txHash === key.txHash && r.logIndex === key.logIndex && (!blocks || blocks.includes(r.blockHash)))
			: await models.PaymentDetection.findAll({ where, transaction: t });
		for (const row of rows) {
			row.status = "credited";
			row.updatedAt = now;
			// A batch's (known): written with its other rows at its end.
			if (known) known.writes.add(row);
			else await row.save({ transaction: t });
		}
	}
	// Also without detections: the credit just written gives the checkout its count.
	await refreshSummary(models, t, tx, known);
}

export type RevertOutcome = "reverted" | "unknown" | "already" | "credited";

/** A reorg orphaned the block of a detection: it is kept as `reverted` and the checkout goes back. */
export async function revertDetection(app: App, effects: Effects, key: DetectionKey): Promise<RevertOutcome> {
	const { models, clock } = app;
	const found = await models.PaymentDetection.findOne({ where: keyWhere(key), attributes: ["id", "transactionId"] });
	if (!found) return "unknown";
	return withPaymentLocked(app, { transactionId: found.transactionId }, async (t, { intent, tx }) => {
		const now = clock.now();
		const row = await models.PaymentDetection.findByPk(found.id, forUpdate(t));
		if (!tx || !row) return "unknown";
		if (row.status === "reverted") return "already";
		if (row.status === "credited") return "credited";
		row.status = "reverted";
		row.updatedAt = now;
		await row.save({ transaction: t });
		await refreshSummary(models, t, tx);
		// Nothing confirming nor received (`confirmations` may keep a credit's count: not the test).
		const nothingLeft = money(tx.amountConfirming ?? "0").isZero() && money(tx.amountReceived).isZero();
		if (nothingLeft) tx.hash = null;
		tx.updatedAt = now;
		await tx.save({ transaction: t });
		if (intent && nothingLeft && row.counted) await moveIntent(models, t, effects, intent, "revert", now, tx);
		return "reverted";
	});
}

/** A watcher's report of a transfer below the required confirmations (or orphaned by a reorg). */
export interface DetectParams {
	networkId: string;
	txHash: string;
	logIndex: number;
	blockHash: string;
	blockNumber: number;
	toAddress: string;
	tokenId: string;
	/** Token units (decimal string). */
	amount: string;
	confirmations: number;
	/** The watcher's requirement (see CreditParams.requiredConfirmations): what the payer is shown. */
	requiredConfirmations?: number;
}

export interface DetectResult {
	recorded: boolean;
	outcome: DetectOutcome | "unknownAddress";
	requiredConfirmations: number;
}

/** One item of a detect batch: its answer, or (`error`) why it was not recorded now (it is reported again). */
export type BatchDetectResult = DetectResult | { recorded: false; error: { name: string; message: string } };

/** A network's address normalisation (null: not an address of that network). */
export function addressNormalizer(network: NetworkView): (address: string) => string | null {
	const codec = codecFor(network.chainType);
	const params = chainParamsFor(network);
	return address => codec.normalizeAddress(address, params);
}

/** Detections reported at once: distinct checkouts side by side, one checkout's in order. */
const DETECT_CONCURRENCY = 16;

/**
 * Records a watcher's detections of one network (transactions.detect, detectBatch): the deposit
 * addresses and their checkouts read in one statement each, then each detection in its own short
 * DB transaction (recordDetection), reports of one checkout in the order given. `throwErrors`:
 * the single action's behaviour (an error fails the call) instead of an `error` answer per item.
 */
export async function detectTransfers(app: App, broker: ServiceBroker, network: NetworkView, tokenOf: (id: string) => Promise<TokenView>, items: DetectParams[], opts: { throwErrors?: boolean } = {}): Promise<BatchDetectResult[]> {
	const { models } = app;
	const normalize = addressNormalizer(network);
	const addresses = items.map(p => normalize(p.toAddress));
	const wanted = [...new Set(addresses.filter((a): a is string => !!a))];
	const deposits = await inSlices(wanted, slice => models.DepositAddress.findAll({ where: { networkId: network.id, address: { [Op.in]: slice } }, attributes: ["address", "transactionId"], raw: true }));
	const depositOf = new Map(deposits.map(d => [d.address, d.transactionId]));
	const txIds = [...new Set(deposits.map(d => d.transactionId))];
	const txs = txIds.length ? await models.Transaction.findAll({ where: { id: { [Op.in]: txIds } }, attributes: ["id", "payerTokenId"], raw: true }) : [];
	const payerTokenOf = new Map(txs.map(t => [t.id, t.payerTokenId]));
	const results: BatchDetectResult[] = new Array(items.length);
	const byCheckout = new Map<string, number[]>();
	items.forEach((p, i) => {
		const requiredConfirmations = p.requiredConfirmations ?? network.requiredConfirmations;
		const transactionId = addresses[i] ? depositOf.get(addresses[i]!) : undefined;
		if (!transactionId || !payerTokenOf.has(transactionId)) return void (results[i] = { recorded: false, outcome: "unknownAddress", requiredConfirmations });
		const queue = byCheckout.get(transactionId);
		if (queue) queue.push(i);
		else byCheckout.set(transactionId, [i]);
	});
	const detectOne = async (i: number, transactionId: string) => {
		const p = items[i];
		const requiredConfirmations = p.requiredConfirmations ?? network.requiredConfirmations;
		try {
			const token = await tokenOf(p.tokenId);
			const effects = new Effects();
			const outcome = await recordDetection(app, effects, {
				networkId: network.id,
				txHash: p.txHash,
				logIndex: p.logIndex,
				blockHash: p.blockHash,
				blockNumber: p.blockNumber,
				transactionId,
				tokenId: token.id,
				amount: p.amount,
				counted: token.id === payerTokenOf.get(transactionId),
				confirmations: p.confirmations,
				requiredConfirmations,
				currency: token.symbol.toLowerCase(),
			});
			await effects.flush(broker);
			results[i] = { recorded: outcome === "recorded" || outcome === "updated", outcome, requiredConfirmations };
		} catch (err) {
			if (opts.throwErrors) throw err;
			results[i] = { recorded: false, error: { name: (err as Error)?.name ?? "Error", message: (err as Error)?.message ?? String(err) } };
		}
	};
	const groups = [...byCheckout.entries()];
	let next = 0;
	const worker = async () => {
		while (next < groups.length) {
			const [transactionId, indexes] = groups[next++];
			for (const i of indexes) await detectOne(i, transactionId);
		}
	};
	await Promise.all(Array.from({ length: Math.min(DETECT_CONCURRENCY, groups.length) }, worker));
	return results;
}
