/**
 * The memoized EIP-55 checksum (lib/chains/evm/checksum.ts) answers what ethers' getAddress
 * answers, from the memo as from a miss, across generations of the memo.
 */
import crypto from "node:crypto";
import { getAddress } from "ethers";
import { checksumAddress } from "../../../../lib/chains/evm/checksum";

function reference(hex: string): string | null {
	try {
		return getAddress(hex);
	} catch {
		return null;
	}
}

/**
 * A variant of `hex` with one letter's case flipped that is still mixed case (so an invalid checksum,
 * not an all-lower or all-upper address, which carries none), or null if no letter gives one.
 */
function flipped(hex: string): string | null {
	for (let i = 2; i < hex.length; i++) {
		const c = hex[i];
		if (!/[a-fA-F]/.test(c)) continue;
		const variant = hex.slice(0, i) + (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()) + hex.slice(i + 1);
		if (/[a-f]/.test(variant.slice(2)) && /[A-F]/.test(variant.slice(2))) return variant;
	}
	return null;
}

describe("EVM checksum memo", () => {
	it("answers as getAddress: lower, upper, valid checksum, broken checksum; twice (memo) the same", () => {
		for (let n = 0; n < 300; n++) {
			const lower = "0x" + crypto.randomBytes(20).toString("hex");
			const good = getAddress(lower);
			const upper = "0x" + lower.slice(2).toUpperCase();
			const bad = flipped(good);
			for (let pass = 0; pass < 2; pass++) {
				for (const input of [lower, upper, good, ...(bad ? [bad] : [])]) expect(checksumAddress(input)).toBe(reference(input));
			}
			if (bad) expect(checksumAddress(bad)).toBeNull();
		}
		expect(checksumAddress("0x0000000000000000000000000000000000000000")).toBe("0x0000000000000000000000000000000000000000");
	});

	it("stays right past the memo's generations (more than 2 x 50,000 addresses)", () => {
		const first = "0x" + crypto.randomBytes(20).toString("hex");
		expect(checksumAddress(first)).toBe(getAddress(first));
		for (let n = 0; n < 110_000; n++) checksumAddress("0x" + n.toString(16).padStart(40, "0"));
		expect(checksumAddress(first)).toBe(getAddress(first));
		expect(checksumAddress(flipped(getAddress(first)) ?? first)).toBe(reference(flipped(getAddress(first)) ?? first));
	});
});
