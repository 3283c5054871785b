/**
 * The TON chain watcher (docs/watchers.md "TON"): follows every `ton` chain-type network with an
 * API URL configured (RPC_URL_<SLUG>: toncenter's v3 indexer API, toncenter.com or a self-hosted
 * ton-indexer; RPC_API_KEY_<SLUG>: its key, sent as X-API-Key and never logged), one writer per
 * network, and reports TON and jetton (USDT) payments to deposit wallets to the transactions
 * service, credited once committed by a masterchain block (at the catalogue's confirmations,
 * counted in masterchain blocks). Everything chain-independent is in the watcher mixin; this
 * service only says how to read TON (lib/chains/ton/source.ts).
 */
import type { ServiceSchema } from "moleculer";
import { createTonSource } from "../lib/chains/ton/source";
import { rpcApiKeyFor } from "../lib/watchers/config";
import { WatcherMixin } from "../mixins/watcher.mixin";

const WatcherTonService: ServiceSchema = {
	name: "watcher-ton",
	mixins: [
		WatcherMixin({
			chainType: "ton",
			createSource: (network, rpcUrl, config, logger) =>
				createTonSource({ networkId: network.id, apiUrl: rpcUrl, apiKey: rpcApiKeyFor(config, network.slug), timeoutMs: config.rpcTimeoutMs, isTestnet: network.isTestnet, logger }),
		}),
	],
};

export default WatcherTonService;
