/** Response shapes of networks and tokens: the spec's fields (+ chainType), camelCase, ISO timestamps. */
import type { ChainType } from "./catalogue";

export interface NetworkView {
	id: string;
	name: string;
	chainType: ChainType;
	chainId: number;
	blockExplorerUrl: string;
	publicRpcUrls: string[];
	isActive: boolean;
	isTestnet: boolean;
	listenerConfig: Record<string, unknown> | null;
	requiredConfirmations: number;
	image: string | null;
	createdAt: string;
	updatedAt: string;
	deletedAt: string | null;
}

/**
 * A network as GET /payments/networks lists it: the Network plus `watched` (our addition): a chain
 * watcher follows it now, so live payments on it are accepted (docs/networks.md "Watched").
 */
export interface ListedNetwork extends NetworkView {
	watched: boolean;
}

export interface TokenView {
	id: string;
	networkId: string;
	symbol: string;
	name: string;
	contractAddress: string;
	decimals: number;
	isNative: boolean;
	isStablecoin: boolean;
	isActive: boolean;
	image: string | null;
	createdAt: string;
	updatedAt: string;
	deletedAt: string | null;
}

/** The network a token belongs to, as `networks.getToken` returns it. */
export interface TokenNetworkSummary {
	id: string;
	name: string;
	chainType: ChainType;
	isTestnet: boolean;
	chainId: number;
}

export interface TokenWithNetworkView extends TokenView {
	network: TokenNetworkSummary;
}

/** A row a view is made from: the view's fields, with the timestamps as the database gives them. */
type RowOf<V extends { createdAt: string; updatedAt: string; deletedAt: string | null }> = Omit<V, "createdAt" | "updatedAt" | "deletedAt"> & {
	createdAt: Date;
	updatedAt: Date;
	deletedAt?: Date | null;
};
type NetworkLike = RowOf<NetworkView>;
type TokenLike = RowOf<TokenView>;

const iso = (d: Date | string): string => (d instanceof Date ? d : new Date(d)).toISOString();
const isoOrNull = (d: Date | string | null | undefined): string | null => (d ? iso(d) : null);

export function networkView(n: NetworkLike): NetworkView {
	return {
		id: n.id,
		name: n.name,
		chainType: n.chainType,
		chainId: Number(n.chainId),
		blockExplorerUrl: n.blockExplorerUrl ?? "",
		publicRpcUrls: Array.isArray(n.publicRpcUrls) ? [...n.publicRpcUrls] : [],
		isActive: Boolean(n.isActive),
		isTestnet: Boolean(n.isTestnet),
		listenerConfig: n.listenerConfig && typeof n.listenerConfig === "object" ? n.listenerConfig : null,
		requiredConfirmations: Number(n.requiredConfirmations),
		image: n.image ?? null,
		createdAt: iso(n.createdAt),
		updatedAt: iso(n.updatedAt),
		deletedAt: isoOrNull(n.deletedAt),
	};
}

export function tokenView(t: TokenLike): TokenView {
	return {
		id: t.id,
		networkId: t.networkId,
		symbol: t.symbol,
		name: t.name,
		contractAddress: t.contractAddress ?? "",
		decimals: Number(t.decimals),
		isNative: Boolean(t.isNative),
		isStablecoin: Boolean(t.isStablecoin),
		isActive: Boolean(t.isActive),
		image: t.image ?? null,
		createdAt: iso(t.createdAt),
		updatedAt: iso(t.updatedAt),
		deletedAt: isoOrNull(t.deletedAt),
	};
}

export function networkSummary(n: Pick<NetworkLike, "id" | "name" | "chainType" | "isTestnet" | "chainId">): TokenNetworkSummary {
	return { id: n.id, name: n.name, chainType: n.chainType, isTestnet: Boolean(n.isTestnet), chainId: Number(n.chainId) };
}
