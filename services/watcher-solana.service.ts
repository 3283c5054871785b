/**
 * The Solana chain watcher (docs/watchers.md "Solana"): follows every `solana` chain-type network
 * with an RPC URL configured (RPC_URL_<SLUG>, a Solana JSON-RPC endpoint, API keys in the URL
 * allowed and never logged), one writer per network, and reports SOL and SPL-token payments to
 * deposit addresses to the transactions service: shown as confirming from the `confirmed`
 * commitment, credited at `finalized`. Everything chain-independent is in the watcher mixin; this
 * service only says how to read Solana (lib/chains/solana/source.ts).
 */
import type { ServiceSchema } from "moleculer";
import { createSolanaSource } from "../lib/chains/solana/source";
import { WatcherMixin } from "../mixins/watcher.mixin";

const WatcherSolanaService: ServiceSchema = {
	name: "watcher-solana",
	mixins: [
		WatcherMixin({
			chainType: "solana",
			createSource: (network, rpcUrl, config, logger) => createSolanaSource({ networkId: network.id, rpcUrl, timeoutMs: config.rpcTimeoutMs, logger }),
		}),
	],
};

export default WatcherSolanaService;
