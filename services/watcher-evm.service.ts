/**
 * The EVM chain watcher (docs/watchers.md): follows every EVM network (on or off) with an RPC URL
 * configured (RPC_URL_<SLUG>), one writer per network, and reports transfers to deposit
 * addresses to the transactions service. Everything chain-independent is in the watcher mixin;
 * this service only says how to read an EVM chain (lib/chains/evm/source.ts).
 */
import type { ServiceSchema } from "moleculer";
import { createEvmSource } from "../lib/chains/evm/source";
import { WatcherMixin } from "../mixins/watcher.mixin";

const WatcherEvmService: ServiceSchema = {
	name: "watcher-evm",
	mixins: [
		WatcherMixin({
			chainType: "evm",
			createSource: (network, rpcUrl, config, logger) =>
				createEvmSource({ networkId: network.id, rpcUrl, chainId: network.chainId, timeoutMs: config.rpcTimeoutMs, maxRange: config.maxRange, logger }),
		}),
	],
};

export default WatcherEvmService;
