/**
 * Payment intents over HTTP: validation, currencies (token and fiat), tenancy, every state
 * transition the API offers (legal ones and 400s naming the state), expiry (sweep and lazy on
 * read), events in the outbox, and Idempotency-Key (replay, mismatch, concurrency, expiry).
 */
import { TestNode } from "../helpers/harness";
import { createMerchant, IDS, intentBody, Merchant, setPrices, startPaymentsNode } from "../e2e/payments.helpers";

type State = "requires_payment_method" | "requires_confirmation" | "processing" | "succeeded" | "canceled";
type Op = "update" | "confirm" | "complete" | "cancel" | "simulate";
const STATES: State[] = ["requires_payment_method", "requires_confirmation", "processing", "succeeded", "canceled"];
const OPS: Op[] = ["update", "confirm", "complete", "cancel", "simulate"];
/** decisions.md "Payment intents", written out for the test. */
const ALLOWED: Record<Op, State[]> = {
	update: ["requires_payment_method", "requires_confirmation"],
	confirm: ["requires_payment_method", "requires_confirmation"],
	complete: ["requires_payment_method", "requires_confirmation"],
	cancel: ["requires_payment_method", "requires_confirmation", "processing", "canceled"],
	simulate: ["requires_payment_method", "requires_confirmation", "processing"],
};
const VERB: Record<Op, string> = { update: "update", confirm: "confirm", complete: "complete", cancel: "cancel", simulate: "simulate a payment for" };
const AFTER: Record<Op, State | null> = { update: null, confirm: "requires_confirmation", complete: "processing", cancel: "canceled", simulate: "succeeded" };

describe("intents", () => {
	let node: TestNode;
	let alice: Merchant;
	let bob: Merchant;
	const statuses: number[] = [];

	async function call(method: string, path: string, opts: Parameters<TestNode["http"]>[2] = {}) {
		const res = await node.http(method, path, opts);
		statuses.push(res.status);
		return res;
	}
	async function create(m: Merchant, overrides: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
		const res = await call("POST", "/payment_intents", { key: m.sandboxKey, body: intentBody(overrides), headers });
		expect(res.status).toBe(200);
		return res.body;
	}
	async function intentIn(state: State) {
		const intent = await create(alice);
		const key = alice.sandboxKey;
		if (state === "requires_confirmation") await call("POST", `/payment_intents/${intent.id}/confirm`, { key, body: { client_secret: intent.clientSecret } });
		if (state === "processing") await call("POST", `/payment_intents/${intent.id}/complete`, { key });
		if (state === "succeeded") await call("POST", `/payment_intents/${intent.id}/simulate`, { key });
		if (state === "canceled") await call("POST", `/payment_intents/${intent.id}/cancel`, { key });
		expect((await call("GET", `/payment_intents/${intent.id}`, { key })).body.status).toBe(state);
		return intent;
	}
	function run(op: Op, intent: { id: string; clientSecret: string }) {
		const key = alice.sandboxKey;
		switch (op) {
			case "update":
				return call("PATCH", `/payment_intents/${intent.id}`, { key, body: { description: "changed" } });
			case "confirm":
				return call("POST", `/payment_intents/${intent.id}/confirm`, { key, body: { client_secret: intent.clientSecret } });
			default:
				return call("POST", `/payment_intents/${intent.id}/${op}`, { key });
		}
	}

	beforeAll(async () => {
		node = await startPaymentsNode();
		alice = await createMerchant(node);
		bob = await createMerchant(node);
		await setPrices(node, { [IDS.sepoliaEth]: "2000", [IDS.sepoliaUsdc]: "1" });
	});
	afterAll(async () => {
		await node?.stop();
	});
	afterEach(() => {
		expect(statuses.filter(s => s >= 500)).toEqual([]);
	});

	describe("POST /payment_intents", () => {
		it.each([
			[{ amount: undefined }, "amount", "required"],
			[{ amount: "-1" }, "amount", "stringPattern"],
			[{ amount: "0" }, "amount", "mustBePositive"],
			[{ amount: "1.0000000000000000001" }, "amount", "stringPattern"],
			[{ currency: undefined }, "currency", "required"],
			[{ currency: "zzz" }, "currency", "unsupportedCurrency"],
			[{ payment_method_types: ["card"] }, "payment_method_types", "mustIncludeCrypto"],
			[{ payment_method_types: ["crypto", "card"] }, "payment_method_types", "unsupported"],
			[{ payment_method_types: "crypto" }, "payment_method_types", "array"],
			[{ tokenId: "nope" }, "tokenId", "tokenNotFound"],
			[{ tokenId: IDS.baseSepoliaUsdc }, "tokenId", "tokenNotOnNetwork"],
			[{ networkId: IDS.ethereum, tokenId: IDS.ethereumEth }, "networkId", "networkNotAllowedForMode"],
			[{ return_url: "not a url" }, "return_url", "url"],
			[{ return_url: undefined }, "return_url", "required"],
			[{ expires_at: "2001-01-01T00:00:00Z" }, "expires_at", "mustBeFuture"],
			[{ expires_at: "tomorrow" }, "expires_at", "date"],
			[{ metadata: { big: "x".repeat(9000) } }, "metadata", "tooLarge"],
			[{ withdrawal_addresses: { evm: "0x123" } }, "withdrawal_addresses.evm", "invalidAddress"],
			[{ withdrawal_addresses: { dogecoin: "D8" } }, "withdrawal_addresses.dogecoin", "unknownChainType"],
		])("refuses %j with errors.%s = %s", async (overrides, field, code) => {
			const res = await call("POST", "/payment_intents", { key: alice.sandboxKey, body: intentBody(overrides) });
			expect(res.status).toBe(400);
			expect(res.body.errors?.[field]).toBe(code);
		});

		it("refuses more decimals than the token has", async () => {
			const res = await call("POST", "/payment_intents", { key: alice.sandboxKey, body: intentBody({ currency: "usdc", tokenId: IDS.sepoliaUsdc, amount: "1.1234567" }) });
			expect(res.status).toBe(400);
			expect(res.body.errors).toEqual({ amount: "tooManyDecimals" });
		});

		it("takes the token's symbol as currency: the amount is in token units", async () => {
			const intent = await create(alice, { currency: "USDC", tokenId: IDS.sepoliaUsdc, amount: "12.5" });
			expect(intent).toMatchObject({ currency: "usdc", amount: "12.5" });
			const row = await node.app.models.PaymentIntent.findByPk(intent.id);
			expect(row).toMatchObject({ tokenAmount: "12.5", currencyRateId: null, apiKeyId: alice.sandboxKey.id });
			const slug = intent.paymentLink.link.split("/pay/")[1];
			const link = await call("GET", `/payments/links/${slug}`);
			expect(link.body).toMatchObject({ id: intent.paymentLink.id, amount: "12.5", tokenId: IDS.sepoliaUsdc, networkId: IDS.sepolia, status: "active" });
		});

		it("converts a fiat amount with the fiat quote and keeps the rate", async () => {
			const usd = await create(alice, { currency: "usd", amount: "100" });
			expect(usd).toMatchObject({ currency: "usd", amount: "100" });
			const row = await node.app.models.PaymentIntent.findByPk(usd.id);
			expect(row).toMatchObject({ tokenAmount: "0.05", amountUsd: "100", rate: "0.0005", currencyRateId: null });
			const eur = await create(alice, { currency: "eur", amount: "92" });
			const eurRow = await node.app.models.PaymentIntent.findByPk(eur.id);
			// Seeded placeholder rate: 1 USD = 0.92 EUR, so 92 EUR = 100 USD = 0.05 ETH.
			expect(eurRow).toMatchObject({ tokenAmount: "0.05", amountUsd: "100" });
			expect(eurRow!.currencyRateId).toMatch(/^[0-9a-f-]{36}$/);
			const tooPrecise = await call("POST", "/payment_intents", { key: alice.sandboxKey, body: intentBody({ currency: "usd", amount: "1.001" }) });
			expect(tooPrecise.status).toBe(400);
			expect(tooPrecise.body.errors).toEqual({ amount: "tooManyDecimals" });
		});

		it("works with a bearer token on the organization of x-organization-id, and keeps no API key", async () => {
			const res = await call("POST", "/payment_intents", { token: alice.token, headers: { "x-organization-id": alice.sandbox.id }, body: intentBody() });
			expect(res.status).toBe(200);
			const row = await node.app.models.PaymentIntent.findByPk(res.body.id);
			expect(row).toMatchObject({ organizationId: alice.sandbox.id, apiKeyId: null, mode: "sandbox" });
			// Alice's token cannot act on Bob's organization.
			const other = await call("POST", "/payment_intents", { token: alice.token, headers: { "x-organization-id": bob.sandbox.id }, body: intentBody() });
			expect(other.status).toBe(404);
		});

		it("stores a NUL byte in description and metadata exactly and answers it back (create, link, update)", async () => {
			const description = "Order\u0000 42 \u0001'\\ $1";
			const metadata = { "key\u0000": "va\u0000lue", nested: { list: ["\u0000", "x'\u0000"] } };
			const intent = await create(alice, { description, metadata });
			expect(await node.app.models.PaymentIntent.findByPk(intent.id)).toMatchObject({ description, metadata });
			expect((await call("GET", `/payment_intents/${intent.id}`, { key: alice.sandboxKey })).status).toBe(200);
			// The intent's link carries the description as its title, and the metadata (the intent views carry neither).
			const slug = intent.paymentLink.link.split("/pay/")[1];
			const link = await call("GET", `/payments/links/${slug}`);
			expect(link.status).toBe(200);
			expect(link.body).toMatchObject({ title: description, metadata });

			const changed = await call("PATCH", `/payment_intents/${intent.id}`, { key: alice.sandboxKey, body: { description: "\u0000again", metadata: { "\u0000": "\u0000" } } });
			expect(changed.status).toBe(200);
			expect(await node.app.models.PaymentIntent.findByPk(intent.id)).toMatchObject({ description: "\u0000again", metadata: { "\u0000": "\u0000" } });
			expect((await call("GET", `/payments/links/${slug}`)).body).toMatchObject({ title: "\u0000again", metadata: { "\u0000": "\u0000" } });
		});

		it("stores the client secret only as a digest (the Idempotency-Key's stored answer is encrypted)", async () => {
			const intent = await create(alice, {}, { "Idempotency-Key": "secret-check" });
			const raw = JSON.stringify(await node.app.models.PaymentIntent.findByPk(intent.id, { raw: true }));
			expect(raw).not.toContain(intent.clientSecret.split("_secret_")[1]);
			const stored = JSON.stringify(await node.app.models.IdempotencyKey.findAll({ raw: true }));
			expect(stored).toContain("secret-check");
			expect(stored).not.toContain(intent.clientSecret.split("_secret_")[1]);
			expect(stored).not.toContain(intent.id);
			expect((await create(alice, {}, { "Idempotency-Key": "secret-check" })).clientSecret).toBe(intent.clientSecret);
			const read = await call("GET", `/payment_intents/${intent.id}`, { key: alice.sandboxKey });
			expect(JSON.stringify(read.body)).not.toContain("_secret_");
		});
	});

	describe("malformed input", () => {
		it.each([
			["POST", "/payment_intents", { ...intentBody(), metadata: [1, 2] }],
			["POST", "/payment_intents", { ...intentBody(), amount: 5 }],
			["POST", "/payment_intents", { ...intentBody(), amount: "9".repeat(41) }],
			["POST", "/payment_intents", { ...intentBody(), withdrawal_addresses: { evm: 12 } }],
			["POST", "/payment_intents", { ...intentBody(), expires_at: "2999-01-01T00:00:00Z" }],
			["POST", "/payment_intents", { ...intentBody(), payment_method_types: [] }],
			["POST", "/payment_intents", { ...intentBody(), currency: "e th" }],
		])("%s %s %j is a 4xx", async (method, path, body) => {
			const res = await call(method, path, { key: alice.sandboxKey, body });
			expect(res.status).toBeGreaterThanOrEqual(400);
			expect(res.status).toBeLessThan(500);
			expect(res.body).toMatchObject({ statusCode: res.status, error: expect.any(String) });
		});
	});

	describe("tenancy and credentials", () => {
		it("answers 404 for another organization's intent and for malformed ids", async () => {
			const intent = await create(alice);
			for (const [method, suffix, body] of [
				["GET", "", undefined],
				["PATCH", "", { description: "x" }],
				["POST", "/confirm", { client_secret: intent.clientSecret }],
				["POST", "/cancel", undefined],
				["POST", "/complete", undefined],
				["POST", "/simulate", undefined],
			] as const) {
				const res = await call(method, `/payment_intents/${intent.id}${suffix}`, { key: bob.sandboxKey, body });
				expect(res.status).toBe(404);
				expect(res.body.message).toBe("Payment intent not found");
			}
			expect((await call("GET", "/payment_intents/not-a-uuid", { key: alice.sandboxKey })).status).toBe(404);
			expect((await call("GET", `/payment_intents/${intent.id}`, { token: bob.token })).status).toBe(404);
		});

		it("takes only API keys for cancel, complete and simulate", async () => {
			const intent = await create(alice);
			for (const op of ["cancel", "complete", "simulate"]) {
				const res = await call("POST", `/payment_intents/${intent.id}/${op}`, { token: alice.token });
				expect(res.status).toBe(401);
				expect(res.body.message).toBe("This operation requires an API key");
			}
			expect((await call("GET", `/payment_intents/${intent.id}`)).status).toBe(401);
		});
	});

	describe("state machine over HTTP", () => {
		const pairs = STATES.flatMap(s => OPS.map(op => [s, op] as const));
		it.each(pairs)("%s + %s", async (state, op) => {
			const intent = await intentIn(state);
			const res = await run(op, intent);
			if (!ALLOWED[op].includes(state)) {
				expect(res.status).toBe(400);
				expect(res.body.message).toBe(`Cannot ${VERB[op]} a payment intent in state ${state}`);
				expect((await call("GET", `/payment_intents/${intent.id}`, { key: alice.sandboxKey })).body.status).toBe(state);
				return;
			}
			expect(res.status).toBe(200);
			const expected = AFTER[op] ?? state;
			expect(res.body.status).toBe(expected);
			expect((await call("GET", `/payment_intents/${intent.id}`, { key: alice.sandboxKey })).body.status).toBe(expected);
		});

		it("names the state in Spanish too", async () => {
			const intent = await intentIn("succeeded");
			const res = await call("POST", `/payment_intents/${intent.id}/cancel`, { key: alice.sandboxKey, headers: { "x-custom-lang": "es" } });
			expect(res.status).toBe(400);
			expect(res.body.message).toBe("No se puede cancelar una intención de pago en estado succeeded");
		});

		it("writes processing and canceled events with the intent object", async () => {
			const intent = await create(alice, { metadata: { cart: "c1" } });
			await call("POST", `/payment_intents/${intent.id}/complete`, { key: alice.sandboxKey });
			await call("POST", `/payment_intents/${intent.id}/cancel`, { key: alice.sandboxKey });
			const events = await node.app.models.OutboxEvent.findAll({ where: { organizationId: alice.sandbox.id } });
			const mine = events.filter(e => e.payload.id === intent.id).sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
			expect(mine.map(e => e.type)).toEqual(["payment_intent.processing", "payment_intent.canceled"]);
			for (const e of mine) {
				expect(e).toMatchObject({ livemode: false, apiKeyId: alice.sandboxKey.id, publishedAt: null });
				expect(Object.keys(e.payload).sort()).toEqual(["amount", "createdAt", "currency", "id", "metadata", "paymentMethodTypes", "status", "updatedAt"]);
				expect(e.payload.metadata).toEqual({ cart: "c1" });
			}
			expect(mine[1].payload.status).toBe("canceled");
			// The link of a canceled intent is canceled.
			const slug = intent.paymentLink.link.split("/pay/")[1];
			expect((await call("GET", `/payments/links/${slug}`)).body.status).toBe("canceled");
		});
	});

	describe("simulate under concurrency", () => {
		it("concurrent simulate credits once: 50 parallel calls settle one checkout, the others get the state error", async () => {
			const intent = await create(alice, { amount: "10", currency: "usdc", tokenId: IDS.sepoliaUsdc });
			const results = await Promise.all(Array.from({ length: 50 }, () => call("POST", `/payment_intents/${intent.id}/simulate`, { key: alice.sandboxKey })));
			expect(results.map(r => r.status).filter(s => s !== 200)).toEqual(Array(49).fill(400));
			for (const r of results.filter(r => r.status === 400)) expect(r.body.message).toBe("Cannot simulate a payment for a payment intent in state succeeded");
			const ok = results.find(r => r.status === 200)!;
			expect(ok.body).toMatchObject({ status: "succeeded", latestTransaction: { status: "completed" } });

			const { Transaction, TransactionCredit } = node.app.models;
			const txs = await Transaction.findAll({ where: { intentId: intent.id } });
			const credits = await TransactionCredit.findAll({ where: { transactionId: txs.map(t => t.id) } });
			expect(credits).toHaveLength(1);
			expect(credits[0]).toMatchObject({ transactionId: ok.body.latestTransaction.id, amount: "10", simulated: true });
			const settled = txs.filter(t => t.status === "completed");
			expect(settled).toHaveLength(1);
			expect(settled[0]).toMatchObject({ id: ok.body.latestTransaction.id, amountReceived: "10", totalAmount: "10", overpaidAmount: "0" });
			// Nothing else received funds: no checkout stopped at confirmed.
			expect(txs.filter(t => t.id !== settled[0].id && (t.amountReceived !== "0" || t.status === "confirmed" || t.status === "completed"))).toEqual([]);
			const completedEvents = (await node.app.models.OutboxEvent.findAll({ where: { type: "payment_intent.completed" } })).filter(e => e.payload.id === intent.id);
			expect(completedEvents).toHaveLength(1);
		});
	});

	describe("PATCH /payment_intents/:id", () => {
		it("updates fields and re-prices the link, answering the spec's fields", async () => {
			const intent = await create(alice);
			const res = await call("PATCH", `/payment_intents/${intent.id}`, {
				key: alice.sandboxKey,
				body: { amount: "200", currency: "usd", description: "New", metadata: { a: 1 }, return_url: "https://shop.example.com/r2", cancel_url: "https://shop.example.com/c" },
			});
			expect(res.status).toBe(200);
			expect(Object.keys(res.body).sort()).toEqual(["amount", "currency", "id", "status", "updatedAt"]);
			expect(res.body).toMatchObject({ amount: "200", currency: "usd", status: "requires_payment_method" });
			const row = await node.app.models.PaymentIntent.findByPk(intent.id);
			expect(row).toMatchObject({ tokenAmount: "0.1", description: "New", metadata: { a: 1 }, returnUrl: "https://shop.example.com/r2", cancelUrl: "https://shop.example.com/c" });
			const link = await node.app.models.PaymentLink.findByPk(intent.paymentLink.id);
			expect(link).toMatchObject({ amount: "0.1", title: "New", metadata: { a: 1 } });
		});

		it("ends open checkouts quoted for the old amount, and refuses once funds arrived", async () => {
			const intent = await create(alice);
			const slug = intent.paymentLink.link.split("/pay/")[1];
			const checkout = await call("POST", `/payments/links/${slug}/transactions`, { body: {} });
			expect(checkout.status).toBe(201);
			await call("PATCH", `/payment_intents/${intent.id}`, { key: alice.sandboxKey, body: { amount: "0.7" } });
			expect((await call("GET", `/payments/transactions/${checkout.body.id}`)).body.status).toBe("expired");

			const second = await call("POST", `/payments/links/${slug}/transactions`, { body: {} });
			expect(second.body.totalAmount).toBe("0.7");
			const credit = await node.broker.call("transactions.credit", { networkId: IDS.sepolia, txHash: "0xpartial", logIndex: 0, toAddress: second.body.depositAddress, tokenId: IDS.sepoliaEth, amount: "0.1" });
			expect(credit).toMatchObject({ credited: true });
			expect((await call("GET", `/payment_intents/${intent.id}`, { key: alice.sandboxKey })).body.status).toBe("processing");
			const refused = await call("PATCH", `/payment_intents/${intent.id}`, { key: alice.sandboxKey, body: { amount: "0.8" } });
			expect(refused.status).toBe(400);
			expect(refused.body.message).toBe("Cannot update a payment intent in state processing");
		});
	});

	describe("confirm", () => {
		it("overrides return_url and answers the pay page as the next action", async () => {
			const intent = await create(alice);
			const res = await call("POST", `/payment_intents/${intent.id}/confirm`, {
				token: alice.token,
				headers: { "x-organization-id": alice.sandbox.id },
				body: { client_secret: intent.clientSecret, return_url: "https://shop.example.com/done", payment_method_data: { type: "crypto" } },
			});
			expect(res.status).toBe(200);
			expect(res.body.nextAction.redirectToUrl.url).toBe(intent.paymentLink.link);
			expect((await node.app.models.PaymentIntent.findByPk(intent.id))!.returnUrl).toBe("https://shop.example.com/done");
			const missing = await call("POST", `/payment_intents/${intent.id}/confirm`, { key: alice.sandboxKey, body: {} });
			expect(missing.status).toBe(400);
			expect(missing.body.errors).toEqual({ client_secret: "required" });
			// Another intent's secret does not confirm this one.
			const other = await create(alice);
			const cross = await call("POST", `/payment_intents/${intent.id}/confirm`, { key: alice.sandboxKey, body: { client_secret: other.clientSecret } });
			expect(cross.status).toBe(400);
		});
	});

	describe("expiry", () => {
		it("cancels an intent past expires_at on read (reason expired), expires its link, and sends payment_intent.canceled", async () => {
			const expiresAt = new Date(node.clock.now().getTime() + 3600_000).toISOString();
			const intent = await create(alice, { expires_at: expiresAt });
			node.clock.advance(3600_000 + 1000);
			try {
				const read = await call("GET", `/payment_intents/${intent.id}`, { key: alice.sandboxKey });
				expect(read.body.status).toBe("canceled");
				const row = await node.app.models.PaymentIntent.findByPk(intent.id);
				expect(row).toMatchObject({ cancellationReason: "expired" });
				const link = await node.app.models.PaymentLink.findByPk(intent.paymentLink.id);
				expect(link!.status).toBe("expired");
				const events = await node.app.models.OutboxEvent.findAll({ where: { type: "payment_intent.canceled" } });
				expect(events.filter(e => e.payload.id === intent.id)).toHaveLength(1);
			} finally {
				node.clock.reset();
			}
		});

		it("is swept periodically too; an open checkout runs to the end of its window first", async () => {
			const expiresAt = new Date(node.clock.now().getTime() + 60_000).toISOString();
			const intent = await create(alice, { expires_at: expiresAt });
			const slug = intent.paymentLink.link.split("/pay/")[1];
			const checkout = await call("POST", `/payments/links/${slug}/transactions`, { body: {} });
			expect(checkout.status).toBe(201);
			node.clock.advance(120_000);
			try {
				await node.broker.call("intents.sweep");
				// The 30-minute payment window is still open: not expired yet.
				expect((await node.app.models.PaymentIntent.findByPk(intent.id))!.status).toBe("requires_payment_method");
				node.clock.advance(30 * 60_000);
				const swept = (await node.broker.call("intents.sweep")) as { transactions: number; intents: number };
				expect(swept.transactions).toBeGreaterThanOrEqual(1);
				expect(swept.intents).toBeGreaterThanOrEqual(1);
				expect((await node.app.models.PaymentIntent.findByPk(intent.id))!.status).toBe("canceled");
				expect((await node.app.models.Transaction.findByPk(checkout.body.id))!.status).toBe("expired");
			} finally {
				node.clock.reset();
			}
		});
	});

	describe("Idempotency-Key", () => {
		it("creates once under concurrent duplicates", async () => {
			const before = await node.app.models.PaymentIntent.count();
			const results = await Promise.all(
				Array.from({ length: 6 }, () => call("POST", "/payment_intents", { key: alice.sandboxKey, body: intentBody({ amount: "0.25" }), headers: { "Idempotency-Key": "concurrent-1" } })),
			);
			expect(results.map(r => r.status)).toEqual(Array(6).fill(200));
			expect(new Set(results.map(r => r.body.id)).size).toBe(1);
			expect(new Set(results.map(r => r.body.clientSecret)).size).toBe(1);
			expect(await node.app.models.PaymentIntent.count()).toBe(before + 1);
		});

		it("is scoped to the caller and lives 24 hours", async () => {
			const a = await create(alice, {}, { "Idempotency-Key": "shared-key" });
			const b = await create(bob, {}, { "Idempotency-Key": "shared-key" });
			expect(a.id).not.toBe(b.id);
			node.clock.advance(24 * 3600_000 + 1000);
			try {
				const c = await create(alice, {}, { "Idempotency-Key": "shared-key" });
				expect(c.id).not.toBe(a.id);
			} finally {
				node.clock.reset();
			}
		});

		it("refuses malformed keys and does not bind a key to a failed request", async () => {
			const long = await call("POST", "/payment_intents", { key: alice.sandboxKey, body: intentBody(), headers: { "Idempotency-Key": "k".repeat(256) } });
			expect(long.status).toBe(400);
			expect(long.body.errors).toEqual({ idempotencyKey: "invalid" });
			const failed = await call("POST", "/payment_intents", { key: alice.sandboxKey, body: intentBody({ currency: "zzz" }), headers: { "Idempotency-Key": "retry-me" } });
			expect(failed.status).toBe(400);
			const fixed = await call("POST", "/payment_intents", { key: alice.sandboxKey, body: intentBody({ currency: "zzz" }), headers: { "Idempotency-Key": "retry-me" } });
			expect(fixed.status).toBe(400);
			expect(fixed.body.errors).toEqual({ currency: "unsupportedCurrency" });
			const ok = await call("POST", "/payment_intents", { key: alice.sandboxKey, body: intentBody(), headers: { "Idempotency-Key": "retry-me-2" } });
			expect(ok.status).toBe(200);
		});
	});
});
