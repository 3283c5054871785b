import { generateKeyPair, isWellFormedPair, keyMode, keyPrefixOf, last4Of, KEY_PREFIX_LENGTH } from "../../../lib/keys/format";

describe("lib/keys/format", () => {
	it("generates test credentials for sandbox and live credentials for live organizations", () => {
		const sandbox = generateKeyPair("sandbox");
		expect(sandbox.key).toMatch(/^ak_test_[0-9A-Za-z]{32}$/);
		expect(sandbox.secret).toMatch(/^sk_test_[0-9A-Za-z]{48}$/);
		const live = generateKeyPair("live");
		expect(live.key).toMatch(/^ak_live_[0-9A-Za-z]{32}$/);
		expect(live.secret).toMatch(/^sk_live_[0-9A-Za-z]{48}$/);
	});

	it("never repeats and uses the whole base62 alphabet", () => {
		const bodies = new Set<string>();
		const seen = new Set<string>();
		for (let i = 0; i < 500; i++) {
			const { key, secret } = generateKeyPair("sandbox");
			bodies.add(key);
			for (const c of key.slice(8) + secret.slice(8)) seen.add(c);
		}
		expect(bodies.size).toBe(500);
		expect(seen.size).toBe(62);
	});

	it("reads the mode of a well-formed key only", () => {
		expect(keyMode(generateKeyPair("live").key)).toBe("live");
		expect(keyMode(generateKeyPair("sandbox").key)).toBe("sandbox");
		for (const bad of ["", "ak_test_", "ak_prod_" + "a".repeat(32), "ak_test_" + "a".repeat(31), "ak_test_" + "a".repeat(33), "ak_test_" + "-".repeat(32), 42, null]) {
			expect(keyMode(bad)).toBeNull();
		}
	});

	it("accepts a pair only when both are well formed and of the same mode", () => {
		const live = generateKeyPair("live");
		const test = generateKeyPair("sandbox");
		expect(isWellFormedPair(live.key, live.secret)).toBe(true);
		expect(isWellFormedPair(test.key, test.secret)).toBe(true);
		expect(isWellFormedPair(live.key, test.secret)).toBe(false);
		expect(isWellFormedPair(test.key, live.secret)).toBe(false);
		expect(isWellFormedPair(live.key, live.secret + "x")).toBe(false);
		expect(isWellFormedPair(live.key, undefined)).toBe(false);
	});

	it("keeps the 8-character prefix and the last four characters for display", () => {
		const { key } = generateKeyPair("live");
		expect(KEY_PREFIX_LENGTH).toBe(8);
		expect(keyPrefixOf(key)).toBe("ak_live_");
		expect(last4Of(key)).toBe(key.slice(-4));
		expect(last4Of(key)).toHaveLength(4);
	});
});
