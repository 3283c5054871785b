/**
 * Seeds currencies, the placeholder USD rates and a `manual` price of 1 USD for every stablecoin
 * of the network catalogue. Re-runnable and safe when several nodes start at once: every seed
 * row has a deterministic id and is inserted with INSERT IGNORE semantics, so it is written once
 * ever and never overwrites what an operator (or a feed) stored later.
 */
import { v5 as uuidv5 } from "uuid";
import type { Models } from "../../models";
import { CATALOGUE, tokenIdFor } from "../networks/catalogue";
import { CURRENCIES, currencyIdFor, PRICING_NAMESPACE, SEED_USD_RATES, seedRateIdFor, USD } from "./catalogue";
import { MANUAL_SOURCE } from "./staleness";

export function seedPriceIdFor(tokenId: string): string {
	return uuidv5(`seed-price:${tokenId}`, PRICING_NAMESPACE);
}

/** Stablecoin token ids of the catalogue (PLACEHOLDER price 1 USD until an operator or feed says otherwise). */
export function stablecoinTokenIds(): string[] {
	const ids = new Set<string>();
	for (const network of CATALOGUE) for (const token of network.tokens) if (token.isStablecoin) ids.add(tokenIdFor(network.slug, token.symbol));
	return [...ids];
}

export interface PricingSeedResult {
	currencies: number;
	rates: number;
	prices: number;
}

export async function seedPricing(models: Pick<Models, "Currency" | "CurrencyRate" | "TokenPrice">, now: Date): Promise<PricingSeedResult> {
	const before = await Promise.all([models.Currency.count(), models.CurrencyRate.count(), models.TokenPrice.count()]);
	await models.Currency.bulkCreate(
		CURRENCIES.map(c => ({ id: currencyIdFor(c.code), code: c.code, name: c.name, symbol: c.symbol, decimals: c.decimals, isActive: true, createdAt: now, updatedAt: now })),
		{ ignoreDuplicates: true },
	);
	await models.CurrencyRate.bulkCreate(
		Object.entries(SEED_USD_RATES).map(([code, rate]) => ({
			id: seedRateIdFor(USD, code),
			baseCurrencyId: currencyIdFor(USD),
			quoteCurrencyId: currencyIdFor(code),
			rate,
			source: MANUAL_SOURCE,
			createdAt: now,
			confirmedAt: now,
		})),
		{ ignoreDuplicates: true },
	);
	await models.TokenPrice.bulkCreate(
		stablecoinTokenIds().map(tokenId => ({ id: seedPriceIdFor(tokenId), tokenId, priceUsd: "1", source: MANUAL_SOURCE, createdAt: now, confirmedAt: now })),
		{ ignoreDuplicates: true },
	);
	const after = await Promise.all([models.Currency.count(), models.CurrencyRate.count(), models.TokenPrice.count()]);
	return { currencies: after[0] - before[0], rates: after[1] - before[1], prices: after[2] - before[2] };
}
