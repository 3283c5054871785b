/**
 * Move chains, Aptos by default: SLIP-10 ed25519 at m/44'/637'/index'/0'/0' (Petra, the Aptos
 * SDK), address = sha3-256(pubkey || 0x00) (single-Ed25519 authentication key). Sui
 * (moveVariant "sui") derives at m/44'/784'/index'/0'/0' and hashes blake2b-256(0x00 || pubkey):
 * the same key gives a different address there, so the variant must match the network.
 * Both print addresses as 0x + 64 hex, which is all validation can check (no checksum, no
 * network in the address). Hashes from @noble/hashes: the official SDKs are far heavier.
 */
import { blake2b } from "@noble/hashes/blake2.js";
import { sha3_256 } from "@noble/hashes/sha3.js";
import { assertIndex, assertSeed, cleanAddressInput, ed25519Slip10, toHex } from "../hd";
import type { ChainCodec, ChainNetworkParams, MoveVariant } from "../types";

const ADDRESS_RE = /^0x[0-9a-fA-F]{64}$/;
const ED25519_SCHEME = 0x00;

function variantOf(params?: ChainNetworkParams): MoveVariant {
	const variant = params?.moveVariant ?? "aptos";
	if (variant !== "aptos" && variant !== "sui") throw new TypeError(`Unknown move variant: ${variant}`);
	return variant;
}

function derivationPath(index: number, params?: ChainNetworkParams): string {
	assertIndex(index);
	const coin = variantOf(params) === "sui" ? 784 : 637;
	return `m/44'/${coin}'/${index}'/0'/0'`;
}

export function moveAddressOf(publicKey: Uint8Array, variant: MoveVariant): string {
	const hash =
		variant === "sui"
			? blake2b(Uint8Array.of(ED25519_SCHEME, ...publicKey), { dkLen: 32 })
			: sha3_256(Uint8Array.of(...publicKey, ED25519_SCHEME));
	return `0x${toHex(hash)}`;
}

export const moveCodec: ChainCodec = {
	chainType: "move",
	derivationPath,
	async deriveAddress(seed, params, index) {
		assertSeed(seed);
		const path = derivationPath(index, params);
		const { publicKey } = ed25519Slip10(seed, path);
		return { address: moveAddressOf(publicKey, variantOf(params)), path, publicKey: toHex(publicKey) };
	},
	async derivePrivateKey(seed, params, index) {
		assertSeed(seed);
		return ed25519Slip10(seed, derivationPath(index, params)).privateKey;
	},
	normalizeAddress(address) {
		const s = cleanAddressInput(address, 66);
		// Long form only (AIP-40): short forms like 0x1 name framework accounts, not wallets.
		if (!s || !ADDRESS_RE.test(s)) return null;
		const canonical = s.toLowerCase();
		// 0x0 is the reserved null address.
		return /^0x0{64}$/.test(canonical) ? null : canonical;
	},
};
