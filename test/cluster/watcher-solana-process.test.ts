/**
 * The Solana watcher as real processes on a shared MySQL database, on the Solana test node
 * (test/helpers/solana-node.ts: litesvm behind a JSON-RPC facade; the finalized head trails the
 * confirmed one by 2 blocks): kill -9 in the middle of a catch-up over slots with payments and
 * skipped slots, then a restart (every payment credited once, no transfer stored twice); and two
 * watcher processes for the network (one leader; kill -9 it and the other takes over; every
 * payment credited exactly once).
 */
import { PublicKey } from "@solana/web3.js";
import { Op } from "sequelize";
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { BACKEND, TestNode } from "../helpers/harness";
import { startNodeProcess, NodeProcess } from "../helpers/node-process";
import { startSolanaNode, type SolanaNode } from "../helpers/solana-node";
import { until } from "../helpers/until";
import { createMerchant, startPaymentsNode, Merchant } from "../e2e/payments.helpers";

const NET = networkIdFor("solana-devnet");
const SOL = tokenIdFor("solana-devnet", "SOL");

const describeMysql = BACKEND === "mysql" ? describe : describe.skip;
if (BACKEND !== "mysql") console.warn("solana watcher processes: run on the mysql project (several processes share one database)");

describeMysql("Solana watcher processes: kill -9 mid catch-up, restart, failover", () => {
	let sol: SolanaNode;
	let node: TestNode;
	let merchant: Merchant;
	const procs: NodeProcess[] = [];

	beforeAll(async () => {
		sol = await startSolanaNode();
		await sol.produceBlocks(3);
		node = await startPaymentsNode();
		merchant = await createMerchant(node);
	}, 120_000);

	afterAll(async () => {
		await Promise.all(procs.map(p => p.kill()));
		await node?.stop();
		await sol?.stop();
	});

	const watcher = (name: string, extra: Record<string, string> = {}) => {
		const p = startNodeProcess({
			DATABASE_URL: node.config.databaseUrl,
			DATA_DIR: node.dataDir,
			SERVICES: "networks,transactions,watcher-solana",
			NODE_ID: name,
			RPC_URL_SOLANA_DEVNET: sol.url,
			WATCHER_POLL_MS: "100",
			WATCHER_LEASE_MS: "2000",
			...extra,
		});
		procs.push(p);
		return p;
	};
	const cursor = () => node.app.models.ChainCursor.findByPk(NET);
	const creditsOf = (txIds: string[]) => node.app.models.TransactionCredit.findAll({ where: { transactionId: { [Op.in]: txIds } } });

	async function checkout(): Promise<{ txId: string; address: string }> {
		const created = await node.http("POST", "/payment_intents", { key: merchant.sandboxKey, body: { amount: "0.1", currency: "sol", payment_method_types: ["crypto"], tokenId: SOL, networkId: NET, return_url: "https://shop.example.com/r" } });
		expect(created.status).toBe(200);
		const slug = created.body.paymentLink.link.split("/pay/")[1];
		const tx = await node.http("POST", `/payments/links/${slug}/transactions`, { body: {} });
		expect(tx.status).toBe(201);
		return { txId: tx.body.id, address: tx.body.depositAddress };
	}

	it("credits every payment once after a kill -9 in the middle of a catch-up", async () => {
		const first = watcher("sol-a");
		await until("watcher start", async () => (await cursor())?.blockNumber != null, 60_000, first.output);
		await first.kill();

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

		const second = watcher("sol-b", { WATCHER_MAX_RANGE: "3" });
		const mid = await until(
			"part of the catch-up",
			async () => {
				const c = await cursor();
				return c && c.leaseOwner?.startsWith("sol-b") && c.blockNumber! > head - 45 && c.blockNumber! < head - 8 ? c.blockNumber : null;
			},
			60_000,
			second.output,
		);
		await second.kill();
		expect(mid).toBeLessThan(head);

		const third = watcher("sol-c", { WATCHER_MAX_RANGE: "3" });
		await until("all credited", async () => (await creditsOf(targets.map(t => t.txId))).length === targets.length, 90_000, third.output);
		await new Promise(r => setTimeout(r, 1000));
		const rows = await creditsOf(targets.map(t => t.txId));
		expect(rows).toHaveLength(targets.length);
		expect(new Set(rows.map(r => r.transactionId)).size).toBe(targets.length);
		expect(rows.every(r => r.amount === "0.1")).toBe(true);
		const seen = await node.app.models.ChainTransfer.findAll({ where: { networkId: NET } });
		expect(seen.filter(s => s.status === "active")).toHaveLength(targets.length);
		expect(new Set(seen.map(s => `${s.txHash}:${s.logIndex}:${s.blockHash}`)).size).toBe(seen.length);
	}, 240_000);

	it("runs one leader among two watcher processes and fails over after a kill -9", async () => {
		await Promise.all(procs.map(p => p.kill()));
		const a = watcher("sol-x");
		const b = watcher("sol-y");
		const led = await until(
			"a leader",
			async () => {
				const c = await cursor();
				return c?.leaseOwner && (c.leaseOwner.startsWith("sol-x") || c.leaseOwner.startsWith("sol-y")) ? c.leaseOwner : null;
			},
			60_000,
			() => a.output() + b.output(),
		);
		const batch1 = [await checkout(), await checkout()];
		for (const t of batch1) await sol.airdrop(new PublicKey(t.address), 100_000_000n);
		await sol.produceBlocks(4);
		await until("batch 1 credited", async () => (await creditsOf(batch1.map(t => t.txId))).length === batch1.length, 60_000);

		const [leader, standby] = led.startsWith("sol-x") ? [a, b] : [b, a];
		await leader.kill();
		const next = await until(
			"failover",
			async () => {
				const c = await cursor();
				return c?.leaseOwner && !c.leaseOwner.startsWith(led.split(":")[0]) ? c.leaseOwner : null;
			},
			30_000,
			standby.output,
		);
		expect(next).not.toBe(led);

		const batch2 = [await checkout(), await checkout()];
		for (const t of batch2) await sol.airdrop(new PublicKey(t.address), 100_000_000n);
		await sol.produceBlocks(4);
		const all = [...batch1, ...batch2];
		await until("batch 2 credited", async () => (await creditsOf(all.map(t => t.txId))).length === all.length, 60_000, standby.output);
		await new Promise(r => setTimeout(r, 1000));
		const rows = await creditsOf(all.map(t => t.txId));
		expect(rows).toHaveLength(all.length);
		expect(new Set(rows.map(r => r.transactionId)).size).toBe(all.length);
	}, 240_000);
});
