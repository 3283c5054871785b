/**
 * The UTXO watcher as a real process on a shared MySQL database, on litecoind -regtest: kill -9
 * in the middle of a catch-up over blocks with payments, then a restart: every payment is
 * credited once, no block skipped, no transfer stored twice. (The lease and cursor are the
 * shared watcher code that test/cluster/watcher-failover.test.ts exercises with two EVM
 * watcher processes.)
 */
import { Op } from "sequelize";
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { BACKEND } from "../helpers/harness";
import { startLitecoind } from "../helpers/litecoind";
import { until } from "../helpers/until";
import { watcherProcessTest } from "../helpers/watcher-processes";

const NET = networkIdFor("litecoin-regtest");
const LTC = tokenIdFor("litecoin-regtest", "LTC");

const describeMysql = BACKEND === "mysql" ? describe : describe.skip;
if (BACKEND !== "mysql") console.warn("bitcoin watcher restart: runs on the mysql project (several processes share one database)");

describeMysql("UTXO watcher process: kill -9 mid catch-up, restart", () => {
	const t = watcherProcessTest({ service: "watcher-bitcoin", startChain: () => startLitecoind(), env: ltc => ({ RPC_URL_LITECOIN_REGTEST: ltc.rpcUrl, WATCHER_MAX_RANGE: "4" }) });
	const watcher = t.watcher;
	const cursor = () => t.node.app.models.ChainCursor.findByPk(NET);

	it("credits every payment once after a kill -9 in the middle of a catch-up", async () => {
		const first = watcher("btc-a");
		await until("watcher start", async () => (await cursor())?.blockNumber != null, 60_000, first.output);
		await first.kill();

		const { chainNode: ltc, node, merchant } = t;
		const targets: Array<{ txId: string; address: string }> = [];
		for (let i = 0; i < 8; i++) {
			const created = await node.http("POST", "/payment_intents", { key: merchant.sandboxKey, body: { amount: "0.1", currency: "ltc", payment_method_types: ["crypto"], tokenId: LTC, networkId: NET, return_url: "https://shop.example.com/r" } });
			const slug = created.body.paymentLink.link.split("/pay/")[1];
			const tx = (await node.http("POST", `/payments/links/${slug}/transactions`, { body: {} })).body;
			targets.push({ txId: tx.id, address: tx.depositAddress });
			await ltc.wallet("sendtoaddress", [tx.depositAddress, "0.1"]);
			await ltc.mine(5);
		}
		const head = await ltc.blockCount();

		// One block a step: the window below is 32 steps wide, not 8, so a probe on a busy machine
		// (the test process starved between two reads) does not miss it.
		const second = watcher("btc-b", { WATCHER_MAX_RANGE: "1" });
		const mid = await until(
			"part of the catch-up",
			async () => {
				const c = await cursor();
				return c && c.leaseOwner?.startsWith("btc-b") && c.blockNumber! > head - 40 && c.blockNumber! < head - 8 ? c.blockNumber : null;
			},
			60_000,
			second.output,
		);
		await second.kill();
		expect(mid).toBeLessThan(head);

		const third = watcher("btc-c");
		const credited = () => node.app.models.TransactionCredit.findAll({ where: { transactionId: { [Op.in]: targets.map(t => t.txId) } } });
		await until("all credited", async () => (await credited()).length === targets.length, 90_000, third.output);
		await new Promise(r => setTimeout(r, 1000));
		const rows = await credited();
		expect(rows).toHaveLength(targets.length);
		expect(new Set(rows.map(r => r.transactionId)).size).toBe(targets.length);
		const seen = await node.app.models.ChainTransfer.findAll({ where: { networkId: NET } });
		expect(seen.filter(s => s.status === "active")).toHaveLength(targets.length);
		expect(new Set(seen.map(s => `${s.txHash}:${s.logIndex}:${s.blockHash}`)).size).toBe(seen.length);
		await until("caught up", async () => (await cursor())!.blockNumber === head, 30_000);
	}, 240_000);
});
