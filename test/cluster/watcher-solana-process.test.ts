/**
 * The Solana watcher as real processes on a shared MySQL database, on the Solana test node
 * (test/helpers/solana-node.ts: litesvm behind a JSON-RPC facade; the finalized head trails the
 * confirmed one by 2 blocks): kill -9 in the middle of a catch-up over slots with payments and
 * skipped slots, then a restart (every payment credited once, no transfer stored twice); and two
 * watcher processes for the network (one leader; kill -9 it and the other takes over; every
 * payment credited exactly once).
 */
import { PublicKey } from "@solana/web3.js";
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { BACKEND } from "../helpers/harness";
import { startSolanaNode } from "../helpers/solana-node";
import { until } from "../helpers/until";
import { creditedAll, expectCreditedOnce, killMidCatchUp, leaderFailover, openProcessCheckout, watcherProcessTest, type WatcherProcessChain } from "../helpers/watcher-processes";

const NET = networkIdFor("solana-devnet");
const SOL = tokenIdFor("solana-devnet", "SOL");

const describeMysql = BACKEND === "mysql" ? describe : describe.skip;
if (BACKEND !== "mysql") console.warn("solana watcher processes: run on the mysql project (several processes share one database)");

describeMysql("Solana watcher processes: kill -9 mid catch-up, restart, failover", () => {
	const t = watcherProcessTest({
		service: "watcher-solana",
		startChain: async () => {
			const sol = await startSolanaNode();
			await sol.produceBlocks(3);
			return sol;
		},
		env: sol => ({ RPC_URL_SOLANA_DEVNET: sol.url }),
	});
	const watcher = t.watcher;
	const cursor = () => t.node.app.models.ChainCursor.findByPk(NET);

	const chain = (): WatcherProcessChain => ({
		node: t.node,
		networkId: NET,
		watcher,
		checkout,
		pay: address => t.chainNode.airdrop(new PublicKey(address), 100_000_000n),
		produce: () => t.chainNode.produceBlocks(4),
	});

	const checkout = () => openProcessCheckout(t.node, t.merchant.sandboxKey, { amount: "0.1", currency: "sol", tokenId: SOL, networkId: NET });

	it("credits every payment once after a kill -9 in the middle of a catch-up", async () => {
		const first = watcher("sol-a");
		await until("watcher start", async () => (await cursor())?.blockNumber != null, 60_000, first.output);
		await first.kill();

		const sol = t.chainNode;
		const targets: Array<{ txId: string; address: string }> = [];
		for (let i = 0; i < 8; i++) {
			const c = await checkout();
			targets.push(c);
			await sol.airdrop(new PublicKey(c.address), 100_000_000n);
			await sol.produceBlocks(4);
			// Skipped slots inside the range the watcher catches up on.
			if (i % 3 === 0) await sol.skipSlots(2);
		}
		const head = (await sol.produceBlocks(3)) - 2; // the finalized head trails by 2 blocks

		const mid = await killMidCatchUp(chain(), "sol-b", head, { WATCHER_MAX_RANGE: "3" });
		expect(mid).toBeLessThan(head);

		const third = watcher("sol-c", { WATCHER_MAX_RANGE: "3" });
		await creditedAll(chain(), targets, third);
		await expectCreditedOnce(chain(), targets, "0.1", true);
	}, 240_000);

	it("runs one leader among two watcher processes and fails over after a kill -9", async () => {
		await t.killAll();
		await leaderFailover(chain(), "sol", "0.1");
	}, 240_000);
});
