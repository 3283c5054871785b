/**
 * Payment links and the hosted pay page (spec "Payment links and hosted pay page"): the merchant's
 * CRUD, the public reads by slug, the pay page's confirm and cancel, quotes, checkouts (a pending
 * transaction with a fresh HD deposit address) and the sandbox simulation. Link status rules are
 * lib/payments/link-state.ts; checkout and expiry work is lib/payments/store.ts.
 * Decisions: docs/payments.md.
 */
import crypto from "node:crypto";
import Decimal from "decimal.js";
import type { Context, Service, ServiceSchema } from "moleculer";
import { Op, WhereOptions } from "sequelize";
import { appOf } from "../lib/app";
import "../lib/payments/messages";
import { chainParamsFor, codecFor } from "../lib/chains";
import { digest } from "../lib/crypto";
import { badRequest, forbidden, notFound } from "../lib/errors";
import { registerTranslations } from "../lib/i18n";
import { isUuid, uuid } from "../lib/ids";
import { countMetric, METRIC } from "../lib/metrics";
import { amountRule } from "../lib/money";
import { catalogueNetworkById } from "../lib/networks/catalogue";
import type { ListedNetwork, TokenView } from "../lib/networks/view";
import { FILTER_TEXT, PAGE_PARAMS, pageWindow, toPage } from "../lib/pagination";
import { EMAIL_RULE } from "../lib/users/email";
import { PayerPair, quoteCheckout, quoteView, resolvePair, resolvePayer } from "../lib/payments/checkout";
import type { PaymentsConfig } from "../lib/payments/config";
import { canTransition, OPEN_STATES, transition, transitionError } from "../lib/payments/intent-state";
import { checkExpiry, checkMetadata, checkTokenAmount, checkWithdrawalAddresses } from "../lib/payments/input";
import { assertLinkPayable, cancelLinkStatus, isFinalLinkStatus, LINK_STATUSES, LINK_UPDATE_STATUSES, LinkStatus, LinkUpdateStatus, patchedLinkStatus } from "../lib/payments/link-state";
import { frontendOrigin } from "../lib/payments/origin";
import { parseSupportPercent } from "../lib/payments/quote";
import { newLinkRow } from "../lib/payments/link-row";
import { simulatedCredit } from "../lib/payments/settlement";
import { cancelIntent, Effects, expiryDue, findLink, inTransaction, lapseCheckouts, openCheckout, sweepExpired, withPaymentLocked, type CheckoutInput } from "../lib/payments/store";
import { intentConfirmedView, linkPublicView, linkView, payDetailsView, payPageUrl, transactionView } from "../lib/payments/views";
import { checkoutsOf, supportLinkView } from "../lib/payments/support";
import { SUPPORT_ID } from "../lib/support/params";
import { IdempotencyMethods, IdempotencyMeta, IdempotencyMixin } from "../mixins/idempotency.mixin";
import { OrgScopeMethods, OrgScopeMixin } from "../mixins/org-scope.mixin";
import type { PaymentLink } from "../models/payment-link.model";
import type { Transaction } from "../models/transaction.model";
import type { PayOption } from "../web/pay/types";

registerTranslations("es", {
	"Payment link not found": "Enlace de pago no encontrado",
	"This payment link belongs to a payment intent; change the intent instead": "Este enlace de pago pertenece a una intención de pago; modifique la intención",
	"Cannot change the price of a payment link that has received funds": "No se puede cambiar el precio de un enlace de pago que ya ha recibido fondos",
	"Invalid payer address": "Dirección del pagador no válida",
});

type Ctx<P = Record<string, never>> = Context<P, IdempotencyMeta>;

export interface CreateLinkParams {
	title: string;
	amount: string;
	tokenId: string;
	networkId: string;
	expiresAt?: string;
	metadata?: Record<string, unknown>;
	withdrawalAddresses?: Record<string, unknown>;
}

export interface ListLinksParams {
	page?: number;
	limit?: number;
	organizationId?: string;
	search?: string;
	status?: LinkStatus;
	networkId?: string;
	tokenId?: string;
	payerEmail?: string;
	payerAddress?: string;
}

export interface UpdateLinkParams {
	id: string;
	title?: string;
	amount?: string;
	tokenId?: string;
	networkId?: string;
	status?: LinkUpdateStatus;
	expiresAt?: string | null;
	metadata?: Record<string, unknown>;
	withdrawalAddresses?: Record<string, unknown> | null;
}

export interface CheckoutParams {
	slug: string;
	payerTokenId?: string;
	payerNetworkId?: string;
	supportPercent?: number | string;
	payerEmail?: string;
	payerAddress?: string;
}

interface LinksVars {
	payments: PaymentsConfig;
}

interface LinksMethods extends OrgScopeMethods, IdempotencyMethods {
	findOwn(ctx: Ctx<any>, id: string): Promise<PaymentLink>;
	findBySlug(slug: string): Promise<PaymentLink>;
	assertPayable(link: PaymentLink): Promise<void>;
	checkPayerAddress(address: string | undefined, payer: PayerPair): string | null;
	prepareCheckout(ctx: Ctx<any>, link: PaymentLink, p: Omit<CheckoutParams, "slug">): Promise<{ payer: PayerPair; supportPercent: string; quote: Awaited<ReturnType<typeof quoteCheckout>>; payerAddress: string | null; checkout: CheckoutInput }>;
}

type LinksThis = Service<{ rest: string }> & LinksVars & LinksMethods;

const ID = { type: "string", max: 100 } as const;
const SLUG = { type: "string", max: 100 } as const;
const SLUG_PATTERN = /^pl_[0-9A-Za-z]{1,64}$/;
const TITLE = { type: "string", trim: true, min: 1, max: 200 } as const;
const SUPPORT = { type: "multi", rules: [{ type: "number" }, { type: "string", max: 20 }], optional: true } as const;
const PAYER_FIELDS = {
	payerTokenId: { type: "string", max: 100, optional: true },
	payerNetworkId: { type: "string", max: 100, optional: true },
	supportPercent: SUPPORT,
} as const;


function payOption(t: TokenView, n: { id: string; name: string; chainType: string; chainId: number }, watched: boolean): PayOption {
	const uriScheme = catalogueNetworkById(n.id)?.uriScheme ?? null;
	return { tokenId: t.id, symbol: t.symbol, name: t.name, decimals: t.decimals, contractAddress: t.contractAddress, isNative: t.isNative, networkId: n.id, networkName: n.name, chainType: n.chainType, chainId: n.chainId, uriScheme, watched };
}

/** What the payer still owes (never negative). */
function amountDue(total: string, received: string): string {
	const due = new Decimal(total).minus(received);
	return due.isNegative() ? "0" : due.toFixed();
}

const linkNotFound = () => notFound("Payment link not found");
const managedByIntent = () => badRequest("This payment link belongs to a payment intent; change the intent instead", { paymentLink: "managedByIntent" });
/** LIKE pattern of a user's text: % and _ match themselves ("!" is the escape: no backslash quoting differences between MySQL and SQLite). */
const likeEscape = (s: string) => s.replace(/[!%_]/g, c => `!${c}`);

const LinksService: ServiceSchema<{ rest: string }, LinksMethods & Record<string, any>, LinksVars> = {
	name: "links",
	mixins: [OrgScopeMixin as ServiceSchema, IdempotencyMixin as ServiceSchema],
	settings: { rest: "/" },

	actions: {
		create: {
			rest: "POST /payments/links",
			auth: "jwt",
			params: {
				$$strict: "remove",
				title: TITLE,
				amount: amountRule,
				tokenId: ID,
				networkId: ID,
				expiresAt: { type: "string", max: 40, optional: true },
				metadata: { type: "object", optional: true },
				withdrawalAddresses: { type: "object", optional: true },
			},
			async handler(this: LinksThis, ctx: Ctx<CreateLinkParams>) {
				const { models, sequelize, clock } = appOf(this.broker);
				const org = await this.resolveOrganization(ctx);
				return this.idempotent(ctx, async record => {
					const p = ctx.params;
					const metadata = checkMetadata(p.metadata, "metadata");
					const withdrawalAddresses = checkWithdrawalAddresses(p.withdrawalAddresses, org.mode, "withdrawalAddresses");
					// Where the money goes is the managers' choice (an empty object means the settings: anyone).
					if (withdrawalAddresses) await this.requireManager(ctx, org.id);
					const expiresAt = checkExpiry(p.expiresAt, clock.now(), "expiresAt");
					const pair = await resolvePair(ctx, p.networkId, p.tokenId, org.mode);
					const amount = checkTokenAmount(p.amount, pair.token.decimals, "amount");
					const body = await inTransaction(sequelize, async t => {
						const now = clock.now();
						const link = await models.PaymentLink.create(
							newLinkRow({ organization: org, intentId: null, title: p.title, amount, pair, expiresAt, metadata, withdrawalAddresses, createdByUserId: ctx.meta.user?.id ?? null, now }),
							{ transaction: t },
						);
						const view = linkView(link);
						await record(t, 201, view);
						return view;
					});
					ctx.meta.$statusCode = 201;
					return body;
				});
			},
		},

		/**
		 * The caller's organization's links (x-organization-id or the default; `organizationId`
		 * names another of the caller's organizations, 404 when it is not one), newest first.
		 */
		list: {
			rest: "GET /payments/links",
			auth: "jwt",
			params: {
				$$strict: "remove",
				...PAGE_PARAMS,
				organizationId: { type: "string", max: 100, optional: true },
				search: { type: "string", max: 200, optional: true, pattern: FILTER_TEXT },
				status: { type: "enum", values: [...LINK_STATUSES], optional: true },
				networkId: { type: "string", max: 100, optional: true, pattern: FILTER_TEXT },
				tokenId: { type: "string", max: 100, optional: true, pattern: FILTER_TEXT },
				payerEmail: { type: "string", max: 254, optional: true, pattern: FILTER_TEXT },
				payerAddress: { type: "string", max: 200, optional: true, pattern: FILTER_TEXT },
			},
			async handler(this: LinksThis, ctx: Ctx<ListLinksParams>) {
				const app = appOf(this.broker);
				const p = ctx.params;
				const org = await this.resolveOrganization(ctx, p.organizationId !== undefined ? { organizationId: p.organizationId } : {});
				await sweepExpired(app, this.broker, { organizationId: org.id });
				const conditions: WhereOptions[] = [{ organizationId: org.id, deletedAt: null }];
				if (p.status) conditions.push({ status: p.status });
				if (p.networkId) conditions.push({ networkId: p.networkId });
				if (p.tokenId) conditions.push({ tokenId: p.tokenId });
				if (p.payerEmail) conditions.push({ payerEmail: p.payerEmail.trim().toLowerCase() });
				if (p.payerAddress) conditions.push({ payerAddress: p.payerAddress.trim() });
				if (p.search && p.search.trim()) {
					const pattern = `%${likeEscape(p.search.trim().toLowerCase())}%`;
					conditions.push(app.sequelize.where(app.sequelize.fn("LOWER", app.sequelize.col("title")), { [Op.like]: app.sequelize.literal(`${app.sequelize.escape(pattern)} ESCAPE '!'`) }) as WhereOptions);
				}
				const w = pageWindow(p.page, p.limit);
				const rows = await app.models.PaymentLink.findAll({ where: { [Op.and]: conditions }, order: [["createdAt", "DESC"], ["id", "DESC"]], offset: w.offset, limit: w.fetch });
				return toPage(rows, w.limit, linkView);
			},
		},

		/** Public: the link without the merchant's withdrawal addresses. */
		getBySlug: {
			rest: "GET /payments/links/:slug",
			auth: "public",
			params: { $$strict: "remove", slug: SLUG },
			async handler(this: LinksThis, ctx: Ctx<{ slug: string }>) {
				return linkPublicView(await this.findBySlug(ctx.params.slug));
			},
		},

		update: {
			rest: "PATCH /payments/links/:id",
			auth: "jwt",
			params: {
				$$strict: "remove",
				id: ID,
				title: { ...TITLE, optional: true },
				amount: { ...amountRule, optional: true },
				tokenId: { ...ID, optional: true },
				networkId: { ...ID, optional: true },
				status: { type: "enum", values: [...LINK_UPDATE_STATUSES], optional: true },
				expiresAt: { type: "string", max: 40, optional: true, nullable: true },
				metadata: { type: "object", optional: true },
				withdrawalAddresses: { type: "object", optional: true, nullable: true },
			},
			async handler(this: LinksThis, ctx: Ctx<UpdateLinkParams>) {
				const app = appOf(this.broker);
				const { models, clock } = app;
				const p = ctx.params;
				const current = await this.findOwn(ctx, p.id);
				if (current.ownedByIntent) throw managedByIntent();
				const expiresAt = p.expiresAt === undefined ? undefined : p.expiresAt === null ? null : checkExpiry(p.expiresAt, clock.now(), "expiresAt");
				// Refuses final links (naming the state) before anything else is looked up.
				patchedLinkStatus(current, { status: p.status, expiresAt }, clock.now());
				const metadata = p.metadata !== undefined ? checkMetadata(p.metadata, "metadata") : undefined;
				const withdrawal = p.withdrawalAddresses !== undefined ? checkWithdrawalAddresses(p.withdrawalAddresses, current.mode, "withdrawalAddresses") : undefined;
				// Changing where the money goes, clearing included, is the managers' choice.
				if (withdrawal !== undefined) await this.requireManager(ctx, current.organizationId);
				let price: { amount: string; token: TokenView; networkId: string } | null = null;
				if (p.amount !== undefined || p.tokenId !== undefined || p.networkId !== undefined) {
					const pair = await resolvePair(ctx, p.networkId ?? current.networkId, p.tokenId ?? current.tokenId, current.mode);
					price = { amount: checkTokenAmount(p.amount ?? current.amount, pair.token.decimals, "amount"), token: pair.token, networkId: pair.network.id };
				}
				const effects = new Effects();
				const link = await withPaymentLocked(app, { linkId: current.id }, async (t, { intent, link: row }) => {
					const now = clock.now();
					if (!row || row.deletedAt) throw linkNotFound();
					const status = patchedLinkStatus(row, { status: p.status, expiresAt }, now);
					const intentOpen = !!intent && OPEN_STATES.includes(intent.status);
					if (status === "canceled") {
						// Cancels the pay page's intent too (which cancels the link and ends its checkouts).
						if (intent && intentOpen) await cancelIntent(app, t, effects, intent, row, "requested_by_merchant", now);
						await lapseCheckouts(models, t, { paymentLinkId: row.id }, now);
					}
					const priceChanged = price !== null && status !== "canceled" && (price.amount !== row.amount || price.token.id !== row.tokenId || price.networkId !== row.networkId);
					if (price && priceChanged) {
						const funded = await models.Transaction.count({ where: { paymentLinkId: row.id, status: "pending", amountReceived: { [Op.ne]: "0" } }, transaction: t });
						if (funded > 0) throw badRequest("Cannot change the price of a payment link that has received funds", { amount: "fundsReceived" });
						// Open checkouts were quoted for the old price.
						await lapseCheckouts(models, t, { paymentLinkId: row.id }, now);
						row.amount = price.amount;
						row.tokenId = price.token.id;
						row.networkId = price.networkId;
					}
					if (p.title !== undefined) row.title = p.title;
					if (metadata !== undefined) row.metadata = metadata;
					if (withdrawal !== undefined) row.withdrawalAddresses = withdrawal;
					if (expiresAt !== undefined) row.expiresAt = expiresAt;
					// The pay page's intent mirrors its link.
					if (intent && intentOpen && status !== "canceled") {
						if (price && priceChanged) {
							Object.assign(intent, { amount: price.amount, tokenAmount: price.amount, currency: price.token.symbol.toLowerCase(), tokenId: price.token.id, networkId: price.networkId });
						}
						if (expiresAt !== undefined) intent.expiresAt = expiresAt;
						if (intent.changed()) {
							intent.updatedAt = now;
							await intent.save({ transaction: t });
						}
					}
					row.status = status;
					row.updatedAt = now;
					await row.save({ transaction: t });
					return row;
				});
				await effects.flush(this.broker);
				return linkView(link);
			},
		},

		/** Soft delete; an open link is canceled first (its open checkouts end). */
		remove: {
			rest: "DELETE /payments/links/:id",
			auth: "jwt",
			params: { $$strict: "remove", id: ID },
			async handler(this: LinksThis, ctx: Ctx<{ id: string }>) {
				const app = appOf(this.broker);
				const { models, clock } = app;
				const current = await this.findOwn(ctx, ctx.params.id);
				if (current.ownedByIntent) throw managedByIntent();
				const effects = new Effects();
				await withPaymentLocked(app, { linkId: current.id }, async (t, { intent, link: row }) => {
					const now = clock.now();
					if (!row || row.deletedAt) throw linkNotFound();
					if (intent && OPEN_STATES.includes(intent.status)) await cancelIntent(app, t, effects, intent, row, "requested_by_merchant", now);
					if (!isFinalLinkStatus(row.status)) {
						row.status = "canceled";
						await lapseCheckouts(models, t, { paymentLinkId: row.id }, now);
					}
					row.deletedAt = now;
					row.updatedAt = now;
					await row.save({ transaction: t });
				});
				await effects.flush(this.broker);
				ctx.meta.$statusCode = 204;
				return null;
			},
		},

		payDetails: {
			rest: "GET /pay/:slug",
			auth: "public",
			params: { $$strict: "remove", slug: SLUG },
			async handler(this: LinksThis, ctx: Ctx<{ slug: string }>) {
				return payDetailsView(await this.findBySlug(ctx.params.slug));
			},
		},

		/**
		 * The payer's "pay" on the hosted page: the link's intent is confirmed (one is opened for a
		 * link that has none), and the answer redirects to the checkout page of the trusted
		 * frontend origin: `<origin>/pay/<slug>/checkout`.
		 */
		payConfirm: {
			rest: "POST /pay/:slug/confirm",
			auth: "public",
			params: { $$strict: "remove", slug: SLUG },
			async handler(this: LinksThis, ctx: Ctx<{ slug: string }>) {
				const app = appOf(this.broker);
				const { config, models, clock } = app;
				const link = await this.findBySlug(ctx.params.slug);
				await this.assertPayable(link);
				const token = (await ctx.call("networks.getToken", { id: link.tokenId })) as TokenView;
				const { intent, isNew } = await withPaymentLocked(app, { linkId: link.id }, async (t, { intent: own, link: row }) => {
					const now = clock.now();
					if (!row || row.deletedAt) throw linkNotFound();
					assertLinkPayable(row.status);
					if (own) {
						const tr = transition(own.status, "confirm");
						own.status = tr.to;
						own.updatedAt = now;
						await own.save({ transaction: t });
						return { intent: own, isNew: false };
					}
					const id = uuid();
					const latest = await models.Transaction.findOne({ where: { paymentLinkId: row.id }, order: [["createdAt", "DESC"], ["id", "DESC"]], transaction: t });
					const created = await models.PaymentIntent.create(
						{
							id,
							organizationId: row.organizationId,
							apiKeyId: null,
							mode: row.mode,
							amount: row.amount,
							currency: token.symbol.toLowerCase(),
							tokenId: row.tokenId,
							networkId: row.networkId,
							tokenAmount: row.amount,
							currencyRateId: null,
							amountUsd: null,
							rate: null,
							status: "requires_confirmation",
							paymentMethodTypes: ["crypto"],
							// Nobody ever holds this intent's secret: it is confirmed by the pay page only.
							clientSecretDigest: digest(`${id}_secret_${crypto.randomBytes(24).toString("hex")}`, config.secrets.master),
							returnUrl: `${config.publicUrl.replace(/\/+$/, "")}/pay/${row.slug}`,
							cancelUrl: null,
							description: row.title,
							metadata: row.metadata ?? {},
							expiresAt: row.expiresAt,
							withdrawalAddresses: row.withdrawalAddresses,
							paymentLinkId: row.id,
							latestTransactionId: latest?.id ?? null,
							cancellationReason: null,
							canceledAt: null,
							succeededAt: null,
							createdAt: now,
							updatedAt: now,
						},
						{ transaction: t },
					);
					row.intentId = id;
					row.updatedAt = now;
					await row.save({ transaction: t });
					await models.Transaction.update({ intentId: id }, { where: { paymentLinkId: row.id, intentId: null }, transaction: t });
					return { intent: created, isNew: true };
				});
				if (isNew) countMetric(this.broker, METRIC.intentsCreated, { mode: intent.mode });
				const origin = frontendOrigin(ctx.meta.origin, config.corsOrigins, config.publicUrl);
				return intentConfirmedView(intent, `${origin}/pay/${encodeURIComponent(link.slug)}/checkout`);
			},
		},

		/**
		 * The payer gives up: the link's intent is canceled (reason `abandoned`) and, links being
		 * single use, the link with it; its open checkouts end. Answers the intent (or the link
		 * when it never had one) as `{ id, status, updatedAt }`.
		 */
		payCancel: {
			rest: "POST /pay/:slug/cancel",
			auth: "public",
			params: { $$strict: "remove", slug: SLUG },
			async handler(this: LinksThis, ctx: Ctx<{ slug: string }>) {
				const app = appOf(this.broker);
				const { models, clock } = app;
				const link = await this.findBySlug(ctx.params.slug);
				const effects = new Effects();
				const answer = await withPaymentLocked(app, { linkId: link.id }, async (t, { intent, link: row }) => {
					const now = clock.now();
					if (!row || row.deletedAt) throw linkNotFound();
					if (intent) {
						const done = await cancelIntent(app, t, effects, intent, row, "abandoned", now);
						if (!isFinalLinkStatus(row.status)) {
							row.status = "canceled";
							row.updatedAt = now;
							await row.save({ transaction: t });
						}
						return { id: done.id, status: done.status, updatedAt: done.updatedAt.toISOString() };
					}
					const status = cancelLinkStatus(row.status);
					if (status !== row.status) {
						row.status = status;
						row.updatedAt = now;
						await row.save({ transaction: t });
						await lapseCheckouts(models, t, { paymentLinkId: row.id }, now);
					}
					return { id: row.id, status: row.status, updatedAt: row.updatedAt.toISOString() };
				});
				await effects.flush(this.broker);
				return answer;
			},
		},

		/**
		 * What the hosted pay page (services/api.service.ts, docs/pay-page.md) renders for a slug:
		 * the public link, whether it is a sandbox link, the merchant's return/cancel URLs (of the
		 * link's intent), its token and network, and the tokens a payer may choose (active ones of
		 * the link's kind: testnets for sandbox links), each saying whether a chain watcher follows
		 * its network. A live payer is offered only watched networks (the link's own token is
		 * always first, marked, and its quote says why it cannot be paid); a sandbox payer every
		 * test network, where an unwatched one takes "Simulate payment" only. Internal: no route.
		 */
		payPage: {
			visibility: "public",
			auth: "public",
			params: { $$strict: "remove", slug: SLUG },
			async handler(this: LinksThis, ctx: Ctx<{ slug: string }>) {
				const app = appOf(this.broker);
				const link = await this.findBySlug(ctx.params.slug);
				const intent = link.intentId ? await app.models.PaymentIntent.findByPk(link.intentId) : null;
				const token = (await ctx.call("networks.getToken", { id: link.tokenId })) as TokenView & { network: { id: string; name: string; chainType: string; chainId: number } };
				const sandbox = link.mode === "sandbox";
				const networks = (await ctx.call("networks.list", { testnet: sandbox ? "true" : "false" })) as ListedNetwork[];
				const watched = new Set(networks.filter(n => n.watched).map(n => n.id));
				const options: PayOption[] = [];
				for (const network of networks) {
					if (!network.isActive || (!sandbox && !network.watched)) continue;
					const tokens = (await ctx.call("networks.tokens", { id: network.id, active: "true" })) as TokenView[];
					for (const t of tokens) options.push(payOption(t, network, network.watched));
				}
				const own = payOption(token, token.network, watched.has(token.network.id));
				// The link's own token first, even where its network is not listed (inactive, dev-only).
				const rest = options.filter(o => o.tokenId !== own.tokenId);
				const ownPage = `${app.config.publicUrl}/pay/${link.slug}`;
				return {
					link: payDetailsView(link),
					description: intent?.description && intent.description !== link.title ? intent.description : null,
					sandbox,
					// The pay page's own intent returns to the pay page itself: no merchant URL to go back to.
					returnUrl: intent?.returnUrl && intent.returnUrl !== ownPage ? intent.returnUrl : null,
					cancelUrl: intent?.cancelUrl ?? null,
					intentStatus: intent?.status ?? null,
					options: [own, ...rest],
				};
			},
		},

		/**
		 * A checkout of this link as the pay page shows it: the transaction, the link's and intent's
		 * states and what is still due. 404 when the transaction is not this link's. Internal: the
		 * gateway's /pay/:slug/status and /pay/:slug/events use it.
		 */
		payStatus: {
			visibility: "public",
			auth: "public",
			params: { $$strict: "remove", slug: SLUG, transactionId: { type: "string", max: 100 } },
			async handler(this: LinksThis, ctx: Ctx<{ slug: string; transactionId: string }>) {
				const app = appOf(this.broker);
				const link = await this.findBySlug(ctx.params.slug);
				if (!isUuid(ctx.params.transactionId)) throw notFound("Transaction not found");
				const view = (await ctx.call("transactions.get", { id: ctx.params.transactionId })) as ReturnType<typeof transactionView>;
				if (view.paymentLinkId !== link.id) throw notFound("Transaction not found");
				const after = (await findLink(app.models, { slug: link.slug })) ?? link;
				const intent = after.intentId ? await app.models.PaymentIntent.findByPk(after.intentId) : null;
				return {
					linkStatus: after.status,
					intentStatus: intent?.status ?? null,
					transaction: view,
					amountDue: amountDue(view.totalAmount, view.amountReceived),
				};
			},
		},

		/**
		 * The pay statuses of many checkouts at once, as payStatus answers each: the gateway's
		 * safety-net poll of its open event streams (lib/pay-page/live.ts), four reads for up to
		 * 1,000 checkouts. Left out: a checkout that is gone or whose link is, and one whose
		 * expiry (or its link's, or another pending checkout's of the link) is due: the stream reads
		 * that one through payStatus, which runs the scoped expiry first. Internal: no route.
		 */
		payStatuses: {
			visibility: "public",
			params: { $$strict: "remove", transactionIds: { type: "array", max: 1000, items: { type: "string", max: 100 } } },
			async handler(this: LinksThis, ctx: Ctx<{ transactionIds: string[] }>) {
				const { models, clock } = appOf(this.broker);
				const now = clock.now();
				const ids = ctx.params.transactionIds.filter(isUuid);
				if (ids.length === 0) return [];
				const txs = (await models.Transaction.findAll({ where: { id: ids } })).filter(tx => !expiryDue(tx, now));
				const linkIds = [...new Set(txs.map(tx => tx.paymentLinkId))];
				if (linkIds.length === 0) return [];
				const [links, due] = await Promise.all([
					models.PaymentLink.findAll({ where: { id: linkIds, deletedAt: null } }),
					models.Transaction.findAll({ where: { paymentLinkId: linkIds, status: "pending", expiresAt: { [Op.lte]: now } }, attributes: ["paymentLinkId"], raw: true }),
				]);
				const dueLinks = new Set(due.map(r => r.paymentLinkId));
				const linkById = new Map(links.filter(l => !expiryDue(l, now) && !dueLinks.has(l.id)).map(l => [l.id, l]));
				const intentIds = [...linkById.values()].map(l => l.intentId).filter((id): id is string => !!id);
				const intents = intentIds.length ? await models.PaymentIntent.findAll({ where: { id: intentIds } }) : [];
				const intentById = new Map(intents.map(i => [i.id, i]));
				return txs.flatMap(tx => {
					const link = linkById.get(tx.paymentLinkId);
					if (!link) return [];
					const view = transactionView(tx);
					return [{ linkStatus: link.status, intentStatus: (link.intentId ? intentById.get(link.intentId)?.status : null) ?? null, transaction: view, amountDue: amountDue(view.totalAmount, view.amountReceived) }];
				});
			},
		},

		quote: {
			rest: "POST /payments/links/:slug/quote",
			auth: "public",
			params: { $$strict: "remove", slug: SLUG, ...PAYER_FIELDS },
			async handler(this: LinksThis, ctx: Ctx<CheckoutParams>) {
				const link = await this.findBySlug(ctx.params.slug);
				await this.assertPayable(link);
				const { quote } = await this.prepareCheckout(ctx, link, ctx.params);
				return quoteView(quote);
			},
		},

		/** Opens a checkout: 201 with a pending transaction carrying depositAddress, totalAmount and expiresAt. */
		checkout: {
			rest: "POST /payments/links/:slug/transactions",
			auth: "public",
			params: {
				$$strict: "remove",
				slug: SLUG,
				...PAYER_FIELDS,
				payerEmail: { type: "email", max: 254, optional: true, custom: EMAIL_RULE.custom },
				payerAddress: { type: "string", min: 1, max: 200, optional: true },
			},
			async handler(this: LinksThis, ctx: Ctx<CheckoutParams>) {
				const app = appOf(this.broker);
				return this.idempotent(ctx, async record => {
					const link = await this.findBySlug(ctx.params.slug);
					await this.assertPayable(link);
					const prepared = await this.prepareCheckout(ctx, link, ctx.params);
					let body: ReturnType<typeof transactionView> | null = null;
					await openCheckout(app, {
						...prepared.checkout,
						payerEmail: ctx.params.payerEmail ? ctx.params.payerEmail.trim().toLowerCase() : null,
						payerAddress: prepared.payerAddress,
						onRecorded: async (t, tx) => {
							body = transactionView(tx);
							await record(t, 201, body);
						},
					});
					ctx.meta.$statusCode = 201;
					return body as unknown as ReturnType<typeof transactionView>;
				});
			},
		},

		/**
		 * Sandbox links only: pays the link through the normal flow (a checkout, then a credit of
		 * what is due through `transactions.credit`, marked simulated). `transactionId` picks an
		 * open checkout of the link; otherwise one is opened with the body's payer fields.
		 * Answers the transaction (completed, simulated). The checks here only spare work: the
		 * credit path decides under the rows' locks, so of concurrent simulations of a link one
		 * settles it and the others get the state error (400).
		 */
		simulate: {
			rest: "POST /payments/links/:slug/simulate",
			auth: "public",
			params: { $$strict: "remove", slug: SLUG, transactionId: { type: "string", max: 100, optional: true }, ...PAYER_FIELDS },
			async handler(this: LinksThis, ctx: Ctx<CheckoutParams & { transactionId?: string }>) {
				const app = appOf(this.broker);
				const { models } = app;
				const link = await this.findBySlug(ctx.params.slug);
				if (link.mode !== "sandbox") throw forbidden("Simulation is only available for sandbox organizations", { code: "SIMULATION_SANDBOX_ONLY" });
				await this.assertPayable(link);
				let tx: Transaction | null = null;
				if (ctx.params.transactionId) {
					tx = isUuid(ctx.params.transactionId) ? await models.Transaction.findOne({ where: { id: ctx.params.transactionId, paymentLinkId: link.id } }) : null;
					if (!tx) throw notFound("Transaction not found");
					if (tx.status !== "pending") throw badRequest(`Cannot simulate a payment for a transaction in state ${tx.status}`);
				} else {
					const prepared = await this.prepareCheckout(ctx, link, ctx.params);
					tx = await openCheckout(app, { ...prepared.checkout, intentOperation: "simulate" });
				}
				await ctx.call("transactions.credit", simulatedCredit(tx));
				const after = await models.Transaction.findByPk(tx.id);
				return transactionView(after ?? tx);
			},
		},

		/**
		 * Support staff (REPL `link <id|slug>`, docs/operations.md): a link of any organization, by
		 * id or slug, deleted ones too, with its checkouts. Internal: no route.
		 */
		"support.get": {
			visibility: "public",
			auth: "admin",
			params: { $$strict: "remove", id: { ...SUPPORT_ID, optional: true }, slug: { type: "string", pattern: SLUG_PATTERN, optional: true } },
			async handler(this: LinksThis, ctx: Ctx<{ id?: string; slug?: string }>) {
				const { models, config } = appOf(this.broker);
				const { id, slug } = ctx.params;
				if (!id === !slug) throw badRequest("Give the link's id or its slug");
				const link = await models.PaymentLink.findOne({ where: id ? { id } : { slug: slug as string } });
				if (!link) throw notFound("Payment link not found");
				return {
					link: { ...supportLinkView(link), payPageUrl: payPageUrl(config.publicUrl, link.slug) },
					transactions: await checkoutsOf(models, { paymentLinkId: link.id }),
				};
			},
		},
	},

	methods: {
		/** A link of one of the caller's organizations (not deleted), expiry applied; else 404. */
		async findOwn(this: LinksThis, ctx: Ctx<any>, id: string) {
			const app = appOf(this.broker);
			if (!isUuid(id)) throw linkNotFound();
			const link = await findLink(app.models, { id });
			if (!link) throw linkNotFound();
			try {
				await this.resolveOrganization(ctx, { organizationId: link.organizationId });
			} catch (err) {
				if ((err as { code?: number }).code === 404) throw linkNotFound();
				throw err;
			}
			if (!expiryDue(link, app.clock.now())) return link;
			await sweepExpired(app, this.broker, { paymentLinkId: link.id });
			return (await findLink(app.models, { id })) ?? link;
		},

		async findBySlug(this: LinksThis, slug: string) {
			const app = appOf(this.broker);
			if (!SLUG_PATTERN.test(slug)) throw linkNotFound();
			const link = await findLink(app.models, { slug });
			if (!link) throw linkNotFound();
			const now = app.clock.now();
			const dueCheckout = await app.models.Transaction.count({ where: { paymentLinkId: link.id, status: "pending", expiresAt: { [Op.lte]: now } } });
			if (!expiryDue(link, now) && dueCheckout === 0) return link;
			await sweepExpired(app, this.broker, { paymentLinkId: link.id });
			return (await findLink(app.models, { slug })) ?? link;
		},

		/** Payers pay active links whose intent (if any) can still be paid; else 400 naming the state. */
		async assertPayable(this: LinksThis, link: PaymentLink) {
			assertLinkPayable(link.status);
			if (!link.intentId) return;
			const intent = await appOf(this.broker).models.PaymentIntent.findByPk(link.intentId);
			if (intent && !canTransition(intent.status, "pay")) throw transitionError(intent.status, "pay");
		},

		checkPayerAddress(this: LinksThis, address: string | undefined, payer: PayerPair) {
			if (address === undefined) return null;
			const normalized = codecFor(payer.network.chainType).normalizeAddress(address, chainParamsFor(payer.network));
			if (!normalized) throw badRequest("Invalid payer address", { payerAddress: "invalidAddress" });
			return normalized;
		},

		async prepareCheckout(this: LinksThis, ctx: Ctx<any>, link: PaymentLink, p: Omit<CheckoutParams, "slug">) {
			const supportPercent = parseSupportPercent(p.supportPercent);
			const target = { tokenId: link.tokenId, networkId: link.networkId, mode: link.mode, amount: link.amount };
			const payer = await resolvePayer(ctx, target, p.payerTokenId, p.payerNetworkId);
			const payerAddress = this.checkPayerAddress(p.payerAddress, payer);
			const quote = await quoteCheckout(ctx, target, payer, supportPercent, this.payments.bridgeFee);
			// What openCheckout is given for it (the caller adds the payer's fields or the operation).
			const checkout: CheckoutInput = {
				linkId: link.id,
				payerToken: payer.token,
				payerNetwork: payer.network,
				quote: quote.amounts,
				supportPercent,
				paymentWindowMs: this.payments.paymentWindowMs,
				maxOpenCheckouts: this.payments.maxOpenCheckouts,
			};
			return { payer, supportPercent, quote, payerAddress, checkout };
		},
	},

	created(this: LinksThis) {
		this.payments = appOf(this.broker).config.payments;
	},
};

export default LinksService;
