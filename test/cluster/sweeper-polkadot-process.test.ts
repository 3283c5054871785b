/**
 * kill -9 of the Polkadot sweeper process between submitting an extrinsic and recording its
 * outcome (issue 20), on the Polkadot sweeper test chain (test/helpers/polkadot-sweeper-node.ts:
 * chopsticks running a real Asset Hub runtime in this test process, behind its finality proxy).
 * The gateway, payments, watcher-polkadot and the ledger run here; sweeper-polkadot in child
 * processes sharing the database.
 *
 * Blocks are built ONLY by this test, one at a time (`dev_newBlock` through the helper's
 * newBlock, never on a timer while a sweeper runs): the first sweeper signs the deposit's
 * `transferAll`, records it and submits it, and no block is built while it runs, so it can never
 * see it land; it is killed -9. The test then builds the block that includes it (the funds move),
 * and a second sweeper process finds it in a finalized block of its era window and records it
 * once: one extrinsic, one sweep record, the merchant paid once, the ledger equal to the chain.
 * The payer's transfer is signed immortal (era 0: no birth block hash that a failed or moved head
 * could make stale, the cause of the `1010 badProof` an earlier attempt hit).
 *
 * Both backends: on SQLite the test process and the sweeper processes share one WAL file (as in
 * watcher-polkadot-process.test.ts: not a supported deployment, the same fenced rows all the same).
 */
import { blake2AsHex } from "@polkadot/util-crypto";
import { fromBaseUnits, money } from "../../lib/money";
import { signedOf } from "../../lib/chains/polkadot/sweep-runner";
import { startClusterProcess, NodeProcess } from "../helpers/node-process";
import { startPolkadotSweeperNodes, DOT_NET, DOT_TOKEN, type PolkadotSweeperNodes } from "../helpers/polkadot-sweeper-node";
import { until } from "../helpers/until";
import { openCheckout } from "../e2e/payments.helpers";

describe("Polkadot sweeper process killed -9 between submitting and recording the outcome", () => {
	let nodes: PolkadotSweeperNodes;
	const procs: NodeProcess[] = [];

	beforeAll(async () => {
		// No sweeper in this node: it runs in the child processes.
		nodes = await startPolkadotSweeperNodes({ sweeper: false });
	}, 300_000);

	afterAll(async () => {
		await Promise.all(procs.map(p => p.kill()));
		await nodes?.stop();
	});

	const sweeper = (name: string) => {
		const p = startClusterProcess(nodes.node, name, ["networks", "transactions", "withdrawals", "sweeper-polkadot"], nodes.bench.env({ SWEEP_LEASE_MS: "2000" }));
		procs.push(p);
		return p;
	};

	/** Signed extrinsics (hex) that must reach a block: submitted again when a block build fails. */
	const inFlight: string[] = [];
	const submit = (hex: string) => nodes.bench.chain.rpc("author_submitExtrinsic", [hex]);
	/**
	 * The next block, built here. Now and then chopsticks fails to build one (its aura slot check:
	 * the head stays and the pool is emptied, docs/chains.md): the same bytes are submitted again
	 * ("already imported" or "stale" once they landed are ignored) and the next call builds it.
	 */
	const produce = async () => {
		const { chain } = nodes.bench;
		const before = (await chain.head()).number;
		await chain.newBlock().catch(() => undefined);
		if ((await chain.head()).number > before) return;
		for (const hex of inFlight) await submit(hex).catch(() => undefined);
	};

	/** The finalized blocks from `from` to the head whose extrinsics include `hash`. */
	const blocksWith = async (hash: string, from: number) => {
		const { api } = nodes.bench.chain;
		const head = (await nodes.bench.chain.head()).number;
		const found: number[] = [];
		for (let n = from; n <= head; n++) {
			const block = await api.rpc.chain.getBlock((await api.rpc.chain.getBlockHash(n)).toHex());
			if (block.block.extrinsics.some(x => x.hash.toHex() === hash)) found.push(n);
		}
		return found;
	};

	it("the restarted sweeper finds the extrinsic the killed one submitted and records it once; the funds move once", async () => {
		const { bench, node, merchant, key } = nodes;
		const { chain } = bench;
		const planck = 7_000_000_000n;
		const c = await openCheckout(node, key, { amount: "0.7", currency: "dot", tokenId: DOT_TOKEN, networkId: DOT_NET });
		const pay = await chain.api.tx.balances.transferKeepAlive(c.address, planck).signAsync(bench.payer, { era: 0 });
		inFlight.push(pay.toHex());
		await submit(pay.toHex());
		await until(
			"checkout completed",
			async () => {
				await produce();
				return (await node.http("GET", `/payments/transactions/${c.txId}`)).body.status === "completed";
			},
			180_000,
		);
		expect(await bench.free(c.address)).toBe(planck);
		const merchantBefore = await bench.free(merchant.address);
		const startBlock = (await chain.head()).number;

		// No block while the first sweeper runs: it signs, records and submits, and never sees it land.
		const first = sweeper("sweeper-polkadot-a");
		const sent = await until(
			"sweep submitted and in the node's pool",
			async () => {
				const [s] = await nodes.sweepsOf(c.address);
				if (s?.status !== "broadcast") return null;
				const pool = (await chain.rpc("author_pendingExtrinsics", [])) as string[];
				return pool.some(x => blake2AsHex(x) === s.txHash) ? s : null;
			},
			120_000,
			first.output,
		);
		await first.kill();
		expect(sent.kind).toBe("native");
		expect(await bench.free(c.address)).toBe(planck);

		// The killed process's extrinsic lands (the pool outlives its connection), then a new sweeper runs.
		const signed = signedOf(sent)!;
		inFlight.length = 0;
		inFlight.push(signed.hex);
		await until(
			"the extrinsic in a block",
			async () => {
				await produce();
				return (await blocksWith(sent.txHash!, startBlock)).length > 0;
			},
			60_000,
		);
		expect(await bench.free(c.address)).toBe(0n);
		const second = sweeper("sweeper-polkadot-b");
		const done = await until(
			"sweep confirmed",
			async () => {
				await produce();
				return node.app.models.Sweep.findOne({ where: { id: sent.id, status: "confirmed" } });
			},
			180_000,
			second.output,
		);
		// A few more steps and blocks: nothing else is signed for those funds.
		for (let i = 0; i < 5; i++) {
			await produce();
			await new Promise(r => setTimeout(r, 400));
		}
		await second.stop();

		// One extrinsic for the funds, in one block; one sweep record, its bytes those the first process signed.
		expect(done.txHash).toBe(sent.txHash);
		expect(signedOf(done)!.hex).toBe(signed.hex);
		expect(blake2AsHex(signed.hex)).toBe(sent.txHash);
		expect(await blocksWith(sent.txHash!, startBlock)).toHaveLength(1);
		expect(await nodes.sweepsOf(c.address)).toHaveLength(1);
		// Moved once: the deposit reaped to 0, the merchant got the payment less the one fee.
		const fee = BigInt(done.feePaid!);
		expect(fee).toBeGreaterThan(0n);
		expect(await bench.free(c.address)).toBe(0n);
		expect((await bench.free(merchant.address)) - merchantBefore).toBe(planck - fee);
		// The ledger equals the chain: credit 0.7, sweep −(0.7 − fee), fee −fee: the deposit's 0.
		expect((await nodes.ledger()).isZero()).toBe(true);
		const entries = await node.app.models.LedgerEntry.findAll({ where: { organizationId: nodes.user.live.id, networkId: DOT_NET, tokenId: DOT_TOKEN } });
		expect(entries.map(e => e.kind).sort()).toEqual(["credit", "fee", "sweep"]);
		expect(money(entries.find(e => e.kind === "fee")!.amount).neg().toFixed()).toBe(money(fromBaseUnits(fee, 10)).toFixed());
	}, 600_000);
});
