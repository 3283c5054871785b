/**
 * The payments services' shared database work (not pure, unlike the rest of lib/payments): the
 * intents, links and transactions services form one bounded context whose state changes span
 * their tables and must commit together (an on-chain credit moves a transaction, its intent and
 * its link, and writes the events, in ONE DB transaction). docs/payments.md "Consistency".
 *
 * Rules kept here:
 * - Rows are locked in one order everywhere: intent, then link, then transaction (MySQL
 *   SELECT ... FOR UPDATE; SQLite transactions are IMMEDIATE, so writers run one at a time).
 * - Lock first, then read (withPaymentLocked): on MySQL REPEATABLE READ the first plain read of a
 *   DB transaction fixes its snapshot, so nothing is read inside a transaction before its locks.
 * - Events are written to outbox_events inside the transaction and emitted on the broker only
 *   after it committed (Effects).
 * - Expiry is evaluated by a periodic sweep and again, scoped to the row, before every read.
 */
import type { ServiceBroker } from "moleculer";
import { Attributes, Model, ModelStatic, Op, Sequelize, Transaction as DbTx, WhereOptions } from "sequelize";
import type { App } from "../app";
import { chainParamsFor, codecFor } from "../chains";
import { loadOrCreateSeed, seedFingerprint } from "../chains/seed";
import { digest } from "../crypto";
import { inTransaction, isLockConflict, TransactionOptions } from "../db";
import { badRequest } from "../errors";
import { uuid } from "../ids";
import type { NetworkView, TokenView } from "../networks/view";
import type { Models } from "../../models";
import type { PaymentIntent } from "../../models/payment-intent.model";
import type { PaymentLink } from "../../models/payment-link.model";
import type { Transaction } from "../../models/transaction.model";
import { EVENTS_WITH_LATEST, IntentEventType, IntentOperation, OPEN_STATES, transition, tryTransition } from "./intent-state";
import { assertLinkPayable, effectiveLinkStatus, isFinalLinkStatus } from "./link-state";
import type { QuoteAmounts } from "./quote";
import { lapsedStatus } from "./settlement";
import { insertRows, updateRows } from "./rows";
import { intentEventObject } from "./views";

// ---------------------------------------------------------------------------------------------
// Transactions, locks, errors

function errorText(err: unknown): string {
	const e = err as { message?: string; parent?: { message?: string; sqlMessage?: string }; original?: { message?: string } };
	return [e?.message, e?.parent?.message, e?.parent?.sqlMessage, e?.original?.message].filter(Boolean).join(" | ");
}

/** A unique-constraint failure on `table` (SQLite names `table.column`, MySQL the index, which starts with the table). */
export function isUniqueViolation(err: unknown, table: string): boolean {
	const name = (err as { name?: string })?.name;
	if (name !== "SequelizeUniqueConstraintError") return false;
	return errorText(err).includes(table);
}

// Generic DB helpers (lib/db.ts), kept importable from here for the payments services.
export { inTransaction, isLockConflict };

/**
 * A unique conflict of the address allocation (deposit_addresses, or two first checkouts creating
 * a chain type's counter row): the checkout runs again. An Idempotency-Key conflict is not one.
 */
export function isAllocationConflict(err: unknown): boolean {
	return (err as { name?: string })?.name === "SequelizeUniqueConstraintError" && !isUniqueViolation(err, "idempotency_keys");
}

/**
 * Values of an `IN (…)` on a secondary index per statement: MySQL estimates a list of 200 or more
 * (eq_range_index_dive_limit) from index statistics, which may be stale after bulk loads, and can
 * then choose a full scan: with FOR UPDATE that locks the whole table.
 */
const IN_SLICE = 100;

export async function inSlices<T>(values: readonly string[], query: (slice: string[]) => Promise<T[]>): Promise<T[]> {
	const out: T[] = [];
	for (let i = 0; i < values.length; i += IN_SLICE) out.push(...(await query(values.slice(i, i + IN_SLICE))));
	return out;
}

export const forUpdate = (t: DbTx) => ({ transaction: t, lock: t.LOCK.UPDATE });

/** The rows of one payment, locked for the rest of the DB transaction (null: there is none). */
export interface LockedPayment {
	intent: PaymentIntent | null;
	/** Soft-deleted links too: callers that refuse them check deletedAt. */
	link: PaymentLink | null;
	/** Only for a transaction target. */
	tx: Transaction | null;
}

export type PaymentLockTarget = { intentId: string } | { linkId: string } | { transactionId: string };

/** The ids that decide the lock order moved between their read and the locks. */
class LockOrderMoved extends Error {}

/** Read in its own statement, before the DB transaction: which intent and link a target locks. */
async function lockOrderOf(models: Models, target: PaymentLockTarget): Promise<{ intentId: string | null; linkId: string | null; txId: string | null }> {
	if ("intentId" in target) return { intentId: target.intentId, linkId: null, txId: null };
	if ("linkId" in target) {
		const link = await models.PaymentLink.findByPk(target.linkId, { attributes: ["id", "intentId"] });
		return { intentId: link?.intentId ?? null, linkId: target.linkId, txId: null };
	}
	const tx = await models.Transaction.findByPk(target.transactionId, { attributes: ["id", "intentId", "paymentLinkId"] });
	return { intentId: tx?.intentId ?? null, linkId: tx?.paymentLinkId ?? null, txId: tx ? tx.id : null };
}

/**
 * Runs `fn` in a DB transaction whose first statements lock the payment's rows in the one order
 * (intent, link, transaction). Nothing is read inside the transaction before the locks: on MySQL
 * REPEATABLE READ the first plain read fixes the transaction's snapshot, and plain reads after
 * the locks (counts of open checkouts, a link's transactions) would miss every row committed
 * while it waited for them. The ids that decide the order (a link's intent, a transaction's
 * intent and link; an intent's link never changes) are read in a separate statement before the
 * transaction opens and verified under the locks; when they moved (the pay page gave the link its
 * intent meanwhile) it all runs again. Deadlock victims run again as with inTransaction.
 */
export async function withPaymentLocked<T>(
	app: App,
	target: PaymentLockTarget,
	fn: (t: DbTx, rows: LockedPayment) => Promise<T>,
	opts: TransactionOptions = {},
): Promise<T> {
	const { models, sequelize } = app;
	for (let moved = 0; ; moved++) {
		const order = await lockOrderOf(models, target);
		try {
			return await inTransaction(
				sequelize,
				async t => {
					const intent = order.intentId ? await models.PaymentIntent.findByPk(order.intentId, forUpdate(t)) : null;
					const linkId = "intentId" in target ? intent?.paymentLinkId : order.linkId;
					const link = linkId ? await models.PaymentLink.findByPk(linkId, forUpdate(t)) : null;
					const tx = order.txId ? await models.Transaction.findByPk(order.txId, forUpdate(t)) : null;
					const intentNow = "intentId" in target ? order.intentId : "linkId" in target ? link?.intentId ?? null : tx?.intentId ?? null;
					if (intentNow !== order.intentId) throw new LockOrderMoved();
					return fn(t, { intent, link, tx });
				},
				opts,
			);
		} catch (err) {
			// A link gets its intent once, so one more run settles it; the bound is only a guard.
			if (!(err instanceof LockOrderMoved) || moved >= 3) throw err;
		}
	}
}

/** What to do once the DB transaction committed: Moleculer events (the fast path; the outbox is the guarantee). */
export class Effects {
	readonly events: Array<{ name: string; payload: unknown }> = [];

	emit(name: string, payload: unknown): void {
		this.events.push({ name, payload });
	}

	async flush(broker: ServiceBroker): Promise<void> {
		for (const { name, payload } of this.events.splice(0)) {
			try {
				await broker.emit(name, payload);
			} catch (err) {
				broker.logger.warn(`Event ${name} could not be emitted (the outbox row stands):`, (err as Error)?.message);
			}
		}
	}
}

// ---------------------------------------------------------------------------------------------
// Events

export interface IntentEventEnvelope {
	id: string;
	type: IntentEventType;
	created: string;
	livemode: boolean;
	organizationId: string;
	apiKeyId: number | null;
	data: { object: Record<string, unknown> };
}

/** The symbol of a payer token as the event's latestTransaction.currency (lower case). */
export type CurrencyOf = (tokenId: string) => string | undefined;

/** Writes the outbox row of an intent event and queues the Moleculer event. */
export async function recordIntentEvent(
	models: Models,
	t: DbTx,
	effects: Effects,
	intent: PaymentIntent,
	type: IntentEventType,
	now: Date,
	latest: Transaction | null,
	latestCurrency?: string,
	writes?: DeferredWrites,
): Promise<void> {
	const object = intentEventObject(intent, latest, latestCurrency, EVENTS_WITH_LATEST.includes(type));
	const id = uuid();
	const livemode = intent.mode === "live";
	const row = { id, type, organizationId: intent.organizationId, apiKeyId: intent.apiKeyId ?? null, livemode, payload: object, createdAt: now, publishedAt: null };
	// A credit batch inserts its outbox rows in one statement at its end (same DB transaction).
	if (writes) writes.insert(models.OutboxEvent, row);
	else await models.OutboxEvent.create(row, { transaction: t });
	const envelope: IntentEventEnvelope = {
		id,
		type,
		created: now.toISOString(),
		livemode,
		organizationId: intent.organizationId,
		apiKeyId: intent.apiKeyId ?? null,
		data: { object },
	};
	effects.emit(type, envelope);
}

/**
 * A system operation on a locked intent (funds seen, lapse, revert): when the transition table
 * allows it and the state changes, the status is saved and its event written to the outbox in the
 * caller's DB transaction. False when nothing changed.
 */
export async function moveIntent(
	models: Models,
	t: DbTx,
	effects: Effects,
	intent: PaymentIntent,
	op: IntentOperation,
	now: Date,
	latest: Transaction | null,
	opts: { currency?: string; latestTransactionId?: string } = {},
): Promise<boolean> {
	const tr = tryTransition(intent.status, op);
	if (!tr?.changed) return false;
	intent.status = tr.to;
	if (opts.latestTransactionId) intent.latestTransactionId = opts.latestTransactionId;
	intent.updatedAt = now;
	await intent.save({ transaction: t });
	if (tr.event) await recordIntentEvent(models, t, effects, intent, tr.event, now, latest, opts.currency);
	return true;
}

// ---------------------------------------------------------------------------------------------
// Reads

/** A link that is not deleted, read outside any DB transaction (locks: withPaymentLocked). */
export async function findLink(models: Models, where: { id?: string; slug?: string; organizationId?: string }): Promise<PaymentLink | null> {
	return models.PaymentLink.findOne({ where: { ...where, deletedAt: null } });
}

export async function latestTransactionOf(models: Models, intent: Pick<PaymentIntent, "latestTransactionId">, t?: DbTx): Promise<Transaction | null> {
	if (!intent.latestTransactionId) return null;
	return models.Transaction.findByPk(intent.latestTransactionId, { transaction: t });
}

/** Pending checkouts of a link still inside their payment window. */
export async function countOpenCheckouts(models: Models, paymentLinkId: string, now: Date, t?: DbTx, excludeId?: string): Promise<number> {
	return models.Transaction.count({
		where: { paymentLinkId, status: "pending", expiresAt: { [Op.gt]: now }, ...(excludeId ? { id: { [Op.ne]: excludeId } } : {}) },
		transaction: t,
	});
}

/**
 * Checkout rows a caller holds locked and keeps changing (a credit batch: lib/payments/credits.ts):
 * `byId` the instances, `links` the links all of whose pending checkouts are among them.
 */
export interface HeldCheckouts {
	byId: ReadonlyMap<string, Transaction>;
	links: ReadonlySet<string>;
	/** Where the lapsed rows' changes go (written at the batch's end); unset: saved at once. */
	writes?: DeferredWrites;
}

/**
 * Row changes a credit batch writes once at its end, instead of one UPDATE per row and per credit:
 * - model instances (add): one multi-row INSERT … ON DUPLICATE KEY UPDATE (SQLite: ON CONFLICT DO
 *   UPDATE) per table, of the columns any of them changed;
 * - plain rows read by lib/payments/rows.ts selectRows and registered with `hold` (add): one
 *   statement per table (rows.ts updateRows), of the columns whose values differ from the read;
 * - new rows (insert): one multi-row INSERT per table, after the updates.
 * Only for rows the batch holds locked and read in full, and whose table it does not read again
 * before the end (lib/payments/credits.ts).
 */
export class DeferredWrites {
	private readonly rows = new Set<Model>();
	/** Held plain rows: their model and their values as read. */
	private readonly held = new Map<object, { model: ModelStatic<Model>; read: Record<string, unknown> }>();
	private readonly changedPlain = new Set<object>();
	private readonly inserts = new Map<ModelStatic<Model>, object[]>();

	/** Plain rows of `model` (selectRows) the batch holds locked: what `add` later gets of them is written as changed columns. */
	hold<M extends Model>(model: ModelStatic<M>, rows: Iterable<Attributes<M>>): void {
		for (const row of rows) this.held.set(row as object, { model: model as unknown as ModelStatic<Model>, read: { ...(row as object) } });
	}

	add(row: Model | object): void {
		if (this.held.has(row)) this.changedPlain.add(row);
		else if (row instanceof Model) this.rows.add(row);
		else throw new Error("DeferredWrites.add: a plain row that was not held");
	}

	/** A new row of `model`, inserted at the flush (multi-row INSERT). */
	insert<M extends Model>(model: ModelStatic<M>, row: Partial<Attributes<M>>): void {
		const m = model as unknown as ModelStatic<Model>;
		this.inserts.set(m, [...(this.inserts.get(m) ?? []), row]);
	}

	async flush(t: DbTx): Promise<void> {
		const byModel = new Map<ModelStatic<Model>, Model[]>();
		for (const row of this.rows) {
			const model = row.constructor as ModelStatic<Model>;
			byModel.set(model, [...(byModel.get(model) ?? []), row]);
		}
		this.rows.clear();
		for (const [model, rows] of byModel) {
			const fields = new Set<string>();
			for (const row of rows) {
				const changed = row.changed();
				if (Array.isArray(changed)) for (const f of changed) fields.add(f);
			}
			if (fields.size === 0) continue;
			await model.bulkCreate(
				rows.map(r => r.get({ plain: true })),
				{ transaction: t, updateOnDuplicate: [...fields] as never, validate: false },
			);
		}
		const plain = new Map<ModelStatic<Model>, { rows: object[]; fields: Set<string> }>();
		for (const row of this.changedPlain) {
			const { model, read } = this.held.get(row)!;
			const fields = Object.entries(row).filter(([k, v]) => !sameValue(v, read[k])).map(([k]) => k);
			if (fields.length === 0) continue;
			const group = plain.get(model) ?? { rows: [], fields: new Set<string>() };
			group.rows.push(row);
			for (const f of fields) group.fields.add(f);
			plain.set(model, group);
		}
		this.changedPlain.clear();
		for (const [model, { rows, fields }] of plain) await updateRows(model, rows as never[], [...fields], t);
		for (const [model, rows] of this.inserts) await insertRows(model, rows as never[], t);
		this.inserts.clear();
	}
}

/** A held row's column unchanged since its read (dates by their time). */
function sameValue(a: unknown, b: unknown): boolean {
	if (a instanceof Date && b instanceof Date) return a.getTime() === b.getTime();
	return a === b;
}

/**
 * Ends pending checkouts (of an intent or a link): expired when nothing arrived, failed when a
 * partial payment did. Funds that arrive later are still recorded by the credit path.
 */
export async function lapseCheckouts(models: Models, t: DbTx, where: { paymentLinkId: string; excludeId?: string }, now: Date, held?: HeldCheckouts): Promise<void> {
	let rows: Transaction[];
	if (held?.links.has(where.paymentLinkId)) {
		// Every pending checkout of the link is held (locked by the caller): nothing to read.
		rows = [...held.byId.values()].filter(r => r.paymentLinkId === where.paymentLinkId && r.status === "pending" && r.id !== where.excludeId);
	} else {
		const base = { paymentLinkId: where.paymentLinkId, status: "pending", ...(where.excludeId ? { id: { [Op.ne]: where.excludeId } } : {}) };
		const found = await models.Transaction.findAll({ where: base, transaction: t, lock: t.LOCK.UPDATE });
		// Rows the caller holds move as instances, so its later saves keep the lapse.
		rows = held ? found.map(r => held.byId.get(r.id) ?? r).filter(r => r.status === "pending") : found;
	}
	for (const row of rows) {
		row.status = lapsedStatus(row.amountReceived);
		row.updatedAt = now;
		if (held?.writes) held.writes.add(row);
		else await row.save({ transaction: t });
	}
}

// ---------------------------------------------------------------------------------------------
// Intent changes shared by services

export type CancellationReason = "requested_by_merchant" | "abandoned" | "expired";

/**
 * Cancels an intent, with it and its link already locked (withPaymentLocked): 400 from a
 * succeeded one, unchanged answer for a canceled one. Its link becomes canceled (expired for
 * expiry) unless final, its pending checkouts lapse, and payment_intent.canceled is written.
 */
export async function cancelIntent(app: App, t: DbTx, effects: Effects, intent: PaymentIntent, link: PaymentLink | null, reason: CancellationReason, now: Date): Promise<PaymentIntent> {
	const { models } = app;
	const tr = transition(intent.status, reason === "expired" ? "expire" : "cancel");
	if (!tr.changed) return intent;
	intent.status = tr.to;
	intent.cancellationReason = reason;
	intent.canceledAt = now;
	intent.updatedAt = now;
	await intent.save({ transaction: t });
	if (link && !isFinalLinkStatus(link.status)) {
		link.status = reason === "expired" ? "expired" : "canceled";
		link.updatedAt = now;
		await link.save({ transaction: t });
	}
	await lapseCheckouts(models, t, { paymentLinkId: intent.paymentLinkId }, now);
	if (tr.event) await recordIntentEvent(models, t, effects, intent, tr.event, now, await latestTransactionOf(models, intent, t));
	return intent;
}

// ---------------------------------------------------------------------------------------------
// Expiry

export interface SweepScope {
	organizationId?: string;
	paymentLinkId?: string;
}

export interface SweepResult {
	transactions: number;
	intents: number;
	links: number;
}

const SWEEP_BATCH = 200;

/**
 * Applies every expiry that is due, each in its own DB transaction:
 * 1. pending checkouts past their payment window -> expired / failed; an open intent left without
 *    an open checkout goes back to requires_payment_method (event of that name);
 * 2. open intents past expires_at with no checkout still inside its window -> canceled, reason
 *    `expired` (event payment_intent.canceled), their link expired;
 * 3. active or paused links past expiresAt with no checkout in its window -> expired.
 * A checkout opened before the expiry runs to the end of its window (its payer may be paying).
 */
export async function sweepExpired(app: App, broker: ServiceBroker, scope: SweepScope = {}): Promise<SweepResult> {
	const { models, clock } = app;
	const now = clock.now();
	const result: SweepResult = { transactions: 0, intents: 0, links: 0 };
	const scoped = (w: Record<string, unknown>, linkField: string): WhereOptions => ({
		...w,
		...(scope.organizationId ? { organizationId: scope.organizationId } : {}),
		...(scope.paymentLinkId ? { [linkField]: scope.paymentLinkId } : {}),
	});

	const dueTxs = await models.Transaction.findAll({
		where: scoped({ status: "pending", expiresAt: { [Op.lte]: now } }, "paymentLinkId"),
		attributes: ["id"],
		limit: SWEEP_BATCH,
	});
	for (const due of dueTxs) {
		const effects = new Effects();
		const changed = await withPaymentLocked(app, { transactionId: due.id }, async (t, { intent, tx }) => {
			if (!tx || tx.status !== "pending" || tx.expiresAt.getTime() > now.getTime()) return false;
			tx.status = lapsedStatus(tx.amountReceived);
			tx.updatedAt = now;
			await tx.save({ transaction: t });
			if (intent && OPEN_STATES.includes(intent.status) && (await countOpenCheckouts(models, tx.paymentLinkId, now, t)) === 0) {
				await moveIntent(models, t, effects, intent, "lapse", now, tx);
			}
			return true;
		});
		if (changed) result.transactions++;
		await effects.flush(broker);
	}

	const dueIntents = await models.PaymentIntent.findAll({
		where: scoped({ status: { [Op.in]: [...OPEN_STATES] }, expiresAt: { [Op.lte]: now } }, "paymentLinkId"),
		attributes: ["id"],
		limit: SWEEP_BATCH,
	});
	for (const due of dueIntents) {
		const effects = new Effects();
		const changed = await withPaymentLocked(app, { intentId: due.id }, async (t, { intent, link }) => {
			if (!intent || !OPEN_STATES.includes(intent.status) || !intent.expiresAt || intent.expiresAt.getTime() > now.getTime()) return false;
			if ((await countOpenCheckouts(models, intent.paymentLinkId, now, t)) > 0) return false;
			await cancelIntent(app, t, effects, intent, link, "expired", now);
			return true;
		});
		if (changed) result.intents++;
		await effects.flush(broker);
	}

	const dueLinks = await models.PaymentLink.findAll({
		where: scoped({ status: { [Op.in]: ["active", "paused"] }, expiresAt: { [Op.lte]: now }, deletedAt: null }, "id"),
		attributes: ["id"],
		limit: SWEEP_BATCH,
	});
	for (const due of dueLinks) {
		const effects = new Effects();
		const changed = await withPaymentLocked(app, { linkId: due.id }, async (t, { intent, link }) => {
			if (!link || link.deletedAt || effectiveLinkStatus(link.status, link.expiresAt, now) !== "expired" || link.status === "expired") return false;
			if ((await countOpenCheckouts(models, link.id, now, t)) > 0) return false;
			if (intent && OPEN_STATES.includes(intent.status)) await cancelIntent(app, t, effects, intent, link, "expired", now);
			if (link.status === "active" || link.status === "paused") {
				link.status = "expired";
				link.updatedAt = now;
				await link.save({ transaction: t });
			}
			return true;
		});
		if (changed) result.links++;
		await effects.flush(broker);
	}

	// Idempotency keys past their 24 hours (only by the periodic sweep).
	if (!scope.organizationId && !scope.paymentLinkId) {
		await models.IdempotencyKey.destroy({ where: { expiresAt: { [Op.lte]: now } }, limit: 1000 } as Parameters<typeof models.IdempotencyKey.destroy>[0]);
	}
	return result;
}

/** Whether a row read for a response may show a stale state (then the scoped sweep runs first). */
export function expiryDue(row: { status: string; expiresAt: Date | null }, now: Date): boolean {
	if (!row.expiresAt || row.expiresAt.getTime() > now.getTime()) return false;
	return ["pending", "requires_payment_method", "requires_confirmation", "processing", "active", "paused"].includes(row.status);
}

// ---------------------------------------------------------------------------------------------
// Deposit addresses and checkouts

const seeds = new Map<string, { seed: Uint8Array; fingerprint: string }>();

/** The HD master seed (MASTER_SEED, else DATA_DIR/hd-seed.enc sealed under MASTER_KEY), once per process. */
export function hdSeed(app: App): { seed: Uint8Array; fingerprint: string } {
	const mnemonic = app.config.masterSeed;
	const cacheKey = digest(`${app.config.dataDir}|${mnemonic ?? ""}`, app.config.secrets.master);
	let entry = seeds.get(cacheKey);
	if (!entry) {
		const seed = loadOrCreateSeed(app.config.dataDir, app.config.secrets.master, mnemonic);
		entry = { seed, fingerprint: seedFingerprint(seed) };
		seeds.set(cacheKey, entry);
	}
	return entry;
}

/**
 * The next derivation index of a chain type, from its counter row locked for the rest of the
 * DB transaction: concurrent checkouts of one chain type take turns here (MySQL row lock, SQLite
 * IMMEDIATE transactions), and a rolled-back checkout gives its index back. UNIQUE (chainType,
 * derivationIndex) on deposit_addresses stays as the last guard.
 */
export async function allocateIndex(models: Models, t: DbTx, chainType: string): Promise<number> {
	const counter = await models.DepositAddressCounter.findByPk(chainType, forUpdate(t));
	if (!counter) {
		// A chain type added after the migration seeded the counters: the first checkout creates its row
		// (two at once: one insert fails on the primary key and that checkout runs again).
		await models.DepositAddressCounter.create({ chainType, nextIndex: 1 }, { transaction: t });
		return 0;
	}
	const index = counter.nextIndex;
	counter.nextIndex = index + 1;
	await counter.save({ transaction: t });
	return index;
}

export interface CheckoutInput {
	linkId: string;
	payerToken: TokenView;
	payerNetwork: NetworkView;
	quote: QuoteAmounts;
	supportPercent: string;
	paymentWindowMs: number;
	maxOpenCheckouts: number;
	payerEmail?: string | null;
	payerAddress?: string | null;
	/** What the link's intent must allow (the 400 names it): pay, or simulate. */
	intentOperation?: "pay" | "simulate";
	/** The intent's latest checkout, while pending inside its window, is answered instead of a new one (decided under the locks). */
	reuseIntentCheckout?: boolean;
	/** Runs inside the DB transaction once the checkout is written (idempotency record). */
	onRecorded?: (t: DbTx, tx: Transaction) => Promise<void>;
}

/**
 * Opens a checkout: a pending transaction with a fresh deposit address on the payer's network,
 * derived at the chain type's next index (allocateIndex). Everything that decides whether it may
 * open (link payable, intent payable, the open-checkout cap) is read after the intent and link
 * locks, so concurrent checkouts of one link take turns and the cap holds.
 */
export async function openCheckout(app: App, input: CheckoutInput): Promise<Transaction> {
	const { models, clock } = app;
	const network = input.payerNetwork;
	const deriver = depositDeriver(app, network);
	return withPaymentLocked(
		app,
		{ linkId: input.linkId },
		async (t, { intent, link }) => {
			const now = clock.now();
			if (!link || link.deletedAt) throw badRequest("Payment link not found");
			// A simulation is asked of the intent, so its state is the one named; a payer pays the link.
			const operation = input.intentOperation ?? "pay";
			if (intent && operation === "simulate") transition(intent.status, operation);
			assertLinkPayable(effectiveLinkStatus(link.status, link.expiresAt, now));
			if (intent) transition(intent.status, operation);
			if (input.reuseIntentCheckout && intent?.latestTransactionId) {
				const open = await models.Transaction.findByPk(intent.latestTransactionId, forUpdate(t));
				if (open && open.paymentLinkId === link.id && open.status === "pending" && open.expiresAt.getTime() > now.getTime()) return open;
			}
			if ((await countOpenCheckouts(models, link.id, now, t)) >= input.maxOpenCheckouts) {
				throw badRequest("This payment link has too many open checkouts; wait for one to expire", { paymentLink: "tooManyOpenCheckouts" });
			}
			const txId = uuid();
			const deposit = await createDepositAddress(models, t, deriver, { organizationId: link.organizationId, transactionId: txId }, now);
			const tx = await models.Transaction.create(
				{
					id: txId,
					organizationId: link.organizationId,
					mode: link.mode,
					paymentLinkId: link.id,
					intentId: intent?.id ?? null,
					payerTokenId: input.payerToken.id,
					payerNetworkId: network.id,
					supportPercent: input.supportPercent,
					amount: input.quote.originalAmountInPayerToken,
					totalAmount: input.quote.totalAmount,
					amountReceived: "0",
					overpaidAmount: "0",
					quote: { ...input.quote },
					depositAddressId: deposit.id,
					depositAddress: deposit.address,
					status: "pending",
					simulated: false,
					hash: null,
					payerEmail: input.payerEmail ?? null,
					payerAddress: input.payerAddress ?? null,
					expiresAt: new Date(now.getTime() + input.paymentWindowMs),
					confirmedAt: null,
					completedAt: null,
					createdAt: now,
					updatedAt: now,
				},
				{ transaction: t },
			);
			if (intent) {
				intent.latestTransactionId = tx.id;
				intent.updatedAt = now;
				await intent.save({ transaction: t });
			}
			if (input.payerEmail || input.payerAddress) {
				if (input.payerEmail) link.payerEmail = input.payerEmail;
				if (input.payerAddress) link.payerAddress = input.payerAddress;
				link.updatedAt = now;
				await link.save({ transaction: t });
			}
			if (input.onRecorded) await input.onRecorded(t, tx);
			return tx;
		},
		{ attempts: 5, retryOn: isAllocationConflict },
	);
}

/** A fresh deposit address for an existing (locked) checkout whose payer network changed. */
export async function reassignDepositAddress(app: App, t: DbTx, tx: Transaction, network: NetworkView, now: Date): Promise<void> {
	const deposit = await createDepositAddress(app.models, t, depositDeriver(app, network), { organizationId: tx.organizationId, transactionId: tx.id }, now);
	tx.depositAddressId = deposit.id;
	tx.depositAddress = deposit.address;
}

/** What deposit addresses on `network` are derived with: the HD seed, the chain type's codec and parameters. */
function depositDeriver(app: App, network: NetworkView) {
	const { seed, fingerprint } = hdSeed(app);
	return { network, seed, fingerprint, codec: codecFor(network.chainType), params: chainParamsFor(network) };
}

/** A checkout's deposit address, derived at the chain type's next index (allocateIndex) and recorded. */
async function createDepositAddress(models: Models, t: DbTx, d: ReturnType<typeof depositDeriver>, owner: { organizationId: string; transactionId: string }, now: Date): Promise<{ id: string; address: string }> {
	const index = await allocateIndex(models, t, d.network.chainType);
	const derived = await d.codec.deriveAddress(d.seed, d.params, index);
	const id = uuid();
	await models.DepositAddress.create(
		{
			id,
			chainType: d.network.chainType,
			networkId: d.network.id,
			derivationIndex: index,
			address: derived.address,
			seedFingerprint: d.fingerprint,
			organizationId: owner.organizationId,
			transactionId: owner.transactionId,
			createdAt: now,
		},
		{ transaction: t },
	);
	return { id, address: derived.address };
}

