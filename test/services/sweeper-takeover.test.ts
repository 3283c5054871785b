/**
 * A sweeper takes the network a stopping replica releases at once, not when its own round reaches
 * it (docs/deployment.md "Load sharing", the sweepers' paragraph). Two sweeper-evm nodes over NATS on
 * one database, two EVM networks (an anvil each), each sweeper reaching each node through a proxy of
 * its own; the gateway node (API, watcher, withdrawals ledger) in this process too. The surviving
 * sweeper's round is held in its step of network A (its proxy holds the answer to eth_getBalance of
 * a deposit it plans to sweep); the other sweeper, leading B, stops gracefully; the survivor leads B
 * while that step is still held, and steps B only after it (one step at a time). Then the gate opens
 * and both payments are swept exactly once.
 */
import { Op } from "sequelize";
import { v5 as uuidv5 } from "uuid";
import { formatUnits, parseEther, Wallet } from "ethers";
import { systemClock } from "../../lib/clock";
import { money } from "../../lib/money";
import { CATALOGUE_NAMESPACE } from "../../lib/networks/catalogue";
import { startAnvil, type Anvil } from "../helpers/anvil";
import { FAIR_SHARE_NETWORKS, startSweepGateway } from "../helpers/fair-share";
import { startNode, type LogLine, type TestNode } from "../helpers/harness";
import { startRpcProxy, type RpcProxy } from "../helpers/rpc-proxy";
import { until } from "../helpers/until";
import { type Merchant, openCheckout } from "../e2e/payments.helpers";
import { uniqueId } from "../cluster/cluster.helpers";

const NATS_URL = process.env.TEST_NATS_URL || "nats://127.0.0.1:4222";
const NETWORKS = FAIR_SHARE_NETWORKS.slice(0, 2).map(n => ({ ...n, leaseId: uuidv5(`sweep:${n.id}`, CATALOGUE_NAMESPACE) }));

interface Sweeper {
	node: TestNode;
	/** Per network slug: this sweeper's proxy to its anvil. */
	proxies: Map<string, RpcProxy>;
	logs: LogLine[];
}

describe("a sweeper takes a network released at a graceful stop while its round steps another", () => {
	const anvils: Anvil[] = [];
	let gateway: TestNode;
	let merchant: Merchant;
	const sweepers: Sweeper[] = [];
	const destination = Wallet.createRandom().address;
	let namespace: string;

	beforeAll(async () => {
		for (const n of NETWORKS) anvils.push(await startAnvil({ chainId: n.chainId, blockTime: 1 }));
		namespace = uniqueId("takeover");
		({ node: gateway, merchant } = await startSweepGateway(namespace, NETWORKS, anvils, destination));
	}, 120_000);

	afterAll(async () => {
		// The proxies first: a call still held at the gate (a failed run) fails, and its step ends.
		await Promise.all(sweepers.flatMap(s => [...s.proxies.values()].map(p => p.stop())));
		for (const s of sweepers.reverse()) await s.node.stop().catch(() => undefined);
		await gateway?.stop();
		await Promise.all(anvils.map(a => a.stop()));
	}, 120_000);

	async function startSweeper(name: string): Promise<Sweeper> {
		const proxies = new Map<string, RpcProxy>();
		for (const [i, n] of NETWORKS.entries()) proxies.set(n.slug, await startRpcProxy(anvils[i].url));
		const logs: LogLine[] = [];
		const node = await startNode({
			services: ["sweeper-evm"],
			shareWith: gateway,
			clock: systemClock,
			nodeID: uniqueId(name),
			logs,
			env: {
				TRANSPORTER: NATS_URL,
				NAMESPACE: namespace,
				SWEEP_POLL_MS: "200",
				SWEEP_LEASE_MS: "15000",
				// The held call must outlast the test's wait for the take (a timed out call would end the step).
				SWEEP_RPC_TIMEOUT_MS: "120000",
				SWEEP_MIN_VALUE_MULTIPLE: "2",
				WATCHER_REBALANCE_MS: "500",
				WATCHER_TAKE_DEFER_MS: "2000",
				...Object.fromEntries(NETWORKS.map(n => [n.env, proxies.get(n.slug)!.url])),
			},
		});
		const sweeper = { node, proxies, logs };
		sweepers.push(sweeper);
		return sweeper;
	}

	/** The node id leading each network's sweep lease (null: unled). */
	async function leaders(): Promise<Map<string, string | null>> {
		const rows = await gateway.app.models.ChainCursor.findAll({ where: { networkId: { [Op.in]: NETWORKS.map(n => n.leaseId) } } });
		const now = Date.now();
		return new Map(NETWORKS.map(n => {
			const row = rows.find(r => r.networkId === n.leaseId);
			return [n.slug, row?.leaseOwner && row.leaseUntil && row.leaseUntil.getTime() >= now ? row.leaseOwner.split(":")[0] : null];
		}));
	}

	async function pay(i: number): Promise<{ txId: string; address: string; network: (typeof NETWORKS)[number] }> {
		const n = NETWORKS[i];
		const c = await openCheckout(gateway, merchant.sandboxKey, { amount: "0.01", currency: "eth", tokenId: n.eth, networkId: n.id });
		await (await anvils[i].accounts[1].sendTransaction({ to: c.address, value: parseEther("0.01") })).wait();
		return { txId: c.txId, address: c.address, network: n };
	}

	it("leads the released network while its step of another is held, steps it after, and sweeps every payment once", async () => {
		const t = await startSweeper("takeover-t");
		await until("the first sweeper leading both networks", async () => [...(await leaders()).values()].every(l => l === t.node.broker.nodeID), 60_000);
		const s = await startSweeper("takeover-s");
		const one = await until(
			"each sweeper leading one network (a hand-over)",
			async () => {
				const led = await leaders();
				const mine = NETWORKS.findIndex(n => led.get(n.slug) === s.node.broker.nodeID);
				return mine >= 0 && led.get(NETWORKS[1 - mine].slug) === t.node.broker.nodeID ? { a: mine } : null;
			},
			60_000,
		);
		const a = NETWORKS[one.a];
		const b = NETWORKS[1 - one.a];

		// The survivor's step of A plans a sweep of this payment and waits at the gate: the balance of the deposit.
		const gate = s.proxies.get(a.slug)!;
		gate.swallowAnswers("eth_getBalance");
		const paidA = await pay(one.a);
		await until("the survivor's step of A held at the gate", () => gate.heldCount() > 0, 90_000);

		await t.node.stop();
		await until("B led by the survivor", async () => (await leaders()).get(b.slug) === s.node.broker.nodeID, 30_000, () => s.logs.map(l => l.text).join("\n"));
		// ... while its round was still in that step: the gate holds the answer and the step has not failed.
		expect(gate.heldCount()).toBeGreaterThan(0);
		expect(s.logs.filter(l => l.text.includes(`step failed on ${a.slug}`)).map(l => l.text)).toEqual([]);

		// A payment on B, settled meanwhile: the survivor does not step B beside its step of A.
		const paidB = await pay(1 - one.a);
		const stepsOfB = s.proxies.get(b.slug)!.requests();
		await until("B's payment settled", async () => (await gateway.http("GET", `/payments/transactions/${paidB.txId}`)).body.status === "completed", 60_000);
		expect(s.proxies.get(b.slug)!.requests()).toBe(stepsOfB);
		expect(gate.heldCount()).toBeGreaterThan(0);

		gate.swallowAnswers(null);
		gate.releaseHeld();
		const payments = [paidA, paidB];
		await until(
			"both payments in confirmed sweeps",
			async () => {
				const items = await gateway.app.models.SweepItem.findAll({ where: { transactionId: { [Op.in]: payments.map(p => p.txId) } } });
				if (items.length < payments.length) return false;
				return (await gateway.app.models.Sweep.count({ where: { id: { [Op.in]: items.map(i => i.sweepId) }, status: "confirmed" } })) === new Set(items.map(i => i.sweepId)).size;
			},
			120_000,
		);
		// Swept by the survivor, once: one item per payment, one sweep per deposit, the ledger equal to what the deposits hold.
		expect(s.proxies.get(b.slug)!.calls("eth_sendRawTransaction")).toBeGreaterThan(0);
		for (const p of payments) {
			expect(await gateway.app.models.SweepItem.count({ where: { transactionId: p.txId } })).toBe(1);
			const sweeps = await gateway.app.models.Sweep.findAll({ where: { networkId: p.network.id } });
			expect(sweeps.map(x => x.status)).toEqual(["confirmed"]);
			expect(sweeps[0].fromAddress.toLowerCase()).toBe(p.address.toLowerCase());
			const left = formatUnits(await anvils[NETWORKS.indexOf(p.network)].provider.getBalance(p.address), 18);
			const ledger = async () => ((await gateway.broker.call("withdrawals.balance", { organizationId: merchant.sandbox.id, networkId: p.network.id, tokenId: p.network.eth })) as { balance: string }).balance;
			await until(`the ledger of ${p.network.slug} equal to what its deposit holds (${left})`, async () => money(await ledger()).eq(money(left)));
		}
	}, 600_000);
});
