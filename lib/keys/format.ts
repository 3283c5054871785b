/**
 * API key credentials: their shape, generation and the non-secret parts kept for display.
 * Key `ak_test_`/`ak_live_` + 32 base62, secret `sk_test_`/`sk_live_` + 48 base62 (decisions.md);
 * the prefix names the organization's mode. Randomness comes from lib/crypto (crypto.randomInt).
 */
import { randomBase62 } from "../crypto";
import type { OrganizationMode } from "../../models/organization.model";

export const KEY_BODY_LENGTH = 32;
export const SECRET_BODY_LENGTH = 48;
/** What `keyPrefix` keeps: "ak_test_" / "ak_live_". */
export const KEY_PREFIX_LENGTH = 8;

const KEY_RE = /^ak_(test|live)_[0-9A-Za-z]{32}$/;
const SECRET_RE = /^sk_(test|live)_[0-9A-Za-z]{48}$/;

function modeTag(mode: OrganizationMode): "test" | "live" {
	return mode === "live" ? "live" : "test";
}

export interface KeyPair {
	key: string;
	secret: string;
}

export function generateKeyPair(mode: OrganizationMode): KeyPair {
	const tag = modeTag(mode);
	return { key: `ak_${tag}_${randomBase62(KEY_BODY_LENGTH)}`, secret: `sk_${tag}_${randomBase62(SECRET_BODY_LENGTH)}` };
}

/** The mode a well-formed key names, or null for anything that is not a key. */
export function keyMode(key: unknown): OrganizationMode | null {
	if (typeof key !== "string") return null;
	const m = KEY_RE.exec(key);
	if (!m) return null;
	return m[1] === "live" ? "live" : "sandbox";
}

/** A well-formed secret of the same mode as its key (cheap rejection before any look-up). */
export function isWellFormedPair(key: unknown, secret: unknown): boolean {
	const mode = keyMode(key);
	if (!mode || typeof secret !== "string") return false;
	const m = SECRET_RE.exec(secret);
	return !!m && m[1] === modeTag(mode);
}

export function keyPrefixOf(key: string): string {
	return key.slice(0, KEY_PREFIX_LENGTH);
}

export function last4Of(key: string): string {
	return key.slice(-4);
}
