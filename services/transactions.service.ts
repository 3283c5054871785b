/**
 * Checkout transactions (spec "Transactions"): the payer's status page (public, by id), the
 * merchant's list, the payer's choice of token/network and support, and THE credit path:
 * `transactions.credit`, the one idempotent action through which any on-chain (or simulated)
 * transfer to a deposit address counts. In one DB transaction it records the transfer (UNIQUE
 * network + txHash + logIndex), adds to amountReceived, moves the transaction, its intent and its
 * link, and writes the outbox events; Moleculer events follow after the commit.
 * Decisions: docs/payments.md.
 */
import type { Context, Service, ServiceSchema } from "moleculer";
import { Op } from "sequelize";
import { appOf } from "../lib/app";
import "../lib/payments/messages";
import { CATALOGUE, catalogueSlugOf } from "../lib/networks/catalogue";
import { badRequest } from "../lib/errors";
import { registerTranslations } from "../lib/i18n";
import { isUuid } from "../lib/ids";
import { countMetric, METRIC, startCounters } from "../lib/metrics";
import { amountRule } from "../lib/money";
import type { NetworkView, TokenView } from "../lib/networks/view";
import { PAGE_PARAMS, pageWindow, toPage } from "../lib/pagination";
import { quoteCheckout, resolvePayer } from "../lib/payments/checkout";
import type { PaymentsConfig } from "../lib/payments/config";
import { parseSupportPercent } from "../lib/payments/quote";
import { BatchDetectResult, DetectParams, DetectResult, detectTransfers, revertDetection, RevertOutcome } from "../lib/payments/detections";
import { BatchCreditResult, CreditParams, CreditResult, creditTransfer, creditTransfers, transactionNotFound } from "../lib/payments/credits";
import { findCredit, ReversalOutcome, reverseCredit } from "../lib/payments/reversals";
import { TRANSACTION_STATUSES, TransactionStatus } from "../lib/payments/settlement";
import { Effects, expiryDue, isAllocationConflict, reassignDepositAddress, sweepExpired, withPaymentLocked } from "../lib/payments/store";
import { transactionFullView, transactionView } from "../lib/payments/views";
import { checkoutDetails, checkoutIdsByHash, reversedCredits } from "../lib/payments/support";
import { SUPPORT_HASH, SUPPORT_ID } from "../lib/support/params";
import { OrgScopeMethods, OrgScopeMixin } from "../mixins/org-scope.mixin";
import type { AuthMeta } from "../lib/meta";
import type { Transaction } from "../models/transaction.model";

registerTranslations("es", {
	"Transaction not found": "Transacción no encontrada",
	"Funds were already received for this transaction": "Ya se recibieron fondos para esta transacción",
});

type Ctx<P = Record<string, never>> = Context<P, AuthMeta>;

export type { CreditParams, CreditResult, BatchCreditResult, TransactionCompletedEvent } from "../lib/payments/credits";
export type { DetectParams, DetectResult, BatchDetectResult } from "../lib/payments/detections";

/** transactions.withdrawalAddresses: a checkout's own addresses and the facts that decide a bridge. */
export interface CheckoutRouteFacts {
	organizationId: string;
	addresses: Record<string, string> | null;
	quote: Record<string, unknown> | null;
	payerNetworkId: string;
	payerTokenId: string;
	linkNetworkId: string;
	linkTokenId: string;
}

export interface DepositAddressesParams {
	networkId: string;
	/** Keyset: addresses created after (createdAt, id); omit for the first page. */
	afterCreatedAt?: string;
	afterId?: string;
	/** Only addresses created at or after this time (the watch window). */
	since: string;
	limit?: number;
}

/** One settled checkout as the withdrawals ledger's feed reads it. */
export interface SettledTransaction {
	transactionId: string;
	organizationId: string;
	mode: "sandbox" | "live";
	simulated: boolean;
	payerTokenId: string;
	payerNetworkId: string;
	amountReceived: string;
	completedAt: string;
}

interface TransactionsVars {
	payments: PaymentsConfig;
}

interface TransactionsMethods extends OrgScopeMethods {
	findPublic(id: string): Promise<Transaction>;
	repriceCheckout(ctx: Ctx<any>, id: string, change: { payerTokenId?: string; payerNetworkId?: string; supportPercent?: string }): Promise<Transaction>;
}

type TransactionsThis = Service<{ rest: string }> & TransactionsVars & TransactionsMethods;

const ID = { type: "string", max: 100 } as const;
/** Params of the address pages (depositAddresses, openAddresses): the watch window and a keyset (createdAt, id). */
const KEYSET_PAGE = {
	since: { type: "string", max: 40 },
	afterCreatedAt: { type: "string", max: 40, optional: true },
	afterId: { type: "string", max: 36, optional: true },
	limit: { type: "number", integer: true, min: 1, max: 20000, optional: true, convert: true },
} as const;
/** An address page without a limit: 2,000 keeps the answer far under a transporter's 1 MB (docs/benchmarks.md "Deposit-address pages"). */
const ADDRESS_PAGE_DEFAULT = 2_000;

/** Rows created inside the watch window (`since`) and after the keyset (createdAt, id), when one is given. */
function windowKeyset(p: { since: string; afterCreatedAt?: string; afterId?: string }): Record<string | symbol, unknown> {
	const since = new Date(p.since);
	if (Number.isNaN(since.getTime())) throw badRequest("since must be an ISO date", { since: "date" });
	const where: Record<string | symbol, unknown> = { createdAt: { [Op.gte]: since } };
	if (p.afterCreatedAt && p.afterId) {
		const after = new Date(p.afterCreatedAt);
		if (Number.isNaN(after.getTime())) throw badRequest("afterCreatedAt must be an ISO date", { afterCreatedAt: "date" });
		where[Op.or] = [{ createdAt: { [Op.gt]: after } }, { createdAt: after, id: { [Op.gt]: p.afterId } }];
	}
	return where;
}
/** What names an on-chain transfer on its network (the credit's unique key with networkId): tx hash, log / output index. */
const TRANSFER_ID = {
	txHash: { type: "string", min: 1, max: 128 },
	logIndex: { type: "number", integer: true, min: 0, max: 2147483647 },
} as const;
const TRANSFER_KEY = { networkId: ID, ...TRANSFER_ID } as const;
/** A watcher's confirmation requirement (the seed allows REQUIRED_CONFIRMATIONS_<SLUG> 1..100000). */
const REQUIRED_CONFIRMATIONS = { type: "number", integer: true, min: 1, max: 100_000, optional: true } as const;
/** A credit's transfer (credit's params; each item of creditBatch, whose networkId is the batch's). */
const CREDIT_ITEM = {
	...TRANSFER_ID,
	toAddress: { type: "string", min: 1, max: 200 },
	tokenId: ID,
	amount: amountRule,
	confirmations: { type: "number", integer: true, min: 0, optional: true },
	requiredConfirmations: REQUIRED_CONFIRMATIONS,
	blockHash: { type: "string", min: 1, max: 100, optional: true },
} as const;
/** A detection's transfer (detect's params; each item of detectBatch). */
const DETECT_ITEM = {
	...TRANSFER_ID,
	blockHash: { type: "string", min: 1, max: 100 },
	blockNumber: { type: "number", integer: true, min: 0 },
	toAddress: { type: "string", min: 1, max: 200 },
	tokenId: ID,
	amount: amountRule,
	confirmations: { type: "number", integer: true, min: 0 },
	requiredConfirmations: REQUIRED_CONFIRMATIONS,
} as const;
/** Items a batch call carries at most (the runner sends fewer: its messages stay well under 1 MB). */
const BATCH_MAX = 500;
/** The networks service's tokens (cached there) for the credit path. */
const tokenCaller = (ctx: Ctx<unknown>) => (id: string) => ctx.call("networks.getToken", { id }) as Promise<TokenView>;

const TransactionsService: ServiceSchema<{ rest: string }, TransactionsMethods & Record<string, any>, TransactionsVars> = {
	name: "transactions",
	mixins: [OrgScopeMixin as ServiceSchema],
	settings: { rest: "/" },

	actions: {
		/** The payer's checkout status (public: the id is their handle; nothing internal is shown). */
		get: {
			rest: "GET /payments/transactions/:id",
			auth: "public",
			params: { $$strict: "remove", id: ID },
			async handler(this: TransactionsThis, ctx: Ctx<{ id: string }>) {
				return transactionView(await this.findPublic(ctx.params.id));
			},
		},

		full: {
			rest: "GET /payments/transactions/:id/full",
			auth: "public",
			params: { $$strict: "remove", id: ID },
			async handler(this: TransactionsThis, ctx: Ctx<{ id: string }>) {
				const tx = await this.findPublic(ctx.params.id);
				const [token, network] = await Promise.all([
					ctx.call("networks.getToken", { id: tx.payerTokenId }) as Promise<TokenView>,
					ctx.call("networks.getNetwork", { id: tx.payerNetworkId }) as Promise<NetworkView>,
				]);
				return transactionFullView(tx, token, network);
			},
		},

		list: {
			rest: "GET /payments/transactions",
			auth: "jwt",
			params: {
				$$strict: "remove",
				...PAGE_PARAMS,
				status: { type: "enum", values: [...TRANSACTION_STATUSES], optional: true },
				paymentLinkId: { type: "uuid", optional: true },
			},
			async handler(this: TransactionsThis, ctx: Ctx<{ page?: number; limit?: number; status?: TransactionStatus; paymentLinkId?: string }>) {
				const app = appOf(this.broker);
				const org = await this.resolveOrganization(ctx);
				await sweepExpired(app, this.broker, { organizationId: org.id });
				const w = pageWindow(ctx.params.page, ctx.params.limit);
				const where: Record<string, unknown> = { organizationId: org.id };
				if (ctx.params.status) where.status = ctx.params.status;
				if (ctx.params.paymentLinkId) where.paymentLinkId = ctx.params.paymentLinkId;
				const rows = await app.models.Transaction.findAll({ where, order: [["createdAt", "DESC"], ["id", "DESC"]], offset: w.offset, limit: w.fetch });
				return toPage(rows, w.limit, transactionView);
			},
		},

		payer: {
			rest: "PATCH /payments/transactions/:id/payer",
			auth: "public",
			params: { $$strict: "remove", id: ID, payerTokenId: { type: "string", max: 100 }, payerNetworkId: { type: "string", max: 100 } },
			async handler(this: TransactionsThis, ctx: Ctx<{ id: string; payerTokenId: string; payerNetworkId: string }>) {
				const tx = await this.repriceCheckout(ctx, ctx.params.id, { payerTokenId: ctx.params.payerTokenId, payerNetworkId: ctx.params.payerNetworkId });
				return transactionView(tx);
			},
		},

		support: {
			rest: "PATCH /payments/transactions/:id/support",
			auth: "public",
			params: { $$strict: "remove", id: ID, supportPercent: { type: "multi", rules: [{ type: "number" }, { type: "string", max: 20 }] } },
			async handler(this: TransactionsThis, ctx: Ctx<{ id: string; supportPercent: number | string }>) {
				const supportPercent = parseSupportPercent(ctx.params.supportPercent);
				const tx = await this.repriceCheckout(ctx, ctx.params.id, { supportPercent });
				return transactionView(tx);
			},
		},

		/**
		 * THE credit path (chain watchers, simulations). Idempotent on (networkId, txHash, logIndex):
		 * the same transfer reported again changes nothing and answers `duplicate: true`. A transfer
		 * reported with fewer than the network's required confirmations is not recorded
		 * (`insufficientConfirmations`): report it again once confirmed. Internal: no route.
		 */
		credit: {
			visibility: "public",
			params: { $$strict: "remove", networkId: ID, ...CREDIT_ITEM, simulated: { type: "boolean", optional: true } },
			async handler(this: TransactionsThis, ctx: Ctx<CreditParams>): Promise<CreditResult> {
				const network = (await ctx.call("networks.getNetwork", { id: ctx.params.networkId })) as NetworkView;
				return creditTransfer(appOf(this.broker), this.broker, this.logger, network, tokenCaller(ctx), ctx.params);
			},
		},

		/**
		 * A watcher's batch of credits of one network (docs/watchers.md "Reports in batches"): what
		 * `credit` answers for each item, in order, credited in one DB transaction (a batch that
		 * fails is credited item by item). Internal: no route.
		 */
		creditBatch: {
			visibility: "public",
			params: {
				$$strict: "remove",
				networkId: ID,
				items: { type: "array", min: 1, max: BATCH_MAX, items: { type: "object", strict: "remove", props: CREDIT_ITEM } },
				// Answers without each item's checkout view (what a watcher asks: it reads only credited / duplicate / reason).
				brief: { type: "boolean", optional: true },
			},
			async handler(this: TransactionsThis, ctx: Ctx<{ networkId: string; items: Array<Omit<CreditParams, "networkId">>; brief?: boolean }>): Promise<BatchCreditResult[]> {
				const network = (await ctx.call("networks.getNetwork", { id: ctx.params.networkId })) as NetworkView;
				const items = ctx.params.items.map(i => ({ ...i, networkId: network.id }));
				return creditTransfers(appOf(this.broker), this.broker, this.logger, network, tokenCaller(ctx), items, { brief: ctx.params.brief === true });
			},
		},

		/**
		 * A chain watcher saw a transfer to a deposit address below the network's required
		 * confirmations (decisions.md "On-chain payments"): the checkout shows it as confirming n of
		 * m, and the intent goes to processing on first sight. Idempotent; internal: no route.
		 */
		detect: {
			visibility: "public",
			params: { $$strict: "remove", networkId: ID, ...DETECT_ITEM },
			async handler(this: TransactionsThis, ctx: Ctx<DetectParams>): Promise<DetectResult> {
				const network = (await ctx.call("networks.getNetwork", { id: ctx.params.networkId })) as NetworkView;
				const [result] = await detectTransfers(appOf(this.broker), this.broker, network, tokenCaller(ctx), [ctx.params], { throwErrors: true });
				return result as DetectResult;
			},
		},

		/**
		 * A watcher's batch of detections of one network: what `detect` answers for each item, in
		 * order (an item that failed answers `error` and is reported again). Internal: no route.
		 */
		detectBatch: {
			visibility: "public",
			params: { $$strict: "remove", networkId: ID, items: { type: "array", min: 1, max: BATCH_MAX, items: { type: "object", strict: "remove", props: DETECT_ITEM } } },
			async handler(this: TransactionsThis, ctx: Ctx<{ networkId: string; items: Array<Omit<DetectParams, "networkId">> }>): Promise<BatchDetectResult[]> {
				const network = (await ctx.call("networks.getNetwork", { id: ctx.params.networkId })) as NetworkView;
				return detectTransfers(appOf(this.broker), this.broker, network, tokenCaller(ctx), ctx.params.items.map(i => ({ ...i, networkId: network.id })));
			},
		},

		/**
		 * A reorg orphaned the block of a transfer a watcher reported. Below the required
		 * confirmations: its detection is reverted (kept, never credited), the checkout goes back.
		 * Already credited (a reorg deeper than the required confirmations): the credit is reversed
		 * in the books (lib/payments/reversals.ts, docs/payments.md "Reversals"). Idempotent. Internal.
		 */
		revertDetection: {
			visibility: "public",
			params: {
				$$strict: "remove",
				...TRANSFER_KEY,
				blockHash: { type: "string", min: 1, max: 100 },
			},
			async handler(this: TransactionsThis, ctx: Ctx<{ networkId: string; txHash: string; logIndex: number; blockHash: string }>): Promise<{ outcome: RevertOutcome | ReversalOutcome }> {
				const app = appOf(this.broker);
				const p = ctx.params;
				const effects = new Effects();
				const outcome = await revertDetection(app, effects, p);
				await effects.flush(this.broker);
				if (outcome === "reverted") return { outcome };
				const credit = await findCredit(app.models, p);
				if (!credit) return { outcome };
				const token = (await ctx.call("networks.getToken", { id: credit.tokenId })) as TokenView;
				const reversal = await reverseCredit(app, effects, p, token.symbol.toLowerCase());
				await effects.flush(this.broker);
				if (reversal.outcome !== "reversed") return { outcome: reversal.outcome === "unknown" ? outcome : reversal.outcome };
				// Committed once per reversal (a repeat answers `already`): counted, and an operator's incident.
				countMetric(this.broker, METRIC.creditsReversed, { network: catalogueSlugOf(p.networkId) ?? "other" });
				this.logger.error(
					`Reorg removed a CREDITED transfer on network ${p.networkId}: tx ${p.txHash} #${p.logIndex} (${reversal.amount} ${token.symbol}${reversal.counted ? "" : ", not counted"}) reversed on checkout ${reversal.transactionId}; ledger −${reversal.ledgerAmount}. Raise requiredConfirmations for this network and review the checkout (REPL: reversals, tx ${reversal.transactionId}).`,
				);
				return { outcome: "reversed" };
			},
		},

		/**
		 * The deposit addresses a watcher follows on a network: created inside the watch window,
		 * oldest first, by keyset pages (createdAt, id). Internal.
		 */
		depositAddresses: {
			visibility: "public",
			params: {
				$$strict: "remove",
				networkId: ID,
				...KEYSET_PAGE,
			},
			async handler(this: TransactionsThis, ctx: Ctx<DepositAddressesParams>) {
				const { models } = appOf(this.broker);
				const p = ctx.params;
				const rows = await models.DepositAddress.findAll({
					where: { networkId: p.networkId, ...windowKeyset(p) },
					attributes: ["id", "address", "createdAt"],
					order: [["createdAt", "ASC"], ["id", "ASC"]],
					limit: p.limit ?? ADDRESS_PAGE_DEFAULT,
					raw: true,
				});
				return rows.map(r => ({ id: r.id, address: r.address, createdAt: new Date(r.createdAt).toISOString() }));
			},
		},

		/**
		 * Settled checkouts in settlement order, by keyset pages over (completedAt, id): the
		 * withdrawals ledger's durable feed (docs/withdrawals.md). Internal.
		 */
		settledSince: {
			visibility: "public",
			params: {
				$$strict: "remove",
				afterCompletedAt: { type: "string", max: 40, optional: true },
				afterId: { type: "string", max: 36, optional: true },
				limit: { type: "number", integer: true, min: 1, max: 1000, optional: true, convert: true },
			},
			async handler(this: TransactionsThis, ctx: Ctx<{ afterCompletedAt?: string; afterId?: string; limit?: number }>): Promise<SettledTransaction[]> {
				const { models } = appOf(this.broker);
				const p = ctx.params;
				const where: Record<string | symbol, unknown> = { status: "completed", completedAt: { [Op.ne]: null } };
				if (p.afterCompletedAt) {
					const after = new Date(p.afterCompletedAt);
					if (Number.isNaN(after.getTime())) throw badRequest("afterCompletedAt must be an ISO date", { afterCompletedAt: "date" });
					where[Op.or] = [{ completedAt: { [Op.gt]: after } }, { completedAt: after, id: { [Op.gt]: p.afterId ?? "" } }];
				}
				const rows = await models.Transaction.findAll({ where, order: [["completedAt", "ASC"], ["id", "ASC"]], limit: p.limit ?? 200 });
				return rows.map(tx => ({
					transactionId: tx.id,
					organizationId: tx.organizationId,
					mode: tx.mode,
					simulated: tx.simulated,
					payerTokenId: tx.payerTokenId,
					payerNetworkId: tx.payerNetworkId,
					amountReceived: tx.amountReceived,
					completedAt: (tx.completedAt as Date).toISOString(),
				}));
			},
		},

		/**
		 * Where a checkout's funds should go: its own withdrawal addresses (its intent's, else its
		 * link's; null: none), and what decides a bridge (the stored quote, the payer's and the
		 * link's network and token). Internal.
		 */
		withdrawalAddresses: {
			visibility: "public",
			params: { $$strict: "remove", transactionId: ID },
			async handler(this: TransactionsThis, ctx: Ctx<{ transactionId: string }>): Promise<CheckoutRouteFacts | null> {
				const { models } = appOf(this.broker);
				if (!isUuid(ctx.params.transactionId)) return null;
				const tx = await models.Transaction.findByPk(ctx.params.transactionId, { attributes: ["id", "organizationId", "intentId", "paymentLinkId", "quote", "payerNetworkId", "payerTokenId"] });
				if (!tx) return null;
				const [intent, link] = await Promise.all([
					tx.intentId ? models.PaymentIntent.findByPk(tx.intentId, { attributes: ["id", "withdrawalAddresses"] }) : null,
					models.PaymentLink.findByPk(tx.paymentLinkId, { attributes: ["id", "withdrawalAddresses", "networkId", "tokenId"] }),
				]);
				return {
					organizationId: tx.organizationId,
					addresses: intent?.withdrawalAddresses ?? link?.withdrawalAddresses ?? null,
					quote: tx.quote ?? null,
					payerNetworkId: tx.payerNetworkId,
					payerTokenId: tx.payerTokenId,
					linkNetworkId: link?.networkId ?? tx.payerNetworkId,
					linkTokenId: link?.tokenId ?? tx.payerTokenId,
				};
			},
		},

		/**
		 * The settled, non-simulated checkouts of an organization on a payer network that carry their
		 * own withdrawal address for `key` (their intent's, else their link's, as
		 * `withdrawalAddresses` answers): their funds go to that address, never to a withdrawal
		 * request (docs/withdrawals.md "Available"). Internal.
		 */
		ownAddressCheckouts: {
			visibility: "public",
			params: { $$strict: "remove", organizationId: ID, networkId: ID, key: { type: "string", max: 32 } },
			async handler(this: TransactionsThis, ctx: Ctx<{ organizationId: string; networkId: string; key: string }>): Promise<string[]> {
				const { models } = appOf(this.broker);
				const { organizationId, networkId, key } = ctx.params;
				const withAddresses = { organizationId, withdrawalAddresses: { [Op.ne]: null } };
				const [intents, links] = await Promise.all([
					models.PaymentIntent.findAll({ where: withAddresses, attributes: ["id", "withdrawalAddresses"] }),
					models.PaymentLink.findAll({ where: withAddresses, attributes: ["id", "withdrawalAddresses"] }),
				]);
				if (intents.length === 0 && links.length === 0) return [];
				const intentAddresses = new Map(intents.map(i => [i.id, i.withdrawalAddresses]));
				const linkAddresses = new Map(links.map(l => [l.id, l.withdrawalAddresses]));
				const rows = await models.Transaction.findAll({
					where: {
						organizationId,
						payerNetworkId: networkId,
						status: "completed",
						simulated: false,
						[Op.or]: [{ intentId: { [Op.in]: [...intentAddresses.keys()] } }, { paymentLinkId: { [Op.in]: [...linkAddresses.keys()] } }],
					},
					attributes: ["id", "intentId", "paymentLinkId"],
				});
				// The intent's addresses, when it has some, win over its link's (as withdrawalAddresses resolves them).
				return rows.filter(r => Boolean(((r.intentId ? intentAddresses.get(r.intentId) : undefined) ?? linkAddresses.get(r.paymentLinkId))?.[key])).map(r => r.id);
			},
		},

		/**
		 * Settled, non-simulated checkouts of a network (completed in the last `days`), with their
		 * deposit address and its derivation index: what the sweeper may move. Internal.
		 */
		sweepable: {
			visibility: "public",
			params: { $$strict: "remove", networkId: ID, days: { type: "number", integer: true, min: 1, max: 3650, optional: true, convert: true }, limit: { type: "number", integer: true, min: 1, max: 5000, optional: true, convert: true } },
			async handler(this: TransactionsThis, ctx: Ctx<{ networkId: string; days?: number; limit?: number }>) {
				const { models, clock } = appOf(this.broker);
				const since = new Date(clock.now().getTime() - (ctx.params.days ?? 30) * 86_400_000);
				const rows = await models.Transaction.findAll({
					where: { payerNetworkId: ctx.params.networkId, status: "completed", simulated: false, completedAt: { [Op.gte]: since } },
					attributes: ["id", "organizationId", "mode", "depositAddressId", "depositAddress", "payerTokenId", "completedAt"],
					order: [["completedAt", "ASC"], ["id", "ASC"]],
					limit: ctx.params.limit ?? 1000,
				});
				const deposits = await models.DepositAddress.findAll({ where: { id: { [Op.in]: rows.map(r => r.depositAddressId) } }, attributes: ["id", "derivationIndex"] });
				const indexOf = new Map(deposits.map(d => [d.id, d.derivationIndex]));
				return rows
					.filter(r => indexOf.has(r.depositAddressId))
					.map(r => ({ transactionId: r.id, organizationId: r.organizationId, mode: r.mode, depositAddress: r.depositAddress, derivationIndex: indexOf.get(r.depositAddressId)!, tokenId: r.payerTokenId, completedAt: r.completedAt!.toISOString() }));
			},
		},

		/**
		 * The on-chain transfers credited to checkouts (UTXO chains: the outputs the sweeper spends),
		 * simulated ones and those a deep reorg reversed (the output is not on the chain) left out. Internal.
		 */
		creditedOutputs: {
			visibility: "public",
			params: { $$strict: "remove", transactionIds: { type: "array", items: ID, max: 1000 } },
			async handler(this: TransactionsThis, ctx: Ctx<{ transactionIds: string[] }>) {
				const { models } = appOf(this.broker);
				if (ctx.params.transactionIds.length === 0) return [];
				const rows = await models.TransactionCredit.findAll({
					where: { transactionId: { [Op.in]: ctx.params.transactionIds }, simulated: false, reversedAt: null },
					attributes: ["transactionId", "txHash", "logIndex", "tokenId", "amount"],
					order: [["id", "ASC"]],
				});
				return rows.map(r => ({ transactionId: r.transactionId, txHash: r.txHash, logIndex: r.logIndex, tokenId: r.tokenId, amount: r.amount }));
			},
		},

		/**
		 * Deposit addresses of checkouts not settled yet on a network (balance reconciliation),
		 * opened inside the watch window, by keyset pages (createdAt, id) like depositAddresses: one
		 * answer of every open address exceeded a transporter's 1 MB message limit. Internal.
		 */
		openAddresses: {
			visibility: "public",
			params: { $$strict: "remove", networkId: ID, ...KEYSET_PAGE },
			async handler(this: TransactionsThis, ctx: Ctx<DepositAddressesParams>) {
				const { models } = appOf(this.broker);
				const p = ctx.params;
				const rows = await models.Transaction.findAll({
					where: { payerNetworkId: p.networkId, status: { [Op.in]: ["pending", "expired", "failed"] }, ...windowKeyset(p) },
					attributes: ["id", "depositAddress", "createdAt"],
					order: [["createdAt", "ASC"], ["id", "ASC"]],
					limit: p.limit ?? ADDRESS_PAGE_DEFAULT,
					raw: true,
				});
				return rows.map(r => ({ id: r.id, address: r.depositAddress, createdAt: new Date(r.createdAt).toISOString() }));
			},
		},

		/**
		 * Support staff (REPL `tx <id|hash>`, docs/operations.md): checkouts of any organization by
		 * our id or by a chain transaction hash (credited or only detected), each with its
		 * detections, credits and its intent's webhook events since it opened. Internal: no route.
		 * (`support.*` are the support staff's actions; `support` above is the payer's tip.)
		 */
		"support.find": {
			visibility: "public",
			auth: "admin",
			params: { $$strict: "remove", id: { ...SUPPORT_ID, optional: true }, hash: { ...SUPPORT_HASH, optional: true } },
			async handler(this: TransactionsThis, ctx: Ctx<{ id?: string; hash?: string }>) {
				const { models } = appOf(this.broker);
				const { id, hash } = ctx.params;
				if (!id === !hash) throw badRequest("Give the transaction's id or a chain transaction hash");
				let ids: string[];
				if (id) ids = [id];
				else {
					const networks = (await ctx.call("networks.list", {})) as NetworkView[];
					ids = await checkoutIdsByHash(models, networks.map(n => n.id), hash as string);
				}
				const rows = ids.length ? await models.Transaction.findAll({ where: { id: ids }, order: [["createdAt", "ASC"]] }) : [];
				if (id && rows.length === 0) throw transactionNotFound();
				return { transactions: await Promise.all(rows.map(tx => checkoutDetails(models, tx))) };
			},
		},

		/** Support staff (REPL `reversals`, docs/operations.md): credits a deep reorg reversed, newest first. Internal: no route. */
		"support.reversals": {
			visibility: "public",
			auth: "admin",
			params: { $$strict: "remove", limit: { type: "number", integer: true, min: 1, max: 200, optional: true, convert: true } },
			async handler(this: TransactionsThis, ctx: Ctx<{ limit?: number }>) {
				return { reversals: await reversedCredits(appOf(this.broker).models, ctx.params.limit ?? 20) };
			},
		},
	},

	methods: {
		async findPublic(this: TransactionsThis, id: string) {
			const app = appOf(this.broker);
			if (!isUuid(id)) throw transactionNotFound();
			const tx = await app.models.Transaction.findByPk(id);
			if (!tx) throw transactionNotFound();
			if (!expiryDue(tx, app.clock.now())) return tx;
			await sweepExpired(app, this.broker, { paymentLinkId: tx.paymentLinkId });
			return (await app.models.Transaction.findByPk(id)) ?? tx;
		},

		/**
		 * The payer changes token/network or support while the checkout is pending and nothing has
		 * arrived: the amounts are quoted again, and a new network gets a new deposit address.
		 */
		async repriceCheckout(this: TransactionsThis, ctx: Ctx<any>, id: string, change) {
			const app = appOf(this.broker);
			const { models, clock } = app;
			const current = await this.findPublic(id);
			const assertOpen = (tx: Transaction) => {
				if (tx.status !== "pending") throw badRequest(`Cannot update a transaction in state ${tx.status}`);
				if (tx.amountReceived !== "0") throw badRequest("Funds were already received for this transaction", { transaction: "fundsReceived" });
			};
			assertOpen(current);
			const link = await models.PaymentLink.findByPk(current.paymentLinkId);
			if (!link) throw transactionNotFound();
			const target = { tokenId: link.tokenId, networkId: link.networkId, mode: link.mode, amount: link.amount };
			const payer = await resolvePayer(ctx, target, change.payerTokenId ?? current.payerTokenId, change.payerNetworkId ?? current.payerNetworkId);
			const supportPercent = change.supportPercent ?? current.supportPercent;
			// Quoted against the link's amount as it is now (it may have been edited since the checkout opened).
			const quote = await quoteCheckout(ctx, target, payer, supportPercent, this.payments.bridgeFee);
			return withPaymentLocked(
				app,
				{ transactionId: id },
				async (t, { tx }) => {
					const now = clock.now();
					if (!tx) throw transactionNotFound();
					assertOpen(tx);
					if (tx.payerNetworkId !== payer.network.id) await reassignDepositAddress(app, t, tx, payer.network, now);
					tx.payerTokenId = payer.token.id;
					tx.payerNetworkId = payer.network.id;
					tx.supportPercent = supportPercent;
					tx.amount = quote.amounts.originalAmountInPayerToken;
					tx.totalAmount = quote.amounts.totalAmount;
					tx.quote = { ...quote.amounts };
					tx.updatedAt = now;
					await tx.save({ transaction: t });
					return tx;
				},
				{ attempts: 5, retryOn: isAllocationConflict },
			);
		},
	},

	created(this: TransactionsThis) {
		this.payments = appOf(this.broker).config.payments;
	},

	started(this: TransactionsThis) {
		// Reversals are rare: exported at 0 per catalogue network, so an alert's increase() sees the first one.
		const networks = [...CATALOGUE.map(n => ({ network: n.slug })), { network: "other" }];
		startCounters(this.broker, METRIC.creditsReversed, networks);
		startCounters(this.broker, METRIC.creditsRecredited, networks);
	},
};

export default TransactionsService;
