/**
 * Reorg bookkeeping of a watcher, pure: the recent (number, hash) pairs kept with the cursor,
 * and the walk back to the common ancestor when the chain no longer has the cursor's block.
 */
import type { BlockRef } from "../chains/source";

export type RecentBlocks = Array<[number, string]>;

/** Appends processed blocks (in order) and keeps the newest `depth` pairs. */
export function appendRecent(recent: RecentBlocks, blocks: readonly Pick<BlockRef, "number" | "hash">[], depth: number): RecentBlocks {
	const last = blocks.length ? blocks[0].number : Infinity;
	const kept = recent.filter(([n]) => n < last);
	for (const b of blocks) kept.push([b.number, b.hash]);
	return kept.slice(-depth);
}

/**
 * Whether `blocks` continue the chain ending at (number, hash): each block's parent number
 * (`parentNumber`, else number - 1: consecutive numbers) and parent hash are the previous block's.
 * A gap means the node reorganised while the range was read: read it again after the reorg check.
 * Chains with skipped numbers (Solana slots) name their parent's number, so a skipped slot is no gap.
 */
export function continuesChain(tip: { number: number; hash: string } | null, blocks: readonly BlockRef[]): boolean {
	let prev = tip;
	for (const b of blocks) {
		if (prev && ((b.parentNumber ?? b.number - 1) !== prev.number || b.parentHash.toLowerCase() !== prev.hash.toLowerCase())) return false;
		prev = b;
	}
	return true;
}

/**
 * The newest recorded block the chain still has (same number, same hash), walking back from the
 * newest; null when none of the recorded blocks is on the chain any more (a reorg deeper than
 * the kept depth: an operator must look).
 */
export async function commonAncestor(recent: RecentBlocks, hashAt: (n: number) => Promise<string | null>): Promise<{ number: number; hash: string } | null> {
	for (let i = recent.length - 1; i >= 0; i--) {
		const [n, h] = recent[i];
		const onChain = await hashAt(n);
		if (onChain && onChain.toLowerCase() === h.toLowerCase()) return { number: n, hash: h };
	}
	return null;
}
