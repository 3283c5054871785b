/**
 * Solana: SLIP-10 ed25519 at m/44'/501'/index'/0' (Phantom, Solflare and the Solana CLI's
 * `prompt://?full-path`), keypair and base58 from @solana/web3.js v1. Addresses do not encode
 * the cluster.
 */
import { Keypair, PublicKey } from "@solana/web3.js";
import { assertIndex, assertSeed, cleanAddressInput, ed25519Slip10, toHex } from "../hd";
import type { ChainCodec } from "../types";

function derivationPath(index: number): string {
	assertIndex(index);
	return `m/44'/501'/${index}'/0'`;
}

function keypair(seed: Uint8Array, index: number): Keypair {
	assertSeed(seed);
	return Keypair.fromSeed(ed25519Slip10(seed, derivationPath(index)).privateKey);
}

export const solanaCodec: ChainCodec = {
	chainType: "solana",
	derivationPath,
	async deriveAddress(seed, _params, index) {
		const pair = keypair(seed, index);
		return { address: pair.publicKey.toBase58(), path: derivationPath(index), publicKey: toHex(pair.publicKey.toBytes()) };
	},
	async derivePrivateKey(seed, _params, index) {
		assertSeed(seed);
		return ed25519Slip10(seed, derivationPath(index)).privateKey;
	},
	normalizeAddress(address) {
		// base58 of 32 bytes is 32..44 characters.
		const s = cleanAddressInput(address, 44);
		if (!s || s.length < 32) return null;
		try {
			// Any 32-byte key is a valid account address (on or off the curve, e.g. PDAs).
			const key = new PublicKey(s);
			// The all-zero key is the System Program: funds sent "to" it are lost.
			if (key.equals(PublicKey.default)) return null;
			const canonical = key.toBase58();
			return canonical === s ? canonical : null;
		} catch {
			return null;
		}
	},
};
