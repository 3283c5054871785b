/**
 * The UTXO sweeper (docs/withdrawals.md "UTXO sweeper"): on every Bitcoin-family network
 * with an RPC URL (RPC_URL_<SLUG>, a Bitcoin Core / Litecoin Core JSON-RPC endpoint), consolidates
 * each merchant's settled deposit outputs into one output at their withdrawal address (one PSBT,
 * no change, RBF). Deposit keys are derived on demand from the HD seed. The loop and its lease are
 * the sweeper mixin's.
 */
import type { ServiceSchema } from "moleculer";
import { bitcoinjsNetwork, bitcoinNetworkName } from "../lib/chains/utxo/codec";
import { chainParamsFor, codecFor } from "../lib/chains";
import { DEFAULT_DUST_RELAY_FEE_SAT_PER_KVB, LITECOIN_DUST_RELAY_FEE_SAT_PER_KVB } from "../lib/chains/utxo/sweep";
import { withdrawalKeyFor } from "../lib/chains/withdrawal-keys";
import { hdSeed } from "../lib/payments/store";
import { createUtxoRpc } from "../lib/chains/utxo/rpc";
import { UtxoSweepRunner } from "../lib/chains/utxo/sweep-runner";
import { liveSweepNetwork, SweeperMixin } from "../mixins/sweeper.mixin";
import { sweeperPorts } from "./sweeper-evm.service";

const SweeperBitcoinService: ServiceSchema = {
	name: "sweeper-bitcoin",
	mixins: [
		SweeperMixin({
			chainType: "bitcoin",
			createRunner(service, app, network, rpcUrl, hooks) {
				const params = chainParamsFor(network);
				const rpc = createUtxoRpc(rpcUrl, { timeoutMs: app.config.sweeper.rpcTimeoutMs });
				const ports = sweeperPorts(service);
				const runner = new UtxoSweepRunner({
					sequelize: app.sequelize,
					models: app.models,
					rpc,
					network: liveSweepNetwork(network, false),
					btcNetwork: bitcoinjsNetwork(params),
					withdrawalKey: withdrawalKeyFor(network),
					dustRelayFeeSatPerKvB: bitcoinNetworkName(params).startsWith("litecoin") ? LITECOIN_DUST_RELAY_FEE_SAT_PER_KVB : DEFAULT_DUST_RELAY_FEE_SAT_PER_KVB,
					feePolicy: { floorSatPerVb: app.config.sweeper.utxoFeeFloorSatPerVb, capSatPerVb: app.config.sweeper.utxoFeeCapSatPerVb },
					stuckMs: app.config.sweeper.stuckMs,
					proofPolls: app.config.sweeper.proofPolls,
					proofMs: app.config.sweeper.proofMs,
					depositKey: index => codecFor("bitcoin").derivePrivateKey(hdSeed(app).seed, params, index),
					ports: { ...ports, creditedOutputs: p => service.broker.call("transactions.creditedOutputs", p) },
					now: () => app.clock.now(),
					logger: service.logger,
					...hooks,
				});
				return { step: (fence, lost) => runner.step(fence, lost) };
			},
		}),
	],
};

export default SweeperBitcoinService;
