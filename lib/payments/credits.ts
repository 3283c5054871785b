/**
 * THE credit path (docs/payments.md "Credits"): a transfer to a deposit address counts, once, on
 * its checkout. `creditTransfer` credits one (transactions.credit: simulations, single reports);
 * `creditTransfers` credits a watcher's batch (transactions.creditBatch) in ONE DB transaction:
 * the deposit addresses, the checkouts' rows (locked per table, intents, then links, then
 * transactions, as withPaymentLocked orders them) and the prior credits are each read in one
 * statement, new credits inserted in one, then every item is applied in order by the same code the
 * single path runs (applyLockedCredit). A batch that fails (a deadlock after the retries, a
 * concurrent single credit of the same transfer, anything unexpected) is credited again item by
 * item through the single path: one bad item never blocks the others, and the unique index on
 * (network, txHash, logIndex) keeps every credit exactly once.
 */
import type { Logger, ServiceBroker } from "moleculer";
import { Op, type Model, type ModelStatic, type Transaction as DbTx } from "sequelize";
import type { App } from "../app";
import { forbidden, notFound } from "../errors";
import { countMetric, METRIC } from "../metrics";
import { catalogueSlugOf } from "../networks/catalogue";
import type { NetworkView, TokenView } from "../networks/view";
import { isAccountRace } from "../withdrawals/store";
import type { PaymentIntent } from "../../models/payment-intent.model";
import type { PaymentLink } from "../../models/payment-link.model";
import type { Transaction, TransactionCredit } from "../../models/transaction.model";
import { addressNormalizer, KnownDetections, settleDetection } from "./detections";
import { canTransition, transition, tryTransition } from "./intent-state";
import { canSettleLink, effectiveLinkStatus } from "./link-state";
import { recordRecredit, restoreCheckout } from "./reversals";
import { applyCredit, assertSimulatable } from "./settlement";
import { insertRows, selectRows } from "./rows";
import { DeferredWrites, Effects, HeldCheckouts, inSlices, inTransaction, isUniqueViolation, lapseCheckouts, LockedPayment, recordIntentEvent, withPaymentLocked } from "./store";
import { transactionView } from "./views";

export interface CreditParams {
	networkId: string;
	txHash: string;
	logIndex: number;
	toAddress: string;
	tokenId: string;
	/** Token units (decimal string). */
	amount: string;
	confirmations?: number;
	/**
	 * The confirmations the reporting watcher requires, read from the catalogue at its step (docs/watchers.md
	 * "Catalogue changes"). Given, it is the rule: the watcher's count is checked against it and it
	 * is what the checkout shows; omitted (older callers), the network's as this node caches it.
	 */
	requiredConfirmations?: number;
	simulated?: boolean;
	/** The block the transfer was seen in (chain watchers): its detection, if any, becomes credited. */
	blockHash?: string;
}

export interface CreditResult {
	/** false: nothing was recorded (see `reason`), or the transfer was recorded before (`duplicate`). */
	credited: boolean;
	duplicate: boolean;
	reason?: "unknownAddress" | "insufficientConfirmations" | "duplicate";
	/** false when the transfer was of another token than the checkout's (recorded, not counted). */
	counted?: boolean;
	requiredConfirmations?: number;
	transaction?: ReturnType<typeof transactionView>;
}

/** One item of a batch: its credit's answer, or (`error`) why it could not be credited now (it stays to be reported again). */
export type BatchCreditResult = CreditResult | { credited: false; duplicate: false; error: { name: string; message: string; code?: number; type?: string } };

/** What dependent services hear when a checkout settles (after commit). */
export interface TransactionCompletedEvent {
	transactionId: string;
	organizationId: string;
	mode: "sandbox" | "live";
	paymentLinkId: string;
	intentId: string | null;
	simulated: boolean;
	payerTokenId: string;
	payerNetworkId: string;
	amountReceived: string;
	totalAmount: string;
	completedAt: string;
}

/** Where the credit path gets the network's tokens (the networks service, cached). */
export type TokenOf = (tokenId: string) => Promise<TokenView>;

export const transactionNotFound = () => notFound("Transaction not found");

/** What one applied credit committed (the caller counts metrics and flushes events after the commit). */
interface Applied {
	result: CreditResult;
	intentSettled: boolean;
	duplicate?: boolean;
	recredited?: boolean;
}

const keyOf = (p: { txHash: string; logIndex: number }) => `${p.logIndex}:${p.txHash}`;

/**
 * One credit on its checkout's locked rows, inside the caller's DB transaction, `prior` being the
 * transfer's credit row if one exists (read under the same locks). `inserted`: the batch already
 * wrote the credit row. Shared by the single and the batch path, so both write the same rows.
 */
async function applyLockedCredit(
	app: App,
	t: DbTx,
	effects: Effects,
	{ intent, link, tx }: LockedPayment,
	p: CreditParams,
	network: NetworkView,
	token: TokenView,
	prior: TransactionCredit | null,
	opts: { inserted?: boolean; held?: HeldCheckouts; known?: KnownDetections; writes?: DeferredWrites; brief?: boolean } = {},
): Promise<Applied> {
	const { models, clock } = app;
	// The checkout's, intent's and link's row changes: saved now, or (a batch) all at its end.
	const persist = async (row: Transaction | PaymentIntent | PaymentLink) => (opts.writes ? opts.writes.add(row) : void (await row.save({ transaction: t })));
	const now = clock.now();
	const simulated = p.simulated === true;
	// Soft-deleted links still settle their transactions.
	if (!tx || !link) throw transactionNotFound();
	if (prior && (!prior.reversedAt || simulated || prior.transactionId !== tx.id)) {
		// Reported again. From another block: the transfer was mined again after a reorg before
		// its revert was heard; the credit now stands in that block (a revert of the old one changes nothing).
		if (p.blockHash && !prior.simulated && !prior.reversedAt && prior.blockHash !== p.blockHash) {
			prior.blockHash = p.blockHash;
			await prior.save({ transaction: t });
		}
		return { result: { credited: false, duplicate: true, reason: "duplicate" as const, ...viewOf(tx, opts.brief) }, intentSettled: false, duplicate: true };
	}
	// A transfer whose credit a deep reorg reversed, mined again: the same credit counts again (docs/payments.md "Reversals").
	const recredit = prior;
	const counted = recredit ? !!recredit.counted : token.id === tx.payerTokenId;
	if (recredit) {
		recredit.reversedAt = null;
		recredit.blockHash = p.blockHash ?? null;
		recredit.confirmations = p.confirmations ?? null;
		await recredit.save({ transaction: t });
		restoreCheckout(tx, recredit);
	} else if (!opts.inserted) {
		// The unique index stays the arbiter: a duplicate fails here and rolls everything back.
		await models.TransactionCredit.create(creditRow(p, network, token, tx, counted, now), { transaction: t });
	}
	const settleable = canSettleLink(link.status) && (!intent || canTransition(intent.status, "settle"));
	// A re-mined transfer counts what its credit (and its reversal) counted.
	const amount = recredit ? recredit.amount : p.amount;
	const out = applyCredit({ status: tx.status, amountReceived: tx.amountReceived, totalAmount: tx.totalAmount, amount, counted, settleable });
	tx.status = out.status;
	tx.amountReceived = out.amountReceived;
	tx.overpaidAmount = out.overpaidAmount;
	if (counted) tx.hash = p.txHash;
	await settleDetection(models, t, tx, { networkId: network.id, txHash: p.txHash, logIndex: p.logIndex, blockHash: p.blockHash }, now, opts.known);
	// The checkout shows the requirement its counted credit was applied with ("n of m" agrees with it).
	if (counted && p.requiredConfirmations !== undefined) tx.requiredConfirmations = p.requiredConfirmations;
	if (simulated) tx.simulated = true;
	if (out.confirmed) tx.confirmedAt = now;
	if (out.settled) tx.completedAt = now;
	tx.updatedAt = now;
	await persist(tx);

	const currency = token.symbol.toLowerCase();
	if (intent && (out.settled || out.firstFunds)) {
		const tr = out.settled ? transition(intent.status, "settle") : tryTransition(intent.status, "funds");
		if (tr?.changed || out.settled) {
			if (tr) intent.status = tr.to;
			if (out.settled) intent.succeededAt = now;
			intent.latestTransactionId = tx.id;
			intent.updatedAt = now;
			await persist(intent);
			if (tr?.event) await recordIntentEvent(models, t, effects, intent, tr.event, now, tx, currency, opts.writes);
		}
	}
	if (out.settled) {
		link.status = "completed";
		link.updatedAt = now;
		await persist(link);
		// Single use: the link's other checkouts end.
		await lapseCheckouts(models, t, { paymentLinkId: link.id, excludeId: tx.id }, now, opts.held);
		const event: TransactionCompletedEvent = {
			transactionId: tx.id,
			organizationId: tx.organizationId,
			mode: tx.mode,
			paymentLinkId: link.id,
			intentId: intent?.id ?? null,
			simulated: tx.simulated,
			payerTokenId: tx.payerTokenId,
			payerNetworkId: tx.payerNetworkId,
			amountReceived: tx.amountReceived,
			totalAmount: tx.totalAmount,
			completedAt: now.toISOString(),
		};
		effects.emit("payments.transaction.completed", event);
	}
	if (recredit) await recordRecredit(app, t, effects, { tx, intent, credit: recredit, currency, now });
	return { result: { credited: true, duplicate: false, counted, ...viewOf(tx, opts.brief) }, intentSettled: intent !== null && out.settled, recredited: !!recredit };
}

/** The answer's checkout view, left out of a brief answer (the watcher reads only credited / duplicate / reason). */
const viewOf = (tx: Transaction, brief?: boolean) => (brief ? {} : { transaction: transactionView(tx) });

function creditRow(p: CreditParams, network: NetworkView, token: TokenView, tx: Transaction, counted: boolean, now: Date) {
	return { networkId: network.id, txHash: p.txHash, logIndex: p.logIndex, transactionId: tx.id, tokenId: token.id, amount: p.amount, counted, confirmations: p.confirmations ?? null, simulated: p.simulated === true, blockHash: p.blockHash ?? null, createdAt: now };
}

/** After the commit, once per credit (a repeat was answered as duplicate and counts nothing). */
function countCommitted(broker: ServiceBroker, logger: Logger, network: NetworkView, p: CreditParams, transactionId: string, committed: Applied): void {
	const labels = { network: catalogueSlugOf(network.id) ?? "other" };
	if (committed.recredited) {
		countMetric(broker, METRIC.creditsRecredited, labels);
		logger.warn(`A transfer whose credit a reorg had reversed was mined again on network ${network.id}: tx ${p.txHash} #${p.logIndex} credited again to checkout ${transactionId}`);
	} else countMetric(broker, METRIC.transactionsCredited, labels);
	if (committed.intentSettled) countMetric(broker, METRIC.intentsSettled, labels);
}

/** The requirement a report is held to, and its refusal when below it (not recorded: report it again once confirmed). */
function confirmationsCheck(p: CreditParams, network: NetworkView): { required: number; refused?: CreditResult } {
	// One rule: the requirement the watcher applied (read from the catalogue at its step) when
	// it sends it, so a core whose cached catalogue is older never refuses its credit.
	const required = p.requiredConfirmations ?? network.requiredConfirmations;
	if (p.confirmations !== undefined && p.confirmations < required) return { required, refused: { credited: false, duplicate: false, reason: "insufficientConfirmations", requiredConfirmations: required } };
	return { required };
}

/** Credits one transfer (transactions.credit). Idempotent on (networkId, txHash, logIndex). */
export async function creditTransfer(app: App, broker: ServiceBroker, logger: Logger, network: NetworkView, tokenOf: TokenOf, p: CreditParams): Promise<CreditResult> {
	const { models, clock } = app;
	const simulated = p.simulated === true;
	const check = confirmationsCheck(p, network);
	if (check.refused) return check.refused;
	const address = addressNormalizer(network)(p.toAddress);
	const deposit = address ? await models.DepositAddress.findOne({ where: { networkId: network.id, address } }) : null;
	if (!deposit) return { credited: false, duplicate: false, reason: "unknownAddress" };
	const token = await tokenOf(p.tokenId);

	const effects = new Effects();
	let committed: Applied;
	try {
		committed = await withPaymentLocked(
			app,
			{ transactionId: deposit.transactionId },
			async (t, rows) => {
				const { intent, link, tx } = rows;
				if (!tx || !link) throw transactionNotFound();
				if (simulated) {
					if (tx.mode !== "sandbox") throw forbidden("Simulation is only available for sandbox organizations", { code: "SIMULATION_SANDBOX_ONLY" });
					// Decided here, under the locks: of concurrent simulations one settles, the others are refused.
					assertSimulatable({
						intentStatus: intent?.status ?? null,
						linkStatus: effectiveLinkStatus(link.status, link.expiresAt, clock.now()),
						status: tx.status,
						totalAmount: tx.totalAmount,
						amountReceived: tx.amountReceived,
						amount: p.amount,
					});
				}
				// A plain read under the checkout's lock (every credit of its deposit address takes it).
				const prior = await models.TransactionCredit.findOne({ where: { networkId: network.id, txHash: p.txHash, logIndex: p.logIndex }, transaction: t });
				return applyLockedCredit(app, t, effects, rows, p, network, token, prior);
			},
			// READ COMMITTED: lapseCheckouts' locking read of the link's pending checkouts takes no gap locks (docs/payments.md, Isolation).
			{ retryOn: isAccountRace, isolation: "readCommitted" },
		);
	} catch (err) {
		if (!isUniqueViolation(err, "transaction_credits")) throw err;
		const tx = await models.Transaction.findByPk(deposit.transactionId);
		return { credited: false, duplicate: true, reason: "duplicate", ...(tx ? { transaction: transactionView(tx) } : {}) };
	}
	if (committed.duplicate) return committed.result;
	countCommitted(broker, logger, network, p, deposit.transactionId, committed);
	await effects.flush(broker);
	return committed.result;
}

/** The ids that decide the lock order moved between their read and the locks (as withPaymentLocked's guard). */
class BatchLockOrderMoved extends Error {}

const byId = <T extends { id: string }>(rows: T[]) => new Map(rows.map(r => [r.id, r]));
const sorted = (ids: Iterable<string | null | undefined>) => [...new Set([...ids].filter((x): x is string => !!x))].sort();

/** An item of the batch with what the reads before the DB transaction found. */
interface Pending {
	index: number;
	p: CreditParams;
	transactionId: string;
}

/**
 * Credits a watcher's batch of transfers of one network (transactions.creditBatch): answers, in
 * the items' order, what transactions.credit would answer for each, credited in one DB
 * transaction (see the module's comment). Items of one checkout are applied in order; an item
 * repeating an earlier one's transfer is answered as its duplicate. Rare cases go through the
 * single path after the batch: a reversed credit mined again, a checkout that is gone.
 */
export async function creditTransfers(app: App, broker: ServiceBroker, logger: Logger, network: NetworkView, tokenOf: TokenOf, items: CreditParams[], opts: { brief?: boolean } = {}): Promise<BatchCreditResult[]> {
	const { models } = app;
	const results: Array<BatchCreditResult | undefined> = new Array(items.length);
	const normalize = addressNormalizer(network);
	const addressed: Array<{ index: number; address: string }> = [];
	items.forEach((raw, index) => {
		const p = { ...raw, networkId: network.id, simulated: false };
		items[index] = p;
		const check = confirmationsCheck(p, network);
		if (check.refused) return void (results[index] = check.refused);
		const address = normalize(p.toAddress);
		if (!address) return void (results[index] = { credited: false, duplicate: false, reason: "unknownAddress" });
		addressed.push({ index, address });
	});
	const deposits = await inSlices([...new Set(addressed.map(a => a.address))], slice => models.DepositAddress.findAll({ where: { networkId: network.id, address: { [Op.in]: slice } }, attributes: ["address", "transactionId"], raw: true }));
	const depositOf = new Map(deposits.map(d => [d.address, d.transactionId]));
	const batch: Pending[] = [];
	// Run alone after the batch: repeats of a transfer earlier in the batch (answered duplicate there).
	const later: Pending[] = [];
	const seen = new Set<string>();
	for (const { index, address } of addressed) {
		const transactionId = depositOf.get(address);
		if (!transactionId) {
			results[index] = { credited: false, duplicate: false, reason: "unknownAddress" };
			continue;
		}
		const item = { index, p: items[index], transactionId };
		if (seen.has(keyOf(item.p))) later.push(item);
		else {
			seen.add(keyOf(item.p));
			batch.push(item);
		}
	}
	const tokens = new Map<string, TokenView>();
	for (const id of new Set(batch.map(b => b.p.tokenId))) tokens.set(id, await tokenOf(id));

	if (batch.length) {
		const effects = new Effects();
		try {
			const applied = await lockedBatch(app, effects, network, tokens, batch, opts.brief === true);
			for (const [item, committed] of applied.done) {
				results[item.index] = committed.result;
				if (!committed.duplicate) countCommitted(broker, logger, network, item.p, item.transactionId, committed);
			}
			later.unshift(...applied.alone);
			await effects.flush(broker);
		} catch (err) {
			// Nothing of the batch committed: each item on its own, in order (the single path's own retries and duplicate answer).
			logger.warn(`Credit batch of ${batch.length} on network ${network.id} failed (${(err as Error)?.message ?? err}); crediting its items one by one`);
			later.unshift(...batch);
		}
	}
	later.sort((a, b) => a.index - b.index);
	for (const item of later) {
		const answer = await creditAlone(app, broker, logger, network, tokenOf, item.p);
		if (opts.brief && "transaction" in answer) delete answer.transaction;
		results[item.index] = answer;
	}
	return results as BatchCreditResult[];
}

/** One item through the single path; an error is its answer (the watcher reports it again later). */
async function creditAlone(app: App, broker: ServiceBroker, logger: Logger, network: NetworkView, tokenOf: TokenOf, p: CreditParams): Promise<BatchCreditResult> {
	try {
		return await creditTransfer(app, broker, logger, network, tokenOf, p);
	} catch (err) {
		const e = err as { name?: string; message?: string; code?: number; type?: string };
		logger.warn(`Credit of tx ${p.txHash} #${p.logIndex} on network ${network.id} failed: ${e?.message ?? err}`);
		return { credited: false, duplicate: false, error: { name: e?.name ?? "Error", message: e?.message ?? String(err), ...(typeof e?.code === "number" ? { code: e.code } : {}), ...(e?.type ? { type: e.type } : {}) } };
	}
}

/** The batch's DB transaction (run again, from the lock-order read, when that order moved meanwhile). */
async function lockedBatch(app: App, effects: Effects, network: NetworkView, tokens: ReadonlyMap<string, TokenView>, batch: Pending[], brief: boolean): Promise<{ done: Array<[Pending, Applied]>; alone: Pending[] }> {
	const { models, sequelize } = app;
	for (let moved = 0; ; moved++) {
		// Read in its own statement, before the DB transaction (withPaymentLocked's rule: lock first, then read).
		const order = await inSlices(sorted(batch.map(b => b.transactionId)), slice => models.Transaction.findAll({ where: { id: { [Op.in]: slice } }, attributes: ["id", "intentId", "paymentLinkId"], raw: true }));
		const intentOf = new Map(order.map(o => [o.id, o.intentId ?? null]));
		try {
			return await inTransaction(
				sequelize,
				async t => {
					effects.events.length = 0;
					// Per table, ids ascending, in the one order: intents, links, transactions. Plain rows, not
					// model instances (lib/payments/rows.ts): the batch writes what changed in them at its end.
					const locked = <M extends Model>(model: ModelStatic<M>, ids: string[]) => inSlices(ids, slice => selectRows(model, { id: slice } as never, t, { lock: true, orderBy: "id" as never }));
					const intents = byId((await locked(models.PaymentIntent, sorted(order.map(o => o.intentId)))) as unknown as PaymentIntent[]);
					const linkIds = sorted(order.map(o => o.paymentLinkId));
					const links = byId((await locked(models.PaymentLink, linkIds)) as unknown as PaymentLink[]);
					const txs = byId((await locked(models.Transaction, order.map(o => o.id).sort())) as unknown as Transaction[]);
					for (const tx of txs.values()) if ((tx.intentId ?? null) !== intentOf.get(tx.id)) throw new BatchLockOrderMoved();
					// The links' other pending checkouts, which a settling credit lapses (lapseCheckouts): locked
					// after the transactions, as the single path locks them; no checkout opens meanwhile (the links are locked).
					// Through the links' index: only these links' rows are passed (and, at READ COMMITTED, locked).
					// Their ids only: that read finds every checkout of the batch again, and the whole rows are
					// read (a plain read: they are locked now) only for the few that are not among them.
					const others = sorted((await inSlices(linkIds, slice => selectRows(models.Transaction, { paymentLinkId: slice, status: "pending" }, t, { lock: true, orderBy: "id", index: "transactions_link_status", columns: ["id"] }))).map(s => s.id).filter(id => !txs.has(id)));
					const siblings = (await inSlices(others, slice => selectRows(models.Transaction, { id: slice }, t, { orderBy: "id" }))) as unknown as Transaction[];
					const writes = new DeferredWrites();
					writes.hold(models.PaymentIntent, intents.values() as never);
					writes.hold(models.PaymentLink, links.values() as never);
					writes.hold(models.Transaction, [...txs.values(), ...siblings] as never);
					const held: HeldCheckouts = { byId: new Map([...txs, ...siblings.map(s => [s.id, s] as const)]), links: new Set(linkIds), writes };
					// Plain read under the checkouts' locks (as the single path's). The log indexes too: a transaction
					// paying many addresses (an exchange's batch payout) has up to thousands of transfers, and
					// its hash alone read every credit of it written before, each a row lookup (docs/benchmarks.md).
					const logIndexes = [...new Set(batch.map(b => b.p.logIndex))];
					const priors = await inSlices([...new Set(batch.map(b => b.p.txHash))], slice => models.TransactionCredit.findAll({ where: { networkId: network.id, txHash: { [Op.in]: slice }, logIndex: { [Op.in]: logIndexes } }, transaction: t }));
					const priorOf = new Map(priors.map(c => [keyOf(c), c]));

					const alone: Pending[] = [];
					const run: Array<{ item: Pending; rows: LockedPayment; prior: TransactionCredit | null }> = [];
					for (const item of batch) {
						const tx = txs.get(item.transactionId) ?? null;
						const link = tx ? links.get(tx.paymentLinkId) ?? null : null;
						const prior = priorOf.get(keyOf(item.p)) ?? null;
						// Gone, or a reversed credit mined again (reversals' ledger work): the single path, after the batch.
						if (!tx || !link || (prior?.reversedAt && prior.transactionId === tx.id)) alone.push(item);
						else run.push({ item, rows: { intent: tx.intentId ? intents.get(tx.intentId) ?? null : null, link, tx }, prior });
					}
					// New credits in one INSERT; a checkout credited twice in the batch gets its rows one by one,
					// in order, since each credit's summary (refreshSummary) reads the credits written before it.
					const perCheckout = new Map<string, number>();
					for (const r of run) if (!r.prior) perCheckout.set(r.item.transactionId, (perCheckout.get(r.item.transactionId) ?? 0) + 1);
					const now = app.clock.now();
					const bulk = run.filter(r => !r.prior && perCheckout.get(r.item.transactionId) === 1);
					await insertRows(
						models.TransactionCredit,
						bulk.map(r => {
							const token = tokens.get(r.item.p.tokenId)!;
							return creditRow(r.item.p, network, token, r.rows.tx!, token.id === r.rows.tx!.payerTokenId, now);
						}),
						t,
					);
					const inserted = new Set(bulk.map(r => r.item));
					// Their detections and credits' least confirmations, read once for all (settleDetection's reads).
					const known = await KnownDetections.load(
						models,
						t,
						sorted(bulk.map(r => r.item.transactionId)),
						writes,
						sorted(bulk.filter(r => r.rows.tx!.requiredConfirmations !== null && r.rows.tx!.requiredConfirmations !== undefined).map(r => r.item.transactionId)),
					);
					const done: Array<[Pending, Applied]> = [];
					for (const r of run) {
						const once = inserted.has(r.item);
						const applied = await applyLockedCredit(app, t, effects, r.rows, r.item.p, network, tokens.get(r.item.p.tokenId)!, r.prior, { inserted: once, held, writes, brief, ...(once ? { known } : {}) });
						done.push([r.item, applied]);
					}
					// The checkouts, intents and links, one statement per table (nothing above read them again after
					// their locks), then the outbox rows in one INSERT.
					await writes.flush(t);
					return { done, alone };
				},
				// READ COMMITTED: the siblings' locking read above locks those rows and no gaps. Under REPEATABLE
				// READ its next-key locks reach into the neighbouring links' entries of transactions_link_status,
				// so two batches of interleaved links deadlocked on each other's status moves (docs/payments.md, Isolation).
				{ retryOn: isAccountRace, isolation: "readCommitted" },
			);
		} catch (err) {
			if (!(err instanceof BatchLockOrderMoved) || moved >= 3) throw err;
		}
	}
}
