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

/** Constant-time comparison of two strings (different lengths compare unequal, still in constant time for the longer). */
export function safeEqual(a: string, b: string): boolean {
	const ab = Buffer.from(a);
	const bb = Buffer.from(b);
	if (ab.length !== bb.length) {
		crypto.timingSafeEqual(ab, ab);
		return false;
	}
	return crypto.timingSafeEqual(ab, bb);
}

function keyFrom(master: string): Buffer {
	// The master key may be any string; derive a fixed 32-byte key from it.
	return crypto.createHash("sha256").update(`cpg-encryption:${master}`).digest();
}

/** AES-256-GCM; output is `v1:<iv>:<tag>:<ciphertext>` in base64url. */
export function encrypt(plain: string, master: string): string {
	const iv = crypto.randomBytes(12);
	const cipher = crypto.createCipheriv("aes-256-gcm", keyFrom(master), iv);
	const data = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
	return ["v1", iv.toString("base64url"), cipher.getAuthTag().toString("base64url"), data.toString("base64url")].join(":");
}

export function decrypt(sealed: string, master: string): string {
	const [version, iv, tag, data] = sealed.split(":");
	if (version !== "v1" || !iv || !tag || data === undefined) throw new Error("Unsupported ciphertext");
	const decipher = crypto.createDecipheriv("aes-256-gcm", keyFrom(master), Buffer.from(iv, "base64url"));
	decipher.setAuthTag(Buffer.from(tag, "base64url"));
	return Buffer.concat([decipher.update(Buffer.from(data, "base64url")), decipher.final()]).toString("utf8");
}
