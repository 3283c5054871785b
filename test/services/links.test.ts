/**
 * Payment links over HTTP: the merchant's CRUD and list filters, tenancy, status rules, the
 * public reads, the hosted pay page's confirm and cancel, quotes (same token, conversions,
 * bridges, support), checkouts with HD deposit addresses per chain type (race-free index
 * allocation, Idempotency-Key), expiry, and the sandbox simulation.
 */
import { chainParamsFor, codecFor } from "../../lib/chains";
import type { NetworkView } from "../../lib/networks/view";
import { TestNode } from "../helpers/harness";
import { watchNetworks } from "../helpers/watched";
import { createMerchant, IDS, Merchant, setPrices, startPaymentsNode } from "../e2e/payments.helpers";

const LINK_FIELDS = ["amount", "createdAt", "expiresAt", "id", "metadata", "networkId", "slug", "status", "title", "tokenId", "updatedAt", "withdrawalAddresses"];
const QUOTE_FIELDS = [
	"bridgeFee",
	"bridgeFeeInPayerToken",
	"bridgeFeeUsd",
	"originalAmount",
	"originalAmountInPayerToken",
	"originalTokenSymbol",
	"payerNetwork",
	"payerNetworkId",
	"payerNetworkName",
	"payerToken",
	"payerTokenId",
	"payerTokenSymbol",
	"requiresBridge",
	"supportAmount",
	"supportPercent",
	"totalAmount",
];
const EVM_ADDRESS = "0x52908400098527886E0F7030069857D2E4169EE7";

describe("links", () => {
	let node: TestNode;
	let alice: Merchant;
	let bob: Merchant;
	const statuses: number[] = [];

	async function call(method: string, path: string, opts: Parameters<TestNode["http"]>[2] = {}) {
		const res = await node.http(method, path, opts);
		statuses.push(res.status);
		return res;
	}
	async function createLink(m: Merchant, body: Record<string, unknown> = {}, orgId?: string) {
		const res = await call("POST", "/payments/links", {
			token: m.token,
			headers: orgId ? { "x-organization-id": orgId } : {},
			body: { title: "T-shirt", amount: "25", tokenId: IDS.sepoliaUsdc, networkId: IDS.sepolia, ...body },
		});
		expect(res.status).toBe(201);
		return res.body;
	}
	async function network(id: string): Promise<NetworkView> {
		return node.broker.call("networks.getNetwork", { id });
	}

	beforeAll(async () => {
		node = await startPaymentsNode();
		alice = await createMerchant(node);
		bob = await createMerchant(node);
		await setPrices(node, { [IDS.sepoliaEth]: "2000", [IDS.sepoliaUsdc]: "1", [IDS.baseSepoliaUsdc]: "1", [IDS.solanaDevnetSol]: "100", [IDS.bitcoinTestnetBtc]: "50000" });
		// Live links pay on Ethereum: a live payment needs a watcher following its network (test/helpers/watched.ts).
		await watchNetworks(node, ["ethereum"]);
	});
	afterAll(async () => {
		await node?.stop();
	});
	afterEach(() => {
		expect(statuses.filter(s => s >= 500)).toEqual([]);
	});

	describe("POST /payments/links", () => {
		it("creates an active link with a pl_ slug (201)", async () => {
			const link = await createLink(alice, { metadata: { sku: "TS-1" }, withdrawalAddresses: { evm: EVM_ADDRESS.toLowerCase() } });
			expect(Object.keys(link).sort()).toEqual(LINK_FIELDS);
			expect(link).toMatchObject({ title: "T-shirt", amount: "25", status: "active", expiresAt: null, metadata: { sku: "TS-1" }, withdrawalAddresses: { evm: EVM_ADDRESS } });
			expect(link.slug).toMatch(/^pl_[0-9A-Za-z]{24}$/);
			expect(link.id).toMatch(/^[0-9a-f-]{36}$/);
		});

		it.each([
			[{ title: "" }, "title", "stringMin"],
			[{ amount: "abc" }, "amount", "stringPattern"],
			[{ amount: "0" }, "amount", "mustBePositive"],
			[{ amount: "1.1234567" }, "amount", "tooManyDecimals"],
			[{ tokenId: IDS.sepoliaEth, networkId: IDS.baseSepolia }, "tokenId", "tokenNotOnNetwork"],
			[{ tokenId: IDS.ethereumEth, networkId: IDS.ethereum }, "networkId", "networkNotAllowedForMode"],
			[{ expiresAt: "2000-01-01T00:00:00Z" }, "expiresAt", "mustBeFuture"],
			[{ withdrawalAddresses: { bitcoin: "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq" } }, "withdrawalAddresses.bitcoin", "invalidAddress"],
		])("refuses %j with errors.%s = %s", async (body, field, code) => {
			const res = await call("POST", "/payments/links", { token: alice.token, body: { title: "x", amount: "1", tokenId: IDS.sepoliaUsdc, networkId: IDS.sepolia, ...body } });
			expect(res.status).toBe(400);
			expect(res.body.errors?.[field]).toBe(code);
		});

		it("needs a bearer token and replays an Idempotency-Key", async () => {
			expect((await call("POST", "/payments/links", { body: { title: "x", amount: "1", tokenId: IDS.sepoliaUsdc, networkId: IDS.sepolia } })).status).toBe(401);
			expect((await call("POST", "/payments/links", { key: alice.sandboxKey, body: { title: "x", amount: "1", tokenId: IDS.sepoliaUsdc, networkId: IDS.sepolia } })).status).toBe(401);
			const body = { title: "Once", amount: "1", tokenId: IDS.sepoliaUsdc, networkId: IDS.sepolia };
			const first = await call("POST", "/payments/links", { token: alice.token, body, headers: { "Idempotency-Key": "link-1" } });
			const second = await call("POST", "/payments/links", { token: alice.token, body, headers: { "Idempotency-Key": "link-1" } });
			expect(first.status).toBe(201);
			expect(second.status).toBe(201);
			expect(second.body).toEqual(first.body);
			const mismatch = await call("POST", "/payments/links", { token: alice.token, body: { ...body, amount: "2" }, headers: { "Idempotency-Key": "link-1" } });
			expect(mismatch.status).toBe(400);
		});
	});

	describe("GET /payments/links", () => {
		let mine: Merchant;
		beforeAll(async () => {
			mine = await createMerchant(node);
			await createLink(mine, { title: "Blue Mug" });
			await createLink(mine, { title: "red mug 100%" });
			await createLink(mine, { title: "Poster", tokenId: IDS.sepoliaEth, amount: "0.01" });
			const paused = await createLink(mine, { title: "Paused one" });
			await call("PATCH", `/payments/links/${paused.id}`, { token: mine.token, body: { status: "inactive" } });
			const paid = await createLink(mine, { title: "Paid one" });
			await call("POST", `/payments/links/${paid.slug}/transactions`, { body: { payerEmail: "Payer@Example.com", payerAddress: EVM_ADDRESS.toLowerCase() } });
			await createLink(mine, { title: "Live link", tokenId: IDS.ethereumEth, networkId: IDS.ethereum, amount: "1" }, mine.live.id);
		});

		it("pages the caller's organization's links, newest first", async () => {
			const page1 = await call("GET", "/payments/links", { token: mine.token, query: { limit: 2 } });
			expect(page1.status).toBe(200);
			expect(page1.body.data.map((l: { title: string }) => l.title)).toEqual(["Paid one", "Paused one"]);
			expect(page1.body.hasNextPage).toBe(true);
			const page3 = await call("GET", "/payments/links", { token: mine.token, query: { limit: 2, page: 3 } });
			expect(page3.body.data.map((l: { title: string }) => l.title)).toEqual(["Blue Mug"]);
			expect(page3.body.hasNextPage).toBe(false);
			expect((await call("GET", "/payments/links", { token: mine.token, query: { limit: 101 } })).status).toBe(400);
		});

		it.each([
			[{ search: "MUG" }, ["red mug 100%", "Blue Mug"]],
			[{ search: "100%" }, ["red mug 100%"]],
			[{ search: "_" }, []],
			[{ status: "paused" }, ["Paused one"]],
			[{ tokenId: IDS.sepoliaEth }, ["Poster"]],
			[{ networkId: IDS.baseSepolia }, []],
			[{ payerEmail: "PAYER@example.com" }, ["Paid one"]],
			[{ payerAddress: EVM_ADDRESS }, ["Paid one"]],
		])("filters by %j", async (query, titles) => {
			const res = await call("GET", "/payments/links", { token: mine.token, query });
			expect(res.status).toBe(200);
			expect(res.body.data.map((l: { title: string }) => l.title)).toEqual(titles);
		});

		it.each(["search", "networkId", "tokenId", "payerEmail", "payerAddress"])("refuses a NUL byte in the %s filter with 400 (never 500)", async field => {
			const res = await call("GET", "/payments/links", { token: mine.token, query: { [field]: "a\u0000b" } });
			expect(res.status).toBe(400);
			expect(res.body).toMatchObject({ statusCode: 400, errors: { [field]: "stringPattern" } });
		});

		it("lists another of the caller's organizations by organizationId, and 404s anyone else's", async () => {
			const live = await call("GET", "/payments/links", { token: mine.token, query: { organizationId: mine.live.id } });
			expect(live.body.data.map((l: { title: string }) => l.title)).toEqual(["Live link"]);
			expect((await call("GET", "/payments/links", { token: mine.token, query: { organizationId: bob.sandbox.id } })).status).toBe(404);
			expect((await call("GET", "/payments/links", { token: mine.token, query: { organizationId: "nope" } })).status).toBe(404);
			expect((await call("GET", "/payments/links", { token: bob.token })).body.data.filter((l: { title: string }) => l.title === "Blue Mug")).toEqual([]);
		});
	});

	describe("reads by slug and the pay page", () => {
		it("shows the link publicly, without withdrawal addresses; unknown slugs are 404", async () => {
			const link = await createLink(alice, { withdrawalAddresses: { evm: EVM_ADDRESS } });
			const pub = await call("GET", `/payments/links/${link.slug}`);
			expect(pub.status).toBe(200);
			expect(pub.body).toEqual(Object.fromEntries(Object.entries(link).filter(([k]) => k !== "withdrawalAddresses")));
			const pay = await call("GET", `/pay/${link.slug}`);
			expect(Object.keys(pay.body).sort()).toEqual(["amount", "createdAt", "expiresAt", "id", "metadata", "networkId", "slug", "status", "title", "tokenId"]);
			for (const slug of ["pl_doesnotexist", "nope", "pl_%2F..", "x".repeat(100)]) expect((await call("GET", `/pay/${slug}`)).status).toBe(404);
		});

		it("confirms on the pay page with a trusted origin only", async () => {
			const link = await createLink(alice);
			const res = await call("POST", `/pay/${link.slug}/confirm`, { headers: { Origin: "https://evil.example.net" } });
			expect(res.status).toBe(200);
			const publicOrigin = new URL(node.config.publicUrl).origin;
			expect(res.body).toMatchObject({ status: "requires_confirmation", nextAction: { type: "redirect_to_url", redirectToUrl: { url: `${publicOrigin}/pay/${link.slug}/checkout` } } });
			// The pay page's intent belongs to the link's organization and has no API key (no webhooks).
			const intent = await node.app.models.PaymentIntent.findByPk(res.body.id);
			expect(intent).toMatchObject({ organizationId: alice.sandbox.id, apiKeyId: null, amount: "25", currency: "usdc", paymentLinkId: link.id });
			// Confirming again confirms the same intent.
			const again = await call("POST", `/pay/${link.slug}/confirm`, { headers: { Referer: `${publicOrigin}/pay/${link.slug}` } });
			expect(again.body.id).toBe(res.body.id);
		});

		it("cancels on the pay page: the intent (abandoned) and the link", async () => {
			const link = await createLink(alice);
			const confirmed = await call("POST", `/pay/${link.slug}/confirm`);
			const checkout = await call("POST", `/payments/links/${link.slug}/transactions`, { body: {} });
			const res = await call("POST", `/pay/${link.slug}/cancel`);
			expect(res.status).toBe(200);
			expect(Object.keys(res.body).sort()).toEqual(["id", "status", "updatedAt"]);
			expect(res.body).toMatchObject({ id: confirmed.body.id, status: "canceled" });
			expect((await node.app.models.PaymentIntent.findByPk(confirmed.body.id))!.cancellationReason).toBe("abandoned");
			expect((await call("GET", `/pay/${link.slug}`)).body.status).toBe("canceled");
			expect((await call("GET", `/payments/transactions/${checkout.body.id}`)).body.status).toBe("expired");
			expect((await call("POST", `/pay/${link.slug}/confirm`)).body.message).toBe("Cannot pay a payment link in state canceled");
			// A link that never had an intent is canceled itself.
			const plain = await createLink(alice);
			const res2 = await call("POST", `/pay/${plain.slug}/cancel`);
			expect(res2.body).toMatchObject({ id: plain.id, status: "canceled" });
		});

		it("a cancel racing the confirm that opens the link's intent never leaves that intent open on a canceled link", async () => {
			const links = [];
			for (let i = 0; i < 15; i++) links.push(await createLink(alice));
			await Promise.all(links.flatMap(link => [call("POST", `/pay/${link.slug}/confirm`), call("POST", `/pay/${link.slug}/cancel`)]));
			for (const link of links) {
				const row = (await node.app.models.PaymentLink.findByPk(link.id))!;
				expect(row.status).toBe("canceled");
				const intent = row.intentId ? await node.app.models.PaymentIntent.findByPk(row.intentId) : null;
				if (intent) expect([link.id, intent.status]).toEqual([link.id, "canceled"]);
			}
		});
	});

	describe("PATCH and DELETE /payments/links/:id", () => {
		it("stores inactive as paused, reactivates, and keeps canceled final", async () => {
			const link = await createLink(alice);
			const paused = await call("PATCH", `/payments/links/${link.id}`, { token: alice.token, body: { status: "inactive", title: "Renamed" } });
			expect(paused.body).toMatchObject({ status: "paused", title: "Renamed" });
			expect((await call("POST", `/payments/links/${link.slug}/quote`, { body: {} })).body.message).toBe("Cannot pay a payment link in state paused");
			expect((await call("PATCH", `/payments/links/${link.id}`, { token: alice.token, body: { status: "active" } })).body.status).toBe("active");
			expect((await call("PATCH", `/payments/links/${link.id}`, { token: alice.token, body: { status: "expired" } })).status).toBe(400);
			const canceled = await call("PATCH", `/payments/links/${link.id}`, { token: alice.token, body: { status: "canceled" } });
			expect(canceled.body.status).toBe("canceled");
			const after = await call("PATCH", `/payments/links/${link.id}`, { token: alice.token, body: { title: "again" } });
			expect(after.status).toBe(400);
			expect(after.body.message).toBe("Cannot update a payment link in state canceled");
		});

		it("changes the price (ending open checkouts) and refuses completed links", async () => {
			const link = await createLink(alice);
			const checkout = await call("POST", `/payments/links/${link.slug}/transactions`, { body: {} });
			const res = await call("PATCH", `/payments/links/${link.id}`, { token: alice.token, body: { amount: "0.02", tokenId: IDS.sepoliaEth } });
			expect(res.body).toMatchObject({ amount: "0.02", tokenId: IDS.sepoliaEth });
			expect((await call("GET", `/payments/transactions/${checkout.body.id}`)).body.status).toBe("expired");
			const sim = await call("POST", `/payments/links/${link.slug}/simulate`, { body: {} });
			expect(sim.status).toBe(200);
			const done = await call("PATCH", `/payments/links/${link.id}`, { token: alice.token, body: { status: "active" } });
			expect(done.status).toBe(400);
			expect(done.body.message).toBe("Cannot update a payment link in state completed");
		});

		it("is 404 for other organizations and 400 for links that belong to an intent", async () => {
			const link = await createLink(alice);
			expect((await call("PATCH", `/payments/links/${link.id}`, { token: bob.token, body: { title: "x" } })).status).toBe(404);
			expect((await call("DELETE", `/payments/links/${link.id}`, { token: bob.token })).status).toBe(404);
			expect((await call("PATCH", "/payments/links/not-a-uuid", { token: alice.token, body: { title: "x" } })).status).toBe(404);
			const intent = await call("POST", "/payment_intents", {
				key: alice.sandboxKey,
				body: { amount: "1", currency: "usdc", payment_method_types: ["crypto"], tokenId: IDS.sepoliaUsdc, networkId: IDS.sepolia, return_url: "https://x.example.com" },
			});
			const owned = await call("PATCH", `/payments/links/${intent.body.paymentLink.id}`, { token: alice.token, body: { title: "x" } });
			expect(owned.status).toBe(400);
			expect(owned.body.errors).toEqual({ paymentLink: "managedByIntent" });
		});

		it("deletes (204): gone from reads and lists", async () => {
			const link = await createLink(alice, { title: "Delete me" });
			const del = await call("DELETE", `/payments/links/${link.id}`, { token: alice.token });
			expect(del.status).toBe(204);
			expect(del.text).toBe("");
			expect((await call("GET", `/payments/links/${link.slug}`)).status).toBe(404);
			expect((await call("DELETE", `/payments/links/${link.id}`, { token: alice.token })).status).toBe(404);
			const list = await call("GET", "/payments/links", { token: alice.token, query: { search: "Delete me" } });
			expect(list.body.data).toEqual([]);
		});
	});

	describe("quotes", () => {
		it("quotes the link's own token without prices or fees", async () => {
			const link = await createLink(alice, { amount: "25" });
			const res = await call("POST", `/payments/links/${link.slug}/quote`, { body: {} });
			expect(res.status).toBe(200);
			expect(Object.keys(res.body).sort()).toEqual(QUOTE_FIELDS);
			expect(res.body).toMatchObject({
				originalAmount: "25",
				supportPercent: "0",
				supportAmount: "0",
				originalTokenSymbol: "USDC",
				payerTokenSymbol: "USDC",
				bridgeFee: "0",
				bridgeFeeUsd: "0",
				bridgeFeeInPayerToken: "0",
				originalAmountInPayerToken: "25",
				totalAmount: "25",
				requiresBridge: false,
				payerTokenId: IDS.sepoliaUsdc,
				payerNetworkId: IDS.sepolia,
				payerNetworkName: "Ethereum Sepolia",
			});
			expect(res.body.payerNetwork).toEqual(await network(IDS.sepolia));
			expect(res.body.payerToken).toMatchObject({ id: IDS.sepoliaUsdc, symbol: "USDC", decimals: 6 });
		});

		it("converts by price on the same network, with support", async () => {
			const link = await createLink(alice, { amount: "100" });
			const res = await call("POST", `/payments/links/${link.slug}/quote`, { body: { payerTokenId: IDS.sepoliaEth, supportPercent: 1 } });
			expect(res.body).toMatchObject({ supportPercent: "1", supportAmount: "1", originalAmountInPayerToken: "0.05", totalAmount: "0.0505", requiresBridge: false, payerTokenSymbol: "ETH" });
		});

		it("adds the bridge fee (0.5 USD + 10 bps) when the payer's network differs", async () => {
			const link = await createLink(alice, { amount: "100" });
			const res = await call("POST", `/payments/links/${link.slug}/quote`, { body: { payerTokenId: IDS.baseSepoliaUsdc, payerNetworkId: IDS.baseSepolia, supportPercent: "0.1" } });
			expect(res.status).toBe(200);
			// 100.1 USDC of value, fee 0.5 + 0.1001 = 0.6001 USD.
			expect(res.body).toMatchObject({ requiresBridge: true, supportAmount: "0.1", bridgeFeeUsd: "0.6001", bridgeFee: "0.6001", bridgeFeeInPayerToken: "0.6001", totalAmount: "100.7001", payerNetworkName: "Base Sepolia" });
			const sol = await call("POST", `/payments/links/${link.slug}/quote`, { body: { payerTokenId: IDS.solanaDevnetSol } });
			expect(sol.body).toMatchObject({ requiresBridge: true, originalAmountInPayerToken: "1", bridgeFeeUsd: "0.6", bridgeFeeInPayerToken: "0.006", totalAmount: "1.006" });
		});

		it.each([
			[{ supportPercent: 11 }, "supportPercent", "invalidSupportPercent"],
			[{ supportPercent: -1 }, "supportPercent", "invalidSupportPercent"],
			[{ supportPercent: "abc" }, "supportPercent", "invalidSupportPercent"],
			[{ payerTokenId: "nope" }, "payerTokenId", "tokenNotFound"],
			[{ payerNetworkId: IDS.baseSepolia }, "payerTokenId", "required"],
			[{ payerTokenId: IDS.ethereumEth }, "payerNetworkId", "networkNotAllowedForMode"],
			[{ payerTokenId: IDS.sepoliaEth, payerNetworkId: IDS.baseSepolia }, "payerTokenId", "tokenNotOnNetwork"],
		])("refuses %j with errors.%s = %s", async (body, field, code) => {
			const link = await createLink(alice);
			const res = await call("POST", `/payments/links/${link.slug}/quote`, { body });
			expect(res.status).toBe(400);
			expect(res.body.errors?.[field]).toBe(code);
		});

		it("says when a conversion has no price", async () => {
			const link = await createLink(alice);
			const bnbTestnet = (await call("GET", "/payments/networks", { query: { testnet: "true" } })).body.find((n: NetworkView) => n.name === "BNB Chain Testnet");
			const tokens = await call("GET", `/payments/networks/${bnbTestnet.id}/tokens`);
			const res = await call("POST", `/payments/links/${link.slug}/quote`, { body: { payerTokenId: tokens.body[0].id } });
			expect(res.status).toBe(400);
			expect(res.body.errors).toEqual({ payerTokenId: "priceUnavailable" });
		});
	});

	describe("checkout: POST /payments/links/:slug/transactions", () => {
		it.each([
			["evm", IDS.sepoliaUsdc, IDS.sepolia],
			["solana", IDS.solanaDevnetSol, IDS.solanaDevnet],
			["bitcoin", IDS.bitcoinTestnetBtc, IDS.bitcoinTestnet],
		])("opens a pending checkout with a fresh %s deposit address", async (chainType, payerTokenId, payerNetworkId) => {
			const link = await createLink(alice, { amount: "50" });
			const res = await call("POST", `/payments/links/${link.slug}/transactions`, { body: { payerTokenId, payerNetworkId, supportPercent: 2 } });
			expect(res.status).toBe(201);
			const tx = res.body;
			expect(tx).toMatchObject({ status: "pending", paymentLinkId: link.id, payerTokenId, payerNetworkId, supportPercent: 2, amountReceived: "0", simulated: false, hash: null });
			const net = await network(payerNetworkId);
			expect(net.chainType).toBe(chainType);
			expect(codecFor(net.chainType).normalizeAddress(tx.depositAddress, chainParamsFor(net))).toBe(tx.depositAddress);
			expect(new Date(tx.expiresAt).getTime() - new Date(tx.createdAt).getTime()).toBe(30 * 60_000);
			const row = await node.app.models.DepositAddress.findOne({ where: { transactionId: tx.id } });
			expect(row).toMatchObject({ chainType, networkId: payerNetworkId, address: tx.depositAddress });
			const second = await call("POST", `/payments/links/${link.slug}/transactions`, { body: { payerTokenId, payerNetworkId } });
			expect(second.body.depositAddress).not.toBe(tx.depositAddress);
		});

		it("refuses a payer e-mail with a NUL or other control character with 400 errors.payerEmail = email", async () => {
			const link = await createLink(alice);
			for (const payerEmail of ["x\u0000y@example.com", "x\u0001y@example.com"]) {
				const res = await call("POST", `/payments/links/${link.slug}/transactions`, { body: { payerEmail } });
				expect(res.status).toBe(400);
				expect(res.body).toMatchObject({ statusCode: 400, errors: { payerEmail: "email" } });
			}
		});

		it("allocates distinct derivation indexes under concurrency", async () => {
			const link = await createLink(alice);
			const results = await Promise.all(Array.from({ length: 8 }, () => call("POST", `/payments/links/${link.slug}/transactions`, { body: {} })));
			expect(results.map(r => r.status)).toEqual(Array(8).fill(201));
			expect(new Set(results.map(r => r.body.depositAddress)).size).toBe(8);
			const rows = await node.app.models.DepositAddress.findAll({ where: { chainType: "evm" } });
			expect(new Set(rows.map(r => r.derivationIndex)).size).toBe(rows.length);
		});

		it("replays an Idempotency-Key and bounds open checkouts", async () => {
			const link = await createLink(alice);
			const a = await call("POST", `/payments/links/${link.slug}/transactions`, { body: {}, headers: { "Idempotency-Key": "co-1" } });
			const b = await call("POST", `/payments/links/${link.slug}/transactions`, { body: {}, headers: { "Idempotency-Key": "co-1" } });
			expect(b.status).toBe(201);
			expect(b.body).toEqual(a.body);
			expect(await node.app.models.Transaction.count({ where: { paymentLinkId: link.id } })).toBe(1);
			for (let i = 1; i < 20; i++) expect((await call("POST", `/payments/links/${link.slug}/transactions`, { body: {} })).status).toBe(201);
			const over = await call("POST", `/payments/links/${link.slug}/transactions`, { body: {} });
			expect(over.status).toBe(400);
			expect(over.body.errors).toEqual({ paymentLink: "tooManyOpenCheckouts" });
		});

		it("60 concurrent checkouts never exceed the open-checkout cap (nor derive more addresses)", async () => {
			const cap = 20; // PAYMENTS_MAX_OPEN_CHECKOUTS default
			const link = await createLink(alice);
			const { DepositAddress, DepositAddressCounter, Transaction } = node.app.models;
			const indexBefore = (await DepositAddressCounter.findByPk("evm"))?.nextIndex ?? 0;
			const results = await Promise.all(Array.from({ length: 60 }, () => call("POST", `/payments/links/${link.slug}/transactions`, { body: {} })));
			const created = results.filter(r => r.status === 201);
			expect(created.length).toBe(cap);
			for (const r of results.filter(r => r.status !== 201)) {
				expect(r.status).toBe(400);
				expect(r.body.errors).toEqual({ paymentLink: "tooManyOpenCheckouts" });
			}
			const txs = await Transaction.findAll({ where: { paymentLinkId: link.id } });
			expect(txs.filter(t => t.status === "pending")).toHaveLength(cap);
			expect(await DepositAddress.count({ where: { transactionId: txs.map(t => t.id) } })).toBe(cap);
			expect((await DepositAddressCounter.findByPk("evm"))!.nextIndex - indexBefore).toBe(cap);
		});

		it("refuses an invalid payer address and a link that is not active", async () => {
			const link = await createLink(alice);
			const bad = await call("POST", `/payments/links/${link.slug}/transactions`, { body: { payerAddress: "0x123" } });
			expect(bad.status).toBe(400);
			expect(bad.body.errors).toEqual({ payerAddress: "invalidAddress" });
			await call("PATCH", `/payments/links/${link.id}`, { token: alice.token, body: { status: "paused" } });
			const paused = await call("POST", `/payments/links/${link.slug}/transactions`, { body: {} });
			expect(paused.status).toBe(400);
			expect(paused.body.message).toBe("Cannot pay a payment link in state paused");
		});
	});

	describe("expiry", () => {
		it("shows a link past expiresAt as expired (reads and filters) and refuses to pay it; a future expiresAt reopens it", async () => {
			const link = await createLink(alice, { title: "Short-lived", expiresAt: new Date(node.clock.now().getTime() + 60_000).toISOString() });
			node.clock.advance(61_000);
			try {
				expect((await call("GET", `/pay/${link.slug}`)).body.status).toBe("expired");
				const listed = await call("GET", "/payments/links", { token: alice.token, query: { status: "expired", search: "Short-lived" } });
				expect(listed.body.data.map((l: { id: string }) => l.id)).toEqual([link.id]);
				const pay = await call("POST", `/payments/links/${link.slug}/transactions`, { body: {} });
				expect(pay.body.message).toBe("Cannot pay a payment link in state expired");
				const activate = await call("PATCH", `/payments/links/${link.id}`, { token: alice.token, body: { status: "active" } });
				expect(activate.body.message).toBe("Cannot activate a payment link in state expired");
				const reopened = await call("PATCH", `/payments/links/${link.id}`, { token: alice.token, body: { expiresAt: new Date(node.clock.now().getTime() + 3600_000).toISOString() } });
				expect(reopened.body.status).toBe("active");
			} finally {
				node.clock.reset();
			}
		});
	});

	describe("POST /payments/links/:slug/simulate", () => {
		it("completes a sandbox link through the normal flow", async () => {
			const link = await createLink(alice, { amount: "10" });
			const open = await call("POST", `/payments/links/${link.slug}/transactions`, { body: { payerTokenId: IDS.sepoliaEth } });
			const res = await call("POST", `/payments/links/${link.slug}/simulate`, { body: { transactionId: open.body.id } });
			expect(res.status).toBe(200);
			expect(res.body).toMatchObject({ id: open.body.id, status: "completed", simulated: true, amountReceived: "0.005", totalAmount: "0.005" });
			expect((await call("GET", `/pay/${link.slug}`)).body.status).toBe("completed");
			const again = await call("POST", `/payments/links/${link.slug}/simulate`, { body: {} });
			expect(again.status).toBe(400);
			expect(again.body.message).toBe("Cannot pay a payment link in state completed");
		});

		/** Checks that exactly one checkout of the link was paid, once, by exactly what it owed. */
		async function expectOneSimulatedSettlement(linkId: string, settledId: string) {
			const { Transaction, TransactionCredit } = node.app.models;
			const txs = await Transaction.findAll({ where: { paymentLinkId: linkId } });
			const credits = await TransactionCredit.findAll({ where: { transactionId: txs.map(t => t.id) } });
			expect(credits.map(c => [c.transactionId, c.amount, c.simulated])).toEqual([[settledId, "10", true]]);
			const settled = txs.filter(t => t.status === "completed");
			expect(settled.map(t => t.id)).toEqual([settledId]);
			expect(settled[0]).toMatchObject({ amountReceived: "10", totalAmount: "10", overpaidAmount: "0", simulated: true });
			// No other checkout received anything (none stopped at confirmed).
			const others = txs.filter(t => t.id !== settledId);
			expect(others.filter(t => t.amountReceived !== "0" || t.status === "confirmed" || t.status === "completed")).toEqual([]);
		}

		it("concurrent simulate credits once: 50 parallel simulations (each opening a checkout) settle one, the others get the state error", async () => {
			const link = await createLink(alice, { amount: "10" });
			const results = await Promise.all(Array.from({ length: 50 }, () => call("POST", `/payments/links/${link.slug}/simulate`, { body: {} })));
			const ok = results.filter(r => r.status === 200);
			expect(ok.length).toBe(1);
			expect(ok[0].body).toMatchObject({ status: "completed", simulated: true, amountReceived: "10", overpaidAmount: "0" });
			const refused = results.filter(r => r.status !== 200);
			expect(refused.map(r => r.status)).toEqual(Array(49).fill(400));
			for (const r of refused) expect(r.body.message).toMatch(/^(Cannot pay a payment link in state completed|This payment link has too many open checkouts; wait for one to expire)$/);
			await expectOneSimulatedSettlement(link.id, ok[0].body.id);
		});

		it("concurrent simulate credits once: 50 parallel simulations of one checkout credit it once", async () => {
			const link = await createLink(alice, { amount: "10" });
			const open = await call("POST", `/payments/links/${link.slug}/transactions`, { body: {} });
			const results = await Promise.all(Array.from({ length: 50 }, () => call("POST", `/payments/links/${link.slug}/simulate`, { body: { transactionId: open.body.id } })));
			const ok = results.filter(r => r.status === 200);
			expect(ok.length).toBe(1);
			expect(ok[0].body).toMatchObject({ id: open.body.id, status: "completed", amountReceived: "10", overpaidAmount: "0" });
			const refused = results.filter(r => r.status !== 200);
			expect(refused.map(r => r.status)).toEqual(Array(49).fill(400));
			for (const r of refused) expect(r.body.message).toMatch(/^Cannot (pay a payment link in state completed|simulate a payment for a transaction in state completed)$/);
			await expectOneSimulatedSettlement(link.id, open.body.id);
		});

		it("is 403 SIMULATION_SANDBOX_ONLY for live links", async () => {
			const live = await createLink(alice, { tokenId: IDS.ethereumEth, networkId: IDS.ethereum, amount: "1" }, alice.live.id);
			const res = await call("POST", `/payments/links/${live.slug}/simulate`, { body: {} });
			expect(res.status).toBe(403);
			expect(res.body.code).toBe("SIMULATION_SANDBOX_ONLY");
			expect(await node.app.models.Transaction.count({ where: { paymentLinkId: live.id } })).toBe(0);
		});
	});
});
