/**
 * Payment intents (spec "Payment intents", decisions.md "Payment intents"): create (with its
 * single-use payment link, in one DB transaction), retrieve, confirm, update, cancel, complete,
 * and the sandbox simulation that pays through the normal checkout and credit path. The state
 * machine is lib/payments/intent-state.ts; shared DB work is lib/payments/store.ts. Also runs the
 * periodic expiry sweep of intents, links and checkouts. Decisions: docs/payments.md.
 */
import type { Context, Service, ServiceSchema } from "moleculer";
import { Op } from "sequelize";
import { appOf } from "../lib/app";
import "../lib/payments/messages";
import { digest, randomBase62, safeEqual } from "../lib/crypto";
import { badRequest, forbidden, notFound } from "../lib/errors";
import { registerTranslations } from "../lib/i18n";
import { isUuid, uuid } from "../lib/ids";
import { countMetric, METRIC, startCounters } from "../lib/metrics";
import { amountRule, money, toAmountString } from "../lib/money";
import type { TokenView } from "../lib/networks/view";
import { quoteCheckout, resolvePair } from "../lib/payments/checkout";
import { insertRow, selectOne, selectRow } from "../lib/payments/rows";
import { inDriverTransaction } from "../lib/db";
import type { PaymentsConfig } from "../lib/payments/config";
import { canTransition, transition, transitionError } from "../lib/payments/intent-state";
import { checkExpiry, checkMetadata, checkTokenAmount, checkWithdrawalAddresses } from "../lib/payments/input";
import { newLinkRow } from "../lib/payments/link-row";
import { simulatedCredit } from "../lib/payments/settlement";
import {
	cancelIntent,
	Effects,
	expiryDue,
	findLink,
	forUpdate,
	inTransaction,
	lapseCheckouts,
	latestTransactionOf,
	openCheckout,
	recordIntentEvent,
	sweepExpired,
	SweepResult,
	withPaymentLocked,
} from "../lib/payments/store";
import { INTENT_GET_ATTRIBUTES, intentConfirmedView, intentCreatedView, intentStatusView, intentUpdatedView, intentView, payPageUrl } from "../lib/payments/views";
import { checkoutsOf, intentEvents, supportIntentView, supportLinkView } from "../lib/payments/support";
import { SUPPORT_ID } from "../lib/support/params";
import { IdempotencyMethods, IdempotencyMeta, IdempotencyMixin } from "../mixins/idempotency.mixin";
import { OrgScope, OrgScopeMethods, OrgScopeMixin } from "../mixins/org-scope.mixin";
import type { PaymentIntent } from "../models/payment-intent.model";
import type { Transaction } from "../models/transaction.model";

registerTranslations("es", {
	"Payment intent not found": "Intención de pago no encontrada",
	"Invalid client secret": "Secreto de cliente no válido",
	"payment_method_types must include crypto": "payment_method_types debe incluir crypto",
	"Unsupported currency": "Moneda no admitida",
	"Simulation is only available for sandbox organizations": "La simulación solo está disponible para organizaciones sandbox",
	"Cannot change the amount of a payment intent that has received funds": "No se puede cambiar el importe de una intención de pago que ya ha recibido fondos",
});

type Ctx<P = Record<string, never>> = Context<P, IdempotencyMeta>;

export interface CreateIntentParams {
	amount: string;
	currency: string;
	payment_method_types: string[];
	tokenId: string;
	networkId: string;
	return_url: string;
	cancel_url?: string;
	description?: string;
	metadata?: Record<string, unknown>;
	expires_at?: string;
	withdrawal_addresses?: Record<string, unknown>;
}

export interface UpdateIntentParams {
	id: string;
	amount?: string;
	currency?: string;
	description?: string;
	metadata?: Record<string, unknown>;
	return_url?: string;
	cancel_url?: string;
	withdrawal_addresses?: Record<string, unknown>;
}

interface Priced {
	amount: string;
	currency: string;
	tokenAmount: string;
	currencyRateId: string | null;
	amountUsd: string | null;
	rate: string | null;
}

interface IntentsVars {
	payments: PaymentsConfig;
	sweepTimer: NodeJS.Timeout | null;
	sweeping: Promise<SweepResult> | null;
}

interface IntentsMethods extends OrgScopeMethods, IdempotencyMethods {
	findOwn(ctx: Ctx<any>, id: string): Promise<{ intent: PaymentIntent; org: OrgScope }>;
	fresh<I extends FreshIntent>(intent: I): Promise<I | PaymentIntent>;
	freshWithLatest<I extends FreshIntent>(intent: I): Promise<{ intent: I | PaymentIntent; latest: Transaction | null }>;
	price(ctx: Ctx<any>, token: TokenView, amount: string, currency: string, fields: { amount: string; currency: string }): Promise<Priced>;
	sweep(): Promise<SweepResult>;
}

/** What `fresh` reads of an intent: a model instance, or a plain row (selectRow). */
type FreshIntent = Pick<PaymentIntent, "id" | "status" | "expiresAt" | "latestTransactionId" | "paymentLinkId">;

type IntentsThis = Service<{ rest: string }> & IntentsVars & IntentsMethods;

const ID = { type: "string", max: 100 } as const;
const URL_RULE = { type: "url", max: 2048 } as const;
const CURRENCY = { type: "string", trim: true, min: 1, max: 20, pattern: /^[A-Za-z0-9.]+$/ } as const;
const DESCRIPTION = { type: "string", max: 1000 } as const;
const OBJECT = { type: "object" } as const;
/** The client secret travels in params: never into traces. */
const SECRET_PARAMS = { tags: { params: false, response: false } } as const;

const intentNotFound = () => notFound("Payment intent not found");
const titleOf = (description: string | null | undefined) => (description && description.trim() ? description.trim().slice(0, 200) : "Payment");

const IntentsService: ServiceSchema<{ rest: string }, IntentsMethods & Record<string, any>, IntentsVars> = {
	name: "intents",
	mixins: [OrgScopeMixin as ServiceSchema, IdempotencyMixin as ServiceSchema],
	settings: { rest: "/" },

	actions: {
		create: {
			rest: "POST /payment_intents",
			auth: "any",
			tracing: SECRET_PARAMS,
			params: {
				$$strict: "remove",
				amount: amountRule,
				currency: CURRENCY,
				payment_method_types: { type: "array", min: 1, max: 10, items: { type: "string", max: 40 } },
				tokenId: ID,
				networkId: ID,
				return_url: URL_RULE,
				cancel_url: { ...URL_RULE, optional: true },
				description: { ...DESCRIPTION, optional: true },
				metadata: { ...OBJECT, optional: true },
				expires_at: { type: "string", max: 40, optional: true },
				withdrawal_addresses: { ...OBJECT, optional: true },
			},
			async handler(this: IntentsThis, ctx: Ctx<CreateIntentParams>) {
				const { config, models, sequelize, clock } = appOf(this.broker);
				const org = await this.resolveOrganization(ctx);
				return this.idempotent(ctx, async record => {
					const p = ctx.params;
					const types = [...new Set(p.payment_method_types.map(s => s.trim().toLowerCase()))];
					if (!types.includes("crypto")) throw badRequest("payment_method_types must include crypto", { payment_method_types: "mustIncludeCrypto" });
					if (types.some(t => t !== "crypto")) throw badRequest("Only the crypto payment method is supported", { payment_method_types: "unsupported" });
					const metadata = checkMetadata(p.metadata, "metadata");
					const withdrawalAddresses = checkWithdrawalAddresses(p.withdrawal_addresses, org.mode, "withdrawal_addresses");
					// Where the money goes is the managers' choice (an empty object means the settings: anyone).
					if (withdrawalAddresses) await this.requireManager(ctx, org.id);
					const expiresAt = checkExpiry(p.expires_at, clock.now(), "expires_at");
					const pair = await resolvePair(ctx, p.networkId, p.tokenId, org.mode);
					const priced = await this.price(ctx, pair.token, p.amount, p.currency, { amount: "amount", currency: "currency" });

					const id = uuid();
					const clientSecret = `${id}_secret_${randomBase62(32)}`;
					// START / COMMIT through the driver on MySQL (lib/db.ts inDriverTransaction): the hot create path.
					const body = await inDriverTransaction(sequelize, async t => {
						const now = clock.now();
						// Raw INSERTs with the models' columns and setters (lib/payments/rows.ts): the ORM's create
						// cost several times the statements themselves on this hot path.
						const link = await insertRow(
							models.PaymentLink,
							newLinkRow({ organization: org, intentId: id, title: titleOf(p.description), amount: priced.tokenAmount, pair, expiresAt, metadata, withdrawalAddresses, createdByUserId: ctx.meta.user?.id ?? null, now }),
							t,
						);
						const intent = await insertRow(
							models.PaymentIntent,
							{
								id,
								organizationId: org.id,
								apiKeyId: ctx.meta.apiKey?.id ?? null,
								mode: org.mode,
								...priced,
								tokenId: pair.token.id,
								networkId: pair.network.id,
								status: "requires_payment_method",
								paymentMethodTypes: types,
								clientSecretDigest: digest(clientSecret, config.secrets.master),
								returnUrl: p.return_url,
								cancelUrl: p.cancel_url ?? null,
								description: p.description ?? null,
								metadata,
								expiresAt,
								withdrawalAddresses,
								paymentLinkId: link.id,
								latestTransactionId: null,
								cancellationReason: null,
								canceledAt: null,
								succeededAt: null,
								reversal: null,
								createdAt: now,
								updatedAt: now,
							},
							t,
						);
						const view = intentCreatedView(intent, link, clientSecret, config.publicUrl);
						await record(t, 200, view);
						return view;
					});
					// Committed: an idempotent replay never gets here, a rolled-back insert threw.
					countMetric(this.broker, METRIC.intentsCreated, { mode: org.mode });
					ctx.meta.$responseHeaders = { ...(ctx.meta.$responseHeaders || {}), "Cache-Control": "no-store" };
					return body;
				});
			},
		},

		get: {
			rest: "GET /payment_intents/:id",
			auth: "any",
			params: { $$strict: "remove", id: ID },
			async handler(this: IntentsThis, ctx: Ctx<{ id: string }>) {
				const { models } = appOf(this.broker);
				const org = await this.resolveOrganization(ctx);
				if (!isUuid(ctx.params.id)) throw intentNotFound();
				// A read for the response only: a plain row through the driver, no model instance
				// (lib/payments/rows.ts). The organization stays in the WHERE: another's id is 404.
				// Only the columns the view and the expiry check read (a third of the row).
				const row = await selectRow(models.PaymentIntent, { id: ctx.params.id, organizationId: org.id }, INTENT_GET_ATTRIBUTES);
				if (!row) throw intentNotFound();
				const { intent, latest } = await this.freshWithLatest(row);
				return intentView(intent, latest);
			},
		},

		confirm: {
			rest: "POST /payment_intents/:id/confirm",
			auth: "any",
			tracing: SECRET_PARAMS,
			params: {
				$$strict: "remove",
				id: ID,
				client_secret: { type: "string", min: 1, max: 300 },
				return_url: { ...URL_RULE, optional: true },
				payment_method_data: { ...OBJECT, optional: true },
			},
			async handler(this: IntentsThis, ctx: Ctx<{ id: string; client_secret: string; return_url?: string }>) {
				const { config, models, sequelize, clock } = appOf(this.broker);
				const found = await this.findOwn(ctx, ctx.params.id);
				if (!safeEqual(found.intent.clientSecretDigest, digest(ctx.params.client_secret, config.secrets.master))) {
					throw badRequest("Invalid client secret", { client_secret: "invalid" });
				}
				const intent = await inTransaction(sequelize, async t => {
					const row = await models.PaymentIntent.findByPk(found.intent.id, forUpdate(t));
					if (!row) throw intentNotFound();
					const tr = transition(row.status, "confirm");
					row.status = tr.to;
					if (ctx.params.return_url) row.returnUrl = ctx.params.return_url;
					row.updatedAt = clock.now();
					await row.save({ transaction: t });
					return row;
				});
				const link = await findLink(models, { id: intent.paymentLinkId });
				return intentConfirmedView(intent, payPageUrl(config.publicUrl, link?.slug ?? ""));
			},
		},

		update: {
			rest: "PATCH /payment_intents/:id",
			auth: "any",
			params: {
				$$strict: "remove",
				id: ID,
				amount: { ...amountRule, optional: true },
				currency: { ...CURRENCY, optional: true },
				description: { ...DESCRIPTION, optional: true, nullable: true },
				metadata: { ...OBJECT, optional: true },
				return_url: { ...URL_RULE, optional: true },
				cancel_url: { ...URL_RULE, optional: true, nullable: true },
				withdrawal_addresses: { ...OBJECT, optional: true, nullable: true },
			},
			async handler(this: IntentsThis, ctx: Ctx<UpdateIntentParams>) {
				const app = appOf(this.broker);
				const { models, clock } = app;
				const p = ctx.params;
				const { intent: current, org } = await this.findOwn(ctx, p.id);
				// Refuse a wrong state before asking for prices.
				if (!canTransition(current.status, "update")) throw transitionError(current.status, "update");
				const metadata = p.metadata !== undefined ? checkMetadata(p.metadata, "metadata") : undefined;
				const withdrawal = p.withdrawal_addresses !== undefined ? checkWithdrawalAddresses(p.withdrawal_addresses, org.mode, "withdrawal_addresses") : undefined;
				// Changing where the money goes, clearing included, is the managers' choice.
				if (withdrawal !== undefined) await this.requireManager(ctx, org.id);
				let priced: Priced | null = null;
				if (p.amount !== undefined || p.currency !== undefined) {
					const token = (await ctx.call("networks.getToken", { id: current.tokenId })) as TokenView;
					priced = await this.price(ctx, token, p.amount ?? current.amount, p.currency ?? current.currency, { amount: "amount", currency: "currency" });
				}
				const intent = await withPaymentLocked(app, { intentId: current.id }, async (t, { intent: row, link }) => {
					const now = clock.now();
					if (!row) throw intentNotFound();
					transition(row.status, "update");
					const amountChanged = priced !== null && (priced.tokenAmount !== row.tokenAmount || priced.currency !== row.currency || priced.amount !== row.amount);
					if (priced && amountChanged) {
						const funded = await models.Transaction.count({ where: { paymentLinkId: row.paymentLinkId, status: "pending", amountReceived: { [Op.ne]: "0" } }, transaction: t });
						if (funded > 0) throw badRequest("Cannot change the amount of a payment intent that has received funds", { amount: "fundsReceived" });
						// Open checkouts were quoted for the old amount.
						await lapseCheckouts(models, t, { paymentLinkId: row.paymentLinkId }, now);
						Object.assign(row, priced);
						if (link) link.amount = priced.tokenAmount;
					}
					if (p.description !== undefined) {
						row.description = p.description;
						if (link) link.title = titleOf(p.description);
					}
					if (metadata !== undefined) {
						row.metadata = metadata;
						if (link) link.metadata = metadata;
					}
					if (withdrawal !== undefined) {
						row.withdrawalAddresses = withdrawal;
						if (link) link.withdrawalAddresses = withdrawal;
					}
					if (p.return_url !== undefined) row.returnUrl = p.return_url;
					if (p.cancel_url !== undefined) row.cancelUrl = p.cancel_url;
					row.updatedAt = now;
					await row.save({ transaction: t });
					if (link && link.changed()) {
						link.updatedAt = now;
						await link.save({ transaction: t });
					}
					return row;
				});
				return intentUpdatedView(intent);
			},
		},

		cancel: {
			rest: "POST /payment_intents/:id/cancel",
			auth: "key",
			params: { $$strict: "remove", id: ID },
			async handler(this: IntentsThis, ctx: Ctx<{ id: string }>) {
				const app = appOf(this.broker);
				const { intent: current } = await this.findOwn(ctx, ctx.params.id);
				const effects = new Effects();
				const intent = await withPaymentLocked(app, { intentId: current.id }, async (t, { intent: row, link }) => {
					if (!row) throw intentNotFound();
					return cancelIntent(app, t, effects, row, link, "requested_by_merchant", app.clock.now());
				});
				await effects.flush(this.broker);
				return intentStatusView(intent);
			},
		},

		complete: {
			rest: "POST /payment_intents/:id/complete",
			auth: "key",
			params: { $$strict: "remove", id: ID },
			async handler(this: IntentsThis, ctx: Ctx<{ id: string }>) {
				const { models, sequelize, clock } = appOf(this.broker);
				const { intent: current } = await this.findOwn(ctx, ctx.params.id);
				const effects = new Effects();
				const intent = await inTransaction(sequelize, async t => {
					const now = clock.now();
					const row = await models.PaymentIntent.findByPk(current.id, forUpdate(t));
					if (!row) throw intentNotFound();
					const tr = transition(row.status, "complete");
					row.status = tr.to;
					row.updatedAt = now;
					await row.save({ transaction: t });
					if (tr.event) await recordIntentEvent(models, t, effects, row, tr.event, now, await latestTransactionOf(models, row, t));
					return row;
				});
				await effects.flush(this.broker);
				return intentStatusView(intent);
			},
		},

		/**
		 * Sandbox only: pays the intent through the normal flow, a checkout in the link's own
		 * token and a credit of what is due through `transactions.credit` marked simulated.
		 * Answers the intent as GET does (status succeeded, latestTransaction). Concurrent calls:
		 * the checkout is opened (or the open one reused) and the credit accepted under the rows'
		 * locks, so one call settles the intent and the others get the state error (400).
		 */
		simulate: {
			rest: "POST /payment_intents/:id/simulate",
			auth: "key",
			params: { $$strict: "remove", id: ID },
			async handler(this: IntentsThis, ctx: Ctx<{ id: string }>) {
				const app = appOf(this.broker);
				const { models } = app;
				const { intent, org } = await this.findOwn(ctx, ctx.params.id);
				if (org.mode !== "sandbox") throw forbidden("Simulation is only available for sandbox organizations", { code: "SIMULATION_SANDBOX_ONLY" });
				if (!canTransition(intent.status, "simulate")) throw transitionError(intent.status, "simulate");
				const link = await findLink(models, { id: intent.paymentLinkId });
				if (!link) throw intentNotFound();
				const payer = await resolvePair(ctx, link.networkId, link.tokenId, org.mode);
				const quote = await quoteCheckout(ctx, { tokenId: link.tokenId, networkId: link.networkId, mode: org.mode, amount: link.amount }, payer, "0", this.payments.bridgeFee);
				const tx = await openCheckout(app, {
					linkId: link.id,
					payerToken: payer.token,
					payerNetwork: payer.network,
					quote: quote.amounts,
					supportPercent: "0",
					paymentWindowMs: this.payments.paymentWindowMs,
					maxOpenCheckouts: this.payments.maxOpenCheckouts,
					intentOperation: "simulate",
					reuseIntentCheckout: true,
				});
				await ctx.call("transactions.credit", simulatedCredit(tx));
				const after = await models.PaymentIntent.findByPk(intent.id);
				if (!after) throw intentNotFound();
				return intentView(after, await latestTransactionOf(models, after));
			},
		},

		/** Runs the expiry sweep now (operators, tests). */
		sweep: {
			visibility: "public",
			params: { $$strict: "remove" },
			async handler(this: IntentsThis): Promise<SweepResult> {
				return this.sweep();
			},
		},

		/**
		 * Support staff (REPL `intent <id>`, docs/operations.md): an intent of any organization with
		 * its link, checkouts and webhook events. Internal: no route; `auth: "admin"` should one ever
		 * be added by mistake.
		 */
		"support.get": {
			visibility: "public",
			auth: "admin",
			params: { $$strict: "remove", id: SUPPORT_ID },
			async handler(this: IntentsThis, ctx: Ctx<{ id: string }>) {
				const { models, config } = appOf(this.broker);
				const intent = await models.PaymentIntent.findByPk(ctx.params.id);
				if (!intent) throw intentNotFound();
				const link = await models.PaymentLink.findByPk(intent.paymentLinkId);
				return {
					intent: supportIntentView(intent),
					link: link ? { ...supportLinkView(link), payPageUrl: payPageUrl(config.publicUrl, link.slug) } : null,
					transactions: await checkoutsOf(models, { intentId: intent.id }),
					events: await intentEvents(models, intent, intent.createdAt),
				};
			},
		},
	},

	methods: {
		/** The caller's organization's intent with expiry applied; anything else is 404. */
		async findOwn(this: IntentsThis, ctx: Ctx<any>, id: string) {
			const { models } = appOf(this.broker);
			const org = await this.resolveOrganization(ctx);
			if (!isUuid(id)) throw intentNotFound();
			// One SELECT ... LIMIT 1 (lib/payments/rows.ts); the organization stays in the WHERE.
			const intent = await selectOne(models.PaymentIntent, { id, organizationId: org.id });
			if (!intent) throw intentNotFound();
			return { intent: await this.fresh(intent), org };
		},

		/** Applies a due expiry (intent or its latest checkout) before the row is shown or changed. */
		async fresh<I extends FreshIntent>(this: IntentsThis, intent: I): Promise<I | PaymentIntent> {
			return (await this.freshWithLatest(intent)).intent;
		},

		/** `fresh`, with the latest checkout as it stands after (read once when nothing was due). */
		async freshWithLatest<I extends FreshIntent>(this: IntentsThis, intent: I): Promise<{ intent: I | PaymentIntent; latest: Transaction | null }> {
			const app = appOf(this.broker);
			const now = app.clock.now();
			const latest = await latestTransactionOf(app.models, intent);
			if (!expiryDue(intent, now) && !(latest && expiryDue(latest, now))) return { intent, latest };
			await sweepExpired(app, this.broker, { paymentLinkId: intent.paymentLinkId });
			const after = (await app.models.PaymentIntent.findByPk(intent.id)) ?? intent;
			return { intent: after, latest: await latestTransactionOf(app.models, after) };
		},

		/**
		 * `currency` is the token's symbol (amount in token units) or an active fiat code (converted
		 * now with the fiat quote, whose rate is kept with the intent).
		 */
		async price(this: IntentsThis, ctx: Ctx<any>, token: TokenView, amountIn: string, currencyIn: string, fields) {
			const currency = currencyIn.trim().toLowerCase();
			if (currency === token.symbol.toLowerCase()) {
				const amount = checkTokenAmount(amountIn, token.decimals, fields.amount);
				return { amount, currency, tokenAmount: amount, currencyRateId: null, amountUsd: null, rate: null };
			}
			if (money(amountIn).lte(0)) throw badRequest("Amount must be greater than zero", { [fields.amount]: "mustBePositive" });
			let quote: { tokenAmount?: string; currencyRateId: string | null; amountUsd: string; sourceAmount: string };
			try {
				quote = (await ctx.call("pricing.fiatQuote", { amount: amountIn, currency: currency.toUpperCase(), tokenId: token.id })) as typeof quote;
			} catch (err) {
				const code = Number((err as { code?: unknown }).code);
				if (!(code >= 400 && code < 500)) throw err;
				const errors = ((err as { data?: { errors?: Record<string, string> } }).data?.errors ?? {}) as Record<string, string>;
				if (errors.currency === "unknownCurrency") throw badRequest("Unsupported currency", { [fields.currency]: "unsupportedCurrency" });
				const mapped: Record<string, string> = {};
				for (const [k, v] of Object.entries(errors)) mapped[k === "amount" ? fields.amount : k === "currency" ? fields.currency : k] = v;
				throw badRequest((err as Error).message, Object.keys(mapped).length ? mapped : undefined);
			}
			if (!quote.tokenAmount || money(quote.tokenAmount).lte(0)) throw badRequest("Amount is too small", { [fields.amount]: "tooSmall" });
			const amount = toAmountString(quote.sourceAmount ?? amountIn);
			return {
				amount,
				currency,
				tokenAmount: toAmountString(quote.tokenAmount),
				currencyRateId: quote.currencyRateId ?? null,
				amountUsd: quote.amountUsd ?? null,
				rate: toAmountString(money(quote.tokenAmount).div(money(amount)), 18),
			};
		},

		async sweep(this: IntentsThis) {
			// One sweep at a time per node; nodes running concurrently are safe (rows are locked and re-checked).
			if (!this.sweeping) {
				this.sweeping = sweepExpired(appOf(this.broker), this.broker).finally(() => {
					this.sweeping = null;
				});
			}
			return this.sweeping;
		},
	},

	created(this: IntentsThis) {
		startCounters(this.broker, METRIC.intentsCreated, [{ mode: "sandbox" }, { mode: "live" }]);
		this.payments = appOf(this.broker).config.payments;
		this.sweepTimer = null;
		this.sweeping = null;
	},

	started(this: IntentsThis) {
		if (this.payments.sweepIntervalMs > 0) {
			this.sweepTimer = setInterval(() => {
				this.sweep().catch(err => this.logger.warn("Payments expiry sweep failed:", (err as Error)?.message));
			}, this.payments.sweepIntervalMs);
			this.sweepTimer.unref();
		}
	},

	async stopped(this: IntentsThis) {
		if (this.sweepTimer) clearInterval(this.sweepTimer);
		this.sweepTimer = null;
		await this.sweeping?.catch(() => undefined);
	},
};

export default IntentsService;
