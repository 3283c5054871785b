/**
 * Secrets at rest: digests for look-up and checking, AES-256-GCM for what must be recovered
 * (API key secrets sign webhooks). Node's crypto does the work; nothing here is hand-rolled.
 */
import crypto from "node:crypto";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** Uniformly random base62 string (crypto.randomInt avoids modulo bias). */
export function randomBase62(length: number): string {
	let out = "";
	for (let i = 0; i < length; i++) out += BASE62[crypto.randomInt(62)];
	return out;
}

export function randomToken(bytes = 32): string {
	return crypto.randomBytes(bytes).toString("base64url");
}

/** Keyed digest (HMAC-SHA256) so a stolen table cannot be brute-forced without the master key. */
export function digest(value: string, key: string): string {
	return crypto.createHmac("sha256", key).update(value).digest("hex");
}

export function sha256Hex(value: string | Buffer): string {
	return crypto.createHash("sha256").update(value).digest("hex");
}

export function hmacSha256Hex(body: string | Buffer, secret: string): string {
	return crypto.createHmac("sha256", secret).update(body).digest("hex");
}

/**
 * Constant-time comparison of two strings. Both sides are hashed first, so neither the content
 * nor the length of the expected value leaks through timing.
 */
export function safeEqual(a: string, b: string): boolean {
	const ha = crypto.createHash("sha256").update(a, "utf8").digest();
	const hb = crypto.createHash("sha256").update(b, "utf8").digest();
	return crypto.timingSafeEqual(ha, hb) && a === b;
}

function keyFrom(master: string): Buffer {
	// The master key may be any string; derive a fixed 32-byte key from it.
	return crypto.createHash("sha256").update(`cpg-encryption:${master}`).digest();
}

const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * AES-256-GCM; output is `v1:<iv>:<tag>:<ciphertext>` in base64url. `context` (optional) is
 * bound as associated data: decrypting with another context fails, so a sealed value cannot be
 * moved to another row (pass e.g. the row's id).
 */
export function encrypt(plain: string, master: string, context?: string): string {
	const iv = crypto.randomBytes(IV_BYTES);
	const cipher = crypto.createCipheriv("aes-256-gcm", keyFrom(master), iv, { authTagLength: TAG_BYTES });
	if (context !== undefined) cipher.setAAD(Buffer.from(context, "utf8"));
	const data = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
	return ["v1", iv.toString("base64url"), cipher.getAuthTag().toString("base64url"), data.toString("base64url")].join(":");
}

/** Throws on any tampering (ciphertext, iv, tag, context) or a wrong master key. */
export function decrypt(sealed: string, master: string, context?: string): string {
	const parts = sealed.split(":");
	if (parts.length !== 4 || parts[0] !== "v1") throw new Error("Unsupported ciphertext");
	const iv = Buffer.from(parts[1], "base64url");
	const tag = Buffer.from(parts[2], "base64url");
	// A full-length tag only: GCM would otherwise accept truncated tags, which are far easier to forge.
	if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) throw new Error("Unsupported ciphertext");
	const decipher = crypto.createDecipheriv("aes-256-gcm", keyFrom(master), iv, { authTagLength: TAG_BYTES });
	decipher.setAuthTag(tag);
	if (context !== undefined) decipher.setAAD(Buffer.from(context, "utf8"));
	return Buffer.concat([decipher.update(Buffer.from(parts[3], "base64url")), decipher.final()]).toString("utf8");
}
