/**
 * The pay page's event stream is woken by `payments.checkouts.changed` (broadcast after a checkout,
 * link or intent change commits), not by a read per stream per second: with the safety-net poll
 * set to 10 minutes, a detection and credits reach the open stream at once. A change that
 * announces nothing (the lost event) is caught by the batched poll (links.payStatuses) of a node
 * whose poll is short.
 */
import { openSse, SseStream } from "../helpers/sse";
import { TestNode, startNode } from "../helpers/harness";
import { createMerchant, IDS, Merchant, openCheckout, PAYMENTS_SERVICES, setPrices, startPaymentsNode } from "../e2e/payments.helpers";

const LONG_POLL = "600000";

describe("pay page event streams woken by checkout changes", () => {
	let node: TestNode;
	/** Same database, its own broker (no transporter: it hears nothing of `node`'s events), a short poll. */
	let polling: TestNode;
	let merchant: Merchant;

	beforeAll(async () => {
		node = await startPaymentsNode({ env: { PAY_EVENTS_POLL_MS: LONG_POLL } });
		polling = await startNode({ services: PAYMENTS_SERVICES, shareWith: node, env: { PAY_EVENTS_POLL_MS: "1000" } });
		merchant = await createMerchant(node);
		await setPrices(node, { [IDS.sepoliaEth]: "2000" });
	}, 120_000);

	afterAll(async () => {
		await polling?.stop();
		await node?.stop();
	});

	const streams: SseStream[] = [];
	afterEach(() => {
		for (const s of streams.splice(0)) s.close();
	});

	async function stream(on: TestNode, slug: string, txId: string): Promise<SseStream> {
		const s = await openSse(`${on.baseUrl.replace(/\/api\/v1$/, "")}/pay/${slug}/events?transaction=${txId}`);
		streams.push(s);
		expect(s.status).toBe(200);
		await s.next(e => e.event === "status");
		return s;
	}

	const transfer = (address: string, txHash: string, amount: string) => ({ networkId: IDS.sepolia, txHash, logIndex: 0, toAddress: address, tokenId: IDS.sepoliaEth, amount });

	it("shows a detection and each credit without waiting for the poll, and ends once paid", async () => {
		const c = await openCheckout(node, merchant.sandboxKey, { amount: "0.5", currency: "eth", tokenId: IDS.sepoliaEth, networkId: IDS.sepolia });
		const s = await stream(node, c.slug, c.txId);
		expect(s.events[0].data).toMatchObject({ linkStatus: "active", intentStatus: "requires_payment_method", transaction: { id: c.txId, status: "pending", amountReceived: "0" } });
		expect(Object.keys(s.events[0].data).sort()).toEqual(["amountDue", "intentStatus", "linkStatus", "transaction"]);

		await node.broker.call("transactions.detect", { ...transfer(c.address, "0xlive1", "0.2"), blockHash: "0xb1", blockNumber: 10, confirmations: 1, requiredConfirmations: 3 });
		const confirming = await s.next(e => e.data.transaction.confirmations === 1);
		expect(confirming.data.transaction).toMatchObject({ amountConfirming: "0.2", requiredConfirmations: 3 });
		expect(confirming.data.intentStatus).toBe("processing");

		await node.broker.call("transactions.credit", { ...transfer(c.address, "0xlive1", "0.2"), blockHash: "0xb1", confirmations: 3, requiredConfirmations: 3 });
		const partial = await s.next(e => e.data.transaction.amountReceived === "0.2");
		expect(partial.data.amountDue).toBe("0.3");

		await node.broker.call("transactions.credit", { ...transfer(c.address, "0xlive2", "0.3"), confirmations: 3, requiredConfirmations: 3 });
		const paid = await s.next(e => e.data.transaction.status === "completed");
		expect(paid.data).toMatchObject({ linkStatus: "completed", intentStatus: "succeeded", amountDue: "0" });
		// A final state ends the stream.
		await until(() => s.ended);
	});

	it("shows detections and credits reported in batches (the watchers' path) on each checkout's stream", async () => {
		const opened = [];
		for (let i = 0; i < 2; i++) opened.push(await openCheckout(node, merchant.sandboxKey, { amount: "0.5", currency: "eth", tokenId: IDS.sepoliaEth, networkId: IDS.sepolia }));
		const ss = await Promise.all(opened.map(c => stream(node, c.slug, c.txId)));
		const item = (c: { address: string }, i: number) => ({ txHash: `0xbatch${i}`, logIndex: 0, toAddress: c.address, tokenId: IDS.sepoliaEth, amount: "0.5" });
		await node.broker.call("transactions.detectBatch", { networkId: IDS.sepolia, items: opened.map((c, i) => ({ ...item(c, i), blockHash: "0xbb", blockNumber: 20, confirmations: 2, requiredConfirmations: 3 })) });
		for (const s of ss) await s.next(e => e.data.transaction.confirmations === 2);
		await node.broker.call("transactions.creditBatch", { networkId: IDS.sepolia, items: opened.map((c, i) => ({ ...item(c, i), blockHash: "0xbb", confirmations: 3, requiredConfirmations: 3 })) });
		for (const s of ss) {
			await s.next(e => e.data.transaction.status === "completed");
			await until(() => s.ended);
		}
	});

	it("shows a cancel of the intent made through the API", async () => {
		const c = await openCheckout(node, merchant.sandboxKey, { amount: "0.5", currency: "eth", tokenId: IDS.sepoliaEth, networkId: IDS.sepolia });
		const s = await stream(node, c.slug, c.txId);
		const res = await node.http("POST", `/payment_intents/${c.intentId}/cancel`, { key: merchant.sandboxKey, body: {} });
		expect(res.status).toBe(200);
		const canceled = await s.next(e => e.data.intentStatus === "canceled");
		expect(canceled.data.transaction.id).toBe(c.txId);
		await until(() => s.ended);
	});

	it("catches a change whose event was lost with the safety-net poll", async () => {
		const c = await openCheckout(node, merchant.sandboxKey, { amount: "0.5", currency: "eth", tokenId: IDS.sepoliaEth, networkId: IDS.sepolia });
		const onPolling = await stream(polling, c.slug, c.txId);
		// Written without the models' hooks: nothing is announced, on any node.
		await node.app.models.Transaction.update({ amountReceived: "0.1" }, { where: { id: c.txId }, hooks: false });
		const seen = await onPolling.next(e => e.data.transaction.amountReceived === "0.1");
		expect(seen.data.amountDue).toBe("0.4");
		// The poll's batched read answers exactly what payStatus answers (the stream's payload).
		const single = await node.broker.call("links.payStatus", { slug: c.slug, transactionId: c.txId });
		expect(await node.broker.call("links.payStatuses", { transactionIds: [c.txId, "not-a-uuid"] })).toEqual([single]);
		expect(seen.data).toEqual(JSON.parse(JSON.stringify(single)));
		// A credit on `node` is heard only by `node`'s own streams (no transporter between them): the other node's poll shows it.
		await node.broker.call("transactions.credit", { ...transfer(c.address, "0xlive3", "0.1") });
		await onPolling.next(e => e.data.transaction.amountReceived === "0.2");
	});
});

async function until(cond: () => boolean, timeoutMs = 30_000): Promise<void> {
	const deadline = Date.now() + timeoutMs;
	while (!cond()) {
		if (Date.now() > deadline) throw new Error("Timed out");
		await new Promise(r => setTimeout(r, 50));
	}
}
