/**
 * The Polkadot sweeper (docs/withdrawals.md "Polkadot sweeps"): on every `polkadot` network with
 * an RPC URL (RPC_URL_<SLUG>, a node's WebSocket RPC), sweeps settled native deposits whole
 * (`balances.transferAll`, the deposit pays the fee and is reaped), asset deposits (USDT 1984,
 * USDC 1337) after a batched native top-up from the sweeper wallet (SWEEPER_PRIVATE_KEY_POLKADOT,
 * sr25519), and pays withdrawal requests exactly. The loop and its lease are the sweeper mixin's;
 * each extrinsic's safety (bytes, nonce and mortal era recorded before the first submission,
 * signed again only when proven dead at the finalized head) is lib/chains/polkadot/sweep-runner.ts's.
 */
import type { ServiceSchema } from "moleculer";
import { ApiPromise, WsProvider } from "@polkadot/api";
import type { KeyringPair } from "@polkadot/keyring/types";
import { chainParamsFor, codecFor } from "../lib/chains";
import { PolkadotSweepRunner } from "../lib/chains/polkadot/sweep-runner";
import { polkadotSweeperPair, sameAccount } from "../lib/chains/polkadot/sweep";
import { polkadotSs58Of } from "../lib/chains/polkadot/codec";
import { hdSeed } from "../lib/payments/store";
import { runnerSettings } from "../lib/sweeps/config";
import { liveSweepNetwork, SweeperMixin } from "../mixins/sweeper.mixin";
import { sweeperPorts } from "./sweeper-evm.service";

const SweeperPolkadotService: ServiceSchema = {
	name: "sweeper-polkadot",
	mixins: [
		SweeperMixin({
			// The sweeper wallet pays asset deposits' fees (their native top-up): production never runs without it.
			productionKey: { variable: "SWEEPER_PRIVATE_KEY_POLKADOT", present: app => Boolean(app.config.sweeper.polkadotPrivateKey) },
			chainType: "polkadot",
			// support.clearHold: one account in any SS58 prefix (a malformed address matches nothing).
			sameAddress: (a, b) => {
				try {
					return sameAccount(a, b);
				} catch {
					return false;
				}
			},
			createRunner(service, app, network, rpcUrl, hooks) {
				const { config } = app;
				const params = chainParamsFor(network);
				const ss58Format = polkadotSs58Of(params);
				const form = config.sweeper.polkadotPrivateKey;
				// The key is never logged; its account's address is (to fund it).
				const pair: Promise<KeyringPair> | null = form ? polkadotSweeperPair(form, ss58Format) : null;
				pair?.then(
					p => service.logger.info(`Sweeper: the Polkadot sweeper wallet (sr25519) on ${network.slug} is ${p.address}; fund it for asset top-ups`),
					err => service.logger.error(`Sweeper: ${(err as Error).message}`),
				);
				// One connection per network, opened on the first step (WsProvider reconnects by itself).
				let api: Promise<ApiPromise> | null = null;
				const connect = () => {
					api ??= ApiPromise.create({ provider: new WsProvider(rpcUrl, 2_500, {}, config.sweeper.rpcTimeoutMs), noInitWarn: true, throwOnConnect: true }).catch(err => {
						api = null;
						throw err;
					});
					return api;
				};
				const runner = new PolkadotSweepRunner({
					sequelize: app.sequelize,
					models: app.models,
					api: connect,
					network: liveSweepNetwork(network, false),
					ss58Format,
					sweeperKey: async () => (pair ? pair : null),
					depositKey: index => codecFor("polkadot").derivePrivateKey(hdSeed(app).seed, params, index),
					ports: sweeperPorts(service),
					settings: { ...runnerSettings(config.sweeper), eraPeriod: config.sweeper.polkadotEraPeriod },
					now: () => app.clock.now(),
					logger: service.logger,
					...hooks,
				});
				return {
					step: (fence, lost) => runner.step(fence, lost),
					close: () => void api?.then(a => a.disconnect()).catch(() => undefined),
				};
			},
		}),
	],
};

export default SweeperPolkadotService;
