/**
 * transactions.creditBatch / detectBatch (lib/payments/credits.ts): a batch writes exactly the rows
 * the same credits one by one write (credits, checkouts, intents, links, outbox events, the
 * withdrawals ledger's feed), a repeat changes nothing, a mixed batch answers each item as the
 * single action would, a batch racing a single credit of the same transfer credits it once, and
 * a batch whose DB transaction fails is credited item by item.
 */
import { lockConflictRetries } from "../../lib/db";
import { TestNode } from "../helpers/harness";
import { until } from "../helpers/until";
import { createMerchant, IDS, intentBody, Merchant, setPrices, startPaymentsNode } from "../e2e/payments.helpers";
import type { BatchCreditResult, BatchDetectResult, CreditResult } from "../../services/transactions.service";

interface Checkout {
	intentId: string;
	txId: string;
	linkId: string;
	depositAddress: string;
	totalAmount: string;
}

describe("credits and detections in batches", () => {
	let node: TestNode;
	let alice: Merchant;
	let seq = 0;
	const hash = () => `0x${(++seq).toString(16).padStart(8, "0")}${Date.now().toString(16)}`.padEnd(66, "a");

	async function checkout(): Promise<Checkout> {
		const intent = await node.http("POST", "/payment_intents", { key: alice.sandboxKey, body: intentBody() });
		expect(intent.status).toBe(200);
		const slug = intent.body.paymentLink.link.split("/pay/")[1];
		const tx = await node.http("POST", `/payments/links/${slug}/transactions`, { body: {} });
		expect(tx.status).toBe(201);
		return { intentId: intent.body.id, txId: tx.body.id, linkId: tx.body.paymentLinkId, depositAddress: tx.body.depositAddress, totalAmount: tx.body.totalAmount };
	}
	const item = (c: Checkout, o: Record<string, unknown> = {}) => ({ txHash: hash(), logIndex: 0, toAddress: c.depositAddress, tokenId: IDS.sepoliaEth, amount: c.totalAmount, confirmations: 3, requiredConfirmations: 2, blockHash: "0xblock", ...o });
	const creditBatch = (items: unknown[]) => node.broker.call("transactions.creditBatch", { networkId: IDS.sepolia, items }) as Promise<BatchCreditResult[]>;
	const credit = (i: Record<string, unknown>) => node.broker.call("transactions.credit", { networkId: IDS.sepolia, ...i }) as Promise<CreditResult>;

	/** What a checkout's credits wrote, with its own ids, hashes and times replaced by placeholders (comparable across checkouts). */
	async function snapshot(c: Checkout, hashes: string[]) {
		const { models } = node.app;
		const names = new Map<string, string>([[c.intentId, "<intent>"], [c.txId, "<tx>"], [c.linkId, "<link>"], ...hashes.map((h, i) => [h, `<hash${i}>`] as [string, string])]);
		const clean = (v: unknown): unknown =>
			JSON.parse(JSON.stringify(v), (k, x) => {
				if (typeof x !== "string") return x;
				if (names.has(x)) return names.get(x);
				if (/^\d{4}-\d\d-\d\dT/.test(x)) return "<date>";
				return x;
			});
		const tx = (await models.Transaction.findByPk(c.txId))!.toJSON() as Record<string, unknown>;
		delete tx.depositAddress;
		delete tx.depositAddressId;
		const intent = (await models.PaymentIntent.findByPk(c.intentId))!.toJSON() as Record<string, unknown>;
		for (const k of ["clientSecret", "clientSecretDigest"]) delete intent[k];
		const link = (await models.PaymentLink.findByPk(c.linkId))!.toJSON() as Record<string, unknown>;
		for (const k of ["slug", "link"]) delete link[k];
		const credits = (await models.TransactionCredit.findAll({ where: { transactionId: c.txId }, order: [["id", "ASC"]] })).map(r => {
			const { id, ...rest } = r.toJSON() as Record<string, unknown>;
			return rest;
		});
		const detections = (await models.PaymentDetection.findAll({ where: { transactionId: c.txId }, order: [["logIndex", "ASC"]] })).map(r => {
			const { id, ...rest } = r.toJSON() as Record<string, unknown>;
			return rest;
		});
		const events = (await models.OutboxEvent.findAll({ where: { organizationId: alice.sandbox.id }, order: [["createdAt", "ASC"], ["type", "ASC"]] }))
			.filter(e => (e.payload as { id?: string }).id === c.intentId)
			.map(e => ({ type: e.type, livemode: e.livemode, apiKeyId: e.apiKeyId, payload: e.payload }));
		const feed = (await node.broker.call("transactions.settledSince", { limit: 1000 })) as Array<{ transactionId: string }>;
		return clean({ tx, intent, link, credits, detections, events, feed: feed.filter(f => f.transactionId === c.txId) });
	}

	beforeAll(async () => {
		node = await startPaymentsNode();
		alice = await createMerchant(node);
		await setPrices(node, { [IDS.sepoliaEth]: "2000" });
	});
	afterAll(async () => {
		await node?.stop();
	});

	it("writes exactly the rows that the same credits one by one write, and a repeat changes nothing", async () => {
		const N = 4;
		const batched: Checkout[] = [];
		const single: Checkout[] = [];
		for (let i = 0; i < N; i++) batched.push(await checkout());
		for (let i = 0; i < N; i++) single.push(await checkout());
		// Checkout i: a partial transfer (logIndex 0) then the rest (logIndex 1) for even i; one full transfer for odd i.
		const plan = (c: Checkout, i: number, h: string) =>
			i % 2 === 0 ? [item(c, { txHash: h, logIndex: 0, amount: "0.2" }), item(c, { txHash: h, logIndex: 1, amount: "0.3" })] : [item(c, { txHash: h, amount: "0.5" })];
		const announced = new Set<string>();
		node.broker.createService({ name: `changes-spy-${Date.now()}`, events: { "payments.checkouts.changed"(ctx: { params: { transactionIds: string[] } }) { for (const id of ctx.params.transactionIds) announced.add(id); } } });
		const hb = batched.map(() => hash());
		const hs = single.map(() => hash());
		const items = batched.flatMap((c, i) => plan(c, i, hb[i]));
		// Checkouts 0 and 1 of each side were seen below the requirement first: their detections become credited.
		const detect = (x: ReturnType<typeof item>) => ({ ...x, confirmations: 1, blockNumber: 7 });
		const seen = [...batched.slice(0, 2).flatMap((c, i) => plan(c, i, hb[i])), ...single.slice(0, 2).flatMap((c, i) => plan(c, i, hs[i]))];
		// One at a time: concurrent detections of neighbouring keys may deadlock on MySQL's gap locks (a known retry case, not this test's).
		for (const x of seen) expect(await node.broker.call("transactions.detect", { networkId: IDS.sepolia, ...detect(x) })).toMatchObject({ recorded: true });
		const answers = await creditBatch(items);
		const one: CreditResult[] = [];
		for (const [i, c] of single.entries()) for (const x of plan(c, i, hs[i])) one.push(await credit(x));
		const view = (r: BatchCreditResult | CreditResult, c: Checkout, h: string) => JSON.parse(JSON.stringify(r).split(c.txId).join("<tx>").split(c.linkId).join("<link>").split(h).join("<h>").split(c.depositAddress).join("<addr>").replace(/"\d{4}-\d\d-\d\dT[^"]*"/g, '"<date>"'));
		let k = 0;
		for (const [i, c] of batched.entries()) {
			for (const _ of plan(c, i, hb[i])) {
				expect(view(answers[k], c, hb[i])).toEqual(view(one[k], single[i], hs[i]));
				k++;
			}
			expect(answers[k - 1]).toMatchObject({ credited: true, duplicate: false, transaction: { status: "completed", amountReceived: "0.5" } });
			const [mine, theirs] = [await snapshot(c, [hb[i]]), await snapshot(single[i], [hs[i]])];
			expect(mine).toEqual(theirs);
			expect((mine as { detections: Array<{ status: string }> }).detections.map(d => d.status)).toEqual(i < 2 ? plan(c, i, hb[i]).map(() => "credited") : []);
		}
		// The pay page hears the batch's checkouts changed (its rows are written by one multi-row upsert).
		await until("the batch's checkouts announced", () => batched.every(c => announced.has(c.txId)), 20_000);
		const before = await Promise.all(batched.map((c, i) => snapshot(c, [hb[i]])));
		const again = await creditBatch(items);
		expect(again.map(r => ("reason" in r ? r.reason : r))).toEqual(items.map(() => "duplicate"));
		expect(await Promise.all(batched.map((c, i) => snapshot(c, [hb[i]])))).toEqual(before);
	});

	it("answers a mixed batch item by item: duplicates, unknown addresses, too few confirmations, partials then settled, over-payment, a transfer twice", async () => {
		const [a, b, c, d] = [await checkout(), await checkout(), await checkout(), await checkout()];
		const done = item(d, { amount: "0.5" });
		expect(await credit(done)).toMatchObject({ credited: true });
		const twice = item(c, { amount: "0.1" });
		const items = [
			done, // credited before: duplicate
			item(a, { toAddress: "0x000000000000000000000000000000000000dead" }), // no checkout
			item(a, { confirmations: 1 }), // below the watcher's requirement
			item(b, { amount: "0.2", logIndex: 5 }), // partial
			twice, // partial
			item(b, { amount: "0.3", logIndex: 6 }), // the rest: settles b
			item(a, { amount: "0.7" }), // over-payment
			twice, // the same transfer again in the batch
		];
		const r = await creditBatch(items);
		expect(r[0]).toMatchObject({ credited: false, duplicate: true, reason: "duplicate", transaction: { id: d.txId, status: "completed" } });
		expect(r[1]).toEqual({ credited: false, duplicate: false, reason: "unknownAddress" });
		expect(r[2]).toEqual({ credited: false, duplicate: false, reason: "insufficientConfirmations", requiredConfirmations: 2 });
		expect(r[3]).toMatchObject({ credited: true, counted: true, transaction: { id: b.txId, status: "pending", amountReceived: "0.2" } });
		expect(r[4]).toMatchObject({ credited: true, transaction: { id: c.txId, status: "pending", amountReceived: "0.1" } });
		expect(r[5]).toMatchObject({ credited: true, transaction: { id: b.txId, status: "completed", amountReceived: "0.5" } });
		expect(r[6]).toMatchObject({ credited: true, transaction: { id: a.txId, status: "completed", amountReceived: "0.7", overpaidAmount: "0.2" } });
		expect(r[7]).toMatchObject({ credited: false, duplicate: true, reason: "duplicate", transaction: { id: c.txId, amountReceived: "0.1" } });
		const { models } = node.app;
		expect(await models.TransactionCredit.count({ where: { transactionId: [a.txId, b.txId, c.txId] } })).toBe(4);
		expect((await models.PaymentIntent.findByPk(b.intentId))!.status).toBe("succeeded");
		expect((await models.PaymentIntent.findByPk(c.intentId))!.status).toBe("processing");
		const events = (await models.OutboxEvent.findAll({ where: { organizationId: alice.sandbox.id } })).filter(e => (e.payload as { id?: string }).id === b.intentId);
		expect(events.map(e => e.type).sort()).toEqual(["payment_intent.completed", "payment_intent.processing"]);
	});

	it("credits a transfer once when a batch and a single credit of it race", async () => {
		for (let round = 0; round < 4; round++) {
			const cs = [await checkout(), await checkout(), await checkout()];
			const items = cs.map(c => item(c, { amount: "0.5" }));
			const [batch, alone] = await Promise.all([creditBatch(items), credit(items[1])]);
			const credited = [batch[1].credited, alone.credited].filter(Boolean).length;
			expect(credited).toBe(1);
			expect([batch[1], alone].find(x => !x.credited)).toMatchObject({ duplicate: true });
			expect(batch[0]).toMatchObject({ credited: true });
			expect(batch[2]).toMatchObject({ credited: true });
			for (const c of cs) {
				expect(await node.app.models.TransactionCredit.count({ where: { transactionId: c.txId } })).toBe(1);
				expect((await node.app.models.Transaction.findByPk(c.txId))!.amountReceived).toBe("0.5");
			}
		}
	});

	it("credits concurrent batches of interleaved links each once, with no deadlock to retry (READ COMMITTED: no gap locks)", async () => {
		// Checkouts whose links interleave in transactions_link_status, each link with a second pending
		// checkout (the sibling the settling credit lapses), dealt round-robin to three batches sent at once.
		const cs: Array<Checkout & { siblingId: string }> = [];
		for (let i = 0; i < 18; i++) {
			const intent = await node.http("POST", "/payment_intents", { key: alice.sandboxKey, body: intentBody() });
			expect(intent.status).toBe(200);
			const slug = intent.body.paymentLink.link.split("/pay/")[1];
			const sibling = await node.http("POST", `/payments/links/${slug}/transactions`, { body: {} });
			expect(sibling.status).toBe(201);
			const tx = await node.http("POST", `/payments/links/${slug}/transactions`, { body: {} });
			expect(tx.status).toBe(201);
			cs.push({ intentId: intent.body.id, txId: tx.body.id, linkId: tx.body.paymentLinkId, depositAddress: tx.body.depositAddress, totalAmount: tx.body.totalAmount, siblingId: sibling.body.id });
		}
		cs.sort((a, b) => (a.linkId < b.linkId ? -1 : 1));
		const items = cs.map(c => item(c));
		const batches = [0, 1, 2].map(k => items.filter((_, i) => i % 3 === k));
		const retriesBefore = lockConflictRetries.count;
		const answers = await Promise.all(batches.map(b => creditBatch(b)));
		expect(answers.flat().every(a => a.credited && !a.duplicate)).toBe(true);
		expect(lockConflictRetries.count - retriesBefore).toBe(0);
		const { Transaction, TransactionCredit } = node.app.models;
		for (const c of cs) {
			expect(await TransactionCredit.count({ where: { transactionId: c.txId } })).toBe(1);
			expect((await Transaction.findByPk(c.txId))!.status).toBe("completed");
			expect((await Transaction.findByPk(c.siblingId))!.status).toBe("expired");
		}
		// The same batches again, at once: every item a duplicate, nothing written twice.
		const again = await Promise.all(batches.map(b => creditBatch(b)));
		expect(again.flat().every(a => !a.credited && a.duplicate)).toBe(true);
		for (const c of cs) expect(await TransactionCredit.count({ where: { transactionId: c.txId } })).toBe(1);
		expect(lockConflictRetries.count - retriesBefore).toBe(0);
	});

	it("credits each item on its own when the batch's DB transaction fails", async () => {
		const cs = [await checkout(), await checkout()];
		const items = [item(cs[0], { amount: "0.5" }), item(cs[1], { amount: "0.2" })];
		const { TransactionCredit } = node.app.models;
		let failed = 0;
		// The batch inserts its new credits in one statement; the single path inserts one at a time.
		TransactionCredit.addHook("beforeBulkCreate", "test-fail-batch", () => {
			failed++;
			throw new Error("injected batch failure");
		});
		try {
			const r = await creditBatch(items);
			expect(failed).toBeGreaterThan(0);
			expect(r[0]).toMatchObject({ credited: true, transaction: { status: "completed" } });
			expect(r[1]).toMatchObject({ credited: true, transaction: { status: "pending", amountReceived: "0.2" } });
		} finally {
			TransactionCredit.removeHook("beforeBulkCreate", "test-fail-batch");
		}
		for (const c of cs) expect(await TransactionCredit.count({ where: { transactionId: c.txId } })).toBe(1);
		expect(await creditBatch(items)).toMatchObject([{ duplicate: true }, { duplicate: true }]);
	});

	it("answers brief (the watcher's call) without the checkout views, crediting the same", async () => {
		const [a, b] = [await checkout(), await checkout()];
		const items = [item(a, { amount: "0.5" }), item(b, { amount: "0.2" }), item(a, { toAddress: "0x000000000000000000000000000000000000dead" })];
		const brief = (list: unknown[]) => node.broker.call("transactions.creditBatch", { networkId: IDS.sepolia, items: list, brief: true }) as Promise<BatchCreditResult[]>;
		expect(await brief(items)).toEqual([
			{ credited: true, duplicate: false, counted: true },
			{ credited: true, duplicate: false, counted: true },
			{ credited: false, duplicate: false, reason: "unknownAddress" },
		]);
		const { models } = node.app;
		expect((await models.Transaction.findByPk(a.txId))!.status).toBe("completed");
		expect((await models.Transaction.findByPk(b.txId))!.amountReceived).toBe("0.2");
		// Repeated: duplicates, brief too (also when answered by the single path after the batch).
		expect(await brief([items[0], items[1], items[1]])).toEqual([0, 1, 2].map(() => ({ credited: false, duplicate: true, reason: "duplicate" })));
	});

	it("runs as many statements for a batch of 24 checkouts as for one of 8 (none per item)", async () => {
		const statements = async (n: number) => {
			const cs: Checkout[] = [];
			for (let i = 0; i < n; i++) cs.push(await checkout());
			const items = cs.map(c => item(c, { amount: "0.5" }));
			for (const x of items) expect(await node.broker.call("transactions.detect", { networkId: IDS.sepolia, ...x, confirmations: 1, blockNumber: 7 })).toMatchObject({ recorded: true });
			let count = 0;
			const { sequelize } = node.app;
			sequelize.addHook("beforeQuery", "count-statements", () => void count++);
			try {
				expect(await creditBatch(items)).toMatchObject(items.map(() => ({ credited: true })));
			} finally {
				sequelize.removeHook("beforeQuery", "count-statements");
			}
			return count;
		};
		const [small, large] = [await statements(8), await statements(24)];
		expect(small).toBeGreaterThan(0);
		expect(large).toBe(small);
	});

	it("rejects a batch that is empty, too large or has a bad item (4xx)", async () => {
		await expect(creditBatch([])).rejects.toMatchObject({ code: 422 });
		const c = await checkout();
		await expect(creditBatch(Array.from({ length: 501 }, () => item(c)))).rejects.toMatchObject({ code: 422 });
		await expect(creditBatch([item(c, { amount: "-1" })])).rejects.toMatchObject({ code: 422 });
	});

	it("records detections in a batch as detect does, one checkout's in order", async () => {
		const [a, b] = [await checkout(), await checkout()];
		const h = hash();
		const det = (c: Checkout, o: Record<string, unknown>) => ({ txHash: h, logIndex: 0, blockHash: "0xb1", blockNumber: 10, toAddress: c.depositAddress, tokenId: IDS.sepoliaEth, amount: "0.5", confirmations: 1, requiredConfirmations: 3, ...o });
		const r = (await node.broker.call("transactions.detectBatch", {
			networkId: IDS.sepolia,
			items: [det(a, {}), det(a, { confirmations: 2 }), det(b, { logIndex: 1 }), det(a, { toAddress: "0x000000000000000000000000000000000000dead" })],
		})) as BatchDetectResult[];
		expect(r).toEqual([
			{ recorded: true, outcome: "recorded", requiredConfirmations: 3 },
			{ recorded: true, outcome: "updated", requiredConfirmations: 3 },
			{ recorded: true, outcome: "recorded", requiredConfirmations: 3 },
			{ recorded: false, outcome: "unknownAddress", requiredConfirmations: 3 },
		]);
		expect((await node.app.models.Transaction.findByPk(a.txId))!.confirmations).toBe(2);
		expect((await node.app.models.PaymentIntent.findByPk(b.intentId))!.status).toBe("processing");
		// Credited later in a batch: its detection becomes credited.
		expect(await creditBatch([item(a, { txHash: h, logIndex: 0, blockHash: "0xb1", amount: "0.5" })])).toMatchObject([{ credited: true }]);
		expect((await node.app.models.PaymentDetection.findOne({ where: { txHash: h, logIndex: 0 } }))!.status).toBe("credited");
	});
});
