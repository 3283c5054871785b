/**
 * `npm run bench` case `watcher-ton` (docs/benchmarks.md): the TON chain watcher against the TON
 * test node (test/helpers/ton-node.ts: @ton/sandbox, the real TVM emulator, executes the signed
 * wallet messages; test/helpers/ton-facade.ts answers toncenter's v3 indexer API and makes the
 * masterchain blocks), with BENCH_TON_ADDRESSES (default 100,000) live deposit addresses.
 * Everything on 127.0.0.1.
 *
 * - the node runs IN THIS PROCESS (the facade is an in-process server over the WASM emulator), so
 *   "this process" in the CPU lines is watcher + core services + the facade answering it.
 * - the gateway node in this process (lib/node.ts createNode) runs watcher-ton alone on
 *   `ton-testnet` (TON only), on a fresh MySQL database and Redis prefix; the core services it
 *   reports to (networks, transactions: every credit) run on a node of their own, another process
 *   (lib/start, over NATS on 127.0.0.1), as a deployment places them (docker-compose.yml and k8s/:
 *   `watcher-ton` and `core` are separate containers). BENCH_TON_CORE=inline puts them back in
 *   this process (the layout before 2026-11-26's second round).
 * - 100,000 checkouts inserted directly (bench/common.ts insertCheckouts): random workchain-0
 *   addresses (non-bounceable testnet form, as a checkout shows them), each asking 0.01 TON, so
 *   every credit settles its checkout (the full credit path).
 * - every block: BENCH_TON_PER_BLOCK TON payments from one funded v5R1 wallet (255 payments a
 *   signed external message), each a real transaction of the (undeployed) deposit account, every
 *   payment to a distinct deposit address. TON only: jetton payments are not in this bench (each
 *   first jetton payment to a deposit costs the source a get_wallet_address call; not measured).
 * - PRE-BUILT, then released: the facade holds sealed blocks off the chain (`hold`): every
 *   message is executed by the emulator and sealed into its block before the measured window,
 *   unseen by any reader; then it puts them on the chain at BENCH_TON_RELEASE_BLOCKS_PER_S.
 *
 * Measured:
 * - detections stored (chain_transfers rows): rate = rows / (last row stored - first transfer block
 *   on the chain); latency = row createdAt - its block on the chain (the facade records when it put
 *   each block on the chain; same clock);
 * - credited (transaction_credits rows; TON credits at 1 masterchain block, the block that commits
 *   the payment): rate and latency from the same block times;
 * - floors, same run, same blocks: the source's catch-up path alone (lib/chains/ton/source.ts
 *   blocks() + transfers() as a step calls them, no database), the block's transactions read
 *   through the API client alone (transactionsByMasterchainBlock, paged, one block at a time), and
 *   the parser alone (lib/chains/ton/transactions.ts candidates());
 * - CPU seconds of this process, the core node's, the TON node's and mysqld over the detection
 *   window and to the last credit.
 */
import crypto from "node:crypto";
import os from "node:os";
import { Address, toNano } from "@ton/core";
import { loadConfig } from "../lib/config";
import { createNode } from "../lib/node";
import { appOf } from "../lib/app";
import { networkIdFor, tokenIdFor } from "../lib/networks/catalogue";
import { codecFor } from "../lib/chains";
import { createTonSource } from "../lib/chains/ton/source";
import { candidates, hashHex, type V3Transaction } from "../lib/chains/ton/transactions";
import { startTonNodeProcess, type TonNodeProcess } from "./ton-node-process";
import path from "node:path";
import { childStopper, cpuText, createRunDatabase, detectionWindow, envInt, inProcessNodeEnv, insertCheckouts, makeLog, percentile, runMain, settingsOrExit, startNodeChild, startWatcherAtHead, stepsText, tail, watcherBenchRun, type Child, type CpuMark } from "./common";

const AMOUNT = { decimal: "0.01", nano: toNano("0.01") };

function loadSettings() {
	const addresses = envInt("BENCH_TON_ADDRESSES", 100_000, 1);
	const blocks = envInt("BENCH_TON_BLOCKS", 10, 1);
	const perBlock = envInt("BENCH_TON_PER_BLOCK", 500, 1);
	const core = process.env.BENCH_TON_CORE || "process";
	if (core !== "process" && core !== "inline") throw new Error(`BENCH_TON_CORE must be "process" or "inline", not "${core}"`);
	const natsUrl = process.env.BENCH_NATS_URL || "nats://127.0.0.1:4222";
	if (!["127.0.0.1", "localhost", "[::1]"].includes(new URL(natsUrl).hostname)) throw new Error(`BENCH_NATS_URL must be on loopback, not ${new URL(natsUrl).hostname}`);
	if (blocks * perBlock > addresses) throw new Error(`BENCH_TON_BLOCKS x BENCH_TON_PER_BLOCK (${blocks * perBlock}) must not exceed BENCH_TON_ADDRESSES (${addresses}): each payment goes to a distinct address`);
	return {
		addresses,
		blocks,
		perBlock,
		core,
		natsUrl,
		releaseBlocksPerS: envInt("BENCH_TON_RELEASE_BLOCKS_PER_S", 20, 1),
		pollMs: envInt("BENCH_WATCHER_POLL_MS", 100, 50),
		creditTimeoutS: envInt("BENCH_WATCHER_CREDIT_TIMEOUT_S", 300, 1),
		mysqlUrl: (process.env.BENCH_MYSQL_URL || "mysql://root@127.0.0.1:3306").replace(/\/+$/, ""),
		redisUrl: process.env.BENCH_REDIS_URL || "redis://127.0.0.1:6379/0",
	};
}

const SETTINGS = settingsOrExit("watcher-ton", loadSettings);
const TARGET = { rate: 5_000 };
const log = makeLog("watcher-ton");
const NET = networkIdFor("ton-testnet");
const TON = tokenIdFor("ton-testnet", "TON");

async function main(): Promise<void> {
	const { run, state, cleanup } = watcherBenchRun(SETTINGS.mysqlUrl, SETTINGS.redisUrl, "cpg-bench-watcher-ton-");
	const { databaseUrl } = run;
	const total = SETTINGS.blocks * SETTINGS.perBlock;
	let ton: TonNodeProcess | null = null;
	let coreNode: Child | null = null;
	const stopChild = childStopper(log, 30_000);

	try {
		log(`node ${process.version}, ${os.cpus().length} cpus; ${SETTINGS.addresses} addresses, ${SETTINGS.blocks} blocks x ${SETTINGS.perBlock} TON payments`);
		ton = state.chainNode = await startTonNodeProcess({ testnet: true });
		log(`TON test node ${ton.url} (child process ${ton.child.pid})`);

		// ---- database, checkouts, node
		await createRunDatabase(SETTINGS.mysqlUrl, run.dbName);
		state.dbCreated = true;
		const apart = SETTINGS.core === "process";
		// Its own NATS namespace: other nodes on the same server never meet this run's.
		const cluster: Record<string, string> = apart ? { TRANSPORTER: SETTINGS.natsUrl, NAMESPACE: `bench-ton-${crypto.randomBytes(4).toString("hex")}` } : {};
		const env = inProcessNodeEnv(run, SETTINGS.redisUrl, { RPC_URL_TON_TESTNET: ton.url, WATCHER_POLL_MS: String(SETTINGS.pollMs), ...cluster });
		// Migrations run here (createNode), before the core node starts on the same database.
		const broker = (state.broker = await createNode({ config: loadConfig(env), services: apart ? ["watcher-ton"] : ["networks", "transactions", "watcher-ton"], env, nodeID: `bench-watcher-ton-${crypto.randomBytes(3).toString("hex")}` }));
		const t0 = Date.now();
		const deposits: Address[] = [];
		const addresses = await insertCheckouts(databaseUrl, SETTINGS.addresses, {
			chainType: "ton",
			networkId: NET,
			row: () => {
				const a = new Address(0, crypto.randomBytes(32));
				deposits.push(a);
				return { address: a.toString({ urlSafe: true, bounceable: false, testOnly: true }), tokenId: TON, amount: AMOUNT.decimal };
			},
		});
		log(`${addresses.length} checkouts inserted in ${Date.now() - t0} ms`);

		// ---- blocks pre-built: executed by the emulator and sealed, held off the chain (no reader sees them yet)
		const buildStart = Date.now();
		const built = await ton.call(
			"prebuild",
			Array.from({ length: SETTINGS.blocks }, (_, b) => deposits.slice(b * SETTINGS.perBlock, (b + 1) * SETTINGS.perBlock).map(a => a.toRawString())),
			AMOUNT.nano.toString(),
		);
		const transferSeqnos = built.seqnos;
		const buildRate = total / ((Date.now() - buildStart) / 1000);
		if (built.held !== SETTINGS.blocks) throw new Error(`the node holds ${built.held} blocks, ${SETTINGS.blocks} were sealed`);
		log(`${SETTINGS.blocks} blocks built in ${Date.now() - buildStart} ms (the emulator executed and sealed ${buildRate.toFixed(0)} payments/s); releasing at ${SETTINGS.releaseBlocksPerS} blocks/s`);

		// A running gateway loads the TON codec (all of @ton/ton) at its first TON checkout or credit,
		// long before; here the first credit would load it inside the window (about 0.3 s of CPU).
		codecFor("ton");
		if (apart) {
			coreNode = startNodeChild({ ...env, SERVICES: "networks,transactions", NODE_ID: `bench-ton-core-${crypto.randomBytes(3).toString("hex")}` }, run.workDir, path.join(run.workDir, "core.log"));
			log(`core node (networks, transactions) in process ${coreNode.proc.pid}, over ${SETTINGS.natsUrl}`);
			void coreNode.exited.then(code => {
				if (code !== null && code !== 0) log(`the core node exited (${code}): ${tail(coreNode!.logFile)}`);
			});
		}
		// broker.start() waits for networks and transactions (the watcher's dependencies), here or on the core node.
		const { steps } = await startWatcherAtHead(broker, "watcher-ton", NET, () => ton!.call("lastSeqno"), log);
		const app = appOf(broker);

		// ---- the window
		const { ChainTransfer, TransactionCredit } = app.models;
		const { cpu0, cpuDetect, cpu1 } = await detectionWindow({ models: app.models, total, nodePid: ton.child.pid, corePid: coreNode?.proc.pid, timeoutS: SETTINGS.creditTimeoutS, release: () => ton!.call("release", SETTINGS.releaseBlocksPerS), log });

		// ---- results
		const onChainAt = await ton.call("onChainAt");
		const onChain = (seqno: number) => onChainAt[String(seqno)] ?? NaN;
		const detections = (await ChainTransfer.findAll({ attributes: ["txHash", "blockNumber", "createdAt"], raw: true })) as unknown as Array<{ txHash: string; blockNumber: number | string; createdAt: Date }>;
		const credits = (await TransactionCredit.findAll({ attributes: ["txHash", "createdAt"], raw: true })) as unknown as Array<{ txHash: string; createdAt: Date }>;
		const seqnoOf = new Map(detections.map(r => [r.txHash, Number(r.blockNumber)]));
		const time = (d: Date) => new Date(d).getTime();
		const dLat = detections.map(r => time(r.createdAt) - onChain(Number(r.blockNumber))).filter(Number.isFinite).sort((a, b) => a - b);
		const cLat = credits.map(r => time(r.createdAt) - onChain(seqnoOf.get(r.txHash) ?? -1)).filter(Number.isFinite).sort((a, b) => a - b);
		const first = onChain(transferSeqnos[0]);
		const last = onChain(transferSeqnos[transferSeqnos.length - 1]);
		const offeredRate = total / (Math.max(1, last - first + 1000 / SETTINGS.releaseBlocksPerS) / 1000);
		const detRate = detections.length / ((Math.max(...detections.map(r => time(r.createdAt))) - first) / 1000);
		const credRate = credits.length / ((Math.max(...credits.map(r => time(r.createdAt))) - first) / 1000);

		// ---- floors, same blocks, the watcher idle: the source's catch-up path, the API client alone, the parser alone
		const watched = new Set(addresses);
		const source = createTonSource({ networkId: NET, apiUrl: ton.url, timeoutMs: 30_000, isTestnet: true });
		const tokens = [{ tokenId: TON, contractAddress: "", decimals: 9 }];
		const from0 = transferSeqnos[0];
		const to0 = transferSeqnos[transferSeqnos.length - 1];
		let sourceFound = 0;
		// The watcher keeps its deposit index across steps (built once, before the window): so does this floor.
		await source.transfers({ fromBlock: from0, toBlock: from0 - 1, addresses: watched, tokens });
		const srcCpu0 = process.cpuUsage();
		let t = performance.now();
		for (let from = from0; from <= to0; ) {
			const refs = await source.blocks(from, to0);
			if (refs.length === 0) throw new Error(`the source read no block from seqno ${from}`);
			const to = refs[refs.length - 1].number;
			sourceFound += (await source.transfers({ fromBlock: from, toBlock: to, addresses: watched, tokens })).length;
			from = to + 1;
		}
		const sourceMs = performance.now() - t;
		const srcCpu = process.cpuUsage(srcCpu0);
		const reader = createTonSource({ networkId: NET, apiUrl: ton.url, timeoutMs: 30_000, isTestnet: true });
		t = performance.now();
		const read: V3Transaction[][] = [];
		for (const seqno of transferSeqnos) read.push(await reader.blockTransactions(seqno));
		const readMs = performance.now() - t;
		const rawWatched = new Set(deposits.map(a => a.toRawString()));
		t = performance.now();
		let parsed = 0;
		for (const txs of read) parsed += candidates(txs, raw => rawWatched.has(raw), false).length;
		const parseMs = performance.now() - t;
		await source.close();
		await reader.close();
		// Every detection is a payment of this run: its hash is one of the blocks' transactions.
		const readHashes = new Set(read.flat().map(tx => hashHex(tx.hash)));
		const foreign = detections.filter(r => !readHashes.has(r.txHash)).length;

		const load = os.loadavg().map(l => l.toFixed(1)).join(" ");
		const pass = detRate >= TARGET.rate && detections.length >= total;
		console.log(
			`watcher-ton: ${detRate.toFixed(0)} transfers/s detected (stored; offered ${offeredRate.toFixed(0)}/s) p50 ${percentile(dLat, 50).toFixed(0)} ms p99 ${percentile(dLat, 99).toFixed(0)} ms after the block; credited ${credRate.toFixed(0)} transfers/s (1 masterchain block), latency after the block p50 ${percentile(cLat, 50).toFixed(0)} ms p99 ${percentile(cLat, 99).toFixed(0)} ms; target >= ${TARGET.rate} transfers/s detected ${pass ? "PASS" : "BELOW"}`,
		);
		console.log(
			`  ${total} TON payments (${SETTINGS.blocks} blocks x ${SETTINGS.perBlock}) to ${SETTINGS.addresses} watched addresses, pre-built (the emulator executed and sealed ${buildRate.toFixed(0)} payments/s) and released at ${SETTINGS.releaseBlocksPerS} blocks/s; ${detections.length} detections stored (${foreign} not among the blocks' transactions), ${credits.length} credited; core services (networks, transactions) ${coreNode ? "on a node of their own (another process, NATS)" : "in this process"}; load average at the end ${load}`,
		);
		console.log(
			`  floors, same blocks, same run: the source alone (blocks() + transfers(), no database) ${(sourceFound / (sourceMs / 1000)).toFixed(0)} transfers/s, CPU ${(((srcCpu.user + srcCpu.system) / Math.max(1, sourceFound))).toFixed(0)} us/transfer (${sourceFound} found); transactionsByMasterchainBlock through the API client, one block at a time ${(total / (readMs / 1000)).toFixed(0)} transfers/s (${(readMs / read.length).toFixed(0)} ms a block of ${read[0]?.length ?? 0} transactions); parser alone ${(parsed / (parseMs / 1000)).toFixed(0)} transfers/s (${parsed} found)`,
		);
		console.log(`  ${stepsText(steps, total, "masterchain headers", "transactionsByMasterchainBlock + parse + match")}`);
		const cpuLine = (b: CpuMark) => cpuText(cpu0, b, total, coreNode ? "watcher-ton + driver" : "watcher + core services + driver", "TON node (facade + emulator)");
		if (cpuDetect) console.log(`  CPU to the last detection ${cpuLine(cpuDetect)}`);
		console.log(`  CPU to the last credit ${cpuLine(cpu1)}`);
	} finally {
		// The watcher first (its reports in flight call the core), then the core node.
		if (state.broker) await state.broker.stop().catch(() => undefined);
		state.broker = null;
		await stopChild(coreNode);
		await cleanup();
	}
}

runMain("watcher-ton", main);
