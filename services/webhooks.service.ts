/**
 * Webhooks (spec "Events" and the Webhooks endpoints, decisions.md "Webhooks"):
 * - outbound: payment events written to the outbox by the payments services are relayed into a
 *   durable queue (webhook_deliveries) and POSTed, signed with the owning key's secret, to that
 *   key's webhook URL: 10 s timeout, only 200 succeeds, 3 attempts with backoff 2 s, 4 s. Every
 *   node runs the dispatcher; the database decides which node sends an attempt (lib/webhooks/queue.ts);
 * - one log row per attempt, GET /webhooks/logs;
 * - test sends (a sample payment_intent.completed, or the caller's payload);
 * - inbound POST /webhooks: signature checked over the raw body, stored once, dispatched as the
 *   Moleculer event `webhooks.inbound.<type>`.
 * Decisions: docs/webhooks.md.
 */
import type { Context, Service, ServiceSchema } from "moleculer";
import { Op } from "sequelize";
import { appOf } from "../lib/app";
import { sha256Hex } from "../lib/crypto";
import { badRequest, httpError, isServiceUnavailable, notFound, serviceUnavailable } from "../lib/errors";
import { inboundWebhooksRefused } from "../lib/config";
import { captureLoopError } from "../lib/error-tracking";
import { registerTranslations } from "../lib/i18n";
import { uuid } from "../lib/ids";
import type { AuthMeta } from "../lib/meta";
import { countMetric, METRIC, observeMetric, setGauge, startCounters, WEBHOOK_OUTCOMES } from "../lib/metrics";
import { TtlCache } from "../lib/ttl-cache";
import { READY_PER_SLOT, WebhooksConfig } from "../lib/webhooks/config";
import {
	AttemptOutcome,
	ClaimedDelivery,
	claimBatch,
	claimDue,
	enqueue,
	prune,
	receives,
	recordOutcomes,
	relayOutbox,
	releaseClaimed,
	releaseUnsent,
	requeueEnded,
	takeOverExpired,
	WebhookTarget,
} from "../lib/webhooks/queue";
import { sendWebhook } from "../lib/webhooks/sender";
import { deliveriesWithAttempts, failedDeliveries, outboxBacklog, SUPPORT_DELIVERIES_MAX } from "../lib/webhooks/support";
import { SUPPORT_ID } from "../lib/support/params";
import { signWebhookBody, verifyWebhookSignature } from "../lib/webhooks/signature";
import { OrgScopeMethods, OrgScopeMixin } from "../mixins/org-scope.mixin";
import type { WebhookLog } from "../models/webhook-log.model";

registerTranslations("es", {
	"Invalid webhook signature": "Firma de webhook no válida",
});

type Ctx<P = Record<string, never>> = Context<P, AuthMeta>;

const URL_NOT_CONFIGURED = "Webhook URL not configured for this API key";
const RELAY_BATCH = 500;
/** Outcomes waiting to be written above which no new attempt starts (memory stays bounded when the DB is slow). */
const MAX_PENDING_OUTCOMES = 500;

const TARGET_CACHE_MS = 30_000;
const SECRET_CACHE_MS = 60_000;
const PRUNE_EVERY_MS = 3_600_000;
/** Inbound events not dispatched this long after arrival (the emit failed) are dispatched again. */
const REDISPATCH_AFTER_MS = 30_000;
/** How often the outbox backlog gauge is read when metrics are on (Moleculer's own process metrics: 5 s too). */
const BACKLOG_REFRESH_MS = 5_000;
/** An attempt that could not start (the keys service away) is due again after this, uncounted. */
const UNSENT_RETRY_MS = 5_000;
const INTERRUPTED = "Attempt interrupted: the node sending it stopped before recording the result";

const API_KEY_ID = { type: "number", integer: true, positive: true, max: 2147483647, convert: true } as const;

interface WebhooksVars {
	cfg: WebhooksConfig;
	owner: string;
	stopping: boolean;
	pollTimer: NodeJS.Timeout | null;
	pruneTimer: NodeJS.Timeout | null;
	backlogTimer: NodeJS.Timeout | null;
	running: Promise<void> | null;
	again: boolean;
	/** The next round also takes over expired leases (not only claims). */
	fullRound: boolean;
	/** The outbox relay, beside the claim rounds (its batch's writes take long on a busy database: claims go on meanwhile). */
	relaying: Promise<void> | null;
	/** Relay again once the running relay ends (asked for meanwhile). */
	relayAgain: boolean;
	/** Relay batches committed: a claim that found nothing due counts as exhausted only if none committed while it ran. */
	relayed: number;
	inFlight: Set<Promise<void>>;
	inFlightByKey: Map<number, number>;
	/** Claimed attempts not started yet (FIFO), and how many per key. */
	ready: ClaimedDelivery[];
	readyByKey: Map<number, number>;
	/** The last claim took every due row there was: claim again on a full round only. */
	exhausted: boolean;
	/** Releases of claimed attempts not sent (stop, lease too short), until written. */
	chores: Set<Promise<unknown>>;
	pending: AttemptOutcome[];
	flushing: Promise<void> | null;
	targets: TtlCache<number, WebhookTarget | null>;
	secrets: TtlCache<number, string>;
	/** Set while attempts cannot start for a service that is away: one warning an outage. */
	unsentSince: Date | null;
}

interface WebhooksMethods extends OrgScopeMethods {
	loopFailed(what: string, err: unknown, job: string): void;
	kick(full?: boolean): void;
	relay(): void;
	round(full: boolean): Promise<void>;
	claimRoom(full: boolean): { slots: number; freeByKey: Map<number, number>; keyCap: number } | null;
	pump(): void;
	unready(key: number): void;
	release(rows: ClaimedDelivery[], retryAt: Date): Promise<unknown>;
	start(delivery: ClaimedDelivery): void;
	attempt(delivery: ClaimedDelivery): Promise<AttemptOutcome>;
	unsent(delivery: ClaimedDelivery, err: unknown): Promise<void>;
	flushOutcomes(): Promise<void>;
	record(outcomes: AttemptOutcome[]): Promise<void>;
	refreshBacklog(): Promise<void>;
	idle(): Promise<void>;
	targetsOf(ids: number[]): Promise<Map<number, WebhookTarget>>;
	secretOf(keyId: number): Promise<string>;
	ownTarget(ctx: Ctx<any>, apiKeyId: number): Promise<WebhookTarget & { webhookUrl: string }>;
	sendNow(delivery: { id: string }): Promise<AttemptOutcome | null>;
	redispatchInbound(): Promise<void>;
}

type WebhooksThis = Service<{ rest: string }> & WebhooksVars & WebhooksMethods;

/** A log row as the API shows it (spec "Webhook log"). */
export function logView(row: WebhookLog) {
	return {
		id: Number(row.id),
		apiKeyId: Number(row.apiKeyId),
		userId: row.userId === null || row.userId === undefined ? null : Number(row.userId),
		event: row.event,
		eventId: row.eventId,
		url: row.url,
		statusCode: row.statusCode === null || row.statusCode === undefined ? null : Number(row.statusCode),
		success: !!row.success,
		attemptNumber: Number(row.attemptNumber),
		error: row.error ?? null,
		response: row.response ?? null,
		durationMs: row.durationMs === null || row.durationMs === undefined ? null : Number(row.durationMs),
		createdAt: row.createdAt.toISOString(),
	};
}

/** The sample of POST /webhooks/test/:apiKeyId: a completed intent shaped like the real event's object. */
function sampleCompletedIntent(now: Date) {
	const at = now.toISOString();
	return {
		id: uuid(),
		amount: "10.00",
		currency: "usdc",
		status: "completed",
		paymentMethodTypes: ["crypto"],
		metadata: { test: true },
		createdAt: at,
		updatedAt: at,
		latestTransaction: { id: uuid(), status: "completed", hash: `0x${"0".repeat(63)}1`, amount: "10", currency: "usdc" },
	};
}

const WebhooksService: ServiceSchema<{ rest: string }, WebhooksMethods & Record<string, any>, WebhooksVars> = {
	name: "webhooks",
	mixins: [OrgScopeMixin as ServiceSchema],
	settings: { rest: "/" },

	actions: {
		/** Inbound events (spec: POST /webhooks). The gateway already refused non-JSON bodies. */
		receive: {
			rest: "POST /webhooks",
			auth: "public",
			params: {
				id: { type: "string", min: 1, max: 100, optional: true },
				type: { type: "string", min: 1, max: 100, pattern: /^[A-Za-z0-9_.:-]+$/ },
				data: { type: "object", props: { object: { type: "object" } } },
			},
			async handler(this: WebhooksThis, ctx: Ctx<{ id?: string; type: string; data: { object: Record<string, unknown> } }>) {
				const { config, models, clock } = appOf(this.broker);
				// Production takes signed events only; without a secret, none: 503, so senders retry once it is
				// set (the reason is logged at start, lib/node.ts; the gateway answers every 503 the same).
				if (inboundWebhooksRefused(config)) throw serviceUnavailable();
				const meta = ctx.meta;
				const secret = config.paymentsWebhookSecret;
				let verified = false;
				if (secret) {
					// The signature covers the bytes received (meta.rawBody), never a re-serialisation.
					if (meta.rawBody === undefined || !verifyWebhookSignature(meta.rawBody, meta.webhookSignature, secret)) {
						throw badRequest("Invalid webhook signature");
					}
					verified = true;
				}
				const p = ctx.params;
				const scope = meta.apiKey ? `org:${meta.apiKey.organizationId}` : "public";
				const eventId = p.id ?? `sha256:${sha256Hex(meta.rawBody ?? JSON.stringify({ type: p.type, data: p.data }))}`;
				const dedupeKey = sha256Hex(`${scope}|${eventId}`);
				const now = clock.now();
				let row;
				try {
					row = await models.InboundEvent.create({
						dedupeKey,
						eventId: eventId.slice(0, 100),
						type: p.type,
						organizationId: meta.apiKey?.organizationId ?? null,
						apiKeyId: meta.apiKey?.id ?? null,
						signatureVerified: verified,
						payload: JSON.stringify({ type: p.type, data: p.data }),
						receivedAt: now,
						dispatchedAt: null,
					});
				} catch (err) {
					// Seen before: acknowledged again, handled once.
					if ((err as { name?: string }).name === "SequelizeUniqueConstraintError") return { received: true };
					throw err;
				}
				await ctx.emit(`webhooks.inbound.${p.type}`, {
					id: Number(row.id),
					eventId,
					type: p.type,
					organizationId: row.organizationId,
					apiKeyId: row.apiKeyId,
					signatureVerified: verified,
					data: p.data,
				});
				await models.InboundEvent.update({ dispatchedAt: clock.now() }, { where: { id: row.id } });
				return { received: true };
			},
		},

		/** Sends a signed sample payment_intent.completed to the key's URL; the first attempt is made now. */
		sendTest: {
			rest: "POST /webhooks/test/:apiKeyId",
			auth: "jwt",
			params: { apiKeyId: API_KEY_ID },
			async handler(this: WebhooksThis, ctx: Ctx<{ apiKeyId: number }>) {
				const { models, clock } = appOf(this.broker);
				const target = await this.ownTarget(ctx, ctx.params.apiKeyId);
				const now = clock.now();
				const eventId = uuid();
				const livemode = target.mode === "live";
				const body = JSON.stringify({ id: eventId, type: "payment_intent.completed", created: now.toISOString(), livemode, data: { object: sampleCompletedIntent(now) } });
				const delivery = await enqueue(models, { eventId, kind: "test", type: "payment_intent.completed", target, userId: ctx.meta.user?.id ?? null, livemode, body, now });
				const outcome = await this.sendNow(delivery);
				return { success: true, eventId, delivered: outcome?.statusCode === 200, statusCode: outcome?.statusCode ?? null };
			},
		},

		/** Sends the caller's payload, exactly as given, signed, to the key's URL. */
		sendCustom: {
			rest: "POST /webhooks/test/:apiKeyId/custom",
			auth: "jwt",
			params: { apiKeyId: API_KEY_ID, payload: { type: "object" } },
			async handler(this: WebhooksThis, ctx: Ctx<{ apiKeyId: number; payload: Record<string, unknown> }>) {
				const { models, clock } = appOf(this.broker);
				const target = await this.ownTarget(ctx, ctx.params.apiKeyId);
				const now = clock.now();
				const eventId = uuid();
				const declared = ctx.params.payload.type;
				const type = typeof declared === "string" && declared.length > 0 ? declared.slice(0, 64) : "custom";
				const body = JSON.stringify(ctx.params.payload);
				const delivery = await enqueue(models, { eventId, kind: "custom", type, target, userId: ctx.meta.user?.id ?? null, livemode: target.mode === "live", body, now });
				const outcome = await this.sendNow(delivery);
				return { success: true, eventId, delivered: outcome?.statusCode === 200, statusCode: outcome?.statusCode ?? null };
			},
		},

		/** Attempts of the caller's organization, newest first. */
		logs: {
			rest: "GET /webhooks/logs",
			auth: "jwt",
			params: {
				limit: { type: "number", integer: true, min: 1, max: 500, convert: true, optional: true },
				offset: { type: "number", integer: true, min: 0, max: 1_000_000, convert: true, optional: true },
			},
			async handler(this: WebhooksThis, ctx: Ctx<{ limit?: number; offset?: number }>) {
				const { models } = appOf(this.broker);
				const org = await this.resolveOrganization(ctx);
				const { rows, count } = await models.WebhookLog.findAndCountAll({
					where: { organizationId: org.id },
					order: [["id", "DESC"]],
					limit: ctx.params.limit ?? 50,
					offset: ctx.params.offset ?? 0,
				});
				return { logs: rows.map(logView), total: count };
			},
		},

		/**
		 * Runs the dispatcher now and waits until nothing it started is in flight, then re-dispatches
		 * inbound events left undispatched (operators in the REPL: `call webhooks.drain`; tests).
		 * Attempts not yet due stay scheduled.
		 */
		drain: {
			visibility: "public",
			auth: "public",
			params: {},
			async handler(this: WebhooksThis) {
				await this.idle();
				await this.redispatchInbound();
				return { inFlight: this.inFlight.size };
			},
		},

		/** Deliveries by status and the oldest due one (support staff in the REPL: `call webhooks.stats`). */
		stats: {
			visibility: "public",
			auth: "public",
			params: {},
			async handler(this: WebhooksThis) {
				const { models, clock } = appOf(this.broker);
				const rows = (await models.WebhookDelivery.count({ group: ["status"] })) as unknown as Array<{ status: string; count: number }>;
				const byStatus: Record<string, number> = {};
				for (const r of rows) byStatus[r.status] = Number(r.count);
				const oldestDue = await models.WebhookDelivery.findOne({
					where: { status: "pending", nextAttemptAt: { [Op.lte]: clock.now() } },
					order: [["nextAttemptAt", "ASC"]],
					attributes: ["nextAttemptAt"],
				});
				const unpublished = await models.OutboxEvent.count({ where: { publishedAt: null } });
				return { byStatus, unpublishedOutbox: unpublished, oldestDueAt: oldestDue?.nextAttemptAt?.toISOString() ?? null, inFlight: this.inFlight.size, node: this.owner };
			},
		},

		// Support staff's actions (REPL `tx`, `intent`, `webhooks failed|redeliver`, `outbox`;
		// docs/operations.md): any organization's deliveries, so internal only, with no route
		// (`auth: "admin"` should one ever be added). Bodies and answers are never returned.

		/** Deliveries by id or by the events they carry, with their attempts. */
		"support.deliveries": {
			visibility: "public",
			auth: "admin",
			params: {
				$$strict: "remove",
				ids: { type: "array", items: SUPPORT_ID, max: SUPPORT_DELIVERIES_MAX, optional: true },
				eventIds: { type: "array", items: SUPPORT_ID, max: SUPPORT_DELIVERIES_MAX, optional: true },
			},
			async handler(this: WebhooksThis, ctx: Ctx<{ ids?: string[]; eventIds?: string[] }>) {
				const { ids, eventIds } = ctx.params;
				if (!ids === !eventIds) throw badRequest("Give delivery ids or event ids");
				return deliveriesWithAttempts(appOf(this.broker).models, { ids, eventIds });
			},
		},

		/** Failed deliveries, newest first, of one organization or all. */
		"support.failed": {
			visibility: "public",
			auth: "admin",
			params: {
				$$strict: "remove",
				organizationId: { ...SUPPORT_ID, optional: true },
				limit: { type: "number", integer: true, min: 1, max: SUPPORT_DELIVERIES_MAX, convert: true, optional: true },
			},
			async handler(this: WebhooksThis, ctx: Ctx<{ organizationId?: string; limit?: number }>) {
				return failedDeliveries(appOf(this.broker).models, { organizationId: ctx.params.organizationId, limit: ctx.params.limit ?? 20 });
			},
		},

		/** Sends a delivery that ended without a 200 again, through the queue (lib/webhooks/queue.ts `requeueEnded`). */
		"support.redeliver": {
			visibility: "public",
			auth: "admin",
			params: { $$strict: "remove", id: SUPPORT_ID },
			async handler(this: WebhooksThis, ctx: Ctx<{ id: string }>) {
				const app = appOf(this.broker);
				const attemptsBefore = await requeueEnded(app, ctx.params.id);
				if (attemptsBefore === null) {
					const row = await app.models.WebhookDelivery.findByPk(ctx.params.id, { attributes: ["id", "status"] });
					if (!row) throw notFound("Webhook delivery not found");
					throw httpError(409, `Delivery ${row.id} is ${row.status}: only a failed or canceled delivery can be sent again`);
				}
				this.kick();
				const [delivery] = await deliveriesWithAttempts(app.models, { ids: [ctx.params.id] });
				return { delivery, attemptsBefore };
			},
		},

		/** The backlog: outbox rows not yet queued, deliveries waiting or being sent, per type. */
		"support.outbox": {
			visibility: "public",
			auth: "admin",
			params: { $$strict: "remove" },
			async handler(this: WebhooksThis) {
				const { models, clock } = appOf(this.broker);
				return outboxBacklog(models, clock.now());
			},
		},
	},

	events: {
		// The fast path: a new outbox row was just committed (the poll is the guarantee).
		"payment_intent.*"(this: WebhooksThis) {
			this.kick();
		},
		"keys.changed"(this: WebhooksThis, ctx: Context<{ id?: number }>) {
			const id = Number(ctx.params?.id);
			if (Number.isInteger(id)) {
				this.targets.delete(id);
				this.secrets.delete(id);
			} else {
				this.targets.clear();
				this.secrets.clear();
			}
		},
	},

	methods: {
		/**
		 * A job of the delivery loop failed in our code (a merchant's endpoint failing is an attempt's
		 * outcome, never this): logged, and reported to error tracking unless it is an outage.
		 */
		loopFailed(this: WebhooksThis, what: string, err: unknown, job: string) {
			this.logger.warn(what, (err as Error)?.message);
			captureLoopError(err, { service: this.name, job });
		},

		/**
		 * Runs a dispatch round now, or right after the one running. `full` (poll, new payment
		 * event, start) also relays the outbox (beside the round: relay()) and takes over expired
		 * leases; a finished attempt only asks for more claims.
		 */
		kick(this: WebhooksThis, full = true) {
			if (this.stopping) return;
			if (full) {
				this.fullRound = true;
				this.relay();
			}
			if (this.running) {
				this.again = true;
				return;
			}
			const isFull = this.fullRound;
			this.fullRound = false;
			this.running = this.round(isFull)
				.catch(err => this.loopFailed("Webhook dispatch round failed:", err, "dispatch"))
				.finally(() => {
					this.running = null;
					if (this.again) {
						this.again = false;
						// A full round asked for meanwhile stays asked for (fullRound): its relay is not lost.
						this.kick(false);
					}
				});
		},

		/**
		 * Relays the outbox into the queue, a batch at a time until it is empty, beside the claim
		 * rounds: each batch's deliveries are claimable once committed (a claim round is asked for),
		 * while the next batch is relayed. One relay at a time per node; asked for while one runs,
		 * it runs once more after it.
		 */
		relay(this: WebhooksThis) {
			if (this.relaying) {
				this.relayAgain = true;
				return;
			}
			const app = appOf(this.broker);
			const targetsOf = (ids: number[]) => this.targetsOf(ids);
			this.relayAgain = false;
			this.relaying = (async () => {
				for (;;) {
					const relayed = await relayOutbox(app, targetsOf, RELAY_BATCH);
					if (relayed > 0) {
						// New rows are due: the last claim's "nothing left" no longer holds.
						this.relayed++;
						this.exhausted = false;
						this.kick(false);
					}
					if (this.stopping || (relayed < RELAY_BATCH && !this.relayAgain)) return;
					this.relayAgain = false;
				}
			})()
				.catch(err => this.loopFailed("Relaying the outbox failed:", err, "relay"))
				.finally(() => {
					this.relaying = null;
					if (this.relayAgain && !this.stopping) this.relay();
				});
		},

		/** (Full: take over interrupted attempts,) claim due attempts in batches and start them. */
		async round(this: WebhooksThis, full: boolean) {
			const app = appOf(this.broker);
			const interrupted = full ? await takeOverExpired(app, this.cfg, this.owner, 100) : [];
			if (interrupted.length) {
				await this.record(interrupted.map(delivery => ({ delivery, statusCode: null, response: "", error: INTERRUPTED, durationMs: null, url: delivery.url })));
			}
			if (full) this.exhausted = false;
			while (!this.stopping && this.pending.length < MAX_PENDING_OUTCOMES) {
				const room = this.claimRoom(full);
				if (!room) return;
				const relayedBefore = this.relayed;
				const { rows: claimed, more } = await claimBatch(app, this.cfg, this.owner, { slots: room.slots, freeByKey: room.freeByKey, perEndpoint: room.keyCap });
				for (const delivery of claimed) {
					this.ready.push(delivery);
					this.readyByKey.set(delivery.apiKeyId, (this.readyByKey.get(delivery.apiKeyId) ?? 0) + 1);
				}
				this.pump();
				if (!more) {
					// Unless a relay batch committed meanwhile (its rows may be what this claim did not see).
					if (this.relayed === relayedBefore) this.exhausted = true;
					return;
				}
				if (claimed.length < room.slots) return;
				full = false;
			}
		},

		/**
		 * How much to claim now, or null for no claim. A node holds (in flight + ready) at most
		 * `concurrencyPerEndpoint` × (1 + READY_PER_SLOT) attempts of one key and
		 * `concurrency` × (1 + READY_PER_SLOT) in all. Outside a full round it claims only when the
		 * ready attempts ran low (under half of what one key may hold) and the last claim did not
		 * come back short: a finished attempt does not cost a claim query of its own.
		 */
		claimRoom(this: WebhooksThis, full: boolean) {
			const keyCap = this.cfg.concurrencyPerEndpoint * (1 + READY_PER_SLOT);
			const globalCap = this.cfg.concurrency * (1 + READY_PER_SLOT);
			const held = this.inFlight.size + this.ready.length;
			// At most one key's share a query: its candidate read stays small (claimBatch reads 2 per slot).
			const slots = Math.min(globalCap - held, keyCap);
			if (slots <= 0) return null;
			if (!full && (this.exhausted || this.ready.length >= Math.ceil(Math.min(keyCap, globalCap) / 2))) return null;
			const freeByKey = new Map<number, number>();
			for (const [key, n] of this.inFlightByKey) freeByKey.set(key, keyCap - n);
			for (const [key, n] of this.readyByKey) freeByKey.set(key, (freeByKey.get(key) ?? keyCap) - n);
			return { slots, freeByKey, keyCap };
		},

		/**
		 * Starts ready attempts while slots are free (all endpoints, and per endpoint). An attempt
		 * starts only while its lease leaves the whole timeout plus a margin for recording it, so
		 * no other node can take it over mid-send; one that waited too long is released unsent.
		 */
		pump(this: WebhooksThis) {
			if (this.ready.length === 0) return;
			const now = appOf(this.broker).clock.now().getTime();
			const margin = Math.min(5_000, (this.cfg.leaseMs - this.cfg.timeoutMs) / 2);
			const stale: ClaimedDelivery[] = [];
			const keep: ClaimedDelivery[] = [];
			for (const delivery of this.ready) {
				const key = delivery.apiKeyId;
				if (delivery.leaseUntil.getTime() - now < this.cfg.timeoutMs + margin) {
					stale.push(delivery);
					this.unready(key);
				} else if (this.stopping || this.inFlight.size >= this.cfg.concurrency || (this.inFlightByKey.get(key) ?? 0) >= this.cfg.concurrencyPerEndpoint) {
					keep.push(delivery);
				} else {
					this.unready(key);
					this.start(delivery);
				}
			}
			this.ready = keep;
			if (stale.length) void this.release(stale, new Date(now));
		},

		/** Gives claimed, unsent attempts back (due at `retryAt`, uncounted); tracked until written. */
		release(this: WebhooksThis, rows: ClaimedDelivery[], retryAt: Date) {
			const job = releaseClaimed(appOf(this.broker), rows, retryAt)
				.catch(err => this.loopFailed(`Releasing ${rows.length} claimed webhook attempt(s) failed:`, err, "release"))
				.finally(() => {
					this.chores.delete(job);
					this.kick(false);
				});
			this.chores.add(job);
			return job;
		},

		/** One ready attempt of `key` fewer. */
		unready(this: WebhooksThis, key: number) {
			const left = (this.readyByKey.get(key) ?? 1) - 1;
			if (left <= 0) this.readyByKey.delete(key);
			else this.readyByKey.set(key, left);
		},

		start(this: WebhooksThis, delivery: ClaimedDelivery) {
			const key = delivery.apiKeyId;
			this.inFlightByKey.set(key, (this.inFlightByKey.get(key) ?? 0) + 1);
			// The slot is free once the HTTP attempt ended; its outcome is written in the background,
			// batched with others (the row stays `sending`, so nobody takes it meanwhile).
			const run = this.attempt(delivery)
				.then(outcome => {
					if (this.unsentSince) {
						this.logger.info("Webhook attempts start again: the services they need are back");
						this.unsentSince = null;
					}
					this.pending.push(outcome);
					void this.flushOutcomes();
				})
				.catch(err => (isServiceUnavailable(err) ? this.unsent(delivery, err) : Promise.reject(err)))
				.catch(err => this.loopFailed(`Webhook attempt of delivery ${delivery.id} failed to run:`, err, "attempt"))
				.finally(() => {
					const left = (this.inFlightByKey.get(key) ?? 1) - 1;
					if (left <= 0) this.inFlightByKey.delete(key);
					else this.inFlightByKey.set(key, left);
					this.inFlight.delete(run);
					this.pump();
					this.kick(false);
				});
			this.inFlight.add(run);
		},

		/** One HTTP attempt to the key's current URL, signed with its secret. Never throws for the endpoint's faults. */
		async attempt(this: WebhooksThis, delivery: ClaimedDelivery): Promise<AttemptOutcome> {
			const keyId = Number(delivery.apiKeyId);
			// The caches answer almost every attempt: no look-up call (nor its Map) then.
			const cached = this.targets.get(keyId);
			const target = cached === undefined ? (await this.targetsOf([keyId])).get(keyId) : (cached ?? undefined);
			if (!receives(target) || target.organizationId !== delivery.organizationId) {
				return { delivery, statusCode: null, response: "", error: "The API key was revoked or its webhook URL removed", durationMs: null, url: delivery.url, canceled: true };
			}
			const secret = this.secrets.get(keyId) ?? (await this.secretOf(keyId));
			const result = await sendWebhook({
				url: target.webhookUrl,
				body: delivery.body,
				signature: signWebhookBody(delivery.body, secret),
				eventId: delivery.eventId,
				timeoutMs: this.cfg.timeoutMs,
				enforcePublicUrls: this.cfg.enforcePublicUrls,
				responseMaxChars: this.cfg.responseMaxChars,
			});
			return { delivery, ...result, url: target.webhookUrl };
		},

		/**
		 * The attempt could not start: a service it needs (keys: URL and signing secret) is away, its
		 * node restarting. Nothing was sent, so the claim is undone without counting an attempt
		 * (lib/webhooks/queue.ts releaseUnsent); it is due again in a few seconds.
		 */
		async unsent(this: WebhooksThis, delivery: ClaimedDelivery, err: unknown) {
			const app = appOf(this.broker);
			if (!this.unsentSince) {
				this.unsentSince = app.clock.now();
				this.logger.warn(`Webhook attempts wait: ${(err as Error)?.message}; deliveries stay pending, no attempt counted`);
			}
			await releaseUnsent(app, delivery, new Date(app.clock.now().getTime() + UNSENT_RETRY_MS));
		},

		/** Writes finished attempts in batches (one DB transaction for all outcomes waiting). */
		flushOutcomes(this: WebhooksThis): Promise<void> {
			if (!this.flushing) {
				this.flushing = (async () => {
					while (this.pending.length) {
						const batch = this.pending.splice(0, 500);
						const held = batch.length + this.pending.length >= MAX_PENDING_OUTCOMES;
						try {
							await this.record(batch);
						} catch (err) {
							// The rows stay `sending`; their leases run out and another round records them as interrupted.
							this.loopFailed(`Recording ${batch.length} webhook outcome(s) failed:`, err, "record");
						}
						// Claims paused for the backlog of outcomes resume.
						if (held) this.kick(false);
					}
				})().finally(() => {
					this.flushing = null;
				});
			}
			return this.flushing;
		},

		/** Until no round, attempt or outcome write of this node is in progress. */
		async idle(this: WebhooksThis) {
			this.kick();
			for (;;) {
				const busy = [this.running, this.relaying, this.flushing, ...this.inFlight, ...this.chores].filter(Boolean) as Array<Promise<unknown>>;
				if (busy.length === 0 && !this.again && this.pending.length === 0 && this.ready.length === 0) return;
				await Promise.allSettled(busy);
				if (this.pending.length) await this.flushOutcomes();
			}
		},

		async targetsOf(this: WebhooksThis, ids: number[]): Promise<Map<number, WebhookTarget>> {
			const found = new Map<number, WebhookTarget>();
			const missing: number[] = [];
			for (const id of ids) {
				const hit = this.targets.get(id);
				if (hit === undefined) missing.push(id);
				else if (hit) found.set(id, hit);
			}
			if (missing.length) {
				const generation = this.targets.generation;
				const rows = (await this.broker.call("keys.webhookTargets", { ids: missing })) as WebhookTarget[];
				const byId = new Map(rows.map(r => [r.id, r]));
				for (const id of missing) {
					const row = byId.get(id) ?? null;
					this.targets.set(id, row, generation);
					if (row) found.set(id, row);
				}
			}
			return found;
		},

		async secretOf(this: WebhooksThis, keyId: number): Promise<string> {
			const hit = this.secrets.get(keyId);
			if (hit) return hit;
			const generation = this.secrets.generation;
			const secret = (await this.broker.call("keys.signingSecret", { id: keyId })) as string;
			this.secrets.set(keyId, secret, generation);
			return secret;
		},

		/**
		 * A key of an organization the caller belongs to, with a webhook URL; anything else is the
		 * spec's 404 (an unknown key, another organization's key and a key without URL look alike).
		 */
		async ownTarget(this: WebhooksThis, ctx: Ctx<any>, apiKeyId: number) {
			const rows = (await ctx.call("keys.webhookTargets", { ids: [apiKeyId] })) as WebhookTarget[];
			const target = rows[0];
			if (!receives(target)) throw notFound(URL_NOT_CONFIGURED);
			try {
				await this.resolveOrganization(ctx, { organizationId: target.organizationId });
			} catch (err) {
				if ((err as { code?: number }).code === 404) throw notFound(URL_NOT_CONFIGURED);
				throw err;
			}
			return target;
		},

		/** The first attempt of a new delivery, made and recorded now; later attempts follow the schedule. */
		async sendNow(this: WebhooksThis, delivery: { id: string }): Promise<AttemptOutcome | null> {
			const app = appOf(this.broker);
			const [claimed] = await claimDue(app, this.cfg, this.owner, { slots: 1, freeByKey: new Map(), perEndpoint: 1, deliveryId: delivery.id });
			// Another node's dispatcher took it first: it is on its way all the same.
			if (!claimed) return null;
			const outcome = await this.attempt(claimed);
			await this.record([outcome]);
			return outcome;
		},

		/** Writes attempts' outcomes; once committed, they count in the metrics. */
		async record(this: WebhooksThis, outcomes: AttemptOutcome[]) {
			for (const attempt of await recordOutcomes(appOf(this.broker), this.cfg, outcomes)) {
				countMetric(this.broker, METRIC.webhookDeliveries, { outcome: attempt.outcome });
				if (attempt.durationMs !== null) observeMetric(this.broker, METRIC.webhookLatency, attempt.durationMs, {});
			}
		},

		/** The outbox rows no node has relayed yet (one COUNT on the unpublished index). */
		async refreshBacklog(this: WebhooksThis) {
			const { models } = appOf(this.broker);
			setGauge(this.broker, METRIC.outboxBacklog, await models.OutboxEvent.count({ where: { publishedAt: null } }), {});
		},

		/** Inbound events stored but not dispatched (the emit failed): dispatched again, once. */
		async redispatchInbound(this: WebhooksThis) {
			const { models, clock } = appOf(this.broker);
			const before = new Date(clock.now().getTime() - REDISPATCH_AFTER_MS);
			const rows = await models.InboundEvent.findAll({ where: { dispatchedAt: null, receivedAt: { [Op.lt]: before } }, limit: 100 });
			for (const row of rows) {
				const [count] = await models.InboundEvent.update({ dispatchedAt: clock.now() }, { where: { id: row.id, dispatchedAt: null } });
				if (count !== 1) continue;
				const payload = JSON.parse(row.payload) as { type: string; data: unknown };
				await this.broker.emit(`webhooks.inbound.${row.type}`, {
					id: Number(row.id),
					eventId: row.eventId,
					type: row.type,
					organizationId: row.organizationId,
					apiKeyId: row.apiKeyId,
					signatureVerified: !!row.signatureVerified,
					data: payload.data,
				});
			}
		},
	},

	created(this: WebhooksThis) {
		const { config } = appOf(this.broker);
		this.cfg = config.webhooks;
		this.owner = `${this.broker.nodeID}:${uuid().slice(0, 8)}`;
		this.stopping = false;
		this.pollTimer = null;
		this.pruneTimer = null;
		this.backlogTimer = null;
		this.running = null;
		this.again = false;
		this.relaying = null;
		this.relayAgain = false;
		this.relayed = 0;
		this.inFlight = new Set();
		this.inFlightByKey = new Map();
		this.ready = [];
		this.readyByKey = new Map();
		this.exhausted = false;
		this.chores = new Set();
		this.pending = [];
		this.flushing = null;
		this.targets = new TtlCache(TARGET_CACHE_MS, 10_000);
		this.secrets = new TtlCache(SECRET_CACHE_MS, 10_000);
		this.unsentSince = null;
		startCounters(this.broker, METRIC.webhookDeliveries, WEBHOOK_OUTCOMES.map(outcome => ({ outcome })));
	},

	started(this: WebhooksThis) {
		this.stopping = false;
		if (this.cfg.pollMs > 0) {
			this.pollTimer = setInterval(() => this.kick(), this.cfg.pollMs);
			this.pollTimer.unref();
		}
		let lastPrune = 0;
		const housekeeping = () => {
			this.redispatchInbound().catch(err => this.loopFailed("Re-dispatching inbound events failed:", err, "redispatch"));
			if (Date.now() - lastPrune < PRUNE_EVERY_MS) return;
			lastPrune = Date.now();
			prune(appOf(this.broker), this.cfg.retentionDays).catch(err => this.loopFailed("Pruning webhook rows failed:", err, "prune"));
		};
		this.pruneTimer = setInterval(housekeeping, REDISPATCH_AFTER_MS);
		this.pruneTimer.unref();
		if (this.broker.isMetricsEnabled()) {
			const refresh = () => this.refreshBacklog().catch(err => this.logger.debug("Outbox backlog could not be read:", (err as Error)?.message));
			this.backlogTimer = setInterval(refresh, BACKLOG_REFRESH_MS);
			this.backlogTimer.unref();
			void refresh();
		}
		// Deliveries left by a previous run are due now.
		this.kick();
	},

	async stopped(this: WebhooksThis) {
		// Attempts in flight finish (within the request timeout) and are recorded: a graceful stop loses nothing.
		this.stopping = true;
		if (this.pollTimer) clearInterval(this.pollTimer);
		if (this.pruneTimer) clearInterval(this.pruneTimer);
		if (this.backlogTimer) clearInterval(this.backlogTimer);
		this.pollTimer = this.pruneTimer = this.backlogTimer = null;
		await this.running?.catch(() => undefined);
		await this.relaying;
		// Claimed attempts never started go back to the queue, due now for any node, uncounted.
		const unsent = this.ready;
		this.ready = [];
		this.readyByKey.clear();
		if (unsent.length) void this.release(unsent, appOf(this.broker).clock.now());
		await Promise.allSettled([...this.inFlight, ...this.chores]);
		await this.flushOutcomes().catch(() => undefined);
	},
};

export default WebhooksService;
