/** Response shapes of the pricing resources: the spec's fields, camelCase, ISO timestamps. */
import { invertRate } from "./quote";

export interface CurrencyView {
	id: string;
	code: string;
	name: string;
	symbol: string;
	decimals: number;
	isActive: boolean;
	createdAt: string;
	updatedAt: string;
}

export interface TokenPriceView {
	id: string;
	tokenId: string;
	priceUsd: string;
	source: string;
	createdAt: string;
}

/** A stored price with when its source last confirmed it (internal: staleness). JSON-safe for the cacher. */
export interface StoredTokenPrice extends TokenPriceView {
	confirmedAt: string;
}

export interface CurrencyRateView {
	id: string;
	baseCurrencyId: string;
	quoteCurrencyId: string;
	rate: string;
	source: string;
	createdAt: string;
	/** true: the stored row is quote->base and `rate` is its inverse (half-up, 18 places). */
	inverted: boolean;
}

export interface StoredCurrencyRate {
	id: string;
	baseCurrencyId: string;
	quoteCurrencyId: string;
	rate: string;
	source: string;
	createdAt: string;
	confirmedAt: string;
}

const iso = (d: Date | string): string => (d instanceof Date ? d : new Date(d)).toISOString();

export function currencyView(c: { id: string; code: string; name: string; symbol: string; decimals: number; isActive: boolean; createdAt: Date; updatedAt: Date }): CurrencyView {
	return {
		id: c.id,
		code: c.code,
		name: c.name,
		symbol: c.symbol,
		decimals: Number(c.decimals),
		isActive: Boolean(c.isActive),
		createdAt: iso(c.createdAt),
		updatedAt: iso(c.updatedAt),
	};
}

export function storedPrice(p: { id: string; tokenId: string; priceUsd: string; source: string; createdAt: Date; confirmedAt: Date }): StoredTokenPrice {
	return { id: p.id, tokenId: p.tokenId, priceUsd: p.priceUsd, source: p.source, createdAt: iso(p.createdAt), confirmedAt: iso(p.confirmedAt) };
}

export function tokenPriceView(p: StoredTokenPrice): TokenPriceView {
	return { id: p.id, tokenId: p.tokenId, priceUsd: p.priceUsd, source: p.source, createdAt: p.createdAt };
}

export function storedRate(r: { id: string; baseCurrencyId: string; quoteCurrencyId: string; rate: string; source: string; createdAt: Date; confirmedAt: Date }): StoredCurrencyRate {
	return {
		id: r.id,
		baseCurrencyId: r.baseCurrencyId,
		quoteCurrencyId: r.quoteCurrencyId,
		rate: r.rate,
		source: r.source,
		createdAt: iso(r.createdAt),
		confirmedAt: iso(r.confirmedAt),
	};
}

/** The rate of base -> quote from a stored row of either direction. */
export function rateViewFor(row: StoredCurrencyRate, baseId: string, quoteId: string): CurrencyRateView {
	const inverted = row.baseCurrencyId !== baseId;
	return {
		id: row.id,
		baseCurrencyId: baseId,
		quoteCurrencyId: quoteId,
		rate: inverted ? invertRate(row.rate) : row.rate,
		source: row.source,
		createdAt: row.createdAt,
		inverted,
	};
}
