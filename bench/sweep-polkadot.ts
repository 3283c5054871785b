/**
 * `npm run bench` case `sweep-polkadot` (docs/benchmarks.md): what sweeping a Polkadot Asset Hub
 * deposit costs, measured through the Polkadot sweep runner itself (lib/chains/polkadot/sweep-runner.ts,
 * what services/sweeper-polkadot.service.ts runs per network, with the configuration's default
 * settings) on the Polkadot test node (test/helpers/polkadot-node.ts: chopsticks executing the real
 * Asset Hub runtime; every extrinsic, the deposits' ed25519 signatures included, is validated and
 * executed by it). Sweep records and the lease on a fresh MySQL database; the services' side
 * (sweepable checkouts, destination, ledger) is a small in-memory stand-in here, as in
 * test/lib/chains/polkadot/sweep-runner.test.ts. Everything on 127.0.0.1.
 *
 * - BENCH_SWEEP_POLKADOT_NATIVE (default 20) deposits paid 1 native unit each and
 *   BENCH_SWEEP_POLKADOT_USDT (default 20) deposits paid 1 USDT (asset 1984), one batchAll block;
 * - the runner steps, a block built and finalized after each step, until every deposit's sweep is
 *   confirmed: native deposits `transferAll` themselves (the deposit pays its fee); USDT deposits
 *   get one batched native top-up from the sweeper wallet, then each sends its USDT;
 * - fee per deposit from the sweeps' records (`feePaid`: the chain's TransactionFeePaid events of
 *   each extrinsic), cross-checked against balances: native, what the deposits held less what the
 *   merchant received; USDT, the sweeper wallet's spend per deposit (the fees plus the native the
 *   top-up leaves at each deposit: at least the existential deposit).
 * The runtime is Kusama Asset Hub's (12 decimals), so amounts are its planck and its fee schedule,
 * not Polkadot Asset Hub's live DOT fees (docs/benchmarks.md).
 */
import crypto from "node:crypto";
import { Op } from "sequelize";
import { loadConfig } from "../lib/config";
import { createNode } from "../lib/node";
import { appOf } from "../lib/app";
import { polkadotCodec } from "../lib/chains/polkadot/codec";
import { PolkadotSweepRunner } from "../lib/chains/polkadot/sweep-runner";
import { polkadotSweeperPair } from "../lib/chains/polkadot/sweep";
import { inTransaction } from "../lib/db";
import { runnerSettings } from "../lib/sweeps/config";
import type { SweepableCheckout, SweeperPorts, SweepNetwork } from "../lib/sweeps/ports";
import { assertFence } from "../lib/sweeps/store";
import { acquireLease, ensureCursor } from "../lib/watchers/store";
import { startPolkadotNode, USDT, type PolkadotNode } from "../test/helpers/polkadot-node";
import { createRunDatabase, envInt, inProcessNodeEnv, makeLog, runMain, settingsOrExit, watcherBenchRun } from "./common";

const SETTINGS = settingsOrExit("sweep-polkadot", () => ({
	native: envInt("BENCH_SWEEP_POLKADOT_NATIVE", 20, 1),
	usdt: envInt("BENCH_SWEEP_POLKADOT_USDT", 20, 1),
	maxSteps: envInt("BENCH_SWEEP_POLKADOT_MAX_STEPS", 40, 5),
	mysqlUrl: (process.env.BENCH_MYSQL_URL || "mysql://root@127.0.0.1:3306").replace(/\/+$/, ""),
	redisUrl: process.env.BENCH_REDIS_URL || "redis://127.0.0.1:6379/0",
}));
const log = makeLog("sweep-polkadot");
const NET = "00000000-0000-4000-8000-00000be0d071";
const NATIVE_ID = "00000000-0000-4000-8000-00000be0d072";
const USDT_ID = "00000000-0000-4000-8000-00000be0d073";
const ORG = "00000000-0000-4000-8000-00000be0d074";
const USDT_UNITS = 1_000_000n;

async function main(): Promise<void> {
	const { run, state, cleanup } = watcherBenchRun(SETTINGS.mysqlUrl, SETTINGS.redisUrl, "cpg-bench-sweep-polkadot-");
	try {
		const chain: PolkadotNode = await startPolkadotNode();
		state.chainNode = chain;
		const unit = 10n ** BigInt(chain.decimals);
		await createRunDatabase(SETTINGS.mysqlUrl, run.dbName);
		state.dbCreated = true;
		const env = inProcessNodeEnv(run, SETTINGS.redisUrl, {});
		const config = loadConfig(env);
		const broker = (state.broker = await createNode({ config, services: [], env }));
		await broker.start();
		const { sequelize, models } = appOf(broker);

		// ---- chain: a payer, the sweeper wallet, the merchant's (existing) account
		const payer = chain.pair("//SweepBenchPayer");
		const merchant = chain.pair("//SweepBenchMerchant");
		const sweeper = await polkadotSweeperPair(`0x${crypto.randomBytes(32).toString("hex")}`, chain.ss58Format);
		await chain.fund(payer.address, 1_000_000n * unit);
		await chain.fund(sweeper.address, 1_000n * unit);
		await chain.fund(merchant.address, unit);
		// fund() writes balances by storage: the issuance must cover them (else ArithmeticError::Underflow).
		await chain.rpc("dev_setStorage", [{ Balances: { TotalIssuance: (10_000_000n * unit).toString() } }]);
		await chain.mintAsset(USDT.id, payer.address, BigInt(SETTINGS.usdt) * USDT_UNITS);

		// ---- deposits: derived by the codec from a fresh seed, paid in one block
		const seed = new Uint8Array(crypto.randomBytes(64));
		const params = { isTestnet: true, ss58Prefix: chain.ss58Format };
		const checkouts: SweepableCheckout[] = [];
		const deposits: Array<{ address: string; usdt: boolean }> = [];
		for (let i = 0; i < SETTINGS.native + SETTINGS.usdt; i++) {
			const { address } = await polkadotCodec.deriveAddress(seed, params, i);
			const usdt = i >= SETTINGS.native;
			deposits.push({ address, usdt });
			checkouts.push({ transactionId: crypto.randomUUID(), organizationId: ORG, mode: "sandbox", depositAddress: address, derivationIndex: i, tokenId: usdt ? USDT_ID : NATIVE_ID, completedAt: new Date(Date.now() - 60_000).toISOString() });
		}
		const api = chain.api;
		await api.tx.utility
			.batchAll(deposits.map(d => (d.usdt ? api.tx.assets.transfer(USDT.id, d.address, USDT_UNITS) : api.tx.balances.transferKeepAlive(d.address, unit))))
			.signAndSend(payer);
		await chain.newBlock();

		const at = async () => api.at(chain.finalized().hash);
		const free = async (address: string) => BigInt(((await (await at()).query.system.account(address)) as unknown as { data: { free: { toString(): string } } }).data.free.toString());
		const assetOf = async (address: string) => {
			const a = (await (await at()).query.assets.account(USDT.id, address)) as unknown as { isSome: boolean; unwrap(): { balance: { toString(): string } } };
			return a.isSome ? BigInt(a.unwrap().balance.toString()) : 0n;
		};
		log(`${deposits.length} deposits paid in block #${(await chain.head()).number}`);
		for (const d of deposits) if ((d.usdt ? await assetOf(d.address) : await free(d.address)) !== (d.usdt ? USDT_UNITS : unit)) throw new Error(`deposit ${d.address} was not paid`);

		// ---- the runner, as the sweeper service builds it (default settings), on an in-memory services side
		await ensureCursor(models, NET, "sweep", new Date());
		const fence = (await acquireLease(models, NET, "bench:sweeper-polkadot", 600_000, Date.now()))!;
		const swept = new Set<string>();
		const ports: SweeperPorts = {
			sweepable: async () => checkouts.filter(c => !swept.has(c.transactionId)).map(c => ({ ...c })),
			destination: async () => merchant.address,
			destinationOf: async () => ({ address: merchant.address, source: "settings" as const }),
			ownAddressCheckouts: async () => [],
			route: async () => ({ via: "direct", reason: "strategy" }) as never,
			record: async p => {
				await inTransaction(sequelize, t => assertFence(models, p.fence, t));
			},
			pendingRequests: async () => [],
			completeRequest: async () => undefined,
			failRequest: async () => undefined,
		};
		const network: SweepNetwork = {
			id: NET,
			slug: "polkadot-bench",
			chainId: 0,
			requiredConfirmations: 1,
			eip7702: false,
			tokens: [
				{ tokenId: NATIVE_ID, symbol: chain.symbol, contractAddress: "", decimals: chain.decimals },
				{ tokenId: USDT_ID, symbol: "USDT", contractAddress: String(USDT.id), decimals: 6 },
			],
		};
		const quiet = { info: () => undefined, warn: (...a: unknown[]) => log(`runner warn: ${a.join(" ")}`), error: (...a: unknown[]) => log(`runner error: ${a.join(" ")}`) };
		const runner = new PolkadotSweepRunner({
			sequelize,
			models,
			api: async () => api,
			network,
			ss58Format: chain.ss58Format,
			sweeperKey: async () => sweeper,
			depositKey: index => polkadotCodec.derivePrivateKey(seed, params, index),
			ports,
			// maxAgeMs 0: the partial batch goes at once (the bench has no later payments to wait for).
			settings: { ...runnerSettings(config.sweeper), maxAgeMs: 0, eraPeriod: config.sweeper.polkadotEraPeriod },
			now: () => new Date(),
			logger: quiet,
		});

		const merchantBefore = await free(merchant.address);
		const sweeperBefore = await free(sweeper.address);
		const started = performance.now();
		let steps = 0;
		const confirmed = () => models.Sweep.findAll({ where: { networkId: NET, status: "confirmed" } });
		for (;;) {
			if (steps >= SETTINGS.maxSteps) throw new Error(`not every deposit swept after ${steps} steps`);
			await runner.step(fence);
			steps++;
			await chain.newBlock();
			const rows = await confirmed();
			const done = new Set(rows.filter(r => r.kind !== "topup").map(r => r.fromAddress));
			for (const c of checkouts) if (done.has(c.depositAddress)) swept.add(c.transactionId);
			log(`step ${steps}: ${rows.length} sweeps confirmed, ${swept.size} of ${checkouts.length} deposits swept`);
			if (swept.size === checkouts.length) break;
		}
		const ms = performance.now() - started;
		const rows = await confirmed();
		const failed = await models.Sweep.count({ where: { networkId: NET, status: { [Op.ne]: "confirmed" } } });

		// ---- balances read back: every deposit emptied of what it was paid
		let nativeHeld = 0n;
		let leftAtUsdtDeposits = 0n;
		for (const d of deposits) {
			if (d.usdt) {
				if ((await assetOf(d.address)) !== 0n) throw new Error(`${d.address} still holds USDT`);
				leftAtUsdtDeposits += await free(d.address);
			} else {
				nativeHeld += await free(d.address);
			}
		}
		if (nativeHeld !== 0n) throw new Error(`native deposits still hold ${nativeHeld} planck`);
		if ((await assetOf(merchant.address)) !== BigInt(SETTINGS.usdt) * USDT_UNITS) throw new Error("the merchant did not receive every USDT deposit");
		const received = (await free(merchant.address)) - merchantBefore;
		const sweeperSpent = sweeperBefore - (await free(sweeper.address));

		const fee = (kind: string) => rows.filter(r => r.kind === kind).reduce((n, r) => n + BigInt(r.feePaid ?? "0"), 0n);
		const nNative = BigInt(SETTINGS.native);
		const nUsdt = BigInt(SETTINGS.usdt);
		const nativeFee = fee("native");
		const balanceFee = nNative * unit - received;
		const topups = rows.filter(r => r.kind === "topup").length;
		const usdtFees = fee("token") + fee("topup");
		const show = (planck: bigint) => `${planck} planck (${(Number(planck) / Number(unit)).toFixed(6)} ${chain.symbol})`;
		console.log(
			`sweep-polkadot: native ${show(nativeFee / nNative)} fee per swept deposit (TransactionFeePaid; balances: ${show(balanceFee / nNative)}, paid by the deposit); USDT 1984 ${show(usdtFees / nUsdt)} fees per swept deposit (its transfer + its share of ${topups} top-up extrinsic(s)), the sweeper wallet spent ${show(sweeperSpent / nUsdt)} per deposit (fees + ${show(leftAtUsdtDeposits / nUsdt)} native left at each deposit)`,
		);
		console.log(
			`  ${SETTINGS.native} native (1 ${chain.symbol} each) + ${SETTINGS.usdt} USDT (1 USDT each) deposits on chopsticks (Kusama Asset Hub runtime, ${chain.decimals} decimals), swept by the Polkadot sweep runner (default settings, era ${config.sweeper.polkadotEraPeriod}) in ${steps} steps, ${(ms / 1000).toFixed(1)} s with a block built after each; ${rows.length} sweeps confirmed, ${failed} not; every deposit read back at 0, the merchant's USDT exact`,
		);
	} finally {
		await cleanup();
	}
}

runMain("sweep-polkadot", main);
