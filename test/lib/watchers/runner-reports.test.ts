/**
 * NetworkWatcher's reports against a scripted chain source and a real database: a block of 40
 * payments (three report chunks) whose credits the payments side answers differently. What each
 * answer records is per transfer, though a chunk's acknowledgements are written together (one
 * UPDATE per outcome): credited and duplicate are `credited`, unknown addresses `ignored`, a credit
 * refused for its confirmations or a failed call stays pending and is reported again.
 */
import { networkIdFor, tokenIdFor } from "../../../lib/networks/catalogue";
import type { BlockRef, ChainSource, ChainTransfer } from "../../../lib/chains/source";
import { watchersConfigFromEnv } from "../../../lib/watchers/config";
import { NetworkWatcher, PaymentsPort } from "../../../lib/watchers/runner";
import { startNode, TestNode } from "../../helpers/harness";
import { until } from "../../helpers/until";

const SLUG = "ton-testnet";
const NET = networkIdFor(SLUG);
const TON = tokenIdFor(SLUG, "TON");
const PAID_IN = 101;
const PAYMENTS = 40;

const hashOf = (n: number) => `h${n}`;
const ref = (n: number): BlockRef => ({ number: n, hash: hashOf(n), parentHash: hashOf(n - 1), timestamp: n });

/** A straight chain up to `head`; block PAID_IN holds PAYMENTS payments, tx-0 .. tx-39, each to its own address. */
class ScriptedChain implements ChainSource {
	head_ = 100;
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
		return Array.from({ length: PAYMENTS }, (_, i): ChainTransfer => ({ networkId: NET, txHash: `tx-${i}`, logIndex: 0, toAddress: `addr-${i}`, tokenId: TON, amount: String(1_000_000_000 + i), blockNumber: PAID_IN, blockHash: hashOf(PAID_IN) }));
	}
	async close() {}
}

describe("a network watcher's reports, acknowledged a chunk at a time", () => {
	let node: TestNode;

	beforeAll(async () => {
		node = await startNode({ services: ["networks"] });
	}, 60_000);

	afterAll(async () => {
		await node?.stop();
	});

	it("records each transfer's own outcome; a refused or failed credit stays pending and is asked again", async () => {
		const calls = new Map<string, number>();
		let failOnce = true;
		// By payment index: 0-9 credited, 10-19 duplicates, 20-29 unknown addresses, 30-34 refused for
		// their confirmations (always), 35-39 credited, but tx-37's first call fails.
		const payments: PaymentsPort = {
			depositAddresses: async () => Array.from({ length: PAYMENTS }, (_, i) => ({ id: String(i + 1), address: `addr-${i}`, createdAt: new Date(0).toISOString() })),
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
		const runner = new NetworkWatcher({
			sequelize: node.app.sequelize,
			models: node.app.models,
			source: src,
			network: { id: NET, slug: SLUG, chainType: "ton", requiredConfirmations: 1, tokens: [{ tokenId: TON, symbol: "TON", contractAddress: "", decimals: 9 }] },
			payments,
			config: { ...watchersConfigFromEnv({}), pollMs: 20, reconcileMs: 0 },
			logger: { info: () => undefined, warn: () => undefined, error: () => undefined },
			now: () => new Date(),
			owner: "test-owner",
		});
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
});
