import { appendRecent, commonAncestor, continuesChain, RecentBlocks } from "../../../lib/watchers/reorg";

const block = (number: number, hash: string, parentHash: string) => ({ number, hash, parentHash, timestamp: 0 });

describe("watcher reorg bookkeeping", () => {
	it("keeps the newest pairs up to the depth, replacing re-processed numbers", () => {
		let recent: RecentBlocks = [];
		recent = appendRecent(recent, [block(1, "a1", "a0"), block(2, "a2", "a1")], 3);
		recent = appendRecent(recent, [block(3, "a3", "a2"), block(4, "a4", "a3")], 3);
		expect(recent).toEqual([[2, "a2"], [3, "a3"], [4, "a4"]]);
		// After a walk back to 2, blocks 3.. come again with new hashes.
		recent = appendRecent(recent, [block(3, "b3", "a2")], 3);
		expect(recent).toEqual([[2, "a2"], [3, "b3"]]);
	});

	it("checks that a range continues the chain", () => {
		expect(continuesChain({ number: 2, hash: "a2" }, [block(3, "a3", "a2"), block(4, "a4", "a3")])).toBe(true);
		expect(continuesChain({ number: 2, hash: "a2" }, [block(3, "b3", "b2")])).toBe(false);
		expect(continuesChain({ number: 2, hash: "a2" }, [block(4, "a4", "a3")])).toBe(false);
		expect(continuesChain({ number: 2, hash: "A2" }, [block(3, "a3", "a2"), block(4, "a4", "x")])).toBe(false);
		expect(continuesChain(null, [block(3, "a3", "a2")])).toBe(true);
	});

	it("follows a chain with skipped numbers by its blocks' parent numbers (Solana slots)", () => {
		const slot = (number: number, hash: string, parentNumber: number, parentHash: string) => ({ number, hash, parentHash, parentNumber, timestamp: 0 });
		// Slots 11 and 12 skipped: 13's parent is 10.
		expect(continuesChain({ number: 10, hash: "s10" }, [slot(13, "s13", 10, "s10"), slot(14, "s14", 13, "s13")])).toBe(true);
		// A block whose parent is a slot the watcher did not read (a fork from 11): not a continuation.
		expect(continuesChain({ number: 10, hash: "s10" }, [slot(13, "s13", 11, "s11")])).toBe(false);
		// The right parent slot with another hash: not a continuation.
		expect(continuesChain({ number: 10, hash: "s10" }, [slot(13, "s13", 10, "x10")])).toBe(false);
		// A block naming a parent slot right below it is read as before.
		expect(continuesChain({ number: 10, hash: "s10" }, [slot(11, "s11", 10, "s10")])).toBe(true);
	});

	it("walks back to the newest block still on the chain", async () => {
		const recent: RecentBlocks = [[10, "a10"], [11, "a11"], [12, "a12"], [13, "a13"]];
		const chain: Record<number, string> = { 10: "a10", 11: "a11", 12: "b12", 13: "b13" };
		const asked: number[] = [];
		const ancestor = await commonAncestor(recent, async n => (asked.push(n), chain[n] ?? null));
		expect(ancestor).toEqual({ number: 11, hash: "a11" });
		expect(asked).toEqual([13, 12, 11]);
		expect(await commonAncestor(recent, async () => "zz")).toBeNull();
		// A chain shorter than the cursor (the node lost blocks): missing numbers are not ancestors.
		expect(await commonAncestor(recent, async n => (n <= 10 ? chain[n] : null))).toEqual({ number: 10, hash: "a10" });
	});
});
