/**
 * Real payments on the Solana test node (test/helpers/solana-node.ts: litesvm executes the signed
 * transactions, a JSON-RPC facade makes slots, blocks and the confirmed / finalized heads): a node
 * running the payments services, webhooks and watcher-solana on `solana-devnet`. The finalized
 * head moves only when the test says, so "confirming" and "credited at finalized" are seen apart.
 */
import { Keypair, LAMPORTS_PER_SOL, PublicKey, SystemProgram } from "@solana/web3.js";
import { createAssociatedTokenAccountIdempotentInstruction, createTransferCheckedInstruction, getAssociatedTokenAddressSync } from "@solana/spl-token";
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { startSolanaNode, type SolanaNode } from "../helpers/solana-node";
import { until } from "../helpers/until";
import { TestNode } from "../helpers/harness";
import { startReceiver, WebhookReceiver } from "../helpers/webhook-receiver";
import { openCheckout, sandboxMerchant, startPaymentsNode, PAYMENTS_SERVICES } from "../e2e/payments.helpers";

const NET = networkIdFor("solana-devnet");
const SOL = tokenIdFor("solana-devnet", "SOL");
const USDC = tokenIdFor("solana-devnet", "USDC");
const DEVNET_USDC_MINT = new PublicKey("4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU");
const REQUIRED = 32;

describe("Solana watcher on the litesvm-backed test node", () => {
	let sol: SolanaNode;
	let node: TestNode;
	let receiver: WebhookReceiver;
	let key: { key: string; secret: string };
	let payer: Keypair;
	let usdcMint: PublicKey;

	beforeAll(async () => {
		sol = await startSolanaNode({ finalizeDistance: null });
		payer = Keypair.generate();
		await sol.airdrop(payer.publicKey, 100n * BigInt(LAMPORTS_PER_SOL));
		usdcMint = await sol.createMint(6, { address: DEVNET_USDC_MINT });
		await sol.mintTo(usdcMint, payer.publicKey, 1_000_000_000n);
		await sol.settle();
		receiver = await startReceiver();
		node = await startPaymentsNode({
			services: [...PAYMENTS_SERVICES, "webhooks", "watcher-solana"],
			env: { RPC_URL_SOLANA_DEVNET: sol.url, WATCHER_POLL_MS: "50", WEBHOOK_POLL_MS: "50" },
		});
		({ key } = await sandboxMerchant(node, receiver.url));
		// The watcher has started its cursor (its first step) before anything is paid.
		await until("cursor", async () => (await node.app.models.ChainCursor.findByPk(NET))?.blockNumber != null, 60_000);
	}, 180_000);

	afterAll(async () => {
		await node?.stop();
		await receiver?.close();
		await sol?.stop();
	});

	const checkout = (amount: string, tokenId = SOL, currency = "sol") => openCheckout(node, key, { amount, currency, tokenId, networkId: NET });
	const getTx = async (id: string) => (await node.http("GET", `/payments/transactions/${id}`)).body;
	const hooksFor = (intentId: string) => receiver.received.filter(h => h.json?.data?.object?.id === intentId).map(h => h.json.type as string);
	const credits = (txId: string) => node.app.models.TransactionCredit.findAll({ where: { transactionId: txId } });
	const lamports = (sol: string) => BigInt(Math.round(Number(sol) * 1e6)) * 1000n;
	const paySol = (to: string, amount: string) => sol.send([SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: new PublicKey(to), lamports: lamports(amount) })], [payer]);
	const payToken = (mint: PublicKey, to: string, units: bigint) => {
		const owner = new PublicKey(to);
		const toAta = getAssociatedTokenAddressSync(mint, owner);
		return sol.send([createAssociatedTokenAccountIdempotentInstruction(payer.publicKey, toAta, owner, mint), createTransferCheckedInstruction(getAssociatedTokenAddressSync(mint, payer.publicKey), mint, toAta, payer.publicKey, units, 6)], [payer]);
	};

	it("shows a SOL payment confirming n of 32 from confirmed blocks, and completes it at finalized with signed webhooks", async () => {
		const c = await checkout("0.5");
		const sig = await paySol(c.address, "0.5");
		await sol.produceBlock();
		const seen = await until("confirming", async () => {
			const tx = await getTx(c.txId);
			return tx.amountConfirming === "0.5" ? tx : null;
		});
		expect(seen).toMatchObject({ status: "pending", hash: sig, amountReceived: "0", requiredConfirmations: REQUIRED });
		expect(seen.confirmations).toBeGreaterThanOrEqual(1);
		expect(seen.confirmations).toBeLessThan(REQUIRED);
		await sol.produceBlocks(3);
		await until("deeper", async () => (await getTx(c.txId)).confirmations > seen.confirmations);
		expect((await getTx(c.txId)).status).toBe("pending");
		await sol.finalize();
		const done = await until("completed", async () => {
			const tx = await getTx(c.txId);
			return tx.status === "completed" ? tx : null;
		});
		expect(done).toMatchObject({ amountReceived: "0.5", amountConfirming: "0", hash: sig });
		await until("webhooks", async () => hooksFor(c.intentId).includes("payment_intent.completed"));
		expect(hooksFor(c.intentId)).toEqual(["payment_intent.processing", "payment_intent.completed"]);
		const hook = receiver.received.find(h => h.json?.data?.object?.id === c.intentId)!;
		expect(hook.headers["x-webhook-signature"]).toMatch(/^[0-9a-f]{64}$/);
		expect((await credits(c.txId)).map(r => [r.txHash, r.amount])).toEqual([[sig, "0.5"]]);
	}, 110_000);

	it("credits USDC of the catalogue's mint at finalized, and never a token of another mint", async () => {
		const c = await checkout("2", USDC, "usdc");
		// A mint that is not the catalogue's, paid first: the same decimals, the same amount.
		const fakeMint = await sol.createMint(6);
		await sol.mintTo(fakeMint, payer.publicKey, 10_000_000n);
		await sol.produceBlock();
		await payToken(fakeMint, c.address, 2_000_000n);
		const sig = await payToken(usdcMint, c.address, 2_000_000n);
		await sol.produceBlock();
		await until("USDC confirming", async () => (await getTx(c.txId)).amountConfirming === "2");
		await sol.finalize();
		await until("USDC completed", async () => (await getTx(c.txId)).status === "completed");
		expect((await credits(c.txId)).map(r => [r.txHash, r.amount])).toEqual([[sig, "2"]]);
	});

	it("credits a partial payment topped up, an over-payment, and two transfers of one transaction to two checkouts", async () => {
		const a = await checkout("0.3");
		await paySol(a.address, "0.1");
		await sol.produceBlock();
		await sol.finalize();
		await until("partial", async () => (await getTx(a.txId)).amountReceived === "0.1");
		expect((await getTx(a.txId)).status).toBe("pending");
		await paySol(a.address, "0.2");
		await sol.produceBlock();
		await sol.finalize();
		await until("topped up", async () => (await getTx(a.txId)).status === "completed");
		expect((await getTx(a.txId)).amountReceived).toBe("0.3");

		const b = await checkout("0.05");
		await paySol(b.address, "0.0765");
		await sol.produceBlock();
		await sol.finalize();
		const over = await until("over", async () => {
			const tx = await getTx(b.txId);
			return tx.status === "completed" ? tx : null;
		});
		expect(over.amountReceived).toBe("0.0765");

		const x = await checkout("0.1");
		const y = await checkout("0.2");
		const both = await sol.send(
			[SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: new PublicKey(x.address), lamports: lamports("0.1") }), SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: new PublicKey(y.address), lamports: lamports("0.2") })],
			[payer],
		);
		await sol.produceBlock();
		await sol.finalize();
		await until("both completed", async () => (await getTx(x.txId)).status === "completed" && (await getTx(y.txId)).status === "completed");
		const [cx, cy] = [await credits(x.txId), await credits(y.txId)];
		expect([cx.map(r => [r.txHash, r.amount]), cy.map(r => [r.txHash, r.amount])]).toEqual([[[both, "0.1"]], [[both, "0.2"]]]);
		expect(cx[0].logIndex).not.toBe(cy[0].logIndex);
	}, 110_000);

	it("credits nothing from a failed transaction", async () => {
		const c = await checkout("1");
		const poor = Keypair.generate();
		await sol.airdrop(poor.publicKey, 10_000_000n);
		await sol.produceBlock();
		// More than it holds: executed, in the block with meta.err, its fee charged.
		const failed = await sol.send([SystemProgram.transfer({ fromPubkey: poor.publicKey, toPubkey: new PublicKey(c.address), lamports: lamports("1") })], [poor]);
		const slot = await sol.produceBlock();
		await sol.finalize();
		expect((await sol.status(failed))?.err).not.toBeNull();
		// The watcher read past the failed transaction's block, and found nothing for the checkout.
		await until("cursor past the block", async () => ((await node.app.models.ChainCursor.findByPk(NET))?.blockNumber ?? 0) >= slot);
		expect(await getTx(c.txId)).toMatchObject({ amountConfirming: "0", amountReceived: "0", status: "pending" });
		expect(await credits(c.txId)).toEqual([]);
	});

	it("reverts a payment whose confirmed block is dropped before finality, and never credits it", async () => {
		const c = await checkout("0.4");
		await paySol(c.address, "0.4");
		const slot = await sol.produceBlock();
		await until("confirming", async () => (await getTx(c.txId)).amountConfirming === "0.4");
		await sol.dropBlock(slot);
		await sol.produceBlocks(3);
		await sol.finalize();
		await until("reverted", async () => (await getTx(c.txId)).amountConfirming === "0");
		const after = await sol.produceBlocks(2);
		await sol.finalize();
		await until("cursor past the fork", async () => ((await node.app.models.ChainCursor.findByPk(NET))?.blockNumber ?? 0) >= after);
		expect(await getTx(c.txId)).toMatchObject({ amountReceived: "0", status: "pending" });
		expect(await credits(c.txId)).toEqual([]);
		expect(await sol.balance(new PublicKey(c.address), "finalized")).toBe(0n);
	});
});
