/**
 * The TON sweeper (docs/withdrawals.md "TON sweeps"): on every TON network with an API URL
 * (RPC_URL_<SLUG>, a toncenter v3 indexer; its key RPC_API_KEY_<SLUG>), sweeps settled TON
 * deposits whole to the merchants' addresses, jetton deposits after a batched top-up from the
 * sweeper wallet (SWEEPER_PRIVATE_KEY_TON, v5R1), and pays TON withdrawal requests exactly. The
 * loop and its lease are the sweeper mixin's; the safety of each message is in
 * lib/chains/ton/sweep-runner.ts over lib/sweeps (BoC recorded before it is sent, failed only when
 * proven dead). A deposit whose sweeps land and fail (a jetton transfer that bounced) is held:
 * paused with backoff, then blocked after SWEEP_MAX_FAILURES until `support.clearHold`.
 */
import type { ServiceSchema } from "moleculer";
import { chainParamsFor, codecFor } from "../lib/chains";
import { createTonApi } from "../lib/chains/ton/api";
import { sameTonAddress, tonSweeperKey, TonSweepRunner } from "../lib/chains/ton/sweep-runner";
import { MAX_V5R1_MESSAGES, walletAddress } from "../lib/chains/ton/sweep";
import { hdSeed } from "../lib/payments/store";
import { runnerSettings } from "../lib/sweeps/config";
import { rpcApiKeyFor } from "../lib/watchers/config";
import { liveSweepNetwork, SweeperMixin } from "../mixins/sweeper.mixin";
import { sweeperPorts } from "./sweeper-evm.service";

const SweeperTonService: ServiceSchema = {
	name: "sweeper-ton",
	mixins: [
		SweeperMixin({
			// The sweeper wallet pays token sweeps' fees: production never runs without it.
			productionKey: { variable: "SWEEPER_PRIVATE_KEY_TON", present: app => Boolean(app.config.sweeper.tonPrivateKey) },
			chainType: "ton",
			// Holds are kept by raw address; support may paste any form.
			sameAddress: sameTonAddress,
			createRunner(service, app, network, rpcUrl, hooks) {
				const { config } = app;
				const params = chainParamsFor(network);
				const form = config.sweeper.tonPrivateKey;
				// Derived once (a mnemonic takes a PBKDF2 round); the key is never logged, its wallet's address is (to fund it).
				const key: Promise<Uint8Array> | null = form ? tonSweeperKey(form) : null;
				key?.then(
					k => service.logger.info(`Sweeper: the TON sweeper wallet (v5R1) on ${network.slug} is ${walletAddress(k, "v5r1")}; fund it for jetton top-ups`),
					err => service.logger.error(`Sweeper: ${(err as Error).message}`),
				);
				const runner = new TonSweepRunner({
					sequelize: app.sequelize,
					models: app.models,
					api: createTonApi({ baseUrl: rpcUrl, apiKey: rpcApiKeyFor(config.watchers, network.slug), timeoutMs: config.sweeper.rpcTimeoutMs }),
					network: liveSweepNetwork(network, false),
					sweeperKey: async () => (key ? key : null),
					depositKey: index => codecFor("ton").derivePrivateKey(hdSeed(app).seed, params, index),
					ports: sweeperPorts(service),
					settings: { ...runnerSettings(config.sweeper), batchSize: Math.min(config.sweeper.batchSize, MAX_V5R1_MESSAGES), validForSec: config.sweeper.tonValidForSec },
					now: () => app.clock.now(),
					logger: service.logger,
					...hooks,
				});
				return { step: (fence, lost) => runner.step(fence, lost) };
			},
		}),
	],
};

export default SweeperTonService;
