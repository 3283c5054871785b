/**
 * The durable delivery queue (webhook_deliveries) and its log: the webhooks service's database
 * work. The rules, in one place:
 * - Relay: unpublished outbox rows become deliveries and are marked published in ONE DB
 *   transaction, rows locked first, so two relaying nodes never make two deliveries of an event
 *   (UNIQUE (eventId, apiKeyId) stays as the last guard).
 * - Claim: attempts start with one conditional UPDATE of a batch of rows (`status = 'pending'` →
 *   `sending`, one lease token for the batch, attempts + 1). Only one node's UPDATE can match a
 *   row, so an attempt is sent by one node; the node reads back what its token took.
 * - Outcome: recorded only by the lease holder (`leaseToken` in the WHERE) together with the log
 *   rows, in one DB transaction for a batch of outcomes: one UPDATE per claim token and distinct
 *   outcome, one multi-row INSERT of the logs; UNIQUE (deliveryId, attemptNumber) logs an attempt
 *   once.
 * - A lease that ran out is an attempt whose node stopped mid-send: another node records it as
 *   failed ("interrupted") and the schedule goes on, so nothing waits forever.
 */
import { Op, Sequelize, Transaction as DbTx } from "sequelize";
import type { App } from "../app";
import { uuid } from "../ids";
import { inTransaction, isLockConflict } from "../db";
import type { Models } from "../../models";
import type { WebhookDelivery, DeliveryKind, DeliveryStatus } from "../../models/webhook-delivery.model";
import type { WebhookTarget } from "../keys/webhook-url";
import type { WebhooksConfig } from "./config";
import { isDelivered, nextAttemptAt, truncateResponse } from "./policy";
import type { WebhookOutcome } from "../metrics";
import { changeRows, insertRows, selectRows, SqlValue } from "./sql";

export type { WebhookTarget };

export type TargetsOf = (ids: number[]) => Promise<Map<number, WebhookTarget>>;

/** The JSON body of an outbox event (decisions.md "Webhooks"): `{ id, type, created, livemode, data: { object } }`. */
export function envelopeBody(event: { id: string; type: string; createdAt: Date; livemode: boolean; payload: Record<string, unknown> }): string {
	return JSON.stringify({ id: event.id, type: event.type, created: event.createdAt.toISOString(), livemode: event.livemode, data: { object: event.payload } });
}

export interface NewDelivery {
	eventId: string;
	kind: DeliveryKind;
	type: string;
	target: WebhookTarget;
	userId: number | null;
	livemode: boolean;
	body: string;
	now: Date;
}

function deliveryRow(d: NewDelivery) {
	return {
		id: uuid(),
		eventId: d.eventId,
		kind: d.kind,
		type: d.type,
		organizationId: d.target.organizationId,
		apiKeyId: d.target.id,
		userId: d.userId,
		livemode: d.livemode,
		url: d.target.webhookUrl as string,
		body: d.body,
		status: "pending" as const,
		attempts: 0,
		nextAttemptAt: d.now,
		leaseOwner: null,
		leaseToken: null,
		leaseUntil: null,
		lastStatusCode: null,
		lastError: null,
		createdAt: d.now,
		updatedAt: d.now,
		deliveredAt: null,
	};
}

export async function enqueue(models: Models, d: NewDelivery, t?: DbTx): Promise<WebhookDelivery> {
	return models.WebhookDelivery.create(deliveryRow(d), { transaction: t });
}

/** A key that should receive events: active and with a URL. */
export function receives(target: WebhookTarget | undefined): target is WebhookTarget & { webhookUrl: string } {
	return !!target && target.status === "active" && !!target.webhookUrl;
}

/**
 * Moves up to `batch` unpublished outbox rows into the queue. Rows whose key has no URL (or no
 * key: bearer-token and pay-page intents) are marked published with no delivery. Returns how
 * many rows it published.
 */
export async function relayOutbox(app: App, targetsOf: TargetsOf, batch: number): Promise<number> {
	const { models, sequelize, clock } = app;
	const peek = await models.OutboxEvent.findAll({ where: { publishedAt: null }, attributes: ["id", "apiKeyId"], order: [["createdAt", "ASC"]], limit: batch, raw: true });
	if (peek.length === 0) return 0;
	const keyIds = [...new Set(peek.map(r => r.apiKeyId).filter((id): id is number => id !== null && id !== undefined).map(Number))];
	const targets = keyIds.length ? await targetsOf(keyIds) : new Map<number, WebhookTarget>();
	return inTransaction(sequelize, async t => {
		const now = clock.now();
		// Locked and re-read: a row another node relayed meanwhile is no longer unpublished here.
		const rows = await models.OutboxEvent.findAll({
			where: { id: peek.map(r => r.id), publishedAt: null },
			transaction: t,
			lock: t.LOCK.UPDATE,
		});
		if (rows.length === 0) return 0;
		const deliveries = [];
		for (const row of rows) {
			const target = row.apiKeyId === null || row.apiKeyId === undefined ? undefined : targets.get(Number(row.apiKeyId));
			if (!receives(target) || target.organizationId !== row.organizationId) continue;
			deliveries.push(
				deliveryRow({
					eventId: row.id,
					kind: "event",
					type: row.type,
					target,
					userId: target.createdByUserId,
					livemode: !!row.livemode,
					body: envelopeBody({ id: row.id, type: row.type, createdAt: row.createdAt, livemode: !!row.livemode, payload: row.payload }),
					now,
				}),
			);
		}
		if (deliveries.length) {
			// Every column, as deliveryRow lists them (the same for each row).
			const columns = Object.keys(deliveries[0]) as Array<keyof (typeof deliveries)[number]>;
			await insertRows(sequelize, "webhook_deliveries", columns, deliveries.map(d => columns.map(c => d[c])), t);
		}
		await changeRows(sequelize, "UPDATE outbox_events SET publishedAt = ? WHERE id IN (?) AND publishedAt IS NULL", [now, rows.map(r => r.id)], t);
		return rows.length;
	});
}

export interface ClaimLimits {
	/** Attempts this node may claim now, all endpoints together. */
	slots: number;
	/** Free claims per API key (endpoints at their cap are absent or 0); others get `perEndpoint`. */
	freeByKey: Map<number, number>;
	perEndpoint: number;
	/** Only this delivery (a test send's first attempt). */
	deliveryId?: string;
}

/**
 * A claimed attempt as the sender needs it: plain values read back after the claim (no model
 * instance: a batch of them is built per claim). `attempts` is the number of this attempt;
 * `leaseUntil` is the lease the claim set (the node's clock), checked before sending.
 */
export interface ClaimedDelivery {
	id: string;
	eventId: string;
	type: string;
	organizationId: string;
	apiKeyId: number;
	userId: number | null;
	url: string;
	body: string;
	status: DeliveryStatus;
	attempts: number;
	leaseOwner: string | null;
	leaseToken: string;
	leaseUntil: Date;
}

const CLAIMED_COLUMNS = ["id", "eventId", "type", "organizationId", "apiKeyId", "userId", "url", "body", "status", "attempts", "leaseOwner", "leaseToken"];

/** The rows a claim (or take-over) under `token` holds now, as plain values. */
async function claimedRows(models: Models, token: string, leaseUntil: Date): Promise<ClaimedDelivery[]> {
	const rows = (await models.WebhookDelivery.findAll({ where: { leaseToken: token, status: "sending" }, attributes: CLAIMED_COLUMNS, raw: true })) as unknown as ClaimedDelivery[];
	for (const r of rows) {
		r.apiKeyId = Number(r.apiKeyId);
		r.attempts = Number(r.attempts);
		r.userId = r.userId === null || r.userId === undefined ? null : Number(r.userId);
		r.leaseUntil = leaseUntil;
	}
	return rows;
}

/** claimBatch for callers that need only the rows. */
export async function claimDue(app: App, cfg: WebhooksConfig, owner: string, limits: ClaimLimits): Promise<ClaimedDelivery[]> {
	return (await claimBatch(app, cfg, owner, limits)).rows;
}

/** A due row as the claim reads it: everything the attempt needs, so nothing is read back after the claim. */
interface Candidate {
	id: string;
	eventId: string;
	type: string;
	organizationId: string;
	apiKeyId: number | string;
	userId: number | string | null;
	url: string;
	body: string;
	attempts: number | string;
}

/**
 * Starts the next attempt of up to `slots` due deliveries, within the per-key limits, with one
 * SELECT of candidates (with the columns the attempts need) and one conditional UPDATE under one
 * lease token. The UPDATE matches a row only while it is still pending with the attempt count
 * read (rows read with different counts are one UPDATE per count, in practice never more than
 * one), so a row it changed is the row as read, its attempt that count + 1. When the UPDATE
 * changed fewer rows than asked (another node claimed some first), the ids under our token are
 * read back. Returns the rows this node now holds, and `more`: false when every due row seen was
 * claimed and there were no others (nothing is left to claim until something new is due), true
 * otherwise (rows skipped for a key at its cap, a full candidate page, or rows another node took
 * first).
 */
export async function claimBatch(app: App, cfg: WebhooksConfig, owner: string, limits: ClaimLimits): Promise<{ rows: ClaimedDelivery[]; more: boolean }> {
	const { sequelize, clock } = app;
	if (limits.slots <= 0) return { rows: [], more: true };
	const now = clock.now();
	const full = [...limits.freeByKey].filter(([, free]) => free <= 0).map(([id]) => id);
	const values: Array<SqlValue | SqlValue[]> = [now];
	let where = "status = 'pending' AND nextAttemptAt <= ?";
	if (limits.deliveryId) {
		where += " AND id = ?";
		values.push(limits.deliveryId);
	}
	if (full.length) {
		where += " AND apiKeyId NOT IN (?)";
		values.push(full);
	}
	// Room to skip rows of keys with few free slots left; keys at their cap are not read at all.
	const limit = limits.slots * 2;
	values.push(limit);
	const candidates = await selectRows<Candidate>(
		sequelize,
		`SELECT id, eventId, type, organizationId, apiKeyId, userId, url, body, attempts FROM webhook_deliveries WHERE ${where} ORDER BY nextAttemptAt ASC LIMIT ?`,
		values,
	);
	const seenAll = candidates.length < limit;
	const picked: Candidate[] = [];
	const taken = new Map<number, number>();
	for (const c of candidates) {
		if (picked.length >= limits.slots) break;
		const key = Number(c.apiKeyId);
		const free = (limits.freeByKey.get(key) ?? limits.perEndpoint) - (taken.get(key) ?? 0);
		if (free <= 0) continue;
		taken.set(key, (taken.get(key) ?? 0) + 1);
		picked.push(c);
	}
	if (picked.length === 0) return { rows: [], more: !seenAll || candidates.length > 0 };
	const token = uuid();
	const leaseUntil = new Date(now.getTime() + cfg.leaseMs);
	let count = 0;
	for (const group of groupBy(picked, c => String(c.attempts))) {
		count += await retryOnLockConflict(() =>
			changeRows(
				sequelize,
				"UPDATE webhook_deliveries SET status = 'sending', leaseOwner = ?, leaseToken = ?, leaseUntil = ?, attempts = attempts + 1, updatedAt = ? WHERE id IN (?) AND status = 'pending' AND attempts = ?",
				[owner, token, leaseUntil, now, group.map(c => c.id), Number(group[0].attempts)],
			),
		);
	}
	const more = !seenAll || picked.length < candidates.length || count < picked.length;
	if (count === 0) return { rows: [], more };
	let ours = picked;
	if (count < picked.length) {
		const held = await selectRows<{ id: string }>(sequelize, "SELECT id FROM webhook_deliveries WHERE leaseToken = ? AND status = 'sending'", [token]);
		const mine = new Set(held.map(r => r.id));
		ours = picked.filter(c => mine.has(c.id));
	}
	const rows = ours.map(
		(c): ClaimedDelivery => ({
			id: c.id,
			eventId: c.eventId,
			type: c.type,
			organizationId: c.organizationId,
			apiKeyId: Number(c.apiKeyId),
			userId: c.userId === null || c.userId === undefined ? null : Number(c.userId),
			url: c.url,
			body: c.body,
			status: "sending",
			attempts: Number(c.attempts) + 1,
			leaseOwner: owner,
			leaseToken: token,
			leaseUntil,
		}),
	);
	return { rows, more };
}

/** One statement outside a transaction, run again when InnoDB picked it as a deadlock victim. */
async function retryOnLockConflict<T>(fn: () => Promise<T>, attempts = 3): Promise<T> {
	for (let attempt = 1; ; attempt++) {
		try {
			return await fn();
		} catch (err) {
			if (attempt >= attempts || !isLockConflict(err)) throw err;
		}
	}
}

export interface AttemptOutcome {
	delivery: ClaimedDelivery;
	statusCode: number | null;
	response: string;
	error: string | null;
	durationMs: number | null;
	/** The URL called (the key's current one). */
	url: string;
	/** Attempt was not sent (key revoked or URL removed): the delivery ends without a log row. */
	canceled?: boolean;
}

/** An attempt recorded by recordOutcomes (canceled ones are not: they were never sent). */
export interface RecordedAttempt {
	outcome: WebhookOutcome;
	durationMs: number | null;
}

/** Groups by a string key, keeping the order of first appearance. */
function groupBy<T>(items: T[], keyOf: (item: T) => string): T[][] {
	const groups = new Map<string, T[]>();
	for (const item of items) {
		const k = keyOf(item);
		const g = groups.get(k);
		if (g) g.push(item);
		else groups.set(k, [item]);
	}
	return [...groups.values()];
}

/** The columns of a webhook_logs row written by recordOutcomes (the id is the table's own). */
const LOG_COLUMNS = ["deliveryId", "eventId", "organizationId", "apiKeyId", "userId", "event", "url", "statusCode", "success", "attemptNumber", "error", "response", "durationMs", "createdAt"] as const;

/**
 * Records finished attempts: each delivery's new state and its log row, in one DB transaction
 * for the batch. Attempts with the same claim token and the same new state (delivered; retry due
 * at the same time after the same answer; failed; canceled) share one UPDATE; all log rows are
 * one INSERT. Returns the attempts recorded (an attempt whose lease this node lost is not), once
 * the transaction committed.
 */
export async function recordOutcomes(app: App, cfg: WebhooksConfig, outcomes: AttemptOutcome[]): Promise<RecordedAttempt[]> {
	if (outcomes.length === 0) return [];
	const { sequelize, clock } = app;
	// A deadlock with another node's claim or record (InnoDB) rolls back and runs again.
	return inTransaction(sequelize, async t => {
		const now = clock.now();
		const changes = outcomes.map(o => {
			if (!o.canceled && isDelivered(o.statusCode)) {
				return { o, result: "delivered" as const, set: { status: "delivered" as const, deliveredAt: now, lastStatusCode: 200, lastError: null, leaseOwner: null, leaseUntil: null, nextAttemptAt: null, updatedAt: now } };
			}
			const next = o.canceled ? null : nextAttemptAt(cfg, o.delivery.attempts, now);
			const status: DeliveryStatus = o.canceled ? "canceled" : next ? "pending" : "failed";
			const lastError = o.error ?? (o.statusCode !== null ? `HTTP ${o.statusCode}` : null);
			return { o, result: o.canceled ? null : next ? ("retrying" as const) : ("failed" as const), set: { status, nextAttemptAt: next, lastStatusCode: o.statusCode, lastError, leaseOwner: null, leaseUntil: null, updatedAt: now } };
		});
		type Change = (typeof changes)[number];
		// Only the lease holder writes: the claim's token in the WHERE. Rows of one group share it.
		const groups = groupBy(changes, c => `${c.o.delivery.leaseToken}|${c.set.status}|${c.set.nextAttemptAt?.getTime() ?? ""}|${c.set.lastStatusCode ?? ""}|${c.set.lastError ?? ""}`);
		const recorded: Change[] = [];
		for (const group of groups) {
			const token = group[0].o.delivery.leaseToken;
			const ids = group.map(c => c.o.delivery.id);
			const set = group[0].set as Record<string, SqlValue>;
			const columns = Object.keys(set);
			const count = await changeRows(
				sequelize,
				`UPDATE webhook_deliveries SET ${columns.map(c => `${c} = ?`).join(", ")} WHERE id IN (?) AND leaseToken = ? AND status = 'sending'`,
				[...columns.map(c => set[c]), ids, token],
				t,
			);
			let ours = group;
			if (count !== group.length) {
				// Some lease ran out and was taken over meanwhile (a new token): record only the rows
				// this update changed, i.e. those still under our token (locked by the update until commit).
				const rows = await selectRows<{ id: string }>(sequelize, "SELECT id FROM webhook_deliveries WHERE id IN (?) AND leaseToken = ? AND status = ?", [ids, token, set.status], t);
				const mine = new Set(rows.map(r => r.id));
				ours = group.filter(c => mine.has(c.o.delivery.id));
			}
			recorded.push(...ours);
		}
		const logs: SqlValue[][] = [];
		for (const { o } of recorded) {
			if (o.canceled) continue;
			const d = o.delivery;
			const success = isDelivered(o.statusCode);
			// In LOG_COLUMNS' order.
			logs.push([
				d.id,
				d.eventId,
				d.organizationId,
				Number(d.apiKeyId),
				d.userId ?? null,
				d.type,
				o.url,
				o.statusCode,
				success,
				d.attempts,
				success ? null : (o.error ?? `Endpoint answered ${o.statusCode}; only 200 counts as delivered`),
				truncateResponse(o.response, cfg.responseMaxChars),
				o.durationMs,
				now,
			]);
		}
		if (logs.length) await insertRows(sequelize, "webhook_logs", LOG_COLUMNS, logs, t);
		return recorded.filter(c => c.result !== null).map(c => ({ outcome: c.result as WebhookOutcome, durationMs: c.o.durationMs }));
	});
}

/**
 * Attempts whose lease ran out (their node stopped mid-send): taken over by this node and
 * returned, to be recorded as interrupted (the request may or may not have reached the endpoint;
 * receivers de-duplicate by event id).
 */
export async function takeOverExpired(app: App, cfg: WebhooksConfig, owner: string, limit: number): Promise<ClaimedDelivery[]> {
	const { models, clock } = app;
	const now = clock.now();
	const expired = await models.WebhookDelivery.findAll({ where: { status: "sending", leaseUntil: { [Op.lt]: now } }, attributes: ["id"], limit, raw: true });
	if (expired.length === 0) return [];
	const token = uuid();
	const leaseUntil = new Date(now.getTime() + cfg.leaseMs);
	const [count] = await retryOnLockConflict(() =>
		models.WebhookDelivery.update(
			{ leaseOwner: owner, leaseToken: token, leaseUntil, updatedAt: now },
			{ where: { id: expired.map(r => r.id), status: "sending", leaseUntil: { [Op.lt]: now } } },
		),
	);
	if (count === 0) return [];
	return claimedRows(models, token, leaseUntil);
}

/**
 * Claimed attempts that were never sent, given back: a service they need is away (the keys
 * service, for the key's URL and signing secret, while its node restarts), the node is stopping,
 * or the row waited in the node's queue until too little of its lease was left to send it.
 * Nothing was sent, so the claim is undone (pending again, due at `retryAt`, the attempt not
 * counted) instead of waiting out its lease and being recorded as interrupted, which counts as an
 * attempt: a core outage longer than a few leases would otherwise end deliveries as failed that
 * never left. Only under each claim's token; one UPDATE per token. Returns the rows released.
 */
export async function releaseClaimed(app: App, deliveries: ClaimedDelivery[], retryAt: Date): Promise<number> {
	const { models, sequelize, clock } = app;
	let released = 0;
	for (const group of groupBy(deliveries, d => d.leaseToken)) {
		const [count] = await retryOnLockConflict(() =>
			models.WebhookDelivery.update(
				{
					status: "pending",
					nextAttemptAt: retryAt,
					leaseOwner: null,
					leaseToken: null,
					leaseUntil: null,
					attempts: sequelize.literal("attempts - 1") as unknown as number,
					updatedAt: clock.now(),
				},
				{ where: { id: group.map(d => d.id), status: "sending", leaseToken: group[0].leaseToken } },
			),
		);
		released += count;
	}
	return released;
}

/** releaseClaimed for one attempt. */
export async function releaseUnsent(app: App, delivery: ClaimedDelivery, retryAt: Date): Promise<boolean> {
	return (await releaseClaimed(app, [delivery], retryAt)) === 1;
}

/** Where a delivery ended without reaching the merchant: what support may send again. */
export const REDELIVERABLE: readonly DeliveryStatus[] = ["failed", "canceled"];

/**
 * Support's redelivery (REPL `webhooks redeliver`): a delivery that ended without a 200 is due
 * again now, back on the durable path every attempt takes (claim, send, record). Its attempt
 * count goes on (the log numbers the new attempt next) and the retry schedule with it: one more
 * attempt after the last scheduled one, or the rest of the schedule for a delivery canceled
 * early. Conditional on the status and attempt count read, so two redeliveries at once re-queue
 * it once. Returns the attempts made before (the next one is that plus one), or null when the
 * delivery is not in a state to send again (the caller reads it to say why).
 */
export async function requeueEnded(app: App, deliveryId: string): Promise<number | null> {
	const { models, clock } = app;
	const row = await models.WebhookDelivery.findByPk(deliveryId, { attributes: ["id", "status", "attempts"] });
	if (!row || !REDELIVERABLE.includes(row.status)) return null;
	const now = clock.now();
	const [count] = await retryOnLockConflict(() =>
		models.WebhookDelivery.update(
			{ status: "pending", nextAttemptAt: now, leaseOwner: null, leaseToken: null, leaseUntil: null, updatedAt: now },
			{ where: { id: deliveryId, status: [...REDELIVERABLE], attempts: row.attempts } },
		),
	);
	return count === 1 ? Number(row.attempts) : null;
}

/** Removes logs, finished deliveries, published outbox rows and inbound events older than the retention. */
export async function prune(app: App, retentionDays: number): Promise<void> {
	if (retentionDays <= 0) return;
	const { models, clock } = app;
	const before = new Date(clock.now().getTime() - retentionDays * 86_400_000);
	const limited = { limit: 5000 } as Record<string, unknown>;
	await models.WebhookLog.destroy({ where: { createdAt: { [Op.lt]: before } }, ...limited });
	await models.WebhookDelivery.destroy({ where: { status: ["delivered", "failed", "canceled"], updatedAt: { [Op.lt]: before } }, ...limited });
	await models.OutboxEvent.destroy({ where: { publishedAt: { [Op.lt]: before } }, ...limited });
	await models.InboundEvent.destroy({ where: { receivedAt: { [Op.lt]: before }, dispatchedAt: { [Op.ne]: null } }, ...limited });
}

export type { Sequelize };
