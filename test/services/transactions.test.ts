/**
 * Checkout transactions: the credit path (idempotency on network + txHash + logIndex, partial and
 * full payment, over-payment, other tokens, confirmations, concurrency, events), the payment
 * window, the payer's PATCH operations, and the public and merchant reads.
 */
import type { Context } from "moleculer";
import { TestNode } from "../helpers/harness";
import { watchNetworks } from "../helpers/watched";
import { until } from "../helpers/until";
import { createMerchant, IDS, intentBody, Merchant, setPrices, startPaymentsNode } from "../e2e/payments.helpers";
import type { CreditResult } from "../../services/transactions.service";
import { up } from "../../models/migrations/0017-kept-confirmations";

describe("transactions", () => {
	let node: TestNode;
	let alice: Merchant;
	let bob: Merchant;
	const statuses: number[] = [];
	const heard: Array<{ name: string; params: any }> = [];

	async function call(method: string, path: string, opts: Parameters<TestNode["http"]>[2] = {}) {
		const res = await node.http(method, path, opts);
		statuses.push(res.status);
		return res;
	}
	/** An intent with an open checkout in its own token. */
	async function intentWithCheckout(overrides: Record<string, unknown> = {}, checkoutBody: Record<string, unknown> = {}) {
		const intent = await call("POST", "/payment_intents", { key: alice.sandboxKey, body: intentBody(overrides) });
		expect(intent.status).toBe(200);
		const slug = intent.body.paymentLink.link.split("/pay/")[1];
		const tx = await call("POST", `/payments/links/${slug}/transactions`, { body: checkoutBody });
		expect(tx.status).toBe(201);
		return { intent: intent.body, slug, tx: tx.body };
	}
	function credit(tx: { depositAddress: string; payerTokenId?: string }, params: Partial<Record<string, unknown>> = {}): Promise<CreditResult> {
		return node.broker.call("transactions.credit", {
			networkId: IDS.sepolia,
			txHash: `0x${Math.random().toString(16).slice(2).padEnd(64, "0")}`,
			logIndex: 0,
			toAddress: tx.depositAddress,
			tokenId: tx.payerTokenId ?? IDS.sepoliaEth,
			amount: "0.5",
			...params,
		});
	}
	const intentStatus = async (id: string) => (await call("GET", `/payment_intents/${id}`, { key: alice.sandboxKey })).body.status;

	beforeAll(async () => {
		node = await startPaymentsNode();
		node.broker.createService({
			name: "payments-spy",
			events: {
				"payments.transaction.completed"(ctx: Context<any>) {
					heard.push({ name: String(ctx.eventName), params: ctx.params });
				},
				"payment_intent.*"(ctx: Context<any>) {
					heard.push({ name: String(ctx.eventName), params: ctx.params });
				},
			},
		});
		alice = await createMerchant(node);
		bob = await createMerchant(node);
		await setPrices(node, { [IDS.sepoliaEth]: "2000", [IDS.sepoliaUsdc]: "1", [IDS.baseSepoliaUsdc]: "1" });
		// The live checkout below pays on Ethereum: a live payment needs a watcher following its network (test/helpers/watched.ts).
		await watchNetworks(node, ["ethereum"]);
	});
	afterAll(async () => {
		await node?.stop();
	});
	afterEach(() => {
		expect(statuses.filter(s => s >= 500)).toEqual([]);
	});

	describe("transactions.credit", () => {
		it("counts the same transfer once", async () => {
			const { tx, intent } = await intentWithCheckout();
			const first = await credit(tx, { txHash: "0xsame", logIndex: 3, amount: "0.2" });
			expect(first).toMatchObject({ credited: true, duplicate: false, counted: true, transaction: { status: "pending", amountReceived: "0.2" } });
			const again = await credit(tx, { txHash: "0xsame", logIndex: 3, amount: "0.2" });
			expect(again).toMatchObject({ credited: false, duplicate: true, reason: "duplicate", transaction: { amountReceived: "0.2" } });
			// Another log of the same transaction is another transfer.
			const other = await credit(tx, { txHash: "0xsame", logIndex: 4, amount: "0.1" });
			expect(other.transaction?.amountReceived).toBe("0.3");
			expect(await node.app.models.TransactionCredit.count({ where: { transactionId: tx.id } })).toBe(2);
			expect(await intentStatus(intent.id)).toBe("processing");
		});

		it("keeps a partial payment pending (intent processing, one event) and completes when the rest arrives", async () => {
			heard.length = 0;
			const { tx, intent, slug } = await intentWithCheckout();
			const part = await credit(tx, { amount: "0.1" });
			expect(part.transaction).toMatchObject({ status: "pending", amountReceived: "0.1", totalAmount: "0.5" });
			expect(await intentStatus(intent.id)).toBe("processing");
			const more = await credit(tx, { amount: "0.1" });
			expect(more.transaction?.amountReceived).toBe("0.2");
			const rest = await credit(tx, { amount: "0.3", txHash: "0xfinal" });
			expect(rest.transaction).toMatchObject({ status: "completed", amountReceived: "0.5", overpaidAmount: "0", hash: "0xfinal", simulated: false });
			const read = await call("GET", `/payment_intents/${intent.id}`, { key: alice.sandboxKey });
			expect(read.body).toMatchObject({ status: "succeeded", latestTransaction: { id: tx.id, status: "completed", hash: "0xfinal", amount: "0.5" } });
			expect((await call("GET", `/pay/${slug}`)).body.status).toBe("completed");

			const events = (await node.app.models.OutboxEvent.findAll({ where: { organizationId: alice.sandbox.id } })).filter(e => e.payload.id === intent.id);
			expect(events.map(e => e.type).sort()).toEqual(["payment_intent.completed", "payment_intent.processing"]);
			const completed = events.find(e => e.type === "payment_intent.completed")!;
			expect(completed.payload).toMatchObject({ status: "completed", latestTransaction: { id: tx.id, status: "completed", hash: "0xfinal", amount: "0.5", currency: "eth" } });
			// The fast path: Moleculer events after the commit, carrying the outbox ids.
			const wanted = ["payment_intent.processing", "payment_intent.completed", "payments.transaction.completed"];
			await until("the fast-path events", () => wanted.every(w => heard.some(h => h.name === w)), 20_000, () => heard.map(h => h.name).join(", "));
			const fast = heard.find(h => h.name === "payment_intent.completed")!.params;
			expect(fast).toMatchObject({ id: completed.id, type: "payment_intent.completed", livemode: false, apiKeyId: alice.sandboxKey.id, data: { object: { id: intent.id, status: "completed" } } });
			expect(heard.find(h => h.name === "payments.transaction.completed")!.params).toMatchObject({ transactionId: tx.id, intentId: intent.id, simulated: false, mode: "sandbox" });
		});

		it("completes on over-payment and records the excess", async () => {
			const { tx } = await intentWithCheckout();
			const out = await credit(tx, { amount: "0.500000000000000001" });
			expect(out.transaction).toMatchObject({ status: "completed", amountReceived: "0.500000000000000001", overpaidAmount: "0.000000000000000001" });
			const late = await credit(tx, { amount: "1" });
			expect(late.transaction).toMatchObject({ status: "completed", amountReceived: "1.500000000000000001", overpaidAmount: "1.000000000000000001" });
		});

		it("records other tokens without counting them, refuses unconfirmed transfers, and ignores unknown addresses", async () => {
			const { tx } = await intentWithCheckout();
			const usdc = await credit(tx, { tokenId: IDS.sepoliaUsdc, amount: "1000" });
			expect(usdc).toMatchObject({ credited: true, counted: false, transaction: { status: "pending", amountReceived: "0" } });
			const early = await credit(tx, { confirmations: 1 });
			expect(early).toEqual({ credited: false, duplicate: false, reason: "insufficientConfirmations", requiredConfirmations: 3 });
			const confirmed = await credit(tx, { confirmations: 3, amount: "0.5" });
			expect(confirmed.transaction?.status).toBe("completed");
			expect(await credit({ depositAddress: "0x52908400098527886E0F7030069857D2E4169EE7" })).toEqual({ credited: false, duplicate: false, reason: "unknownAddress" });
			expect(await credit({ depositAddress: "not an address" })).toEqual({ credited: false, duplicate: false, reason: "unknownAddress" });
			// The address is matched in any case the chain accepts.
			const { tx: tx2 } = await intentWithCheckout();
			expect((await credit(tx2, { toAddress: tx2.depositAddress.toLowerCase() })).credited).toBe(true);
			// The wrong network for the address: not ours.
			expect(await credit(tx2, { networkId: IDS.baseSepolia, tokenId: IDS.baseSepoliaUsdc })).toMatchObject({ credited: false, reason: "unknownAddress" });
		});

		it("keeps the confirmation count after the credit: the count the credited transfers had (the least), not null", async () => {
			const getTx = async (id: string) => (await call("GET", `/payments/transactions/${id}`)).body;
			// Seen confirming (1 of 3), then credited at 4: the completed checkout shows 4.
			const { tx } = await intentWithCheckout();
			const transfer = { networkId: IDS.sepolia, txHash: "0xkeep1", logIndex: 0, toAddress: tx.depositAddress, tokenId: IDS.sepoliaEth, amount: "0.5" };
			await node.broker.call("transactions.detect", { ...transfer, blockHash: "0xb1", blockNumber: 10, confirmations: 1 });
			expect(await getTx(tx.id)).toMatchObject({ status: "pending", amountConfirming: "0.5", confirmations: 1, requiredConfirmations: 3 });
			expect((await credit(tx, { ...transfer, blockHash: "0xb1", confirmations: 4 })).transaction).toMatchObject({ status: "completed", amountConfirming: "0", confirmations: 4 });
			expect(await getTx(tx.id)).toMatchObject({ status: "completed", amountReceived: "0.5", amountConfirming: "0", confirmations: 4, requiredConfirmations: 3 });

			// First seen already confirmed (no detection): two transfers, the least count shows; one still confirming wins while it confirms.
			const { tx: tx2 } = await intentWithCheckout({ amount: "1" });
			await credit(tx2, { amount: "0.5", confirmations: 7 });
			expect(await getTx(tx2.id)).toMatchObject({ status: "pending", confirmations: 7 });
			await node.broker.call("transactions.detect", { networkId: IDS.sepolia, txHash: "0xkeep2", logIndex: 0, blockHash: "0xb2", blockNumber: 11, toAddress: tx2.depositAddress, tokenId: IDS.sepoliaEth, amount: "0.5", confirmations: 2 });
			expect(await getTx(tx2.id)).toMatchObject({ amountConfirming: "0.5", confirmations: 2 });
			await credit(tx2, { txHash: "0xkeep2", blockHash: "0xb2", amount: "0.5", confirmations: 3 });
			expect(await getTx(tx2.id)).toMatchObject({ status: "completed", amountConfirming: "0", confirmations: 3 });
			// Another token's transfer (not counted) changes nothing.
			await credit(tx2, { tokenId: IDS.sepoliaUsdc, amount: "5", confirmations: 50 });
			expect((await getTx(tx2.id)).confirmations).toBe(3);

			// No count reported (a simulation): null, as before.
			const { tx: tx3 } = await intentWithCheckout();
			await credit(tx3, { simulated: true });
			expect(await getTx(tx3.id)).toMatchObject({ status: "completed", confirmations: null });
		});

		it("migration 0017 gives checkouts credited before it the count their credits had", async () => {
			const { tx } = await intentWithCheckout({ amount: "1" });
			await credit(tx, { amount: "0.5", confirmations: 6 });
			await credit(tx, { amount: "0.5", confirmations: 4 });
			const { tx: simulated } = await intentWithCheckout();
			await credit(simulated, { simulated: true });
			const { tx: confirming } = await intentWithCheckout();
			await node.broker.call("transactions.detect", { networkId: IDS.sepolia, txHash: "0xmig", logIndex: 0, blockHash: "0xbm", blockNumber: 12, toAddress: confirming.depositAddress, tokenId: IDS.sepoliaEth, amount: "0.1", confirmations: 2 });
			// As the older code left them: null once nothing was confirming.
			await node.app.models.Transaction.update({ confirmations: null }, { where: { id: [tx.id, simulated.id] } });
			await up({ context: node.app.sequelize.getQueryInterface() });
			const shown = async (id: string) => (await call("GET", `/payments/transactions/${id}`)).body.confirmations;
			expect(await shown(tx.id)).toBe(4);
			expect(await shown(simulated.id)).toBeNull();
			expect(await shown(confirming.id)).toBe(2);
		});

		it("counts concurrent transfers to one checkout, each once", async () => {
			const { tx, intent } = await intentWithCheckout({ amount: "1" });
			const results = await Promise.all(Array.from({ length: 8 }, (_, i) => credit(tx, { txHash: `0xc${i}`, amount: "0.125" })));
			expect(results.every(r => r.credited)).toBe(true);
			const dup = await Promise.all(Array.from({ length: 4 }, () => credit(tx, { txHash: "0xc0", amount: "0.125" })));
			expect(dup.every(r => r.duplicate)).toBe(true);
			const after = await call("GET", `/payments/transactions/${tx.id}`);
			expect(after.body).toMatchObject({ status: "completed", amountReceived: "1" });
			expect(await intentStatus(intent.id)).toBe("succeeded");
			expect((await node.app.models.OutboxEvent.findAll({ where: { type: "payment_intent.completed" } })).filter(e => e.payload.id === intent.id)).toHaveLength(1);
		});

		it("stops at confirmed when the intent was canceled meanwhile, and never simulates a live checkout", async () => {
			const { tx, intent } = await intentWithCheckout();
			await credit(tx, { amount: "0.1" });
			await call("POST", `/payment_intents/${intent.id}/cancel`, { key: alice.sandboxKey });
			expect((await call("GET", `/payments/transactions/${tx.id}`)).body.status).toBe("failed");
			const late = await credit(tx, { amount: "0.4" });
			expect(late.transaction).toMatchObject({ status: "confirmed", amountReceived: "0.5" });
			expect(await intentStatus(intent.id)).toBe("canceled");

			const live = await call("POST", "/payment_intents", { key: alice.liveKey, body: intentBody({ tokenId: IDS.ethereumEth, networkId: IDS.ethereum }) });
			const liveSlug = live.body.paymentLink.link.split("/pay/")[1];
			const liveTx = await call("POST", `/payments/links/${liveSlug}/transactions`, { body: {} });
			await expect(credit(liveTx.body, { networkId: IDS.ethereum, tokenId: IDS.ethereumEth, simulated: true })).rejects.toMatchObject({ code: 403, data: { code: "SIMULATION_SANDBOX_ONLY" } });
			expect((await call("GET", `/payments/transactions/${liveTx.body.id}`)).body.amountReceived).toBe("0");
		});

		it("ends the link's other checkouts when one settles", async () => {
			const { tx, slug } = await intentWithCheckout();
			const other = await call("POST", `/payments/links/${slug}/transactions`, { body: {} });
			await credit(tx, { amount: "0.5" });
			expect((await call("GET", `/payments/transactions/${other.body.id}`)).body.status).toBe("expired");
		});
	});

	describe("transactions.openAddresses", () => {
		it("answers the open checkouts' addresses of a network by keyset pages, each once, settled ones left out", async () => {
			const made = [];
			for (let i = 0; i < 5; i++) made.push((await intentWithCheckout()).tx);
			expect((await credit(made[0], { amount: "1000" })).transaction?.status).toBe("completed");
			const since = new Date(Date.now() - 3_600_000).toISOString();
			type Page = Array<{ id: string; address: string; createdAt: string }>;
			const pages: Page[] = [];
			for (let after = {}; ; ) {
				const page: Page = await node.broker.call("transactions.openAddresses", { networkId: IDS.sepolia, since, limit: 2, ...after });
				pages.push(page);
				if (page.length < 2) break;
				after = { afterCreatedAt: page[1].createdAt, afterId: page[1].id };
			}
			const got = pages.flat();
			const open = await node.app.models.Transaction.findAll({ where: { payerNetworkId: IDS.sepolia, status: ["pending", "expired", "failed"] }, raw: true });
			expect(open.length).toBeGreaterThanOrEqual(4);
			expect(pages.length).toBeGreaterThan(2);
			expect(pages.every(p => p.length <= 2)).toBe(true);
			expect(got.map(r => r.id).sort()).toEqual(open.map(r => r.id).sort());
			expect(new Set(got.map(r => r.id)).size).toBe(got.length);
			expect(got.map(r => r.address)).toEqual(expect.arrayContaining(made.slice(1).map(t => t.depositAddress)));
			expect(got.map(r => r.address)).not.toContain(made[0].depositAddress);
			await expect(node.broker.call("transactions.openAddresses", { networkId: IDS.sepolia, since: "yesterday" })).rejects.toMatchObject({ code: 400 });
		});
	});

	describe("payment window", () => {
		it("expires an unpaid checkout, sends the intent back to requires_payment_method, and still settles late funds", async () => {
			const { tx, intent } = await intentWithCheckout();
			await call("POST", `/payment_intents/${intent.id}/confirm`, { key: alice.sandboxKey, body: { client_secret: intent.clientSecret } });
			node.clock.advance(30 * 60_000 + 1000);
			try {
				const read = await call("GET", `/payments/transactions/${tx.id}`);
				expect(read.body.status).toBe("expired");
				expect(await intentStatus(intent.id)).toBe("requires_payment_method");
				const events = (await node.app.models.OutboxEvent.findAll({ where: { type: "payment_intent.requires_payment_method" } })).filter(e => e.payload.id === intent.id);
				expect(events).toHaveLength(1);
				const late = await credit(tx, { amount: "0.5" });
				expect(late.transaction?.status).toBe("completed");
				expect(await intentStatus(intent.id)).toBe("succeeded");
			} finally {
				node.clock.reset();
			}
		});

		it("fails a partly paid checkout at the end of its window", async () => {
			const { tx } = await intentWithCheckout();
			await credit(tx, { amount: "0.2" });
			node.clock.advance(31 * 60_000);
			try {
				expect((await call("GET", `/payments/transactions/${tx.id}`)).body).toMatchObject({ status: "failed", amountReceived: "0.2" });
			} finally {
				node.clock.reset();
			}
		});
	});

	describe("payer changes", () => {
		it("changes the payer token (same network keeps the address) and support, re-quoting", async () => {
			const { tx } = await intentWithCheckout({ amount: "100", currency: "usdc", tokenId: IDS.sepoliaUsdc });
			const payer = await call("PATCH", `/payments/transactions/${tx.id}/payer`, { body: { payerTokenId: IDS.sepoliaEth, payerNetworkId: IDS.sepolia } });
			expect(payer.status).toBe(200);
			expect(payer.body).toMatchObject({ payerTokenId: IDS.sepoliaEth, amount: "0.05", totalAmount: "0.05", depositAddress: tx.depositAddress });
			const support = await call("PATCH", `/payments/transactions/${tx.id}/support`, { body: { supportPercent: 2.5 } });
			expect(support.body).toMatchObject({ supportPercent: 2.5, amount: "0.05", totalAmount: "0.05125" });
			const bridged = await call("PATCH", `/payments/transactions/${tx.id}/payer`, { body: { payerTokenId: IDS.baseSepoliaUsdc, payerNetworkId: IDS.baseSepolia } });
			// 102.5 USDC of value: fee 0.5 + 0.1025 USD; a new network gets a new address.
			expect(bridged.body).toMatchObject({ payerNetworkId: IDS.baseSepolia, amount: "100", totalAmount: "103.1025" });
			expect(bridged.body.depositAddress).not.toBe(tx.depositAddress);
			expect((await node.app.models.DepositAddress.findOne({ where: { address: bridged.body.depositAddress, networkId: IDS.baseSepolia } }))!.transactionId).toBe(tx.id);
		});

		it("refuses changes once funds arrived or the checkout ended, and bad input", async () => {
			const { tx } = await intentWithCheckout();
			expect((await call("PATCH", `/payments/transactions/${tx.id}/support`, { body: { supportPercent: 10.5 } })).body.errors).toEqual({ supportPercent: "invalidSupportPercent" });
			expect((await call("PATCH", `/payments/transactions/${tx.id}/support`, { body: {} })).body.errors).toEqual({ supportPercent: "required" });
			expect((await call("PATCH", `/payments/transactions/${tx.id}/payer`, { body: { payerTokenId: IDS.ethereumEth, payerNetworkId: IDS.ethereum } })).body.errors).toEqual({ payerNetworkId: "networkNotAllowedForMode" });
			await credit(tx, { amount: "0.1" });
			const funded = await call("PATCH", `/payments/transactions/${tx.id}/support`, { body: { supportPercent: 1 } });
			expect(funded.status).toBe(400);
			expect(funded.body.errors).toEqual({ transaction: "fundsReceived" });
			await credit(tx, { amount: "0.4" });
			const done = await call("PATCH", `/payments/transactions/${tx.id}/payer`, { body: { payerTokenId: IDS.sepoliaUsdc, payerNetworkId: IDS.sepolia } });
			expect(done.status).toBe(400);
			expect(done.body.message).toBe("Cannot update a transaction in state completed");
		});
	});

	describe("reads", () => {
		it("shows the payer's checkout publicly without internals, and the full form", async () => {
			const { tx } = await intentWithCheckout();
			const res = await call("GET", `/payments/transactions/${tx.id}`);
			expect(Object.keys(res.body).sort()).toEqual(
				// amountConfirming / confirmations / requiredConfirmations: a transfer seen on chain while it confirms (docs/watchers.md);
				// amountReversed / reversedAt: credits a deep reorg orphaned (docs/payments.md "Reversals").
				["amount", "amountConfirming", "amountReceived", "amountReversed", "confirmations", "createdAt", "depositAddress", "expiresAt", "hash", "id", "overpaidAmount", "payerNetworkId", "payerTokenId", "paymentLinkId", "requiredConfirmations", "reversedAt", "simulated", "status", "supportPercent", "totalAmount", "updatedAt"].sort(),
			);
			const full = await call("GET", `/payments/transactions/${tx.id}/full`);
			expect(full.body.payerToken).toEqual({ id: IDS.sepoliaEth, symbol: "ETH", decimals: 18, contractAddress: "" });
			expect(full.body.payerNetwork).toMatchObject({ id: IDS.sepolia, name: "Ethereum Sepolia", chainId: 11155111 });
			expect(Object.keys(full.body.payerNetwork).sort()).toEqual(["chainId", "id", "name", "publicRpcUrls"]);
			expect((await call("GET", "/payments/transactions/00000000-0000-4000-8000-000000000000")).status).toBe(404);
			expect((await call("GET", "/payments/transactions/nope/full")).status).toBe(404);
		});

		it("lists the organization's transactions with pagination and filters, and nobody else's", async () => {
			const m = await createMerchant(node);
			const made: string[] = [];
			for (let i = 0; i < 3; i++) {
				const intent = await call("POST", "/payment_intents", { key: m.sandboxKey, body: intentBody() });
				const slug = intent.body.paymentLink.link.split("/pay/")[1];
				made.push((await call("POST", `/payments/links/${slug}/transactions`, { body: {} })).body.id);
			}
			const page = await call("GET", "/payments/transactions", { token: m.token, query: { limit: 2 } });
			expect(page.status).toBe(200);
			expect(page.body.hasNextPage).toBe(true);
			expect(page.body.data.map((t: { id: string }) => t.id)).toEqual([made[2], made[1]]);
			const rest = await call("GET", "/payments/transactions", { token: m.token, query: { limit: 2, page: 2 } });
			expect(rest.body).toMatchObject({ hasNextPage: false, data: [{ id: made[0] }] });
			expect((await call("GET", "/payments/transactions", { token: m.token, query: { status: "completed" } })).body.data).toEqual([]);
			const others = await call("GET", "/payments/transactions", { token: bob.token });
			expect(others.body.data.filter((t: { id: string }) => made.includes(t.id))).toEqual([]);
			expect((await call("GET", "/payments/transactions", { key: m.sandboxKey })).status).toBe(401);
		});
	});
});
