/**
 * Real payments on a real UTXO node: litecoind -regtest started by the test, a node running the
 * payments services, webhooks and the UTXO watcher (watcher-bitcoin) on the `litecoin-regtest`
 * network. Blocks are mined by hand so the test controls confirmations and reorgs.
 */
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { startLitecoind, type Litecoind } from "../helpers/litecoind";
import { until } from "../helpers/until";
import { TestNode } from "../helpers/harness";
import { startReceiver, WebhookReceiver } from "../helpers/webhook-receiver";
import { createUserWithToken } from "../helpers/users";
import { openCheckout, startPaymentsNode, PAYMENTS_SERVICES } from "../e2e/payments.helpers";

const NET = networkIdFor("litecoin-regtest");
const LTC = tokenIdFor("litecoin-regtest", "LTC");
const REQUIRED = 3;

describe("UTXO watcher on a real litecoind -regtest", () => {
	let ltc: Litecoind;
	let node: TestNode;
	let receiver: WebhookReceiver;
	let key: { key: string; secret: string };

	beforeAll(async () => {
		ltc = await startLitecoind();
		receiver = await startReceiver();
		node = await startPaymentsNode({
			services: [...PAYMENTS_SERVICES, "webhooks", "watcher-bitcoin"],
			env: {
				RPC_URL_LITECOIN_REGTEST: ltc.rpcUrl,
				REQUIRED_CONFIRMATIONS_LITECOIN_REGTEST: String(REQUIRED),
				WATCHER_POLL_MS: "50",
				WEBHOOK_POLL_MS: "50",
			},
		});
		const user = await createUserWithToken(node);
		const res = await node.http("POST", `/organizations/${user.sandbox.id}/api-keys`, { token: user.token, body: { name: "shop", webhookUrl: receiver.url } });
		expect(res.status).toBe(201);
		key = { key: res.body.key, secret: res.body.secret };
	}, 120_000);

	afterAll(async () => {
		await node?.stop();
		await receiver?.close();
		await ltc?.stop();
	});

	async function checkout(amount: string) {
		const opened = await openCheckout(node, key, { amount, currency: "ltc", tokenId: LTC, networkId: NET });
		expect(opened.address).toMatch(/^rltc1q/);
		return opened;
	}

	const getTx = async (id: string) => (await node.http("GET", `/payments/transactions/${id}`)).body;
	const getIntent = async (id: string) => (await node.http("GET", `/payment_intents/${id}`, { key })).body;
	const pay = (to: string, amount: string) => ltc.wallet<string>("sendtoaddress", [to, amount]);
	const hooksFor = (intentId: string) => receiver.received.filter(h => h.json?.data?.object?.id === intentId).map(h => h.json.type as string);
	const credits = (txId: string) => node.app.models.TransactionCredit.findAll({ where: { transactionId: txId } });

	/** One transaction paying `address` twice (createrawtransaction refuses a repeated address: the output is repeated in the hex). */
	async function payTwice(address: string, amount: string): Promise<string> {
		const one = await ltc.rpc<string>("createrawtransaction", [[], [{ [address]: amount }]]);
		const output = one.slice(12, one.length - 8);
		const two = `${one.slice(0, 8)}0002${output}${output}${one.slice(-8)}`;
		const funded = await ltc.wallet<{ hex: string }>("fundrawtransaction", [two, { replaceable: true }]);
		const signed = await ltc.wallet<{ hex: string }>("signrawtransactionwithwallet", [funded.hex]);
		return ltc.rpc<string>("sendrawtransaction", [signed.hex]);
	}

	it("shows a payment confirming n of m, then completes it with signed webhooks", async () => {
		const c = await checkout("0.5");
		const txid = await pay(c.address, "0.5");
		await ltc.mine(1);
		const seen = await until("detection", async () => {
			const tx = await getTx(c.txId);
			return tx.confirmations === 1 ? tx : null;
		});
		expect(seen).toMatchObject({ status: "pending", hash: txid, amountConfirming: "0.5", amountReceived: "0", confirmations: 1, requiredConfirmations: REQUIRED });
		expect((await getIntent(c.intentId)).status).toBe("processing");
		await ltc.mine(1);
		await until("2 of m", async () => (await getTx(c.txId)).confirmations === 2);
		await ltc.mine(REQUIRED - 2);
		const done = await until("completed", async () => {
			const tx = await getTx(c.txId);
			return tx.status === "completed" ? tx : null;
		});
		expect(done).toMatchObject({ amountReceived: "0.5", amountConfirming: "0", hash: txid });
		expect((await getIntent(c.intentId)).status).toBe("succeeded");
		await until("webhooks", async () => hooksFor(c.intentId).includes("payment_intent.completed"));
		expect(hooksFor(c.intentId)).toEqual(["payment_intent.processing", "payment_intent.completed"]);
		const hook = receiver.received.find(h => h.json?.data?.object?.id === c.intentId)!;
		expect(hook.headers["x-webhook-signature"]).toMatch(/^[0-9a-f]{64}$/);
		expect((await credits(c.txId)).map(r => [r.txHash, r.amount])).toEqual([[txid, "0.5"]]);
	});

	it("credits two outputs of one transaction as two payments, a partial payment topped up, and an over-payment", async () => {
		const c = await checkout("0.2");
		const twice = await payTwice(c.address, "0.1");
		await ltc.mine(REQUIRED);
		await until("two outputs", async () => (await getTx(c.txId)).status === "completed");
		const rows = await credits(c.txId);
		expect(rows.map(r => r.txHash)).toEqual([twice, twice]);
		expect(rows.map(r => r.amount)).toEqual(["0.1", "0.1"]);
		expect(new Set(rows.map(r => r.logIndex)).size).toBe(2);

		const a = await checkout("0.3");
		await pay(a.address, "0.1");
		await ltc.mine(REQUIRED);
		await until("partial", async () => (await getTx(a.txId)).amountReceived === "0.1");
		expect((await getTx(a.txId)).status).toBe("pending");
		await pay(a.address, "0.2");
		await ltc.mine(REQUIRED);
		await until("topped up", async () => (await getTx(a.txId)).status === "completed");
		expect((await getTx(a.txId)).amountReceived).toBe("0.3");

		const b = await checkout("0.05");
		await pay(b.address, "0.07654321");
		await ltc.mine(REQUIRED);
		const over = await until("over", async () => {
			const tx = await getTx(b.txId);
			return tx.status === "completed" ? tx : null;
		});
		expect(over).toMatchObject({ amountReceived: "0.07654321", overpaidAmount: "0.02654321" });
	});

	it("reverts an unconfirmed payment a reorg removes (invalidateblock + generateblock without it), never crediting it", async () => {
		const c = await checkout("0.4");
		const txid = await pay(c.address, "0.4");
		const [block] = await ltc.mine(1);
		await until("detected", async () => (await getTx(c.txId)).confirmations === 1);
		expect((await getIntent(c.intentId)).status).toBe("processing");

		// The payment's block is invalidated and replaced by a longer chain of blocks that leave the
		// payment out (`generateblock` with no transactions): the watcher walks back and reverts.
		await ltc.rpc("invalidateblock", [block]);
		await ltc.rpc("generateblock", [ltc.fundedAddress, []]);
		await ltc.rpc("generateblock", [ltc.fundedAddress, []]);
		expect(await ltc.rpc<string[]>("getrawmempool")).toContain(txid);

		await until("reverted", async () => {
			const tx = await getTx(c.txId);
			return tx.amountConfirming === "0" && tx.hash === null;
		});
		await ltc.rpc("generateblock", [ltc.fundedAddress, []]);
		await new Promise(r => setTimeout(r, 500));
		expect(await getTx(c.txId)).toMatchObject({ amountReceived: "0", amountConfirming: "0" });
		expect(await credits(c.txId)).toHaveLength(0);
		const rows = await node.app.models.ChainTransfer.findAll({ where: { networkId: NET, txHash: txid } });
		expect(rows.map(r => r.status)).toEqual(["reverted"]);
	});
});
