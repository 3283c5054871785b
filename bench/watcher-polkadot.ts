/**
 * `npm run bench` case `watcher-polkadot` (docs/benchmarks.md): the Polkadot chain watcher
 * (services/watcher-polkadot.service.ts: lib/chains/polkadot/source.ts under the shared runner)
 * against the Polkadot test node (test/helpers/polkadot-node.ts: chopsticks executing the real
 * Asset Hub runtime, behind the loopback finality proxy), with BENCH_POLKADOT_ADDRESSES (default
 * 100,000) live deposit addresses. Everything on 127.0.0.1.
 *
 * - the node runs in a CHILD process (bench/polkadot-node-process.ts): chopsticks, its executor
 *   worker and the proxy are not "this process" in the CPU lines.
 * - the gateway node (lib/node.ts createNode) runs networks, transactions and watcher-polkadot on
 *   `polkadot-asset-hub`, on a fresh MySQL database and Redis prefix.
 * - 100,000 checkouts inserted directly (bench/common.ts insertCheckouts): random 32-byte account
 *   ids in Polkadot's SS58 form; the ones paid in DOT ask 0.01 DOT, the ones paid in USDT (asset
 *   1984) ask 1 USDT, so every credit settles its checkout (the full credit path).
 * - every block: one utility.batchAll of BENCH_POLKADOT_DOT_PER_BLOCK balances.transferKeepAlive
 *   and one of BENCH_POLKADOT_USDT_PER_BLOCK assets.transfer, every payment to a distinct deposit
 *   address (new accounts: each payment also brings System.NewAccount, Balances.Endowed or
 *   Assets.Touched-like events, and Utility.ItemCompleted: the watcher decodes them all).
 * - PRE-BUILT, then released: the runtime executes and seals every block before the window, then
 *   the head is moved back; in the window the node puts them back on the chain (dev_setHead to
 *   each) and finalizes each at BENCH_POLKADOT_RELEASE_BLOCKS_PER_S.
 *
 * Measured:
 * - detections stored (chain_transfers rows, from best blocks): rate = rows / (last row stored -
 *   first payment block on the chain); latency = row createdAt - its block on the chain;
 * - credited (transaction_credits rows, at finality; every block is finalized as it goes on);
 * - floors, same run, same blocks: the source's catch-up path alone (blocks() + transfers() as a
 *   step calls them, no database), System.Events read and decoded alone (the source's decoder,
 *   lib/chains/polkadot/events-codec.ts) and, to compare, through @polkadot/api's full decode;
 * - CPU seconds of this process, the node's process and mysqld over the detection window and to
 *   the last credit.
 */
import crypto from "node:crypto";
import os from "node:os";
import { encodeAddress } from "@polkadot/util-crypto";
import { loadConfig } from "../lib/config";
import { createNode } from "../lib/node";
import { appOf } from "../lib/app";
import { networkIdFor, tokenIdFor } from "../lib/networks/catalogue";
import { POLKADOT_SS58 } from "../lib/chains/polkadot/codec";
import { createPolkadotSource } from "../lib/chains/polkadot/source";
import { startPolkadotNodeProcess, type HeldBlockPlan, type PolkadotNodeProcess } from "./polkadot-node-process";
import { cpuText, createRunDatabase, detectionWindow, envInt, inProcessNodeEnv, insertCheckouts, makeLog, percentile, runMain, settingsOrExit, startWatcherAtHead, stepsText, watcherBenchRun, type CpuMark } from "./common";

const DOT_AMOUNT = { decimal: "0.01", planck: 100_000_000n };
const USDT_AMOUNT = { decimal: "1", units: 1_000_000n };

function loadSettings() {
	const addresses = envInt("BENCH_POLKADOT_ADDRESSES", 100_000, 1);
	const blocks = envInt("BENCH_POLKADOT_BLOCKS", 10, 1);
	const dotPerBlock = envInt("BENCH_POLKADOT_DOT_PER_BLOCK", 400, 0);
	const usdtPerBlock = envInt("BENCH_POLKADOT_USDT_PER_BLOCK", 100, 0);
	const perBlock = dotPerBlock + usdtPerBlock;
	if (perBlock === 0) throw new Error("BENCH_POLKADOT_DOT_PER_BLOCK and BENCH_POLKADOT_USDT_PER_BLOCK are both 0");
	if (blocks * perBlock > addresses) throw new Error(`BENCH_POLKADOT_BLOCKS x payments a block (${blocks * perBlock}) must not exceed BENCH_POLKADOT_ADDRESSES (${addresses}): each payment goes to a distinct address`);
	return {
		addresses,
		blocks,
		dotPerBlock,
		usdtPerBlock,
		perBlock,
		releaseBlocksPerS: envInt("BENCH_POLKADOT_RELEASE_BLOCKS_PER_S", 20, 1),
		pollMs: envInt("BENCH_WATCHER_POLL_MS", 100, 50),
		creditTimeoutS: envInt("BENCH_WATCHER_CREDIT_TIMEOUT_S", 300, 1),
		mysqlUrl: (process.env.BENCH_MYSQL_URL || "mysql://root@127.0.0.1:3306").replace(/\/+$/, ""),
		redisUrl: process.env.BENCH_REDIS_URL || "redis://127.0.0.1:6379/0",
	};
}

const SETTINGS = settingsOrExit("watcher-polkadot", loadSettings);
const TARGET = { rate: 5_000 };
const log = makeLog("watcher-polkadot");
const NET = networkIdFor("polkadot-asset-hub");
const DOT = tokenIdFor("polkadot-asset-hub", "DOT");
const USDT = tokenIdFor("polkadot-asset-hub", "USDT");

/** Address i is paid in USDT when it falls in its block's USDT share (beyond the paid ones: DOT). */
function isUsdt(i: number): boolean {
	return i < SETTINGS.blocks * SETTINGS.perBlock && i % SETTINGS.perBlock >= SETTINGS.dotPerBlock;
}

async function main(): Promise<void> {
	const { run, state, cleanup } = watcherBenchRun(SETTINGS.mysqlUrl, SETTINGS.redisUrl, "cpg-bench-watcher-polkadot-");
	const { databaseUrl } = run;
	const total = SETTINGS.blocks * SETTINGS.perBlock;
	let dot: PolkadotNodeProcess | null = null;

	try {
		log(`node ${process.version}, ${os.cpus().length} cpus; ${SETTINGS.addresses} addresses, ${SETTINGS.blocks} blocks x (${SETTINGS.dotPerBlock} DOT + ${SETTINGS.usdtPerBlock} USDT payments)`);
		dot = state.chainNode = await startPolkadotNodeProcess();
		log(`Polkadot test node ${dot.url} (child process ${dot.child.pid})`);

		// ---- database, checkouts, node
		await createRunDatabase(SETTINGS.mysqlUrl, run.dbName);
		state.dbCreated = true;
		const env = inProcessNodeEnv(run, SETTINGS.redisUrl, { RPC_URL_POLKADOT_ASSET_HUB: dot.url, WATCHER_POLL_MS: String(SETTINGS.pollMs) });
		const broker = (state.broker = await createNode({ config: loadConfig(env), services: ["networks", "transactions", "watcher-polkadot"], env, nodeID: `bench-watcher-polkadot-${crypto.randomBytes(3).toString("hex")}` }));
		const t0 = Date.now();
		const addresses = await insertCheckouts(databaseUrl, SETTINGS.addresses, {
			chainType: "polkadot",
			networkId: NET,
			row: i => ({ address: encodeAddress(crypto.randomBytes(32), POLKADOT_SS58), ...(isUsdt(i) ? { tokenId: USDT, amount: USDT_AMOUNT.decimal } : { tokenId: DOT, amount: DOT_AMOUNT.decimal }) }),
		});
		log(`${addresses.length} checkouts inserted in ${Date.now() - t0} ms`);

		// ---- blocks pre-built: executed by the runtime and sealed, then held off the chain
		const buildStart = Date.now();
		const plans: HeldBlockPlan[] = Array.from({ length: SETTINGS.blocks }, (_, b) => {
			const share = addresses.slice(b * SETTINGS.perBlock, (b + 1) * SETTINGS.perBlock);
			return { native: share.slice(0, SETTINGS.dotPerBlock), usdt: share.slice(SETTINGS.dotPerBlock) };
		});
		const built = await dot.call("prebuild", plans, DOT_AMOUNT.planck.toString(), USDT_AMOUNT.units.toString());
		const buildRate = total / ((Date.now() - buildStart) / 1000);
		log(`${SETTINGS.blocks} blocks built in ${Date.now() - buildStart} ms (chopsticks executed ${buildRate.toFixed(0)} payments/s; ${built.events.join(", ")} events a block); releasing at ${SETTINGS.releaseBlocksPerS} blocks/s`);

		const { steps } = await startWatcherAtHead(broker, "watcher-polkadot", NET, () => dot!.call("head"), log);
		const app = appOf(broker);

		// ---- the window
		const { ChainTransfer, TransactionCredit } = app.models;
		const { cpu0, cpuDetect, cpu1 } = await detectionWindow({ models: app.models, total, nodePid: dot.child.pid, timeoutS: SETTINGS.creditTimeoutS, release: () => dot!.call("release", SETTINGS.releaseBlocksPerS), log });

		// ---- results
		const onChainAt = await dot.call("onChainAt");
		const onChain = (n: number) => onChainAt[String(n)] ?? NaN;
		const detections = (await ChainTransfer.findAll({ attributes: ["txHash", "logIndex", "blockNumber", "createdAt"], raw: true })) as unknown as Array<{ txHash: string; logIndex: number; blockNumber: number | string; createdAt: Date }>;
		const credits = (await TransactionCredit.findAll({ attributes: ["txHash", "logIndex", "createdAt"], raw: true })) as unknown as Array<{ txHash: string; logIndex: number; createdAt: Date }>;
		const blockOf = new Map(built.hashes.map((h, i) => [h, built.numbers[i]]));
		const time = (d: Date) => new Date(d).getTime();
		const dLat = detections.map(r => time(r.createdAt) - onChain(Number(r.blockNumber))).filter(Number.isFinite).sort((a, b) => a - b);
		const cLat = credits.map(r => time(r.createdAt) - onChain(blockOf.get(r.txHash) ?? -1)).filter(Number.isFinite).sort((a, b) => a - b);
		const first = onChain(built.numbers[0]);
		const last = onChain(built.numbers[built.numbers.length - 1]);
		const offeredRate = total / (Math.max(1, last - first + 1000 / SETTINGS.releaseBlocksPerS) / 1000);
		const detRate = detections.length / ((Math.max(...detections.map(r => time(r.createdAt))) - first) / 1000);
		const credRate = credits.length / ((Math.max(...credits.map(r => time(r.createdAt))) - first) / 1000);
		const foreign = detections.filter(r => !blockOf.has(r.txHash)).length;

		// ---- floors, same blocks, the watcher idle: the source's catch-up path, and the events read alone
		const watched = new Set(addresses);
		const tokens = [
			{ tokenId: DOT, contractAddress: "", decimals: 10 },
			{ tokenId: USDT, contractAddress: "1984", decimals: 6 },
		];
		const source = createPolkadotSource({ networkId: NET, rpcUrl: dot.url, timeoutMs: 60_000, ss58Prefix: POLKADOT_SS58 });
		const from0 = built.numbers[0];
		const to0 = built.numbers[built.numbers.length - 1];
		// Connected and the runtime's metadata loaded before the clock starts, as the watcher's is.
		await source.transfers({ fromBlock: from0 - 1, toBlock: from0 - 1, addresses: watched, tokens });
		let sourceFound = 0;
		const srcCpu0 = process.cpuUsage();
		let t = performance.now();
		for (let from = from0; from <= to0; ) {
			const refs = await source.blocks(from, to0);
			if (refs.length === 0) throw new Error(`the source read no block from #${from}`);
			const to = refs[refs.length - 1].number;
			sourceFound += (await source.transfers({ fromBlock: from, toBlock: to, addresses: watched, tokens, blockHashes: new Map(refs.map(r => [r.number, r.hash])) })).length;
			from = to + 1;
		}
		const sourceMs = performance.now() - t;
		const srcCpu = process.cpuUsage(srcCpu0);
		const evCpu0 = process.cpuUsage();
		t = performance.now();
		let events = 0;
		for (const hash of built.hashes) events += (await source.api.events(hash)).length;
		const eventsMs = performance.now() - t;
		const evCpu = process.cpuUsage(evCpu0);
		// The same read through @polkadot/api's full decode (what the source used before events-codec.ts).
		const pjs = await source.api.ready();
		await (await pjs.at(built.hashes[0])).query.system.events();
		const pjsCpu0 = process.cpuUsage();
		t = performance.now();
		for (const hash of built.hashes) await (await pjs.at(hash)).query.system.events();
		const pjsMs = performance.now() - t;
		const pjsCpu = process.cpuUsage(pjsCpu0);
		await source.close();

		const load = os.loadavg().map(l => l.toFixed(1)).join(" ");
		const pass = detRate >= TARGET.rate && detections.length >= total;
		const us = (c: NodeJS.CpuUsage, n: number) => ((c.user + c.system) / Math.max(1, n)).toFixed(0);
		console.log(
			`watcher-polkadot: ${detRate.toFixed(0)} transfers/s detected (stored; offered ${offeredRate.toFixed(0)}/s) p50 ${percentile(dLat, 50).toFixed(0)} ms p99 ${percentile(dLat, 99).toFixed(0)} ms after the block; credited ${credRate.toFixed(0)} transfers/s (at finality, each block finalized as it goes on), latency after the block p50 ${percentile(cLat, 50).toFixed(0)} ms p99 ${percentile(cLat, 99).toFixed(0)} ms; target >= ${TARGET.rate} transfers/s detected ${pass ? "PASS" : "BELOW"}`,
		);
		console.log(
			`  ${total} payments (${SETTINGS.blocks} blocks x ${SETTINGS.dotPerBlock} DOT + ${SETTINGS.usdtPerBlock} USDT 1984, batchAll) to ${SETTINGS.addresses} watched addresses, pre-built (chopsticks executed ${buildRate.toFixed(0)} payments/s) and released at ${SETTINGS.releaseBlocksPerS} blocks/s; ${detections.length} detections stored (${foreign} not in the released blocks), ${credits.length} credited; load average at the end ${load}`,
		);
		console.log(
			`  floors, same blocks, same run: the source alone (blocks() + transfers(), no database) ${(sourceFound / (sourceMs / 1000)).toFixed(0)} transfers/s, CPU ${us(srcCpu, sourceFound)} us/transfer (${sourceFound} found); System.Events read and decoded alone (api.events: raw storage, metadata-built codecs; one block at a time) ${(total / (eventsMs / 1000)).toFixed(0)} transfers/s, ${(eventsMs / built.hashes.length).toFixed(0)} ms a block of ${Math.round(events / built.hashes.length)} events, CPU ${us(evCpu, total)} us/transfer; the same through @polkadot/api's decode ${(total / (pjsMs / 1000)).toFixed(0)} transfers/s, CPU ${us(pjsCpu, total)} us/transfer`,
		);
		console.log(`  ${stepsText(steps, total, "header + timestamp per block", "System.Events read + decode + match")}`);
		const cpuLine = (b: CpuMark) => cpuText(cpu0, b, total, "watcher + core services + driver", "Polkadot node (chopsticks + proxy)");
		if (cpuDetect) console.log(`  CPU to the last detection ${cpuLine(cpuDetect)}`);
		console.log(`  CPU to the last credit ${cpuLine(cpu1)}`);
	} finally {
		await cleanup();
	}
}

runMain("watcher-polkadot", main);
