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
 *   front.
 * - PRE-BUILT, then released: the node holds its blocks (`hold`): every transaction is sent and
 *   executed by litesvm and sealed into its block before the measured window, unseen by any
 *   reader; then the node puts the held blocks on its chain at BENCH_SOLANA_RELEASE_SLOTS_PER_S
 *   (`release`). So the offered rate is set, not bounded by what litesvm executes live on these
 *   cores, and the window measures the watcher's read, parse, match and store. The transfers are
 *   as real as before (executed by the VM; balances in the blocks read from its account states).
 *
 * Measured:
 * - detections stored (chain_transfers rows, seen at `confirmed`): rate = rows / (last row stored -
 *   first transfer block on the chain); latency = row createdAt - its block on the chain (the node
 *   records when it released each block; same machine clock);
 * - credited (transaction_credits rows, at `finalized`): rate = rows / (last credit - first
 *   transfer block finalized); latency after finality = credit createdAt - its slot finalized;
 * - the offered rate (transfers a second the node put on its chain) and the node's build rate
 *   (litesvm executing and sealing, before the window: what the live node offered before);
 * - floors, same run, same blocks: the source's catch-up path alone (lib/chains/solana/source.ts
 *   blocks() + transfers() as a step calls them: getBlocks, getBlock 4 at a time, parse, match;
 *   no database), getBlock in full one at a time through @solana/web3.js, and the parser alone;
 * - CPU seconds of this process (node + driver) over the detection window and to the last credit,
 *   the Solana node's process and mysqld; CPU of the source alone per transfer.
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
import { createSolanaSource } from "../lib/chains/solana/source";
import { startSolanaNode, type SolanaNode } from "../test/helpers/solana-node";
import { awaitCredits, cpuMark, cpuText as cpuTextOf, createRunDatabase, envInt, inProcessNodeEnv, insertCheckouts, makeLog, percentile, runMain, serverPids, settingsOrExit, sleep, startWatcherAtHead, stepsText, watcherBenchRun, type CpuMark } from "./common";

const SOL_PER_TX = 20;
const USDC_PER_TX = 8;
const SOL_AMOUNT = { decimal: "0.001", lamports: 1_000_000n };
const USDC_AMOUNT = { decimal: "1", units: 1_000_000n };
const DEVNET_USDC_MINT = new PublicKey("4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU");
/** A blockhash is usable for 150 blocks: every transaction is signed on one, before the first block. */
const MAX_BLOCKS = 120;
/** What the source reads per step at most, the runner's default range (lib/watchers/config.ts WATCHER_MAX_RANGE) aside. */
const SOURCE_RANGE = 100;

function loadSettings() {
	const solTxs = envInt("BENCH_SOLANA_SOL_TXS", 20, 0);
	const usdcTxs = envInt("BENCH_SOLANA_USDC_TXS", 10, 0);
	const perBlock = solTxs * SOL_PER_TX + usdcTxs * USDC_PER_TX;
	if (perBlock === 0) throw new Error("BENCH_SOLANA_SOL_TXS and BENCH_SOLANA_USDC_TXS are both 0");
	const addresses = envInt("BENCH_SOLANA_ADDRESSES", 100_000, 1);
	const blocks = envInt("BENCH_SOLANA_BLOCKS", 50, 1);
	if (blocks > MAX_BLOCKS) throw new Error(`BENCH_SOLANA_BLOCKS must be at most ${MAX_BLOCKS} (transactions are signed up front on one blockhash)`);
	if (blocks * perBlock > addresses) throw new Error(`BENCH_SOLANA_BLOCKS x transfers a block (${blocks * perBlock}) must not exceed BENCH_SOLANA_ADDRESSES (${addresses}): each transfer goes to a distinct address`);
	return {
		addresses,
		blocks,
		solTxs,
		usdcTxs,
		perBlock,
		releaseSlotsPerS: envInt("BENCH_SOLANA_RELEASE_SLOTS_PER_S", 25, 1),
		pollMs: envInt("BENCH_WATCHER_POLL_MS", 100, 50),
		creditTimeoutS: envInt("BENCH_WATCHER_CREDIT_TIMEOUT_S", 300, 1),
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

/** One JSON-RPC batch (the node answers an array in order): a block's transactions in one request. */
async function rpcBatch(url: string, calls: Array<{ method: string; params: unknown[] }>): Promise<Array<{ result?: unknown; error?: { message: string } }>> {
	const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(calls.map((c, id) => ({ jsonrpc: "2.0", id, ...c }))) });
	return (await res.json()) as Array<{ result?: unknown; error?: { message: string } }>;
}

const BLOCK_READ = { commitment: "confirmed", transactionDetails: "full", rewards: false, maxSupportedTransactionVersion: 0 } as const;

async function main(): Promise<void> {
	const { run, state, cleanup } = watcherBenchRun(SETTINGS.mysqlUrl, SETTINGS.redisUrl, "cpg-bench-watcher-solana-");
	const { databaseUrl } = run;
	const total = SETTINGS.blocks * SETTINGS.perBlock;
	let sol: SolanaNode | null = null;

	try {
		log(`node ${process.version}, ${os.cpus().length} cpus; ${SETTINGS.addresses} addresses, ${SETTINGS.blocks} blocks x ${SETTINGS.perBlock} transfers (${SETTINGS.solTxs} x ${SOL_PER_TX} SOL + ${SETTINGS.usdcTxs} x ${USDC_PER_TX} USDC)`);
		// ---- the Solana node
		sol = state.chainNode = await startSolanaNode({ finalizeDistance: 2 });
		const payer = Keypair.generate();
		await sol.airdrop(payer.publicKey, 1_000n * BigInt(LAMPORTS_PER_SOL));
		await sol.createMint(6, { address: DEVNET_USDC_MINT });
		await sol.mintTo(DEVNET_USDC_MINT, payer.publicKey, BigInt(total) * USDC_AMOUNT.units);
		await sol.settle();
		log(`Solana node ${sol.url} (pid ${sol.child.pid})`);

		// ---- database, checkouts, node
		await createRunDatabase(SETTINGS.mysqlUrl, run.dbName);
		state.dbCreated = true;
		const env = inProcessNodeEnv(run, SETTINGS.redisUrl, {
			RPC_URL_SOLANA_DEVNET: sol.url,
			WATCHER_POLL_MS: String(SETTINGS.pollMs),
		});
		const broker = (state.broker = await createNode({ config: loadConfig(env), services: ["networks", "transactions", "watcher-solana"], env, nodeID: `bench-watcher-solana-${crypto.randomBytes(3).toString("hex")}` }));
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
		// ---- transactions, signed up front on one blockhash (before the watcher runs: signing holds this process for a while)
		t0 = Date.now();
		const h = await sol.head("confirmed");
		const blocksTxs = Array.from({ length: SETTINGS.blocks }, (_, b) => signBlock(b, keys, payer, h.blockhash, h.lastValidBlockHeight));
		log(`${blocksTxs.flat().length} transactions signed in ${Date.now() - t0} ms`);

		// ---- blocks pre-built: executed by litesvm and sealed, held off the chain (no reader sees them yet)
		await sol.hold();
		const slotOfSig = new Map<string, number>();
		const transferSlots: number[] = [];
		const buildStart = Date.now();
		for (const txs of blocksTxs) {
			const replies = await rpcBatch(sol.url, txs.map(raw => ({ method: "sendTransaction", params: [raw, { encoding: "base64", skipPreflight: true }] })));
			const sigs = replies.map(r => {
				if (r.error) throw new Error(`sendTransaction: ${r.error.message}`);
				return r.result as string;
			});
			const slot = await sol.produceBlock();
			transferSlots.push(slot);
			for (const sig of sigs) slotOfSig.set(sig, slot);
		}
		const buildRate = total / ((Date.now() - buildStart) / 1000);
		const held = await sol.held();
		const heldTxs = held.reduce((n, b) => n + b.transactions, 0);
		if (heldTxs !== blocksTxs.flat().length) throw new Error(`the node holds ${heldTxs} transactions in ${held.length} blocks, ${blocksTxs.flat().length} were sent: some did not execute`);
		log(`${SETTINGS.blocks} blocks built in ${Date.now() - buildStart} ms (litesvm executed and sealed ${buildRate.toFixed(0)} transfers/s); releasing at ${SETTINGS.releaseSlotsPerS} slots/s`);

		const { steps } = await startWatcherAtHead(broker, "watcher-solana", NET, async () => (await sol!.head("confirmed")).slot, log);
		const app = appOf(broker);

		// ---- the window: the node puts the blocks on its chain at the set slot rate
		const { ChainTransfer, TransactionCredit } = app.models;
		const pids = serverPids();
		const cpu0 = cpuMark(sol.child.pid, pids.mysqld);
		const releaseStart = Date.now();
		// Monotonic microseconds, the clock of a --cpu-prof profile: the window to look at there.
		log(`window starts at ${process.hrtime.bigint() / 1000n} us (monotonic)`);
		await sol.release(SETTINGS.releaseSlotsPerS);
		let releasedAt = 0;
		let detectedAt = 0;
		let cpuDetect: CpuMark | null = null;
		for (;;) {
			if (!releasedAt && (await sol.held()).length === 0) releasedAt = Date.now();
			if ((await ChainTransfer.count()) >= total) {
				detectedAt = Date.now();
				log(`last detection stored by ${process.hrtime.bigint() / 1000n} us (monotonic)`);
				cpuDetect = cpuMark(sol.child.pid, pids.mysqld, cpu0);
				break;
			}
			if (Date.now() - releaseStart > SETTINGS.creditTimeoutS * 1000) break;
			await sleep(100);
		}
		log(`released in ${(releasedAt || Date.now()) - releaseStart} ms; ${detectedAt ? `all ${total} detections stored after ${detectedAt - releaseStart} ms` : "not all detections stored"}; finalizing`);
		// The last transfer blocks finalize as the chain moves on: empty blocks at Solana's slot time.
		const lastTransferSlot = transferSlots[transferSlots.length - 1];
		while ((await sol.head("finalized")).slot < lastTransferSlot) {
			await sleep(400);
			await sol.produceBlock();
		}
		await awaitCredits(app.models, total, releaseStart, SETTINGS.creditTimeoutS, log);
		const cpu1 = cpuMark(sol.child.pid, pids.mysqld, cpu0);

		// ---- results
		const times = await sol.blockTimes();
		const visibleAt = (slot: number) => times.visible[String(slot)] ?? NaN;
		const finalizedAt = (slot: number) => times.finalized[String(slot)] ?? NaN;
		const detections = (await ChainTransfer.findAll({ attributes: ["blockNumber", "createdAt"], raw: true })) as unknown as Array<{ blockNumber: number | string; createdAt: Date }>;
		const credits = (await TransactionCredit.findAll({ attributes: ["txHash", "createdAt"], raw: true })) as unknown as Array<{ txHash: string; createdAt: Date }>;
		const time = (d: Date) => new Date(d).getTime();
		const dLat = detections.map(r => time(r.createdAt) - visibleAt(Number(r.blockNumber))).filter(Number.isFinite).sort((a, b) => a - b);
		const cLat = credits.map(r => time(r.createdAt) - finalizedAt(slotOfSig.get(r.txHash) ?? -1)).filter(Number.isFinite).sort((a, b) => a - b);
		const firstVisible = visibleAt(transferSlots[0]);
		const lastVisible = visibleAt(lastTransferSlot);
		const offeredRate = total / (Math.max(1, lastVisible - firstVisible + 1000 / SETTINGS.releaseSlotsPerS) / 1000);
		const firstFinalized = Math.min(...transferSlots.map(finalizedAt).filter(Number.isFinite));
		const detRate = detections.length / ((Math.max(...detections.map(r => time(r.createdAt))) - firstVisible) / 1000);
		const credRate = credits.length / ((Math.max(...credits.map(r => time(r.createdAt))) - firstFinalized) / 1000);

		// ---- floors, same blocks, nothing else running: the source's catch-up path, one getBlock at a time, the parser
		const watched = new Set(addresses);
		const source = createSolanaSource({ networkId: NET, rpcUrl: sol.url, timeoutMs: 30_000 });
		const tokens = [
			{ tokenId: SOL, contractAddress: "", decimals: 9 },
			{ tokenId: USDC, contractAddress: DEVNET_USDC_MINT.toBase58(), decimals: 6 },
		];
		let sourceFound = 0;
		const srcCpu0 = process.cpuUsage();
		let t = performance.now();
		for (let from = transferSlots[0]; from <= lastTransferSlot; ) {
			const refs = await source.blocks(from, Math.min(lastTransferSlot, from + SOURCE_RANGE - 1));
			if (refs.length === 0) throw new Error(`the source read no block from slot ${from}`);
			const to = refs[refs.length - 1].number;
			sourceFound += (await source.transfers({ fromBlock: from, toBlock: to, addresses: watched, tokens })).length;
			from = to + 1;
		}
		const sourceMs = performance.now() - t;
		const srcCpu = process.cpuUsage(srcCpu0);
		await source.close();
		const connection = new Connection(sol.url, { commitment: "confirmed" });
		t = performance.now();
		const read: VersionedBlockResponse[] = [];
		for (const slot of transferSlots) {
			const b = await connection.getBlock(slot, BLOCK_READ);
			if (b) read.push(b);
		}
		const readMs = performance.now() - t;
		const mints = new Set([DEVNET_USDC_MINT.toBase58()]);
		t = performance.now();
		let parsed = 0;
		for (const b of read) parsed += blockCredits(b, a => watched.has(a), mints).length;
		const parseMs = performance.now() - t;
		const sourceRate = sourceFound / (sourceMs / 1000);
		const readRate = total / (readMs / 1000);
		const parseRate = parsed / (parseMs / 1000);

		const cpuText = (b: CpuMark) => cpuTextOf(cpu0, b, total, "watcher + core services + driver", "Solana node");
		const pass = detRate >= TARGET.rate && detections.length >= total;
		const load = os.loadavg().map(l => l.toFixed(1)).join(" ");
		console.log(
			`watcher-solana: ${detRate.toFixed(0)} transfers/s detected (stored, at confirmed; offered ${offeredRate.toFixed(0)}/s) p50 ${percentile(dLat, 50).toFixed(0)} ms p99 ${percentile(dLat, 99).toFixed(0)} ms after the block; credited ${credRate.toFixed(0)} transfers/s at finalized, latency after finality p50 ${percentile(cLat, 50).toFixed(0)} ms p99 ${percentile(cLat, 99).toFixed(0)} ms; target >= ${TARGET.rate} transfers/s detected ${pass ? "PASS" : "BELOW"}`,
		);
		console.log(
			`  ${total} transfers (${SETTINGS.blocks} blocks x ${SETTINGS.perBlock}) to ${SETTINGS.addresses} watched addresses, pre-built (litesvm executed and sealed ${buildRate.toFixed(0)} transfers/s) and released at ${SETTINGS.releaseSlotsPerS} slots/s; ${detections.length} detections stored, ${credits.length} credited; load average at the end ${load}`,
		);
		console.log(
			`  floors, same blocks, same run: the source alone (blocks() + transfers(), no database) ${sourceRate.toFixed(0)} transfers/s, CPU ${((((srcCpu.user + srcCpu.system) / 1e6) * 1e6) / Math.max(1, sourceFound)).toFixed(0)} us/transfer (${sourceFound} found); getBlock in full one at a time through @solana/web3.js ${readRate.toFixed(0)} transfers/s (${(readMs / read.length).toFixed(0)} ms a block); parser alone ${parseRate.toFixed(0)} transfers/s (${parsed} found)`,
		);
		console.log(`  ${stepsText(steps, total, "getBlocks + getBlock in full", "parse + match")}`);
		if (cpuDetect) console.log(`  CPU to the last detection ${cpuText(cpuDetect)}`);
		console.log(`  CPU to the last credit ${cpuText(cpu1)}`);
	} catch (err) {
		// The node's own output says why it failed (a crash of the VM child, a refused request).
		if (sol) log(`Solana node output (tail):\n${sol.output().slice(-4000)}`);
		throw err;
	} finally {
		await cleanup();
	}
}

runMain("watcher-solana", main);
