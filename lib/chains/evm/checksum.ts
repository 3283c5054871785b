/**
 * EIP-55 checksums of 0x-prefixed 40-hex-digit addresses, memoized: a checksum is a keccak-256
 * (~10 us), and one transfer's address is checksummed more than once (the watcher matching it
 * against the watched set, then the core normalising the credit's and detection's address). The
 * memo is process-wide and bounded: two generations of GENERATION entries (at most ~2 x 50,000
 * pairs of 42-character strings, ~15 MB); when the newer is full the older is dropped.
 */
import { getAddress } from "ethers";

const GENERATION = 50_000;
let current = new Map<string, string>();
let previous = new Map<string, string>();

/** The EIP-55 form of `lower`, which must be "0x" and 40 lower-case hex digits (not checked). */
function checksumOfLower(lower: string): string {
	let out = current.get(lower);
	if (out !== undefined) return out;
	out = previous.get(lower) ?? getAddress(lower);
	if (current.size >= GENERATION) {
		previous = current;
		current = new Map();
	}
	current.set(lower, out);
	return out;
}

/**
 * What ethers' getAddress answers for "0x" + 40 hex digits (the caller checked the shape): the
 * checksummed address; null (getAddress throws) for mixed case that is not a valid checksum.
 */
export function checksumAddress(hex: string): string | null {
	const lower = hex.toLowerCase();
	const out = checksumOfLower(lower);
	// Single case (all lower or all upper after 0x) carries no checksum to check.
	if (hex === lower || hex === "0x" + lower.slice(2).toUpperCase()) return out;
	return out === hex ? out : null;
}
