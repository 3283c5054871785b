/**
 * Cost of the EVM source's large-address-set mode: one block holding 1,000 ERC-20 Transfer logs,
 * watched for 100,000 deposit addresses (100 of the recipients among them), on a local anvil.
 * Measures `transfers()` for that block (one eth_getLogs + the in-memory match) against the bare
 * eth_getLogs round trip, and topic-filter mode for the same query (500 chunks) for contrast.
 *
 *   npm run build && node dist/bench/evm-source.js      (EVM_BENCH_ADDRESSES, EVM_BENCH_LOGS, EVM_BENCH_RUNS)
 */
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { JsonRpcProvider, Network, NonceManager, Wallet, getAddress } from "ethers";
import { deployContract } from "../lib/chains/evm/contracts";
import { createEvmSource } from "../lib/chains/evm/source";
import { anvilPrivateKeys, freePort, spawnAnvil } from "../lib/dev/anvil";
import { envInt, runMain } from "./common";

const ADDRESSES = envInt("EVM_BENCH_ADDRESSES", 100_000, 1);
const LOGS = envInt("EVM_BENCH_LOGS", 1_000, 4);
const RUNS = envInt("EVM_BENCH_RUNS", 5, 1);
const PAID = Math.min(100, LOGS);

const randomAddress = () => getAddress(`0x${crypto.randomBytes(20).toString("hex")}`);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ms = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e6;

async function main(): Promise<void> {
	const cachePath = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-bench-anvil-"));
	const anvil = await spawnAnvil({ port: await freePort(), cachePath, args: ["--gas-limit", "1000000000"] });
	const provider = new JsonRpcProvider(anvil.url, undefined, { staticNetwork: Network.from(31337), cacheTimeout: -1, pollingInterval: 50 });
	try {
		const owner = new NonceManager(new Wallet(anvilPrivateKeys(1)[0], provider));
		const token = await deployContract(owner, "TestToken", ["Test USD Coin", "USDC"]);
		await (await token.mint(await owner.getAddress(), 10n ** 15n)).wait();

		const watched = new Set<string>();
		while (watched.size < ADDRESSES - PAID) watched.add(randomAddress());
		const recipients = Array.from({ length: LOGS }, randomAddress);
		for (const r of recipients.slice(0, PAID)) watched.add(r);

		// All transfers in one block: automine off, four batch transactions, then one block.
		await provider.send("evm_setAutomine", [false]);
		const perTx = Math.ceil(LOGS / 4);
		for (let i = 0; i < LOGS; i += perTx) {
			const slice = recipients.slice(i, i + perTx);
			await token.batchTransfer(slice, slice.map((_, j) => BigInt(1_000 + i + j)));
		}
		await provider.send("evm_mine", []);
		const block = Number(await provider.send("eth_blockNumber", []));
		const logsInBlock = (await provider.send("eth_getLogs", [{ fromBlock: `0x${block.toString(16)}`, toBlock: `0x${block.toString(16)}` }])) as unknown[];
		console.log(`block ${block}: ${logsInBlock.length} Transfer logs; ${watched.size} watched addresses, ${PAID} of the recipients among them`);

		const tokens = [{ tokenId: "usdc", contractAddress: await token.getAddress(), decimals: 6 }];
		const query = { fromBlock: block, toBlock: block, addresses: watched, tokens };

		const bare: number[] = [];
		for (let i = 0; i < RUNS; i++) {
			const t0 = process.hrtime.bigint();
			const res = await fetch(anvil.url, {
				method: "POST",
				headers: { "content-type": "application/json" },
				body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_getLogs", params: [{ address: tokens[0].contractAddress, fromBlock: `0x${block.toString(16)}`, toBlock: `0x${block.toString(16)}` }] }),
			});
			await res.json();
			bare.push(ms(t0));
		}

		const large = createEvmSource({ networkId: "bench", rpcUrl: anvil.url, chainId: 31337 });
		const largeRuns: number[] = [];
		let found = 0;
		for (let i = 0; i < RUNS; i++) {
			const t0 = process.hrtime.bigint();
			found = (await large.transfers(query)).length;
			largeRuns.push(ms(t0));
		}
		const [total, roundTrip] = [median(largeRuns), median(bare)];
		console.log(`large-set mode: transfers() ${total.toFixed(1)} ms (median of ${RUNS}, ${found} transfers found) = one eth_getLogs round trip ${roundTrip.toFixed(1)} ms (bare fetch of the same query) + decoding and matching ~${(total - roundTrip).toFixed(1)} ms`);
		await large.close();

		const topic = createEvmSource({ networkId: "bench", rpcUrl: anvil.url, chainId: 31337, largeSetThreshold: Number.MAX_SAFE_INTEGER });
		const t1 = process.hrtime.bigint();
		const topicFound = (await topic.transfers(query)).length;
		console.log(`topic mode for contrast: ${Math.ceil(watched.size / 200)} eth_getLogs queries, ${ms(t1).toFixed(0)} ms (${topicFound} transfers found)`);
		await topic.close();
		if (topicFound !== found || found !== PAID) throw new Error(`expected ${PAID} transfers in both modes, got ${found} and ${topicFound}`);
	} finally {
		provider.destroy();
		anvil.child.kill("SIGKILL");
		fs.rmSync(cachePath, { recursive: true, force: true });
	}
}

runMain("bench/evm-source", main);
