import { CODE_PATTERN, CODE_TTL_MS, LINK_TTL_MS, MAX_CODE_ATTEMPTS, codeDigest, generateCode, generateLinkHash, linkHashDigest } from "../../../lib/auth/codes";

describe("one-time codes", () => {
	it("are 6 digits, zero-padded, and spread over the whole range", () => {
		const codes = Array.from({ length: 2000 }, generateCode);
		for (const c of codes) expect(c).toMatch(CODE_PATTERN);
		expect(new Set(codes).size).toBeGreaterThan(1900);
		const firstDigits = new Set(codes.map(c => c[0]));
		expect(firstDigits.size).toBe(10);
	});

	it("digests are keyed and bound to purpose and address", () => {
		const d = codeDigest("login", "a@b.co", "123456", "k1");
		expect(d).toMatch(/^[0-9a-f]{64}$/);
		expect(d).not.toContain("123456");
		expect(codeDigest("login", "A@B.co", "123456", "k1")).toBe(d);
		expect(codeDigest("register", "a@b.co", "123456", "k1")).not.toBe(d);
		expect(codeDigest("login", "c@b.co", "123456", "k1")).not.toBe(d);
		expect(codeDigest("login", "a@b.co", "123456", "k2")).not.toBe(d);
		expect(codeDigest("login", "a@b.co", "123457", "k1")).not.toBe(d);
	});

	it("live 10 minutes with 5 tries", () => {
		expect(CODE_TTL_MS).toBe(10 * 60_000);
		expect(MAX_CODE_ATTEMPTS).toBe(5);
	});
});

describe("link hashes", () => {
	it("are long, URL-safe and unique; stored only as keyed digests", () => {
		const a = generateLinkHash();
		expect(a).toMatch(/^[A-Za-z0-9_-]{43}$/);
		expect(generateLinkHash()).not.toBe(a);
		expect(linkHashDigest(a, "k")).toMatch(/^[0-9a-f]{64}$/);
		expect(linkHashDigest(a, "k")).not.toBe(linkHashDigest(a, "other"));
	});

	it("reset links are short-lived", () => {
		expect(LINK_TTL_MS.reset).toBe(3600_000);
		expect(LINK_TTL_MS.confirm).toBeGreaterThan(LINK_TTL_MS.reset);
	});
});
