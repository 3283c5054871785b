/**
 * The fair share of watcher-evm's networks among its replicas (issue 23; docs/deployment.md "Load
 * sharing"), with real processes over NATS on one MySQL database: four EVM networks, each with
 * its own anvil (the chain ids of the four Sepolia test networks), payments in ETH made all along.
 *
 * 1. One watcher process: it leads all four networks.
 * 2. Two more start: within a bounded time each of the three leads between floor and ceil of
 *    4 / 3 (1 or 2), by hand-overs at step boundaries.
 * 3. kill -9 one replica: its networks are taken over once its leases run out, and the two left
 *    lead two each.
 * 4. SIGTERM one of them: the last one takes its networks at once (its released leases), not
 *    after WATCHER_LEASE_MS.
 * Every payment made meanwhile is credited exactly once; a poller of the lease rows records how
 * long each network was unled (printed: the numbers in docs/deployment.md). The only duration
 * asserted: a network handed over or given up at a graceful stop is never unled as long as a
 * lease (WATCHER_LEASE_MS, 30 s), which is what waiting for an expiry would take.
 *
 * MySQL only: several processes on one SQLite file is not a supported deployment.
 */
import { Op } from "sequelize";
import { systemClock } from "../../lib/clock";
import type { Anvil } from "../helpers/anvil";
import { FAIR_SHARE_NETWORKS as NETWORKS, fairShareRun, killBusiest, LeaseWatch, oneLeadsAll, Payer, scaleUpToThree, startFairShareAnvils, startReplica, stopOneGracefully, type Replica } from "../helpers/fair-share";
import { BACKEND, TestNode } from "../helpers/harness";
import type { NodeProcess } from "../helpers/node-process";
import { until } from "../helpers/until";
import { expectCreditedOnce, WatcherProcessChain } from "../helpers/watcher-processes";
import { createMerchant, Merchant, startPaymentsNode } from "../e2e/payments.helpers";
import { uniqueId } from "./cluster.helpers";

const NATS_URL = process.env.TEST_NATS_URL || "nats://127.0.0.1:4222";
const LEASE_MS = 30_000;

const describeMysql = BACKEND === "mysql" ? describe : describe.skip;
if (BACKEND !== "mysql") console.warn("watcher fair share: runs on the mysql project (several processes share one database)");

describeMysql("watcher-evm replicas share four networks fairly (processes over NATS)", () => {
	let anvils: Anvil[] = [];
	let node: TestNode;
	let merchant: Merchant;
	let watch: LeaseWatch;
	let payer: Payer;
	const procs = new Map<string, NodeProcess>();
	const output = () => [...procs].map(([name, p]) => `--- ${name} ---\n${p.output().slice(-4000)}`).join("\n");

	beforeAll(async () => {
		anvils = await startFairShareAnvils();
		const namespace = uniqueId("share");
		node = await startPaymentsNode({ env: { TRANSPORTER: NATS_URL, NAMESPACE: namespace }, clock: systemClock, nodeID: uniqueId("payments") });
		merchant = await createMerchant(node);
		watch = new LeaseWatch(node, NETWORKS.map(n => ({ leaseId: n.id, slug: n.slug })));
		watch.start();
		payer = new Payer(node, merchant, anvils);
	}, 180_000);

	afterAll(async () => {
		await payer?.stop();
		watch?.stop();
		await Promise.all([...procs.values()].map(p => p.kill()));
		await node?.stop();
		await Promise.all(anvils.map(a => a.stop()));
	});

	function watcher(name: string): Replica {
		const id = uniqueId(name);
		const rpc = Object.fromEntries(NETWORKS.map((n, i) => [n.env, anvils[i].url]));
		const proc = startReplica(node, id, "watcher-evm", {
			WATCHER_POLL_MS: "200",
			WATCHER_LEASE_MS: String(LEASE_MS),
			WATCHER_RECONCILE_MS: "0",
			...rpc,
		});
		procs.set(id, proc);
		return { id, proc };
	}

	/** Every payment made so far credited exactly once. */
	async function allCredited(): Promise<void> {
		const ids = payer.made().map(p => p.txId);
		await until(`${ids.length} payments credited`, async () => (await node.app.models.TransactionCredit.count({ where: { transactionId: { [Op.in]: ids } } })) >= ids.length, 180_000, output);
		const rows = await node.app.models.TransactionCredit.findAll({ where: { transactionId: { [Op.in]: ids } } });
		expect(rows).toHaveLength(ids.length);
		expect(new Set(rows.map(r => r.transactionId)).size).toBe(ids.length);
	}

	it("spreads, takes over after a kill -9, and hands over at a graceful stop; every payment credited once", async () => {
		const run = fairShareRun({ watch, payer, noun: "watcher", start: watcher, output });
		await oneLeadsAll(run, "fs-w1");
		// Two more replicas: the share is 2, and each ends with 1 or 2.
		await scaleUpToThree(run, ["fs-w2", "fs-w3"]);
		await allCredited();
		// kill -9 a replica that leads something: its leases run out, the two left take them and even out.
		await killBusiest(run);
		await allCredited();
		// SIGTERM one of the two: the last takes its networks at once.
		await stopOneGracefully(run);
		await allCredited();
		const { evenUp, evenKill, evenStop } = run.took;

		const [up, kill, graceful] = ["scale-up", "kill", "graceful"].map(phase => watch.phaseGaps(phase));
		const payments = payer.made();
		console.log(
			[
				`fair share: ${payments.length} payments, each credited once`,
				`scale-up 1 -> 3: even within ${evenUp} ms; ${up.gaps.length} hand-over(s), unled ${up.text}`,
				`kill -9: even within ${evenKill} ms; unled ${kill.text}`,
				`graceful stop: all led by the last within ${evenStop} ms; unled ${graceful.text}`,
			].join("\n"),
		);
		// A hand-over or a graceful stop never waits for a lease to run out (the replicas got their
		// networks by hand-overs: the first kept its leases alive all along; a gap under the 50 ms
		// sampling does not show).
		expect(up.worst).toBeLessThan(LEASE_MS);
		expect(graceful.worst).toBeLessThan(LEASE_MS);
		// Per network: each payment credited once with its amount, no chain event credited or stored twice.
		for (const n of NETWORKS) {
			const chain = { node, networkId: n.id } as WatcherProcessChain;
			await expectCreditedOnce(chain, payments.filter(p => p.network === n.slug), "0.01", true);
		}
	}, 900_000);
});
