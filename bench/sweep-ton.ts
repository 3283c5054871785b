/**
 * `npm run bench` case `sweep-ton` (docs/benchmarks.md): TON jetton sweeps as the TON sweeper
 * sends them (lib/chains/ton/sweep.ts: one batched v5R1 top-up, then each deposit's whole jetton
 * balance with excesses back to the sweeper) against the TON test node (test/helpers/ton-facade.ts:
 * the toncenter v3 API over @ton/sandbox, the real TVM with the reference jetton, not the exact
 * USDT-on-TON contract), everything on 127.0.0.1. No database: the chain side only (the runner's
 * records and lease come on top).
 *
 * - BENCH_SWEEP_TON_BATCHES (default 2) batches of BENCH_SWEEP_TON_BATCH (default 20) fresh,
 *   undeployed deposit wallets (random keys), each minted 20 jetton units x 10^6;
 * - per batch: one top-up message from the sweeper wallet (JETTON_SWEEP_TON to each), then one
 *   jetton sweep message per deposit, all sent through POST /api/v3/message;
 * - TON/deposit = the sweeper wallet's balance change / deposits swept: top-ups and their fees,
 *   less the excesses that came back (what sweeping a jetton deposit costs the operator);
 * - sweeps/s = deposits swept / wall time of signing and sending (sealing the blocks included).
 * Balances are read back after every batch and must be exact.
 */
import crypto from "node:crypto";
import { Address } from "@ton/core";
import { keyPairFromSeed } from "@ton/crypto";
import { buildJettonSweep, buildTopUps, walletAddress } from "../lib/chains/ton/sweep";
import { startTonNode } from "../test/helpers/ton-node";
import { envInt, makeLog, runMain, settingsOrExit } from "./common";

const SETTINGS = settingsOrExit("sweep-ton", () => ({
	batches: envInt("BENCH_SWEEP_TON_BATCHES", 2, 1),
	batch: envInt("BENCH_SWEEP_TON_BATCH", 20, 1),
}));
/** What the top-up sends each deposit (0.05 TON): a sweep must cost less. */
const TARGET_NANOTONS = 50_000_000n;
const AMOUNT = 20_000_000n;
const log = makeLog("sweep-ton");

async function main(): Promise<void> {
	const chain = await startTonNode();
	try {
		const jetton = await chain.deployJetton({ symbol: "USDT", decimals: 6 });
		const sweeperSeed = crypto.randomBytes(32);
		const sweeperWallet = await chain.wallet({ version: "v5", keyPair: keyPairFromSeed(sweeperSeed), balance: 10_000_000_000_000n });
		const sweeperKey = new Uint8Array(sweeperSeed);
		if (walletAddress(sweeperKey, "v5r1") !== sweeperWallet.address.toRawString()) throw new Error("the sweeper wallet's address differs from the module's");
		const merchant = (await chain.wallet()).address;
		const send = async (boc: string) => {
			const r = await chain.api("/api/v3/message", { boc });
			if (r.status !== 200) throw new Error(`POST /message answered ${r.status}: ${JSON.stringify(r.body)}`);
		};
		const validUntil = () => chain.facade.now() + 60;
		let spent = 0n;
		let swept = 0;
		let ms = 0;
		let expected = 0n;
		for (let b = 0; b < SETTINGS.batches; b++) {
			const deposits = Array.from({ length: SETTINGS.batch }, () => {
				const key = new Uint8Array(crypto.randomBytes(32));
				return { key, address: Address.parseRaw(walletAddress(key, "v4r2")) };
			});
			for (const d of deposits) await chain.mint(jetton, d.address, AMOUNT);
			await chain.settle();
			const before = chain.balance(sweeperWallet.address);
			const started = performance.now();
			const topUp = buildTopUps({ sweeper: { key: sweeperKey, version: "v5r1", seqno: await chain.seqno(sweeperWallet), deployed: true }, deposits: deposits.map(d => ({ address: d.address.toRawString() })), validUntil: validUntil() });
			await send(topUp.boc);
			await chain.settle();
			for (const d of deposits) {
				const m = buildJettonSweep({
					deposit: { key: d.key, seqno: 0, deployed: false, jettonWallet: (await chain.jettonWalletAddress(jetton, d.address)).toRawString(), jettonAmount: AMOUNT, tonBalance: chain.balance(d.address) },
					destination: merchant.toString({ bounceable: false }),
					responseDestination: sweeperWallet.address.toRawString(),
					validUntil: validUntil(),
				});
				await send(m.boc);
			}
			await chain.settle();
			const batchMs = performance.now() - started;
			expected += AMOUNT * BigInt(deposits.length);
			for (const d of deposits) if ((await chain.jettonBalance(jetton, d.address)) !== 0n) throw new Error(`${d.address.toRawString()} still holds jettons after its sweep`);
			const got = await chain.jettonBalance(jetton, merchant);
			if (got !== expected) throw new Error(`the merchant holds ${got}, expected ${expected}`);
			const cost = before - chain.balance(sweeperWallet.address);
			spent += cost;
			swept += deposits.length;
			ms += batchMs;
			log(`batch ${b + 1}: ${deposits.length} deposits, the sweeper spent ${cost} nanotons (${cost / BigInt(deposits.length)}/deposit), ${batchMs.toFixed(0)} ms`);
		}
		const perDeposit = spent / BigInt(swept);
		const ton = (n: bigint) => (Number(n) / 1e9).toFixed(4);
		console.log(`sweep-ton: ${ton(perDeposit)} TON per swept jetton deposit (target <= ${ton(TARGET_NANOTONS)} ${perDeposit <= TARGET_NANOTONS ? "PASS" : "ABOVE"}), ${(swept / (ms / 1000)).toFixed(0)} sweeps/s`);
		console.log(`  ${SETTINGS.batches} batches of ${SETTINGS.batch} undeployed jetton deposits (reference jetton on the TON test node), one top-up message per batch; balances read back exact`);
	} finally {
		await chain.stop();
	}
}

runMain("sweep-ton", main);
