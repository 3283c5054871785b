/**
 * Withdrawals (spec "Withdrawal settings", "Withdrawal request", "Withdrawal summary"): the
 * organization's settings, the append-only ledger of what it may withdraw, requests against it,
 * and the summary. The ledger is fed from settled, non-simulated checkouts through
 * `transactions.settledSince` (a durable cursor, polled) with `payments.transaction.completed` as
 * the fast path; the sweeper writes its movements through `withdrawals.record`.
 * Decisions: docs/withdrawals.md.
 */
import type { Context, Service, ServiceSchema } from "moleculer";
import { Op } from "sequelize";
import { appOf } from "../lib/app";
import { chainParamsFor, codecFor, CHAIN_TYPES } from "../lib/chains";
import type { ChainType } from "../lib/chains/types";
import { WITHDRAWAL_ADDRESS_KEYS, WithdrawalAddressKey, withdrawalKeyFor } from "../lib/chains/withdrawal-keys";
import { hasSweeper } from "../lib/sweeps/config";
import { inTransaction } from "../lib/db";
import { badRequest, notFound } from "../lib/errors";
import { registerTranslations } from "../lib/i18n";
import { uuid } from "../lib/ids";
import { jsonNull } from "../lib/json-null";
import type { AuthMeta } from "../lib/meta";
import { amountRule, money, signedAmountRule } from "../lib/money";
import { assertNetworkAllowed, ORGANIZATION_MODES, OrganizationMode } from "../lib/networks/mode";
import type { NetworkView, TokenWithNetworkView } from "../lib/networks/view";
import type { ResolvedPair } from "./networks.service";
import { priceUsd } from "../lib/payments/checkout";
import { checkTokenAmount, checkWithdrawalAddresses } from "../lib/payments/input";
import { isUniqueViolation } from "../lib/payments/store";
import { LedgerKind, RECORDABLE_KINDS, signProblem, summaryTotals, tokenTotals, usdcValue, WITHDRAWAL_STRATEGIES, type WithdrawalSummary } from "../lib/withdrawals/ledger";
import { appendEntry, balanceOf, creditedTransactions, isAccountRace, kindSums, lockAccount } from "../lib/withdrawals/store";
import { assertFence, type SweepFence } from "../lib/sweeps/store";
import type { WithdrawalsConfig } from "../lib/withdrawals/config";
import { checkoutCreditEntry } from "../lib/withdrawals/reversals";
import { MANAGERS, OrgScopeMethods, OrgScopeMixin } from "../mixins/org-scope.mixin";
import type { LedgerEntry, WithdrawalRequest, WithdrawalSettings } from "../models/withdrawal.model";
import type { CheckoutRouteFacts, SettledTransaction } from "./transactions.service";
import { bridgeRoute, BridgeRoute } from "../lib/withdrawals/bridge-route";

registerTranslations("es", {
	"Withdrawal settings need at least one address": "La configuración de retiros necesita al menos una dirección",
	"Amount exceeds the available balance": "El monto supera el saldo disponible",
	"Address is not valid for the network": "La dirección no es válida para la red",
	"A different destination network needs the bridge strategy (2)": "Otra red de destino requiere la estrategia de puente (2)",
	"Withdrawal request not found": "Solicitud de retiro no encontrada",
	"Withdrawal requests to another network are not supported yet": "Los retiros a otra red aún no están disponibles",
	"Withdrawal requests are not paid on this network's chain type yet": "Las solicitudes de retiro aún no se pagan en el tipo de cadena de esta red",
});

type Ctx<P = Record<string, never>> = Context<P, AuthMeta>;

const ID = { type: "string", max: 100 } as const;
const FEED_CURSOR = "transactions";

export interface SettingsView {
	id: string;
	userId: number;
	addresses: Record<string, string>;
	isEnabled: true;
	strategy: number;
	createdAt: string;
	updatedAt: string;
}

export interface RequestView {
	id: string;
	userId: number;
	amount: string;
	tokenId: string;
	sourceNetworkId: string;
	destinationNetworkId: string | null;
	address: string;
	strategy: number;
	status: string;
	reason: string | null;
	txHash: string | null;
	attempts: number;
	createdAt: string;
	updatedAt: string;
	completedAt: string | null;
}

export interface EntryView {
	id: string;
	organizationId: string;
	mode: OrganizationMode;
	networkId: string;
	tokenId: string;
	kind: LedgerKind;
	amount: string;
	refType: string;
	refId: string;
	createdAt: string;
}

/** An entry as the sweeper writes it; `amount` is signed (credit and refund positive; sweep, withdrawal and fee negative). */
export type RecordParams = Omit<EntryView, "id" | "createdAt"> & { fence?: SweepFence };

/** The sweeper's lease a ledger write is made under: checked in the entry's own DB transaction (lib/sweeps/store.ts assertFence). */
const fenceRule = { type: "object", optional: true, strict: "remove", props: { networkId: { type: "uuid" }, owner: { type: "string", min: 1, max: 200 }, token: { type: "number", integer: true } } } as const;

export function settingsView(s: WithdrawalSettings): SettingsView {
	return { id: s.id, userId: s.userId, addresses: s.addresses, isEnabled: true, strategy: s.strategy, createdAt: s.createdAt.toISOString(), updatedAt: s.updatedAt.toISOString() };
}

export function requestView(r: WithdrawalRequest): RequestView {
	return {
		id: r.id,
		userId: r.userId,
		amount: r.amount,
		tokenId: r.tokenId,
		sourceNetworkId: r.sourceNetworkId,
		destinationNetworkId: r.destinationNetworkId,
		address: r.address,
		strategy: r.strategy,
		status: r.status,
		reason: r.reason,
		txHash: r.txHash,
		attempts: r.attempts,
		createdAt: r.createdAt.toISOString(),
		updatedAt: r.updatedAt.toISOString(),
		completedAt: r.completedAt ? r.completedAt.toISOString() : null,
	};
}

function entryView(e: LedgerEntry): EntryView {
	return { id: e.id, organizationId: e.organizationId, mode: e.mode, networkId: e.networkId, tokenId: e.tokenId, kind: e.kind, amount: e.amount, refType: e.refType, refId: e.refId, createdAt: e.createdAt.toISOString() };
}

/** A 400 from another service with its field names in this endpoint's spelling. */
function renameFields(err: unknown, names: Record<string, string>): unknown {
	const e = err as { code?: number; data?: { errors?: Record<string, string> } };
	if (e?.code !== 400 || !e.data?.errors) return err;
	e.data.errors = Object.fromEntries(Object.entries(e.data.errors).map(([k, v]) => [names[k] ?? k, v]));
	return err;
}

interface WithdrawalsVars {
	cfg: WithdrawalsConfig;
	feedTimer: NodeJS.Timeout | null;
	feedRunning: Promise<void> | null;
	feedAgain: boolean;
	stopping: boolean;
}

interface WithdrawalsMethods extends OrgScopeMethods {
	kickFeed(): void;
	runFeed(): Promise<number>;
	creditCheckout(row: SettledTransaction): Promise<boolean>;
	ownAddressCheckouts(ctx: Ctx<unknown>, account: { organizationId: string; networkId: string }, key: WithdrawalAddressKey): Promise<string[]>;
}

type WithdrawalsThis = Service<{ rest: string }> & WithdrawalsVars & WithdrawalsMethods;

const WithdrawalsService: ServiceSchema<{ rest: string }, WithdrawalsMethods & Record<string, any>, WithdrawalsVars> = {
	name: "withdrawals",
	mixins: [OrgScopeMixin as ServiceSchema],
	settings: { rest: "/" },

	actions: {
		getSettings: {
			rest: "GET /withdrawals/settings",
			auth: "jwt",
			params: { $$strict: "remove" },
			/** JSON `null` while none are saved (spec "Withdrawal settings"). */
			async handler(this: WithdrawalsThis, ctx: Ctx): Promise<SettingsView | string> {
				const org = await this.resolveOrganization(ctx);
				const row = await appOf(this.broker).models.WithdrawalSettings.findOne({ where: { organizationId: org.id } });
				return row ? settingsView(row) : jsonNull(ctx);
			},
		},

		saveSettings: {
			rest: "PUT /withdrawals/settings",
			auth: "jwt",
			params: {
				$$strict: "remove",
				addresses: { type: "object", optional: true },
				strategy: { type: "enum", values: [...WITHDRAWAL_STRATEGIES], optional: true },
				// Superseded by the rule that withdrawals are always on: accepted, ignored.
				isEnabled: { type: "boolean", optional: true },
			},
			async handler(this: WithdrawalsThis, ctx: Ctx<{ addresses?: Record<string, unknown>; strategy?: number; isEnabled?: boolean }>): Promise<SettingsView> {
				const { models, clock } = appOf(this.broker);
				const org = await this.resolveOrganization(ctx, { roles: MANAGERS });
				const userId = ctx.meta.user!.id as number;
				const addresses = ctx.params.addresses !== undefined ? checkWithdrawalAddresses(ctx.params.addresses, org.mode, "addresses") : undefined;
				if (addresses === null) throw badRequest("Withdrawal settings need at least one address", { addresses: "required" });
				for (let attempt = 0; ; attempt++) {
					const now = clock.now();
					const existing = await models.WithdrawalSettings.findOne({ where: { organizationId: org.id } });
					if (existing) {
						if (addresses) existing.addresses = addresses;
						if (ctx.params.strategy !== undefined) existing.strategy = ctx.params.strategy;
						existing.userId = userId;
						existing.updatedAt = now;
						await existing.save();
						return settingsView(existing);
					}
					if (!addresses) throw badRequest("Withdrawal settings need at least one address", { addresses: "required" });
					try {
						const row = await models.WithdrawalSettings.create({ id: uuid(), organizationId: org.id, userId, addresses, strategy: ctx.params.strategy ?? 1, createdAt: now, updatedAt: now });
						return settingsView(row);
					} catch (err) {
						// Two first saves at once: the other one created the row; this one updates it.
						if (attempt > 0 || !isUniqueViolation(err, "withdrawal_settings")) throw err;
					}
				}
			},
		},

		createRequest: {
			rest: "POST /withdrawals/requests",
			auth: "jwt",
			params: {
				$$strict: "remove",
				amount: amountRule,
				tokenId: { type: "uuid" },
				sourceNetworkId: { type: "uuid" },
				destinationNetworkId: { type: "uuid", optional: true },
				address: { type: "string", min: 1, max: 200, trim: true },
				strategy: { type: "enum", values: [...WITHDRAWAL_STRATEGIES] },
			},
			async handler(
				this: WithdrawalsThis,
				ctx: Ctx<{ amount: string; tokenId: string; sourceNetworkId: string; destinationNetworkId?: string; address: string; strategy: number }>,
			): Promise<RequestView> {
				const app = appOf(this.broker);
				const { models, clock } = app;
				const p = ctx.params;
				const org = await this.resolveOrganization(ctx, { roles: MANAGERS });
				const userId = ctx.meta.user!.id as number;
				const pair = (await ctx.call("networks.resolvePair", { networkId: p.sourceNetworkId, tokenId: p.tokenId, mode: org.mode }).catch(err => {
					throw renameFields(err, { networkId: "sourceNetworkId" });
				})) as ResolvedPair;
				let target: NetworkView = pair.network;
				if (p.destinationNetworkId && p.destinationNetworkId !== pair.network.id) {
					if (p.strategy !== 2) throw badRequest("A different destination network needs the bridge strategy (2)", { destinationNetworkId: "bridgeRequired" });
					target = (await ctx.call("networks.getNetwork", { id: p.destinationNetworkId }).catch(err => {
						throw (err as { code?: number })?.code === 404 ? badRequest("Network not found", { destinationNetworkId: "networkNotFound" }) : err;
					})) as NetworkView;
					if (!target.isActive) throw badRequest("Network is not active", { destinationNetworkId: "networkInactive" });
					assertNetworkAllowed(target, org.mode, "destinationNetworkId");
					// Every accepted request must be payable: the sweepers do not bridge requests yet
					// (docs/withdrawals.md "Not done yet"), so refuse it here rather than fail it later.
					throw badRequest("Withdrawal requests to another network are not supported yet", { destinationNetworkId: "bridgeNotSupported" });
				}
				const address = codecFor(target.chainType).normalizeAddress(p.address, chainParamsFor(target));
				if (!address) throw badRequest("Address is not valid for the network", { address: "invalidAddress" });
				// Only a request some sweeper can pay is accepted (docs/withdrawals.md "Requests").
				if (!hasSweeper(pair.network.chainType)) throw badRequest("Withdrawal requests are not paid on this network's chain type yet", { sourceNetworkId: "noSweeper" });
				const key = withdrawalKeyFor(pair.network);
				if (pair.network.chainType === "bitcoin") {
					// The change of a Bitcoin-family payment goes to the merchant's own address for the chain.
					const settings = await models.WithdrawalSettings.findOne({ where: { organizationId: org.id } });
					if (!settings?.addresses?.[key]) throw badRequest(`A request on this network needs a "${key}" address in the withdrawal settings (the change goes there)`, { sourceNetworkId: "changeAddressRequired" });
				}
				const amount = checkTokenAmount(p.amount, pair.token.decimals, "amount");
				const account = { organizationId: org.id, networkId: pair.network.id, tokenId: pair.token.id };
				const ownAddressTransactions = await this.ownAddressCheckouts(ctx, account, key);
				// The reservation: a pending request counts against `available` until it completes or
				// fails; the check and the insert run under the account's lock.
				const row = await inTransaction(
					app.sequelize,
					async t => {
						await lockAccount(app, t, account);
						const { available } = await balanceOf(app, account, t, { ownAddressTransactions });
						if (money(amount).gt(money(available))) throw badRequest("Amount exceeds the available balance", { amount: "insufficientBalance" }, { available });
						const now = clock.now();
						return models.WithdrawalRequest.create(
							{
								id: uuid(),
								organizationId: org.id,
								mode: org.mode,
								userId,
								amount,
								tokenId: pair.token.id,
								sourceNetworkId: pair.network.id,
								destinationNetworkId: p.destinationNetworkId ?? null,
								address,
								strategy: p.strategy,
								status: "pending",
								reason: null,
								txHash: null,
								createdAt: now,
								updatedAt: now,
								completedAt: null,
							},
							{ transaction: t },
						);
					},
					{ retryOn: isAccountRace },
				);
				ctx.meta.$statusCode = 201;
				return requestView(row);
			},
		},

		listRequests: {
			rest: "GET /withdrawals/requests",
			auth: "jwt",
			params: { $$strict: "remove", limit: { type: "number", integer: true, min: 1, max: 100, optional: true, convert: true } },
			async handler(this: WithdrawalsThis, ctx: Ctx<{ limit?: number }>): Promise<RequestView[]> {
				const org = await this.resolveOrganization(ctx);
				const rows = await appOf(this.broker).models.WithdrawalRequest.findAll({
					where: { organizationId: org.id },
					order: [["createdAt", "DESC"], ["id", "DESC"]],
					limit: ctx.params.limit ?? 50,
				});
				return rows.map(requestView);
			},
		},

		summary: {
			rest: "GET /withdrawals/summary",
			auth: "jwt",
			params: { $$strict: "remove" },
			async handler(this: WithdrawalsThis, ctx: Ctx): Promise<WithdrawalSummary> {
				const app = appOf(this.broker);
				const org = await this.resolveOrganization(ctx);
				const totals = tokenTotals(await kindSums(app, org.id));
				const prices = new Map<string, string | null>();
				const tokens = new Map<string, TokenWithNetworkView | null>();
				for (const t of totals) {
					if (!prices.has(t.tokenId)) prices.set(t.tokenId, await priceUsd(ctx, t.tokenId));
					if (!tokens.has(t.tokenId)) tokens.set(t.tokenId, await (ctx.call("networks.getToken", { id: t.tokenId }) as Promise<TokenWithNetworkView>).catch(() => null));
				}
				const byToken = totals.map(t => ({
					tokenId: t.tokenId,
					networkId: t.networkId,
					tokenSymbol: tokens.get(t.tokenId)?.symbol ?? null,
					totalAmount: money(t.balance).toFixed(),
					totalUsdcValue: usdcValue(t.balance, prices.get(t.tokenId) ?? null),
				}));
				const networks = new Map<string, { networkId: string; networkName: string | null; amount: ReturnType<typeof money>; usdc: ReturnType<typeof money> | null }>();
				for (const t of totals) {
					const n = networks.get(t.networkId) ?? { networkId: t.networkId, networkName: tokens.get(t.tokenId)?.network.name ?? null, amount: money(0), usdc: null };
					n.amount = n.amount.plus(t.balance);
					const value = usdcValue(t.balance, prices.get(t.tokenId) ?? null);
					if (value !== null) n.usdc = (n.usdc ?? money(0)).plus(money(value));
					networks.set(t.networkId, n);
				}
				return {
					byNetwork: [...networks.values()].map(n => ({ networkId: n.networkId, networkName: n.networkName, totalAmount: n.amount.toFixed(), totalUsdcValue: n.usdc ? n.usdc.toFixed() : null })),
					byToken,
					totals: summaryTotals(totals, prices),
				};
			},
		},

		// ---- internal (no route): the ledger feed and the sweeper ----

		/**
		 * Appends one ledger entry; idempotent on (kind, refType, refId): a duplicate changes nothing
		 * and answers `{ recorded: false, duplicate: true, entry }` with the entry recorded first.
		 */
		record: {
			visibility: "public",
			params: {
				$$strict: "remove",
				organizationId: { type: "uuid" },
				mode: { type: "enum", values: [...ORGANIZATION_MODES] },
				networkId: { type: "uuid" },
				tokenId: { type: "uuid" },
				kind: { type: "enum", values: [...RECORDABLE_KINDS] },
				amount: signedAmountRule,
				refType: { type: "string", min: 1, max: 32 },
				refId: { type: "string", min: 1, max: 128 },
				fence: fenceRule,
			},
			async handler(this: WithdrawalsThis, ctx: Ctx<RecordParams>) {
				const { fence, ...p } = ctx.params;
				const problem = signProblem(p.kind, p.amount);
				if (problem) throw badRequest(`A ${p.kind} entry's amount has the wrong sign`, { amount: problem });
				const token = (await ctx.call("networks.getToken", { id: p.tokenId })) as TokenWithNetworkView;
				if (token.networkId !== p.networkId) throw badRequest("Token does not belong to the network", { tokenId: "tokenNotOnNetwork" });
				const app = appOf(this.broker);
				const out = await appendEntry(app, { ...p, amount: money(p.amount).toFixed() }, fence ? t => assertFence(app.models, fence, t) : undefined);
				return { recorded: out.recorded, duplicate: out.duplicate, entry: entryView(out.entry) };
			},
		},

		/** An account's balance (Σ entries), what pending requests reserve, what is held, and what is available. */
		balance: {
			visibility: "public",
			params: { $$strict: "remove", organizationId: { type: "uuid" }, networkId: { type: "uuid" }, tokenId: { type: "uuid" } },
			async handler(this: WithdrawalsThis, ctx: Ctx<{ organizationId: string; networkId: string; tokenId: string }>) {
				const network = (await ctx.call("networks.getNetwork", { id: ctx.params.networkId })) as NetworkView;
				return balanceOf(appOf(this.broker), ctx.params, undefined, { ownAddressTransactions: await this.ownAddressCheckouts(ctx, ctx.params, withdrawalKeyFor(network)) });
			},
		},

		/**
		 * The settled checkouts of an account whose funds belong to their own withdrawal address
		 * (never to a request): the sweeper's planner holds them out of `available` as
		 * createRequest does. Internal.
		 */
		ownAddressCheckouts: {
			visibility: "public",
			params: { $$strict: "remove", organizationId: { type: "uuid" }, networkId: { type: "uuid" }, tokenId: { type: "uuid" } },
			async handler(this: WithdrawalsThis, ctx: Ctx<{ organizationId: string; networkId: string; tokenId: string }>): Promise<string[]> {
				const network = (await ctx.call("networks.getNetwork", { id: ctx.params.networkId })) as NetworkView;
				return this.ownAddressCheckouts(ctx, ctx.params, withdrawalKeyFor(network));
			},
		},

		/**
		 * Where to sweep an organization's funds on a chain type: the checkout's own withdrawal
		 * addresses (its intent's, else its link's) first, else the settings; null when none.
		 */
		destination: {
			visibility: "public",
			params: { $$strict: "remove", organizationId: { type: "uuid" }, chainType: { type: "enum", values: [...WITHDRAWAL_ADDRESS_KEYS] }, transactionId: { type: "uuid", optional: true } },
			async handler(this: WithdrawalsThis, ctx: Ctx<{ organizationId: string; chainType: WithdrawalAddressKey; transactionId?: string }>): Promise<{ address: string; source: "payment" | "settings" } | null> {
				const p = ctx.params;
				if (p.transactionId) {
					const own = (await ctx.call("transactions.withdrawalAddresses", { transactionId: p.transactionId })) as { organizationId: string; addresses: Record<string, string> | null } | null;
					if (!own) throw notFound("Transaction not found");
					if (own.organizationId !== p.organizationId) throw badRequest("The transaction belongs to another organization", { transactionId: "otherOrganization" });
					const address = own.addresses?.[p.chainType];
					if (address) return { address, source: "payment" };
				}
				const settings = await appOf(this.broker).models.WithdrawalSettings.findOne({ where: { organizationId: p.organizationId } });
				const address = settings?.addresses?.[p.chainType];
				return address ? { address, source: "settings" } : null;
			},
		},

		/**
		 * How a settled checkout's funds leave (docs/withdrawals.md "Strategy 2"): `direct` (swept on
		 * the payer's network to `withdrawals.destination`), `bridge` (strategy 2 and a quote that
		 * required a bridge: to the link's network through the bridge provider) or `hold`. Internal.
		 */
		route: {
			visibility: "public",
			params: { $$strict: "remove", organizationId: { type: "uuid" }, transactionId: { type: "uuid" } },
			async handler(this: WithdrawalsThis, ctx: Ctx<{ organizationId: string; transactionId: string }>): Promise<BridgeRoute> {
				const p = ctx.params;
				const facts = (await ctx.call("transactions.withdrawalAddresses", { transactionId: p.transactionId })) as CheckoutRouteFacts | null;
				if (!facts) throw notFound("Transaction not found");
				if (facts.organizationId !== p.organizationId) throw badRequest("The transaction belongs to another organization", { transactionId: "otherOrganization" });
				const settings = await appOf(this.broker).models.WithdrawalSettings.findOne({ where: { organizationId: p.organizationId } });
				const side = async (networkId: string, tokenId: string) => {
					const [network, token] = await Promise.all([ctx.call("networks.getNetwork", { id: networkId }) as Promise<NetworkView>, ctx.call("networks.getToken", { id: tokenId }) as Promise<TokenWithNetworkView>]);
					return { network: { id: network.id, chainType: network.chainType, chainId: Number(network.chainId) }, token: { id: token.id, contractAddress: token.isNative ? "" : token.contractAddress } };
				};
				return bridgeRoute({
					strategy: settings?.strategy ?? null,
					quote: facts.quote,
					payer: await side(facts.payerNetworkId, facts.payerTokenId),
					link: await side(facts.linkNetworkId, facts.linkTokenId),
					// The checkout's own addresses over the settings', as `destination` resolves them.
					addresses: { ...(settings?.addresses ?? {}), ...(facts.addresses ?? {}) },
				});
			},
		},

		/**
		 * A network's pending requests, oldest first, by keyset pages over (createdAt, id): each
		 * sweeper reads the queue of its own network only (index withdrawal_requests_network_queue),
		 * so requests of other networks or modes never hide its own. The mode follows from the network
		 * (sandbox organizations use test networks, live ones main networks). Internal.
		 */
		pendingRequests: {
			visibility: "public",
			params: {
				$$strict: "remove",
				networkId: { type: "uuid" },
				afterCreatedAt: { type: "string", max: 40, optional: true },
				afterId: { type: "uuid", optional: true },
				limit: { type: "number", integer: true, min: 1, max: 500, optional: true, convert: true },
			},
			async handler(this: WithdrawalsThis, ctx: Ctx<{ networkId: string; afterCreatedAt?: string; afterId?: string; limit?: number }>) {
				const p = ctx.params;
				const where: Record<string | symbol, unknown> = { sourceNetworkId: p.networkId, status: "pending" };
				if (p.afterCreatedAt && p.afterId) {
					const after = new Date(p.afterCreatedAt);
					if (Number.isNaN(after.getTime())) throw badRequest("afterCreatedAt must be an ISO date", { afterCreatedAt: "invalidDate" });
					where[Op.or] = [{ createdAt: { [Op.gt]: after } }, { createdAt: after, id: { [Op.gt]: p.afterId } }];
				}
				const rows = await appOf(this.broker).models.WithdrawalRequest.findAll({ where, order: [["createdAt", "ASC"], ["id", "ASC"]], limit: p.limit ?? 50 });
				return rows.map(r => ({ ...requestView(r), organizationId: r.organizationId, mode: r.mode }));
			},
		},

		/**
		 * A request was sent on chain: in one DB transaction its `withdrawal` entry (−amount, refType
		 * "withdrawal_request") is appended and it becomes completed, so the reservation and the
		 * entry never both count or both miss. Idempotent.
		 */
		completeRequest: {
			visibility: "public",
			params: { $$strict: "remove", id: { type: "uuid" }, txHash: { type: "string", min: 1, max: 128 }, fence: fenceRule },
			async handler(this: WithdrawalsThis, ctx: Ctx<{ id: string; txHash: string; fence?: SweepFence }>) {
				const app = appOf(this.broker);
				const { models, clock } = app;
				const req = await models.WithdrawalRequest.findByPk(ctx.params.id);
				if (!req) throw notFound("Withdrawal request not found");
				if (req.status === "failed") throw badRequest("The request has failed", { id: "failed" });
				const out = await appendEntry(
					app,
					{ organizationId: req.organizationId, mode: req.mode, networkId: req.sourceNetworkId, tokenId: req.tokenId, kind: "withdrawal", amount: money(req.amount).neg().toFixed(), refType: "withdrawal_request", refId: req.id },
					async t => {
						if (ctx.params.fence) await assertFence(models, ctx.params.fence, t);
						const now = clock.now();
						const [n] = await models.WithdrawalRequest.update({ status: "completed", txHash: ctx.params.txHash, completedAt: now, updatedAt: now }, { where: { id: req.id, status: "pending" }, transaction: t });
						if (n !== 1) throw badRequest("The request is not pending", { id: "notPending" });
					},
				);
				const row = (await models.WithdrawalRequest.findByPk(req.id)) as WithdrawalRequest;
				return { completed: out.recorded, duplicate: out.duplicate, request: requestView(row) };
			},
		},

		/** A send attempt failed: counted with its reason; `final` ends the request (failed, reservation released). */
		failRequest: {
			visibility: "public",
			params: { $$strict: "remove", id: { type: "uuid" }, reason: { type: "string", min: 1, max: 2000 }, final: { type: "boolean", optional: true } },
			async handler(this: WithdrawalsThis, ctx: Ctx<{ id: string; reason: string; final?: boolean }>) {
				const { models, clock, sequelize } = appOf(this.broker);
				const now = clock.now();
				const [n] = await models.WithdrawalRequest.update(
					{ reason: ctx.params.reason, attempts: sequelize.literal("attempts + 1") as unknown as number, updatedAt: now, ...(ctx.params.final ? { status: "failed" as const } : {}) },
					{ where: { id: ctx.params.id, status: "pending" } },
				);
				const row = await models.WithdrawalRequest.findByPk(ctx.params.id);
				if (!row) throw notFound("Withdrawal request not found");
				return { updated: n === 1, request: requestView(row) };
			},
		},

		/** Runs the ledger feed now (tests, operators); answers how many credits it recorded. */
		feed: {
			visibility: "public",
			params: { $$strict: "remove" },
			async handler(this: WithdrawalsThis) {
				return { recorded: await this.runFeed() };
			},
		},
	},

	events: {
		// The fast path; the poll over transactions.settledSince is the guarantee.
		"payments.transaction.completed"(this: WithdrawalsThis) {
			this.kickFeed();
		},
	},

	methods: {
		/** transactions.ownAddressCheckouts of an account: funds that belong to a checkout's own withdrawal address. */
		ownAddressCheckouts(this: WithdrawalsThis, ctx: Ctx<unknown>, account: { organizationId: string; networkId: string }, key: WithdrawalAddressKey): Promise<string[]> {
			return ctx.call("transactions.ownAddressCheckouts", { organizationId: account.organizationId, networkId: account.networkId, key }) as Promise<string[]>;
		},

		/** A feed pass now, or right after the one running. */
		kickFeed(this: WithdrawalsThis) {
			if (this.stopping) return;
			if (this.feedRunning) {
				this.feedAgain = true;
				return;
			}
			this.feedRunning = this.runFeed()
				.then(() => undefined)
				.catch(err => this.logger.warn("Withdrawals ledger feed pass failed:", (err as Error)?.message))
				.finally(() => {
					this.feedRunning = null;
					if (this.feedAgain) {
						this.feedAgain = false;
						this.kickFeed();
					}
				});
		},

		/**
		 * One pass over the checkouts settled after the cursor. Each non-simulated one gets its
		 * credit (once: UNIQUE). The stored cursor advances only over rows older than feedLagMs,
		 * so a checkout whose commit lands after a later-stamped one is still read.
		 */
		async runFeed(this: WithdrawalsThis): Promise<number> {
			const { models, clock } = appOf(this.broker);
			const cursor =
				(await models.WithdrawalFeedCursor.findByPk(FEED_CURSOR)) ??
				(await models.WithdrawalFeedCursor.create({ name: FEED_CURSOR, completedAt: null, transactionId: null, updatedAt: clock.now() }).catch(async err => {
					// Another node created it first (a primary-key conflict).
					if ((err as { name?: string })?.name !== "SequelizeUniqueConstraintError") throw err;
					return (await models.WithdrawalFeedCursor.findByPk(FEED_CURSOR))!;
				}));
			const horizon = clock.now().getTime() - this.cfg.feedLagMs;
			let page: { completedAt: string | null; id: string | null } = { completedAt: cursor.completedAt ? cursor.completedAt.toISOString() : null, id: cursor.transactionId };
			let stored = page;
			// The stored cursor moves over a gap-free prefix of rows older than the horizon only.
			let advancing = true;
			let recorded = 0;
			for (;;) {
				const rows = (await this.broker.call("transactions.settledSince", {
					...(page.completedAt ? { afterCompletedAt: page.completedAt, afterId: page.id ?? "" } : {}),
					limit: this.cfg.feedBatch,
				})) as SettledTransaction[];
				if (!rows.length) break;
				const done = await creditedTransactions(appOf(this.broker), rows.map(r => r.transactionId));
				for (const row of rows) {
					if (!row.simulated && !done.has(row.transactionId) && (await this.creditCheckout(row))) recorded++;
					const at = { completedAt: row.completedAt, id: row.transactionId };
					if (advancing && new Date(row.completedAt).getTime() <= horizon) stored = at;
					else advancing = false;
					page = at;
				}
				if (rows.length < this.cfg.feedBatch || this.stopping) break;
			}
			if (stored.completedAt && (stored.completedAt !== (cursor.completedAt?.toISOString() ?? null) || stored.id !== cursor.transactionId)) {
				cursor.completedAt = new Date(stored.completedAt);
				cursor.transactionId = stored.id;
				cursor.updatedAt = clock.now();
				await cursor.save();
			}
			return recorded;
		},

		/** The checkout's credit entry: what it received, in the payer's token on the payer's network. */
		async creditCheckout(this: WithdrawalsThis, row: SettledTransaction): Promise<boolean> {
			if (row.simulated || money(row.amountReceived).lte(0)) return false;
			// The same entry a reversal writes when it comes first (lib/withdrawals/reversals.ts): then this one is a duplicate.
			const out = await appendEntry(appOf(this.broker), checkoutCreditEntry(row));
			return out.recorded;
		},
	},

	created(this: WithdrawalsThis) {
		this.cfg = appOf(this.broker).config.withdrawals;
		this.feedTimer = null;
		this.feedRunning = null;
		this.feedAgain = false;
		this.stopping = false;
	},

	started(this: WithdrawalsThis) {
		this.stopping = false;
		if (this.cfg.feedPollMs > 0) {
			this.feedTimer = setInterval(() => this.kickFeed(), this.cfg.feedPollMs);
			this.feedTimer.unref();
		}
		// Checkouts settled while no withdrawals service ran are picked up now.
		this.kickFeed();
	},

	async stopped(this: WithdrawalsThis) {
		this.stopping = true;
		if (this.feedTimer) clearInterval(this.feedTimer);
		this.feedTimer = null;
		await this.feedRunning?.catch(() => undefined);
	},
};

export default WithdrawalsService;
