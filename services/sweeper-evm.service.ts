/**
 * The automatic EVM sweeper (docs/withdrawals.md "The sweeper service"): moves settled payments
 * from their deposit addresses to the merchants' withdrawal addresses on every EVM network that
 * has an RPC URL (RPC_URL_<SLUG>), pays withdrawal requests, and routes strategy 2 through the
 * bridge provider. The loop and its lease are the sweeper mixin's; the safety of each send is in
 * lib/sweeps (nonces under a row lock, bytes recorded before broadcast). Runs in the watcher node
 * group: it holds the RPC endpoints and derives deposit keys from the seed.
 */
import type { Service, ServiceSchema } from "moleculer";
import { chainParamsFor, codecFor } from "../lib/chains";
import { createEvmProvider } from "../lib/chains/evm/rpc";
import { hdSeed } from "../lib/payments/store";
import { eip7702For, runnerSettings, sweepContractsFor } from "../lib/sweeps/config";
import { SweepRunner } from "../lib/chains/evm/sweep-runner";
import type { SweeperPorts } from "../lib/sweeps/ports";
import { createHttpBridgeProvider } from "../lib/withdrawals/bridge-provider";
import { liveSweepNetwork, SweeperMixin } from "../mixins/sweeper.mixin";

/** The withdrawals and transactions actions a sweeper uses. */
export function sweeperPorts(service: Service): SweeperPorts {
	const call = <T>(action: string, params?: object) => service.broker.call(action, params) as Promise<T>;
	return {
		sweepable: p => call("transactions.sweepable", p),
		destination: async p => (await call<{ address: string } | null>("withdrawals.destination", p))?.address ?? null,
		destinationOf: p => call("withdrawals.destination", p),
		ownAddressCheckouts: p => call("withdrawals.ownAddressCheckouts", p),
		record: p => call("withdrawals.record", p),
		route: p => call("withdrawals.route", p),
		pendingRequests: p => call("withdrawals.pendingRequests", p),
		completeRequest: p => call("withdrawals.completeRequest", p),
		failRequest: p => call("withdrawals.failRequest", p),
	};
}

const SweeperEvmService: ServiceSchema = {
	name: "sweeper-evm",
	mixins: [
		SweeperMixin({
			// The sweeper wallet pays token sweeps' fees: production never runs without it.
			productionKey: { variable: "SWEEPER_PRIVATE_KEY", present: app => Boolean(app.config.sweeper.privateKey) },
			chainType: "evm",
			createRunner(service, app, network, rpcUrl, hooks) {
				const { config } = app;
				// Credentials in the URL become a header; errors leave it scrubbed of the URL's secrets (lib/chains/evm/rpc.ts).
				// A short per-call timeout (ethers waits 5 minutes by default): a stalled node fails the call,
				// it does not hold the step (and its lease) for minutes.
				const provider = createEvmProvider(rpcUrl, { chainId: network.chainId, timeoutMs: config.sweeper.rpcTimeoutMs });
				const params = chainParamsFor(network);
				const runner = new SweepRunner({
					sequelize: app.sequelize,
					models: app.models,
					provider,
					network: liveSweepNetwork(network, eip7702For(config.sweeper, network.slug)),
					contracts: sweepContractsFor(config.sweeper, network.slug),
					sweeperKey: config.sweeper.privateKey,
					bridge: config.withdrawals.bridge.url ? createHttpBridgeProvider({ baseUrl: config.withdrawals.bridge.url, apiKey: config.withdrawals.bridge.apiKey ?? undefined, timeoutMs: config.withdrawals.bridge.timeoutMs }) : null,
					depositKey: index => codecFor("evm").derivePrivateKey(hdSeed(app).seed, params, index),
					ports: sweeperPorts(service),
					settings: { ...runnerSettings(config.sweeper), stuckMs: config.sweeper.stuckMs },
					now: () => app.clock.now(),
					logger: service.logger,
					...hooks,
				});
				return { step: (fence, lost) => runner.step(fence, lost), close: () => provider.destroy() };
			},
		}),
	],
};

export default SweeperEvmService;
