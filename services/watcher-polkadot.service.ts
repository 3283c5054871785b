/**
 * The Polkadot chain watcher (docs/watchers.md "Polkadot"): follows every `polkadot` chain-type
 * network (Polkadot / Westend Asset Hub) with an RPC URL configured (RPC_URL_<SLUG>, a ws:// or
 * wss:// Substrate RPC node), one writer per network, and reports native (DOT / WND) and asset
 * (USDT 1984, USDC 1337) payments to deposit addresses to the transactions service: shown as
 * confirming from best blocks, credited at GRANDPA finality. Everything chain-independent is in
 * the watcher mixin; this service only says how to read Asset Hub (lib/chains/polkadot/source.ts).
 */
import type { ServiceSchema } from "moleculer";
import { polkadotSs58Of } from "../lib/chains/polkadot/codec";
import { createPolkadotSource } from "../lib/chains/polkadot/source";
import { chainParamsFor } from "../lib/chains/params";
import { WatcherMixin } from "../mixins/watcher.mixin";

const WatcherPolkadotService: ServiceSchema = {
	name: "watcher-polkadot",
	mixins: [
		WatcherMixin({
			chainType: "polkadot",
			createSource: (network, rpcUrl, config) =>
				createPolkadotSource({ networkId: network.id, rpcUrl, timeoutMs: config.rpcTimeoutMs, ss58Prefix: polkadotSs58Of(chainParamsFor(network)) }),
		}),
	],
};

export default WatcherPolkadotService;
