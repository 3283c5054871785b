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
import { QueryTypes } from "sequelize";
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
 * The network's catalogue now, in ONE small indexed read (the network by primary key joined to its
 * tokens by the (networkId, symbol) index; raw: a watcher runs it at every step). null: the
 * network is gone (soft-deleted): the caller keeps what it had until its service stops following it.
 */
export async function readNetworkCatalogue(models: Models, networkId: string): Promise<NetworkCatalogue | null> {
	const rows = await models.Network.sequelize!.query<{ requiredConfirmations: number; id: string | null; symbol: string; contractAddress: string | null; decimals: number; isNative: number | boolean }>(
		"SELECT n.requiredConfirmations, t.id, t.symbol, t.contractAddress, t.decimals, t.isNative FROM networks n LEFT JOIN tokens t ON t.networkId = n.id AND t.deletedAt IS NULL WHERE n.id = ? AND n.deletedAt IS NULL",
		{ replacements: [networkId], type: QueryTypes.SELECT },
	);
	if (rows.length === 0) return null;
	const tokens = rows.filter(r => r.id !== null).map(r => ({ id: r.id as string, symbol: r.symbol, contractAddress: r.contractAddress, decimals: Number(r.decimals), isNative: Boolean(Number(r.isNative)) }));
	return { requiredConfirmations: Number(rows[0].requiredConfirmations), tokens: watchedTokens(tokens) };
}
