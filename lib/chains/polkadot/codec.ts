/**
 * Polkadot / Substrate: ed25519 keys derived by SLIP-10 at m/44'/354'/index'/0'/0' (bip_utils'
 * "Polkadot ed25519 SLIP", Trust Wallet's Polkadot path), so every chain hangs off the one BIP-39
 * seed. Not the polkadot.js default (sr25519 from the mnemonic's entropy with //index junctions):
 * our seed is the BIP-39 seed, not the mnemonic, and ed25519 accounts are first-class on every
 * Substrate chain. Keypair from @polkadot/keyring, SS58 from @polkadot/util-crypto.
 */
import { Keyring } from "@polkadot/keyring";
import { decodeAddress, encodeAddress } from "@polkadot/util-crypto";
import { assertIndex, assertSeed, cleanAddressInput, ed25519Slip10, toHex } from "../hd";
import type { ChainCodec, ChainNetworkParams } from "../types";

export const POLKADOT_SS58 = 0;
export const GENERIC_SS58 = 42;
const BASE58_RE = /^[1-9A-HJ-NP-Za-km-z]+$/;

/** The network's SS58 prefix: listenerConfig.ss58Prefix, else 0 (Polkadot) / 42 (testnets). */
export function polkadotSs58Of(params?: ChainNetworkParams): number {
	const prefix = params?.ss58Prefix ?? (params?.isTestnet ? GENERIC_SS58 : POLKADOT_SS58);
	if (!Number.isInteger(prefix) || prefix < 0 || prefix > 16383) throw new TypeError(`Invalid SS58 prefix: ${prefix}`);
	return prefix;
}

function derivationPath(index: number): string {
	assertIndex(index);
	return `m/44'/354'/${index}'/0'/0'`;
}

function privateKey(seed: Uint8Array, index: number): Uint8Array {
	assertSeed(seed);
	return ed25519Slip10(seed, derivationPath(index)).privateKey;
}

export const polkadotCodec: ChainCodec = {
	chainType: "polkadot",
	derivationPath,
	async deriveAddress(seed, params, index) {
		const ss58Format = polkadotSs58Of(params);
		const pair = new Keyring({ type: "ed25519", ss58Format }).addFromSeed(privateKey(seed, index));
		return { address: pair.address, path: derivationPath(index), publicKey: toHex(pair.publicKey) };
	},
	async derivePrivateKey(seed, _params, index) {
		return privateKey(seed, index);
	},
	normalizeAddress(address, params) {
		const prefix = polkadotSs58Of(params);
		const s = cleanAddressInput(address, 64);
		// Base58 only: decodeAddress would otherwise take hex public keys as they are.
		if (!s || !BASE58_RE.test(s)) return null;
		try {
			// Checks the SS58 checksum and that the address is encoded for this network's prefix.
			const publicKey = decodeAddress(s, false, prefix);
			if (publicKey.length !== 32) return null;
			return encodeAddress(publicKey, prefix);
		} catch {
			return null;
		}
	},
};
