/**
 * The floor of the webhook-delivery bench (bench/webhooks.ts): a bare Node process that sends N
 * webhooks to the same receiver with the gateway's own sending code (`sendWebhook` of
 * lib/webhooks/sender.ts: keep-alive agent per origin, same headers, same timeout handling) and
 * signature (`signWebhookBody`), at the same concurrency, with no queue logic. Each request is
 * the real event body the gateway sent (same bytes, same size) with a new event id, signed anew.
 *
 * With `db` it also makes the database writes a delivery needs, in the batches the gateway uses,
 * with raw mysql2 and nothing else (no reads, no ORM): per batch of `batch` events one
 * transaction that inserts the delivery rows and marks as many outbox rows published (the relay),
 * one UPDATE that claims them (status, lease, attempts + 1), and, as attempts finish, one
 * transaction per batch of outcomes: an UPDATE per claim token to `delivered` and one multi-row
 * INSERT of the log rows. So the ratio gateway/floor is bookkeeping overhead, not "database or not".
 *
 * IPC: parent sends { url, body, secret, events, concurrency, timeoutMs, db? }; the floor answers
 * { done: { ok, failed, seconds, p50, p99, firstError } } and exits.
 */
import crypto from "node:crypto";
import mysql from "mysql2/promise";
import { sendWebhook } from "../lib/webhooks/sender";
import { signWebhookBody } from "../lib/webhooks/signature";

export interface FloorDb {
	url: string;
	organizationId: string;
	apiKeyId: number;
	userId: number | null;
	type: string;
	leaseMs: number;
	/** Events per relay/claim batch. */
	batch: number;
}

interface Job {
	url: string;
	body: string;
	secret: string;
	events: number;
	concurrency: number;
	timeoutMs: number;
	db?: FloorDb;
}

interface Item {
	id: string;
	eventId: string;
	body: string;
	token: string | null;
}

interface Outcome {
	item: Item;
	statusCode: number | null;
	durationMs: number;
	error: string | null;
	response: string;
}

function percentile(sorted: number[], p: number): number {
	if (sorted.length === 0) return 0;
	return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

const placeholders = (rows: number, cols: number) => Array.from({ length: rows }, () => `(${Array(cols).fill("?").join(",")})`).join(",");

async function run(job: Job) {
	const template = JSON.parse(job.body) as { id?: unknown };
	const oldId = typeof template.id === "string" ? template.id : null;
	const db = job.db;
	const pool = db ? mysql.createPool({ uri: db.url, connectionLimit: 4, timezone: "Z" }) : null;
	// Outbox rows to mark published as the relay does (the gateway's run left N of them): read before timing.
	const outboxIds: string[] = [];
	if (pool) {
		const [rows] = (await pool.query("SELECT id FROM outbox_events LIMIT ?", [job.events])) as unknown as [Array<{ id: string }>];
		outboxIds.push(...rows.map(r => r.id));
	}
	const durations: number[] = [];
	let ok = 0;
	let failed = 0;
	let firstError: string | null = null;
	let made = 0;
	let sent = 0;
	const ready: Item[] = [];
	const pending: Outcome[] = [];
	let flushing: Promise<void> | null = null;
	let feeding: Promise<void> | null = null;
	let wake: (() => void) | null = null;

	const newItem = (): Item => {
		const eventId = crypto.randomUUID();
		// Same length as the stored id (a UUID), so the body keeps its size.
		return { id: crypto.randomUUID(), eventId, body: oldId ? job.body.replace(oldId, eventId) : job.body, token: null };
	};

	/** Relay + claim of one batch (with db), or just making the items. */
	const feedOnce = async () => {
		const n = Math.min(db?.batch ?? job.concurrency, job.events - made);
		if (n <= 0) return;
		made += n;
		const items = Array.from({ length: n }, newItem);
		if (pool && db) {
			const now = new Date();
			const conn = await pool.getConnection();
			try {
				await conn.query("START TRANSACTION");
				const values = items.flatMap(i => [i.id, i.eventId, "event", db.type, db.organizationId, db.apiKeyId, db.userId, 0, job.url, i.body, "pending", 0, now, now, now]);
				await conn.query(`INSERT INTO webhook_deliveries (id, eventId, kind, type, organizationId, apiKeyId, userId, livemode, url, body, status, attempts, nextAttemptAt, createdAt, updatedAt) VALUES ${placeholders(n, 15)}`, values);
				const outbox = outboxIds.splice(0, n);
				if (outbox.length) await conn.query("UPDATE outbox_events SET publishedAt = ? WHERE id IN (?)", [now, outbox]);
				await conn.query("COMMIT");
			} finally {
				conn.release();
			}
			const token = crypto.randomUUID();
			await pool.query("UPDATE webhook_deliveries SET status = 'sending', leaseOwner = 'floor', leaseToken = ?, leaseUntil = ?, attempts = attempts + 1, updatedAt = ? WHERE id IN (?) AND status = 'pending'", [token, new Date(now.getTime() + db.leaseMs), now, items.map(i => i.id)]);
			for (const i of items) i.token = token;
		}
		ready.push(...items);
		wake?.();
	};
	/** Keeps claimed items ahead of the senders, as the gateway's ready queue does. */
	const feed = () => {
		if (feeding || made >= job.events || ready.length >= job.concurrency * 2) return;
		feeding = feedOnce().finally(() => {
			feeding = null;
			feed();
		});
	};

	const flush = () => {
		if (flushing || !pool) return;
		flushing = (async () => {
			while (pending.length) {
				const batch = pending.splice(0, 500);
				const now = new Date();
				const conn = await pool.getConnection();
				try {
					await conn.query("START TRANSACTION");
					const byToken = new Map<string, string[]>();
					for (const o of batch.filter(b => b.statusCode === 200)) byToken.set(o.item.token!, [...(byToken.get(o.item.token!) ?? []), o.item.id]);
					for (const [token, ids] of byToken) {
						await conn.query("UPDATE webhook_deliveries SET status = 'delivered', deliveredAt = ?, lastStatusCode = 200, lastError = NULL, leaseOwner = NULL, leaseUntil = NULL, nextAttemptAt = NULL, updatedAt = ? WHERE id IN (?) AND leaseToken = ? AND status = 'sending'", [now, now, ids, token]);
					}
					const values = batch.flatMap(o => [o.item.id, o.item.eventId, db!.organizationId, db!.apiKeyId, db!.userId, db!.type, job.url, o.statusCode, o.statusCode === 200 ? 1 : 0, 1, o.error, o.response, o.durationMs, now]);
					await conn.query(`INSERT INTO webhook_logs (deliveryId, eventId, organizationId, apiKeyId, userId, event, url, statusCode, success, attemptNumber, error, response, durationMs, createdAt) VALUES ${placeholders(batch.length, 14)}`, values);
					await conn.query("COMMIT");
				} finally {
					conn.release();
				}
			}
		})().finally(() => {
			flushing = null;
			if (pending.length) flush();
		});
	};

	const started = process.hrtime.bigint();
	feed();
	const worker = async () => {
		while (sent < job.events) {
			const item = ready.shift();
			if (!item) {
				feed();
				await new Promise<void>(r => {
					wake = r;
					setTimeout(r, 5);
				});
				continue;
			}
			sent++;
			feed();
			const r = await sendWebhook({
				url: job.url,
				body: item.body,
				signature: signWebhookBody(item.body, job.secret),
				eventId: item.eventId,
				timeoutMs: job.timeoutMs,
				enforcePublicUrls: false,
				responseMaxChars: 2000,
			});
			durations.push(r.durationMs);
			if (r.statusCode === 200) ok++;
			else {
				failed++;
				firstError ??= r.error ?? `HTTP ${r.statusCode}`;
			}
			if (pool) {
				pending.push({ item, statusCode: r.statusCode, durationMs: r.durationMs, error: r.error, response: r.response.slice(0, 2000) });
				flush();
			}
		}
	};
	await Promise.all(Array.from({ length: job.concurrency }, worker));
	while (flushing || pending.length) {
		flush();
		await flushing;
	}
	const seconds = Number(process.hrtime.bigint() - started) / 1e9;
	await pool?.end();
	durations.sort((a, b) => a - b);
	return { ok, failed, seconds, p50: percentile(durations, 50), p99: percentile(durations, 99), firstError };
}

process.once("message", (job: Job) => {
	run(job).then(
		done => {
			process.send?.({ done }, () => process.exit(0));
		},
		err => {
			process.send?.({ error: err instanceof Error ? err.message : String(err) }, () => process.exit(1));
		},
	);
});
process.send?.({ ready: true });
