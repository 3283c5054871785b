/**
 * kill -9 of the TON sweeper process at its worst moments, on the TON test node (test/helpers/
 * ton-node.ts: @ton/sandbox behind our toncenter v3 facade, served from this test's process to the
 * sweeper's): the gateway, payments, watcher-ton and the ledger run here, sweeper-ton in child
 * processes sharing the MySQL database.
 * - TON: the sweep's message is signed, recorded and sent, but the node drops it (answered, never
 *   run) and the process dies; the restarted sweeper sends the very same bytes, which land once.
 * - USDT: the jetton sweep's message is sent and executed, but its blocks are held from the API
 *   (the process never sees it land) and the process dies; the restarted sweeper finds it landed
 *   and records it once, never signing a second message.
 * Each ends with one signed message for the funds, one transaction of the deposit's on the
 * emulator, and the merchant's ledger equal to what the emulator holds.
 */
import { Address, toNano } from "@ton/core";
import { fromBaseUnits, money } from "../../lib/money";
import { signedOf } from "../../lib/chains/ton/sweep-runner";
import { BACKEND, TestNode } from "../helpers/harness";
import { startClusterProcess, NodeProcess } from "../helpers/node-process";
import { rawAddress } from "../helpers/ton-facade";
import { startTonSweeperChain, tonLedger, tonMerchant, TON_NET, TON_TOKEN, USDT_TOKEN, type TonMerchant, type TonSweeperChain } from "../helpers/ton-sweeper-node";
import { until } from "../helpers/until";
import { openCheckout, startPaymentsNode, PAYMENTS_SERVICES, type OpenedCheckout } from "../e2e/payments.helpers";

const describeMysql = BACKEND === "mysql" ? describe : describe.skip;
if (BACKEND !== "mysql") console.warn("TON sweeper crash: runs on the mysql project (several processes share one database)");

describeMysql("TON sweeper process killed -9 between sending and recording the outcome", () => {
	let chain: TonSweeperChain;
	let node: TestNode;
	let merchant: TonMerchant & { withdrawTo(): Promise<void> };
	const procs: NodeProcess[] = [];

	beforeAll(async () => {
		chain = await startTonSweeperChain();
		// The sweeper is not here: it runs in the child processes.
		node = await startPaymentsNode({ services: [...PAYMENTS_SERVICES, "watcher-ton", "withdrawals"], env: chain.env() });
		merchant = await tonMerchant(node, chain.ton);
		await merchant.withdrawTo();
	}, 180_000);

	afterAll(async () => {
		await Promise.all(procs.map(p => p.kill()));
		await node?.stop();
		chain?.ton.autoSeal(null);
		await chain?.ton.stop();
	});

	// A signed message stays valid 5 minutes: none expires while the test holds it back.
	const sweeper = (name: string, extra: Record<string, string> = {}) => {
		const p = startClusterProcess(node, name, ["networks", "transactions", "withdrawals", "sweeper-ton"], chain.env({ SWEEP_LEASE_MS: "2000", SWEEP_TON_VALID_SEC: "300", ...extra }));
		procs.push(p);
		return p;
	};

	const paid = async (c: OpenedCheckout) => until("settled", async () => (await node.http("GET", `/payments/transactions/${c.txId}`)).body.status === "completed", 60_000);
	const sweepsOf = async (depositAddress: string, kind: string) => {
		const items = await node.app.models.SweepItem.findAll({ where: { depositAddress } });
		return node.app.models.Sweep.findAll({ where: { id: items.map(i => i.sweepId), kind } });
	};
	/** Every external message posted to the node for `address`. */
	const postedTo = (address: Address) => chain.ton.facade.posted.filter(m => m.to === rawAddress(address));
	/** The emulator's transactions of `address` started by an external message (a message it signed). */
	const signedTxsOf = (address: Address) => chain.ton.facade.sealedTransactions().filter(t => t.account === rawAddress(address) && (t.json.in_msg as { source: string | null }).source === null);

	it("TON: a sent message the node dropped is sent again, the same bytes, after the restart; swept once", async () => {
		const { ton } = chain;
		const c = await openCheckout(node, merchant.key, { amount: "2", currency: "ton", tokenId: TON_TOKEN, networkId: TON_NET });
		const deposit = Address.parse(c.address);
		await ton.pay(chain.payer, c.address, toNano("2"));
		await paid(c);
		// Answered, never run: lost between the API and the validators.
		ton.setExternals("drop");
		const first = sweeper("sweeper-ton-a");
		const sent = await until("sweep sent and recorded, then sent again", async () => {
			const [s] = await sweepsOf(c.address, "native");
			return s?.status === "broadcast" && postedTo(deposit).length >= 2 ? s : null;
		}, 90_000, first.output);
		await first.kill();
		const before = postedTo(deposit).length;
		expect(ton.status(deposit)).toBe("uninit");
		expect(ton.balance(deposit)).toBe(toNano("2"));

		ton.setExternals("execute");
		const second = sweeper("sweeper-ton-b");
		const done = await until("sweep confirmed", async () => node.app.models.Sweep.findOne({ where: { id: sent.id, status: "confirmed" } }), 90_000, second.output);
		await new Promise(r => setTimeout(r, 1500));
		await second.stop();

		// One signed message for those funds, sent by both processes, byte for byte.
		const posted = postedTo(deposit);
		expect(posted.length).toBeGreaterThan(before);
		expect(new Set(posted.map(m => m.boc))).toEqual(new Set([signedOf(sent)!.boc]));
		expect(new Set(posted.map(m => Buffer.from(m.norm, "base64").toString("hex")))).toEqual(new Set([sent.txHash]));
		expect(done.hashes).toEqual([sent.txHash]);
		expect(await sweepsOf(c.address, "native")).toHaveLength(1);
		expect(signedTxsOf(deposit)).toHaveLength(1);
		// Swept once: the deposit destroyed at 0, the ledger equal to it.
		expect(ton.status(deposit)).toBe("nonexist");
		expect((await tonLedger(node, merchant.user.live.id, TON_TOKEN)).isZero()).toBe(true);
		const entries = await node.app.models.LedgerEntry.findAll({ where: { organizationId: merchant.user.live.id, networkId: TON_NET, tokenId: TON_TOKEN } });
		expect(entries.map(e => e.kind).sort()).toEqual(["credit", "fee", "sweep"]);
		expect(money(entries.find(e => e.kind === "fee")!.amount).neg().eq(money(fromBaseUnits(BigInt(done.feePaid!), 9)))).toBe(true);
	}, 240_000);

	it("USDT: a jetton sweep that landed while its blocks were held from the API is found after the restart and recorded once", async () => {
		const { ton, usdt } = chain;
		const c = await openCheckout(node, merchant.key, { amount: "12.5", currency: "usdt", tokenId: USDT_TOKEN, networkId: TON_NET });
		const deposit = Address.parse(c.address);
		await ton.jettonTransfer(chain.payer, usdt, deposit, 12_500_000n);
		await paid(c);
		const merchantBefore = await ton.jettonBalance(usdt, merchant.wallet.address);
		// Steps 1.5 s apart: the test holds the blocks between the jetton sweep's planning and its sending.
		const first = sweeper("sweeper-ton-c", { SWEEP_POLL_MS: "1500", SWEEP_LEASE_MS: "6000" });
		await until("jetton sweep planned after the top-up", async () => (await sweepsOf(c.address, "token")).length > 0, 90_000, first.output);
		ton.facade.hold();
		const sent = await until("jetton sweep sent and recorded", async () => {
			const [s] = await sweepsOf(c.address, "token");
			return s.status === "broadcast" ? s : null;
		}, 60_000, first.output);
		// It ran on the emulator (the deposit's jettons left), in blocks the API does not show yet.
		await until("executed", async () => (await ton.jettonBalance(usdt, deposit)) === 0n, 30_000);
		expect(ton.facade.heldCount()).toBeGreaterThan(0);
		await first.kill();
		expect((await node.app.models.Sweep.findByPk(sent.id))!.status).toBe("broadcast");
		await ton.facade.release(20);

		const second = sweeper("sweeper-ton-d");
		const done = await until("jetton sweep confirmed", async () => node.app.models.Sweep.findOne({ where: { id: sent.id, status: "confirmed" } }), 90_000, second.output);
		await new Promise(r => setTimeout(r, 1500));
		await second.stop();

		// One signed message for those jettons (any re-send was the same bytes), one transaction of the deposit's.
		expect(new Set(postedTo(deposit).map(m => m.boc))).toEqual(new Set([signedOf(sent)!.boc]));
		expect(done.hashes).toEqual([sent.txHash]);
		expect(await sweepsOf(c.address, "token")).toHaveLength(1);
		expect(signedTxsOf(deposit)).toHaveLength(1);
		// Swept once: the merchant's jetton wallet got the 12.5 USDT once; the ledger equals the deposit's 0.
		expect((await ton.jettonBalance(usdt, merchant.wallet.address)) - merchantBefore).toBe(12_500_000n);
		expect(await ton.jettonBalance(usdt, deposit)).toBe(0n);
		expect((await tonLedger(node, merchant.user.live.id, USDT_TOKEN)).isZero()).toBe(true);
		const entries = await node.app.models.LedgerEntry.findAll({ where: { organizationId: merchant.user.live.id, networkId: TON_NET, tokenId: USDT_TOKEN } });
		expect(entries.map(e => [e.kind, e.amount]).sort()).toEqual([["credit", "12.5"], ["sweep", "-12.5"]]);
	}, 300_000);
});
