/**
 * A watcher stores transfers with a raw multi-row insert (lib/watchers/store.ts insertTransfers),
 * not bulkCreate. On both backends the rows must be stored exactly as bulkCreate stored them
 * (the money column's canonical string, DATE(3) with milliseconds, booleans, BIGINT block
 * numbers), and a transfer stored before is still skipped by the unique index.
 */
import crypto from "node:crypto";
import { QueryTypes } from "sequelize";
import { acquireLease, commitRange, ensureCursor, markReported, pendingTransfers, recordReconciled, syncMempool, type Lease, type NewTransfer } from "../../../lib/watchers/store";
import { MEMPOOL_BLOCK_HASH } from "../../../lib/chains/source";
import type { TestNode } from "../../helpers/harness";
import { nodeForTests } from "../../helpers/network-watcher";

describe("watcher store: raw insert of chain transfers", () => {
	let node: TestNode;
	nodeForTests(n => (node = n));

	const AMOUNTS = [
		"123456789012345678901234567890.123456789012345678", // 30 integer digits, 18 decimals
		"0.000000000000000001",
		"1.50", // not canonical: stored as "1.5", as the money setter did
		"7.1234567890123456789", // 19 decimals: truncated to 18, as the money setter did
		"0",
		"1000000",
		"99999999999999999999999999999999999999.999999999999999999",
	];

	function transfers(networkId: string, blockNumber: number, blockHash: string): NewTransfer[] {
		return AMOUNTS.map((amount, i) => ({ networkId, txHash: `tx-${blockNumber}-${i}`, logIndex: i, blockNumber, blockHash, toAddress: `addr-${i}`, tokenId: crypto.randomUUID(), amount }));
	}

	/** The rows as the database holds them (raw, no model getters), minus what differs by design. */
	async function stored(networkId: string) {
		const rows = await node.app.sequelize.query<Record<string, unknown>>("SELECT * FROM chain_transfers WHERE networkId = ? ORDER BY logIndex, blockHash", { replacements: [networkId], type: QueryTypes.SELECT });
		return rows.map(({ id, networkId: _n, tokenId: _t, ...rest }) => {
			expect(Number(id)).toBeGreaterThan(0);
			return rest;
		});
	}

	async function leaderOf(networkId: string): Promise<Lease> {
		await ensureCursor(node.app.models, networkId, "evm", new Date());
		const lease = await acquireLease(node.app.models, networkId, `leader-${networkId}`, 60_000, Date.now());
		expect(lease).not.toBeNull();
		return lease!;
	}

	it("stores what bulkCreate stored, on this backend, and reads back the same values", async () => {
		const { models, sequelize } = node.app;
		const now = new Date("2026-11-26T07:20:31.123Z");
		const viaBulkCreate = crypto.randomUUID();
		const viaCommit = crypto.randomUUID();
		// The reference: the bulkCreate the watcher used before (same row shape).
		const reference = transfers(viaBulkCreate, 5_000_000_001, "0xblock");
		await models.ChainTransfer.bulkCreate(
			reference.map(tr => ({ ...tr, status: "active" as const, reported: "none" as const, reportedConfirmations: null, pending: true, createdAt: now, updatedAt: now })),
			{ ignoreDuplicates: true },
		);
		const lease = await leaderOf(viaCommit);
		const mine = transfers(viaCommit, 5_000_000_001, "0xblock");
		await commitRange(sequelize, models, lease, { number: 5_000_000_001, hash: "0xblock", recent: [[5_000_000_001, "0xblock"]] }, mine, now);

		const expected = await stored(viaBulkCreate);
		expect(expected).toHaveLength(AMOUNTS.length);
		expect(await stored(viaCommit)).toEqual(expected);

		// Through the model: the same typed values, amounts canonical, milliseconds kept.
		const rows = await models.ChainTransfer.findAll({ where: { networkId: viaCommit }, order: [["logIndex", "ASC"]] });
		expect(rows.map(r => r.amount)).toEqual([
			"123456789012345678901234567890.123456789012345678",
			"0.000000000000000001",
			"1.5",
			"7.123456789012345678",
			"0",
			"1000000",
			"99999999999999999999999999999999999999.999999999999999999",
		]);
		for (const [i, r] of rows.entries()) {
			expect(r.get({ plain: true })).toEqual({
				id: expect.any(Number),
				networkId: viaCommit,
				txHash: `tx-5000000001-${i}`,
				logIndex: i,
				blockNumber: 5_000_000_001,
				blockHash: "0xblock",
				toAddress: `addr-${i}`,
				tokenId: mine[i].tokenId,
				amount: r.amount,
				status: "active",
				reported: "none",
				reportedConfirmations: null,
				pending: true,
				createdAt: now,
				updatedAt: now,
			});
			expect(r.createdAt.getTime()).toBe(now.getTime());
		}
	});

	it("pendingTransfers reads plain rows as findAll read them, pending only, paged by id after afterId with a limit", async () => {
		const { models, sequelize } = node.app;
		const net = crypto.randomUUID();
		const lease = await leaderOf(net);
		const now = new Date("2026-11-26T08:00:00.123Z");
		await commitRange(sequelize, models, lease, { number: 20, hash: "0xb20", recent: [[20, "0xb20"]] }, transfers(net, 20, "0xb20"), now);
		const all = await models.ChainTransfer.findAll({ where: { networkId: net }, order: [["id", "ASC"]] });
		expect(all).toHaveLength(AMOUNTS.length);
		// One no longer pending: never read.
		await markReported(models, [all[1].id], "credited", false, 1, now);
		const pending = all.filter((_, i) => i !== 1).map(r => r.get({ plain: true }));
		const first = await pendingTransfers(models, net, 3);
		expect(first).toEqual(pending.slice(0, 3));
		expect(first.every(r => !(r instanceof models.ChainTransfer))).toBe(true);
		expect(first[0].amount).toBe(AMOUNTS[0]);
		expect(typeof first[0].blockNumber).toBe("number");
		expect(first[0].pending).toBe(true);
		expect(await pendingTransfers(models, net, 100, first[2].id)).toEqual(pending.slice(3));
		expect(await pendingTransfers(models, net, 100, all[all.length - 1].id)).toEqual([]);
		expect(await pendingTransfers(models, crypto.randomUUID(), 100)).toEqual([]);
	});

	it("skips a transfer stored before and stores the new ones of the range (commitRange, recordReconciled, syncMempool)", async () => {
		const { models, sequelize } = node.app;
		const net = crypto.randomUUID();
		const lease = await leaderOf(net);
		const first = new Date("2026-11-26T07:00:00.001Z");
		const later = new Date("2026-11-26T07:05:00.999Z");
		const block1 = transfers(net, 10, "0xb10");
		await commitRange(sequelize, models, lease, { number: 10, hash: "0xb10", recent: [[10, "0xb10"]] }, block1, first);
		const before = await stored(net);
		expect(before).toHaveLength(AMOUNTS.length);

		// The range read again after a crash, with one transfer more (a different amount on a
		// known key must not overwrite the stored row: the first sighting stays).
		const again = [{ ...block1[0], amount: "5" }, ...block1.slice(1), { ...block1[1], txHash: "tx-new", logIndex: 0, amount: "2.25" }];
		await commitRange(sequelize, models, lease, { number: 11, hash: "0xb11", recent: [[10, "0xb10"], [11, "0xb11"]] }, again, later);
		const after = await models.ChainTransfer.findAll({ where: { networkId: net }, order: [["id", "ASC"]] });
		expect(after).toHaveLength(AMOUNTS.length + 1);
		expect(after[0].amount).toBe(AMOUNTS[0]);
		expect(after[0].createdAt.getTime()).toBe(first.getTime());
		expect(after.slice(0, AMOUNTS.length).every(r => r.updatedAt.getTime() === first.getTime())).toBe(true);
		expect(after[AMOUNTS.length]).toMatchObject({ txHash: "tx-new", amount: "2.25", status: "active", pending: true, blockNumber: 10 });
		expect(after[AMOUNTS.length].createdAt.getTime()).toBe(later.getTime());

		// Reconciliation: a transfer stored before is skipped, a new one stored.
		// (Distinct times: MySQL counts an UPDATE that changes nothing as no row, which the fence reads as a lost lease.)
		await recordReconciled(sequelize, models, lease, { ...block1[2], amount: "9" }, new Date(later.getTime() + 1));
		await recordReconciled(sequelize, models, lease, { ...block1[2], txHash: "tx-reconciled", amount: "0.10" }, new Date(later.getTime() + 2));
		const reconciled = await models.ChainTransfer.findAll({ where: { networkId: net, txHash: [block1[2].txHash, "tx-reconciled"] }, order: [["id", "ASC"]] });
		expect(reconciled.map(r => [r.txHash, r.amount])).toEqual([
			[block1[2].txHash, "1.5"],
			["tx-reconciled", "0.1"],
		]);

		// Mempool sightings: stored once, whatever the number of times they are seen.
		const seen = [{ ...block1[4], txHash: "tx-pool", blockNumber: 0, blockHash: MEMPOOL_BLOCK_HASH }];
		expect(await syncMempool(sequelize, models, lease, seen, new Date(later.getTime() + 3))).toEqual({ added: 1, superseded: 0, dropped: 0 });
		expect(await syncMempool(sequelize, models, lease, seen, new Date(later.getTime() + 4))).toEqual({ added: 0, superseded: 0, dropped: 0 });
		const pool = await models.ChainTransfer.findAll({ where: { networkId: net, blockHash: MEMPOOL_BLOCK_HASH } });
		expect(pool.map(r => [r.txHash, r.blockNumber, r.amount, r.status, r.pending])).toEqual([["tx-pool", 0, "0", "active", true]]);
	});
});
