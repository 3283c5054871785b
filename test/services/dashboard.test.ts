/**
 * GET /dashboard/summary over HTTP: totals, earned value (settled, non-simulated, at USD prices),
 * the zero-filled monthly series, the recent transactions, and tenancy.
 */
import { TestNode } from "../helpers/harness";
import { createMerchant, IDS, Merchant, setPrices, startPaymentsNode } from "../e2e/payments.helpers";

describe("dashboard", () => {
	let node: TestNode;
	let alice: Merchant;
	const statuses: number[] = [];

	async function call(method: string, path: string, opts: Parameters<TestNode["http"]>[2] = {}) {
		const res = await node.http(method, path, opts);
		statuses.push(res.status);
		return res;
	}
	async function paidLink(m: Merchant, body: Record<string, unknown>, opts: { simulate?: boolean; pay?: boolean } = {}) {
		const link = await call("POST", "/payments/links", { token: m.token, body: { title: "Item", tokenId: IDS.sepoliaUsdc, networkId: IDS.sepolia, ...body } });
		expect(link.status).toBe(201);
		const tx = await call("POST", `/payments/links/${link.body.slug}/transactions`, { body: {} });
		if (opts.simulate) await call("POST", `/payments/links/${link.body.slug}/simulate`, { body: { transactionId: tx.body.id } });
		else if (opts.pay !== false) {
			await node.broker.call("transactions.credit", {
				networkId: IDS.sepolia,
				txHash: `0x${link.body.id.replace(/-/g, "")}`,
				logIndex: 0,
				toAddress: tx.body.depositAddress,
				tokenId: tx.body.payerTokenId,
				amount: tx.body.totalAmount,
			});
		}
		return { link: link.body, tx: tx.body };
	}

	beforeAll(async () => {
		node = await startPaymentsNode();
		alice = await createMerchant(node);
		await setPrices(node, { [IDS.sepoliaEth]: "2000", [IDS.sepoliaUsdc]: "0.999" });
	});
	afterAll(async () => {
		await node?.stop();
	});
	afterEach(() => {
		expect(statuses.filter(s => s >= 500)).toEqual([]);
	});

	it("starts empty and zero-filled", async () => {
		const fresh = await createMerchant(node);
		const res = await call("GET", "/dashboard/summary", { token: fresh.token });
		expect(res.status).toBe(200);
		expect(res.body.totals).toEqual({ links: 0, intents: 0, transactions: 0, totalEarnedUsdc: "0", withdrawnUsdc: "0", remainingUsdc: "0" });
		expect(res.body.volumeSeries).toHaveLength(12);
		expect(res.body.volumeSeries.every((s: { transactionCount: string }) => s.transactionCount === "0")).toBe(true);
		const now = node.clock.now();
		expect(res.body.volumeSeries[11].month).toBe(`${now.getUTCFullYear()}-${String(now.getUTCMonth() + 1).padStart(2, "0")}`);
		expect(res.body.recentTransactions).toEqual([]);
		expect((await call("GET", "/dashboard/summary", { key: fresh.sandboxKey })).status).toBe(401);
	});

	it("values settled, non-simulated payments at current prices and lists recent transactions", async () => {
		await paidLink(alice, { amount: "100", title: "Hundred" });
		await paidLink(alice, { amount: "0.25", tokenId: IDS.sepoliaEth, title: "Quarter" });
		await paidLink(alice, { amount: "1000", title: "Simulated" }, { simulate: true });
		await paidLink(alice, { amount: "7", title: "Unpaid" }, { pay: false });
		const res = await call("GET", "/dashboard/summary", { token: alice.token });
		expect(res.status).toBe(200);
		// 100 USDC * 0.999 + 0.25 ETH * 2000; the simulated 1000 and the unpaid 7 do not count.
		expect(res.body.totals).toEqual({ links: 4, intents: 0, transactions: 4, totalEarnedUsdc: "599.9", withdrawnUsdc: "0", remainingUsdc: "599.9" });
		// Settled checkouts of this month, simulated included.
		expect(res.body.volumeSeries[11].transactionCount).toBe("3");
		const recent = res.body.recentTransactions;
		expect(recent.map((r: { paymentLinkTitle: string }) => r.paymentLinkTitle)).toEqual(["Unpaid", "Simulated", "Quarter", "Hundred"]);
		expect(recent[2]).toMatchObject({ status: "completed", amount: "0.25", amountReceived: "0.25", tokenSymbol: "ETH", networkName: "Ethereum Sepolia", payerTokenSymbol: "ETH", payerAmount: "0.25" });
		expect(recent[2].paymentLinkSlug).toMatch(/^pl_/);
		expect(recent[2].id).toMatch(/^[0-9a-f-]{36}$/);
		expect(Object.keys(recent[0]).sort()).toEqual(
			["amount", "amountReceived", "createdAt", "id", "networkName", "payerAmount", "payerTokenSymbol", "paymentLinkSlug", "paymentLinkTitle", "status", "tokenSymbol"].sort(),
		);
	});

	it("keeps ten recent transactions, counts by month of settlement, and is per organization", async () => {
		const m = await createMerchant(node);
		for (let i = 0; i < 11; i++) await paidLink(m, { amount: "1", title: `L${i}` }, { pay: i === 0 });
		const res = await call("GET", "/dashboard/summary", { token: m.token });
		expect(res.body.recentTransactions).toHaveLength(10);
		expect(res.body.recentTransactions[0].paymentLinkTitle).toBe("L10");
		expect(res.body.totals.transactions).toBe(11);
		expect(res.body.totals.totalEarnedUsdc).toBe("0.999");
		// A payment settled 40 days ago sits in its own month of the series.
		node.clock.advance(-40 * 24 * 3600_000);
		const then = node.clock.now();
		try {
			await paidLink(m, { amount: "1", title: "Old" });
		} finally {
			node.clock.reset();
		}
		const month = `${then.getUTCFullYear()}-${String(then.getUTCMonth() + 1).padStart(2, "0")}`;
		const later = await call("GET", "/dashboard/summary", { token: m.token });
		const counts = Object.fromEntries(later.body.volumeSeries.map((s: { month: string; transactionCount: string }) => [s.month, s.transactionCount]));
		expect(counts[month]).toBe("1");
		expect(later.body.volumeSeries[11].transactionCount).toBe("1");
		// The live organization (x-organization-id) has nothing.
		const live = await call("GET", "/dashboard/summary", { token: m.token, headers: { "x-organization-id": m.live.id } });
		expect(live.body.totals.transactions).toBe(0);
		expect((await call("GET", "/dashboard/summary", { token: m.token, headers: { "x-organization-id": alice.sandbox.id } })).status).toBe(404);
	});
});
