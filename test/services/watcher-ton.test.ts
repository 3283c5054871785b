/**
 * Real payments on the TON test node (test/helpers/ton-node.ts: @ton/sandbox executes the real
 * wallet and jetton contracts, a loopback server answers toncenter's v3 API and seals masterchain
 * blocks when the test says): a node running the payments services, webhooks and watcher-ton on
 * `ton` (a live organization: USDT is in the catalogue of the mainnet network only). USDT is the reference jetton minter of @ton-community/assets-sdk placed at the
 * catalogue's USDT master address (not the exact USDT-on-TON contract); a look-alike "USDT" is the
 * same code at another address.
 */
import { Address, beginCell, internal, toNano } from "@ton/core";
import { WalletContractV4 } from "@ton/ton";
import { CATALOGUE, networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { startTonNode, type Jetton, type TestWallet, type TonNode } from "../helpers/ton-node";
import { rawAddress, type TxRecord } from "../helpers/ton-facade";
import { until } from "../helpers/until";
import { TestNode } from "../helpers/harness";
import { startReceiver, WebhookReceiver } from "../helpers/webhook-receiver";
import { openCheckout, startPaymentsNode, PAYMENTS_SERVICES } from "../e2e/payments.helpers";
import { createUserWithToken } from "../helpers/users";

const NET = networkIdFor("ton");
const TON = tokenIdFor("ton", "TON");
const USDT = tokenIdFor("ton", "USDT");
const USDT_MASTER = Address.parse(CATALOGUE.find(n => n.slug === "ton")!.tokens.find(t => t.symbol === "USDT")!.contractAddress!);

/** The watcher's key of an account's (a deposit's, a jetton wallet's) transaction in a trace: its hash as hex. */
function depositTxHash(txs: TxRecord[], account: string | Address): string {
	const raw = rawAddress(typeof account === "string" ? Address.parse(account) : account);
	const tx = txs.find(t => t.account === raw);
	if (!tx) throw new Error(`no transaction of ${account.toString()} in the trace`);
	return Buffer.from(tx.hash, "base64").toString("hex");
}

describe("TON watcher on the sandbox-backed test node", () => {
	let ton: TonNode;
	let node: TestNode;
	let receiver: WebhookReceiver;
	let key: { key: string; secret: string };
	let payer: TestWallet;
	let usdt: Jetton;
	let lookalike: Jetton;

	beforeAll(async () => {
		ton = await startTonNode();
		payer = await ton.wallet({ balance: toNano("10000") });
		// The reference minter at the catalogue's USDT master address.
		usdt = await ton.placeJetton(USDT_MASTER, { name: "Tether USD", symbol: "USDT", decimals: 6 });
		lookalike = await ton.deployJetton({ symbol: "USDT", decimals: 6 });
		await ton.mint(usdt, payer.address, 1_000_000_000n);
		await ton.mint(lookalike, payer.address, 1_000_000_000n);
		await ton.seal();
		expect(await ton.jettonBalance(usdt, payer.address)).toBe(1_000_000_000n);
		receiver = await startReceiver();
		node = await startPaymentsNode({
			services: [...PAYMENTS_SERVICES, "webhooks", "watcher-ton"],
			env: { RPC_URL_TON: ton.url, WATCHER_POLL_MS: "50", WEBHOOK_POLL_MS: "50" },
		});
		// `ton` is a mainnet network: a live organization's key (sandbox ones may use test networks only).
		const user = await createUserWithToken(node);
		const res = await node.http("POST", `/organizations/${user.live.id}/api-keys`, { token: user.token, body: { name: "shop", webhookUrl: receiver.url } });
		expect(res.status).toBe(201);
		key = { key: res.body.key, secret: res.body.secret };
		await until("cursor", async () => (await node.app.models.ChainCursor.findByPk(NET))?.blockNumber != null, 60_000);
	}, 180_000);

	afterAll(async () => {
		await node?.stop();
		await receiver?.close();
		await ton?.stop();
	});

	const checkout = (amount: string, tokenId = TON, currency = "ton") => openCheckout(node, key, { amount, currency, tokenId, networkId: NET });
	const getTx = async (id: string) => (await node.http("GET", `/payments/transactions/${id}`)).body;
	const hooksFor = (intentId: string) => receiver.received.filter(h => h.json?.data?.object?.id === intentId).map(h => h.json.type as string);
	const credits = async (txId: string) => (await node.app.models.TransactionCredit.findAll({ where: { transactionId: txId } })).map(r => [r.txHash, r.amount]);
	const cursorAt = async (seqno: number) => until(`cursor at ${seqno}`, async () => ((await node.app.models.ChainCursor.findByPk(NET))?.blockNumber ?? 0) >= seqno);

	it("credits TON paid to an undeployed deposit once a masterchain block commits it, with signed webhooks", async () => {
		const c = await checkout("1.5");
		expect(c.address).toMatch(/^UQ/);
		expect(ton.status(Address.parse(c.address))).not.toBe("active");
		const sent = await ton.pay(payer, c.address, toNano("1.5"));
		await ton.seal();
		const done = await until("completed", async () => {
			const tx = await getTx(c.txId);
			return tx.status === "completed" ? tx : null;
		});
		const hash = depositTxHash(sent.txs, c.address);
		expect(done).toMatchObject({ amountReceived: "1.5", amountConfirming: "0", hash });
		await until("webhooks", async () => hooksFor(c.intentId).includes("payment_intent.completed"));
		expect(hooksFor(c.intentId)).toContain("payment_intent.completed");
		const hook = receiver.received.find(h => h.json?.data?.object?.id === c.intentId)!;
		expect(hook.headers["x-webhook-signature"]).toMatch(/^[0-9a-f]{64}$/);
		expect(await credits(c.txId)).toEqual([[hash, "1.5"]]);
		// The TON is where the watcher says: in the still undeployed deposit.
		expect(ton.balance(Address.parse(c.address))).toBe(toNano("1.5"));
	});

	it("credits USDT from the jetton wallet of the catalogue's master, never a look-alike master's", async () => {
		const c = await checkout("2", USDT, "usdt");
		const owner = Address.parse(c.address);
		// The same symbol, decimals and amount from another master, first.
		const fake = await ton.jettonTransfer(payer, lookalike, owner, 2_000_000n);
		await ton.seal();
		// Read and reported: only the TON the notification carried (below), no USDT.
		await until("look-alike reported", async () => (await credits(c.txId)).length === 1);
		expect(await getTx(c.txId)).toMatchObject({ amountReceived: "0", status: "pending" });
		expect(await ton.jettonBalance(lookalike, owner)).toBe(2_000_000n);
		// The real one.
		const real = await ton.jettonTransfer(payer, usdt, owner, 2_000_000n);
		await ton.seal();
		await until("USDT completed", async () => (await getTx(c.txId)).status === "completed");
		// The look-alike's notification is no USDT; the 0.01 TON it carried (its forward amount) did
		// arrive and is recorded as TON, apart from the USDT received. The USDT is credited once, keyed
		// by the deposit's jetton wallet's transaction; the real notification (and its forward TON)
		// credits nothing more.
		const wallet = await ton.jettonWalletAddress(usdt, owner);
		expect(real.txs.some(t => t.account === rawAddress(owner))).toBe(true);
		const rows = await node.app.models.TransactionCredit.findAll({ where: { transactionId: c.txId }, order: [["id", "ASC"]] });
		expect(rows.map(r => [r.txHash, r.tokenId, r.amount])).toEqual([
			[depositTxHash(fake.txs, c.address), TON, "0.01"],
			[depositTxHash(real.txs, wallet), USDT, "2"],
		]);
		expect((await getTx(c.txId)).amountReceived).toBe("2");
		expect(await ton.jettonBalance(usdt, owner)).toBe(2_000_000n);
	});

	it("credits USDT sent without a notification (forward_ton_amount 0) once, at the deposit's jetton wallet", async () => {
		const c = await checkout("4", USDT, "usdt");
		const owner = Address.parse(c.address);
		const sent = await ton.jettonTransfer(payer, usdt, owner, 4_000_000n, { forwardTonAmount: 0n });
		const seqno = await ton.seal();
		// No transfer_notification: the deposit itself has no transaction at all.
		expect(sent.txs.some(t => t.account === rawAddress(owner))).toBe(false);
		const wallet = await ton.jettonWalletAddress(usdt, owner);
		await until("USDT completed", async () => (await getTx(c.txId)).status === "completed");
		await cursorAt(seqno);
		expect(await credits(c.txId)).toEqual([[depositTxHash(sent.txs, wallet), "4"]]);
		expect(await getTx(c.txId)).toMatchObject({ amountReceived: "4", status: "completed" });
		expect(await ton.jettonBalance(usdt, owner)).toBe(4_000_000n);
	});

	it("credits USDT with a notification exactly once, the notification sealed in a later block than the jetton wallet's credit", async () => {
		const c = await checkout("5", USDT, "usdt");
		const owner = Address.parse(c.address);
		const wallet = await ton.jettonWalletAddress(usdt, owner);
		ton.setHopBlocks(1);
		let sent: Awaited<ReturnType<TonNode["jettonTransfer"]>>;
		let last: number;
		try {
			sent = await ton.jettonTransfer(payer, usdt, owner, 5_000_000n, { forwardTonAmount: toNano("0.05") });
			last = await ton.settle();
		} finally {
			ton.setHopBlocks(0);
		}
		const at = (account: Address) => sent.txs.find(t => t.account === rawAddress(account))!;
		expect(at(owner).mcSeqno!).toBeGreaterThan(at(wallet).mcSeqno!);
		await cursorAt(last);
		await until("USDT completed", async () => (await getTx(c.txId)).status === "completed");
		// Both transactions were read (the cursor passed the last block); one credit, the wallet's.
		const rows = await node.app.models.TransactionCredit.findAll({ where: { transactionId: c.txId } });
		expect(rows.map(r => [r.txHash, r.tokenId, r.amount])).toEqual([[depositTxHash(sent.txs, wallet), USDT, "5"]]);
		expect(await getTx(c.txId)).toMatchObject({ amountReceived: "5", status: "completed" });
	});

	it("credits no USDT from a transfer_notification forged by a plain wallet claiming a real sender", async () => {
		const c = await checkout("3", USDT, "usdt");
		const forger = await ton.wallet({ balance: toNano("10") });
		const forged = await ton.forgedNotification(forger, Address.parse(c.address), 3_000_000n, { claimedSender: payer.address });
		await ton.seal();
		// Only the 0.01 TON the forged message carried, as TON.
		await until("forged reported", async () => (await credits(c.txId)).length === 1);
		const rows = await node.app.models.TransactionCredit.findAll({ where: { transactionId: c.txId } });
		expect(rows.map(r => [r.txHash, r.tokenId, r.amount])).toEqual([[depositTxHash(forged.txs, c.address), TON, "0.01"]]);
		expect(await getTx(c.txId)).toMatchObject({ amountReceived: "0", status: "pending" });
	});

	it("credits a partial payment topped up, and an over-payment", async () => {
		const a = await checkout("0.3");
		await ton.pay(payer, a.address, toNano("0.1"));
		await ton.seal();
		await until("partial", async () => (await getTx(a.txId)).amountReceived === "0.1");
		expect((await getTx(a.txId)).status).toBe("pending");
		await ton.pay(payer, a.address, toNano("0.2"));
		await ton.seal();
		await until("topped up", async () => (await getTx(a.txId)).status === "completed");
		expect((await getTx(a.txId)).amountReceived).toBe("0.3");
		expect(await credits(a.txId)).toHaveLength(2);

		const b = await checkout("0.05");
		await ton.pay(payer, b.address, toNano("0.0765"));
		await ton.seal();
		const over = await until("over", async () => {
			const tx = await getTx(b.txId);
			return tx.status === "completed" ? tx : null;
		});
		expect(over.amountReceived).toBe("0.0765");
	});

	it("credits nothing from a bounced payment or an aborted transaction at the deposit", async () => {
		const c = await checkout("1");
		const deposit = Address.parse(c.address);
		// Bounceable to the undeployed deposit: the value goes back to the payer (a bounce phase).
		const bounced = await ton.pay(payer, deposit, toNano("1"), { bounce: true });
		// A deploy attempt with another wallet's state init, non-bounceable: compute phase skipped (bad_state), aborted.
		const other = WalletContractV4.create({ workchain: 0, publicKey: ton.keyPair().publicKey });
		const aborted = await ton.pay(payer, deposit, toNano("1"), { bounce: false, init: other.init });
		const seqno = await ton.seal();
		const descriptions = [...bounced.txs, ...aborted.txs].filter(t => t.account === rawAddress(deposit)).map(t => t.json.description as Record<string, any>);
		expect(descriptions).toHaveLength(2);
		expect(descriptions[0]).toMatchObject({ aborted: true, compute_ph: { skipped: true, reason: "no_state" }, bounce: { type: "ok" } });
		expect(descriptions[1]).toMatchObject({ aborted: true, compute_ph: { skipped: true, reason: "bad_state" } });
		await cursorAt(seqno);
		expect(await getTx(c.txId)).toMatchObject({ amountConfirming: "0", amountReceived: "0", status: "pending" });
		expect(await credits(c.txId)).toEqual([]);
		// Then a plain payment to the same deposit is seen and credited.
		const ok = await ton.pay(payer, deposit, toNano("1"), { bounce: false });
		await ton.seal();
		await until("credited after", async () => (await getTx(c.txId)).status === "completed");
		expect(await credits(c.txId)).toEqual([[depositTxHash(ok.txs, c.address), "1"]]);
	});
});
