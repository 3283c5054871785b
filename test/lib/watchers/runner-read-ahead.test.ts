/**
 * NetworkWatcher's read-ahead (the next range read while the range before it is committed) and its
 * address set refreshed beside the steps, against a scripted chain and a real database:
 * - a reorg after the read-ahead (in its range, or below the cursor) discards it: a transfer of a
 *   dropped block is never stored, the new chain's is;
 * - a lost lease discards it: the range is read again once the lease is held again;
 * - a deposit address opened while the watcher runs is seen in the next block, at the head and
 *   in a catch-up, though the address read is slow and off the step's path.
 */
import { networkIdFor, tokenIdFor } from "../../../lib/networks/catalogue";
import type { BlockRef, ChainSource, ChainTransfer, TransferQuery } from "../../../lib/chains/source";
import { envSlug } from "../../../lib/watchers/config";
import type { NetworkWatcher, PaymentsPort, StepTimings } from "../../../lib/watchers/runner";
import type { TestNode } from "../../helpers/harness";
import { loggerInto, nativeCoinNetwork, nodeForTests, testWatcher } from "../../helpers/network-watcher";
import { until } from "../../helpers/until";

const SLUG = "ton-testnet";
const NET = networkIdFor(SLUG);
const TON = tokenIdFor(SLUG, "TON");

interface Payment {
	block: number;
	txHash: string;
	to: string;
	/** Only on the chain after the fork (true) or only before it (false); on both when unset. */
	forked?: boolean;
}

/**
 * A straight chain up to `head`; once `forked`, blocks from `forkAt` on have other hashes (a reorg).
 * transfers() answers only payments to the addresses asked, and calls `onRead` with each query
 * after computing its answer (a test changes the world there, while the read is in flight).
 */
class ScriptedChain implements ChainSource {
	head_ = 40;
	forkAt = Infinity;
	forked = false;
	payments: Payment[] = [];
	reads: Array<{ from: number; forked: boolean }> = [];
	onRead: ((q: TransferQuery) => Promise<void>) | null = null;

	hashOf(n: number): string {
		return this.forked && n >= this.forkAt ? `b${n}` : `h${n}`;
	}
	ref(n: number): BlockRef {
		return { number: n, hash: this.hashOf(n), parentHash: this.hashOf(n - 1), timestamp: n };
	}
	async head() {
		return this.ref(this.head_);
	}
	async block(n: number) {
		return n <= this.head_ ? this.ref(n) : null;
	}
	async blocks(from: number, to: number) {
		const out: BlockRef[] = [];
		for (let n = from; n <= Math.min(to, this.head_); n++) out.push(this.ref(n));
		return out;
	}
	async transfers(q: TransferQuery) {
		const forked = this.forked;
		this.reads.push({ from: q.fromBlock, forked });
		const out = this.payments
			.filter(p => p.block >= q.fromBlock && p.block <= q.toBlock && q.addresses.has(p.to) && (p.forked === undefined || p.forked === (forked && p.block >= this.forkAt)))
			.map((p): ChainTransfer => ({ networkId: NET, txHash: p.txHash, logIndex: 0, toAddress: p.to, tokenId: TON, amount: "1000000000", blockNumber: p.block, blockHash: this.hashOf(p.block) }));
		await this.onRead?.(q);
		return out;
	}
	async close() {}
}

/** Deposit addresses as the payments side lists them (keyset pages by id), each answer after `delayMs`. */
function paymentsPort(addresses: string[], delayMs = 0): PaymentsPort {
	return {
		depositAddresses: async p => {
			if (delayMs) await new Promise(r => setTimeout(r, delayMs));
			return addresses.map((address, i) => ({ id: String(i + 1), address, createdAt: new Date(0).toISOString() })).filter(a => !p.afterId || Number(a.id) > Number(p.afterId));
		},
		openAddresses: async () => [],
		detectBatch: async ({ items }) => items.map(() => ({ outcome: "detected" })),
		creditBatch: async ({ items }) => items.map(() => ({ credited: true, duplicate: false })),
		revert: async () => ({ outcome: "reverted" }),
	};
}

describe("a network watcher reading one range ahead", () => {
	let node: TestNode;
	nodeForTests(n => (node = n));

	beforeEach(async () => {
		await node.app.models.ChainTransfer.destroy({ where: { networkId: NET } });
		await node.app.models.ChainCursor.destroy({ where: { networkId: NET } });
	});

	function watcher(src: ScriptedChain, payments: PaymentsPort, logs: string[], steps: StepTimings[], leaseMs = 10_000): NetworkWatcher {
		return testWatcher(node, {
			source: src,
			network: nativeCoinNetwork({ id: NET, slug: SLUG, chainType: "ton", tokenId: TON, symbol: "TON", decimals: 9 }),
			payments,
			// Ranges of 5 blocks from block 10 (the cursor starts on 9): 10-14, then 15-19 read ahead, ...
			config: { reconcileMs: 0, maxRange: 5, leaseMs, startBlocks: { [envSlug(SLUG)]: 10 } },
			logger: loggerInto(logs),
			onStepTimings: t => steps.push(t),
		});
	}

	const rows = () => node.app.models.ChainTransfer.findAll({ where: { networkId: NET }, order: [["id", "ASC"]] });
	const cursorAt = async () => (await node.app.models.ChainCursor.findByPk(NET))?.blockNumber;

	it.each([
		["in the range read ahead (the cursor's block stays)", 15],
		["below the cursor (the range being committed is dropped too)", 12],
	])("discards the read-ahead after a reorg %s: the dropped block's payment is never stored, the new chain's is", async (_what, forkAt) => {
		const src = new ScriptedChain();
		src.forkAt = forkAt;
		src.payments = [
			{ block: 17, txHash: "tx-old", to: "addr-1", forked: false },
			{ block: 17, txHash: "tx-new", to: "addr-1", forked: true },
			{ block: 33, txHash: "tx-later", to: "addr-1" },
		];
		// The read-ahead of 15-19 has read the old chain; the chain reorganises before it is used.
		src.onRead = async q => {
			if (q.fromBlock === 15 && !src.forked) src.forked = true;
		};
		const logs: string[] = [];
		const steps: StepTimings[] = [];
		const runner = watcher(src, paymentsPort(["addr-1"]), logs, steps);
		runner.start();
		try {
			await until("cursor at the head", async () => (await cursorAt()) === 40, 60_000, () => logs.join("\n"));
		} finally {
			await runner.stop();
		}
		// The old chain above the cursor was read once: the read-ahead of 15-19.
		expect(src.reads.filter(r => r.from >= 15 && !r.forked)).toEqual([{ from: 15, forked: false }]);
		const stored = await rows();
		expect(stored.map(r => [r.txHash, r.blockHash, r.status])).toEqual([
			["tx-new", "b17", "active"],
			["tx-later", "b33", "active"],
		]);
		if (forkAt === 15) {
			// The cursor's block stayed: 15-19 read again on the new chain, not taken from the read-ahead.
			expect(src.reads.filter(r => r.from === 15)).toEqual([
				{ from: 15, forked: false },
				{ from: 15, forked: true },
			]);
			expect(steps.find(s => s.fromBlock === 15)?.readAhead).toBe(false);
		} else {
			expect(logs.some(l => /reorg on ton-testnet: back to block 11/.test(l))).toBe(true);
		}
		// Later ranges were taken from the read-ahead (it works).
		expect(steps.filter(s => s.fromBlock > 15 && s.readAhead).length).toBeGreaterThan(0);
	}, 120_000);

	it("discards the read-ahead when the lease is lost: the range is read again once the lease is held again, its payment stored once", async () => {
		const src = new ScriptedChain();
		src.payments = [{ block: 17, txHash: "tx-1", to: "addr-1" }];
		const logs: string[] = [];
		const steps: StepTimings[] = [];
		const runner = watcher(src, paymentsPort(["addr-1"]), logs, steps, 1_000);
		// While 15-19 is read ahead: 10-14 is committed, then another owner takes the lease, and the
		// read ends only once this watcher has seen its lease lost (its next step is waiting for it).
		src.onRead = async q => {
			if (q.fromBlock !== 15 || src.reads.filter(r => r.from === 15).length > 1) return;
			await until("10-14 committed", async () => (await cursorAt()) === 14);
			await node.app.models.ChainCursor.update({ leaseOwner: "another-owner", leaseUntil: new Date(Date.now() + 60_000) }, { where: { networkId: NET } });
			await node.app.models.ChainCursor.increment("leaseToken", { where: { networkId: NET } });
			await until("the lease lost", () => !runner.status.leader);
		};
		runner.start();
		try {
			await until("the lease lost", async () => logs.some(l => /lost the lease/.test(l)), 30_000, () => logs.join("\n"));
			expect(await cursorAt()).toBe(14);
			// The other owner goes: this watcher leads again and reads on.
			await until("the read-ahead over", () => src.reads.filter(r => r.from === 15).length >= 1);
			await node.app.models.ChainCursor.update({ leaseOwner: null, leaseUntil: null }, { where: { networkId: NET } });
			await until("cursor at the head", async () => (await cursorAt()) === 40, 60_000, () => logs.join("\n"));
		} finally {
			await runner.stop();
		}
		expect(src.reads.filter(r => r.from === 15).length).toBe(2);
		expect(steps.find(s => s.fromBlock === 15)?.readAhead).toBe(false);
		expect(steps.filter(s => s.fromBlock > 15 && s.readAhead).length).toBeGreaterThan(0);
		expect((await rows()).map(r => [r.txHash, r.blockHash, r.status])).toEqual([["tx-1", "h17", "active"]]);
	}, 180_000);

	it("sees a deposit address opened while it runs, in the next block at the head and in a catch-up, though the address read is slow", async () => {
		const src = new ScriptedChain();
		const addresses = ["addr-1"];
		const logs: string[] = [];
		const steps: StepTimings[] = [];
		// Each address page answers after 300 ms (a busy core node): the steps run beside it.
		const runner = watcher(src, paymentsPort(addresses, 300), logs, steps);
		runner.start();
		try {
			await until("cursor at the head", async () => (await cursorAt()) === 40, 60_000, () => logs.join("\n"));
			// At the head: a checkout opens, then is paid in the next block.
			addresses.push("addr-2");
			src.payments.push({ block: 41, txHash: "tx-head", to: "addr-2" });
			src.head_ = 41;
			await until("cursor at 41", async () => (await cursorAt()) === 41, 60_000, () => logs.join("\n"));
			// A burst: 39 blocks at once while a checkout opens, paid in the first of them and in the last.
			addresses.push("addr-3");
			src.payments.push({ block: 42, txHash: "tx-burst-first", to: "addr-3" }, { block: 80, txHash: "tx-burst-last", to: "addr-3" });
			src.head_ = 80;
			await until("cursor at 80", async () => (await cursorAt()) === 80, 60_000, () => logs.join("\n"));
		} finally {
			await runner.stop();
		}
		expect((await rows()).map(r => r.txHash)).toEqual(["tx-head", "tx-burst-first", "tx-burst-last"]);
		expect(steps.filter(s => s.readAhead).length).toBeGreaterThan(0);
	}, 210_000);
});
