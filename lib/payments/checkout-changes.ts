/**
 * `payments.checkouts.changed`: after a DB transaction that changed a checkout (transactions row),
 * a payment link or an intent commits, every node that listens hears the ids (the pay page's
 * event streams on each gateway node re-read only the checkouts named). Broadcast, not emit: an
 * emitted event reaches one node per service group, and every gateway node holds its own streams.
 *
 * The ids come from the models' own save hooks on this node's Sequelize instance, so every path
 * that moves a checkout (credits single or batched, detections, reverts, expiry, cancels, repricing)
 * announces it without each one remembering to. Best effort, like any broker event: a change made
 * outside these models or a lost message is caught by the streams' slow safety-net poll
 * (PAY_EVENTS_POLL_MS, docs/pay-page.md "Live status").
 */
import type { ServiceBroker } from "moleculer";
import type { Transaction as DbTx } from "sequelize";
import type { Models } from "../../models";

export const CHECKOUTS_CHANGED_EVENT = "payments.checkouts.changed";

export interface CheckoutsChanged {
	/** Checkouts (transactions) whose row changed. */
	transactionIds: string[];
	/** Links whose row, or whose intent's row, changed: every checkout of the link may show it. */
	linkIds: string[];
}

/** Ids per event: a burst of credits (a block of thousands) goes out in a few messages, none large. */
const MAX_IDS_PER_EVENT = 1_000;

type Hookable = { addHook(name: string, fn: (...args: any[]) => void): unknown };

/** Collects changed ids and broadcasts them once per turn of the event loop (a batch of credits is one message). */
export class CheckoutChangeAnnouncer {
	private tx = new Set<string>();
	private links = new Set<string>();
	private scheduled = false;

	constructor(private readonly broker: ServiceBroker) {}

	note(kind: "tx" | "link", id: unknown, dbTx?: DbTx | null): void {
		if (typeof id !== "string" || !id) return;
		const add = () => {
			(kind === "tx" ? this.tx : this.links).add(id);
			this.schedule();
		};
		// Only what committed is announced; a rolled-back change never was.
		if (dbTx) dbTx.afterCommit(add);
		else add();
	}

	private schedule(): void {
		if (this.scheduled) return;
		this.scheduled = true;
		setImmediate(() => this.flush());
	}

	flush(): void {
		this.scheduled = false;
		const tx = [...this.tx];
		const links = [...this.links];
		this.tx.clear();
		this.links.clear();
		for (let i = 0; i < Math.max(tx.length, links.length); i += MAX_IDS_PER_EVENT) {
			const payload: CheckoutsChanged = { transactionIds: tx.slice(i, i + MAX_IDS_PER_EVENT), linkIds: links.slice(i, i + MAX_IDS_PER_EVENT) };
			Promise.resolve(this.broker.broadcast(CHECKOUTS_CHANGED_EVENT, payload)).catch(err =>
				this.broker.logger.debug("Checkout change not announced (the pay page's safety-net poll shows it):", (err as Error)?.message),
			);
		}
	}
}

/** Hooks this node's payment models so their committed changes are announced (lib/node.ts). */
export function announceCheckoutChanges(broker: ServiceBroker, models: Pick<Models, "Transaction" | "PaymentLink" | "PaymentIntent">): CheckoutChangeAnnouncer {
	const announcer = new CheckoutChangeAnnouncer(broker);
	const saved = (model: Hookable, kind: "tx" | "link", idOf: (row: any) => unknown) =>
		model.addHook("afterSave", (row: any, options: { transaction?: DbTx | null }) => announcer.note(kind, idOf(row), options?.transaction));
	// Multi-row writes: a credit batch writes its checkouts, links and intents in one upsert each (DeferredWrites, lib/payments/store.ts).
	const bulk = (model: Hookable, kind: "tx" | "link", idOf: (row: any) => unknown) =>
		model.addHook("afterBulkCreate", (rows: any[], options: { transaction?: DbTx | null }) => {
			for (const row of rows ?? []) announcer.note(kind, idOf(row), options?.transaction);
		});
	for (const [model, kind, idOf] of [
		[models.Transaction, "tx", (row: any) => row.id],
		[models.PaymentLink, "link", (row: any) => row.id],
		[models.PaymentIntent, "link", (row: any) => row.paymentLinkId],
	] as const) {
		saved(model as unknown as Hookable, kind, idOf);
		bulk(model as unknown as Hookable, kind, idOf);
	}
	// Bulk updates name their rows only by their filter: a link's checkouts, or checkouts by id.
	(models.Transaction as unknown as Hookable).addHook("afterBulkUpdate", (options: { where?: Record<string, unknown>; transaction?: DbTx | null }) => {
		const where = options?.where ?? {};
		const ids = Array.isArray(where.id) ? where.id : [where.id];
		for (const id of ids) announcer.note("tx", id, options?.transaction);
		announcer.note("link", where.paymentLinkId, options?.transaction);
	});
	return announcer;
}
