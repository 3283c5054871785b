/**
 * NetworkWatcher's reports against a scripted chain source and a real database: a block of 40
 * payments (three report chunks) whose credits the payments side answers differently. What each
 * answer records is per transfer, though a chunk's acknowledgements are written together (one
 * UPDATE per outcome): credited and duplicate are `credited`, unknown addresses `ignored`, a credit
 * refused for its confirmations or a failed call stays pending and is reported again. During a
 * burst: a backlog of several pages is credited with at most four calls at once across pages (the
 * next page's calls start as this page's end), each transfer once; native-balance reconciliation
 * waits while a report pass has transfers to send, at most WATCHER_RECONCILE_MS.
 */
import { networkIdFor, tokenIdFor } from "../../../lib/networks/catalogue";
import type { BlockRef, ChainSource, ChainTransfer } from "../../../lib/chains/source";
import type { NetworkWatcher, PaymentsPort } from "../../../lib/watchers/runner";
import type { TestNode } from "../../helpers/harness";
import { nativeCoinNetwork, nodeForTests, testWatcher } from "../../helpers/network-watcher";
import { until } from "../../helpers/until";

const SLUG = "ton-testnet";
const NET = networkIdFor(SLUG);
const TON = tokenIdFor(SLUG, "TON");
const PAID_IN = 101;
const PAYMENTS = 40;

const hashOf = (n: number) => `h${n}`;
const ref = (n: number): BlockRef => ({ number: n, hash: hashOf(n), parentHash: hashOf(n - 1), timestamp: n });

/** A straight chain up to `head`; block PAID_IN holds `payments` payments, tx-0 .. tx-(payments-1), each to its own address; native balances all zero. */
class ScriptedChain implements ChainSource {
	head_ = 100;
	constructor(private readonly payments = PAYMENTS) {}
	async head() {
		return ref(this.head_);
	}
	async block(n: number) {
		return n <= this.head_ ? ref(n) : null;
	}
	async blocks(from: number, to: number) {
		const out: BlockRef[] = [];
		for (let n = from; n <= Math.min(to, this.head_); n++) out.push(ref(n));
		return out;
	}
	async transfers(q: { fromBlock: number; toBlock: number }) {
		if (PAID_IN < q.fromBlock || PAID_IN > q.toBlock) return [];
		return Array.from({ length: this.payments }, (_, i): ChainTransfer => ({ networkId: NET, txHash: `tx-${i}`, logIndex: 0, toAddress: `addr-${i}`, tokenId: TON, amount: String(1_000_000_000 + i), blockNumber: PAID_IN, blockHash: hashOf(PAID_IN) }));
	}
	async nativeBalances(addresses: readonly string[]) {
		return new Map(addresses.map(a => [a, "0"]));
	}
	async close() {}
}

function watcher(node: TestNode, src: ScriptedChain, payments: PaymentsPort, reconcileMs: number): NetworkWatcher {
	return testWatcher(node, { source: src, network: nativeCoinNetwork({ id: NET, slug: SLUG, chainType: "ton", tokenId: TON, symbol: "TON", decimals: 9 }), payments, config: { reconcileMs } });
}

/** depositAddresses over addr-0 .. addr-(n-1): keyset pages by id, as the transactions service answers them. */
const addressesOf =
	(n: number) =>
	async (p: { afterId?: string; limit: number }): Promise<Array<{ id: string; address: string; createdAt: string }>> => {
		const from = p.afterId ? Number(p.afterId) : 0;
		return Array.from({ length: Math.max(0, Math.min(p.limit, n - from)) }, (_, i) => ({ id: String(from + i + 1), address: `addr-${from + i}`, createdAt: new Date(0).toISOString() }));
	};

describe("a network watcher's reports, acknowledged a chunk at a time", () => {
	let node: TestNode;
	nodeForTests(n => (node = n));

	it("records each transfer's own outcome; a refused or failed credit stays pending and is asked again", async () => {
		const calls = new Map<string, number>();
		let failOnce = true;
		// By payment index: 0-9 credited, 10-19 duplicates, 20-29 unknown addresses, 30-34 refused for
		// their confirmations (always), 35-39 credited, but tx-37's first call fails.
		const payments: PaymentsPort = {
			depositAddresses: addressesOf(PAYMENTS),
			openAddresses: async () => [],
			detectBatch: async p => p.items.map(() => ({ outcome: "detected" })),
			creditBatch: async ({ items }) =>
				items.map(p => {
					calls.set(p.txHash, (calls.get(p.txHash) ?? 0) + 1);
					const i = Number(p.txHash.slice(3));
					if (i === 37 && failOnce) {
						failOnce = false;
						return { credited: false, duplicate: false, error: { name: "Error", message: "payments side: connection reset" } };
					}
					if (i < 10 || i >= 35) return { credited: true, duplicate: false };
					if (i < 20) return { credited: false, duplicate: true, reason: "duplicate" };
					if (i < 30) return { credited: false, duplicate: false, reason: "unknownAddress" };
					return { credited: false, duplicate: false, reason: "insufficientConfirmations" };
				}),
			revert: async () => ({ outcome: "reverted" }),
		};
		const src = new ScriptedChain();
		const runner = watcher(node, src, payments, 0);
		const rows = () => node.app.models.ChainTransfer.findAll({ where: { networkId: NET }, order: [["id", "ASC"]] });
		runner.start();
		try {
			await until("cursor set", async () => (await node.app.models.ChainCursor.findByPk(NET))?.blockNumber != null);
			src.head_ = 105;
			await until("every payment stored", async () => (await rows()).length === PAYMENTS);
			// tx-37 asked again after its failure; the refused ones asked at least twice (never dropped).
			await until("the failed credit asked again, the refused ones too", async () => (calls.get("tx-37") ?? 0) >= 2 && [30, 31, 32, 33, 34].every(i => (calls.get(`tx-${i}`) ?? 0) >= 2));
			await until("tx-37 recorded", async () => (await rows()).find(r => r.txHash === "tx-37")?.reported === "credited");
		} finally {
			await runner.stop();
		}
		const byIndex = new Map((await rows()).map(r => [Number(r.txHash.slice(3)), r]));
		expect(byIndex.size).toBe(PAYMENTS);
		for (const [i, r] of byIndex) {
			const want = i < 20 || i >= 35 ? { reported: "credited", pending: false, reportedConfirmations: 5 } : i < 30 ? { reported: "ignored", pending: false, reportedConfirmations: 5 } : { reported: "none", pending: true, reportedConfirmations: null };
			expect({ i, reported: r.reported, pending: r.pending, reportedConfirmations: r.reportedConfirmations }).toEqual({ i, ...want });
		}
		// Recorded once acknowledged: no credited or ignored transfer was asked again.
		for (const i of [...Array(30).keys(), 35, 36, 38, 39]) expect({ i, calls: calls.get(`tx-${i}`) }).toEqual({ i, calls: 1 });
		expect(calls.get("tx-37")).toBe(2);
	}, 120_000);

	afterEach(async () => {
		await node.app.models.ChainTransfer.destroy({ where: { networkId: NET } });
		await node.app.models.ChainCursor.destroy({ where: { networkId: NET } });
	});

	it("credits a backlog of several pages with at most four calls at once across pages, each transfer once", async () => {
		const MANY = 4_000; // three pages of 1,600 read by one pass, 20 calls of 200
		const calls = new Map<string, number>();
		let inFlight = 0;
		let maxInFlight = 0;
		const payments: PaymentsPort = {
			depositAddresses: addressesOf(MANY),
			openAddresses: async () => [],
			detectBatch: async p => p.items.map(() => ({ outcome: "detected" })),
			creditBatch: async ({ items }) => {
				maxInFlight = Math.max(maxInFlight, ++inFlight);
				// Long enough for the calls of a pass to overlap.
				await new Promise(r => setTimeout(r, 20));
				inFlight--;
				return items.map(p => {
					calls.set(p.txHash, (calls.get(p.txHash) ?? 0) + 1);
					return { credited: true, duplicate: false };
				});
			},
			revert: async () => ({ outcome: "reverted" }),
		};
		const src = new ScriptedChain(MANY);
		const runner = watcher(node, src, payments, 0);
		const credited = () => node.app.models.ChainTransfer.count({ where: { networkId: NET, reported: "credited", pending: false } });
		runner.start();
		try {
			await until("cursor set", async () => (await node.app.models.ChainCursor.findByPk(NET))?.blockNumber != null);
			src.head_ = 105;
			await until("every payment recorded credited", async () => (await credited()) === MANY);
		} finally {
			await runner.stop();
		}
		expect(calls.size).toBe(MANY);
		expect([...calls.values()].filter(n => n !== 1)).toEqual([]);
		expect(maxInFlight).toBeLessThanOrEqual(4);
		expect(await node.app.models.ChainTransfer.count({ where: { networkId: NET, pending: true } })).toBe(0);
	}, 120_000);

	it("reconciles after the report backlog, or after waiting WATCHER_RECONCILE_MS for it", async () => {
		const RECONCILE_MS = 4_000;
		const opened: number[] = [];
		let held: Array<() => void> | null = null;
		let creditCalls = 0;
		const payments: PaymentsPort = {
			depositAddresses: addressesOf(PAYMENTS),
			openAddresses: async () => {
				opened.push(Date.now());
				return [{ id: "1", address: "addr-0", createdAt: new Date(0).toISOString() }];
			},
			detectBatch: async p => p.items.map(() => ({ outcome: "detected" })),
			creditBatch: async ({ items }) => {
				creditCalls++;
				if (held) await new Promise<void>(resolve => held!.push(resolve));
				return items.map(() => ({ credited: true, duplicate: false }));
			},
			revert: async () => ({ outcome: "reverted" }),
		};
		const src = new ScriptedChain(PAYMENTS);
		const runner = watcher(node, src, payments, RECONCILE_MS);
		runner.start();
		try {
			await until("the first reconciliation cycle", async () => opened.length === 1);
			// The credits of the next block wait: a report pass has transfers to send until released.
			held = [];
			src.head_ = 105;
			await until("the credit call held", async () => creditCalls === 1);
			const backlogAt = Date.now();
			// The backlog began before the next cycle was due (else this case tests nothing).
			expect(backlogAt - opened[0]).toBeLessThan(RECONCILE_MS);
			await until("the next cycle, the backlog still held", async () => opened.length === 2, 60_000);
			expect(creditCalls).toBe(1);
			// Due RECONCILE_MS after the first, then deferred RECONCILE_MS more (never skipped).
			expect(opened[1] - opened[0]).toBeGreaterThanOrEqual(2 * RECONCILE_MS - 5);
			const release = held;
			held = null;
			release.forEach(r => r());
			await until("every payment recorded credited", async () => (await node.app.models.ChainTransfer.count({ where: { networkId: NET, reported: "credited", pending: false } })) === PAYMENTS);
		} finally {
			const release = held ?? [];
			held = null;
			release.forEach(r => r());
			await runner.stop();
		}
	}, 180_000);
});
