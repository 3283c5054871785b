/**
 * Withdrawals over HTTP: settings (null → saved → read back; addresses of the eight chain types in
 * the right and the wrong mode), organization scoping, the ledger feed from settled checkouts
 * (exactly once, also when the service was down at settlement; never for simulated payments),
 * requests against the available balance, the summary against the ledger, and the sweeper's
 * internal actions.
 */
import crypto from "node:crypto";
import { CHAIN_TYPES, codecFor } from "../../lib/chains";
import type { ChainType } from "../../lib/chains/types";
import { seedFromMnemonic } from "../../lib/chains/seed";
import { availableServices, loadServiceSchema } from "../../lib/node";
import { money } from "../../lib/money";
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import type { TestNode } from "../helpers/harness";
import { until } from "../helpers/until";
import { createMerchant, IDS, intentBody, Merchant, PAYMENTS_SERVICES, setPrices, startPaymentsNode } from "../e2e/payments.helpers";

const SEED = seedFromMnemonic("abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about");
/** Chain types whose address formats differ between test and main networks. */
const MODE_SPECIFIC: ChainType[] = ["bitcoin", "polkadot", "ton"];

interface Samples {
	sandbox: string;
	live: string;
	invalid: [string, string];
}

async function samplesFor(chainType: ChainType): Promise<Samples> {
	const codec = codecFor(chainType);
	const sandbox = (await codec.deriveAddress(SEED, { isTestnet: true }, 7)).address;
	const live = (await codec.deriveAddress(SEED, { isTestnet: false }, 7)).address;
	const other = (await codecFor(chainType === "evm" ? "solana" : "evm").deriveAddress(SEED, { isTestnet: true }, 7)).address;
	// A near miss: one character short, or (base58 Solana keys decode at several lengths) a character outside the alphabet.
	const nearMiss = chainType === "solana" ? `0${sandbox.slice(1)}` : sandbox.slice(0, -1);
	return { sandbox, live, invalid: [other, nearMiss] };
}

describe("withdrawals", () => {
	let node: TestNode;
	let alice: Merchant;
	let bob: Merchant;
	const statuses: number[] = [];
	const samples = {} as Record<ChainType, Samples>;

	async function call(method: string, path: string, opts: Parameters<TestNode["http"]>[2] = {}) {
		const res = await node.http(method, path, opts);
		statuses.push(res.status);
		return res;
	}
	const txHash = () => `0x${crypto.randomBytes(32).toString("hex")}`;

	/** A sandbox intent with an open checkout paying in Sepolia ETH. */
	async function checkout(merchant: Merchant, overrides: Record<string, unknown> = {}) {
		const intent = await call("POST", "/payment_intents", { key: merchant.sandboxKey, body: intentBody(overrides) });
		expect(intent.status).toBe(200);
		const slug = intent.body.paymentLink.link.split("/pay/")[1];
		const tx = await call("POST", `/payments/links/${slug}/transactions`, { body: {} });
		expect(tx.status).toBe(201);
		return { intent: intent.body, slug, tx: tx.body as { id: string; depositAddress: string; totalAmount: string } };
	}
	/** A real (not simulated) transfer as a chain watcher reports it. */
	function pay(tx: { depositAddress: string }, amount: string) {
		return node.broker.call("transactions.credit", { networkId: IDS.sepolia, txHash: txHash(), logIndex: 0, toAddress: tx.depositAddress, tokenId: IDS.sepoliaEth, amount }) as Promise<any>;
	}
	const creditsOf = (transactionId: string) => node.app.models.LedgerEntry.findAll({ where: { kind: "credit", refType: "transaction", refId: transactionId } });
	const balance = (organizationId: string) => node.broker.call("withdrawals.balance", { organizationId, networkId: IDS.sepolia, tokenId: IDS.sepoliaEth }) as Promise<{ balance: string; reserved: string; available: string }>;

	beforeAll(async () => {
		node = await startPaymentsNode({ services: [...PAYMENTS_SERVICES, "withdrawals"], env: { WITHDRAWALS_FEED_POLL_MS: "0" } });
		alice = await createMerchant(node);
		bob = await createMerchant(node);
		await setPrices(node, { [IDS.sepoliaEth]: "2000" });
		for (const t of CHAIN_TYPES) samples[t] = await samplesFor(t);
	});
	afterAll(async () => {
		await node?.stop();
	});
	afterEach(() => {
		expect(statuses.filter(s => s >= 500)).toEqual([]);
	});

	describe("settings", () => {
		it("are null until saved, need an address, and read back with the user who saved them", async () => {
			// JSON null (spec "Withdrawal settings"), not an empty body.
			const nothing = await call("GET", "/withdrawals/settings", { token: alice.token });
			expect({ status: nothing.status, type: nothing.headers.get("content-type"), text: nothing.text }).toEqual({ status: 200, type: "application/json; charset=utf-8", text: "null" });
			const none = await call("PUT", "/withdrawals/settings", { token: alice.token, body: { strategy: 2 } });
			expect(none.status).toBe(400);
			expect(none.body).toMatchObject({ statusCode: 400, error: "Bad Request", errors: { addresses: "required" } });
			const empty = await call("PUT", "/withdrawals/settings", { token: alice.token, body: { addresses: { evm: "" } } });
			expect(empty.body.errors).toEqual({ addresses: "required" });
			const badStrategy = await call("PUT", "/withdrawals/settings", { token: alice.token, body: { addresses: { evm: samples.evm.sandbox }, strategy: 3 } });
			expect(badStrategy.status).toBe(400);
			expect(badStrategy.body.errors).toHaveProperty("strategy");
			const unknown = await call("PUT", "/withdrawals/settings", { token: alice.token, body: { addresses: { evm: samples.evm.sandbox, dogecoin: "D123" } } });
			expect(unknown.body.errors).toEqual({ "addresses.dogecoin": "unknownChainType" });

			const saved = await call("PUT", "/withdrawals/settings", { token: alice.token, body: { addresses: { evm: samples.evm.sandbox.toLowerCase() }, isEnabled: false } });
			expect(saved.status).toBe(200);
			expect(saved.body).toMatchObject({ userId: alice.user.id, addresses: { evm: samples.evm.sandbox }, isEnabled: true, strategy: 1 });
			const read = await call("GET", "/withdrawals/settings", { token: alice.token });
			expect(read.body).toEqual(saved.body);

			// Strategy alone keeps the addresses; the last user to save is shown.
			const again = await call("PUT", "/withdrawals/settings", { token: alice.token, body: { strategy: 2 } });
			expect(again.body).toMatchObject({ id: saved.body.id, strategy: 2, addresses: { evm: samples.evm.sandbox }, userId: alice.user.id });
		});

		it("checks every chain type's address for the organization's mode", async () => {
			for (const t of CHAIN_TYPES) {
				const s = samples[t];
				const okSandbox = await call("PUT", "/withdrawals/settings", { token: bob.token, headers: { "x-organization-id": bob.sandbox.id }, body: { addresses: { [t]: s.sandbox } } });
				expect([t, okSandbox.status, okSandbox.body.addresses]).toEqual([t, 200, { [t]: s.sandbox }]);
				const okLive = await call("PUT", "/withdrawals/settings", { token: bob.token, headers: { "x-organization-id": bob.live.id }, body: { addresses: { [t]: s.live } } });
				expect([t, okLive.status, okLive.body.addresses]).toEqual([t, 200, { [t]: s.live }]);
				for (const [org, bad] of [
					[bob.sandbox.id, s.invalid[0]],
					[bob.sandbox.id, s.invalid[1]],
					[bob.live.id, s.invalid[0]],
					[bob.live.id, s.invalid[1]],
				]) {
					const res = await call("PUT", "/withdrawals/settings", { token: bob.token, headers: { "x-organization-id": org }, body: { addresses: { [t]: bad } } });
					expect([t, bad, res.status, res.body.errors]).toEqual([t, bad, 400, { [`addresses.${t}`]: "invalidAddress" }]);
				}
				// The wrong mode: a main-network address in a sandbox organization and the reverse.
				const crossed = await Promise.all([
					call("PUT", "/withdrawals/settings", { token: bob.token, headers: { "x-organization-id": bob.sandbox.id }, body: { addresses: { [t]: s.live } } }),
					call("PUT", "/withdrawals/settings", { token: bob.token, headers: { "x-organization-id": bob.live.id }, body: { addresses: { [t]: s.sandbox } } }),
				]);
				const expected = MODE_SPECIFIC.includes(t) ? 400 : 200; // EVM, Solana, Tron, Cosmos Hub and Move share one format.
				expect([t, crossed.map(r => r.status)]).toEqual([t, [expected, expected]]);
				if (expected === 400) expect(crossed[0].body.errors).toEqual({ [`addresses.${t}`]: "invalidAddress" });
			}
			const read = await call("GET", "/withdrawals/settings", { token: bob.token, headers: { "x-organization-id": bob.live.id } });
			expect(read.body.userId).toBe(bob.user.id);
		});
	});

	it("answers 404 for another organization's data", async () => {
		const asBob = { token: bob.token, headers: { "x-organization-id": alice.sandbox.id } };
		expect((await call("GET", "/withdrawals/settings", asBob)).status).toBe(404);
		expect((await call("PUT", "/withdrawals/settings", { ...asBob, body: { addresses: { evm: samples.evm.sandbox } } })).status).toBe(404);
		expect((await call("GET", "/withdrawals/requests", asBob)).status).toBe(404);
		expect((await call("GET", "/withdrawals/summary", asBob)).status).toBe(404);
		const req = await call("POST", "/withdrawals/requests", { ...asBob, body: { amount: "0.1", tokenId: IDS.sepoliaEth, sourceNetworkId: IDS.sepolia, address: samples.evm.sandbox, strategy: 1 } });
		expect(req.status).toBe(404);
		expect((await call("GET", "/withdrawals/settings", { token: alice.token, headers: { "x-organization-id": "not-a-uuid" } })).status).toBe(404);
		// API keys are not for withdrawals.
		expect((await call("GET", "/withdrawals/settings", { key: alice.sandboxKey })).status).toBe(401);
	});

	describe("ledger feed", () => {
		it("credits a real settled checkout once, however often it is reported", async () => {
			const { tx } = await checkout(alice);
			const out = await pay(tx, "0.5");
			expect(out.transaction).toMatchObject({ status: "completed", simulated: false });
			// The fast path (payments.transaction.completed) records it without a poll.
			await until("the credit entry", async () => (await creditsOf(tx.id)).length === 1);
			await node.broker.emit("payments.transaction.completed", { transactionId: tx.id });
			await node.broker.call("withdrawals.feed");
			await Promise.all([node.broker.call("withdrawals.feed"), node.broker.call("withdrawals.feed")]);
			const entries = await creditsOf(tx.id);
			expect(entries.map(e => ({ kind: e.kind, amount: e.amount, networkId: e.networkId, tokenId: e.tokenId, organizationId: e.organizationId, mode: e.mode }))).toEqual([
				{ kind: "credit", amount: "0.5", networkId: IDS.sepolia, tokenId: IDS.sepoliaEth, organizationId: alice.sandbox.id, mode: "sandbox" },
			]);
			expect(await balance(alice.sandbox.id)).toEqual({ balance: "0.5", reserved: "0", held: "0", available: "0.5" });
		});

		it("never credits a simulated payment", async () => {
			const { intent } = await checkout(alice);
			const sim = await call("POST", `/payment_intents/${intent.id}/simulate`, { key: alice.sandboxKey });
			expect(sim.status).toBe(200);
			const settled = await node.app.models.Transaction.findAll({ where: { intentId: intent.id, status: "completed" } });
			expect(settled.map(t => t.simulated)).toEqual([true]);
			await node.broker.call("withdrawals.feed");
			expect(await creditsOf(settled[0].id)).toHaveLength(0);
			expect((await balance(alice.sandbox.id)).balance).toBe("0.5");
		});

		it("picks up a checkout settled while the withdrawals service was down, once", async () => {
			await node.broker.destroyService(node.broker.getLocalService("withdrawals")!);
			const { tx } = await checkout(alice, { amount: "0.25" });
			expect((await pay(tx, "0.25")).transaction.status).toBe("completed");
			expect(await creditsOf(tx.id)).toHaveLength(0);
			// Started again: the start-up pass reads from the durable cursor.
			await node.broker.createService(loadServiceSchema(availableServices().withdrawals));
			await node.broker.waitForServices(["withdrawals"]);
			await until("the missed credit", async () => (await creditsOf(tx.id)).length === 1);
			await node.broker.call("withdrawals.feed");
			expect((await creditsOf(tx.id)).map(e => e.amount)).toEqual(["0.25"]);
			expect((await balance(alice.sandbox.id)).balance).toBe("0.75");
		});

		it("moves the stored cursor only over checkouts older than the lag", async () => {
			const before = await node.app.models.WithdrawalFeedCursor.findByPk("transactions");
			expect(before?.completedAt ?? null).toBeNull(); // everything is younger than the 120 s lag
			node.clock.advance(10 * 60_000);
			try {
				await node.broker.call("withdrawals.feed");
				const after = (await node.app.models.WithdrawalFeedCursor.findByPk("transactions"))!;
				expect(after.completedAt).not.toBeNull();
				// Reading from the cursor again changes nothing.
				expect(await node.broker.call("withdrawals.feed")).toEqual({ recorded: 0 });
			} finally {
				node.clock.reset();
			}
		});
	});

	describe("requests", () => {
		const body = (overrides: Record<string, unknown> = {}) => ({ amount: "0.2", tokenId: IDS.sepoliaEth, sourceNetworkId: IDS.sepolia, address: samples.evm.sandbox, strategy: 1, ...overrides });

		it("are refused above the available balance, for an invalid address, and for a token not on the network", async () => {
			const { available } = await balance(alice.sandbox.id);
			const over = await call("POST", "/withdrawals/requests", { token: alice.token, body: body({ amount: money(available).plus("0.000000000000000001").toFixed() }) });
			expect(over.status).toBe(400);
			expect(over.body).toMatchObject({ statusCode: 400, errors: { amount: "insufficientBalance" } });
			const address = await call("POST", "/withdrawals/requests", { token: alice.token, body: body({ address: samples.bitcoin.sandbox }) });
			expect([address.status, address.body.errors]).toEqual([400, { address: "invalidAddress" }]);
			const token = await call("POST", "/withdrawals/requests", { token: alice.token, body: body({ tokenId: IDS.baseSepoliaUsdc }) });
			expect([token.status, token.body.errors]).toEqual([400, { tokenId: "tokenNotOnNetwork" }]);
			const live = await call("POST", "/withdrawals/requests", { token: alice.token, body: body({ sourceNetworkId: IDS.ethereum, tokenId: IDS.ethereumEth }) });
			expect([live.status, live.body.errors]).toEqual([400, { sourceNetworkId: "networkNotAllowedForMode" }]);
			const bridge = await call("POST", "/withdrawals/requests", { token: alice.token, body: body({ destinationNetworkId: IDS.baseSepolia }) });
			expect([bridge.status, bridge.body.errors]).toEqual([400, { destinationNetworkId: "bridgeRequired" }]);
			// Strategy 2 to another network: valid, but no sweeper bridges a request, so it is refused now, not failed later.
			const crossNetwork = await call("POST", "/withdrawals/requests", { token: alice.token, body: body({ destinationNetworkId: IDS.baseSepolia, strategy: 2 }) });
			expect(crossNetwork.status).toBe(400);
			expect(crossNetwork.body).toMatchObject({ statusCode: 400, error: "Bad Request", errors: { destinationNetworkId: "bridgeNotSupported" } });
			const decimals = await call("POST", "/withdrawals/requests", { token: alice.token, body: body({ amount: "-1" }) });
			expect(decimals.status).toBe(400);
			// An organization with nothing in the ledger has nothing available.
			const empty = await call("POST", "/withdrawals/requests", { token: bob.token, body: body() });
			expect(empty.body.errors).toEqual({ amount: "insufficientBalance" });
			expect(await node.app.models.WithdrawalRequest.count()).toBe(0);
		});

		it("are refused with a 400 on a network whose chain type no sweeper serves (nothing would ever pay them)", async () => {
			// Funds the ledger holds on Tron Nile: enough, but no sweeper pays a Tron request.
			const carol = await createMerchant(node);
			const nile = networkIdFor("tron-nile");
			const trx = tokenIdFor("tron-nile", "TRX");
			await node.broker.call("withdrawals.record", { organizationId: carol.sandbox.id, mode: "sandbox", networkId: nile, tokenId: trx, kind: "credit", amount: "5", refType: "transaction", refId: "tron-credit-1" });
			const tron = await call("POST", "/withdrawals/requests", { token: carol.token, body: body({ amount: "1", tokenId: trx, sourceNetworkId: nile, address: samples.tron.sandbox }) });
			expect(tron.status).toBe(400);
			expect(tron.body).toMatchObject({ statusCode: 400, error: "Bad Request", errors: { sourceNetworkId: "noSweeper" } });
			// A Bitcoin-family request needs the settings' address of its chain for the change.
			await node.broker.call("withdrawals.record", { organizationId: carol.sandbox.id, mode: "sandbox", networkId: IDS.bitcoinTestnet, tokenId: IDS.bitcoinTestnetBtc, kind: "credit", amount: "1", refType: "transaction", refId: "btc-credit-1" });
			const bitcoin = await call("POST", "/withdrawals/requests", { token: carol.token, body: body({ amount: "0.1", tokenId: IDS.bitcoinTestnetBtc, sourceNetworkId: IDS.bitcoinTestnet, address: samples.bitcoin.sandbox }) });
			expect([bitcoin.status, bitcoin.body.errors]).toEqual([400, { sourceNetworkId: "changeAddressRequired" }]);
			expect(await node.app.models.WithdrawalRequest.count()).toBe(0);
		});

		it("are accepted for a jetton (USDT) on TON: the TON sweeper pays jetton requests", async () => {
			const dave = await createMerchant(node);
			const ton = networkIdFor("ton");
			const usdt = tokenIdFor("ton", "USDT");
			await node.broker.call("withdrawals.record", { organizationId: dave.live.id, mode: "live", networkId: ton, tokenId: usdt, kind: "credit", amount: "5", refType: "transaction", refId: "ton-usdt-credit-1" });
			const res = await call("POST", "/withdrawals/requests", { token: dave.token, headers: { "x-organization-id": dave.live.id }, body: body({ amount: "2", tokenId: usdt, sourceNetworkId: ton, address: samples.ton.live }) });
			expect([res.status, res.body.errors]).toEqual([201, undefined]);
			expect(res.body).toMatchObject({ amount: "2", tokenId: usdt, sourceNetworkId: ton, status: "pending" });
			// Out of the way of the other cases' counts.
			await node.app.models.WithdrawalRequest.destroy({ where: { id: res.body.id } });
		});

		it("queue within the available balance as pending and reserve their amount", async () => {
			expect(await balance(alice.sandbox.id)).toEqual({ balance: "0.75", reserved: "0", held: "0", available: "0.75" });
			const first = await call("POST", "/withdrawals/requests", { token: alice.token, body: body({ amount: "0.5" }) });
			expect(first.status).toBe(201);
			expect(first.body).toMatchObject({ userId: alice.user.id, amount: "0.5", tokenId: IDS.sepoliaEth, sourceNetworkId: IDS.sepolia, destinationNetworkId: null, address: samples.evm.sandbox, strategy: 1, status: "pending" });
			expect(await balance(alice.sandbox.id)).toEqual({ balance: "0.75", reserved: "0.5", held: "0", available: "0.25" });
			const tooMuch = await call("POST", "/withdrawals/requests", { token: alice.token, body: body({ amount: "0.26" }) });
			expect(tooMuch.body.errors).toEqual({ amount: "insufficientBalance" });
			// Concurrent requests for the rest: exactly one fits.
			const racing = await Promise.all([1, 2, 3].map(() => call("POST", "/withdrawals/requests", { token: alice.token, body: body({ amount: "0.25" }) })));
			expect(racing.map(r => r.status).sort()).toEqual([201, 400, 400]);
			expect(await balance(alice.sandbox.id)).toEqual({ balance: "0.75", reserved: "0.75", held: "0", available: "0" });

			const list = await call("GET", "/withdrawals/requests", { token: alice.token });
			expect(list.body.map((r: { amount: string }) => r.amount)).toEqual(["0.25", "0.5"]);
			expect((await call("GET", "/withdrawals/requests", { token: alice.token, query: { limit: 1 } })).body).toHaveLength(1);
			expect((await call("GET", "/withdrawals/requests", { token: bob.token })).body).toEqual([]);

			// The worker: a final failure releases the reservation; a completion turns it into a withdrawal entry.
			const failed = (await node.broker.call("withdrawals.failRequest", { id: list.body[0].id, reason: "rpc down", final: true })) as any;
			expect(failed.request).toMatchObject({ status: "failed", reason: "rpc down", attempts: 1 });
			expect((await balance(alice.sandbox.id)).available).toBe("0.25");
			const done = (await node.broker.call("withdrawals.completeRequest", { id: first.body.id, txHash: "0xabc" })) as any;
			expect(done.request).toMatchObject({ status: "completed", txHash: "0xabc" });
			const twice = (await node.broker.call("withdrawals.completeRequest", { id: first.body.id, txHash: "0xabc" })) as any;
			expect(twice).toMatchObject({ completed: false, duplicate: true });
			expect(await balance(alice.sandbox.id)).toEqual({ balance: "0.25", reserved: "0", held: "0", available: "0.25" });
		});
	});

	describe("internal actions", () => {
		const entry = (overrides: Record<string, unknown> = {}) => ({ organizationId: alice.sandbox.id, mode: "sandbox", networkId: IDS.sepolia, tokenId: IDS.sepoliaEth, kind: "fee", amount: "-0.001", refType: "sweep", refId: "sweep-1", ...overrides });

		it("record is idempotent and checks the sign of each kind", async () => {
			const first = (await node.broker.call("withdrawals.record", entry())) as any;
			expect(first).toMatchObject({ recorded: true, duplicate: false, entry: { kind: "fee", amount: "-0.001" } });
			const again = (await node.broker.call("withdrawals.record", entry())) as any;
			expect(again).toMatchObject({ recorded: false, duplicate: true, entry: { id: first.entry.id } });
			await expect(node.broker.call("withdrawals.record", entry({ refId: "sweep-2", amount: "0.001" }))).rejects.toMatchObject({ code: 400, data: { errors: { amount: "mustBeNegative" } } });
			await expect(node.broker.call("withdrawals.record", entry({ kind: "credit", refId: "x", amount: "-1" }))).rejects.toMatchObject({ code: 400 });
			await expect(node.broker.call("withdrawals.record", entry({ amount: "-0.001e3" }))).rejects.toMatchObject({ code: 422 });
			await expect(node.broker.call("withdrawals.record", entry({ tokenId: IDS.baseSepoliaUsdc, refId: "x2" }))).rejects.toMatchObject({ code: 400 });
			await node.broker.call("withdrawals.record", entry({ kind: "sweep", amount: "-0.1", refId: "sweep-1" }));
			expect((await balance(alice.sandbox.id)).balance).toBe("0.149");
		});

		it("destination prefers the payment's own address, then the settings, else null", async () => {
			const own = (await codecFor("evm").deriveAddress(SEED, { isTestnet: true }, 8)).address;
			const { tx } = await checkout(alice, { withdrawal_addresses: { evm: own } });
			expect(await node.broker.call("withdrawals.destination", { organizationId: alice.sandbox.id, chainType: "evm", transactionId: tx.id })).toEqual({ address: own, source: "payment" });
			expect(await node.broker.call("withdrawals.destination", { organizationId: alice.sandbox.id, chainType: "evm" })).toEqual({ address: samples.evm.sandbox, source: "settings" });
			expect(await node.broker.call("withdrawals.destination", { organizationId: alice.sandbox.id, chainType: "solana", transactionId: tx.id })).toBeNull();
			await expect(node.broker.call("withdrawals.destination", { organizationId: bob.sandbox.id, chainType: "evm", transactionId: tx.id })).rejects.toMatchObject({ code: 400 });
		});
	});

	it("summary totals equal the ledger", async () => {
		const res = await call("GET", "/withdrawals/summary", { token: alice.token });
		expect(res.status).toBe(200);
		const rows = await node.app.models.LedgerEntry.findAll({ where: { organizationId: alice.sandbox.id } });
		const sum = (kinds: string[]) => rows.filter(r => kinds.includes(r.kind)).reduce((a, r) => a.plus(money(r.amount)), money(0));
		const usd = (d: ReturnType<typeof money>) => d.mul(2000).toDecimalPlaces(6).toFixed();
		expect(res.body.totals).toEqual({
			totalEarnedUsdc: usd(sum(["credit"])),
			totalWithdrawnUsdc: usd(sum(["sweep", "withdrawal", "refund"]).neg()),
			remainingUsdc: usd(sum(["credit", "sweep", "withdrawal", "refund", "fee"])),
		});
		// 0.75 earned, 0.5 withdrawn on request, 0.1 swept, 0.001 fee.
		expect(res.body.totals).toEqual({ totalEarnedUsdc: "1500", totalWithdrawnUsdc: "1200", remainingUsdc: "298" });
		expect(res.body.byToken).toEqual([{ tokenId: IDS.sepoliaEth, networkId: IDS.sepolia, tokenSymbol: "ETH", totalAmount: "0.149", totalUsdcValue: "298" }]);
		expect(res.body.byNetwork).toEqual([{ networkId: IDS.sepolia, networkName: expect.any(String), totalAmount: "0.149", totalUsdcValue: "298" }]);
		// Bob's summary is his own (empty), and simulated payments never reach it.
		expect((await call("GET", "/withdrawals/summary", { token: bob.token })).body).toEqual({ byNetwork: [], byToken: [], totals: { totalEarnedUsdc: "0", totalWithdrawnUsdc: "0", remainingUsdc: "0" } });
	});
});
