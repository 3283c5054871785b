/**
 * `npm run bench` case `sweep-solana` (docs/benchmarks.md): what the Solana sweeper pays per swept
 * deposit and how many deposits it puts in one transaction, measured through the sweeper itself
 * (services/sweeper-solana.service.ts, lib/chains/solana/sweep-runner.ts) on the litesvm-backed
 * Solana test node (test/helpers/solana-node.ts: litesvm executes the transactions; slots, heads
 * and the RPC are the facade's). Everything on 127.0.0.1.
 *
 * - the node: a block every 50 ms, the finalized head 2 blocks behind; a payer and the sweeper
 *   wallet funded by airdrop; the catalogue's devnet USDC mint at its address.
 * - a gateway node in this process (lib/node.ts createNode) with the payments services,
 *   withdrawals, watcher-solana and sweeper-solana on `solana-devnet`, a fresh MySQL database; a
 *   merchant signed up over HTTP.
 * - round 1: BENCH_SWEEP_SOL (default 30) SOL checkouts of 0.01 SOL and BENCH_SWEEP_USDC (default
 *   30) USDC checkouts of 1 USDC opened over HTTP and paid (the payer creates the deposits' token
 *   accounts); once every one is credited at finalized, the merchant saves a fresh withdrawal
 *   address (its USDC token account does not exist yet) and sweeper-solana is started, so its
 *   first step sees every deposit (SWEEP_MAX_AGE_MINUTES=0: a partial batch goes at once). Round 2:
 *   as many USDC checkouts again, the sweeper stopped while they are credited, to the same
 *   destination, whose token account exists now.
 * - measured from the sweeps' records and the VM: lamports of fees per swept deposit (SOL: paid
 *   by the deposits; USDC: by the sweeper wallet, and its net per deposit once the destination
 *   account's rent paid and the closed accounts' rent recovered are counted), deposits per
 *   transaction, and the wall time from saving the address to the last sweep confirmed at
 *   finalized. Every deposit is checked at 0 (SOL) or its token account closed (USDC), the
 *   destination exact, the merchant's ledger at 0.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import { Keypair, LAMPORTS_PER_SOL, PublicKey, SystemProgram, type TransactionInstruction } from "@solana/web3.js";
import { createAssociatedTokenAccountIdempotentInstruction, createTransferCheckedInstruction, getAssociatedTokenAddressSync } from "@solana/spl-token";
import { encodeBase58 } from "ethers";
import { Op } from "sequelize";
import { loadConfig } from "../lib/config";
import { availableServices, createNode, loadServiceSchema } from "../lib/node";
import { appOf } from "../lib/app";
import { networkIdFor, tokenIdFor } from "../lib/networks/catalogue";
import type { Sweep } from "../models/sweep.model";
import { startSolanaNode, type SolanaNode } from "../test/helpers/solana-node";
import { call, createRunDatabase, dropRunState, envInt, expectStatus, inProcessNodeEnv, makeLog, prepareRun, preflight, runMain, settingsOrExit, setUpMerchant, sleep } from "./common";

const SETTINGS = settingsOrExit("sweep-solana", () => ({
	sol: envInt("BENCH_SWEEP_SOL", 30, 1),
	usdc: envInt("BENCH_SWEEP_USDC", 30, 1),
	timeoutS: envInt("BENCH_SWEEP_TIMEOUT_S", 180, 10),
	mysqlUrl: (process.env.BENCH_MYSQL_URL || "mysql://root@127.0.0.1:3306").replace(/\/+$/, ""),
	redisUrl: process.env.BENCH_REDIS_URL || "redis://127.0.0.1:6379/0",
}));
const log = makeLog("sweep-solana");
const NET = networkIdFor("solana-devnet");
const SOL = tokenIdFor("solana-devnet", "SOL");
const USDC = tokenIdFor("solana-devnet", "USDC");
const DEVNET_USDC_MINT = new PublicKey("4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU");
const SOL_AMOUNT = { decimal: "0.01", lamports: 10_000_000n };
const USDC_AMOUNT = { decimal: "1", units: 1_000_000n };
/** sweeper-solana is started by each round once its deposits are credited. */
const SERVICES = ["api", "auth", "mail", "organizations", "keys", "networks", "pricing", "intents", "links", "transactions", "withdrawals", "watcher-solana"];

async function main(): Promise<void> {
	preflight(SETTINGS.mysqlUrl, SETTINGS.redisUrl, []);
	const run = prepareRun(SETTINGS.mysqlUrl, "cpg-bench-sweep-solana-");
	let sol: SolanaNode | null = null;
	let broker: Awaited<ReturnType<typeof createNode>> | null = null;
	let dbCreated = false;
	try {
		sol = await startSolanaNode({ finalizeDistance: 2 });
		const payer = Keypair.generate();
		const sweeper = Keypair.generate();
		await sol.airdrop(payer.publicKey, 1_000n * BigInt(LAMPORTS_PER_SOL));
		await sol.airdrop(sweeper.publicKey, 10n * BigInt(LAMPORTS_PER_SOL));
		await sol.createMint(6, { address: DEVNET_USDC_MINT });
		await sol.mintTo(DEVNET_USDC_MINT, payer.publicKey, 2n * BigInt(SETTINGS.usdc) * USDC_AMOUNT.units);
		await sol.settle();
		await sol.autoProduce(50);

		await createRunDatabase(SETTINGS.mysqlUrl, run.dbName);
		dbCreated = true;
		const env = inProcessNodeEnv(run, SETTINGS.redisUrl, {
			RPC_URL_SOLANA_DEVNET: sol.url,
			WATCHER_POLL_MS: "100",
			SWEEP_POLL_MS: "200",
			// A partial token batch goes at once (by default it waits up to 24 h for a full one).
			SWEEP_MAX_AGE_MINUTES: "0",
			SWEEPER_PRIVATE_KEY_SOLANA: encodeBase58(sweeper.secretKey),
			RATE_LIMIT_SCALE: "1000",
		});
		broker = await createNode({ config: loadConfig(env), services: SERVICES, env, nodeID: `bench-sweep-solana-${crypto.randomBytes(3).toString("hex")}` });
		await broker.start();
		const app = appOf(broker);
		const api = broker.getLocalService("api") as unknown as { server: { address(): { port: number } } };
		const baseUrl = `http://127.0.0.1:${api.server.address().port}/api/v1`;
		const merchant = await setUpMerchant(baseUrl, run.dataDir);
		log(`Solana node ${sol.url}; gateway ${baseUrl}; ${SETTINGS.sol} SOL and ${SETTINGS.usdc} USDC checkouts`);

		// ---- checkouts, paid (SOL: 20 transfers a transaction; USDC: 8, each creating the deposit's token account)
		const open = async (tokenId: string, currency: string, amount: string) => {
			const intent = await call(baseUrl, "POST", "/payment_intents", { basic: merchant.basic, body: { amount, currency, tokenId, networkId: NET, payment_method_types: ["crypto"], return_url: "https://shop.example.com/return" } });
			expectStatus("intent", intent, 200);
			const slug = String(intent.body.paymentLink.link).split("/pay/")[1];
			const tx = await call(baseUrl, "POST", `/payments/links/${slug}/transactions`, { body: {} });
			expectStatus("checkout", tx, 201);
			return { id: tx.body.id as string, address: tx.body.depositAddress as string };
		};
		const ata = (owner: string | PublicKey) => getAssociatedTokenAddressSync(DEVNET_USDC_MINT, new PublicKey(owner), true);
		const sendAll = async (list: TransactionInstruction[][], per: number) => {
			for (let i = 0; i < list.length; i += per) await sol!.send(list.slice(i, i + per).flat(), [payer]);
		};
		const deadline = Date.now() + SETTINGS.timeoutS * 1000;
		const destination = Keypair.generate().publicKey.toBase58();
		let paidLamports = 0n;
		let paidUnits = 0n;

		/**
		 * One round: `solCount` SOL and `usdcCount` USDC checkouts opened and paid, credited at
		 * finalized with the sweeper stopped, then the sweeper started (the first round saves the
		 * withdrawal address first): its first step sees every deposit. Answers the round's sweeps,
		 * the sweeper wallet's change and the wall time to the last sweep finalized.
		 */
		const round = async (solCount: number, usdcCount: number, first: boolean) => {
			const solDeposits = [];
			for (let i = 0; i < solCount; i++) solDeposits.push(await open(SOL, "sol", SOL_AMOUNT.decimal));
			const usdcDeposits = [];
			for (let i = 0; i < usdcCount; i++) usdcDeposits.push(await open(USDC, "usdc", USDC_AMOUNT.decimal));
			await sendAll(solDeposits.map(d => [SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: new PublicKey(d.address), lamports: SOL_AMOUNT.lamports })]), 20);
			await sendAll(usdcDeposits.map(d => [createAssociatedTokenAccountIdempotentInstruction(payer.publicKey, ata(d.address), new PublicKey(d.address), DEVNET_USDC_MINT), createTransferCheckedInstruction(ata(payer.publicKey), DEVNET_USDC_MINT, ata(d.address), payer.publicKey, USDC_AMOUNT.units, 6)]), 8);
			paidLamports += BigInt(solCount) * SOL_AMOUNT.lamports;
			paidUnits += BigInt(usdcCount) * USDC_AMOUNT.units;
			const ids = [...solDeposits, ...usdcDeposits].map(d => d.id);
			while ((await app.models.Transaction.count({ where: { id: { [Op.in]: ids }, status: "completed" } })) < ids.length) {
				if (Date.now() > deadline) throw new Error("the checkouts were not all credited in time");
				await sleep(200);
			}
			log(`${ids.length} checkouts credited at finalized`);
			const sweeperBefore = await sol!.balance(sweeper.publicKey, "finalized");
			const t0 = Date.now();
			if (first) expectStatus("withdrawal settings", await call(baseUrl, "PUT", "/withdrawals/settings", { token: merchant.token, body: { addresses: { solana: destination } } }), 200);
			await broker!.createService(loadServiceSchema(availableServices()["sweeper-solana"]));
			const addresses = [...solDeposits, ...usdcDeposits].map(d => d.address);
			let sweepIds: string[] = [];
			for (;;) {
				const items = await app.models.SweepItem.findAll({ where: { depositAddress: { [Op.in]: addresses } }, attributes: ["sweepId", "depositAddress"] });
				sweepIds = [...new Set(items.map(i => i.sweepId))];
				const confirmed = new Set((await app.models.Sweep.findAll({ where: { id: { [Op.in]: sweepIds }, status: "confirmed" }, attributes: ["id"] })).map(x => x.id));
				if (new Set(items.filter(i => confirmed.has(i.sweepId)).map(i => i.depositAddress)).size === addresses.length) break;
				if (Date.now() > deadline) {
					const all = await app.models.Sweep.findAll({ where: { networkId: NET } });
					throw new Error(`the deposits were not all swept in time: ${items.length} in sweeps; sweeps ${JSON.stringify(all.map(x => [x.kind, x.status, x.reason]))}`);
				}
				await sleep(100);
			}
			const wallMs = Date.now() - t0;
			// Stopped again: the next round's deposits are all credited before it looks.
			await broker!.destroyService(broker!.getLocalService("sweeper-solana")!);
			await sleep(500); // the sweeper wallet's balance at finalized
			for (const d of solDeposits) if ((await sol!.balance(new PublicKey(d.address), "finalized")) !== 0n) throw new Error(`${d.address} still holds lamports`);
			for (const d of usdcDeposits) if ((await sol!.tokenBalance(ata(d.address), "finalized")) !== null) throw new Error(`${d.address}'s token account is still open`);
			const sweeps = await app.models.Sweep.findAll({ where: { id: { [Op.in]: sweepIds } } });
			return { sweeps, sweeperNet: (await sol!.balance(sweeper.publicKey, "finalized")) - sweeperBefore, wallMs };
		};
		const stats = async (sweeps: Sweep[], kind: "sol" | "spl") => {
			const mine = sweeps.filter(x => x.kind === kind && x.status === "confirmed");
			const deposits = await app.models.SweepItem.count({ where: { sweepId: { [Op.in]: mine.map(x => x.id) } } });
			const fees = mine.reduce((sum, x) => sum + BigInt(x.feePaid!), 0n);
			return { txs: mine.length, deposits, fees, feePerDeposit: Number(fees) / deposits, perTx: deposits / mine.length };
		};

		const r1 = await round(SETTINGS.sol, SETTINGS.usdc, true);
		const s1 = await stats(r1.sweeps, "sol");
		const s2 = await stats(r1.sweeps, "spl");
		// Round 2: the destination's token account exists now.
		const r2 = await round(0, SETTINGS.usdc, false);
		const s3 = await stats(r2.sweeps, "spl");
		const failed = [...r1.sweeps, ...r2.sweeps].filter(x => x.status !== "confirmed").length;

		const gotSol = await sol.balance(new PublicKey(destination), "finalized");
		if (gotSol !== paidLamports - s1.fees) throw new Error(`the destination holds ${gotSol} lamports, expected ${paidLamports - s1.fees}`);
		const gotUsdc = await sol.tokenBalance(ata(destination), "finalized");
		if (gotUsdc !== paidUnits) throw new Error(`the destination holds ${gotUsdc} USDC units, expected ${paidUnits}`);
		for (const tokenId of [SOL, USDC]) {
			const b = (await broker.call("withdrawals.balance", { organizationId: merchant.organizationId, networkId: NET, tokenId })) as { balance: string };
			if (Number(b.balance) !== 0) throw new Error(`the ledger holds ${b.balance} of ${tokenId} after the sweeps`);
		}
		const perDeposit = (net: bigint, n: number) => `${net >= 0n ? "+" : ""}${(Number(net) / n).toFixed(0)}`;
		console.log(
			`sweep-solana: SOL ${s1.feePerDeposit.toFixed(0)} lamports fee/deposit (paid by the deposits), ${s1.perTx.toFixed(1)} deposits/tx; ` +
				`USDC ${s2.feePerDeposit.toFixed(0)} lamports fee/deposit, ${s2.perTx.toFixed(1)} deposits/tx creating the destination's account, ` +
				`${s3.feePerDeposit.toFixed(0)} lamports, ${s3.perTx.toFixed(1)} deposits/tx once it exists (fees paid by the sweeper wallet)`,
		);
		console.log(
			`  round 1: ${s1.deposits} SOL deposits in ${s1.txs} transactions (${s1.fees} lamports in fees), ${s2.deposits} USDC deposits in ${s2.txs} (${s2.fees} lamports), ` +
				`sweeper wallet ${perDeposit(r1.sweeperNet, s2.deposits)} lamports a USDC deposit with rent (the destination account's rent paid, ${s2.deposits} token accounts' rent recovered), ` +
				`${(r1.wallMs / 1000).toFixed(1)} s from the sweeper's start to the last sweep finalized`,
		);
		console.log(
			`  round 2: ${s3.deposits} USDC deposits in ${s3.txs} transactions (${s3.fees} lamports), sweeper wallet ${perDeposit(r2.sweeperNet, s3.deposits)} lamports a deposit with rent, ` +
				`${(r2.wallMs / 1000).toFixed(1)} s; ${failed} sweeps not confirmed; deposits at 0, token accounts closed, destination and ledger exact`,
		);
	} finally {
		if (broker) await broker.stop().catch(() => undefined);
		await sol?.autoProduce(null).catch(() => undefined);
		await sol?.stop().catch(() => undefined);
		await dropRunState(SETTINGS.mysqlUrl, dbCreated ? run.dbName : null, SETTINGS.redisUrl, run.redisPrefix);
		fs.rmSync(run.workDir, { recursive: true, force: true });
	}
}

runMain("sweep-solana", main);
