/**
 * `npm run bench` case `watcher-solana` (docs/benchmarks.md): the Solana chain watcher against the
 * litesvm-backed Solana test node (test/helpers/solana-node.ts: litesvm executes the signed
 * transactions, a JSON-RPC facade makes slots, blocks and the confirmed / finalized heads), with
 * BENCH_SOLANA_ADDRESSES (default 100,000) live deposit addresses. Everything on 127.0.0.1.
 *
 * - the node: finalized head 2 blocks behind the confirmed head; a payer funded by airdrop, the
 *   catalogue's devnet USDC mint created at its address and minted to the payer.
 * - the node runs in this process (lib/node.ts createNode) with networks, transactions and
 *   watcher-solana on `solana-devnet`, on a fresh MySQL database and Redis prefix.
 * - 100,000 checkouts inserted directly (bench/common.ts insertCheckouts): random 32-byte
 *   addresses; the ones paid in SOL ask for 0.001 SOL, the ones paid in USDC for 1 USDC, so every
 *   credit settles its checkout (the full credit path).
 * - every block: BENCH_SOLANA_SOL_TXS transactions of 20 SOL transfers each and
 *   BENCH_SOLANA_USDC_TXS transactions of 8 USDC transfers each (create the recipient's associated
 *   token account + transferChecked), every transfer to a distinct deposit address; all signed up
 *   front; blocks produced back to back, as fast as the node executes them.
 *
 * Measured:
 * - detections stored (chain_transfers rows, seen at `confirmed`): rate = rows / (last row stored -
 *   first transfer block produced); latency = row createdAt - its block produced;
 * - credited (transaction_credits rows, at `finalized`): rate = rows / (last credit - first
 *   transfer block finalized); latency after finality = credit createdAt - the moment its block's
 *   slot was finalized (this process moves the heads: the clock is exact to a few ms);
 * - the node's own rate (transfers executed and sealed per second), which bounds both;
 * - floor, same run, same blocks: getBlock in full through @solana/web3.js (the watcher's read:
 *   RPC + JSON + web3.js validation, one block at a time) and the block parser alone
 *   (lib/chains/solana/block.ts). The node cannot offer 5,000 transfers/s (litesvm executes and
 *   this process signs and sends every transaction), so the read floor is the ceiling the watcher
 *   would meet on a faster chain; detections are compared with what the node offered;
 * - CPU seconds of this process (node + driver), the Solana node's process and mysqld.
 */
import crypto from "node:crypto";
import os from "node:os";
import { Connection, Keypair, LAMPORTS_PER_SOL, PublicKey, SystemProgram, Transaction, type VersionedBlockResponse } from "@solana/web3.js";
import { createAssociatedTokenAccountIdempotentInstruction, createTransferCheckedInstruction, getAssociatedTokenAddressSync } from "@solana/spl-token";
import { loadConfig } from "../lib/config";
import { createNode } from "../lib/node";
import { appOf } from "../lib/app";
import { networkIdFor, tokenIdFor } from "../lib/networks/catalogue";
import { blockCredits } from "../lib/chains/solana/block";
import type { NetworkWatcher } from "../lib/watchers/runner";
import { startSolanaNode, type SolanaNode } from "../test/helpers/solana-node";
import { awaitCredits, createRunDatabase, dropRunState, envInt, inProcessNodeEnv, insertCheckouts, makeLog, percentile, prepareRun, preflight, procCpuSeconds, runMain, serverPids, settingsOrExit, sleep } from "./common";

const SOL_PER_TX = 20;
const USDC_PER_TX = 8;
const SOL_AMOUNT = { decimal: "0.001", lamports: 1_000_000n };
const USDC_AMOUNT = { decimal: "1", units: 1_000_000n };
const DEVNET_USDC_MINT = new PublicKey("4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU");
/** A blockhash is usable for 150 blocks: every transaction is signed on one, before the first block. */
const MAX_BLOCKS = 120;

function loadSettings() {
	const solTxs = envInt("BENCH_SOLANA_SOL_TXS", 20, 0);
	const usdcTxs = envInt("BENCH_SOLANA_USDC_TXS", 10, 0);
	const perBlock = solTxs * SOL_PER_TX + usdcTxs * USDC_PER_TX;
	if (perBlock === 0) throw new Error("BENCH_SOLANA_SOL_TXS and BENCH_SOLANA_USDC_TXS are both 0");
	const addresses = envInt("BENCH_SOLANA_ADDRESSES", 100_000, 1);
	const blocks = envInt("BENCH_SOLANA_BLOCKS", 20, 1);
	if (blocks > MAX_BLOCKS) throw new Error(`BENCH_SOLANA_BLOCKS must be at most ${MAX_BLOCKS} (transactions are signed up front on one blockhash)`);
	if (blocks * perBlock > addresses) throw new Error(`BENCH_SOLANA_BLOCKS x transfers a block (${blocks * perBlock}) must not exceed BENCH_SOLANA_ADDRESSES (${addresses}): each transfer goes to a distinct address`);
	return {
		addresses,
		blocks,
		solTxs,
		usdcTxs,
		perBlock,
		pollMs: envInt("BENCH_WATCHER_POLL_MS", 100, 50),
		creditTimeoutS: envInt("BENCH_WATCHER_CREDIT_TIMEOUT_S", 180, 1),
		mysqlUrl: (process.env.BENCH_MYSQL_URL || "mysql://root@127.0.0.1:3306").replace(/\/+$/, ""),
		redisUrl: process.env.BENCH_REDIS_URL || "redis://127.0.0.1:6379/0",
	};
}

const SETTINGS = settingsOrExit("watcher-solana", loadSettings);
const TARGET = { rate: 5_000 };
const log = makeLog("watcher-solana");
const NET = networkIdFor("solana-devnet");
const SOL = tokenIdFor("solana-devnet", "SOL");
const USDC = tokenIdFor("solana-devnet", "USDC");

/** Address i is paid in SOL or USDC: the first SOL_PER_TX x solTxs of each block's share in SOL, the rest in USDC (beyond the paid ones: SOL). */
function isUsdc(i: number): boolean {
	if (i >= SETTINGS.blocks * SETTINGS.perBlock) return false;
	return i % SETTINGS.perBlock >= SETTINGS.solTxs * SOL_PER_TX;
}

/** The block's signed transactions (base64 wire format), paying its share of `addresses` in order. */
function signBlock(b: number, addresses: PublicKey[], payer: Keypair, blockhash: string, lastValidBlockHeight: number): string[] {
	const out: string[] = [];
	const payerAta = getAssociatedTokenAddressSync(DEVNET_USDC_MINT, payer.publicKey);
	let i = b * SETTINGS.perBlock;
	const sign = (tx: Transaction) => {
		tx.sign(payer);
		out.push(tx.serialize().toString("base64"));
	};
	for (let t = 0; t < SETTINGS.solTxs; t++) {
		const tx = new Transaction({ feePayer: payer.publicKey, blockhash, lastValidBlockHeight });
		for (let k = 0; k < SOL_PER_TX; k++) tx.add(SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: addresses[i++], lamports: SOL_AMOUNT.lamports }));
		sign(tx);
	}
	for (let t = 0; t < SETTINGS.usdcTxs; t++) {
		const tx = new Transaction({ feePayer: payer.publicKey, blockhash, lastValidBlockHeight });
		for (let k = 0; k < USDC_PER_TX; k++) {
			const owner = addresses[i++];
			// Random 32 bytes, not always a point on the curve (a derived deposit address is): the token programs do not care, the JS helper asks.
			const ata = getAssociatedTokenAddressSync(DEVNET_USDC_MINT, owner, true);
			tx.add(createAssociatedTokenAccountIdempotentInstruction(payer.publicKey, ata, owner, DEVNET_USDC_MINT), createTransferCheckedInstruction(payerAta, DEVNET_USDC_MINT, ata, payer.publicKey, USDC_AMOUNT.units, 6));
		}
		sign(tx);
	}
	return out;
}

const BLOCK_READ = { commitment: "confirmed", transactionDetails: "full", rewards: false, maxSupportedTransactionVersion: 0 } as const;

async function main(): Promise<void> {
	preflight(SETTINGS.mysqlUrl, SETTINGS.redisUrl, []);
	const run = prepareRun(SETTINGS.mysqlUrl, "cpg-bench-watcher-solana-");
	const { workDir, dbName, redisPrefix, databaseUrl } = run;
	const total = SETTINGS.blocks * SETTINGS.perBlock;
	let sol: SolanaNode | null = null;
	let broker: Awaited<ReturnType<typeof createNode>> | null = null;
	let dbCreated = false;
	const cleanup = async () => {
		if (broker) await broker.stop().catch(() => undefined);
		await sol?.stop().catch(() => undefined);
		await dropRunState(SETTINGS.mysqlUrl, dbCreated ? dbName : null, SETTINGS.redisUrl, redisPrefix);
		(await import("node:fs")).rmSync(workDir, { recursive: true, force: true });
	};
	process.once("SIGINT", () => void cleanup().finally(() => process.exit(130)));

	try {
		log(`node ${process.version}, ${os.cpus().length} cpus; ${SETTINGS.addresses} addresses, ${SETTINGS.blocks} blocks x ${SETTINGS.perBlock} transfers (${SETTINGS.solTxs} x ${SOL_PER_TX} SOL + ${SETTINGS.usdcTxs} x ${USDC_PER_TX} USDC)`);
		// ---- the Solana node
		sol = await startSolanaNode({ finalizeDistance: 2 });
		const payer = Keypair.generate();
		await sol.airdrop(payer.publicKey, 1_000n * BigInt(LAMPORTS_PER_SOL));
		await sol.createMint(6, { address: DEVNET_USDC_MINT });
		await sol.mintTo(DEVNET_USDC_MINT, payer.publicKey, BigInt(total) * USDC_AMOUNT.units);
		await sol.settle();
		log(`Solana node ${sol.url} (pid ${sol.child.pid})`);

		// ---- database, checkouts, node
		await createRunDatabase(SETTINGS.mysqlUrl, dbName);
		dbCreated = true;
		const env = inProcessNodeEnv(run, SETTINGS.redisUrl, {
			RPC_URL_SOLANA_DEVNET: sol.url,
			WATCHER_POLL_MS: String(SETTINGS.pollMs),
		});
		broker = await createNode({ config: loadConfig(env), services: ["networks", "transactions", "watcher-solana"], env, nodeID: `bench-watcher-solana-${crypto.randomBytes(3).toString("hex")}` });
		let t0 = Date.now();
		const keys: PublicKey[] = [];
		const addresses = await insertCheckouts(databaseUrl, SETTINGS.addresses, {
			chainType: "solana",
			networkId: NET,
			row: i => {
				const key = new PublicKey(crypto.randomBytes(32));
				keys.push(key);
				return isUsdc(i) ? { address: key.toBase58(), tokenId: USDC, amount: USDC_AMOUNT.decimal } : { address: key.toBase58(), tokenId: SOL, amount: SOL_AMOUNT.decimal };
			},
		});
		log(`${addresses.length} checkouts inserted in ${Date.now() - t0} ms`);
		t0 = Date.now();
		await broker.start();
		const app = appOf(broker);
		const watcherService = broker.getLocalService("watcher-solana") as unknown as { runners: Map<string, NetworkWatcher> };
		const runner = watcherService.runners.get(NET);
		if (!runner) throw new Error("the watcher follows no solana-devnet network (is it active? RPC_URL_SOLANA_DEVNET set?)");
		for (;;) {
			const head = (await sol.head("confirmed")).slot;
			if (runner.status.leader && runner.status.cursor !== null && runner.status.cursor >= head) break;
			if (Date.now() - t0 > 120_000) throw new Error(`the watcher did not reach the head within 120 s (status ${JSON.stringify(runner.status)})`);
			await sleep(100);
		}
		log(`node started, watcher at the head in ${Date.now() - t0} ms`);

		// ---- transactions, signed up front on one blockhash
		t0 = Date.now();
		const h = await sol.head("confirmed");
		const blocksTxs = Array.from({ length: SETTINGS.blocks }, (_, b) => signBlock(b, keys, payer, h.blockhash, h.lastValidBlockHeight));
		log(`${blocksTxs.flat().length} transactions signed in ${Date.now() - t0} ms`);

		const pids = serverPids();
		const cpu0 = { self: process.cpuUsage(), node: procCpuSeconds(sol.child.pid), mysqld: procCpuSeconds(pids.mysqld), wall: Date.now() };
		// ---- blocks, back to back; this process moves the heads, so it knows when each slot was produced and finalized
		const producedAt = new Map<number, number>();
		const finalizedAt = new Map<number, number>();
		const slotOfSig = new Map<string, number>();
		const transferSlots: number[] = [];
		let lastFinal = (await sol.head("finalized")).slot;
		const produce = async (): Promise<number> => {
			const slot = await sol!.produceBlock();
			const at = Date.now();
			producedAt.set(slot, at);
			const fin = (await sol!.head("finalized")).slot;
			for (const s of producedAt.keys()) if (s > lastFinal && s <= fin) finalizedAt.set(s, at);
			lastFinal = Math.max(lastFinal, fin);
			return slot;
		};
		const sendStart = Date.now();
		for (const txs of blocksTxs) {
			const sigs: string[] = [];
			for (const raw of txs) {
				const reply = await sol.rpc("sendTransaction", [raw, { encoding: "base64", skipPreflight: true }]);
				if (reply.error) throw new Error(`sendTransaction: ${reply.error.message}`);
				sigs.push(reply.result as string);
			}
			const slot = await produce();
			transferSlots.push(slot);
			for (const s of sigs) slotOfSig.set(s, slot);
		}
		const producedEnd = Date.now();
		const nodeRate = total / ((producedEnd - sendStart) / 1000);
		log(`${SETTINGS.blocks} blocks produced in ${producedEnd - sendStart} ms (${nodeRate.toFixed(0)} transfers/s executed and sealed by the node); finalizing`);
		// The last transfer blocks finalize as the chain moves on: empty blocks at Solana's slot time.
		while (lastFinal < transferSlots[transferSlots.length - 1]) {
			await sleep(400);
			await produce();
		}

		const { ChainTransfer, TransactionCredit } = app.models;
		await awaitCredits(app.models, total, sendStart, SETTINGS.creditTimeoutS, log);
		const cpu1 = { self: process.cpuUsage(cpu0.self), node: procCpuSeconds(sol.child.pid), mysqld: procCpuSeconds(pids.mysqld), wall: Date.now() };

		// ---- results
		const detections = (await ChainTransfer.findAll({ attributes: ["blockNumber", "createdAt"], raw: true })) as unknown as Array<{ blockNumber: number | string; createdAt: Date }>;
		const credits = (await TransactionCredit.findAll({ attributes: ["txHash", "createdAt"], raw: true })) as unknown as Array<{ txHash: string; createdAt: Date }>;
		const time = (d: Date) => new Date(d).getTime();
		const dLat = detections.map(r => time(r.createdAt) - (producedAt.get(Number(r.blockNumber)) ?? NaN)).filter(Number.isFinite).sort((a, b) => a - b);
		const cLat = credits.map(r => time(r.createdAt) - (finalizedAt.get(slotOfSig.get(r.txHash) ?? -1) ?? NaN)).filter(Number.isFinite).sort((a, b) => a - b);
		const firstProduced = producedAt.get(transferSlots[0])!;
		const firstFinalized = Math.min(...transferSlots.map(s => finalizedAt.get(s) ?? Infinity));
		const detRate = detections.length / ((Math.max(...detections.map(r => time(r.createdAt))) - firstProduced) / 1000);
		const credRate = credits.length / ((Math.max(...credits.map(r => time(r.createdAt))) - firstFinalized) / 1000);

		// ---- floor, same blocks: the watcher's read (getBlock in full through web3.js), then the parser alone
		const connection = new Connection(sol.url, { commitment: "confirmed" });
		let t = performance.now();
		const read: VersionedBlockResponse[] = [];
		for (const slot of transferSlots) {
			const b = await connection.getBlock(slot, BLOCK_READ);
			if (b) read.push(b);
		}
		const readMs = performance.now() - t;
		const watched = new Set(addresses);
		const mints = new Set([DEVNET_USDC_MINT.toBase58()]);
		t = performance.now();
		let parsed = 0;
		for (const b of read) parsed += blockCredits(b, a => watched.has(a), mints).length;
		const parseMs = performance.now() - t;
		const readRate = total / (readMs / 1000);
		const parseRate = parsed / (parseMs / 1000);

		const wall = (cpu1.wall - cpu0.wall) / 1000;
		const selfCpu = (cpu1.self.user + cpu1.self.system) / 1e6;
		const cpuLine = (name: string, a: number | null, b: number | null) => (a === null || b === null ? `${name} n/a` : `${name} ${(b - a).toFixed(1)} s (${(((b - a) * 1e6) / total).toFixed(0)} us/transfer)`);
		const pass = detRate >= TARGET.rate && credits.length >= total;
		console.log(
			`watcher-solana: ${detRate.toFixed(0)} transfers/s (detections stored, at confirmed) p50 ${percentile(dLat, 50).toFixed(0)} ms p99 ${percentile(dLat, 99).toFixed(0)} ms; credited ${credRate.toFixed(0)} transfers/s at finalized, latency after finality p50 ${percentile(cLat, 50).toFixed(0)} ms p99 ${percentile(cLat, 99).toFixed(0)} ms; target >= ${TARGET.rate} transfers/s ${pass ? "PASS" : "BELOW"}`,
		);
		console.log(`  ${total} transfers (${SETTINGS.blocks} blocks x ${SETTINGS.perBlock}) to ${SETTINGS.addresses} watched addresses; ${detections.length} detections stored, ${credits.length} credited; the node executed and sealed them at ${nodeRate.toFixed(0)} transfers/s (the offered rate: the watcher cannot detect faster than blocks come)`);
		console.log(`  floor, same blocks, same run: getBlock in full through @solana/web3.js ${readRate.toFixed(0)} transfers/s (${(readMs / read.length).toFixed(0)} ms a block); parser alone ${parseRate.toFixed(0)} transfers/s (${parsed} found); detected / offered by the node = ${(detRate / nodeRate).toFixed(2)}, read floor / target = ${(readRate / TARGET.rate).toFixed(2)}`);
		console.log(`  CPU over ${wall.toFixed(1)} s (2 cores = ${(2 * wall).toFixed(0)} core-s): ${cpuLine("this process (node + driver)", 0, selfCpu)}, ${cpuLine("Solana node (litesvm + facade)", cpu0.node, cpu1.node)}, ${cpuLine("mysqld", cpu0.mysqld, cpu1.mysqld)}`);
	} finally {
		await cleanup();
	}
}

runMain("watcher-solana", main);
