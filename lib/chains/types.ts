/**
 * The contract every chain type implements: HD derivation of deposit addresses from the
 * service's master seed, and validation/normalisation of addresses (merchants' withdrawal
 * addresses). One small module per chain type, each built on that chain's own library.
 */

export const CHAIN_TYPES = ["evm", "solana", "bitcoin", "tron", "cosmos", "polkadot", "move", "ton"] as const;
export type ChainType = (typeof CHAIN_TYPES)[number];

/** "bitcoin" is bitcoinjs' name for mainnet; testnet4 and signet share testnet's address formats. */
export type BitcoinNetworkName = "mainnet" | "bitcoin" | "testnet" | "testnet4" | "signet" | "regtest" | "litecoin" | "litecoin-testnet" | "litecoin-regtest";
export type MoveVariant = "aptos" | "sui";

export interface ChainNetworkParams {
	/** Sandbox organizations use test networks, live ones main networks. */
	isTestnet: boolean;
	/** cosmos: the chain's bech32 account prefix; default "cosmos" (Cosmos Hub and its testnets). */
	bech32Prefix?: string;
	/** polkadot: SS58 prefix; default 0 (Polkadot) on mainnet, 42 (Westend / generic Substrate) on testnet. */
	ss58Prefix?: number;
	/** bitcoin: default "mainnet" when !isTestnet, "testnet" otherwise (signet shares testnet's formats). */
	bitcoinNetwork?: BitcoinNetworkName;
	/** move: which Move chain; default "aptos". Sui uses another path and address hash. */
	moveVariant?: MoveVariant;
}

export interface DerivedAddress {
	/** Canonical form, as normalizeAddress returns it. */
	address: string;
	/** The HD path the key was derived at. */
	path: string;
	/** Hex (no 0x) of the chain's public key encoding: compressed secp256k1 or raw ed25519. */
	publicKey: string;
}

export interface ChainCodec {
	chainType: ChainType;
	/** BIP-44 (or the chain's standard) path for the account index. */
	derivationPath(index: number, params?: ChainNetworkParams): string;
	/** Deterministic: same seed + params + index -> same address; different index -> different address. */
	deriveAddress(seed: Uint8Array, params: ChainNetworkParams, index: number): Promise<DerivedAddress>;
	/**
	 * The raw 32-byte private key behind deriveAddress (secp256k1 scalar, or the ed25519 seed the
	 * chain's keypair is built from). Secret: never log or persist it in clear.
	 */
	derivePrivateKey(seed: Uint8Array, params: ChainNetworkParams, index: number): Promise<Uint8Array>;
	/** Validates (and normalises) an address for the given network params; returns the canonical form or null. */
	normalizeAddress(address: string, params: ChainNetworkParams): string | null;
}
