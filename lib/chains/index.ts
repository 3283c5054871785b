/**
 * Registry of chain codecs. Each codec module pulls in its chain's library (ethers, web3.js,
 * tronweb, polkadot, ton, ...), so they load on first use: a node that never touches a chain
 * type never pays for its library.
 */
import { CHAIN_TYPES, type ChainCodec, type ChainType } from "./types";

export { CHAIN_TYPES } from "./types";
export { chainParamsFor, type NetworkLike } from "./params";
export type { BitcoinNetworkName, ChainCodec, ChainNetworkParams, ChainType, DerivedAddress, MoveVariant } from "./types";

const loaders: Record<ChainType, () => ChainCodec> = {
	evm: () => (require("./evm") as typeof import("./evm")).evmCodec,
	solana: () => (require("./solana") as typeof import("./solana")).solanaCodec,
	bitcoin: () => (require("./bitcoin") as typeof import("./bitcoin")).bitcoinCodec,
	tron: () => (require("./tron") as typeof import("./tron")).tronCodec,
	cosmos: () => (require("./cosmos") as typeof import("./cosmos")).cosmosCodec,
	polkadot: () => (require("./polkadot") as typeof import("./polkadot")).polkadotCodec,
	move: () => (require("./move") as typeof import("./move")).moveCodec,
	ton: () => (require("./ton") as typeof import("./ton")).tonCodec,
};

const loaded = new Map<ChainType, ChainCodec>();

export function isChainType(value: unknown): value is ChainType {
	return typeof value === "string" && (CHAIN_TYPES as readonly string[]).includes(value);
}

export function codecFor(chainType: ChainType): ChainCodec {
	if (!isChainType(chainType)) throw new TypeError(`Unknown chain type: ${String(chainType)}`);
	let codec = loaded.get(chainType);
	if (!codec) {
		codec = loaders[chainType]();
		loaded.set(chainType, codec);
	}
	return codec;
}
