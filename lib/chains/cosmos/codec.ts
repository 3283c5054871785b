/**
 * Cosmos SDK chains: BIP-44 m/44'/118'/0'/0/index (Keplr, gaiad), secp256k1 via @cosmjs/crypto,
 * address = bech32(prefix, ripemd160(sha256(compressed pubkey))) via @cosmjs/amino. The network
 * is told apart by the bech32 prefix ("cosmos" for the Hub and its testnets; "osmo", ...).
 */
import { rawSecp256k1PubkeyToRawAddress } from "@cosmjs/amino";
import { Secp256k1, Slip10, Slip10Curve, stringToPath } from "@cosmjs/crypto";
import { fromBech32, toBech32 } from "@cosmjs/encoding";
import { assertIndex, assertSeed, cleanAddressInput, toHex } from "../hd";
import type { ChainCodec, ChainNetworkParams } from "../types";

export const DEFAULT_BECH32_PREFIX = "cosmos";
const PREFIX_RE = /^[a-z][a-z0-9]{0,31}$/;

function prefixOf(params?: ChainNetworkParams): string {
	const prefix = params?.bech32Prefix ?? DEFAULT_BECH32_PREFIX;
	if (!PREFIX_RE.test(prefix)) throw new TypeError(`Invalid bech32 prefix: ${prefix}`);
	return prefix;
}

function derivationPath(index: number): string {
	assertIndex(index);
	return `m/44'/118'/0'/0/${index}`;
}

function privateKey(seed: Uint8Array, index: number): Uint8Array {
	assertSeed(seed);
	return Slip10.derivePath(Slip10Curve.Secp256k1, seed, stringToPath(derivationPath(index))).privkey;
}

export const cosmosCodec: ChainCodec = {
	chainType: "cosmos",
	derivationPath,
	async deriveAddress(seed, params, index) {
		const prefix = prefixOf(params);
		const { pubkey } = await Secp256k1.makeKeypair(privateKey(seed, index));
		const compressed = Secp256k1.compressPubkey(pubkey);
		const address = toBech32(prefix, rawSecp256k1PubkeyToRawAddress(compressed));
		return { address, path: derivationPath(index), publicKey: toHex(compressed) };
	},
	async derivePrivateKey(seed, _params, index) {
		return privateKey(seed, index);
	},
	normalizeAddress(address, params) {
		const prefix = prefixOf(params);
		const s = cleanAddressInput(address, 90);
		if (!s) return null;
		try {
			const decoded = fromBech32(s, 90);
			if (decoded.prefix !== prefix) return null;
			// 20 bytes: key accounts; 32 bytes: module, interchain and contract accounts.
			if (decoded.data.length !== 20 && decoded.data.length !== 32) return null;
			return toBech32(prefix, decoded.data);
		} catch {
			return null;
		}
	},
};
