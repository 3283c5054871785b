/**
 * Real payments on a real UTXO node: litecoind -regtest started by the test, a node running the
 * payments services, webhooks and the UTXO watcher (watcher-bitcoin) on the `litecoin-regtest`
 * network. Blocks are mined by hand so the test controls confirmations and reorgs.
 */
import { parseRpcReply, satoshis } from "../../lib/chains/utxo/source";
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { startLitecoind, type Litecoind } from "../helpers/litecoind";
import { until } from "../helpers/until";
import { TestNode } from "../helpers/harness";
import { watcherServiceTest } from "../helpers/watcher-service";
import type { WebhookReceiver } from "../helpers/webhook-receiver";
import { openCheckout } from "../e2e/payments.helpers";

const NET = networkIdFor("litecoin-regtest");
const LTC = tokenIdFor("litecoin-regtest", "LTC");
const REQUIRED = 3;

describe("UTXO watcher on a real litecoind -regtest", () => {
	let ltc: Litecoind;
	let node: TestNode;
	let receiver: WebhookReceiver;
	let key: { key: string; secret: string };
	const { getTx, getIntent, hooksFor, credits } = watcherServiceTest(
		"watcher-bitcoin",
		async () => {
			// Replacements relayed (Litecoin Core's default refuses them) for the RBF test.
			ltc = await startLitecoind({ args: ["-mempoolreplacement=1"] });
			return { RPC_URL_LITECOIN_REGTEST: ltc.rpcUrl, REQUIRED_CONFIRMATIONS_LITECOIN_REGTEST: String(REQUIRED) };
		},
		t => ({ node, receiver, key } = t),
	);

	afterAll(async () => {
		await ltc?.stop();
	});

	async function checkout(amount: string) {
		const opened = await openCheckout(node, key, { amount, currency: "ltc", tokenId: LTC, networkId: NET });
		expect(opened.address).toMatch(/^rltc1q/);
		return opened;
	}

	const pay = (to: string, amount: string) => ltc.wallet<string>("sendtoaddress", [to, amount]);

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
	}, 110_000);

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
	}, 110_000);

	it("reverts the block sighting of a payment a reorg removes (invalidateblock + blocks without it): unconfirmed again, credited once when mined", async () => {
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

		// Its block's sighting is reverted; the payment is back in the mempool, so the checkout shows
		// it unconfirmed again (0 of m), never credited while blocks keep leaving it out.
		await until("back to 0 confirmations", async () => {
			const tx = await getTx(c.txId);
			return tx.confirmations === 0 && tx.amountReceived === "0" && tx.hash === txid;
		});
		await ltc.rpc("generateblock", [ltc.fundedAddress, []]);
		await new Promise(r => setTimeout(r, 500));
		expect(await getTx(c.txId)).toMatchObject({ amountReceived: "0", amountConfirming: "0.4", confirmations: 0 });
		expect(await credits(c.txId)).toHaveLength(0);
		const rows = await node.app.models.ChainTransfer.findAll({ where: { networkId: NET, txHash: txid }, order: [["id", "ASC"]] });
		expect(rows.map(r => [r.blockHash === "mempool" ? "mempool" : "block", r.status])).toEqual([
			["block", "reverted"],
			["mempool", "active"],
		]);
		const detections = await node.app.models.PaymentDetection.findAll({ where: { transactionId: c.txId }, order: [["id", "ASC"]] });
		expect(detections.map(d => [d.blockHash === "mempool" ? "mempool" : "block", d.status])).toEqual([
			["block", "reverted"],
			["mempool", "confirming"],
		]);
		// Mined again later: credited once.
		await ltc.mine(REQUIRED);
		await until("credited", async () => (await getTx(c.txId)).status === "completed");
		expect((await credits(c.txId)).map(r => r.txHash)).toEqual([txid]);
	});

	it("shows an unconfirmed payment at 0 confirmations from the mempool, then confirms and credits it once", async () => {
		const c = await checkout("0.2");
		const txid = await pay(c.address, "0.2");
		const seen = await until("0 of m", async () => {
			const tx = await getTx(c.txId);
			return tx.confirmations === 0 && tx.hash === txid ? tx : null;
		});
		expect(seen).toMatchObject({ status: "pending", amountConfirming: "0.2", amountReceived: "0", requiredConfirmations: REQUIRED });
		expect((await getIntent(c.intentId)).status).toBe("processing");
		await ltc.mine(1);
		await until("1 of m", async () => (await getTx(c.txId)).confirmations === 1);
		expect((await getTx(c.txId)).amountConfirming).toBe("0.2");
		await ltc.mine(REQUIRED - 1);
		await until("completed", async () => (await getTx(c.txId)).status === "completed");
		expect((await credits(c.txId)).map(r => [r.txHash, r.amount])).toEqual([[txid, "0.2"]]);
		const detections = await node.app.models.PaymentDetection.findAll({ where: { transactionId: c.txId }, order: [["id", "ASC"]] });
		expect(detections.map(d => [d.blockHash === "mempool" ? "mempool" : "block", d.status])).toEqual([
			["mempool", "reverted"],
			["block", "credited"],
		]);
		expect((await getTx(c.txId)).amountConfirming).toBe("0");
	});

	it("reverts an unconfirmed payment replaced in the mempool (RBF) by a transaction that does not pay us", async () => {
		const c = await checkout("0.3");
		const txid = await pay(c.address, "0.3");
		await until("0 of m", async () => (await getTx(c.txId)).hash === txid);
		expect((await getIntent(c.intentId)).status).toBe("processing");

		// The same inputs spent again, to the payer's own wallet, at a higher fee: a BIP-125 replacement.
		const t1 = parseRpcReply<{ result: { vin: Array<{ txid: string; vout: number }>; vout: Array<{ value: string }> } }>(await ltc.rpcRaw("getrawtransaction", [txid, true])).result;
		const fee = parseRpcReply<{ result: { fees: { base: string } } }>(await ltc.rpcRaw("getmempoolentry", [txid])).result.fees.base;
		const inputs = t1.vout.reduce((sum, o) => sum + satoshis(o.value), 0n) + satoshis(fee);
		const back = await ltc.wallet<string>("getnewaddress");
		const keep = inputs - 200_000n; // a much higher fee than the original
		const raw = await ltc.rpc<string>("createrawtransaction", [t1.vin.map(v => ({ txid: v.txid, vout: v.vout, sequence: 0xfffffffd })), { [back]: `${keep / 100_000_000n}.${(keep % 100_000_000n).toString().padStart(8, "0")}` }]);
		const signed = await ltc.wallet<{ hex: string }>("signrawtransactionwithwallet", [raw]);
		const replacement = await ltc.rpc<string>("sendrawtransaction", [signed.hex]);
		expect(await ltc.rpc<string[]>("getrawmempool")).not.toContain(txid);

		await until("reverted", async () => {
			const tx = await getTx(c.txId);
			return tx.amountConfirming === "0" && tx.hash === null;
		});
		expect((await getIntent(c.intentId)).status).toBe("requires_payment_method");
		await ltc.mine(REQUIRED);
		await new Promise(r => setTimeout(r, 500));
		expect(await credits(c.txId)).toHaveLength(0);
		expect(await ltc.rpc<string[]>("getrawmempool")).not.toContain(replacement);
		const rows = await node.app.models.ChainTransfer.findAll({ where: { networkId: NET, txHash: txid } });
		expect(rows.map(r => r.status)).toEqual(["reverted"]);
	});
});
