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
	evm: () => (require("./evm/codec") as typeof import("./evm/codec")).evmCodec,
	solana: () => (require("./solana/codec") as typeof import("./solana/codec")).solanaCodec,
	bitcoin: () => (require("./utxo/codec") as typeof import("./utxo/codec")).bitcoinCodec,
	tron: () => (require("./tron/codec") as typeof import("./tron/codec")).tronCodec,
	cosmos: () => (require("./cosmos/codec") as typeof import("./cosmos/codec")).cosmosCodec,
	polkadot: () => (require("./polkadot/codec") as typeof import("./polkadot/codec")).polkadotCodec,
	move: () => (require("./move/codec") as typeof import("./move/codec")).moveCodec,
	ton: () => (require("./ton/codec") as typeof import("./ton/codec")).tonCodec,
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
