/**
 * GET /dashboard/summary: totals, a 12-month volume series and the 10 most recent transactions
 * of the caller's organization. A read model over the payments tables (lib/payments/dashboard.ts
 * does the maths). Decisions (what "earned" counts, valuation): docs/payments.md "Dashboard".
 */
import type { Context, Service, ServiceSchema } from "moleculer";
import { QueryTypes } from "sequelize";
import { appOf } from "../lib/app";
import "../lib/payments/messages";
import type { AuthMeta } from "../lib/meta";
import { normalizeDecimal } from "../lib/money";
import type { NetworkView, TokenView } from "../lib/networks/view";
import { priceUsd } from "../lib/payments/checkout";
import { DashboardSummary, RecentTransaction, remaining, seriesStart, sumByToken, usdValue, volumeSeries } from "../lib/payments/dashboard";
import { sweepExpired } from "../lib/payments/store";
import { OrgScopeMethods, OrgScopeMixin } from "../mixins/org-scope.mixin";

type Ctx<P = Record<string, never>> = Context<P, AuthMeta>;
type DashboardThis = Service<{ rest: string }> & OrgScopeMethods;

const RECENT = 10;


const DashboardService: ServiceSchema<{ rest: string }, OrgScopeMethods & Record<string, any>> = {
	name: "dashboard",
	mixins: [OrgScopeMixin as ServiceSchema],
	settings: { rest: "/" },

	actions: {
		summary: {
			rest: "GET /dashboard/summary",
			auth: "jwt",
			params: { $$strict: "remove" },
			async handler(this: DashboardThis, ctx: Ctx): Promise<DashboardSummary> {
				const app = appOf(this.broker);
				const { models, sequelize, clock } = app;
				const org = await this.resolveOrganization(ctx);
				await sweepExpired(app, this.broker, { organizationId: org.id });
				const now = clock.now();

				const [links, intents, transactions] = await Promise.all([
					models.PaymentLink.count({ where: { organizationId: org.id, deletedAt: null } }),
					models.PaymentIntent.count({ where: { organizationId: org.id } }),
					models.Transaction.count({ where: { organizationId: org.id } }),
				]);

				// Earned: the links' amounts (what the merchant asked, in the link's token) of settled,
				// non-simulated checkouts, valued at each token's current USD price.
				const settled = await sequelize.query<{ tokenId: string; amount: unknown }>(
					`SELECT l.tokenId AS tokenId, l.amount AS amount FROM transactions t JOIN payment_links l ON l.id = t.paymentLinkId
					 WHERE t.organizationId = :org AND t.status = 'completed' AND t.simulated = :no`,
					{ replacements: { org: org.id, no: false }, type: QueryTypes.SELECT },
				);
				const sums = sumByToken(settled.map(r => ({ tokenId: r.tokenId, amount: normalizeDecimal(r.amount) ?? "0" })));
				const prices = new Map<string, string | null>();
				for (const tokenId of sums.keys()) prices.set(tokenId, await priceUsd(ctx, tokenId));
				const earned = usdValue(sums, prices);
				if (earned.unpriced.length) this.logger.debug(`Dashboard ${org.id}: no USD price for ${earned.unpriced.length} token(s); not counted`);
				const withdrawn = "0";

				// Volume: settled checkouts (simulated included) per month of settlement.
				const monthExpr = sequelize.getDialect() === "mysql" ? "DATE_FORMAT(completedAt, '%Y-%m')" : "substr(completedAt, 1, 7)";
				const perMonth = await sequelize.query<{ month: string; n: unknown }>(
					`SELECT ${monthExpr} AS month, COUNT(*) AS n FROM transactions
					 WHERE organizationId = :org AND status = 'completed' AND completedAt >= :start GROUP BY ${monthExpr}`,
					{ replacements: { org: org.id, start: seriesStart(now) }, type: QueryTypes.SELECT },
				);
				const counts: Record<string, number> = {};
				for (const row of perMonth) counts[String(row.month)] = Number(row.n);

				const recentRows = await models.Transaction.findAll({ where: { organizationId: org.id }, order: [["createdAt", "DESC"], ["id", "DESC"]], limit: RECENT });
				const linkRows = await models.PaymentLink.findAll({ where: { id: [...new Set(recentRows.map(r => r.paymentLinkId))] } });
				const linkById = new Map(linkRows.map(l => [l.id, l]));
				const tokens = new Map<string, Promise<TokenView | null>>();
				const networks = new Map<string, Promise<NetworkView | null>>();
				const tokenOf = (id: string) => {
					if (!tokens.has(id)) tokens.set(id, (ctx.call("networks.getToken", { id }) as Promise<TokenView>).catch(() => null));
					return tokens.get(id) as Promise<TokenView | null>;
				};
				const networkOf = (id: string) => {
					if (!networks.has(id)) networks.set(id, (ctx.call("networks.getNetwork", { id }) as Promise<NetworkView>).catch(() => null));
					return networks.get(id) as Promise<NetworkView | null>;
				};
				const recentTransactions: RecentTransaction[] = [];
				for (const tx of recentRows) {
					const link = linkById.get(tx.paymentLinkId);
					const [token, network, payerToken] = await Promise.all([link ? tokenOf(link.tokenId) : null, link ? networkOf(link.networkId) : null, tokenOf(tx.payerTokenId)]);
					recentTransactions.push({
						id: tx.id,
						status: tx.status,
						amount: tx.amount,
						amountReceived: tx.amountReceived,
						createdAt: tx.createdAt.toISOString(),
						paymentLinkTitle: link?.title ?? null,
						paymentLinkSlug: link?.slug ?? null,
						tokenSymbol: token?.symbol ?? null,
						networkName: network?.name ?? null,
						payerTokenSymbol: payerToken?.symbol ?? null,
						payerAmount: tx.totalAmount,
					});
				}

				return {
					totals: {
						links,
						intents,
						transactions,
						totalEarnedUsdc: earned.total,
						withdrawnUsdc: withdrawn,
						remainingUsdc: remaining(earned.total, withdrawn),
					},
					volumeSeries: volumeSeries(now, counts),
					recentTransactions,
				};
			},
		},
	},
};

export default DashboardService;
