/**
 * What support staff see of webhook deliveries and the outbox (the REPL's `tx`, `intent`,
 * `webhooks failed` and `outbox` commands; internal actions `webhooks.support.*`). Never the
 * signing secret (it is not stored here), nor request bodies or the merchant's answers: status,
 * error and timing only. URLs lose their query string (it may carry a token).
 */
import { Op } from "sequelize";
import type { Models } from "../../models";
import type { WebhookDelivery } from "../../models/webhook-delivery.model";

const iso = (d: Date | null | undefined): string | null => (d ? new Date(d).toISOString() : null);

/** Most deliveries one support read returns, and most attempts shown per delivery. */
export const SUPPORT_DELIVERIES_MAX = 100;
const ATTEMPTS_SHOWN = 20;
const ERROR_CHARS = 300;

/** A URL as support sees it: scheme, host, port and path; `?…` where a query string was. */
export function displayUrl(url: string): string {
	try {
		const u = new URL(url);
		return `${u.protocol}//${u.host}${u.pathname}${u.search ? "?…" : ""}`;
	} catch {
		return "(invalid url)";
	}
}

const clip = (text: string | null | undefined): string | null => (text ? (text.length > ERROR_CHARS ? `${text.slice(0, ERROR_CHARS)}…` : text) : null);

function deliveryView(d: WebhookDelivery) {
	return {
		id: d.id,
		eventId: d.eventId,
		kind: d.kind,
		type: d.type,
		organizationId: d.organizationId,
		apiKeyId: Number(d.apiKeyId),
		url: displayUrl(d.url),
		status: d.status,
		attempts: Number(d.attempts),
		lastStatusCode: d.lastStatusCode === null || d.lastStatusCode === undefined ? null : Number(d.lastStatusCode),
		lastError: clip(d.lastError),
		nextAttemptAt: iso(d.nextAttemptAt),
		deliveredAt: iso(d.deliveredAt),
		createdAt: iso(d.createdAt),
		updatedAt: iso(d.updatedAt),
	};
}

export type SupportDelivery = ReturnType<typeof deliveryView>;

/** Deliveries by their ids or by the events they carry, each with its attempts (oldest first). */
export async function deliveriesWithAttempts(models: Models, by: { ids?: string[]; eventIds?: string[] }) {
	const where: Record<string, unknown> = {};
	if (by.ids) where.id = by.ids;
	if (by.eventIds) where.eventId = by.eventIds;
	const rows = await models.WebhookDelivery.findAll({ where, order: [["createdAt", "ASC"]], limit: SUPPORT_DELIVERIES_MAX });
	const logs = rows.length
		? await models.WebhookLog.findAll({
				where: { deliveryId: rows.map(r => r.id) },
				attributes: ["deliveryId", "attemptNumber", "statusCode", "success", "error", "durationMs", "createdAt"],
				order: [["id", "ASC"]],
			})
		: [];
	return rows.map(d => ({
		...deliveryView(d),
		attemptLog: logs
			.filter(l => l.deliveryId === d.id)
			.slice(-ATTEMPTS_SHOWN)
			.map(l => ({
				attempt: Number(l.attemptNumber),
				statusCode: l.statusCode === null || l.statusCode === undefined ? null : Number(l.statusCode),
				success: !!l.success,
				error: clip(l.error),
				durationMs: l.durationMs === null || l.durationMs === undefined ? null : Number(l.durationMs),
				at: iso(l.createdAt),
			})),
	}));
}

/** Failed deliveries, newest failure first, of one organization or all; with how many there are in all. */
export async function failedDeliveries(models: Models, opts: { organizationId?: string; limit: number }) {
	const where = { status: "failed", ...(opts.organizationId ? { organizationId: opts.organizationId } : {}) };
	const { rows, count } = await models.WebhookDelivery.findAndCountAll({ where, order: [["updatedAt", "DESC"], ["id", "DESC"]], limit: opts.limit });
	return { total: count, deliveries: rows.map(deliveryView) };
}

function countsByType(rows: Array<{ type: string; count: number | string }>): Record<string, number> {
	const out: Record<string, number> = {};
	for (const r of rows) out[r.type] = Number(r.count);
	return out;
}

/**
 * The backlog between a payment event and the merchant: outbox rows not yet relayed into the
 * queue, and deliveries waiting for an attempt (due now or later) or being sent; per event
 * type, with the oldest of each. `now` is the serving node's clock (ages are computed from it).
 */
export async function outboxBacklog(models: Models, now: Date) {
	const unpublished = { publishedAt: null };
	const [outboxTypes, oldestOutbox, waitingTypes, dueCount, oldestDue, sending, failedDay] = await Promise.all([
		models.OutboxEvent.count({ where: unpublished, group: ["type"] }) as unknown as Promise<Array<{ type: string; count: number }>>,
		models.OutboxEvent.findOne({ where: unpublished, order: [["createdAt", "ASC"]], attributes: ["createdAt"] }),
		models.WebhookDelivery.count({ where: { status: "pending" }, group: ["type"] }) as unknown as Promise<Array<{ type: string; count: number }>>,
		models.WebhookDelivery.count({ where: { status: "pending", nextAttemptAt: { [Op.lte]: now } } }),
		models.WebhookDelivery.findOne({ where: { status: "pending", nextAttemptAt: { [Op.lte]: now } }, order: [["nextAttemptAt", "ASC"]], attributes: ["nextAttemptAt"] }),
		models.WebhookDelivery.count({ where: { status: "sending" } }),
		models.WebhookDelivery.count({ where: { status: "failed", updatedAt: { [Op.gte]: new Date(now.getTime() - 86_400_000) } } }),
	]);
	const outboxByType = countsByType(outboxTypes);
	const pendingByType = countsByType(waitingTypes);
	const sum = (o: Record<string, number>) => Object.values(o).reduce((a, b) => a + b, 0);
	return {
		now: now.toISOString(),
		outbox: { unpublished: sum(outboxByType), oldestAt: iso(oldestOutbox?.createdAt), byType: outboxByType },
		deliveries: { pending: sum(pendingByType), due: dueCount, oldestDueAt: iso(oldestDue?.nextAttemptAt), sending, failedLast24h: failedDay, pendingByType },
	};
}

export type SupportDeliveryWithAttempts = Awaited<ReturnType<typeof deliveriesWithAttempts>>[number];
export type SupportFailedDeliveries = Awaited<ReturnType<typeof failedDeliveries>>;
export type SupportOutboxBacklog = Awaited<ReturnType<typeof outboxBacklog>>;
