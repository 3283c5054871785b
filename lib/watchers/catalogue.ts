/**
 * What a running watcher or sweeper takes from the catalogue, read from the database at every
 * step (docs/watchers.md "Catalogue changes"): the network's required confirmations and the
 * tokens to follow. No node's memory is trusted with it: the core's seed (or an operator's
 * direct change) writes the `networks` and `tokens` rows, every node reads them.
 *
 * Which tokens: every token of the network the chain can carry (the native coin, or a contract
 * token with a contract address), ACTIVE OR NOT. Switching a token off only stops new checkouts
 * in it (networks.resolvePair); one opened before (or in the up to 60 s a node's look-up cache
 * still accepts it) is paid within the watch window, so the watcher keeps reading its transfers,
 * and the sweeper keeps moving its funds. A soft-deleted token (deletedAt) is no longer read.
 *
 * Read-only use of the networks service's tables by the watchers, declared here (like
 * lib/watchers/watched.ts declares the networks service's read of the watchers' table).
 */
import type { Models } from "../../models";
import type { WatchedToken } from "../chains/source";
import { isTokenDeployed } from "../networks/seed";

export type CatalogueToken = WatchedToken & { symbol: string };

/** A network's catalogue as a watcher or sweeper applies it now. */
export interface NetworkCatalogue {
	requiredConfirmations: number;
	tokens: CatalogueToken[];
}

export interface TokenRow {
	id: string;
	symbol: string;
	contractAddress: string | null;
	decimals: number;
	isNative: boolean;
}

/** The tokens a watcher follows, from the network's token rows (switched on or off alike), in id order. Pure. */
export function watchedTokens(rows: readonly TokenRow[]): CatalogueToken[] {
	return rows
		.filter(t => isTokenDeployed(t))
		.map(t => ({ tokenId: t.id, symbol: t.symbol, contractAddress: t.isNative ? "" : (t.contractAddress ?? ""), decimals: Number(t.decimals) }))
		.sort((a, b) => (a.tokenId < b.tokenId ? -1 : a.tokenId > b.tokenId ? 1 : 0));
}

/**
 * The network's catalogue now: two small indexed reads (the network by primary key, its tokens by
 * the (networkId, symbol) index). null: the network is gone (soft-deleted): the caller keeps what
 * it had until its service stops following the network.
 */
export async function readNetworkCatalogue(models: Models, networkId: string): Promise<NetworkCatalogue | null> {
	const [network, tokens] = await Promise.all([
		models.Network.findByPk(networkId, { attributes: ["id", "requiredConfirmations"], raw: true }),
		models.Token.findAll({ where: { networkId }, attributes: ["id", "symbol", "contractAddress", "decimals", "isNative"], raw: true }),
	]);
	if (!network) return null;
	return { requiredConfirmations: Number(network.requiredConfirmations), tokens: watchedTokens(tokens.map(t => ({ ...t, isNative: Boolean(t.isNative) }))) };
}
