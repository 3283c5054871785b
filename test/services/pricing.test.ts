/**
 * Prices over HTTP: currencies, rates (either stored direction), token prices, fiat quotes, the
 * admin edits with history, cache invalidation, and the internal actions other services use.
 */
import crypto from "node:crypto";
import { startNode, TestNode } from "../helpers/harness";
import { createUserWithToken } from "../helpers/users";
import { tokenIdFor } from "../../lib/networks/catalogue";
import { currencyIdFor, seedRateIdFor } from "../../lib/pricing/catalogue";
import { seedPriceIdFor } from "../../lib/pricing/seed";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[1-8][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const USD = currencyIdFor("USD");
const EUR = currencyIdFor("EUR");
const GBP = currencyIdFor("GBP");
const JPY = currencyIdFor("JPY");
const USDC = tokenIdFor("ethereum", "USDC");
const ETH = tokenIdFor("ethereum", "ETH");
const SOL = tokenIdFor("solana", "SOL");
const BNB_USDC = tokenIdFor("bnb", "USDC"); // 18 decimals

describe("pricing", () => {
	let node: TestNode;
	let admin: string;
	let user: string;

	beforeAll(async () => {
		node = await startNode({ services: ["api", "auth", "organizations", "networks", "pricing"] });
		admin = (await createUserWithToken(node, { role: "admin" })).token;
		user = (await createUserWithToken(node)).token;
	});
	afterAll(async () => {
		await node?.stop();
	});

	const quote = (query: Record<string, string>) => node.http("GET", "/price/fiat-quote", { query });

	describe("seed", () => {
		it("seeds currencies, USD rates and stablecoin prices once, with deterministic ids", async () => {
			const { Currency, CurrencyRate, TokenPrice } = node.app.models;
			const counts = async () => [await Currency.count(), await CurrencyRate.count(), await TokenPrice.count()];
			const before = await counts();
			expect(before[0]).toBeGreaterThanOrEqual(10);
			const again = await node.broker.call("pricing.seed", {});
			expect(again).toEqual({ currencies: 0, rates: 0, prices: 0 });
			expect(await counts()).toEqual(before);
			const seedRate = await CurrencyRate.findByPk(seedRateIdFor("USD", "EUR"));
			expect(seedRate).toMatchObject({ baseCurrencyId: USD, quoteCurrencyId: EUR, rate: "0.92", source: "manual" });
			expect(await TokenPrice.findByPk(seedPriceIdFor(USDC))).toMatchObject({ tokenId: USDC, priceUsd: "1", source: "manual" });
		});
	});

	describe("GET /price/currencies", () => {
		it("lists the seeded currencies with ISO minor units", async () => {
			const res = await node.http("GET", "/price/currencies");
			expect(res.status).toBe(200);
			const codes = res.body.map((c: { code: string }) => c.code);
			expect(codes).toEqual([...codes].sort());
			for (const code of ["USD", "EUR", "GBP", "JPY", "CHF", "CAD", "AUD", "BRL", "INR", "NGN"]) expect(codes).toContain(code);
			const jpy = res.body.find((c: { code: string }) => c.code === "JPY");
			expect(jpy).toEqual({
				id: JPY,
				code: "JPY",
				name: "Japanese Yen",
				symbol: "¥",
				decimals: 0,
				isActive: true,
				createdAt: expect.any(String),
				updatedAt: expect.any(String),
			});
			expect(res.body.find((c: { code: string }) => c.code === "EUR").decimals).toBe(2);
			for (const c of res.body) expect(c.id).toMatch(UUID);
		});

		it("filters with active=true after an admin switches a currency off, and refuses other values", async () => {
			const off = await node.http("PATCH", "/price/admin/currencies/ngn", { token: admin, body: { isActive: false } });
			expect(off.status).toBe(200);
			expect(off.body).toMatchObject({ code: "NGN", isActive: false });
			try {
				const active = await node.http("GET", "/price/currencies", { query: { active: "true" } });
				expect(active.body.map((c: { code: string }) => c.code)).not.toContain("NGN");
				expect(active.body.every((c: { isActive: boolean }) => c.isActive)).toBe(true);
				const all = await node.http("GET", "/price/currencies", { query: { active: "false" } });
				expect(all.body.map((c: { code: string }) => c.code)).toContain("NGN");
				// An inactive currency cannot be quoted.
				const q = await quote({ amount: "100", currency: "NGN" });
				expect(q.status).toBe(400);
				expect(q.body.errors).toEqual({ currency: "unknownCurrency" });
			} finally {
				await node.http("PATCH", "/price/admin/currencies/NGN", { token: admin, body: { isActive: true } });
			}
			expect((await node.http("GET", "/price/currencies", { query: { active: "yes" } })).status).toBe(400);
		});

		it("USD cannot be switched off; an unknown code is 404; only admins may switch", async () => {
			const usd = await node.http("PATCH", "/price/admin/currencies/USD", { token: admin, body: { isActive: false } });
			expect(usd.status).toBe(400);
			expect(usd.body.errors).toEqual({ isActive: "usdRequired" });
			expect((await node.http("PATCH", "/price/admin/currencies/XYZ", { token: admin, body: { isActive: false } })).status).toBe(404);
			expect((await node.http("PATCH", "/price/admin/currencies/EUR", { token: user, body: { isActive: false } })).status).toBe(403);
			expect((await node.http("PATCH", "/price/admin/currencies/EUR", { body: { isActive: false } })).status).toBe(401);
		});
	});

	describe("GET /price/currency-rate/:baseId/:quoteId", () => {
		it("answers the stored direction as stored", async () => {
			const res = await node.http("GET", `/price/currency-rate/${USD}/${EUR}`);
			expect(res.status).toBe(200);
			expect(res.body).toEqual({
				id: seedRateIdFor("USD", "EUR"),
				baseCurrencyId: USD,
				quoteCurrencyId: EUR,
				rate: "0.92",
				source: "manual",
				createdAt: expect.any(String),
				inverted: false,
			});
		});

		it("answers the other direction inverted (half-up, 18 places), naming the stored row", async () => {
			const res = await node.http("GET", `/price/currency-rate/${JPY}/${USD}`);
			expect(res.status).toBe(200);
			expect(res.body).toMatchObject({ id: seedRateIdFor("USD", "JPY"), baseCurrencyId: JPY, quoteCurrencyId: USD, rate: "0.006666666666666667", inverted: true });
		});

		it("is JSON null for known currencies without a rate", async () => {
			const res = await node.http("GET", `/price/currency-rate/${EUR}/${GBP}`);
			expect(res.status).toBe(200);
			expect(res.text).toBe("null");
			expect(res.headers.get("content-type")).toMatch(/application\/json/);
		});

		it("is 404 for malformed or unknown currency ids", async () => {
			for (const path of [`/price/currency-rate/nope/${EUR}`, `/price/currency-rate/${USD}/${crypto.randomUUID()}`, `/price/currency-rate/${crypto.randomUUID()}/${USD}`]) {
				const res = await node.http("GET", path);
				expect(res.status).toBe(404);
				expect(res.body).toMatchObject({ statusCode: 404, message: "Currency not found", error: "Not Found" });
			}
		});
	});

	describe("GET /price/token/:tokenId", () => {
		it("answers the seeded stablecoin price", async () => {
			const res = await node.http("GET", `/price/token/${USDC}`);
			expect(res.status).toBe(200);
			expect(res.body).toEqual({ id: seedPriceIdFor(USDC), tokenId: USDC, priceUsd: "1", source: "manual", createdAt: expect.any(String) });
		});

		it("is JSON null for a known token without a price, 404 for a malformed or unknown one", async () => {
			const none = await node.http("GET", `/price/token/${SOL}`);
			expect(none.status).toBe(200);
			expect(none.text).toBe("null");
			expect((await node.http("GET", "/price/token/not-a-uuid")).status).toBe(404);
			const unknown = await node.http("GET", `/price/token/${crypto.randomUUID()}`);
			expect(unknown.status).toBe(404);
			expect(unknown.body.message).toBe("Token not found");
		});
	});

	describe("GET /price/fiat-quote", () => {
		it("USD: the amount itself, no rate", async () => {
			const res = await quote({ amount: "19.99", currency: "usd" });
			expect(res.status).toBe(200);
			expect(res.body).toEqual({ amountUsd: "19.99", amountUsdc: "19.99", sourceAmount: "19.99", sourceCurrency: "USD", currencyRateId: null });
		});

		it("EUR: divides by the USD->EUR rate, rounding up to 6 places", async () => {
			const res = await quote({ amount: "100", currency: "EUR" });
			expect(res.status).toBe(200);
			// 100 / 0.92 = 108.6956521739...
			expect(res.body).toEqual({ amountUsd: "108.695653", amountUsdc: "108.695653", sourceAmount: "100", sourceCurrency: "EUR", currencyRateId: seedRateIdFor("USD", "EUR") });
		});

		it("JPY: 0 decimals", async () => {
			const res = await quote({ amount: "15000", currency: "JPY" });
			expect(res.status).toBe(200);
			expect(res.body).toMatchObject({ amountUsd: "100", sourceAmount: "15000", sourceCurrency: "JPY", currencyRateId: seedRateIdFor("USD", "JPY") });
			const fraction = await quote({ amount: "100.5", currency: "JPY" });
			expect(fraction.status).toBe(400);
			expect(fraction.body.errors).toEqual({ amount: "tooManyDecimals" });
		});

		it("with a 6-decimal stablecoin: tokenAmount equals amountUsd", async () => {
			const res = await quote({ amount: "100", currency: "EUR", tokenId: USDC });
			expect(res.status).toBe(200);
			expect(res.body).toMatchObject({ amountUsd: "108.695653", tokenAmount: "108.695653", tokenSymbol: "USDC", tokenPriceUsd: "1", tokenPriceId: seedPriceIdFor(USDC) });
		});

		it("with an 18-decimal token: rounded up to 18 places", async () => {
			const set = await node.http("PUT", `/price/admin/token/${ETH}`, { token: admin, body: { priceUsd: "3000" } });
			expect(set.status).toBe(200);
			const res = await quote({ amount: "100", currency: "USD", tokenId: ETH });
			expect(res.status).toBe(200);
			expect(res.body).toMatchObject({ amountUsd: "100", tokenAmount: "0.033333333333333334", tokenSymbol: "ETH", tokenPriceUsd: "3000" });
			// Binance-Peg USDC has 18 decimals: 100 EUR = 108.695652173913043478260869... USDC, up at 18 places.
			const bnb = await quote({ amount: "100", currency: "EUR", tokenId: BNB_USDC });
			expect(bnb.status).toBe(200);
			expect(bnb.body).toMatchObject({ amountUsd: "108.695653", tokenAmount: "108.695652173913043479" });
		});

		it("validates: not a decimal, negative, zero, too many decimals, unknown currency, bad token", async () => {
			const cases: Array<[Record<string, string>, number, Record<string, string>]> = [
				[{ amount: "abc", currency: "USD" }, 400, { amount: "stringPattern" }],
				[{ amount: "-5", currency: "USD" }, 400, { amount: "stringPattern" }],
				[{ amount: "1e3", currency: "USD" }, 400, { amount: "stringPattern" }],
				[{ amount: "0", currency: "USD" }, 400, { amount: "positive" }],
				[{ amount: "10.123", currency: "USD" }, 400, { amount: "tooManyDecimals" }],
				[{ amount: "10", currency: "XYZ" }, 400, { currency: "unknownCurrency" }],
				[{ amount: "10", currency: "usdc" }, 400, { currency: "unknownCurrency" }],
				[{ amount: "10" }, 400, { currency: "required" }],
				[{ currency: "USD" }, 400, { amount: "required" }],
				[{ amount: "10", currency: "USD", tokenId: "nope" }, 400, { tokenId: "uuid" }],
			];
			for (const [query, status, errors] of cases) {
				const res = await quote(query);
				expect({ query, status: res.status, errors: res.body.errors }).toEqual({ query, status, errors });
				expect(res.body.error).toBe("Bad Request");
			}
			expect((await quote({ amount: "10", currency: "USD", tokenId: crypto.randomUUID() })).status).toBe(404);
		});

		it("refuses a token without a price (400 priceUnavailable, not a 5xx)", async () => {
			const res = await quote({ amount: "10", currency: "USD", tokenId: SOL });
			expect(res.status).toBe(400);
			expect(res.body).toMatchObject({ message: "Price unavailable", errors: { tokenId: "priceUnavailable" } });
		});

		it("refuses a currency without a rate", async () => {
			await node.app.models.CurrencyRate.destroy({ where: { quoteCurrencyId: currencyIdFor("CHF") } });
			await node.app.models.CurrencyRate.destroy({ where: { baseCurrencyId: currencyIdFor("CHF") } });
			await node.broker.cacher!.clean("pricing.**");
			const res = await quote({ amount: "10", currency: "CHF" });
			expect(res.status).toBe(400);
			expect(res.body.errors).toEqual({ currency: "rateUnavailable" });
		});

		it("treats a zero price or rate written behind its back as unavailable, never a 5xx", async () => {
			const { TokenPrice, CurrencyRate } = node.app.models;
			const later = new Date(node.clock.now().getTime() + 60_000);
			const BTC = tokenIdFor("bitcoin", "BTC");
			await TokenPrice.create({ id: crypto.randomUUID(), tokenId: BTC, priceUsd: "0", source: "manual", createdAt: later, confirmedAt: later });
			await CurrencyRate.create({ id: crypto.randomUUID(), baseCurrencyId: currencyIdFor("AUD"), quoteCurrencyId: USD, rate: "0", source: "manual", createdAt: later, confirmedAt: later });
			await node.broker.cacher!.clean("pricing.**");
			const q = await quote({ amount: "10", currency: "USD", tokenId: BTC });
			expect(q.status).toBe(400);
			expect(q.body.errors).toEqual({ tokenId: "priceUnavailable" });
			const aud = await quote({ amount: "10", currency: "AUD" });
			expect(aud.status).toBe(400);
			expect(aud.body.errors).toEqual({ currency: "rateUnavailable" });
			expect((await node.http("GET", `/price/currency-rate/${USD}/${currencyIdFor("AUD")}`)).text).toBe("null");
			expect(await node.broker.call("pricing.tokenPriceUsd", { tokenId: BTC })).toBeNull();
		});

		it("speaks Spanish when asked", async () => {
			const res = await node.http("GET", "/price/fiat-quote", { query: { amount: "10", currency: "XYZ" }, headers: { "x-custom-lang": "es" } });
			expect(res.body.message).toBe("Moneda desconocida");
		});
	});

	describe("admin edits", () => {
		it("needs an admin bearer token", async () => {
			const body = { priceUsd: "2" };
			expect((await node.http("PUT", `/price/admin/token/${USDC}`, { body })).status).toBe(401);
			const forbidden = await node.http("PUT", `/price/admin/token/${USDC}`, { token: user, body });
			expect(forbidden.status).toBe(403);
			const rate = await node.http("PUT", "/price/admin/currency-rate", { token: user, body: { baseCode: "USD", quoteCode: "EUR", rate: "2" } });
			expect(rate.status).toBe(403);
			expect((await node.http("GET", `/price/token/${USDC}`)).body.priceUsd).toBe("1");
		});

		it("keeps history: every edit is a new row and reads answer the newest", async () => {
			const a = await node.http("PUT", `/price/admin/token/${SOL}`, { token: admin, body: { priceUsd: "150.25" } });
			const b = await node.http("PUT", `/price/admin/token/${SOL}`, { token: admin, body: { priceUsd: "151.000000000000000001" } });
			expect(a.status).toBe(200);
			expect(b.status).toBe(200);
			expect(b.body).toMatchObject({ tokenId: SOL, priceUsd: "151.000000000000000001", source: "manual" });
			expect(b.body.id).not.toBe(a.body.id);
			expect(new Date(b.body.createdAt).getTime()).toBeGreaterThan(new Date(a.body.createdAt).getTime());
			const read = await node.http("GET", `/price/token/${SOL}`);
			expect(read.body).toEqual(b.body);
			expect(await node.app.models.TokenPrice.count({ where: { tokenId: SOL } })).toBe(2);
		});

		it("validates price edits", async () => {
			for (const priceUsd of ["0", "abc", "-1", "1.0000000000000000001"]) {
				const res = await node.http("PUT", `/price/admin/token/${SOL}`, { token: admin, body: { priceUsd } });
				expect(res.status).toBe(400);
				expect(Object.keys(res.body.errors)).toEqual(["priceUsd"]);
			}
			expect((await node.http("PUT", `/price/admin/token/${SOL}`, { token: admin, body: { priceUsd: 5 } })).status).toBe(400);
			expect((await node.http("PUT", `/price/admin/token/${crypto.randomUUID()}`, { token: admin, body: { priceUsd: "5" } })).status).toBe(404);
			expect((await node.http("PUT", "/price/admin/token/nope", { token: admin, body: { priceUsd: "5" } })).status).toBe(404);
		});

		it("edits a rate in the other direction; quotes and reads follow the newest row", async () => {
			const res = await node.http("PUT", "/price/admin/currency-rate", { token: admin, body: { baseCode: "eur", quoteCode: "USD", rate: "1.1" } });
			expect(res.status).toBe(200);
			expect(res.body).toMatchObject({ baseCurrencyId: EUR, quoteCurrencyId: USD, rate: "1.1", source: "manual", inverted: false });
			const q = await quote({ amount: "100", currency: "EUR" });
			expect(q.body).toMatchObject({ amountUsd: "110", currencyRateId: res.body.id });
			const usdEur = await node.http("GET", `/price/currency-rate/${USD}/${EUR}`);
			expect(usdEur.body).toMatchObject({ id: res.body.id, rate: "0.909090909090909091", inverted: true });
			// The seed row is history, not gone.
			expect(await node.app.models.CurrencyRate.findByPk(seedRateIdFor("USD", "EUR"))).not.toBeNull();
		});

		it("validates rate edits", async () => {
			const put = (body: Record<string, unknown>) => node.http("PUT", "/price/admin/currency-rate", { token: admin, body });
			expect((await put({ baseCode: "USD", quoteCode: "XYZ", rate: "1" })).body.errors).toEqual({ quoteCode: "unknownCurrency" });
			expect((await put({ baseCode: "USD", quoteCode: "usd", rate: "1" })).body.errors).toEqual({ quoteCode: "sameCurrency" });
			expect((await put({ baseCode: "USD", quoteCode: "GBP", rate: "0" })).body.errors).toEqual({ rate: "positive" });
			expect((await put({ baseCode: "USD", quoteCode: "GBP", rate: "1,2" })).body.errors).toEqual({ rate: "stringPattern" });
			expect((await put({ baseCode: "USD", quoteCode: "GBP" })).body.errors).toEqual({ rate: "required" });
		});

		it("cleans the cache: reads are cached, an edit shows at once", async () => {
			const first = await node.http("GET", `/price/token/${USDC}`);
			expect(first.body.priceUsd).toBe("1");
			// A row written behind the service's back is not seen while the cached read lives...
			await node.app.models.TokenPrice.create({ id: crypto.randomUUID(), tokenId: USDC, priceUsd: "0.5", source: "manual", createdAt: new Date(node.clock.now().getTime() + 1000), confirmedAt: node.clock.now() });
			expect((await node.http("GET", `/price/token/${USDC}`)).body.priceUsd).toBe("1");
			expect((await quote({ amount: "10", currency: "USD", tokenId: USDC })).body.tokenAmount).toBe("10");
			// ...an edit through the service cleans it, and every read sees the edit.
			node.clock.advance(5000);
			const edit = await node.http("PUT", `/price/admin/token/${USDC}`, { token: admin, body: { priceUsd: "0.998" } });
			expect(edit.status).toBe(200);
			expect((await node.http("GET", `/price/token/${USDC}`)).body).toEqual(edit.body);
			expect((await quote({ amount: "10", currency: "USD", tokenId: USDC })).body.tokenAmount).toBe("10.020041");
		});
	});

	describe("internal actions", () => {
		it("tokenPriceUsd: the fresh price or null", async () => {
			const price = (await node.broker.call("pricing.tokenPriceUsd", { tokenId: ETH })) as { priceUsd: string; source: string; updatedAt: string };
			expect(price).toMatchObject({ priceUsd: "3000", source: "manual" });
			expect(new Date(price.updatedAt).toISOString()).toBe(price.updatedAt);
			expect(await node.broker.call("pricing.tokenPriceUsd", { tokenId: tokenIdFor("bitcoin", "BTC") })).toBeNull();
			expect(await node.broker.call("pricing.tokenPriceUsd", { tokenId: "nope" })).toBeNull();
		});

		it("fiatQuote: the same quote as over HTTP", async () => {
			const viaCall = await node.broker.call("pricing.fiatQuote", { amount: "15000", currency: "jpy", tokenId: ETH });
			const viaHttp = await quote({ amount: "15000", currency: "jpy", tokenId: ETH });
			expect(viaCall).toEqual(viaHttp.body);
			expect(viaCall).toMatchObject({ amountUsd: "100", tokenAmount: "0.033333333333333334" });
		});

		it("convert: between tokens by USD price, rounded up to the target's decimals", async () => {
			await node.http("PUT", `/price/admin/token/${USDC}`, { token: admin, body: { priceUsd: "1" } });
			const toEth = await node.broker.call("pricing.convert", { amount: "100", fromTokenId: USDC, toTokenId: ETH });
			expect(toEth).toEqual({ amount: "0.033333333333333334", fromTokenId: USDC, toTokenId: ETH, fromPriceUsd: "1", toPriceUsd: "3000" });
			const toUsdc = await node.broker.call("pricing.convert", { amount: "0.000000000000000001", fromTokenId: ETH, toTokenId: USDC });
			expect(toUsdc).toMatchObject({ amount: "0.000001" });
			expect(await node.broker.call("pricing.convert", { amount: "1.5", fromTokenId: ETH, toTokenId: ETH })).toMatchObject({ amount: "1.5" });
			await expect(node.broker.call("pricing.convert", { amount: "1.0000001", fromTokenId: USDC, toTokenId: ETH })).rejects.toMatchObject({ code: 400, data: { errors: { amount: "tooManyDecimals" } } });
			await expect(node.broker.call("pricing.convert", { amount: "1", fromTokenId: USDC, toTokenId: tokenIdFor("bitcoin", "BTC") })).rejects.toMatchObject({
				code: 400,
				data: { errors: { toTokenId: "priceUnavailable" } },
			});
			await expect(node.broker.call("pricing.convert", { amount: "1", fromTokenId: USDC, toTokenId: crypto.randomUUID() })).rejects.toMatchObject({ code: 404 });
		});

		it("internal actions have no route", async () => {
			expect((await node.http("GET", "/pricing/latestPrice", { query: { tokenId: ETH } })).status).toBe(404);
			expect((await node.http("POST", "/pricing/configureFeed", { body: { feed: "coingecko" } })).status).toBe(404);
		});
	});
});
