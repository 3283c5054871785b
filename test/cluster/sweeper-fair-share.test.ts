/**
 * The fair share of sweeper-evm's networks among its replicas (issue 23; docs/deployment.md "Load
 * sharing"), with real sweeper processes over NATS on one MySQL database: four EVM networks, each
 * with its own anvil, paid in ETH all along by checkouts that the gateway node (in this process:
 * the API, the watcher and the withdrawals ledger) settles and the sweepers sweep.
 *
 * 1. One sweeper process: it leads the four sweep leases.
 * 2. Two more start: each of the three ends leading between floor and ceil of 4 / 3.
 * 3. kill -9 one: its networks are taken over once its leases run out; the two left lead two each.
 * 4. SIGTERM one of them: the last one takes its networks at once (released leases).
 * Each sweeper reaches each network's node through a proxy of its own, which records when it was
 * used: per network, the sweepers that used its node came one after another in the order they
 * held its lease (two sweeping one network at once would alternate more often than the lease
 * did). Every payment is swept exactly once (one sweep item, its sweep confirmed, one sweep per
 * deposit) and each network's ledger equals what its deposits still hold on chain.
 *
 * MySQL only: several processes on one SQLite file is not a supported deployment.
 */
import { Op } from "sequelize";
import { v5 as uuidv5 } from "uuid";
import { formatUnits, Wallet } from "ethers";
import { money } from "../../lib/money";
import { CATALOGUE_NAMESPACE } from "../../lib/networks/catalogue";
import type { Anvil } from "../helpers/anvil";
import { FAIR_SHARE_NETWORKS as NETWORKS, fairShareRun, killBusiest, LeaseWatch, oneLeadsAll, Payer, scaleUpToThree, startFairShareAnvils, startReplica, startSweepGateway, stopOneGracefully, type Replica } from "../helpers/fair-share";
import { BACKEND, TestNode } from "../helpers/harness";
import type { NodeProcess } from "../helpers/node-process";
import { startRpcProxy, RpcProxy } from "../helpers/rpc-proxy";
import { until } from "../helpers/until";
import type { Merchant } from "../e2e/payments.helpers";
import { uniqueId } from "./cluster.helpers";

const LEASE_MS = 15_000;
/** The sweep lease of each network (mixins/sweeper.mixin.ts: a row of its own beside the watcher's cursor). */
const LEASES = NETWORKS.map(n => ({ leaseId: uuidv5(`sweep:${n.id}`, CATALOGUE_NAMESPACE), slug: n.slug }));

const describeMysql = BACKEND === "mysql" ? describe : describe.skip;
if (BACKEND !== "mysql") console.warn("sweeper fair share: runs on the mysql project (several processes share one database)");

/** Consecutive duplicates dropped: [a, a, b, a] -> [a, b, a]. */
const runs = (ids: string[]) => ids.filter((id, i) => i === 0 || ids[i - 1] !== id);
/** `part` is `whole` with some entries left out. */
const isSubsequence = (part: string[], whole: string[]) => {
	let i = 0;
	for (const w of whole) if (i < part.length && part[i] === w) i++;
	return i === part.length;
};

describeMysql("sweeper-evm replicas share four networks fairly (processes over NATS)", () => {
	let anvils: Anvil[] = [];
	let node: TestNode;
	let merchant: Merchant;
	let watch: LeaseWatch;
	let payer: Payer;
	const destination = Wallet.createRandom().address;
	const procs = new Map<string, NodeProcess>();
	const proxies: RpcProxy[] = [];
	/** Per network slug: each request a sweeper sent its node, in the order they arrived. */
	const used = new Map<string, Array<{ at: number; sweeper: string; methods: string[] }>>(NETWORKS.map(n => [n.slug, []]));
	const output = () => [...procs].map(([name, p]) => `--- ${name} ---\n${p.output().slice(-4000)}`).join("\n");

	beforeAll(async () => {
		anvils = await startFairShareAnvils();
		// The gateway's side: API, pay pages, the watcher (straight to the anvils) and the withdrawals ledger.
		({ node, merchant } = await startSweepGateway(uniqueId("sweepshare"), NETWORKS, anvils, destination));
		watch = new LeaseWatch(node, LEASES);
		watch.start();
		payer = new Payer(node, merchant, anvils);
	}, 180_000);

	afterAll(async () => {
		await payer?.stop();
		watch?.stop();
		await Promise.all([...procs.values()].map(p => p.kill()));
		await node?.stop();
		await Promise.all(proxies.map(p => p.stop()));
		await Promise.all(anvils.map(a => a.stop()));
	});

	/** A sweeper process `name`, reaching each network's anvil through a recording proxy of its own. */
	async function sweeper(name: string): Promise<Replica> {
		const id = uniqueId(name);
		const rpc: Record<string, string> = {};
		for (const [i, n] of NETWORKS.entries()) {
			const proxy = await startRpcProxy(anvils[i].url, { onRequest: methods => used.get(n.slug)!.push({ at: Date.now(), sweeper: id, methods }) });
			proxies.push(proxy);
			rpc[n.env] = proxy.url;
		}
		const proc = startReplica(node, id, "sweeper-evm", {
			SWEEP_POLL_MS: "200",
			SWEEP_LEASE_MS: String(LEASE_MS),
			SWEEP_MIN_VALUE_MULTIPLE: "2",
			...rpc,
		});
		procs.set(id, proc);
		return { id, proc };
	}

	/** Waits until every payment made so far is in a confirmed sweep. */
	async function allSwept(): Promise<void> {
		const ids = payer.made().map(p => p.txId);
		await until(
			`${ids.length} payments swept`,
			async () => {
				const items = await node.app.models.SweepItem.findAll({ where: { transactionId: { [Op.in]: ids } }, attributes: ["sweepId"] });
				if (items.length < ids.length) return false;
				return (await node.app.models.Sweep.count({ where: { id: { [Op.in]: [...new Set(items.map(i => i.sweepId))] }, status: "confirmed" } })) === new Set(items.map(i => i.sweepId)).size;
			},
			240_000,
			() => `${JSON.stringify([...watch.counts()])}\n${output()}`,
		);
	}

	it("spreads the sweep leases, takes over after a kill -9 and at a graceful stop; one sweeper per network at a time; every payment swept once", async () => {
		const run = fairShareRun({ watch, payer, noun: "sweeper", start: sweeper, output });
		await oneLeadsAll(run, "sfs-s1");
		await allSwept();
		await scaleUpToThree(run, ["sfs-s2", "sfs-s3"]);
		await allSwept();
		// kill -9 the sweeper leading the most: its leases run out, the two left take them over.
		await killBusiest(run);
		await allSwept();
		// SIGTERM one of the two: the last takes its networks at once.
		await stopOneGracefully(run);
		await allSwept();
		const { evenUp, evenKill, evenStop } = run.took;

		const payments = payer.made();
		const [up, kill, graceful] = ["scale-up", "kill", "graceful"].map(phase => watch.phaseGaps(phase));
		console.log(
			[
				`sweeper fair share: ${payments.length} payments, each swept once`,
				`scale-up 1 -> 3: even within ${evenUp} ms; unled ${up.text}`,
				`kill -9: even within ${evenKill} ms; unled ${kill.text}`,
				`graceful stop: all led by the last within ${evenStop} ms; unled ${graceful.text}`,
				...NETWORKS.map(n => `${n.slug}: leases ${watch.history.get(LEASES.find(l => l.slug === n.slug)!.leaseId)!.join(" -> ")}; node used by ${runs(used.get(n.slug)!.map(u => u.sweeper)).join(" -> ")}`),
			].join("\n"),
		);
		// A hand-over or a graceful stop never waits for a lease to run out.
		expect(up.worst).toBeLessThan(LEASE_MS);
		expect(graceful.worst).toBeLessThan(LEASE_MS);

		for (const [i, n] of NETWORKS.entries()) {
			// One sweeper at a time: the sweepers that used the network's node, in order, each while it held the lease.
			const lease = LEASES[i].leaseId;
			const sweepers = runs(used.get(n.slug)!.map(u => u.sweeper));
			expect(sweepers.length).toBeGreaterThan(0);
			expect({ network: n.slug, sweepers, isSubsequence: isSubsequence(sweepers, watch.history.get(lease)!) }).toEqual({ network: n.slug, sweepers, isSubsequence: true });
			const mine = payments.filter(p => p.network === n.slug);
			// Swept once: one item per payment, one sweep per deposit, all confirmed, and the ledger holds
			// exactly what the deposits still hold on chain (a native sweep leaves a fee dust behind).
			const items = await node.app.models.SweepItem.findAll({ where: { transactionId: { [Op.in]: mine.map(p => p.txId) } } });
			expect(items).toHaveLength(mine.length);
			expect(new Set(items.map(it => it.transactionId)).size).toBe(mine.length);
			const sweeps = await node.app.models.Sweep.findAll({ where: { networkId: n.id } });
			expect(sweeps.map(s => s.status).filter(s => s !== "confirmed")).toEqual([]);
			expect(new Set(sweeps.map(s => s.fromAddress.toLowerCase())).size).toBe(sweeps.length);
			let left = 0n;
			for (const p of mine) left += await anvils[i].provider.getBalance(p.address);
			const ledger = (await node.broker.call("withdrawals.balance", { organizationId: merchant.sandbox.id, networkId: n.id, tokenId: n.eth })) as { balance: string };
			expect(money(ledger.balance).eq(money(formatUnits(left, 18)))).toBe(true);
		}
		// Across the networks the sweepers changed hands: the test exercised hand-overs, not one leader throughout.
		expect(NETWORKS.some(n => runs(used.get(n.slug)!.map(u => u.sweeper)).length > 1)).toBe(true);
	}, 900_000);
});
