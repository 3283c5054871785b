/**
 * One-time secrets sent by mail: 6-digit codes and link hashes. Only keyed digests are stored
 * (HMAC under the master key), so a copy of the tables does not reveal a usable code or link.
 */
import crypto from "node:crypto";
import { digest, randomToken } from "../crypto";
import type { AuthCodePurpose } from "../../models/auth-code.model";
import type { AuthHashPurpose } from "../../models/auth-hash.model";
import { HOUR_MS, MINUTE_MS } from "./limits";

export const CODE_TTL_MS = 10 * MINUTE_MS;
/** Wrong tries that burn a code (the try that matches counts too, so the 6th guess never runs). */
export const MAX_CODE_ATTEMPTS = 5;
export const CODE_PATTERN = /^\d{6}$/;

/** How long an emailed link works. */
export const LINK_TTL_MS: Record<AuthHashPurpose, number> = {
	confirm: 24 * HOUR_MS,
	confirmNew: 24 * HOUR_MS,
	reset: HOUR_MS,
};

/** Uniform 000000..999999 (crypto.randomInt has no modulo bias). */
export function generateCode(): string {
	return String(crypto.randomInt(0, 1_000_000)).padStart(6, "0");
}

/** Bound to address and purpose, so a code for one cannot be replayed for the other. */
export function codeDigest(purpose: AuthCodePurpose, email: string, code: string, key: string): string {
	return digest(`code:${purpose}:${email.toLowerCase()}:${code}`, key);
}

/** A link token: 256 random bits, URL-safe. */
export function generateLinkHash(): string {
	return randomToken(32);
}

export function linkHashDigest(hash: string, key: string): string {
	return digest(`link:${hash}`, key);
}
