/**
 * The Solana sweeper (docs/withdrawals.md "Solana sweeper"): on every `solana` network with an RPC
 * URL (RPC_URL_<SLUG>), moves settled SOL payments to the merchants' withdrawal addresses (the
 * deposits pay the fee and end at 0) and settled USDC / USDT payments (the sweeper wallet,
 * SWEEPER_PRIVATE_KEY_SOLANA, pays the fee and rent; the deposits' token accounts are closed, their
 * rent returns to it), and pays withdrawal requests exactly. The loop and its lease are the sweeper
 * mixin's; each send's safety (bytes and lastValidBlockHeight recorded before the first send,
 * replaced only when proven dead) is lib/chains/solana/sweep-runner.ts's. Deposit keys are derived
 * on demand from the HD seed.
 */
import type { ServiceSchema } from "moleculer";
import { Connection } from "@solana/web3.js";
import { chainParamsFor, codecFor } from "../lib/chains";
import { SolanaSweepRunner } from "../lib/chains/solana/sweep-runner";
import { hdSeed } from "../lib/payments/store";
import { runnerSettings, solanaKeyBytes } from "../lib/sweeps/config";
import { liveSweepNetwork, SweeperMixin } from "../mixins/sweeper.mixin";
import { sweeperPorts } from "./sweeper-evm.service";

const SweeperSolanaService: ServiceSchema = {
	name: "sweeper-solana",
	mixins: [
		SweeperMixin({
			// The sweeper wallet pays token sweeps' fees: production never runs without it.
			productionKey: { variable: "SWEEPER_PRIVATE_KEY_SOLANA", present: app => Boolean(app.config.sweeper.solanaPrivateKey) },
			chainType: "solana",
			createRunner(service, app, network, rpcUrl, hooks) {
				const { config } = app;
				const params = chainParamsFor(network);
				const timeoutMs = config.sweeper.rpcTimeoutMs;
				const connection = new Connection(rpcUrl, {
					commitment: "confirmed",
					// The next step tries again; web3.js's own back-off would hold a step (and its lease) for seconds.
					disableRetryOnRateLimit: true,
					fetch: (input, init) => fetch(input, { ...init, signal: AbortSignal.timeout(timeoutMs) }),
				});
				const runner = new SolanaSweepRunner({
					sequelize: app.sequelize,
					models: app.models,
					connection,
					network: liveSweepNetwork(network, false),
					sweeperKey: config.sweeper.solanaPrivateKey ? solanaKeyBytes(config.sweeper.solanaPrivateKey) : null,
					depositKey: index => codecFor("solana").derivePrivateKey(hdSeed(app).seed, params, index),
					ports: sweeperPorts(service),
					settings: runnerSettings(config.sweeper),
					now: () => app.clock.now(),
					logger: service.logger,
					...hooks,
				});
				return { step: (fence, lost) => runner.step(fence, lost) };
			},
		}),
	],
};

export default SweeperSolanaService;
