/**
 * `npm run bench` case `sweep-evm` (docs/benchmarks.md): the EVM sweep of ERC-20 deposit
 * addresses in EIP-7702 batches (lib/chains/evm/sweep.ts) against a real anvil node, everything on
 * 127.0.0.1. No database: this measures the chain side only (the sweeper service's records and
 * locks come on top).
 *
 * - anvil with automine (a block per transaction); TestToken, SweepBatcher and SweepDelegate
 *   deployed; the sweeper wallet is anvil's account 1, the payer account 0.
 * - BENCH_SWEEP_BATCHES (default 5) batches of BENCH_SWEEP_BATCH (default 20) fresh deposit
 *   addresses (random keys), each paid a different TestToken amount by one batchTransfer and
 *   holding no ETH; all swept to one destination (a merchant's withdrawal address).
 * - first sweep: each batch swept once, every deposit signing its EIP-7702 authorization;
 *   repeat sweep: the same addresses paid again and swept again, already delegated (type 2).
 * - gas/address = receipt gasUsed / batch size (what the sweeper wallet pays, refunds applied),
 *   averaged over the batches; the first batch also pays the destination's first credit.
 * - sweeps/s = deposit addresses swept / wall time of the sweeps, one batch after the other from
 *   one wallet: per batch the delegation checks (eth_getCode, nonces), fees, eth_estimateGas,
 *   signing (authorizations included), broadcast and the receipt. Paying the addresses is not
 *   timed. Balances are read back after every batch and must be exact.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Contract, JsonRpcProvider, Network, Wallet, getAddress } from "ethers";
import { anvilPrivateKeys, spawnAnvil } from "../lib/dev/anvil";
import { deployContract } from "../lib/chains/evm/contracts";
import {
	authorizationNoncesFor, broadcast, deploySweepContracts, estimateBatchGas, signBatchTokenSweep, suggestFees, type BatchDeposit,
} from "../lib/chains/evm/sweep";
import { envInt, freePort, makeLog, runMain, settingsOrExit, sleep } from "./common";

const SETTINGS = settingsOrExit("sweep-evm", () => ({
	batches: envInt("BENCH_SWEEP_BATCHES", 5, 1),
	batch: envInt("BENCH_SWEEP_BATCH", 20, 1),
}));
const TARGET = { first: 35_000, repeat: 15_000 };
const log = makeLog("sweep-evm");

async function main(): Promise<void> {
	const cachePath = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-bench-anvil-"));
	const anvil = await spawnAnvil({ port: await freePort(), cachePath });
	const provider = new JsonRpcProvider(anvil.url, Network.from(31337), { staticNetwork: true, cacheTimeout: -1 });
	try {
		const [payerKey, sweeperKey] = anvilPrivateKeys(2);
		const payer = new Wallet(payerKey, provider);
		const sweeper = new Wallet(sweeperKey, provider);
		const chainId = 31337;
		const token = await deployContract(payer, "TestToken", ["Test USD Coin", "USDC"]);
		const tokenAddress = await token.getAddress();
		const { batcher, delegate } = await deploySweepContracts(sweeper);
		const to = getAddress(`0x${crypto.randomBytes(20).toString("hex")}`);
		const perBatch = SETTINGS.batch;
		await (await token.mint(payer.address, 10n ** 30n)).wait();
		log(`anvil ${anvil.url}; batcher ${batcher}, delegate ${delegate}; ${SETTINGS.batches} batches of ${perBatch}`);

		const receiptOf = async (hash: string) => {
			for (;;) {
				const receipt = await provider.getTransactionReceipt(hash);
				if (receipt) return receipt;
				await sleep(2);
			}
		};
		const pay = async (addresses: string[], round: number) => {
			const amounts = addresses.map((_, i) => BigInt(1_000_000 * (round + 1) + i));
			await (await (token.connect(payer) as Contract).batchTransfer(addresses, amounts)).wait();
			return amounts.reduce((a, b) => a + b, 0n);
		};
		let expectedAtDestination = 0n;
		/** One timed sweep of the batch; gas used, whether it carried authorizations, and the wall time. */
		const sweep = async (keys: Array<{ key: Uint8Array; address: string }>) => {
			const started = performance.now();
			const [nonces, fees] = await Promise.all([authorizationNoncesFor(provider, keys.map(k => k.address), delegate), suggestFees(provider)]);
			const deposits: BatchDeposit[] = keys.map((k, i) => ({ ...k, authorizationNonce: nonces[i] }));
			const common = { chainId, sweeperKey, batcher, delegate, token: tokenAddress, to, deposits };
			const [gasLimit, nonce] = await Promise.all([estimateBatchGas(provider, common), provider.getTransactionCount(sweeper.address, "pending")]);
			const tx = await signBatchTokenSweep({ ...common, nonce, fees, gasLimit });
			await broadcast(provider, tx.raw);
			const receipt = await receiptOf(tx.hash);
			const ms = performance.now() - started;
			if (receipt.status !== 1) throw new Error(`batch ${tx.hash} reverted`);
			return { gas: receipt.gasUsed, type: tx.type, ms };
		};
		const check = async (keys: Array<{ address: string }>) => {
			for (const k of keys) if ((await token.balanceOf(k.address)) !== 0n) throw new Error(`${k.address} still holds tokens after its sweep`);
			const got = (await token.balanceOf(to)) as bigint;
			if (got !== expectedAtDestination) throw new Error(`destination holds ${got}, expected ${expectedAtDestination}`);
		};

		const first: bigint[] = [];
		const repeat: bigint[] = [];
		let sweptAddresses = 0;
		let sweepMs = 0;
		const roundMs = [0, 0];
		for (let b = 0; b < SETTINGS.batches; b++) {
			const keys = Array.from({ length: perBatch }, () => {
				const key = new Uint8Array(crypto.randomBytes(32));
				return { key, address: new Wallet(Buffer.from(key).toString("hex")).address };
			});
			const addresses = keys.map(k => k.address);
			for (const [round, gasOf] of [first, repeat].entries()) {
				expectedAtDestination += await pay(addresses, round);
				const r = await sweep(keys);
				if (r.type !== (round === 0 ? 4 : 2)) throw new Error(`round ${round} sent a type-${r.type} transaction`);
				await check(keys);
				gasOf.push(r.gas);
				sweptAddresses += perBatch;
				sweepMs += r.ms;
				roundMs[round] += r.ms;
				log(`batch ${b + 1} ${round === 0 ? "first " : "repeat"}: ${r.gas} gas = ${(Number(r.gas) / perBatch).toFixed(0)}/address, ${r.ms.toFixed(0)} ms`);
			}
		}
		const perAddress = (gases: bigint[]) => Number(gases.reduce((a, b) => a + b, 0n)) / (gases.length * perBatch);
		const g1 = perAddress(first);
		const g2 = perAddress(repeat);
		const rate = sweptAddresses / (sweepMs / 1000);
		const verdict = (g: number, target: number) => (g <= target ? "PASS" : "BELOW");
		console.log(
			`sweep-evm: first sweep ${g1.toFixed(0)} gas/address (target <= ${TARGET.first} ${verdict(g1, TARGET.first)}), ` +
				`repeat ${g2.toFixed(0)} gas/address (target <= ${TARGET.repeat} ${verdict(g2, TARGET.repeat)}), ${rate.toFixed(0)} sweeps/s`,
		);
		console.log(`  ${SETTINGS.batches} batches of ${perBatch} ERC-20 deposit addresses, each swept twice (${sweptAddresses} address sweeps in ${(sweepMs / 1000).toFixed(2)} s: a first-sweep batch ${(roundMs[0] / SETTINGS.batches).toFixed(0)} ms, a repeat batch ${(roundMs[1] / SETTINGS.batches).toFixed(0)} ms); balances read back exact`);
	} finally {
		provider.destroy();
		anvil.child.kill("SIGTERM");
		fs.rmSync(cachePath, { recursive: true, force: true });
	}
}

runMain("sweep-evm", main);
