/**
 * The TON watcher as real processes on a shared MySQL database, on the TON test node
 * (test/helpers/ton-node.ts: @ton/sandbox behind our toncenter v3 facade, masterchain blocks sealed
 * by the test): kill -9 in the middle of a catch-up over masterchain blocks with payments, then a
 * restart (every payment credited once, no transfer stored twice); and two watcher processes for
 * the network (one leader; kill -9 it and the other takes over; every payment credited exactly once).
 */
import { toNano } from "@ton/core";
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { BACKEND } from "../helpers/harness";
import { startTonNode } from "../helpers/ton-node";
import { until } from "../helpers/until";
import { creditedAll, expectCreditedOnce, killMidCatchUp, leaderFailover, openProcessCheckout, watcherProcessTest, type WatcherProcessChain } from "../helpers/watcher-processes";

const NET = networkIdFor("ton-testnet");
const TON = tokenIdFor("ton-testnet", "TON");

const describeMysql = BACKEND === "mysql" ? describe : describe.skip;
if (BACKEND !== "mysql") console.warn("TON watcher processes: run on the mysql project (several processes share one database)");

describeMysql("TON watcher processes: kill -9 mid catch-up, restart, failover", () => {
	const t = watcherProcessTest({
		service: "watcher-ton",
		startChain: async () => {
			const ton = await startTonNode({ testnet: true });
			for (let i = 0; i < 3; i++) await ton.seal();
			return ton;
		},
		env: ton => ({ RPC_URL_TON_TESTNET: ton.url }),
	});
	const watcher = t.watcher;
	const cursor = () => t.node.app.models.ChainCursor.findByPk(NET);
	const seal = async (n: number) => {
		let last = 0;
		for (let i = 0; i < n; i++) last = await t.chainNode.seal();
		return last;
	};

	const chain = (): WatcherProcessChain => ({
		node: t.node,
		networkId: NET,
		watcher,
		checkout,
		pay: address => t.chainNode.pay(t.chainNode.faucet, address, toNano("0.1")),
		produce: () => seal(2),
	});

	const checkout = () => openProcessCheckout(t.node, t.merchant.sandboxKey, { amount: "0.1", currency: "ton", tokenId: TON, networkId: NET });

	it("credits every payment once after a kill -9 in the middle of a catch-up", async () => {
		const first = watcher("ton-a");
		await until("watcher start", async () => (await cursor())?.blockNumber != null, 60_000, first.output);
		await first.kill();

		const ton = t.chainNode;
		const targets: Array<{ txId: string; address: string }> = [];
		for (let i = 0; i < 8; i++) {
			const c = await checkout();
			targets.push(c);
			await ton.pay(ton.faucet, c.address, toNano("0.1"));
			await seal(6);
		}
		const head = await seal(3);

		const mid = await killMidCatchUp(chain(), "ton-b", head, { WATCHER_MAX_RANGE: "1" });
		expect(mid).toBeLessThan(head);

		const third = watcher("ton-c", { WATCHER_MAX_RANGE: "3" });
		await creditedAll(chain(), targets, third);
		await expectCreditedOnce(chain(), targets, "0.1", true);
	}, 240_000);

	it("runs one leader among two watcher processes and fails over after a kill -9", async () => {
		await t.killAll();
		await leaderFailover(chain(), "ton", "0.1");
	}, 240_000);
});
