/**
 * NetworkWatcher on a chain with skipped numbers and a finality of its own (Solana's shape:
 * parentSlot, `finalized`), against a scripted chain source and a real database: a payment is
 * shown as confirming (held below the requirement) until its block is finalized, credited then;
 * a confirmed block that is dropped is reverted and never credited. docs/watchers.md "Solana".
 */
import { networkIdFor, tokenIdFor } from "../../../lib/networks/catalogue";
import type { BlockRef, ChainSource, ChainTransfer } from "../../../lib/chains/source";
import type { PaymentsPort } from "../../../lib/watchers/runner";
import type { TestNode } from "../../helpers/harness";
import { nativeCoinNetwork, nodeForTests, testWatcher } from "../../helpers/network-watcher";
import { until } from "../../helpers/until";

const SLUG = "solana-devnet";
const NET = networkIdFor(SLUG);
const SOL = tokenIdFor(SLUG, "SOL");
const DEPOSIT = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM";

/** A Solana-like chain: produced slots with their parent slot; a confirmed head and a finalized slot. */
class ScriptedSlots implements ChainSource {
	readonly chain = new Map<number, { hash: string; parent: number }>();
	readonly payments = new Map<number, ChainTransfer[]>();
	confirmed = 0;
	finalized = 0;

	produce(slot: number, parent: number, fork = "a"): void {
		this.chain.set(slot, { hash: `${fork}${slot}`, parent });
	}
	private ref(n: number): BlockRef | null {
		const b = this.chain.get(n);
		if (!b) return null;
		return { number: n, hash: b.hash, parentHash: this.chain.get(b.parent)?.hash ?? "", parentNumber: b.parent, timestamp: n };
	}
	async head() {
		return this.ref(this.confirmed)!;
	}
	async block(n: number) {
		return n <= this.confirmed ? this.ref(n) : null;
	}
	async blocks(from: number, to: number) {
		const out: BlockRef[] = [];
		for (let n = from; n <= Math.min(to, this.confirmed); n++) {
			const r = this.ref(n);
			if (r) out.push(r);
		}
		return out;
	}
	async transfers(q: { fromBlock: number; toBlock: number }) {
		const out: ChainTransfer[] = [];
		for (let n = q.fromBlock; n <= q.toBlock; n++) for (const t of this.payments.get(n) ?? []) if (this.chain.get(n)?.hash === t.blockHash) out.push(t);
		return out;
	}
	async finalizedHash(n: number) {
		return n <= this.finalized ? (this.chain.get(n)?.hash ?? null) : null;
	}
	async close() {}

	pay(slot: number, signature: string, amount: string): void {
		const hash = this.chain.get(slot)!.hash;
		this.payments.set(slot, [...(this.payments.get(slot) ?? []), { networkId: NET, txHash: signature, logIndex: 1, toAddress: DEPOSIT, tokenId: SOL, amount, blockNumber: slot, blockHash: hash }]);
	}
}

describe("a network watcher on a chain with finality (Solana's shape)", () => {
	let node: TestNode;
	nodeForTests(n => (node = n));

	it("shows a payment as confirming below the requirement until its block is finalized, credits it then, and reverts a dropped confirmed block without crediting it", async () => {
		const calls: Array<{ kind: string; txHash: string; confirmations?: number; required?: number }> = [];
		const payments: PaymentsPort = {
			depositAddresses: async () => [{ id: "1", address: DEPOSIT, createdAt: new Date().toISOString() }],
			openAddresses: async () => [{ id: "1", address: DEPOSIT, createdAt: new Date().toISOString() }],
			detectBatch: async ({ items }) => items.map(p => (calls.push({ kind: "detect", txHash: p.txHash, confirmations: p.confirmations, required: p.requiredConfirmations }), { outcome: "detected" })),
			creditBatch: async ({ items }) => items.map(p => (calls.push({ kind: "credit", txHash: p.txHash, confirmations: p.confirmations, required: p.requiredConfirmations }), { credited: true, duplicate: false })),
			revert: async p => (calls.push({ kind: "revert", txHash: p.txHash }), { outcome: "reverted" }),
		};
		const src = new ScriptedSlots();
		// Slots 99..110 with 102 skipped: 103's parent is 101 (the cursor starts after 99, the block before the head).
		for (let s = 99; s <= 110; s++) if (s !== 102) src.produce(s, s === 103 ? 101 : s - 1);
		src.confirmed = 100;
		src.finalized = 100;
		const runner = testWatcher(node, {
			source: src,
			network: nativeCoinNetwork({ id: NET, slug: SLUG, chainType: "solana", tokenId: SOL, symbol: "SOL", decimals: 9, requiredConfirmations: 32 }),
			payments,
			config: { reconcileMs: 0 },
			logger: { info: () => undefined, warn: () => undefined, error: (...a: unknown[]) => console.error(...a) },
		});
		runner.start();
		try {
			await until("cursor set", async () => (await node.app.models.ChainCursor.findByPk(NET))?.blockNumber != null);
			src.pay(103, "sigA", "1500000000");
			src.confirmed = 110;
			// Depth 8 (slots 103..110), not finalized: confirming, 8 of 32.
			await until("detected at depth 8", async () => calls.some(c => c.kind === "detect" && c.txHash === "sigA" && c.confirmations === 8));
			expect(calls.filter(c => c.kind === "credit")).toEqual([]);

			// 40 slots deep, still not finalized: held at 31 of 32, never credited by depth alone.
			for (let s = 111; s <= 142; s++) src.produce(s, s - 1);
			src.confirmed = 142;
			await until("held below the requirement", async () => calls.some(c => c.kind === "detect" && c.txHash === "sigA" && c.confirmations === 31));
			expect(calls.filter(c => c.kind === "credit")).toEqual([]);

			// Finalized past it: credited, with the requirement met.
			src.finalized = 120;
			await until("credited at finality", async () => calls.some(c => c.kind === "credit" && c.txHash === "sigA"));
			expect(calls.find(c => c.kind === "credit")).toEqual({ kind: "credit", txHash: "sigA", confirmations: 40, required: 32 });

			// A payment in confirmed block 143, which is then dropped: its fork is abandoned, slot 143 is
			// skipped on the chain that finalizes (144 follows 142).
			src.produce(143, 142);
			src.pay(143, "sigB", "2000000000");
			src.confirmed = 143;
			await until("sigB confirming", async () => calls.some(c => c.kind === "detect" && c.txHash === "sigB"));
			src.chain.delete(143);
			for (let s = 144; s <= 190; s++) src.produce(s, s === 144 ? 142 : s - 1, "b");
			src.confirmed = 190;
			src.finalized = 180;
			await until("sigB reverted", async () => calls.some(c => c.kind === "revert" && c.txHash === "sigB"));
			await until("cursor past the fork", async () => (await node.app.models.ChainCursor.findByPk(NET))?.blockNumber === 190);
		} finally {
			await runner.stop();
		}
		expect(calls.filter(c => c.kind === "credit").map(c => c.txHash)).toEqual(["sigA"]);
	}, 170_000);
});
