/**
 * Which networks are watched, read from `chain_cursors` (lib/watchers/watched.ts), on both
 * backends: a lease counts only once its network's cursor has started. A first leader that died
 * before storing a block would otherwise leave the network open to live checkouts (for the lease
 * and its grace period) whose payments its successor, starting at its own head, never reads.
 */
import crypto from "node:crypto";
import { networkIdFor } from "../../../lib/networks/catalogue";
import { acquireLease, commitRange, ensureCursor } from "../../../lib/watchers/store";
import { WATCHED_GRACE_MS, watchedNetworkIds } from "../../../lib/watchers/watched";
import { startNode, TestNode } from "../../helpers/harness";

describe("watched networks in the database", () => {
	let node: TestNode;
	const BASE = networkIdFor("base");

	beforeAll(async () => {
		node = await startNode({ services: ["networks"] });
	}, 60_000);

	afterAll(async () => {
		await node?.stop();
	});

	it("count a lease only once the network's cursor has started, and keep counting it for the grace period", async () => {
		const { models } = node.app;
		await ensureCursor(models, BASE, "evm", new Date());
		const lease = await acquireLease(models, BASE, "first-leader", 30_000, Date.now());
		expect(lease).not.toBeNull();
		// Leading, but no block stored yet: not watched (no live checkout can be opened).
		expect((await watchedNetworkIds(models, Date.now())).has(BASE)).toBe(false);
		// The first step stores where the cursor starts: watched from then on.
		await commitRange(node.app.sequelize, models, lease!, { number: 41, hash: "0xabc", recent: [[41, "0xabc"]] }, [], new Date());
		expect((await watchedNetworkIds(models, Date.now())).has(BASE)).toBe(true);
		// The leader died: still watched for the grace period after its lease ran out, not after.
		const until = Date.now() + 30_000;
		expect((await watchedNetworkIds(models, until + WATCHED_GRACE_MS - 1_000)).has(BASE)).toBe(true);
		expect((await watchedNetworkIds(models, until + WATCHED_GRACE_MS + 1_000)).has(BASE)).toBe(false);
		// Sweepers' lease rows (chainType "sweep") never make a network watched, even with a block number.
		const sweepRow = crypto.randomUUID();
		await ensureCursor(models, sweepRow, "sweep", new Date());
		expect(await acquireLease(models, sweepRow, "sweeper", 30_000, Date.now())).not.toBeNull();
		await models.ChainCursor.update({ blockNumber: 1, blockHash: "0x1" }, { where: { networkId: sweepRow } });
		expect((await watchedNetworkIds(models, Date.now())).has(sweepRow)).toBe(false);
	});
});
