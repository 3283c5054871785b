/**
 * Seed data of the pricing service: fiat currencies (ISO 4217 codes and minor units), the
 * placeholder USD rates an operator is expected to edit, and token symbol -> price feed id.
 * Ids are UUID v5 of a fixed namespace, so every node and every install seeds the same ids and
 * a re-run never duplicates.
 */
import { v5 as uuidv5 } from "uuid";

/** Namespace of the pricing service's deterministic ids (never change: ids are stored). */
export const PRICING_NAMESPACE = "5b0f6a2e-3c1d-5e8f-9a47-1d2c3b4a5e6f";

export function currencyIdFor(code: string): string {
	return uuidv5(`currency:${code.toUpperCase()}`, PRICING_NAMESPACE);
}

/** The id of the one seed row of a pair: inserting it twice is a no-op. */
export function seedRateIdFor(baseCode: string, quoteCode: string): string {
	return uuidv5(`seed-rate:${baseCode.toUpperCase()}:${quoteCode.toUpperCase()}`, PRICING_NAMESPACE);
}

export interface CurrencySeed {
	code: string;
	name: string;
	symbol: string;
	/** ISO 4217 minor units. */
	decimals: number;
}

export const USD = "USD";

export const CURRENCIES: CurrencySeed[] = [
	{ code: "USD", name: "US Dollar", symbol: "$", decimals: 2 },
	{ code: "EUR", name: "Euro", symbol: "€", decimals: 2 },
	{ code: "GBP", name: "Pound Sterling", symbol: "£", decimals: 2 },
	{ code: "JPY", name: "Japanese Yen", symbol: "¥", decimals: 0 },
	{ code: "CHF", name: "Swiss Franc", symbol: "CHF", decimals: 2 },
	{ code: "CAD", name: "Canadian Dollar", symbol: "CA$", decimals: 2 },
	{ code: "AUD", name: "Australian Dollar", symbol: "A$", decimals: 2 },
	{ code: "BRL", name: "Brazilian Real", symbol: "R$", decimals: 2 },
	{ code: "INR", name: "Indian Rupee", symbol: "₹", decimals: 2 },
	{ code: "NGN", name: "Nigerian Naira", symbol: "₦", decimals: 2 },
];

/**
 * PLACEHOLDERS, not market data: 1 USD = rate X, seeded once as `manual` rows so a fresh
 * install can quote. An operator replaces them (PUT /price/admin/currency-rate).
 */
export const SEED_USD_RATES: Record<string, string> = {
	EUR: "0.92",
	GBP: "0.79",
	JPY: "150",
	CHF: "0.88",
	CAD: "1.36",
	AUD: "1.52",
	BRL: "5.4",
	INR: "83",
	NGN: "1500",
};

/** Token symbol -> CoinGecko id; PRICE_FEED_IDS adds or overrides entries. */
export const DEFAULT_FEED_IDS: Record<string, string> = {
	BTC: "bitcoin",
	WBTC: "wrapped-bitcoin",
	ETH: "ethereum",
	WETH: "weth",
	USDC: "usd-coin",
	USDT: "tether",
	DAI: "dai",
	SOL: "solana",
	BNB: "binancecoin",
	POL: "polygon-ecosystem-token",
	MATIC: "matic-network",
	AVAX: "avalanche-2",
	TRX: "tron",
	ATOM: "cosmos",
	DOT: "polkadot",
	APT: "aptos",
	SUI: "sui",
	TON: "the-open-network",
	ARB: "arbitrum",
	OP: "optimism",
};

/** Currency codes: three letters (ISO 4217 shape). */
export const CURRENCY_CODE = /^[A-Za-z]{3}$/;
