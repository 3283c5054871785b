/**
 * The UTXO watcher shares the reversal of a credit orphaned by a deep reorg (docs/payments.md
 * "Reversals"): litecoind -regtest, 1 required confirmation, a credited payment whose block and
 * the next are invalidated and replaced by blocks without it (`invalidateblock` + `generateblock`).
 * The payment goes back to the mempool; mined again, it is credited again.
 */
import { parseRpcReply, satoshis } from "../../lib/chains/utxo/source";
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { reversalsCommand } from "../../lib/support/commands";
import { verifyWebhookSignature } from "../../lib/webhooks/signature";
import { startLitecoind, type Litecoind } from "../helpers/litecoind";
import { until } from "../helpers/until";
import { TestNode } from "../helpers/harness";
import { startReceiver, WebhookReceiver } from "../helpers/webhook-receiver";
import { openCheckout, sandboxMerchant } from "../e2e/payments.helpers";
import { counterOf, hooksOf, ledgerOf, startReversalNode } from "../helpers/reversals";

const NET = networkIdFor("litecoin-regtest");
const LTC = tokenIdFor("litecoin-regtest", "LTC");

describe("a credit orphaned by a deep reorg on litecoind -regtest", () => {
	let ltc: Litecoind;
	let node: TestNode;
	let receiver: WebhookReceiver;

	beforeAll(async () => {
		ltc = await startLitecoind();
		receiver = await startReceiver();
		node = await startReversalNode("watcher-bitcoin", { RPC_URL_LITECOIN_REGTEST: ltc.rpcUrl, REQUIRED_CONFIRMATIONS_LITECOIN_REGTEST: "1" });
	}, 120_000);

	afterAll(async () => {
		await node?.stop();
		await receiver?.close();
		await ltc?.stop();
	});

	const getTx = async (id: string) => (await node.http("GET", `/payments/transactions/${id}`)).body;
	const balance = (organizationId: string) => ledgerOf(node, NET, LTC).balance(organizationId);
	const entries = (organizationId: string) => ledgerOf(node, NET, LTC).entries(organizationId);
	const hooks = (intentId: string, type: string) => hooksOf(receiver)(intentId, type);
	const reversedCount = () => counterOf(node, "payments.credits.reversed", "litecoin-regtest");

	it("reverses the credit once when its block is invalidated, and credits it again when it is mined again", async () => {
		const m = await sandboxMerchant(node, receiver.url);
		const orgId = m.user.sandbox.id as string;
		const c = await openCheckout(node, m.key, { amount: "0.4", currency: "ltc", tokenId: LTC, networkId: NET });
		const txid = await ltc.wallet<string>("sendtoaddress", [c.address, "0.4"]);
		const [paidIn] = await ltc.mine(1);
		await until("completed", async () => (await getTx(c.txId)).status === "completed");
		await until("ledger credit", async () => (await balance(orgId)).available === "0.4");
		await ltc.mine(1);
		const head = await ltc.blockCount();
		await until("watcher at the head", async () => ((await node.broker.call("watcher-bitcoin.status")) as Array<{ cursor: number | null }>)[0]?.cursor === head);

		// Depth 2: the payment's block and the next one leave the chain; a longer chain without it follows.
		await ltc.rpc("invalidateblock", [paidIn]);
		for (let i = 0; i < 3; i++) await ltc.rpc("generateblock", [ltc.fundedAddress, []]);
		expect(await ltc.rpc<string[]>("getrawmempool")).toContain(txid);

		const reversed = await until("reversed", async () => {
			const tx = await getTx(c.txId);
			return tx.amountReversed === "0.4" ? tx : null;
		});
		expect(reversed).toMatchObject({ status: "completed", amountReceived: "0" });
		expect(await entries(orgId)).toEqual([
			["credit", "0.4"],
			["reversal", "-0.4"],
		]);
		expect((await balance(orgId)).available).toBe("0");
		await until("reversed webhook", async () => hooks(c.intentId, "payment_intent.reversed").length === 1);
		const [hook] = hooks(c.intentId, "payment_intent.reversed");
		expect(verifyWebhookSignature(hook.rawBody, hook.headers["x-webhook-signature"], m.key.secret)).toBe(true);
		expect(hook.json.data.object.reversal).toMatchObject({ transactionId: c.txId, amount: "0.4", currency: "ltc", hash: txid });
		expect(reversedCount()).toBe(1);
		expect(await reversalsCommand(node.broker, [])).toContain(c.txId);
		// The UTXO sweeper never spends a reversed output.
		expect(await node.broker.call("transactions.creditedOutputs", { transactionIds: [c.txId] })).toEqual([]);

		// Mined again (it waited in the mempool): credited again, the ledger equals the chain.
		await ltc.mine(1);
		const back = await until("credited again", async () => {
			const tx = await getTx(c.txId);
			return tx.amountReceived === "0.4" ? tx : null;
		});
		expect(back).toMatchObject({ status: "completed", amountReversed: "0", reversedAt: null });
		expect(await entries(orgId)).toEqual([
			["credit", "0.4"],
			["reversal", "-0.4"],
			["recredit", "0.4"],
		]);
		const outputs = (await node.broker.call("transactions.creditedOutputs", { transactionIds: [c.txId] })) as Array<{ txHash: string; logIndex: number; amount: string }>;
		expect(outputs).toHaveLength(1);
		// The ledger equals the chain: the output is unspent, confirmed, worth exactly the account's balance.
		const utxo = parseRpcReply<{ result: { value: string; confirmations: number } | null }>(await ltc.rpcRaw("gettxout", [txid, outputs[0].logIndex])).result;
		expect(utxo?.confirmations).toBeGreaterThanOrEqual(1);
		expect(satoshis(utxo!.value)).toBe(satoshis((await balance(orgId)).balance));
		await until("recredited webhook", async () => hooks(c.intentId, "payment_intent.recredited").length === 1);
		expect(hooks(c.intentId, "payment_intent.reversed")).toHaveLength(1);
		expect(reversedCount()).toBe(1);
	}, 170_000);
});
