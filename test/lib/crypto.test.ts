import { decrypt, digest, encrypt, hmacSha256Hex, randomBase62, randomToken, safeEqual, sha256Hex } from "../../lib/crypto";

const MASTER = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

/** Changes one character of a base64url segment to another valid one. */
function flip(segment: string, at = 0): string {
	const c = segment[at];
	return segment.slice(0, at) + (c === "A" ? "B" : "A") + segment.slice(at + 1);
}

describe("crypto", () => {
	describe("encrypt / decrypt", () => {
		it("round-trips any text", () => {
			for (const plain of ["", "sk_live_" + "x".repeat(48), "ünïcødé ✓ 🔑", "a".repeat(100_000)]) {
				expect(decrypt(encrypt(plain, MASTER), MASTER)).toBe(plain);
			}
		});

		it("seals as v1:iv:tag:ciphertext with a fresh IV every time", () => {
			const a = encrypt("same", MASTER);
			const b = encrypt("same", MASTER);
			expect(a).not.toBe(b);
			const [version, iv, tag, data] = a.split(":");
			expect(version).toBe("v1");
			expect(Buffer.from(iv, "base64url")).toHaveLength(12);
			expect(Buffer.from(tag, "base64url")).toHaveLength(16);
			expect(Buffer.from(data, "base64url")).toHaveLength(4);
			expect(a).not.toContain("same");
		});

		it("detects tampering with the ciphertext, IV or tag", () => {
			const sealed = encrypt("sk_test_secret_value", MASTER);
			const [v, iv, tag, data] = sealed.split(":");
			const tampered = [
				[v, iv, tag, flip(data, 2)],
				[v, flip(iv, 3), tag, data],
				[v, iv, flip(tag, 5), data],
				// GCM accepts short tags unless told otherwise: a 4-byte tag is far easier to forge.
				[v, iv, Buffer.from(tag, "base64url").subarray(0, 4).toString("base64url"), data],
				[v, iv, "", data],
				[v, Buffer.from(iv, "base64url").subarray(0, 8).toString("base64url"), tag, data],
				[v, iv, tag, data + "AA"],
			];
			for (const parts of tampered) expect(() => decrypt(parts.join(":"), MASTER)).toThrow();
		});

		it("refuses a wrong master key, unknown versions and malformed input", () => {
			const sealed = encrypt("x", MASTER);
			expect(() => decrypt(sealed, MASTER + "0")).toThrow();
			expect(() => decrypt(sealed.replace(/^v1/, "v2"), MASTER)).toThrow("Unsupported ciphertext");
			for (const bad of ["", "v1", "v1:a:b", "v1:a:b:c:d", "plain text"]) expect(() => decrypt(bad, MASTER)).toThrow();
		});

		it("binds an optional context, so a sealed value cannot move to another row", () => {
			const sealed = encrypt("secret", MASTER, "api_key:7");
			expect(decrypt(sealed, MASTER, "api_key:7")).toBe("secret");
			expect(() => decrypt(sealed, MASTER, "api_key:8")).toThrow();
			expect(() => decrypt(sealed, MASTER)).toThrow();
			expect(() => decrypt(encrypt("secret", MASTER), MASTER, "api_key:7")).toThrow();
		});
	});

	describe("safeEqual", () => {
		it("compares strings exactly", () => {
			expect(safeEqual("abc", "abc")).toBe(true);
			expect(safeEqual("", "")).toBe(true);
			expect(safeEqual("ünï", "ünï")).toBe(true);
			expect(safeEqual("abc", "abd")).toBe(false);
			expect(safeEqual("abc", "abcd")).toBe(false);
			expect(safeEqual("abc", "")).toBe(false);
			expect(safeEqual("a".repeat(64), "a".repeat(63) + "b")).toBe(false);
			expect(safeEqual("ABC", "abc")).toBe(false);
		});
	});

	describe("randomBase62", () => {
		it("has the requested length and only base62 characters", () => {
			for (const n of [0, 1, 8, 32, 48, 200]) {
				const s = randomBase62(n);
				expect(s).toHaveLength(n);
				expect(s).toMatch(/^[0-9A-Za-z]*$/);
			}
		});

		it("uses the whole alphabet roughly evenly and does not repeat", () => {
			const sample = Array.from({ length: 400 }, () => randomBase62(62)).join("");
			const counts = new Map<string, number>();
			for (const c of sample) counts.set(c, (counts.get(c) || 0) + 1);
			expect(counts.size).toBe(62);
			// 400 expected per character; a biased generator (e.g. modulo of a byte) would skew this far more.
			for (const n of counts.values()) {
				expect(n).toBeGreaterThan(280);
				expect(n).toBeLessThan(530);
			}
			const keys = new Set(Array.from({ length: 1000 }, () => randomBase62(32)));
			expect(keys.size).toBe(1000);
		});
	});

	describe("digests", () => {
		it("computes standard SHA-256 and HMAC-SHA256 (RFC 4231 case 2)", () => {
			expect(sha256Hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
			expect(hmacSha256Hex("what do ya want for nothing?", "Jefe")).toBe("5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
			expect(hmacSha256Hex(Buffer.from("what do ya want for nothing?"), "Jefe")).toBe(hmacSha256Hex("what do ya want for nothing?", "Jefe"));
		});

		it("keys digests, so the same value gives different digests under different keys", () => {
			const d = digest("ak_live_abc", MASTER);
			expect(d).toMatch(/^[0-9a-f]{64}$/);
			expect(digest("ak_live_abc", MASTER)).toBe(d);
			expect(digest("ak_live_abc", MASTER + "x")).not.toBe(d);
			expect(digest("ak_live_abd", MASTER)).not.toBe(d);
			expect(d).not.toBe(sha256Hex("ak_live_abc"));
		});

		it("makes url-safe random tokens", () => {
			const t = randomToken(24);
			expect(t).toMatch(/^[A-Za-z0-9_-]{32}$/);
			expect(randomToken()).toHaveLength(43);
			expect(randomToken()).not.toBe(randomToken());
		});
	});
});
