/**
 * Shared plumbing for the codecs: argument checks and the two HD schemes. secp256k1 chains use
 * BIP-32 (bip32 + tiny-secp256k1, the bitcoinjs pair; EVM uses ethers, Cosmos @cosmjs); ed25519
 * chains use SLIP-10 (micro-key-producer; TON uses @ton/crypto's own). Nothing is hand-rolled.
 */
import { BIP32Factory, type BIP32API } from "bip32";
import * as ecc from "tiny-secp256k1";
import { HDKey as Slip10Key } from "micro-key-producer/slip10.js";

/** Hardened indices stop at 2^31 - 1; keep every chain inside that. */
export const MAX_INDEX = 0x7fffffff;

export function assertIndex(index: number): void {
	if (!Number.isSafeInteger(index) || index < 0 || index > MAX_INDEX) {
		throw new RangeError(`HD index must be an integer from 0 to ${MAX_INDEX}`);
	}
}

/** BIP-32 accepts 16..64-byte seeds; a BIP-39 seed is 64. */
export function assertSeed(seed: Uint8Array): void {
	if (!(seed instanceof Uint8Array) || seed.length < 16 || seed.length > 64) {
		throw new TypeError("HD seed must be 16 to 64 bytes");
	}
}

let bip32Api: BIP32API | undefined;
export function bip32(): BIP32API {
	return (bip32Api ??= BIP32Factory(ecc));
}

/** BIP-32 secp256k1 private key at `path`. */
export function secp256k1PrivateKey(seed: Uint8Array, path: string): Uint8Array {
	const node = bip32().fromSeed(Buffer.from(seed)).derivePath(path);
	if (!node.privateKey) throw new Error("BIP-32 derivation produced no private key");
	return new Uint8Array(node.privateKey);
}

/** Compressed (33-byte) secp256k1 public key of a private key. */
export function secp256k1PublicKey(privateKey: Uint8Array): Uint8Array {
	const point = ecc.pointFromScalar(privateKey, true);
	if (!point) throw new Error("Invalid secp256k1 private key");
	return point;
}

export interface Ed25519Key {
	/** 32-byte ed25519 seed ("private key" in SLIP-10 terms). */
	privateKey: Uint8Array;
	/** 32-byte raw public key. */
	publicKey: Uint8Array;
}

/** SLIP-10 ed25519 key at `path` (every segment must be hardened). */
export function ed25519Slip10(seed: Uint8Array, path: string): Ed25519Key {
	const key = Slip10Key.fromMasterSeed(seed).derive(path);
	return { privateKey: new Uint8Array(key.privateKey), publicKey: new Uint8Array(key.publicKeyRaw) };
}

export function toHex(bytes: Uint8Array): string {
	return Buffer.from(bytes).toString("hex");
}

/**
 * First gate of every normalizeAddress: a string, surrounding whitespace dropped (pasted
 * addresses), nothing inside it, and no absurd length.
 */
export function cleanAddressInput(address: unknown, maxLength = 128): string | null {
	if (typeof address !== "string") return null;
	const s = address.trim();
	if (s.length === 0 || s.length > maxLength || /\s/.test(s)) return null;
	return s;
}
