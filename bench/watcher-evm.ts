/**
 * `npm run bench` case `watcher-evm` (docs/benchmarks.md): the EVM chain watcher against a real
 * anvil node with 1-second blocks, every block holding BENCH_WATCHER_PER_BLOCK (default 5,000)
 * ERC-20 transfers, matched against BENCH_WATCHER_ADDRESSES (default 100,000) live deposit
 * addresses. Everything on 127.0.0.1.
 *
 * - anvil: `--block-time 1`, base fee 0 (so 30M-gas transactions queued for many blocks never
 *   price out), its own cache folder; TestToken deployed, minted to a payer.
 * - the node runs in this process (lib/node.ts createNode, as the tests do) with networks,
 *   transactions and watcher-evm on a fresh MySQL database and Redis prefix.
 * - 100,000 checkouts are inserted directly (one payment link, transaction and deposit address
 *   each, multi-row INSERTs): the addresses are random 20-byte addresses, EIP-55 checksummed,
 *   not HD-derived (the watcher only compares them). Each checkout asks for 1 USDC, so every
 *   credit settles its checkout and link (the full credit path). No payment intents.
 * - every transfer is a `batchTransfer` of 1,000 recipients; all transactions are signed up front
 *   and queued at once, and the block gas limit is set so each block takes exactly
 *   PER_BLOCK / 1,000 of them.
 *
 * Measured (two things, labelled apart):
 * - detections stored: chain_transfers rows; latency = row createdAt - the moment this process
 *   first saw the block (eth_blockNumber polled every 20 ms: the "mined" clock, at most ~20 ms
 *   late, so latencies read slightly low by that); rate = rows / (last row stored - first
 *   transfer block seen);
 * - credited end to end: transaction_credits rows (transactions.creditBatch, settling each checkout);
 *   rate = rows / (last credit - first transfer block seen).
 * Where the time goes: the runner's per-step phase timings (RunnerDeps.onStepTimings) and CPU
 * seconds of this process (node and driver), anvil and mysqld. BENCH_WATCHER_PROFILE=1 also takes
 * a V8 CPU profile of this process over the measured window (written to
 * BENCH_WATCHER_PROFILE_OUT when set).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import crypto from "node:crypto";
import { Session } from "node:inspector/promises";
import mysql from "mysql2/promise";
import { Contract, JsonRpcProvider, Network, Transaction, Wallet, getAddress, parseUnits } from "ethers";
import { loadConfig } from "../lib/config";
import { createNode } from "../lib/node";
import { appOf } from "../lib/app";
import { anvilPrivateKeys, spawnAnvil } from "../lib/dev/anvil";
import { contractArtifacts, deployContract } from "../lib/chains/evm/contracts";
import { networkIdFor, tokenIdFor } from "../lib/networks/catalogue";
import type { NetworkWatcher, RunnerDeps, StepTimings } from "../lib/watchers/runner";
import { formatSummary, summarizeProfile, CpuProfile } from "./cpu-profile";
import { awaitCredits, createRunDatabase, dropRunState, envInt, freePort, inProcessNodeEnv, insertCheckouts, makeLog, percentile, prepareRun, preflight, procCpuSeconds, runMain, serverPids, settingsOrExit, sleep } from "./common";

const BATCH = 1_000;

function loadSettings() {
	const perBlock = envInt("BENCH_WATCHER_PER_BLOCK", 5_000, BATCH);
	if (perBlock % BATCH !== 0) throw new Error(`BENCH_WATCHER_PER_BLOCK must be a multiple of ${BATCH}`);
	const addresses = envInt("BENCH_WATCHER_ADDRESSES", 100_000, 1);
	const blocks = envInt("BENCH_WATCHER_BLOCKS", 10, 1);
	if (blocks * perBlock > addresses) throw new Error(`BENCH_WATCHER_BLOCKS x BENCH_WATCHER_PER_BLOCK (${blocks * perBlock}) must not exceed BENCH_WATCHER_ADDRESSES (${addresses}): each transfer goes to a distinct address`);
	return {
		addresses,
		blocks,
		perBlock,
		required: envInt("BENCH_WATCHER_CONFIRMATIONS", 1, 1),
		pollMs: envInt("BENCH_WATCHER_POLL_MS", 100, 50),
		creditTimeoutS: envInt("BENCH_WATCHER_CREDIT_TIMEOUT_S", 300, 1),
		profile: process.env.BENCH_WATCHER_PROFILE === "1",
		mysqlUrl: (process.env.BENCH_MYSQL_URL || "mysql://root@127.0.0.1:3306").replace(/\/+$/, ""),
		redisUrl: process.env.BENCH_REDIS_URL || "redis://127.0.0.1:6379/0",
	};
}

const SETTINGS = settingsOrExit("watcher-evm", loadSettings);
const TARGET = { rate: 5_000, p99Ms: 2_000 };
/** Issue 21: the burst credited at chain speed, end to end. */
const CREDIT_TARGET = { rate: 3_000, p99Ms: 5_000 };
const log = makeLog("watcher-evm");
const NET = networkIdFor("anvil-local");
const USDC = tokenIdFor("anvil-local", "USDC");

function randomAddress(): string {
	return getAddress(`0x${crypto.randomBytes(20).toString("hex")}`);
}

interface PhaseTotals extends Omit<StepTimings, "readAhead"> {
	steps: number;
	report: number;
	reported: number;
}

async function main(): Promise<void> {
	preflight(SETTINGS.mysqlUrl, SETTINGS.redisUrl, []);
	const run = prepareRun(SETTINGS.mysqlUrl, "cpg-bench-watcher-");
	const { workDir, dbName, redisPrefix, databaseUrl } = run;
	const total = SETTINGS.blocks * SETTINGS.perBlock;
	const txsPerBlock = SETTINGS.perBlock / BATCH;
	let anvil: Awaited<ReturnType<typeof spawnAnvil>> | null = null;
	let broker: Awaited<ReturnType<typeof createNode>> | null = null;
	let provider: JsonRpcProvider | null = null;
	let dbCreated = false;
	const cleanup = async () => {
		if (broker) await broker.stop().catch(() => undefined);
		provider?.destroy();
		if (anvil && anvil.child.exitCode === null) {
			const exited = new Promise(r => anvil!.child.once("exit", r));
			anvil.child.kill("SIGTERM");
			await Promise.race([exited, sleep(3_000)]);
			if (anvil.child.exitCode === null) anvil.child.kill("SIGKILL");
		}
		await dropRunState(SETTINGS.mysqlUrl, dbCreated ? dbName : null, SETTINGS.redisUrl, redisPrefix);
		fs.rmSync(workDir, { recursive: true, force: true });
	};
	process.once("SIGINT", () => void cleanup().finally(() => process.exit(130)));

	try {
		log(`node ${process.version}, ${os.cpus().length} cpus; ${SETTINGS.addresses} addresses, ${SETTINGS.blocks} blocks x ${SETTINGS.perBlock} transfers, ${SETTINGS.required} confirmation(s)`);
		// ---- anvil
		const port = await freePort();
		const cachePath = path.join(workDir, "anvil");
		fs.mkdirSync(cachePath);
		anvil = await spawnAnvil({ port, cachePath, blockTime: 1, args: ["--gas-limit", "100000000", "--block-base-fee-per-gas", "0"] });
		provider = new JsonRpcProvider(anvil.url, Network.from(31337), { staticNetwork: true, cacheTimeout: -1, batchMaxCount: 1 });
		const keys = anvilPrivateKeys(2);
		const deployer = new Wallet(keys[0], provider);
		const payer = new Wallet(keys[1], provider);
		contractArtifacts();
		const token = await deployContract(deployer, "TestToken", ["Test USD Coin", "USDC"]);
		const tokenAddress = await token.getAddress();
		await (await (token.connect(deployer) as Contract).mint(payer.address, parseUnits(String(total), 6))).wait();
		log(`anvil ${anvil.url} (pid ${anvil.child.pid}); TestToken ${tokenAddress}`);

		// ---- database, checkouts, node
		await createRunDatabase(SETTINGS.mysqlUrl, dbName);
		dbCreated = true;
		const env = inProcessNodeEnv(run, SETTINGS.redisUrl, {
			RPC_URL_ANVIL_LOCAL: anvil.url,
			TEST_USDC_ADDRESS: tokenAddress,
			REQUIRED_CONFIRMATIONS_ANVIL_LOCAL: String(SETTINGS.required),
			WATCHER_POLL_MS: String(SETTINGS.pollMs),
		});
		const config = loadConfig(env);
		// Migrations first (createNode runs them), then the rows, then the watcher sees them all at its first step.
		broker = await createNode({ config, services: ["networks", "transactions", "watcher-evm"], env, nodeID: `bench-watcher-${crypto.randomBytes(3).toString("hex")}` });
		let t0 = Date.now();
		const addresses = await insertCheckouts(databaseUrl, SETTINGS.addresses, { chainType: "evm", networkId: NET, row: () => ({ address: randomAddress(), tokenId: USDC, amount: "1" }) });
		log(`${SETTINGS.addresses} checkouts inserted in ${Date.now() - t0} ms`);
		t0 = Date.now();
		await broker.start();
		const app = appOf(broker);
		const watcherService = broker.getLocalService("watcher-evm") as unknown as { runners: Map<string, NetworkWatcher> };
		const runner = watcherService.runners.get(NET);
		if (!runner) throw new Error("the watcher follows no anvil-local network (is it active? RPC_URL_ANVIL_LOCAL set?)");
		const deps = (runner as unknown as { deps: RunnerDeps }).deps;
		const steps: StepTimings[] = [];
		deps.onStepTimings = t => steps.push(t);
		const reports: Array<{ ms: number; reported: number }> = [];
		deps.onReportTimings = t => reports.push(t);
		// Ready: the watcher leads, has loaded the addresses and stands at the head.
		for (;;) {
			const head = await provider.getBlockNumber();
			if (runner.status.leader && runner.status.cursor !== null && runner.status.cursor >= head) break;
			if (Date.now() - t0 > 120_000) throw new Error(`the watcher did not reach the head within 120 s (status ${JSON.stringify(runner.status)})`);
			await sleep(100);
		}
		log(`node started, watcher at the head in ${Date.now() - t0} ms`);

		// ---- transactions, signed up front
		const tokenFor = token.connect(payer) as Contract;
		const amounts = Array.from({ length: BATCH }, () => 1_000_000n);
		const groups: string[][] = [];
		for (let i = 0; i < SETTINGS.blocks * txsPerBlock; i++) groups.push(addresses.slice(i * BATCH, (i + 1) * BATCH));
		const gas = await tokenFor.batchTransfer.estimateGas(groups[0], amounts);
		const txGas = (gas * 102n) / 100n;
		const blockGas = txGas * BigInt(txsPerBlock) + 100_000n;
		await provider.send("evm_setBlockGasLimit", [`0x${blockGas.toString(16)}`]);
		let nonce = await provider.getTransactionCount(payer.address, "pending");
		const raws: string[] = [];
		for (const to of groups) {
			const req = await tokenFor.batchTransfer.populateTransaction(to, amounts);
			raws.push(await payer.signTransaction({ ...req, nonce: nonce++, gasLimit: txGas, chainId: 31337n, type: 2, maxFeePerGas: 1_000_000_000n, maxPriorityFeePerGas: 1_000_000_000n }));
		}
		log(`${raws.length} batchTransfer transactions signed (${gas} gas each; block gas limit ${blockGas}: ${txsPerBlock} a block)`);

		// ---- the "mined" clock
		const seen = new Map<number, number>();
		let watching = true;
		const rpcUrl = anvil.url;
		const watchBlocks = (async () => {
			let last = -1;
			while (watching) {
				try {
					const res = await fetch(rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] }) });
					const n = Number(((await res.json()) as { result: string }).result);
					const at = Date.now();
					for (let b = last + 1; b <= n; b++) if (last >= 0 && !seen.has(b)) seen.set(b, at);
					last = Math.max(last, n);
				} catch {
					/* next poll */
				}
				await sleep(20);
			}
		})();
		await sleep(100);

		const pids = serverPids();
		const tables0 = await tableStats(SETTINGS.mysqlUrl, dbName);
		const cpu0 = { self: process.cpuUsage(), anvil: procCpuSeconds(anvil.child.pid), mysqld: procCpuSeconds(pids.mysqld), wall: Date.now() };
		let session: Session | null = null;
		if (SETTINGS.profile) {
			session = new Session();
			session.connect();
			await session.post("Profiler.enable");
			await session.post("Profiler.setSamplingInterval", { interval: 1000 });
			await session.post("Profiler.start");
		}
		const sendStart = Date.now();
		for (const raw of raws) await provider.send("eth_sendRawTransaction", [raw]);
		log(`queued in ${Date.now() - sendStart} ms; waiting for ${total} detections`);

		const { ChainTransfer, TransactionCredit } = app.models;
		await awaitCredits(app.models, total, sendStart, SETTINGS.creditTimeoutS, log);
		const cpu1 = { self: process.cpuUsage(cpu0.self), anvil: procCpuSeconds(anvil.child.pid), mysqld: procCpuSeconds(pids.mysqld), wall: Date.now() };
		const tables1 = await tableStats(SETTINGS.mysqlUrl, dbName);
		let profile: CpuProfile | null = null;
		if (session) {
			profile = ((await session.post("Profiler.stop")) as { profile: CpuProfile }).profile;
			session.disconnect();
			// For a closer look (e.g. Chrome DevTools, or callers of a function).
			if (process.env.BENCH_WATCHER_PROFILE_OUT) fs.writeFileSync(process.env.BENCH_WATCHER_PROFILE_OUT, JSON.stringify(profile));
		}
		watching = false;
		await watchBlocks;

		// ---- results
		const detections = (await ChainTransfer.findAll({ attributes: ["blockNumber", "createdAt"], raw: true })) as unknown as Array<{ blockNumber: number | string; createdAt: Date }>;
		const credits = (await TransactionCredit.findAll({ attributes: ["txHash", "createdAt"], raw: true })) as unknown as Array<{ txHash: string; createdAt: Date }>;
		const blockOfTx = new Map<string, number>();
		for (const raw of raws) {
			const r = await provider.getTransactionReceipt(Transaction.from(raw).hash!);
			if (r) blockOfTx.set(r.hash, r.blockNumber);
		}
		const transferBlocks = [...new Set(blockOfTx.values())].sort((a, b) => a - b);
		const firstSeen = Math.min(...transferBlocks.map(b => seen.get(b) ?? Infinity));
		const latency = (block: number, at: Date) => new Date(at).getTime() - (seen.get(block) ?? NaN);
		const dLat = detections.map(r => latency(Number(r.blockNumber), r.createdAt)).filter(Number.isFinite).sort((a, b) => a - b);
		const cLat = credits.map(r => latency(blockOfTx.get(r.txHash) ?? -1, r.createdAt)).filter(Number.isFinite).sort((a, b) => a - b);
		const lastDetection = Math.max(...detections.map(r => new Date(r.createdAt).getTime()));
		const lastCredit = credits.length ? Math.max(...credits.map(r => new Date(r.createdAt).getTime())) : NaN;
		const detRate = detections.length / ((lastDetection - firstSeen) / 1000);
		const credRate = credits.length / ((lastCredit - firstSeen) / 1000);
		const p50 = percentile(dLat, 50);
		const p99 = percentile(dLat, 99);
		const pass = detRate >= TARGET.rate && p99 <= TARGET.p99Ms && detections.length >= total;

		const perBlock = transferBlocks.map(b => `${b}:${detections.filter(r => Number(r.blockNumber) === b).length}`).join(" ");
		log(`transfers landed in blocks ${perBlock}`);
		const sum: PhaseTotals = { head: 0, addresses: 0, cursor: 0, blocks: 0, transfers: 0, commit: 0, report: 0, reconcile: 0, stored: 0, reported: 0, fromBlock: 0, toBlock: 0, steps: 0 };
		const measured = steps.filter(s => s.stored > 0);
		for (const s of measured) {
			for (const k of ["head", "addresses", "cursor", "blocks", "transfers", "commit", "reconcile", "stored"] as const) sum[k] += s[k];
			sum.steps++;
		}
		for (const r of reports) {
			sum.report += r.ms;
			sum.reported += r.reported;
		}
		const wall = (cpu1.wall - cpu0.wall) / 1000;
		const selfCpu = (cpu1.self.user + cpu1.self.system) / 1e6;
		const cpuLine = (name: string, a: number | null, b: number | null) => (a === null || b === null ? `${name} n/a` : `${name} ${(b - a).toFixed(1)} s (${(((b - a) * 1e6) / total).toFixed(0)} us/transfer)`);

		console.log(
			`watcher-evm: ${detRate.toFixed(0)} transfers/s (detections stored) p50 ${p50.toFixed(0)} ms p99 ${p99.toFixed(0)} ms; credited ${credRate.toFixed(0)} transfers/s end to end; target >= ${TARGET.rate} transfers/s and p99 <= ${TARGET.p99Ms} ms ${pass ? "PASS" : "BELOW"}`,
		);
		const creditP99 = percentile(cLat, 99);
		const creditPass = credRate >= CREDIT_TARGET.rate && creditP99 <= CREDIT_TARGET.p99Ms && credits.length >= total;
		console.log(`  credits: ${credRate.toFixed(0)} transfers/s end to end, latency p99 ${creditP99.toFixed(0)} ms; target >= ${CREDIT_TARGET.rate} transfers/s and p99 <= ${CREDIT_TARGET.p99Ms} ms ${creditPass ? "PASS" : "BELOW"}`);
		console.log(`  ${total} transfers in ${transferBlocks.length} blocks (${SETTINGS.perBlock} a block, 1-second blocks) to ${SETTINGS.addresses} watched addresses; ${detections.length} detections stored, ${credits.length} credited; credit latency p50 ${percentile(cLat, 50).toFixed(0)} ms p99 ${percentile(cLat, 99).toFixed(0)} ms`);
		const ms = (v: number) => `${v.toFixed(0)} ms`;
		console.log(`  where the time goes (sums of wall time over the ${sum.steps} watcher steps that stored transfers, and ${reports.length} report pass(es)):`);
		console.log(`    RPC: head ${ms(sum.head)}, block headers ${ms(sum.blocks)}, transfers (eth_getLogs + full blocks, match in memory) ${ms(sum.transfers)}`);
		console.log(`    DB: addresses refresh ${ms(sum.addresses)}, cursor ${ms(sum.cursor)}, commit (${sum.stored} chain_transfers rows) ${ms(sum.commit)} = ${((1000 * sum.commit) / Math.max(1, sum.stored)).toFixed(0)} us/row`);
		console.log(`    report, beside the loop (${sum.reported} transfers through transactions.detectBatch / creditBatch, up to 200 a call, 4 calls at once) ${ms(sum.report)} = ${((1000 * sum.report) / Math.max(1, sum.reported)).toFixed(0)} us/transfer; reconcile ${ms(sum.reconcile)}`);
		console.log(`    detect path (head..commit) per transfer: ${((1000 * (sum.head + sum.addresses + sum.cursor + sum.blocks + sum.transfers + sum.commit)) / Math.max(1, sum.stored)).toFixed(0)} us`);
		console.log(`  CPU over ${wall.toFixed(1)} s (2 cores = ${(2 * wall).toFixed(0)} core-s): ${cpuLine("this process (node + driver)", 0, selfCpu)}, ${cpuLine("anvil", cpu0.anvil, cpu1.anvil)}, ${cpuLine("mysqld", cpu0.mysqld, cpu1.mysqld)}`);
		if (tables0 && tables1) console.log(`  MariaDB rows per transfer over the window (userstat: read / changed / index entries changed):\n${tableLines(tables0, tables1, total)}`);
		if (profile) console.log(`  CPU profile of this process:\n${formatSummary(summarizeProfile(profile, 15), total)}`);
	} finally {
		await cleanup();
	}
}

type TableStats = Map<string, { read: number; changed: number; changedXIndexes: number }>;

/**
 * The run database's per-table row counts (MariaDB's information_schema.TABLE_STATISTICS), or null
 * when the server does not keep them (`SET GLOBAL userstat = 1` turns them on). Counted per table
 * of this run's own database, so other clients of a shared server do not blur them, and as
 * deterministic as the work itself: the rows a credit reads and writes, and the index entries
 * those writes change.
 */
async function tableStats(mysqlUrl: string, dbName: string): Promise<TableStats | null> {
	const conn = await mysql.createConnection(mysqlUrl);
	try {
		const [[on]] = (await conn.query("SELECT @@userstat AS on_")) as unknown as [Array<{ on_: number }>];
		if (!Number(on?.on_)) return null;
		const [rows] = (await conn.query("SELECT TABLE_NAME AS t, ROWS_READ AS r, ROWS_CHANGED AS c, ROWS_CHANGED_X_INDEXES AS x FROM information_schema.TABLE_STATISTICS WHERE TABLE_SCHEMA = ?", [dbName])) as unknown as [Array<{ t: string; r: number; c: number; x: number }>];
		return new Map(rows.map(r => [r.t, { read: Number(r.r), changed: Number(r.c), changedXIndexes: Number(r.x) }]));
	} finally {
		await conn.end();
	}
}

function tableLines(before: TableStats, after: TableStats, total: number): string {
	const per = (v: number) => (v / total).toFixed(2);
	const lines: string[] = [];
	const sum = { read: 0, changed: 0, changedXIndexes: 0 };
	for (const [table, a] of [...after].sort(([x], [y]) => x.localeCompare(y))) {
		const b = before.get(table) ?? { read: 0, changed: 0, changedXIndexes: 0 };
		const d = { read: a.read - b.read, changed: a.changed - b.changed, changedXIndexes: a.changedXIndexes - b.changedXIndexes };
		if (!d.read && !d.changed) continue;
		for (const k of ["read", "changed", "changedXIndexes"] as const) sum[k] += d[k];
		lines.push(`    ${table}: ${per(d.read)} / ${per(d.changed)} / ${per(d.changedXIndexes)}`);
	}
	lines.push(`    all tables: ${per(sum.read)} / ${per(sum.changed)} / ${per(sum.changedXIndexes)}`);
	return lines.join("\n");
}

runMain("watcher-evm", main);
