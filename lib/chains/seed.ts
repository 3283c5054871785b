/**
 * The HD master seed every deposit address is derived from. MASTER_SEED (a BIP-39 mnemonic)
 * wins when configured; otherwise a 24-word mnemonic is generated once and kept in
 * DATA_DIR/hd-seed.enc, sealed with lib/crypto's AES-256-GCM under MASTER_KEY. The mnemonic
 * (not the 64-byte seed) is what is sealed, so an operator can back it up and restore it in
 * any BIP-39 wallet. Neither is ever logged or put in an error message.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { generateMnemonic, mnemonicToSeedSync, validateMnemonic } from "@scure/bip39";
import { wordlist } from "@scure/bip39/wordlists/english";
import { decrypt, encrypt } from "../crypto";
import { bip32 } from "./hd";

export const SEED_FILE = "hd-seed.enc";
/** Bound as associated data: the sealed mnemonic cannot be swapped with another sealed value. */
const SEAL_CONTEXT = "hd-seed";

/** Collapses whitespace and case so a pasted phrase validates; BIP-39 normalises to NFKD. */
export function normalizeMnemonic(mnemonic: string): string {
	return mnemonic.normalize("NFKD").trim().toLowerCase().split(/\s+/).join(" ");
}

export function isValidMnemonic(mnemonic: string): boolean {
	return validateMnemonic(normalizeMnemonic(mnemonic), wordlist);
}

/** The 64-byte BIP-39 seed (no passphrase) of a valid English mnemonic; throws without echoing it. */
export function seedFromMnemonic(mnemonic: string): Uint8Array {
	const normalized = normalizeMnemonic(mnemonic);
	if (!validateMnemonic(normalized, wordlist)) throw new Error("HD seed: the mnemonic is not a valid BIP-39 English phrase");
	return mnemonicToSeedSync(normalized);
}

/**
 * Non-secret identifier of a seed (BIP-32 master key fingerprint, 8 hex): store it with derived
 * addresses to notice a seed that changed under them.
 */
export function seedFingerprint(seed: Uint8Array): string {
	return bip32().fromSeed(Buffer.from(seed)).fingerprint.toString("hex");
}

export interface LoadSeedOptions {
	/** false: refuse to generate (e.g. several nodes that must share one seed); default true. */
	generate?: boolean;
}

export function loadOrCreateSeed(dataDir: string, masterKey: string, mnemonic?: string | null, options: LoadSeedOptions = {}): Uint8Array {
	if (mnemonic) return seedFromMnemonic(mnemonic);
	if (!masterKey) throw new Error("HD seed: a master key is required to seal the seed");
	const file = path.join(dataDir, SEED_FILE);
	if (!fs.existsSync(file)) {
		if (options.generate === false) throw new Error(`HD seed: MASTER_SEED is not set and ${file} does not exist`);
		createSealedSeed(file, masterKey);
	}
	let phrase: string;
	try {
		phrase = decrypt(fs.readFileSync(file, "utf8").trim(), masterKey, SEAL_CONTEXT);
	} catch {
		throw new Error(`HD seed: ${file} cannot be decrypted with the configured MASTER_KEY (was the key changed?)`);
	}
	return seedFromMnemonic(phrase);
}

/**
 * Writes a fresh sealed mnemonic without ever replacing an existing one: the content goes to a
 * temporary file that is then hard-linked into place, which fails if another process won the
 * race, in which case that process's seed is the one everybody uses.
 */
function createSealedSeed(file: string, masterKey: string): void {
	fs.mkdirSync(path.dirname(file), { recursive: true });
	const sealed = encrypt(generateMnemonic(wordlist, 256), masterKey, SEAL_CONTEXT);
	const tmp = `${file}.${process.pid}.${crypto.randomBytes(6).toString("hex")}.tmp`;
	fs.writeFileSync(tmp, sealed + "\n", { mode: 0o600, flag: "wx" });
	try {
		fs.linkSync(tmp, file);
	} catch (err) {
		if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
	} finally {
		fs.unlinkSync(tmp);
	}
}
