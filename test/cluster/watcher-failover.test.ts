/**
 * The EVM watcher as real processes on a shared MySQL database (several processes on one SQLite
 * file is not a supported deployment): kill -9 in the middle of a catch-up and restart (no gap,
 * no duplicate), and two watcher processes for one network (one leader; kill -9 it and the other
 * takes over within 15 s; every payment credited exactly once).
 */
import { Contract, parseUnits } from "ethers";
import { Op } from "sequelize";
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { deployTestUsdc, startAnvil, Anvil } from "../helpers/anvil";
import { until } from "../helpers/until";
import { BACKEND, TestNode } from "../helpers/harness";
import { watcherProcessTest } from "../helpers/watcher-processes";
import type { Merchant } from "../e2e/payments.helpers";

const NET = networkIdFor("anvil-local");
const USDC = tokenIdFor("anvil-local", "USDC");

const describeMysql = BACKEND === "mysql" ? describe : describe.skip;
if (BACKEND !== "mysql") console.warn("watcher failover: runs on the mysql project (several processes share one database)");

describeMysql("EVM watcher processes: kill -9, restart, failover", () => {
	let anvil: Anvil;
	let node: TestNode;
	let merchant: Merchant;
	let token: Contract;
	// The gateway and payments services in this process; the watchers in child processes.
	const t = watcherProcessTest({
		service: "watcher-evm",
		startChain: async () => {
			anvil = await startAnvil();
			token = await deployTestUsdc(anvil, [1]);
			return anvil;
		},
		nodeEnv: async () => ({ TEST_USDC_ADDRESS: await token.getAddress() }),
		env: (chain, n) => ({ RPC_URL_ANVIL_LOCAL: chain.url, TEST_USDC_ADDRESS: n.config.testUsdcAddress ?? "", WATCHER_LEASE_MS: "5000", WATCHER_RECONCILE_MS: "0" }),
	});
	beforeAll(() => {
		({ node, merchant } = t);
	});
	const watcherProcess = t.watcher;

	async function checkouts(n: number): Promise<Array<{ txId: string; address: string }>> {
		const out = [];
		for (let i = 0; i < n; i++) {
			const created = await node.http("POST", "/payment_intents", {
				key: merchant.sandboxKey,
				body: { amount: "1", currency: "usdc", payment_method_types: ["crypto"], tokenId: USDC, networkId: NET, return_url: "https://shop.example.com/r" },
			});
			expect(created.status).toBe(200);
			const slug = created.body.paymentLink.link.split("/pay/")[1];
			const tx = await node.http("POST", `/payments/links/${slug}/transactions`, { body: {} });
			expect(tx.status).toBe(201);
			out.push({ txId: tx.body.id, address: tx.body.depositAddress });
		}
		return out;
	}

	/** Pays each checkout 1 USDC, one payment every `spacing` blocks. */
	async function pay(targets: Array<{ address: string }>, spacing: number): Promise<void> {
		const signer = token.connect(anvil.accounts[1]) as Contract;
		for (const t of targets) {
			await signer.transfer(t.address, parseUnits("1", 6));
			await anvil.mine(spacing);
		}
	}

	const creditsOf = async (txIds: string[]) => node.app.models.TransactionCredit.findAll({ where: { transactionId: { [Op.in]: txIds } } });
	const cursor = () => node.app.models.ChainCursor.findByPk(NET);

	it("catches up after kill -9 mid-range: no gap, no duplicate", async () => {
		const first = watcherProcess("w-a", { WATCHER_MAX_RANGE: "5" });
		await until("watcher start", async () => (await cursor())?.blockNumber != null, 60_000, first.output);
		await first.kill();
		const targets = await checkouts(12);
		await pay(targets, 10); // ~120 blocks while nobody watches
		const head = await anvil.blockNumber();

		const second = watcherProcess("w-b", { WATCHER_MAX_RANGE: "5", WATCHER_LEASE_MS: "2000" });
		// Killed after some ranges, well before the head.
		const mid = await until("part of the catch-up", async () => {
			const c = await cursor();
			return c && c.leaseOwner?.startsWith("w-b") && c.blockNumber! > head - 100 && c.blockNumber! < head - 20 ? c.blockNumber : null;
		}, 60_000, second.output);
		await second.kill();
		expect(mid).toBeLessThan(head);

		watcherProcess("w-c", { WATCHER_MAX_RANGE: "5", WATCHER_LEASE_MS: "2000" });
		await until("all credited", async () => (await creditsOf(targets.map(t => t.txId))).length === targets.length, 90_000);
		await new Promise(r => setTimeout(r, 1000));
		const rows = await creditsOf(targets.map(t => t.txId));
		expect(rows).toHaveLength(targets.length);
		expect(new Set(rows.map(r => r.transactionId)).size).toBe(targets.length);
		const seen = await node.app.models.ChainTransfer.findAll({ where: { networkId: NET } });
		expect(seen.filter(s => s.status === "active")).toHaveLength(targets.length);
		expect(new Set(seen.map(s => `${s.txHash}:${s.logIndex}:${s.blockHash}`)).size).toBe(seen.length);
	}, 240_000);

	it("runs one leader among two watcher processes and fails over within 15 s of a kill -9", async () => {
		await t.killAll();
		const a = watcherProcess("w-x");
		const b = watcherProcess("w-y");
		const led = await until("a leader", async () => {
			const c = await cursor();
			return c?.leaseOwner && (c.leaseOwner.startsWith("w-x") || c.leaseOwner.startsWith("w-y")) ? c.leaseOwner : null;
		}, 60_000, () => a.output() + b.output());
		const batch1 = await checkouts(4);
		await pay(batch1, 2);
		await anvil.mine(2);
		await until("batch 1 credited", async () => (await creditsOf(batch1.map(t => t.txId))).length === batch1.length, 60_000);

		const [leader, standby] = led.startsWith("w-x") ? [a, b] : [b, a];
		await leader.kill();
		const next = await until("failover", async () => {
			const c = await cursor();
			return c?.leaseOwner && !c.leaseOwner.startsWith(led.split(":")[0]) ? c.leaseOwner : null;
		}, 30_000, standby.output);
		expect(next).not.toBe(led);

		const batch2 = await checkouts(4);
		await pay(batch2, 2);
		await anvil.mine(2);
		const all = [...batch1, ...batch2];
		await until("batch 2 credited", async () => (await creditsOf(all.map(t => t.txId))).length === all.length, 60_000, standby.output);
		await new Promise(r => setTimeout(r, 1000));
		const rows = await creditsOf(all.map(t => t.txId));
		expect(rows).toHaveLength(all.length);
		expect(new Set(rows.map(r => r.transactionId)).size).toBe(all.length);
	}, 240_000);
});
