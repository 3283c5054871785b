/**
 * kill -9 of the Solana sweeper process between sending and recording the outcome, on the
 * litesvm-backed Solana test node (test/helpers/solana-node.ts): the gateway, payments,
 * watcher-solana and the ledger run here, sweeper-solana in child processes sharing the MySQL
 * database. The sweep's transaction is signed, recorded and sent, the node accepts it and holds
 * it back (withheld, as a leader that has not included it yet); the process dies; the held
 * transaction then lands while no sweeper runs. The restarted sweeper finds it and records it
 * once: one signature for the funds, the deposit at 0, the ledger equal to the VM.
 */
import { Keypair, PublicKey, SystemProgram } from "@solana/web3.js";
import { money } from "../../lib/money";
import { BACKEND, TestNode } from "../helpers/harness";
import { startClusterProcess, NodeProcess } from "../helpers/node-process";
import type { SolanaNode } from "../helpers/solana-node";
import { solanaSweeperEnv, startSolanaSweeperNodes, stopSolanaSweeperNodes } from "../helpers/solana-sweeper-node";
import { until } from "../helpers/until";
import { IDS, openCheckout, sandboxMerchant } from "../e2e/payments.helpers";

const NET = IDS.solanaDevnet;
const SOL = IDS.solanaDevnetSol;
const FEE = 5000n;

const describeMysql = BACKEND === "mysql" ? describe : describe.skip;
if (BACKEND !== "mysql") console.warn("Solana sweeper crash: runs on the mysql project (several processes share one database)");

describeMysql("Solana sweeper process killed -9 between sending and recording the outcome", () => {
	let sol: SolanaNode;
	let node: TestNode;
	let payer: Keypair;
	let sweeperKey: Keypair;
	const procs: NodeProcess[] = [];

	beforeAll(async () => {
		// The sweeper is not here: it runs in the child processes.
		({ sol, node, payer, sweeper: sweeperKey } = await startSolanaSweeperNodes({}, { sweeper: false }));
	}, 180_000);

	afterAll(async () => {
		await Promise.all(procs.map(p => p.kill()));
		await stopSolanaSweeperNodes({ sol, node });
	});

	const sweeper = (name: string) => {
		const p = startClusterProcess(node, name, ["networks", "transactions", "withdrawals", "sweeper-solana"], solanaSweeperEnv(sol, sweeperKey, { SWEEP_LEASE_MS: "2000" }));
		procs.push(p);
		return p;
	};
	const sweepsOf = async (depositAddress: string) => {
		const items = await node.app.models.SweepItem.findAll({ where: { depositAddress } });
		return node.app.models.Sweep.findAll({ where: { id: items.map(i => i.sweepId) } });
	};

	it("the transaction that landed while the sweeper was dead is found by the restarted one and recorded once; never a second signature", async () => {
		const { user, key } = await sandboxMerchant(node);
		const c = await openCheckout(node, key, { amount: "0.4", currency: "sol", tokenId: SOL, networkId: NET });
		await sol.send([SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: new PublicKey(c.address), lamports: 400_000_000n })], [payer]);
		await until("settled", async () => (await node.http("GET", `/payments/transactions/${c.txId}`)).body.status === "completed", 60_000);
		const destination = Keypair.generate().publicKey.toBase58();
		expect((await node.http("PUT", "/withdrawals/settings", { token: user.token, body: { addresses: { solana: destination } } })).status).toBe(200);

		// Accepted, held back: the process records it sent and keeps asking for it.
		await sol.sendMode("withhold");
		const first = sweeper("sweeper-sol-a");
		const sent = await until("sweep sent and recorded", async () => (await sweepsOf(c.address)).find(s => s.status === "broadcast"), 90_000, first.output);
		await first.kill();
		expect(new Set(await sol.withheld())).toEqual(new Set([sent.txHash]));
		// It lands while no sweeper runs.
		expect(await sol.releaseWithheld()).toEqual([sent.txHash]);
		await sol.sendMode("normal");
		await until("finalized", async () => (await sol.status(sent.txHash!))?.confirmationStatus === "finalized", 30_000);

		const second = sweeper("sweeper-sol-b");
		const done = await until("sweep confirmed", async () => node.app.models.Sweep.findOne({ where: { id: sent.id, status: "confirmed" } }), 90_000, second.output);
		await new Promise(r => setTimeout(r, 1500));
		await second.stop();

		expect(done.hashes).toEqual([sent.txHash]);
		expect(await sweepsOf(c.address)).toHaveLength(1);
		expect(await sol.balance(new PublicKey(c.address), "finalized")).toBe(0n);
		expect(await sol.balance(new PublicKey(destination), "finalized")).toBe(400_000_000n - FEE);
		const ledger = (await node.broker.call("withdrawals.balance", { organizationId: user.sandbox.id, networkId: NET, tokenId: SOL })) as { balance: string };
		expect(money(ledger.balance).isZero()).toBe(true);
	}, 300_000);
});
