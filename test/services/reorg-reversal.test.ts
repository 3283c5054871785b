/**
 * A credit orphaned by a reorg deeper than the required confirmations is undone in the books
 * (docs/payments.md "Reversals"): a real anvil, a 1-confirmation network, the payments services,
 * the withdrawals ledger, webhooks and the EVM watcher on one node. A payment is credited and
 * settled, its ledger credit written, then a depth-2 reorg drops its transfer.
 */
import { Contract, Wallet, parseUnits } from "ethers";
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { intentCommand, reversalsCommand, txCommand } from "../../lib/support/commands";
import { verifyWebhookSignature } from "../../lib/webhooks/signature";
import { deployTestUsdc, startAnvil, Anvil } from "../helpers/anvil";
import { counterOf, hooksOf, ledgerOf, startReversalNode } from "../helpers/reversals";
import { until } from "../helpers/until";
import { TestNode } from "../helpers/harness";
import { startReceiver, WebhookReceiver } from "../helpers/webhook-receiver";
import { openCheckout, sandboxMerchant } from "../e2e/payments.helpers";

const NET = networkIdFor("anvil-local");
const USDC = tokenIdFor("anvil-local", "USDC");

describe("a credit orphaned by a reorg deeper than the required confirmations (anvil)", () => {
	let anvil: Anvil;
	let node: TestNode;
	let receiver: WebhookReceiver;
	let token: Contract;

	beforeAll(async () => {
		anvil = await startAnvil();
		token = await deployTestUsdc(anvil, [4, 5]);
		receiver = await startReceiver();
		node = await startReversalNode("watcher-evm", {
			RPC_URL_ANVIL_LOCAL: anvil.url,
			TEST_USDC_ADDRESS: await token.getAddress(),
			REQUIRED_CONFIRMATIONS_ANVIL_LOCAL: "1",
			WATCHER_RECONCILE_MS: "0",
		});
	}, 120_000);

	afterAll(async () => {
		await node?.stop();
		await receiver?.close();
		await anvil?.stop();
	});

	/** A fresh sandbox merchant (its own ledger account) with a webhook URL. */
	const merchant = async () => {
		const m = await sandboxMerchant(node, receiver.url);
		return { orgId: m.user.sandbox.id as string, key: m.key };
	};
	const getTx = async (id: string) => (await node.http("GET", `/payments/transactions/${id}`)).body;
	const getIntent = async (id: string, key: { key: string; secret: string }) => (await node.http("GET", `/payment_intents/${id}`, { key })).body;
	const hooks = (intentId: string, type: string) => hooksOf(receiver)(intentId, type);
	const balance = (organizationId: string) => ledgerOf(node, NET, USDC).balance(organizationId);
	const entries = (organizationId: string) => ledgerOf(node, NET, USDC).entries(organizationId);
	const reversedCount = () => counterOf(node, "payments.credits.reversed", "anvil-local");
	const recreditedCount = () => counterOf(node, "payments.credits.recredited", "anvil-local");
	const cursor = async () => ((await node.broker.call("watcher-evm.status")) as Array<{ cursor: number | null }>)[0]?.cursor ?? -1;

	/** A USDC payment signed by hand (so the very transaction can be sent again after the reorg), mined in one block: credited at 1 confirmation. */
	const payAndSettle = async (key: { key: string; secret: string }, amount: string, payerIndex: number) => {
		const c = await openCheckout(node, key, { amount, currency: "usdc", tokenId: USDC, networkId: NET });
		const payer = anvil.accounts[payerIndex].signer as Wallet;
		const request = await (token.connect(payer) as Contract).transfer.populateTransaction(c.address, parseUnits(amount, 6));
		const raw = await payer.signTransaction(await payer.populateTransaction({ ...request, nonce: await anvil.provider.getTransactionCount(payer.address, "pending") }));
		const hash = await anvil.rpc<string>("eth_sendRawTransaction", [raw]);
		await anvil.mine(1);
		await until("completed", async () => (await getTx(c.txId)).status === "completed");
		return { ...c, raw, hash };
	};

	it("reverses the credit once: ledger entry, available, checkout, intent, signed webhook, metric, REPL; a replay reverses nothing more", async () => {
		const { orgId, key } = await merchant();
		const before = reversedCount();
		const c = await payAndSettle(key, "1", 4);
		await until("ledger credit", async () => (await balance(orgId)).available === "1");
		await anvil.mine(1); // the payment is 2 blocks deep: a depth-2 reorg drops it, deeper than the 1 required
		const paidAt = await anvil.blockNumber();
		await until("watcher at the head", async () => (await cursor()) >= paidAt);

		await anvil.reorg(2);
		const reversed = await until("reversed", async () => {
			const tx = await getTx(c.txId);
			return tx.amountReversed === "1" ? tx : null;
		});
		// The count it kept from its credit goes with the credit.
		expect(reversed).toMatchObject({ status: "completed", amountReceived: "0", amountReversed: "1", overpaidAmount: "0", confirmations: null });
		expect(reversed.reversedAt).toEqual(expect.any(String));
		expect(await anvil.rpc("eth_getTransactionReceipt", [c.hash])).toBeNull();

		// The books: the credit stays, one reversal takes it away; nothing is available.
		expect(await entries(orgId)).toEqual([
			["credit", "1"],
			["reversal", "-1"],
		]);
		expect(await balance(orgId)).toMatchObject({ balance: "0", available: "0" });
		// The merchant sees it on the intent (status final as the spec says; `reversal` is our addition).
		const intent = await getIntent(c.intentId, key);
		expect(intent.status).toBe("succeeded");
		expect(intent.reversal).toMatchObject({ transactionId: c.txId, amount: "1", currency: "usdc", hash: c.hash });
		// One signed webhook.
		await until("reversed webhook", async () => hooks(c.intentId, "payment_intent.reversed").length > 0);
		const [hook] = hooks(c.intentId, "payment_intent.reversed");
		expect(verifyWebhookSignature(hook.rawBody, hook.headers["x-webhook-signature"], key.secret)).toBe(true);
		expect(hook.json.data.object).toMatchObject({ id: c.intentId, status: "completed", reversal: { transactionId: c.txId, amount: "1" }, latestTransaction: { id: c.txId, hash: c.hash } });
		expect(reversedCount()).toBe(before + 1);
		// Support sees it.
		expect(await txCommand(node.broker, [c.txId])).toMatch(/reversed\s+1 USDC/);
		expect(await intentCommand(node.broker, [c.intentId])).toMatch(new RegExp(`reversed\\s+1 usdc on checkout ${c.txId}`));
		expect(await reversalsCommand(node.broker, [])).toContain(c.txId);

		// A replay of the range, the same revert reported again and by two nodes at once: nothing more.
		const head = await anvil.blockNumber();
		const rewound = (await node.broker.call("watcher-evm.support.rewind", { network: "anvil-local", block: paidAt - 3 })) as { to: number };
		expect(rewound.to).toBe(paidAt - 3);
		await anvil.mine(1);
		await until("replayed past the reorg", async () => (await cursor()) > head);
		const chainRow = await node.app.models.ChainTransfer.findOne({ where: { txHash: c.hash } });
		const again = { networkId: NET, txHash: c.hash, logIndex: chainRow!.logIndex, blockHash: chainRow!.blockHash };
		const outcomes = await Promise.all([1, 2, 3].map(() => node.broker.call("transactions.revertDetection", again) as Promise<{ outcome: string }>));
		expect(outcomes.map(o => o.outcome)).toEqual(["already", "already", "already"]);
		expect(await entries(orgId)).toEqual([
			["credit", "1"],
			["reversal", "-1"],
		]);
		expect((await getTx(c.txId)).amountReversed).toBe("1");
		// Deliveries of anything queued by then have gone out (the poll is 50 ms); still one reversed event.
		await until("webhooks settled", async () => ((await node.broker.call("webhooks.support.outbox")) as { outbox: { unpublished: number } }).outbox.unpublished === 0);
		expect(hooks(c.intentId, "payment_intent.reversed")).toHaveLength(1);
		expect(reversedCount()).toBe(before + 1);
	}, 150_000);

	it("credits the transfer again when it is mined again: the ledger equals the chain", async () => {
		const { orgId, key } = await merchant();
		const c = await payAndSettle(key, "2", 5);
		await until("ledger credit", async () => (await balance(orgId)).available === "2");
		await anvil.mine(1);
		const paidAt = await anvil.blockNumber();
		await until("watcher at the head", async () => (await cursor()) >= paidAt);
		await anvil.reorg(2);
		await until("reversed", async () => (await getTx(c.txId)).amountReversed === "2");
		expect((await balance(orgId)).available).toBe("0");
		const recreditedBefore = recreditedCount();

		await anvil.rpc("eth_sendRawTransaction", [c.raw]);
		await anvil.mine(1);
		const back = await until("credited again", async () => {
			const tx = await getTx(c.txId);
			return tx.amountReceived === "2" ? tx : null;
		});
		expect(back).toMatchObject({ status: "completed", amountReversed: "0", reversedAt: null });
		// The count it was credited at again, as the credit records it.
		const [row] = await node.app.models.TransactionCredit.findAll({ where: { transactionId: c.txId } });
		expect(back.confirmations).toBeGreaterThanOrEqual(1);
		expect(back.confirmations).toBe(row.confirmations);
		expect(await entries(orgId)).toEqual([
			["credit", "2"],
			["reversal", "-2"],
			["recredit", "2"],
		]);
		// The ledger equals what the chain holds at the deposit address.
		const onChain = (await (token.connect(anvil.provider) as Contract).balanceOf(c.address)) as bigint;
		expect(parseUnits((await balance(orgId)).balance, 6)).toBe(onChain);
		expect(onChain).toBe(parseUnits("2", 6));
		expect((await getIntent(c.intentId, key)).reversal).toBeUndefined();
		await until("recredited webhook", async () => hooks(c.intentId, "payment_intent.recredited").length === 1);
		expect(recreditedCount()).toBe(recreditedBefore + 1);
		const credits = await node.app.models.TransactionCredit.findAll({ where: { transactionId: c.txId } });
		expect(credits.map(r => [r.amount, r.reversals, r.reversedAt])).toEqual([["2", 1, null]]);
	}, 130_000);

	it("takes out of the ledger only what was in it: a transfer that arrived after the ledger credit is reversed on the checkout alone", async () => {
		const { orgId, key } = await merchant();
		const c = await payAndSettle(key, "1", 5);
		await until("ledger credit", async () => (await balance(orgId)).available === "1");
		await anvil.mine(2); // the settling payment stays below any depth-2 reorg
		// An over-payment after settlement: on the checkout, never in the ledger (docs/withdrawals.md "Feed").
		await (token.connect(anvil.accounts[5]) as Contract).transfer(c.address, parseUnits("0.5", 6));
		await anvil.mine(1);
		await until("late funds", async () => (await getTx(c.txId)).amountReceived === "1.5");
		await anvil.mine(1);
		const paidAt = await anvil.blockNumber();
		await until("watcher at the head", async () => (await cursor()) >= paidAt);
		await anvil.reorg(2);
		const tx = await until("reversed", async () => {
			const t = await getTx(c.txId);
			return t.amountReversed === "0.5" ? t : null;
		});
		expect(tx).toMatchObject({ status: "completed", amountReceived: "1", overpaidAmount: "0" });
		// The ledger held 1 (what the chain still holds): nothing to take away.
		expect(await entries(orgId)).toEqual([["credit", "1"]]);
		const onChain = (await (token.connect(anvil.provider) as Contract).balanceOf(c.address)) as bigint;
		expect(parseUnits((await balance(orgId)).balance, 6)).toBe(onChain);
	}, 110_000);

	it("a revert of the old block heard after the credit from the new block reverses nothing", async () => {
		const { orgId, key } = await merchant();
		const c = await payAndSettle(key, "3", 4);
		await until("ledger credit", async () => (await balance(orgId)).available === "3");
		const row = await node.app.models.ChainTransfer.findOne({ where: { txHash: c.hash } });
		const old = { networkId: NET, txHash: c.hash, logIndex: row!.logIndex };
		// The transfer re-mined in another block, reported before the old block's revert (one report pass runs them side by side).
		const moved = `0x${"ab".repeat(32)}`;
		const dup = (await node.broker.call("transactions.credit", { ...old, blockHash: moved, toAddress: c.address, tokenId: USDC, amount: "3", confirmations: 1 })) as { duplicate: boolean };
		expect(dup.duplicate).toBe(true);
		expect((await node.broker.call("transactions.revertDetection", { ...old, blockHash: row!.blockHash })) as { outcome: string }).toEqual({ outcome: "otherBlock" });
		expect(await getTx(c.txId)).toMatchObject({ amountReceived: "3", amountReversed: "0" });
		expect(await entries(orgId)).toEqual([["credit", "3"]]);
	});
});
