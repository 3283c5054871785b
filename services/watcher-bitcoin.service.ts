/**
 * The UTXO chain watcher (docs/watchers.md "UTXO chains"): follows every `bitcoin`
 * chain-type network (Bitcoin and Litecoin) with an RPC URL configured (RPC_URL_<SLUG>, a Bitcoin
 * Core / Litecoin Core JSON-RPC endpoint, credentials in the URL allowed and never logged), one
 * writer per network, and reports outputs paid to deposit addresses to the transactions service.
 * Everything chain-independent is in the watcher mixin; this service only says how to read a
 * UTXO chain (lib/chains/utxo/source.ts) with the network's address parameters.
 */
import type { ServiceSchema } from "moleculer";
import { bitcoinjsNetwork } from "../lib/chains/utxo/codec";
import { chainParamsFor } from "../lib/chains/params";
import { createUtxoSource } from "../lib/chains/utxo/source";
import { WatcherMixin } from "../mixins/watcher.mixin";

const WatcherBitcoinService: ServiceSchema = {
	name: "watcher-bitcoin",
	mixins: [
		WatcherMixin({
			chainType: "bitcoin",
			createSource: (network, rpcUrl, config, logger) =>
				createUtxoSource({ networkId: network.id, rpcUrl, network: bitcoinjsNetwork(chainParamsFor(network)), timeoutMs: config.rpcTimeoutMs, logger }),
		}),
	],
};

export default WatcherBitcoinService;
