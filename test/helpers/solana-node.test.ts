/**
 * The Solana test node (test/helpers/solana-node.ts) as a real @solana/web3.js v1 Connection sees
 * it: transactions executed by litesvm, blocks, commitments, skipped slots, dropped blocks and
 * blockhash expiry shaped and answered as Solana's RPC documents them.
 */
import { Connection, Keypair, LAMPORTS_PER_SOL, MessageV0, PublicKey, SendTransactionError, SystemProgram, Transaction, VersionedTransaction, sendAndConfirmTransaction, type BlockResponse } from "@solana/web3.js";
import {
	TOKEN_PROGRAM_ID,
	createAssociatedTokenAccountIdempotentInstruction,
	createTransferCheckedInstruction,
	getAccount,
	getAssociatedTokenAddressSync,
} from "@solana/spl-token";
import fs from "node:fs";
import path from "node:path";
import { base58Encode } from "./solana-facade";
import { startSolanaNode, type SolanaNode } from "./solana-node";
import { until } from "./until";

/** Nothing here depends on the backend: run once (sqlite project), not twice. */
const describeNode = process.env.TEST_BACKEND === "mysql" ? describe.skip : describe;

/** The RPC error a call was answered with (web3.js wraps it). */
async function rpcError(p: Promise<unknown>): Promise<{ code: number; message: string }> {
	try {
		await p;
	} catch (e) {
		const err = e as { code?: number; message: string };
		return { code: err.code ?? 0, message: err.message };
	}
	throw new Error("the call succeeded");
}

function transferTx(from: Keypair, to: PublicKey, lamports: number | bigint, blockhash: string): Transaction {
	const tx = new Transaction({ feePayer: from.publicKey, recentBlockhash: blockhash }).add(SystemProgram.transfer({ fromPubkey: from.publicKey, toPubkey: to, lamports }));
	tx.sign(from);
	return tx;
}

/** A response example from Solana's documentation (test/fixtures/solana-rpc, verbatim). */
function docExample(method: string): Record<string, unknown> {
	return JSON.parse(fs.readFileSync(path.join(__dirname, "../fixtures/solana-rpc", `${method}.json`), "utf8"));
}

/**
 * Where `ours` does not have the shape of `doc`: every key of the documented object present with
 * the same JSON type (a documented `null` accepts anything: nullable), arrays by their first element.
 */
function shapeMismatches(doc: unknown, ours: unknown, at = "$"): string[] {
	if (doc === null) return [];
	const kind = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);
	if (kind(doc) !== kind(ours)) return [`${at}: documented ${kind(doc)}, got ${kind(ours)}`];
	if (Array.isArray(doc)) {
		const docs = doc as unknown[];
		const got = ours as unknown[];
		if (docs.length === 0 || got.length === 0) return [];
		return shapeMismatches(docs.find(x => x !== null) ?? null, got.find(x => x !== null) ?? null, `${at}[]`);
	}
	if (kind(doc) === "object") {
		return Object.entries(doc as Record<string, unknown>).flatMap(([k, v]) =>
			k in (ours as object) ? shapeMismatches(v, (ours as Record<string, unknown>)[k], `${at}.${k}`) : [`${at}.${k}: missing`],
		);
	}
	return [];
}

const getBlockCfg = { maxSupportedTransactionVersion: 0, transactionDetails: "full", rewards: false, commitment: "confirmed" } as const;

describeNode("Solana test node (litesvm behind a JSON-RPC facade)", () => {
	let node: SolanaNode;
	let conn: Connection;
	let payer: Keypair;

	beforeEach(async () => {
		node = await startSolanaNode({ finalizeDistance: null });
		conn = new Connection(node.url, { commitment: "confirmed", disableRetryOnRateLimit: true });
		payer = Keypair.generate();
		await node.airdrop(payer.publicKey, 10n * BigInt(LAMPORTS_PER_SOL));
		await node.settle();
	});
	afterEach(async () => {
		await node?.stop();
	});

	it("a SOL transfer: sent through web3.js, in a block with pre/post balances and the fee, confirmed then finalized", async () => {
		const to = Keypair.generate().publicKey;
		const { blockhash } = await conn.getLatestBlockhash("confirmed");
		const tx = transferTx(payer, to, 1_000_000_000, blockhash);
		const sig = await conn.sendRawTransaction(tx.serialize());
		expect((await conn.getSignatureStatuses([sig])).value[0]?.confirmationStatus).toBe("processed");
		const slot = await node.produceBlock();

		const status = (await conn.getSignatureStatuses([sig])).value[0]!;
		expect(status).toMatchObject({ slot, confirmations: 0, err: null, confirmationStatus: "confirmed" });
		expect(await conn.getBalance(to, "confirmed")).toBe(1_000_000_000);
		expect(await conn.getBalance(to, "finalized")).toBe(0);

		const block = (await conn.getBlock(slot, getBlockCfg)) as BlockResponse;
		expect(block.transactions).toHaveLength(1);
		const t = block.transactions[0];
		expect(t.transaction.signatures[0]).toBe(sig);
		const keys = t.transaction.message.staticAccountKeys.map(k => k.toBase58());
		const iTo = keys.indexOf(to.toBase58());
		const iFrom = keys.indexOf(payer.publicKey.toBase58());
		expect(t.meta!.err).toBeNull();
		expect(t.meta!.fee).toBe(5000);
		expect(t.meta!.preBalances[iTo]).toBe(0);
		expect(t.meta!.postBalances[iTo]).toBe(1_000_000_000);
		expect(t.meta!.preBalances[iFrom] - t.meta!.postBalances[iFrom]).toBe(1_000_000_000 + 5000);
		expect(t.meta!.logMessages).toContain("Program 11111111111111111111111111111111 success");
		expect(await conn.getBlock(slot, { ...getBlockCfg, commitment: "finalized" }).catch(e => e.message)).toMatch(/Block not available for slot/);

		await node.finalize();
		expect((await conn.getSignatureStatuses([sig])).value[0]).toMatchObject({ slot, confirmations: null, confirmationStatus: "finalized" });
		expect(await conn.getBalance(to, "finalized")).toBe(1_000_000_000);
		const got = await conn.getTransaction(sig, { maxSupportedTransactionVersion: 0, commitment: "finalized" });
		expect(got?.slot).toBe(slot);
		expect(got?.meta?.postBalances[iTo]).toBe(1_000_000_000);
	});

	it("an SPL transfer that creates the recipient's associated token account: token balances (mint, owner, programId, amounts) before and after", async () => {
		const mint = await node.createMint(6);
		const { ata: fromAta } = await node.mintTo(mint, payer.publicKey, 50_000_000n);
		await node.settle();
		const owner = Keypair.generate().publicKey;
		const toAta = getAssociatedTokenAddressSync(mint, owner);
		const { blockhash } = await conn.getLatestBlockhash("confirmed");
		const tx = new Transaction({ feePayer: payer.publicKey, recentBlockhash: blockhash }).add(
			createAssociatedTokenAccountIdempotentInstruction(payer.publicKey, toAta, owner, mint),
			createTransferCheckedInstruction(fromAta, mint, toAta, payer.publicKey, 12_500_000n, 6),
		);
		tx.sign(payer);
		const sig = await conn.sendRawTransaction(tx.serialize());
		const slot = await node.produceBlock();

		const block = (await conn.getBlock(slot, getBlockCfg)) as BlockResponse;
		const t = block.transactions.find(x => x.transaction.signatures[0] === sig)!;
		const keys = t.transaction.message.staticAccountKeys.map(k => k.toBase58());
		expect(t.meta!.err).toBeNull();
		expect(t.meta!.preTokenBalances).toEqual([
			{ accountIndex: keys.indexOf(fromAta.toBase58()), mint: mint.toBase58(), owner: payer.publicKey.toBase58(), programId: TOKEN_PROGRAM_ID.toBase58(), uiTokenAmount: { amount: "50000000", decimals: 6, uiAmount: 50, uiAmountString: "50" } },
		]);
		expect(t.meta!.postTokenBalances).toEqual(
			expect.arrayContaining([
				{ accountIndex: keys.indexOf(fromAta.toBase58()), mint: mint.toBase58(), owner: payer.publicKey.toBase58(), programId: TOKEN_PROGRAM_ID.toBase58(), uiTokenAmount: { amount: "37500000", decimals: 6, uiAmount: 37.5, uiAmountString: "37.5" } },
				{ accountIndex: keys.indexOf(toAta.toBase58()), mint: mint.toBase58(), owner: owner.toBase58(), programId: TOKEN_PROGRAM_ID.toBase58(), uiTokenAmount: { amount: "12500000", decimals: 6, uiAmount: 12.5, uiAmountString: "12.5" } },
			]),
		);
		expect(t.meta!.postTokenBalances).toHaveLength(2);
		// The associated-token program created the account through inner instructions (CPI to System and Token).
		expect(t.meta!.innerInstructions!.some(ii => ii.index === 0 && ii.instructions.length > 0)).toBe(true);
		// spl-token's own reader and the token RPC methods agree with the VM.
		expect((await getAccount(conn, toAta, "confirmed")).amount).toBe(12_500_000n);
		expect((await conn.getTokenAccountBalance(toAta, "confirmed")).value).toEqual({ amount: "12500000", decimals: 6, uiAmount: 12.5, uiAmountString: "12.5" });
		const byOwner = await conn.getTokenAccountsByOwner(owner, { mint }, "confirmed");
		expect(byOwner.value.map(v => v.pubkey.toBase58())).toEqual([toAta.toBase58()]);
		expect((await conn.getParsedTokenAccountsByOwner(owner, { mint }, "confirmed")).value[0].account.data.parsed.info.tokenAmount.amount).toBe("12500000");
		// Not finalized yet: the account does not exist at finalized.
		expect(await conn.getAccountInfo(toAta, "finalized")).toBeNull();
	});

	it("a transaction failing in execution is in the block with meta.err and its fee charged (preflight skipped); with preflight the node answers the simulation error", async () => {
		const to = Keypair.generate().publicKey;
		const before = await conn.getBalance(payer.publicKey, "confirmed");
		const tooMuch = transferTx(payer, to, 100n * BigInt(LAMPORTS_PER_SOL), (await node.head()).blockhash);
		const err = await conn.sendRawTransaction(tooMuch.serialize()).then(
			() => null,
			(e: unknown) => e,
		);
		expect(err).toBeInstanceOf(SendTransactionError);
		expect((err as SendTransactionError).message).toMatch(/Transaction simulation failed: Error processing Instruction 0: custom program error: 0x1/);
		expect((err as SendTransactionError).logs).toEqual(expect.arrayContaining([expect.stringMatching(/insufficient lamports/)]));
		const reply = await node.rpc("sendTransaction", [tooMuch.serialize().toString("base64"), { encoding: "base64" }]);
		expect(reply.error).toMatchObject({ code: -32002, data: { err: { InstructionError: [0, { Custom: 1 }] }, accounts: null } });
		const emptySlot = await node.produceBlock();
		expect((await conn.getBlock(emptySlot, getBlockCfg))!.transactions).toHaveLength(0);

		const sig = await conn.sendRawTransaction(tooMuch.serialize(), { skipPreflight: true });
		const slot = await node.produceBlock();
		const block = (await conn.getBlock(slot, getBlockCfg)) as BlockResponse;
		expect(block.transactions).toHaveLength(1);
		const meta = block.transactions[0].meta!;
		expect(meta.err).toEqual({ InstructionError: [0, { Custom: 1 }] });
		expect(meta.fee).toBe(5000);
		expect(meta.postBalances[0]).toBe(before - 5000);
		expect(meta.postBalances[1]).toBe(0);
		expect((await conn.getSignatureStatuses([sig])).value[0]).toMatchObject({ slot, err: { InstructionError: [0, { Custom: 1 }] } });
		expect(await conn.getBalance(payer.publicKey, "confirmed")).toBe(before - 5000);

		// A fee payer with nothing cannot pay: never in a block, no status (a cluster drops it).
		const broke = Keypair.generate();
		const sig2 = await conn.sendRawTransaction(transferTx(broke, to, 1, (await node.head()).blockhash).serialize(), { skipPreflight: true });
		await node.produceBlock();
		expect((await conn.getSignatureStatuses([sig2])).value[0]).toBeNull();
	});

	it("skipped slots: not in getBlocks; getBlock answers -32004 above the finalized root and -32007 at or below it", async () => {
		const start = await node.produceBlock();
		await node.skipSlots(2);
		const after = await node.produceBlock();
		expect(after).toBe(start + 3);
		expect(await conn.getBlocks(start, after, "confirmed")).toEqual([start, after]);
		expect(await conn.getBlocks(start, undefined, "confirmed")).toEqual([start, after]);
		expect(await rpcError(conn.getBlock(start + 1, getBlockCfg))).toMatchObject({ code: -32004, message: expect.stringContaining(`Block not available for slot ${start + 1}`) });
		// finalized getBlocks stops at the finalized head
		expect(await conn.getBlocks(start, after, "finalized")).toEqual([]);
		await node.finalize();
		expect(await rpcError(conn.getBlock(start + 1, getBlockCfg))).toMatchObject({
			code: -32007,
			message: expect.stringContaining(`Slot ${start + 1} was skipped, or missing due to ledger jump to recent snapshot`),
		});
		expect((await node.rpc("getBlocksWithLimit", [start, 2, { commitment: "finalized" }])).result).toEqual([start, after]);
		expect((await node.rpc("getBlocksWithLimit", [start, 1, { commitment: "finalized" }])).result).toEqual([start]);
		const parent = (await conn.getBlock(after, { ...getBlockCfg, commitment: "finalized" }))!;
		expect(parent.parentSlot).toBe(start);
		expect(parent.previousBlockhash).toBe((await conn.getBlock(start, getBlockCfg))!.blockhash);
		// a slot not yet produced
		expect(await rpcError(conn.getBlock(after + 10, getBlockCfg))).toMatchObject({ code: -32004 });
	});

	it("confirmed and finalized heads move apart; processed is refused by getBlock as agave refuses it", async () => {
		const f0 = await conn.getSlot("finalized");
		await node.produceBlocks(3);
		const confirmed = await conn.getSlot("confirmed");
		expect(confirmed).toBe(f0 + 3);
		expect(await conn.getSlot("finalized")).toBe(f0);
		expect(await conn.getBlockHeight("confirmed")).toBe((await conn.getBlockHeight("finalized")) + 3);
		const reply = await node.rpc("getBlock", [confirmed, { commitment: "processed" }]);
		expect(reply.error).toEqual({ code: -32602, message: "Method does not support commitment below `confirmed`" });
		await node.setFinalizeDistance(1);
		expect(await conn.getSlot("finalized")).toBe(confirmed - 1);
		await node.produceBlock();
		expect(await conn.getSlot("finalized")).toBe(confirmed);
		const epoch = await conn.getEpochInfo("confirmed");
		expect(epoch.absoluteSlot).toBe(confirmed + 1);
		expect(await conn.getGenesisHash()).toBe(node.genesisHash);
		expect((await conn.getVersion())["solana-core"]).toMatch(/^\d+\.\d+\.\d+$/);
		expect(await conn.getMinimumBalanceForRentExemption(165)).toBe(2_039_280);
	});

	it("a dropped confirmed block: its transactions never happened on the surviving fork (balances restored, statuses gone, its blockhash unknown)", async () => {
		const to = Keypair.generate().publicKey;
		const payerBefore = await conn.getBalance(payer.publicKey, "confirmed");
		const sig = await conn.sendRawTransaction(transferTx(payer, to, 2_000_000_000, (await node.head()).blockhash).serialize());
		const slot = await node.produceBlock();
		const droppedHash = (await node.head()).blockhash;
		const sig2 = await conn.sendRawTransaction(transferTx(payer, to, 1_000_000_000, (await node.head()).blockhash).serialize());
		const slot2 = await node.produceBlock();
		expect(await conn.getBalance(to, "confirmed")).toBe(3_000_000_000);

		await node.dropBlock(slot);
		expect(await conn.getBalance(to, "confirmed")).toBe(0);
		expect(await conn.getBalance(payer.publicKey, "confirmed")).toBe(payerBefore);
		expect((await conn.getSignatureStatuses([sig, sig2])).value).toEqual([null, null]);
		expect(await rpcError(conn.getBlock(slot, getBlockCfg))).toMatchObject({ code: -32004 });
		expect((await conn.isBlockhashValid(droppedHash, { commitment: "confirmed" })).value).toBe(false);
		expect(await conn.getTransaction(sig, { maxSupportedTransactionVersion: 0, commitment: "confirmed" })).toBeNull();

		// The surviving fork goes on from the parent; the dropped slots read as skipped once rooted.
		const next = await node.produceBlock();
		expect(next).toBe(slot2 + 1);
		const block = (await conn.getBlock(next, getBlockCfg))!;
		expect(block.parentSlot).toBe(slot - 1);
		expect(await conn.getBlocks(slot - 1, next, "confirmed")).toEqual([slot - 1, next]);
		await node.finalize();
		expect(await rpcError(conn.getBlock(slot, getBlockCfg))).toMatchObject({ code: -32007 });
		// The same signed transaction lands again on the surviving fork when its blockhash is still valid there.
		const again = transferTx(payer, to, 500_000_000, (await node.head()).blockhash);
		await conn.sendRawTransaction(again.serialize());
		await node.produceBlock();
		expect(await conn.getBalance(to, "confirmed")).toBe(500_000_000);
		await expect(node.dropBlock(next)).rejects.toThrow(/finalized/);
	});

	it("blockhash expiry: valid while at most 150 blocks are above it, then refused (preflight) or never landing (skipped preflight)", async () => {
		const to = Keypair.generate().publicKey;
		const { blockhash, lastValidBlockHeight } = await conn.getLatestBlockhash("confirmed");
		expect(lastValidBlockHeight).toBe((await conn.getBlockHeight("confirmed")) + 150);
		const late = transferTx(payer, to, 1_000_000_000, blockhash);
		await node.produceBlocks(150);
		expect(await conn.getBlockHeight("confirmed")).toBe(lastValidBlockHeight);
		expect((await conn.isBlockhashValid(blockhash, { commitment: "confirmed" })).value).toBe(true);
		await node.produceBlock();
		expect((await conn.isBlockhashValid(blockhash, { commitment: "confirmed" })).value).toBe(false);
		const refused = await conn.sendRawTransaction(late.serialize()).then(
			() => null,
			(e: SendTransactionError) => e,
		);
		expect(refused?.message).toMatch(/Transaction simulation failed: Blockhash not found/);
		const reply = await node.rpc("sendTransaction", [late.serialize().toString("base64"), { encoding: "base64" }]);
		expect(reply.error).toMatchObject({ code: -32002, message: "Transaction simulation failed: Blockhash not found", data: { err: "BlockhashNotFound", logs: [] } });
		const sig = await conn.sendRawTransaction(late.serialize(), { skipPreflight: true });
		await node.produceBlocks(3);
		expect((await conn.getSignatureStatuses([sig])).value[0]).toBeNull();
		expect(await conn.getBalance(to, "confirmed")).toBe(0);
		const msg = late.compileMessage();
		expect((await conn.getFeeForMessage(msg, "confirmed")).value).toBeNull();
	});

	it("a transaction signed on a blockhash 150 blocks old still lands in the next block (the last one its blockhash allows)", async () => {
		const to = Keypair.generate().publicKey;
		const { blockhash, lastValidBlockHeight } = await conn.getLatestBlockhash("confirmed");
		await node.produceBlocks(150);
		const sig = await conn.sendRawTransaction(transferTx(payer, to, 1_000_000_000, blockhash).serialize());
		const slot = await node.produceBlock();
		const status = (await conn.getSignatureStatuses([sig])).value[0];
		expect(status?.slot).toBe(slot);
		expect(((await conn.getBlock(slot, getBlockCfg)) as unknown as { blockHeight: number }).blockHeight).toBe(lastValidBlockHeight + 1);
	});

	it("sendTransaction base58, simulateTransaction, getFeeForMessage, duplicate sends, bad signatures", async () => {
		const to = Keypair.generate().publicKey;
		const tx = transferTx(payer, to, 1_000_000_000, (await node.head()).blockhash);
		const sim = await conn.simulateTransaction(tx);
		expect(sim.value.err).toBeNull();
		expect(sim.value.logs).toContain("Program 11111111111111111111111111111111 success");
		expect((await conn.getFeeForMessage(tx.compileMessage(), "confirmed")).value).toBe(5000);
		const reply = await node.rpc("sendTransaction", [base58Encode(tx.serialize()), {}]);
		expect(reply.result).toBe(base58Encode(tx.signatures[0].signature!));
		// Sent again: the same signature, executed once.
		expect((await node.rpc("sendTransaction", [tx.serialize().toString("base64"), { encoding: "base64", skipPreflight: true }])).result).toBe(reply.result);
		await node.produceBlock();
		expect(await conn.getBalance(to, "confirmed")).toBe(1_000_000_000);
		const sim2 = await node.rpc("simulateTransaction", [tx.serialize().toString("base64"), { encoding: "base64" }]);
		expect((sim2.result as { value: { err: unknown } }).value.err).toBe("AlreadyProcessed");
		const forged = transferTx(payer, to, 5, (await node.head()).blockhash);
		forged.signatures[0].signature![0] ^= 1;
		const bad = await node.rpc("sendTransaction", [forged.serialize({ verifySignatures: false }).toString("base64"), { encoding: "base64" }]);
		expect(bad.error).toEqual({ code: -32003, message: "Transaction signature verification failure" });
		const infos = await conn.getMultipleAccountsInfo([to, Keypair.generate().publicKey], "confirmed");
		expect(infos[0]?.lamports).toBe(1_000_000_000);
		expect(infos[0]?.owner.equals(SystemProgram.programId)).toBe(true);
		expect(infos[1]).toBeNull();
		expect(await conn.getBlockTime((await node.head()).slot)).toEqual(expect.any(Number));
	});

	it("answers in the shapes of Solana's documented response examples (keys and JSON types; test/fixtures/solana-rpc)", async () => {
		const to = Keypair.generate().publicKey;
		const mint = await node.createMint(6);
		const { ata } = await node.mintTo(mint, payer.publicKey, 1_000_000n);
		const sig = await node.send([SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports: 1_000_000_000 })], [payer]);
		await node.settle();
		const slot = (await node.status(sig))!.slot;
		const head = await node.head("finalized");
		const cases: Array<[string, unknown[], (doc: Record<string, unknown>) => unknown]> = [
			["getBlock", [slot, { encoding: "json", maxSupportedTransactionVersion: 0, transactionDetails: "full", rewards: false }], d => d.result],
			["getTransaction", [sig, "json"], d => d.result],
			["getSignatureStatuses", [[sig, base58Encode(new Uint8Array(64).fill(7))], { searchTransactionHistory: true }], d => d.result],
			["getLatestBlockhash", [{ commitment: "confirmed" }], d => d.result],
			["getBlocks", [head.slot - 3, head.slot], d => d.result],
			["getBlocksWithLimit", [head.slot - 3, 3], d => d.result],
			["isBlockhashValid", [head.blockhash, { commitment: "confirmed" }], d => d.result],
			["getSlot", [], d => d.result],
			["getBlockHeight", [], d => d.result],
			["getBalance", [to.toBase58()], d => d.result],
			["getSignaturesForAddress", [to.toBase58(), { limit: 1 }], d => d.result],
			// As published, this example has "id" inside "result": its value is compared.
			["getTokenAccountBalance", [ata.toBase58()], d => (d.result as { value: unknown }).value],
		];
		for (const [method, params, pick] of cases) {
			const reply = await node.rpc(method, params);
			expect({ method, error: reply.error }).toEqual({ method, error: undefined });
			const ours = method === "getTokenAccountBalance" ? (reply.result as { value: unknown }).value : reply.result;
			expect({ method, mismatches: shapeMismatches(pick(docExample(method)), ours) }).toEqual({ method, mismatches: [] });
		}
		// The documented example's transaction and ours carry the same meta and message keys, and no others that Solana does not document.
		const ours = (await node.rpc("getBlock", [slot, { encoding: "json", maxSupportedTransactionVersion: 0, transactionDetails: "full", rewards: false }])).result as {
			transactions: Array<{ meta: Record<string, unknown>; transaction: { message: Record<string, unknown> } }>;
		};
		const documentedMeta = ["err", "fee", "preBalances", "postBalances", "innerInstructions", "preTokenBalances", "postTokenBalances", "logMessages", "rewards", "status", "loadedAddresses", "returnData", "computeUnitsConsumed"];
		for (const t of ours.transactions) {
			expect(Object.keys(t.meta).filter(k => !documentedMeta.includes(k))).toEqual([]);
			expect(Object.keys(t.transaction.message).sort()).toEqual(["accountKeys", "header", "instructions", "recentBlockhash"]);
		}
		// The shape check can fail: a block missing a documented key is caught.
		expect(shapeMismatches(docExample("getBlock").result, { ...(ours as object), blockhash: undefined, parentSlot: "7" })).toEqual([
			"$.blockhash: documented string, got undefined",
			"$.parentSlot: documented number, got string",
		]);
	});

	it("PubSub on wsUrl: web3.js sendAndConfirmTransaction confirms through signatureSubscribe; slot and root notifications", async () => {
		const ws = new Connection(node.url, { commitment: "confirmed", wsEndpoint: node.wsUrl, disableRetryOnRateLimit: true });
		const slots: number[] = [];
		const roots: number[] = [];
		const slotSub = ws.onSlotChange(s => slots.push(s.slot));
		const rootSub = ws.onRootChange(r => roots.push(r));
		await node.setFinalizeDistance(2);
		await node.autoProduce(100);
		try {
			const to = Keypair.generate().publicKey;
			const tx = new Transaction().add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports: 1_000_000_000 }));
			const sig = await sendAndConfirmTransaction(ws, tx, [payer], { commitment: "finalized" });
			expect((await node.status(sig))?.confirmationStatus).toBe("finalized");
			expect(await ws.getBalance(to, "finalized")).toBe(1_000_000_000);
			const until = Date.now() + 20_000;
			while ((slots.length < 2 || roots.length < 1) && Date.now() < until) await new Promise(r => setTimeout(r, 50));
			expect(slots.length).toBeGreaterThanOrEqual(2);
			expect(slots[1]).toBeGreaterThan(slots[0]);
			expect(roots.length).toBeGreaterThanOrEqual(1);
		} finally {
			await node.autoProduce(null);
			await ws.removeSlotChangeListener(slotSub);
			await ws.removeRootChangeListener(rootSub);
			// web3.js closes its idle socket itself (code 1000: no reconnect) once nothing is subscribed.
			await until("the web3.js PubSub socket to close", async () => (await node.wsClients()) === 0);
		}
	});

	it("a version 0 transaction: refused in getBlock without maxSupportedTransactionVersion (-32015), served with it; base64 encoding and the signatures / accounts details", async () => {
		const to = Keypair.generate().publicKey;
		const message = MessageV0.compile({
			payerKey: payer.publicKey,
			instructions: [SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports: 1_000_000_000 })],
			recentBlockhash: (await node.head()).blockhash,
		});
		const vtx = new VersionedTransaction(message);
		vtx.sign([payer]);
		const sig = await conn.sendTransaction(vtx);
		const slot = await node.produceBlock();
		const refused = await node.rpc("getBlock", [slot, { commitment: "confirmed" }]);
		expect(refused.error).toEqual({
			code: -32015,
			message: 'Transaction version (0) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": 0',
		});
		const full = (await node.rpc("getBlock", [slot, { commitment: "confirmed", maxSupportedTransactionVersion: 0 }])).result as {
			transactions: Array<{ version: unknown; transaction: { message: Record<string, unknown> }; meta: { loadedAddresses: unknown } }>;
			rewards: unknown;
		};
		expect(full.transactions[0].version).toBe(0);
		expect(full.transactions[0].transaction.message.addressTableLookups).toEqual([]);
		expect(full.transactions[0].meta.loadedAddresses).toEqual({ readonly: [], writable: [] });
		expect(full.rewards).toEqual([]);
		const b64 = (await node.rpc("getBlock", [slot, { commitment: "confirmed", maxSupportedTransactionVersion: 0, encoding: "base64", rewards: false }])).result as {
			transactions: Array<{ transaction: [string, string] }>;
			rewards?: unknown;
		};
		expect(b64.transactions[0].transaction).toEqual([Buffer.from(vtx.serialize()).toString("base64"), "base64"]);
		expect("rewards" in b64).toBe(false);
		const sigs = (await node.rpc("getBlock", [slot, { commitment: "confirmed", transactionDetails: "signatures", rewards: false }])).result as Record<string, unknown>;
		expect(sigs.signatures).toEqual([sig]);
		expect("transactions" in sigs).toBe(false);
		const accounts = (await node.rpc("getBlock", [slot, { commitment: "confirmed", transactionDetails: "accounts", maxSupportedTransactionVersion: 0, rewards: false }])).result as {
			transactions: Array<{ transaction: { accountKeys: unknown[]; signatures: string[] }; meta: Record<string, unknown> }>;
		};
		expect(accounts.transactions[0].transaction.accountKeys).toEqual([
			{ pubkey: payer.publicKey.toBase58(), signer: true, source: "transaction", writable: true },
			{ pubkey: to.toBase58(), signer: false, source: "transaction", writable: true },
			{ pubkey: SystemProgram.programId.toBase58(), signer: false, source: "transaction", writable: false },
		]);
		expect(Object.keys(accounts.transactions[0].meta).sort()).toEqual(["err", "fee", "postBalances", "postTokenBalances", "preBalances", "preTokenBalances", "status"]);
		const none = (await node.rpc("getBlock", [slot, { commitment: "confirmed", transactionDetails: "none", rewards: false }])).result as Record<string, unknown>;
		expect(Object.keys(none).sort()).toEqual(["blockHeight", "blockTime", "blockhash", "parentSlot", "previousBlockhash"]);
	});

	it("getSignaturesForAddress: newest first, failed ones included, before / until / limit, up to the commitment's head", async () => {
		const to = Keypair.generate().publicKey;
		const sent: string[] = [];
		for (const lamports of [1_000_000_000, 2_000_000_000]) {
			sent.push(await node.send([SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports })], [payer]));
			await node.produceBlock();
		}
		// A failing one in the same block as a good one: both touch `to`, both listed.
		sent.push(await node.send([SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports: 1_000_000_000_000 })], [payer]));
		sent.push(await node.send([SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: to, lamports: 3_000_000_000 })], [payer]));
		await node.produceBlock();
		const all = await conn.getSignaturesForAddress(to, {}, "confirmed");
		expect(all.map(s => s.signature)).toEqual([...sent].reverse());
		expect(all[1].err).toEqual({ InstructionError: [0, { Custom: 1 }] });
		expect(all.every(s => s.confirmationStatus === "confirmed" && typeof s.blockTime === "number")).toBe(true);
		expect((await conn.getSignaturesForAddress(to, { limit: 2 }, "confirmed")).map(s => s.signature)).toEqual([sent[3], sent[2]]);
		expect((await conn.getSignaturesForAddress(to, { before: sent[2] }, "confirmed")).map(s => s.signature)).toEqual([sent[1], sent[0]]);
		expect((await conn.getSignaturesForAddress(to, { until: sent[1] }, "confirmed")).map(s => s.signature)).toEqual([sent[3], sent[2]]);
		expect(await conn.getSignaturesForAddress(to, {}, "finalized")).toEqual([]);
		await node.finalize();
		expect((await conn.getSignaturesForAddress(to, {}, "finalized")).map(s => s.confirmationStatus)).toEqual(["finalized", "finalized", "finalized", "finalized"]);
	});
});
