/**
 * The Polkadot watcher as real processes, on the Polkadot test node (test/helpers/polkadot-node.ts:
 * chopsticks runs a real Asset Hub runtime in this test process; the child processes reach it
 * through its finality proxy's ws:// URL, and every block built here is finalized at once):
 * kill -9 in the middle of a catch-up over blocks that each hold several payments (DOT and USDT
 * 1984, to several deposits), then a restart (every payment credited once, no transfer stored
 * twice); and two watcher processes for the network (one leader; kill -9 it and the other takes
 * over; every payment credited exactly once).
 *
 * Both backends: on SQLite the test process and the watcher processes share one WAL file (each
 * waits in busy_timeout for the others' writes). That is not a supported deployment (one process
 * per SQLite file, docs/deployment.md), but the lease and the cursor are the same rows and the
 * same fenced writes on either database, and the kill -9 is what is under test.
 */
import type { KeyringPair } from "@polkadot/keyring/types";
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { startPolkadotNode, USDT, type PolkadotNode } from "../helpers/polkadot-node";
import { until } from "../helpers/until";
import { creditedAll, expectCreditedOnce, killMidCatchUp, leaderFailover, openProcessCheckout, watcherProcessTest, type WatcherProcessChain } from "../helpers/watcher-processes";

const NET = networkIdFor("polkadot-asset-hub");
const DOT = tokenIdFor("polkadot-asset-hub", "DOT");
const USDT_TOKEN = tokenIdFor("polkadot-asset-hub", "USDT");
/** Every checkout is of 0.1: 0.1 DOT in planck (the catalogue's 10 decimals), 0.1 USDT in its 6. */
const AMOUNT = "0.1";
const SENT = { dot: 1_000_000_000n, usdt: 100_000n };

describe("Polkadot watcher processes: kill -9 mid catch-up, restart, failover", () => {
	let dot: PolkadotNode;
	/** One payment per payer per block (chopsticks' next nonce does not count the pool). */
	const payers: KeyringPair[] = [];
	let nextPayer = 0;
	const tokenOf = new Map<string, "dot" | "usdt">();
	let opened = 0;

	const t = watcherProcessTest({
		service: "watcher-polkadot",
		startChain: async () => {
			dot = await startPolkadotNode();
			for (let i = 0; i < 3; i++) {
				payers.push(dot.pair(`//ProcessPayer${i}`));
				await dot.fund(payers[i].address, 1_000n * 10n ** 12n);
			}
			// Their USDT in one block: one extrinsic of the asset's admin.
			await submit(() => dot.api.tx.utility.batchAll(payers.map(p => dot.api.tx.assets.mint(USDT.id, p.address, 1_000_000_000n))).signAndSend(dot.assetAdmin));
			await produce();
			return dot;
		},
		env: () => ({ RPC_URL_POLKADOT_ASSET_HUB: dot.url }),
		setupMs: 600_000,
	});
	const watcher = t.watcher;
	const cursor = () => t.node.app.models.ChainCursor.findByPk(NET);

	/** Checkouts alternate DOT and USDT; polkadot-asset-hub is a mainnet network: the live key. */
	const checkout = async () => {
		const token = opened++ % 2 === 0 ? "dot" : "usdt";
		const c = await openProcessCheckout(t.node, t.merchant.liveKey, { amount: AMOUNT, currency: token, tokenId: token === "dot" ? DOT : USDT_TOKEN, networkId: NET });
		tokenOf.set(c.address, token);
		return c;
	};
	/** What was sent since the last block: sent again if that block's build fails. */
	let inPool: Array<() => Promise<unknown>> = [];
	/** Sends an extrinsic (tried again if the node refuses it) and keeps it for produce(). */
	const submit = async (send: () => Promise<unknown>) => {
		for (let attempt = 1; ; attempt++) {
			try {
				await send();
				break;
			} catch (e) {
				if (attempt === 3) throw e;
			}
		}
		inPool.push(send);
	};
	/**
	 * The next block, with what was sent since the last one. Now and then chopsticks fails to build
	 * a block (the runtime's aura slot check panics): the head stays and the pool is emptied
	 * (docs/chains.md); the block is built again with the same extrinsics sent again.
	 */
	const produce = async () => {
		const sends = inPool;
		inPool = [];
		for (let attempt = 1; ; attempt++) {
			const before = (await dot.head()).number;
			const block = await dot.newBlock();
			if (block.number > before) return block;
			if (attempt === 3) throw new Error(`block #${before + 1} failed to build three times`);
			for (const send of sends) await submit(send);
			inPool = [];
		}
	};
	/** Into the pool, from the next payer (never one payer twice in a block with fewer than 3 payments). */
	const pay = (address: string) =>
		submit(() => {
			const from = payers[nextPayer++ % payers.length];
			const tx = tokenOf.get(address) === "usdt" ? dot.api.tx.assets.transfer(USDT.id, address, SENT.usdt) : dot.api.tx.balances.transferKeepAlive(address, SENT.dot);
			return tx.signAndSend(from);
		});

	const chain = (): WatcherProcessChain => ({ node: t.node, networkId: NET, watcher, checkout, pay, produce });

	it("credits every payment once after a kill -9 in the middle of a catch-up", async () => {
		// A watcher starts the network's cursor; the checkouts are opened while it runs (a network
		// counts as watched for only a minute after its last lease), then it dies.
		const first = watcher("dot-a");
		await until("watcher start", async () => (await cursor())?.blockNumber != null, 120_000, first.output);
		const targets: Array<{ txId: string; address: string }> = [];
		for (let i = 0; i < 15; i++) targets.push(await checkout());
		await first.kill();

		// Five blocks of three payments each (DOT, USDT, DOT / USDT, DOT, USDT ...) to their own
		// deposits, an empty block after each; nobody watches.
		const start = (await dot.head()).number + 1;
		for (let i = 0; i < 5; i++) {
			for (const c of targets.slice(3 * i, 3 * i + 3)) await pay(c.address);
			await produce();
			await produce();
		}
		const head = (await dot.head()).number;
		const lastPayments = head - 1;

		// One block a step from the cursor; killed -9 after at least the first block of payments was
		// stored and before the last was.
		const mid = await killMidCatchUp(chain(), "dot-b", head, { WATCHER_MAX_RANGE: "1" }, { above: start - 1, below: lastPayments });
		expect(mid).toBeGreaterThanOrEqual(start);
		expect(mid).toBeLessThan(lastPayments);

		// A new process resumes from the cursor.
		const third = watcher("dot-c", { WATCHER_MAX_RANGE: "3" });
		await creditedAll(chain(), targets, third, 120_000);
		await expectCreditedOnce(chain(), targets, AMOUNT, true);
		const credits = await t.node.app.models.TransactionCredit.findAll({ where: { networkId: NET } });
		expect(credits.filter(c => c.tokenId === DOT)).toHaveLength(8);
		expect(credits.filter(c => c.tokenId === USDT_TOKEN)).toHaveLength(7);
		// Keyed (block hash, event index): three payments in each of the five blocks.
		const perBlock = new Map<string, number>();
		for (const c of credits) perBlock.set(c.txHash, (perBlock.get(c.txHash) ?? 0) + 1);
		expect([...perBlock.values()]).toEqual([3, 3, 3, 3, 3]);
	}, 600_000);

	it("runs one leader among two watcher processes and fails over after a kill -9", async () => {
		await t.killAll();
		await leaderFailover(chain(), "dot", AMOUNT);
	}, 600_000);
});
