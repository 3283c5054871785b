/**
 * Prices: token USD prices, fiat currencies, currency rates and fiat quotes (spec "Prices"), the
 * admin edits of manual prices and rates, and the price feed schedule. Decisions are in
 * docs/pricing.md.
 *
 * - Prices and rates are history: every change is a new row, reads take the newest.
 * - Reads are cached in the Moleculer cacher (Redis or memory) and cleaned on every change, on
 *   every node (`pricing.changed`). Staleness is decided at use time against the app clock, so
 *   a cached row never makes a stale price look fresh.
 * - Feed settings come from the node's configuration (`config.pricing`, lib/pricing/config.ts)
 *   and can be replaced at run time with the internal action `configureFeed`.
 */
import type { Context, Service, ServiceSchema } from "moleculer";
import { Op } from "sequelize";
import { appOf } from "../lib/app";
import { badRequest, notFound } from "../lib/errors";
import { registerTranslations } from "../lib/i18n";
import { isUuid, uuid } from "../lib/ids";
import { jsonNull } from "../lib/json-null";
import type { AuthMeta } from "../lib/meta";
import { amountRule, money, toAmountString } from "../lib/money";
import { CATALOGUE, tokenIdFor } from "../lib/networks/catalogue";
import type { TokenWithNetworkView } from "../lib/networks/view";
import { CURRENCY_CODE, USD } from "../lib/pricing/catalogue";
import { FEED_KINDS, FeedKind, PricingConfig, defaultApiKeyHeader, feedUrl, isFeedId } from "../lib/pricing/config";
import { createFeed, FeedError, PriceFeed } from "../lib/pricing/feeds";
import { AmountTooLargeError } from "../lib/pricing/fraction";
import { convertTokenAmount, quoteFiat, UsdRate } from "../lib/pricing/quote";
import { seedPricing, PricingSeedResult } from "../lib/pricing/seed";
import { isFresh, MANUAL_SOURCE } from "../lib/pricing/staleness";
import {
	CurrencyRateView,
	CurrencyView,
	StoredCurrencyRate,
	StoredTokenPrice,
	TokenPriceView,
	currencyView,
	rateViewFor,
	storedPrice,
	storedRate,
	tokenPriceView,
} from "../lib/pricing/view";

registerTranslations("es", {
	"Token not found": "Token no encontrado",
	"Currency not found": "Moneda no encontrada",
	"Unknown currency": "Moneda desconocida",
	"Price unavailable": "Precio no disponible",
	"Currency rate unavailable": "Tipo de cambio no disponible",
	"Amount has more decimals than the currency allows": "El importe tiene más decimales de los que admite la moneda",
	"Amount has more decimals than the token allows": "El importe tiene más decimales de los que admite el token",
	"Amount must be greater than zero": "El importe debe ser mayor que cero",
	"Amount is too large": "El importe es demasiado grande",
	"Base and quote currencies must differ": "Las monedas base y cotizada deben ser distintas",
	"USD cannot be deactivated": "USD no se puede desactivar",
});

/** Cleans every node's pricing cache (the memory cacher is per node). */
export const PRICING_CHANGED_EVENT = "pricing.changed";
const CACHE_TTL_SECONDS = 30;
const CURRENCIES_CACHE_TTL_SECONDS = 300;

type Ctx<P = Record<string, never>> = Context<P, AuthMeta>;

export interface FiatQuote {
	amountUsd: string;
	amountUsdc: string;
	sourceAmount: string;
	sourceCurrency: string;
	currencyRateId: string | null;
	tokenAmount?: string;
	tokenSymbol?: string;
	/** The price row the token amount was computed with (audit). */
	tokenPriceId?: string;
	tokenPriceUsd?: string;
}

export interface FreshTokenPrice {
	id: string;
	priceUsd: string;
	/** When the source last confirmed the price. */
	updatedAt: string;
	source: string;
}

export interface ConvertResult {
	amount: string;
	fromTokenId: string;
	toTokenId: string;
	fromPriceUsd: string;
	toPriceUsd: string;
}

export interface RefreshResult {
	source: string;
	/** Why nothing was fetched: manual feed, another node holds the refresh, or one is running here. */
	skipped?: "manual" | "locked";
	/** The feed failed; the newest stored prices stay in use until they are stale. */
	error?: FeedError["kind"];
	inserted: number;
	confirmed: number;
	missing: string[];
}

interface PricingVars {
	pricing: PricingConfig;
	feed: PriceFeed;
	timer: NodeJS.Timeout | null;
	/** Bumped on every (re)schedule, so a tick of an older schedule never re-arms itself. */
	scheduleGeneration: number;
	running: Promise<RefreshResult> | null;
	stopping: boolean;
}

interface PricingMethods {
	seed(): Promise<PricingSeedResult>;
	invalidate(): Promise<void>;
	requireToken(ctx: Ctx<any>, tokenId: string): Promise<TokenWithNetworkView>;
	requireCurrencyById(ctx: Ctx<any>, id: string): Promise<CurrencyView>;
	currencyByCode(ctx: Ctx<any>, code: string): Promise<CurrencyView | undefined>;
	freshPrice(ctx: Ctx<any>, tokenId: string): Promise<StoredTokenPrice | null>;
	nextCreatedAt(newest: Date | null): Date;
	recordTokenPrice(tokenId: string, priceUsd: string, source: string): Promise<{ row: StoredTokenPrice; inserted: boolean }>;
	refresh(opts: { force: boolean }): Promise<RefreshResult>;
	runRefresh(force: boolean): Promise<RefreshResult>;
	schedule(): void;
	unschedule(): void;
	applyConfig(config: PricingConfig): void;
}

type PricingThis = Service<{ rest: string }> & PricingVars & PricingMethods;

/** Ids from clients: anything that is not a UUID is simply "not found". */
const ID = { type: "string", max: 100 } as const;
const CODE = { type: "string", trim: true, min: 1, max: 20 } as const;

const tokenNotFound = () => notFound("Token not found");
const currencyNotFound = () => notFound("Currency not found");
const priceUnavailable = (field: string) => badRequest("Price unavailable", { [field]: "priceUnavailable" });

function decimalsOf(amount: string): number {
	const dot = amount.indexOf(".");
	return dot < 0 ? 0 : amount.length - dot - 1;
}

function requirePositive(field: string, value: string): string {
	const canonical = toAmountString(value);
	if (canonical === "0") throw badRequest("Amount must be greater than zero", { [field]: "positive" });
	return canonical;
}

/** Token id -> feed id for every catalogue token whose symbol the feed knows. */
function feedTargets(feedIds: Record<string, string>): Map<string, string[]> {
	const byFeedId = new Map<string, string[]>();
	for (const network of CATALOGUE) {
		for (const token of network.tokens) {
			const feedId = feedIds[token.symbol.toUpperCase()];
			if (!feedId) continue;
			const ids = byFeedId.get(feedId) || [];
			const tokenId = tokenIdFor(network.slug, token.symbol);
			if (!ids.includes(tokenId)) ids.push(tokenId);
			byFeedId.set(feedId, ids);
		}
	}
	return byFeedId;
}

const PricingService: ServiceSchema<{ rest: string }, PricingMethods & Record<string, any>, PricingVars> = {
	name: "pricing",
	settings: { rest: "/" },

	actions: {
		// ---- public reads (spec "Prices") ----

		/** GET /price/token/:tokenId: the newest price whatever its age, or null. Unknown or malformed token: 404. */
		tokenPrice: {
			rest: "GET /price/token/:tokenId",
			auth: "public",
			params: { $$strict: "remove", tokenId: ID },
			async handler(this: PricingThis, ctx: Ctx<{ tokenId: string }>): Promise<TokenPriceView | string> {
				await this.requireToken(ctx, ctx.params.tokenId);
				const row = (await ctx.call("pricing.latestPrice", { tokenId: ctx.params.tokenId })) as StoredTokenPrice | null;
				return row ? tokenPriceView(row) : jsonNull(ctx);
			},
		},

		currencies: {
			rest: "GET /price/currencies",
			auth: "public",
			cache: { keys: ["active"], ttl: CURRENCIES_CACHE_TTL_SECONDS },
			params: { $$strict: "remove", active: { type: "enum", values: ["true", "false"], optional: true } },
			async handler(this: PricingThis, ctx: Ctx<{ active?: "true" | "false" }>): Promise<CurrencyView[]> {
				const { models } = appOf(this.broker);
				// As for networks, only `active=true` filters; `false` lists everything like omitting it.
				const where = ctx.params.active === "true" ? { isActive: true } : {};
				const rows = await models.Currency.findAll({ where, order: [["code", "ASC"]] });
				return rows.map(currencyView);
			},
		},

		/** GET /price/currency-rate/:baseId/:quoteId: the newest rate of the pair (either stored direction), or null. */
		currencyRate: {
			rest: "GET /price/currency-rate/:baseId/:quoteId",
			auth: "public",
			params: { $$strict: "remove", baseId: ID, quoteId: ID },
			async handler(this: PricingThis, ctx: Ctx<{ baseId: string; quoteId: string }>): Promise<CurrencyRateView | string> {
				const { baseId, quoteId } = ctx.params;
				await Promise.all([this.requireCurrencyById(ctx, baseId), this.requireCurrencyById(ctx, quoteId)]);
				const row = (await ctx.call("pricing.rateBetween", { baseId, quoteId })) as StoredCurrencyRate | null;
				// A zero rate (only possible by hand in the database) has no inverse: shown as no rate.
				return row && money(row.rate).gt(0) ? rateViewFor(row, baseId, quoteId) : jsonNull(ctx);
			},
		},

		/**
		 * GET /price/fiat-quote: a fiat amount in USD/USDC and, with tokenId, in that token (fresh
		 * price only). Also the internal quote for payment intents (`ctx.call("pricing.fiatQuote")`).
		 */
		fiatQuote: {
			rest: "GET /price/fiat-quote",
			auth: "public",
			params: { $$strict: "remove", amount: amountRule, currency: CODE, tokenId: { type: "uuid", optional: true } },
			async handler(this: PricingThis, ctx: Ctx<{ amount: string; currency: string; tokenId?: string }>): Promise<FiatQuote> {
				const { clock } = appOf(this.broker);
				const code = ctx.params.currency.toUpperCase();
				const currency = CURRENCY_CODE.test(code) ? await this.currencyByCode(ctx, code) : undefined;
				if (!currency || !currency.isActive) throw badRequest("Unknown currency", { currency: "unknownCurrency" });
				const amount = requirePositive("amount", ctx.params.amount);
				if (decimalsOf(amount) > currency.decimals) throw badRequest("Amount has more decimals than the currency allows", { amount: "tooManyDecimals" });

				let rate: UsdRate | null = null;
				let currencyRateId: string | null = null;
				if (currency.code !== USD) {
					const usd = await this.currencyByCode(ctx, USD);
					const row = usd ? ((await ctx.call("pricing.rateBetween", { baseId: currency.id, quoteId: usd.id })) as StoredCurrencyRate | null) : null;
					// A zero rate could only come from a hand-edited row: unavailable, never a division by zero.
					if (!row || !money(row.rate).gt(0) || !isFresh({ source: row.source, confirmedAt: new Date(row.confirmedAt) }, clock.now(), this.pricing.maxAgeSeconds)) {
						throw badRequest("Currency rate unavailable", { currency: "rateUnavailable" });
					}
					rate = { rate: row.rate, direction: row.baseCurrencyId === currency.id ? "toUsd" : "fromUsd" };
					currencyRateId = row.id;
				}

				let token: TokenWithNetworkView | null = null;
				let price: StoredTokenPrice | null = null;
				if (ctx.params.tokenId) {
					token = await this.requireToken(ctx, ctx.params.tokenId);
					price = await this.freshPrice(ctx, token.id);
					if (!price) throw priceUnavailable("tokenId");
				}

				let result: ReturnType<typeof quoteFiat>;
				try {
					result = quoteFiat({ amount, rate, token: token && price ? { decimals: token.decimals, priceUsd: price.priceUsd } : undefined });
				} catch (err) {
					if (err instanceof AmountTooLargeError) throw badRequest("Amount is too large", { amount: "tooLarge" });
					throw err;
				}
				const quote: FiatQuote = {
					amountUsd: result.amountUsd,
					amountUsdc: result.amountUsd,
					sourceAmount: amount,
					sourceCurrency: currency.code,
					currencyRateId,
				};
				if (token && price) {
					quote.tokenAmount = result.tokenAmount;
					quote.tokenSymbol = token.symbol;
					quote.tokenPriceId = price.id;
					quote.tokenPriceUsd = price.priceUsd;
				}
				return quote;
			},
		},

		// ---- admin edits: a new `manual` row each time (history kept) ----

		setTokenPrice: {
			rest: "PUT /price/admin/token/:tokenId",
			auth: "admin",
			params: { $$strict: "remove", tokenId: ID, priceUsd: amountRule },
			async handler(this: PricingThis, ctx: Ctx<{ tokenId: string; priceUsd: string }>): Promise<TokenPriceView> {
				const token = await this.requireToken(ctx, ctx.params.tokenId);
				const priceUsd = requirePositive("priceUsd", ctx.params.priceUsd);
				const { row } = await this.recordTokenPrice(token.id, priceUsd, MANUAL_SOURCE);
				await this.invalidate();
				this.logger.info(`Manual price of token ${token.id} (${token.symbol}) set by user ${ctx.meta.user?.id}`);
				return tokenPriceView(row);
			},
		},

		setCurrencyRate: {
			rest: "PUT /price/admin/currency-rate",
			auth: "admin",
			params: { $$strict: "remove", baseCode: CODE, quoteCode: CODE, rate: amountRule },
			async handler(this: PricingThis, ctx: Ctx<{ baseCode: string; quoteCode: string; rate: string }>): Promise<CurrencyRateView> {
				const { models } = appOf(this.broker);
				const base = await this.currencyByCode(ctx, ctx.params.baseCode.toUpperCase());
				const quote = await this.currencyByCode(ctx, ctx.params.quoteCode.toUpperCase());
				const errors: Record<string, string> = {};
				if (!base) errors.baseCode = "unknownCurrency";
				if (!quote) errors.quoteCode = "unknownCurrency";
				if (!base || !quote) throw badRequest("Unknown currency", errors);
				if (base.id === quote.id) throw badRequest("Base and quote currencies must differ", { quoteCode: "sameCurrency" });
				const rate = requirePositive("rate", ctx.params.rate);
				// Newest of both directions: createdAt stays strictly increasing for the pair.
				const newest = await models.CurrencyRate.findOne({
					where: {
						[Op.or]: [
							{ baseCurrencyId: base.id, quoteCurrencyId: quote.id },
							{ baseCurrencyId: quote.id, quoteCurrencyId: base.id },
						],
					},
					order: [["createdAt", "DESC"], ["id", "DESC"]],
				});
				const now = appOf(this.broker).clock.now();
				const row = await models.CurrencyRate.create({
					id: uuid(),
					baseCurrencyId: base.id,
					quoteCurrencyId: quote.id,
					rate,
					source: MANUAL_SOURCE,
					createdAt: this.nextCreatedAt(newest ? newest.createdAt : null),
					confirmedAt: now,
				});
				await this.invalidate();
				this.logger.info(`Manual rate ${base.code}->${quote.code} set by user ${ctx.meta.user?.id}`);
				return rateViewFor(storedRate(row), base.id, quote.id);
			},
		},

		/** Switch a currency on or off for quotes and `?active=true` lists. */
		updateCurrency: {
			rest: "PATCH /price/admin/currencies/:code",
			auth: "admin",
			params: { $$strict: "remove", code: CODE, isActive: { type: "boolean" } },
			async handler(this: PricingThis, ctx: Ctx<{ code: string; isActive: boolean }>): Promise<CurrencyView> {
				const { models } = appOf(this.broker);
				const code = ctx.params.code.toUpperCase();
				const row = CURRENCY_CODE.test(code) ? await models.Currency.findOne({ where: { code } }) : null;
				if (!row) throw currencyNotFound();
				if (code === USD && !ctx.params.isActive) throw badRequest("USD cannot be deactivated", { isActive: "usdRequired" });
				if (row.isActive !== ctx.params.isActive) {
					await row.update({ isActive: ctx.params.isActive });
					await this.invalidate();
				}
				return currencyView(row);
			},
		},

		// ---- internal (no route) ----

		/** The newest stored price of a token, any age, or null. */
		latestPrice: {
			visibility: "public",
			cache: { keys: ["tokenId"], ttl: CACHE_TTL_SECONDS },
			params: { $$strict: "remove", tokenId: ID },
			async handler(this: PricingThis, ctx: Ctx<{ tokenId: string }>): Promise<StoredTokenPrice | null> {
				if (!isUuid(ctx.params.tokenId)) return null;
				const row = await appOf(this.broker).models.TokenPrice.findOne({
					where: { tokenId: ctx.params.tokenId },
					order: [["createdAt", "DESC"], ["id", "DESC"]],
				});
				return row ? storedPrice(row) : null;
			},
		},

		/** The newest stored rate between two currencies, whichever direction it was stored in, or null. */
		rateBetween: {
			visibility: "public",
			cache: { keys: ["baseId", "quoteId"], ttl: CACHE_TTL_SECONDS },
			params: { $$strict: "remove", baseId: ID, quoteId: ID },
			async handler(this: PricingThis, ctx: Ctx<{ baseId: string; quoteId: string }>): Promise<StoredCurrencyRate | null> {
				const { baseId, quoteId } = ctx.params;
				if (!isUuid(baseId) || !isUuid(quoteId)) return null;
				const row = await appOf(this.broker).models.CurrencyRate.findOne({
					where: {
						[Op.or]: [
							{ baseCurrencyId: baseId, quoteCurrencyId: quoteId },
							{ baseCurrencyId: quoteId, quoteCurrencyId: baseId },
						],
					},
					order: [["createdAt", "DESC"], ["id", "DESC"]],
				});
				return row ? storedRate(row) : null;
			},
		},

		/** The USD price of a token for payments: only a fresh one (see staleness), else null. */
		tokenPriceUsd: {
			visibility: "public",
			params: { $$strict: "remove", tokenId: ID },
			async handler(this: PricingThis, ctx: Ctx<{ tokenId: string }>): Promise<FreshTokenPrice | null> {
				const price = await this.freshPrice(ctx, ctx.params.tokenId);
				return price ? { id: price.id, priceUsd: price.priceUsd, updatedAt: price.confirmedAt, source: price.source } : null;
			},
		},

		/** `amount` of one token in another by fresh USD prices, rounded up to the target's decimals. */
		convert: {
			visibility: "public",
			params: { $$strict: "remove", amount: amountRule, fromTokenId: ID, toTokenId: ID },
			async handler(this: PricingThis, ctx: Ctx<{ amount: string; fromTokenId: string; toTokenId: string }>): Promise<ConvertResult> {
				const [from, to] = await Promise.all([this.requireToken(ctx, ctx.params.fromTokenId), this.requireToken(ctx, ctx.params.toTokenId)]);
				const amount = toAmountString(ctx.params.amount);
				if (decimalsOf(amount) > from.decimals) throw badRequest("Amount has more decimals than the token allows", { amount: "tooManyDecimals" });
				const [fromPrice, toPrice] = await Promise.all([this.freshPrice(ctx, from.id), this.freshPrice(ctx, to.id)]);
				if (!fromPrice) throw priceUnavailable("fromTokenId");
				if (!toPrice) throw priceUnavailable("toTokenId");
				let converted: string;
				try {
					converted = from.id === to.id ? amount : convertTokenAmount({ amount, fromPriceUsd: fromPrice.priceUsd, toPriceUsd: toPrice.priceUsd, toDecimals: to.decimals });
				} catch (err) {
					if (err instanceof AmountTooLargeError) throw badRequest("Amount is too large", { amount: "tooLarge" });
					throw err;
				}
				return { amount: converted, fromTokenId: from.id, toTokenId: to.id, fromPriceUsd: fromPrice.priceUsd, toPriceUsd: toPrice.priceUsd };
			},
		},

		/** Fetch the feed now (operators in the REPL, tests); also the Redis-locked scheduled refresh. */
		refresh: {
			visibility: "protected",
			params: { $$strict: "remove", force: { type: "boolean", optional: true, default: true } },
			async handler(this: PricingThis, ctx: Ctx<{ force: boolean }>): Promise<RefreshResult> {
				return this.refresh({ force: ctx.params.force });
			},
		},

		/**
		 * Replaces feed settings at run time (tests; the environment is read once at creation).
		 * Local only; restarts the schedule. Answers the settings without the API key.
		 */
		configureFeed: {
			visibility: "protected",
			params: {
				$$strict: "remove",
				feed: { type: "enum", values: FEED_KINDS, optional: true },
				feedUrl: { type: "url", optional: true },
				apiKey: { type: "string", optional: true, nullable: true, max: 200 },
				apiKeyHeader: { type: "string", optional: true, pattern: /^[A-Za-z0-9-]{1,64}$/ },
				refreshSeconds: { type: "number", optional: true, min: 0.05 },
				timeoutMs: { type: "number", optional: true, min: 1 },
				maxAgeSeconds: { type: "number", optional: true, min: 1 },
				feedIds: { type: "record", optional: true, key: { type: "string", pattern: /^[A-Za-z0-9.]{1,20}$/ }, value: { type: "string", max: 100 } },
			},
			async handler(this: PricingThis, ctx: Ctx<Partial<PricingConfig> & { feed?: FeedKind }>) {
				const next: PricingConfig = { ...this.pricing, feedIds: { ...this.pricing.feedIds } };
				const p = ctx.params;
				if (p.feed !== undefined) next.feed = p.feed;
				if (p.feedUrl !== undefined) {
					next.feedUrl = feedUrl("feedUrl", p.feedUrl);
					if (p.apiKeyHeader === undefined) next.apiKeyHeader = defaultApiKeyHeader(next.feedUrl);
				}
				if (p.apiKey !== undefined) next.apiKey = p.apiKey || null;
				if (p.apiKeyHeader !== undefined) next.apiKeyHeader = p.apiKeyHeader;
				if (p.refreshSeconds !== undefined) next.refreshSeconds = p.refreshSeconds;
				if (p.timeoutMs !== undefined) next.timeoutMs = p.timeoutMs;
				if (p.maxAgeSeconds !== undefined) next.maxAgeSeconds = p.maxAgeSeconds;
				if (p.feedIds !== undefined) {
					for (const [symbol, id] of Object.entries(p.feedIds)) {
						if (!isFeedId(id)) throw badRequest("Validation failed", { [`feedIds.${symbol}`]: "feedId" });
						next.feedIds[symbol.toUpperCase()] = id;
					}
				}
				this.applyConfig(next);
				const { apiKey, ...shown } = next;
				return { ...shown, apiKey: apiKey ? "(set)" : null };
			},
		},

		/** Re-runs the seed (re-runnable: deterministic ids, never duplicates). */
		seed: {
			visibility: "protected",
			params: { $$strict: "remove" },
			async handler(this: PricingThis): Promise<PricingSeedResult> {
				return this.seed();
			},
		},
	},

	events: {
		[PRICING_CHANGED_EVENT]: {
			async handler(this: PricingThis, ctx: Context) {
				// The writer already cleaned its own node.
				if (ctx.nodeID !== this.broker.nodeID && this.broker.cacher) await this.broker.cacher.clean(`${this.name}.**`);
			},
		},
	},

	methods: {
		async seed(this: PricingThis) {
			const { models, clock } = appOf(this.broker);
			const result = await seedPricing(models, clock.now());
			if (result.currencies + result.rates + result.prices > 0) {
				this.logger.info("Pricing seeded", result);
				await this.invalidate();
			}
			return result;
		},

		async invalidate(this: PricingThis) {
			if (this.broker.cacher) await this.broker.cacher.clean(`${this.name}.**`);
			this.broker.broadcast(PRICING_CHANGED_EVENT, {});
		},

		/** The token (404 when malformed or unknown), from the networks service. */
		async requireToken(this: PricingThis, ctx: Ctx<any>, tokenId: string): Promise<TokenWithNetworkView> {
			if (!isUuid(tokenId)) throw tokenNotFound();
			return (await ctx.call("networks.getToken", { id: tokenId })) as TokenWithNetworkView;
		},

		async requireCurrencyById(this: PricingThis, ctx: Ctx<any>, id: string): Promise<CurrencyView> {
			if (!isUuid(id)) throw currencyNotFound();
			const all = (await ctx.call("pricing.currencies", {})) as CurrencyView[];
			const found = all.find(c => c.id === id);
			if (!found) throw currencyNotFound();
			return found;
		},

		async currencyByCode(this: PricingThis, ctx: Ctx<any>, code: string): Promise<CurrencyView | undefined> {
			const all = (await ctx.call("pricing.currencies", {})) as CurrencyView[];
			return all.find(c => c.code === code);
		},

		async freshPrice(this: PricingThis, ctx: Ctx<any>, tokenId: string): Promise<StoredTokenPrice | null> {
			const row = (await ctx.call("pricing.latestPrice", { tokenId })) as StoredTokenPrice | null;
			if (!row || !money(row.priceUsd).gt(0)) return null;
			const now = appOf(this.broker).clock.now();
			return isFresh({ source: row.source, confirmedAt: new Date(row.confirmedAt) }, now, this.pricing.maxAgeSeconds) ? row : null;
		},

		/** Now, or 1 ms after the newest row when the clock has not moved past it: "newest" stays unambiguous. */
		nextCreatedAt(this: PricingThis, newest: Date | null): Date {
			const now = appOf(this.broker).clock.now();
			if (newest && newest.getTime() >= now.getTime()) return new Date(newest.getTime() + 1);
			return now;
		},

		/**
		 * A new row, unless a feed confirms the newest row unchanged (same source and price): then
		 * only its confirmedAt moves, so the history holds changes rather than one row a minute.
		 */
		async recordTokenPrice(this: PricingThis, tokenId: string, priceUsd: string, source: string) {
			const { models, clock } = appOf(this.broker);
			const now = clock.now();
			const newest = await models.TokenPrice.findOne({ where: { tokenId }, order: [["createdAt", "DESC"], ["id", "DESC"]] });
			if (newest && source !== MANUAL_SOURCE && newest.source === source && money(newest.priceUsd).eq(money(priceUsd))) {
				await newest.update({ confirmedAt: now });
				return { row: storedPrice(newest), inserted: false };
			}
			const row = await models.TokenPrice.create({
				id: uuid(),
				tokenId,
				priceUsd,
				source,
				createdAt: this.nextCreatedAt(newest ? newest.createdAt : null),
				confirmedAt: now,
			});
			return { row: storedPrice(row), inserted: true };
		},

		/** One refresh at a time per node; with Redis, at most one per interval across nodes (unless forced). */
		async refresh(this: PricingThis, { force }: { force: boolean }) {
			if (!this.feed.remote) return { source: this.feed.source, skipped: "manual", inserted: 0, confirmed: 0, missing: [] };
			if (this.running) return this.running;
			this.running = this.runRefresh(force).finally(() => {
				this.running = null;
			});
			return this.running;
		},

		async runRefresh(this: PricingThis, force: boolean): Promise<RefreshResult> {
			const { redis, config } = appOf(this.broker);
			const feed = this.feed;
			const result: RefreshResult = { source: feed.source, inserted: 0, confirmed: 0, missing: [] };
			if (!force && redis) {
				// Held for most of an interval and never released: whichever node ticks next after it expires refreshes.
				const ttlMs = Math.max(50, Math.floor(this.pricing.refreshSeconds * 900));
				const got = await redis.set(`${config.redisPrefix}pricing:refresh`, this.broker.nodeID, "PX", ttlMs, "NX").catch(() => "OK");
				if (got !== "OK") return { ...result, skipped: "locked" };
			}
			const targets = feedTargets(this.pricing.feedIds);
			let fetched;
			try {
				fetched = await feed.fetchUsdPrices([...targets.keys()]);
			} catch (err) {
				if (!(err instanceof FeedError)) throw err;
				// Last good prices stay in use until they are older than PRICE_MAX_AGE_SECONDS.
				this.logger.warn(`Price feed ${feed.source} failed (${err.kind}: ${err.message}); keeping the last stored prices`);
				return { ...result, error: err.kind };
			}
			result.missing = fetched.missing;
			for (const [feedId, price] of fetched.prices) {
				for (const tokenId of targets.get(feedId) || []) {
					if (this.stopping) break;
					const { inserted } = await this.recordTokenPrice(tokenId, price, feed.source);
					if (inserted) result.inserted++;
					else result.confirmed++;
				}
			}
			if (fetched.missing.length) this.logger.warn(`Price feed ${feed.source} had no usable price for: ${fetched.missing.join(", ")}`);
			if (!this.stopping) await this.invalidate();
			return result;
		},

		schedule(this: PricingThis) {
			this.unschedule();
			if (!this.feed.remote || this.stopping) return;
			const generation = ++this.scheduleGeneration;
			const tick = () => {
				this.refresh({ force: false })
					.catch(err => this.logger.error("Price refresh failed:", err instanceof Error ? err.message : err))
					.finally(() => {
						if (generation !== this.scheduleGeneration || this.stopping) return;
						this.timer = setTimeout(tick, this.pricing.refreshSeconds * 1000);
						this.timer.unref();
					});
			};
			this.timer = setTimeout(tick, this.pricing.refreshSeconds * 1000);
			this.timer.unref();
		},

		unschedule(this: PricingThis) {
			this.scheduleGeneration++;
			if (this.timer) clearTimeout(this.timer);
			this.timer = null;
		},

		applyConfig(this: PricingThis, config: PricingConfig) {
			this.pricing = config;
			this.feed = createFeed(config);
			this.schedule();
		},
	},

	created(this: PricingThis) {
		// The node's configuration (lib/config.ts); tests give theirs explicitly and switch feeds with configureFeed.
		this.pricing = appOf(this.broker).config.pricing;
		this.feed = createFeed(this.pricing);
		this.timer = null;
		this.scheduleGeneration = 0;
		this.running = null;
		this.stopping = false;
	},

	async started(this: PricingThis) {
		this.stopping = false;
		await this.seed();
		this.schedule();
		// Fresh prices at boot rather than one interval later.
		if (this.feed.remote) void this.refresh({ force: false }).catch(err => this.logger.warn("Initial price refresh failed:", err instanceof Error ? err.message : err));
	},

	async stopped(this: PricingThis) {
		this.stopping = true;
		this.unschedule();
		if (this.running) await this.running.catch(() => undefined);
	},
};

export default PricingService;
