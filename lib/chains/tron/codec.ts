/**
 * Tron: BIP-44 m/44'/195'/0'/0/index (TronLink, Ledger), secp256k1 like EVM with the 0x41
 * prefix; address encoding and base58check validation from tronweb's utils. Shasta/Nile
 * testnets use the same address format as mainnet.
 */
import { utils } from "tronweb";
import { assertIndex, assertSeed, cleanAddressInput, secp256k1PrivateKey, secp256k1PublicKey, toHex } from "../hd";
import type { ChainCodec } from "../types";

/** 0x41 followed by 20 zero bytes (T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb): Tron's burn address. */
const TRON_ZERO_ADDRESS = utils.crypto.getBase58CheckAddress([0x41, ...new Array<number>(20).fill(0)]);

function derivationPath(index: number): string {
	assertIndex(index);
	return `m/44'/195'/0'/0/${index}`;
}

function privateKey(seed: Uint8Array, index: number): Uint8Array {
	assertSeed(seed);
	return secp256k1PrivateKey(seed, derivationPath(index));
}

export const tronCodec: ChainCodec = {
	chainType: "tron",
	derivationPath,
	async deriveAddress(seed, _params, index) {
		const key = privateKey(seed, index);
		const address = utils.crypto.getBase58CheckAddress(utils.crypto.getAddressFromPriKey(key));
		return { address, path: derivationPath(index), publicKey: toHex(secp256k1PublicKey(key)) };
	},
	async derivePrivateKey(seed, _params, index) {
		return privateKey(seed, index);
	},
	normalizeAddress(address) {
		const s = cleanAddressInput(address, 34);
		// Only the base58check "T..." form; the 41-prefixed hex form is internal to the node API.
		if (!s || s.length !== 34 || s[0] !== "T") return null;
		try {
			if (!utils.crypto.isAddressValid(s)) return null;
		} catch {
			return null;
		}
		return s === TRON_ZERO_ADDRESS ? null : s;
	},
};
