/**
 * The Solana sweeper on the litesvm-backed test node (test/helpers/solana-node.ts: the Solana
 * runtime executes every signed transaction; slots, heads, expiry and the RPC shapes are the
 * facade's), with the payments services, watcher-solana (credits at finalized), withdrawals and
 * sweeper-solana on `solana-devnet`:
 * - SOL deposits swept to exactly 0 lamports; 20 USDC deposits swept by the sweeper wallet (fees,
 *   the destination's token account created, the deposits' token accounts closed, their rent back);
 *   a withdrawal request paid its exact amount; after each, the ledger equals what the VM holds;
 * - signed and recorded but never sent (the node refused it, then the sweeper was restarted): the
 *   same signature is sent, never a second transaction;
 * - a transaction the cluster never includes: not signed again while the finalized chain has not
 *   passed its lastValidBlockHeight (even long after the confirmed chain has), proven dead only then
 *   and signed again; one withheld while still valid and released later lands, and is never doubled;
 * - a runner whose lease was taken over writes nothing and sends nothing.
 */
import { Connection, Keypair, PublicKey, SystemProgram } from "@solana/web3.js";
import { createAssociatedTokenAccountIdempotentInstruction, createTransferCheckedInstruction, getAssociatedTokenAddressSync } from "@solana/spl-token";
import type { Service } from "moleculer";
import { v5 as uuidv5 } from "uuid";
import { chainParamsFor, codecFor } from "../../lib/chains";
import { SolanaSweepRunner } from "../../lib/chains/solana/sweep-runner";
import { TOKEN_ACCOUNT_RENT_EXEMPT } from "../../lib/chains/solana/sweep";
import { CATALOGUE_NAMESPACE, networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { money } from "../../lib/money";
import { availableServices, loadServiceSchema } from "../../lib/node";
import { hdSeed } from "../../lib/payments/store";
import { planSweep } from "../../lib/sweeps/store";
import type { SweepableCheckout } from "../../lib/sweeps/ports";
import { acquireLease, LeaseLostError, releaseLease } from "../../lib/watchers/store";
import { sweeperPorts } from "../../services/sweeper-evm.service";
import type { WatchableNetwork } from "../../services/networks.service";
import { liveSweepNetwork } from "../../mixins/sweeper.mixin";
import type { SolanaNode } from "../helpers/solana-node";
import { DEVNET_USDC_MINT, startSolanaSweeperNodes, stopSolanaSweeperNodes } from "../helpers/solana-sweeper-node";
import { until } from "../helpers/until";
import type { TestNode } from "../helpers/harness";
import type { UserWithToken } from "../helpers/users";
import { openCheckout, sandboxMerchant } from "../e2e/payments.helpers";

const NET = networkIdFor("solana-devnet");
const SOL = tokenIdFor("solana-devnet", "SOL");
const USDC = tokenIdFor("solana-devnet", "USDC");
const LEASE_ID = uuidv5(`sweep:${NET}`, CATALOGUE_NAMESPACE);
const FEE = 5000n;

describe("Solana sweeper on the litesvm-backed test node", () => {
	let sol: SolanaNode;
	let node: TestNode;
	let payer: Keypair;
	let sweeper: Keypair;

	beforeAll(async () => {
		({ sol, node, payer, sweeper } = await startSolanaSweeperNodes());
	}, 180_000);

	afterAll(() => stopSolanaSweeperNodes({ sol, node }));

	const getTx = async (id: string) => (await node.http("GET", `/payments/transactions/${id}`)).body;
	const ledger = async (organizationId: string, tokenId: string) => money(((await node.broker.call("withdrawals.balance", { organizationId, networkId: NET, tokenId })) as { balance: string }).balance);
	const lamports = (address: string) => sol.balance(new PublicKey(address), "finalized");
	const ata = (owner: string | PublicKey) => getAssociatedTokenAddressSync(DEVNET_USDC_MINT, new PublicKey(owner), true);
	const usdcAt = async (owner: string) => sol.tokenBalance(ata(owner), "finalized");
	const solOf = (units: bigint) => money(units.toString()).div(1e9);
	const usdcOf = (units: bigint) => money(units.toString()).div(1e6);
	const settings = async (user: UserWithToken, address: string) => expect((await node.http("PUT", "/withdrawals/settings", { token: user.token, body: { addresses: { solana: address } } })).status).toBe(200);

	/** Settled SOL payments of `amounts` (lamports) to fresh deposit addresses of the merchant, paid in one block. */
	async function paidSol(key: { key: string; secret: string }, amounts: bigint[]) {
		const out = [];
		for (const amount of amounts) {
			const c = await openCheckout(node, key, { amount: solOf(amount).toFixed(), currency: "sol", tokenId: SOL, networkId: NET });
			await sol.send([SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: new PublicKey(c.address), lamports: amount })], [payer]);
			out.push(c);
		}
		for (const c of out) await until("settled", async () => (await getTx(c.txId)).status === "completed", 60_000);
		return out;
	}

	/** A merchant with one settled SOL payment of `amount` lamports, credited in its ledger. */
	async function merchantWithSol(amount: bigint) {
		const { user, key } = await sandboxMerchant(node);
		const [deposit] = await paidSol(key, [amount]);
		await until("credited", async () => (await ledger(user.sandbox.id, SOL)).eq(solOf(amount)), 30_000);
		return { user, deposit };
	}

	/** Settled USDC payments of `units` each to fresh deposit addresses (the payer creates their token accounts). */
	async function paidUsdc(key: { key: string; secret: string }, count: number, units: (i: number) => bigint) {
		const out = [];
		for (let i = 0; i < count; i++) {
			const c = await openCheckout(node, key, { amount: usdcOf(units(i)).toFixed(), currency: "usdc", tokenId: USDC, networkId: NET });
			const owner = new PublicKey(c.address);
			await sol.send([createAssociatedTokenAccountIdempotentInstruction(payer.publicKey, ata(owner), owner, DEVNET_USDC_MINT), createTransferCheckedInstruction(ata(payer.publicKey), DEVNET_USDC_MINT, ata(owner), payer.publicKey, units(i), 6)], [payer]);
			out.push(c);
		}
		for (const c of out) await until("settled", async () => (await getTx(c.txId)).status === "completed", 60_000);
		return out;
	}

	/** The sweeps that hold a deposit's funds (any status), oldest first. */
	async function sweepsOf(depositAddress: string) {
		const items = await node.app.models.SweepItem.findAll({ where: { depositAddress } });
		return node.app.models.Sweep.findAll({ where: { id: items.map(i => i.sweepId) }, order: [["createdAt", "ASC"]] });
	}

	/** Waits until every deposit's funds are in a confirmed sweep; answers the sweeps (each once). */
	async function sweptAll(deposits: Array<{ address: string }>, timeoutMs: number) {
		return until("every deposit swept and confirmed", async () => {
			const lists = await Promise.all(deposits.map(d => sweepsOf(d.address)));
			if (!lists.every(list => list.some(s => s.status === "confirmed"))) return null;
			return [...new Map(lists.flat().map(s => [s.id, s])).values()];
		}, timeoutMs);
	}

	/** Sweeper steps seen on the node: each broadcast sweep's step asks getSignatureStatuses once. */
	const statusCalls = async () => (await sol.calls()).getSignatureStatuses ?? 0;

	it("sweeps SOL deposits to exactly 0 lamports, the deposits paying the fee; the ledger equals the VM", async () => {
		const { user, key } = await sandboxMerchant(node);
		const amounts = [500_000_000n, 250_000_000n, 100_000_000n];
		const deposits = await paidSol(key, amounts);
		await until("credited", async () => (await ledger(user.sandbox.id, SOL)).eq(solOf(850_000_000n)), 30_000);
		const destination = Keypair.generate().publicKey.toBase58();
		await settings(user, destination);

		const sweeps = await sweptAll(deposits, 60_000);
		expect(sweeps.every(s => s.kind === "sol" && s.status === "confirmed")).toBe(true);
		// Batched: the three deposits in at most as many transactions, each with its lastValidBlockHeight.
		expect(sweeps.length).toBeLessThanOrEqual(3);
		for (const s of sweeps) expect(BigInt(String(s.lastValidBlockHeight))).toBeGreaterThan(0n);
		const fees = sweeps.reduce((sum, s) => sum + BigInt(s.feePaid!), 0n);
		const items = await node.app.models.SweepItem.count({ where: { sweepId: sweeps.map(s => s.id) } });
		expect(fees).toBe(FEE * BigInt(items));
		for (const d of deposits) expect(await lamports(d.address)).toBe(0n);
		expect(await lamports(destination)).toBe(850_000_000n - fees);
		// The ledger: credits less the sweeps and their fee, as on the VM (nothing left at the deposits).
		await until("ledger equals the VM", async () => (await ledger(user.sandbox.id, SOL)).isZero(), 10_000);
		const entries = await node.app.models.LedgerEntry.findAll({ where: { organizationId: user.sandbox.id, networkId: NET, kind: "fee" } });
		expect(entries.reduce((sum, e) => sum.plus(money(e.amount)), money(0)).eq(solOf(fees).negated())).toBe(true);
	}, 180_000);

	it("sweeps 20 USDC deposits, the sweeper wallet paying fees and the destination's account rent and getting the closed accounts' rent back", async () => {
		const { user, key } = await sandboxMerchant(node);
		const deposits = await paidUsdc(key, 20, i => BigInt(1_000_000 + i * 10_000));
		const total = deposits.reduce((sum, _, i) => sum + BigInt(1_000_000 + i * 10_000), 0n);
		await until("credited", async () => (await ledger(user.sandbox.id, USDC)).eq(usdcOf(total)), 30_000);
		const destination = Keypair.generate().publicKey.toBase58();
		expect(await usdcAt(destination)).toBeNull(); // its token account does not exist yet
		const sweeperBefore = await lamports(sweeper.publicKey.toBase58());
		await settings(user, destination);

		const sweeps = await sweptAll(deposits, 90_000);
		expect(sweeps.every(s => s.kind === "spl" && s.status === "confirmed")).toBe(true);
		// At most 6 deposits a transaction (5 while each also creates the destination's account).
		const sizes = await Promise.all(sweeps.map(s => node.app.models.SweepItem.count({ where: { sweepId: s.id } })));
		expect(sizes.reduce((a, b) => a + b, 0)).toBe(20);
		expect(Math.max(...sizes)).toBeLessThanOrEqual(6);
		expect(sweeps.length).toBeGreaterThanOrEqual(4);
		// The destination holds every unit; each deposit's token account is closed.
		expect(await usdcAt(destination)).toBe(total);
		for (const d of deposits) {
			expect(await usdcAt(d.address)).toBeNull();
			expect(await lamports(ata(d.address).toBase58())).toBe(0n);
		}
		// The sweeper wallet: fees (1 + deposits signatures a transaction) and the new account's rent out, 20 closed accounts' rent in.
		const fees = sweeps.reduce((sum, s) => sum + BigInt(s.feePaid!), 0n);
		expect(fees).toBe(FEE * BigInt(sweeps.length + 20));
		await until("the sweeper wallet's balance at finalized", async () => (await lamports(sweeper.publicKey.toBase58())) === sweeperBefore - fees - TOKEN_ACCOUNT_RENT_EXEMPT + 20n * TOKEN_ACCOUNT_RENT_EXEMPT, 10_000);
		// The merchant's ledger: nothing left, as on the VM; no fee charged to the merchant.
		await until("ledger equals the VM", async () => (await ledger(user.sandbox.id, USDC)).isZero(), 10_000);
		expect(await node.app.models.LedgerEntry.count({ where: { organizationId: user.sandbox.id, networkId: NET, kind: "fee" } })).toBe(0);
	}, 240_000);

	it("pays a withdrawal request its exact amount from one deposit; the ledger equals the VM", async () => {
		const { user, deposit } = await merchantWithSol(1_000_000_000n);
		const payee = Keypair.generate().publicKey.toBase58();
		const made = await node.http("POST", "/withdrawals/requests", { token: user.token, body: { amount: "0.3", tokenId: SOL, sourceNetworkId: NET, address: payee, strategy: 1 } });
		expect(made.status).toBe(201);
		// The request completes just before its sweep is closed: wait for both.
		await until("request completed and its sweep confirmed", async () => (await node.app.models.WithdrawalRequest.findByPk(made.body.id))?.status === "completed" && (await node.app.models.Sweep.count({ where: { requestId: made.body.id, status: "confirmed" } })) === 1, 60_000);
		const [paid] = await node.app.models.Sweep.findAll({ where: { requestId: made.body.id } });
		expect({ kind: paid.kind, status: paid.status, feePaid: paid.feePaid }).toEqual({ kind: "sol", status: "confirmed", feePaid: FEE.toString() });
		expect(await lamports(payee)).toBe(300_000_000n);
		expect(await lamports(deposit.address)).toBe(700_000_000n - FEE);
		await until("ledger equals the VM", async () => (await ledger(user.sandbox.id, SOL)).eq(solOf(await lamports(deposit.address))), 10_000);
	}, 180_000);

	it("pays a USDC withdrawal request its exact amount from one deposit, the sweeper wallet paying the fee and the payee's new token account; the ledger equals the VM", async () => {
		const { user, key } = await sandboxMerchant(node);
		const [deposit] = await paidUsdc(key, 1, () => 5_000_000n);
		await until("credited", async () => (await ledger(user.sandbox.id, USDC)).eq(usdcOf(5_000_000n)), 30_000);
		const payee = Keypair.generate().publicKey.toBase58();
		expect(await usdcAt(payee)).toBeNull(); // the payee has no USDC account yet
		const sweeperBefore = await lamports(sweeper.publicKey.toBase58());
		const made = await node.http("POST", "/withdrawals/requests", { token: user.token, body: { amount: "2", tokenId: USDC, sourceNetworkId: NET, address: payee, strategy: 1 } });
		expect(made.status).toBe(201);
		await until("request completed and its sweep confirmed", async () => (await node.app.models.WithdrawalRequest.findByPk(made.body.id))?.status === "completed" && (await node.app.models.Sweep.count({ where: { requestId: made.body.id, status: "confirmed" } })) === 1, 60_000);
		const paid = await node.app.models.Sweep.findAll({ where: { requestId: made.body.id } });
		expect(paid.map(s => ({ kind: s.kind, status: s.status, feePaid: s.feePaid }))).toEqual([{ kind: "spl", status: "confirmed", feePaid: (2n * FEE).toString() }]);
		// Exactly the amount asked; the rest stays at the deposit's (still open) token account.
		expect(await usdcAt(payee)).toBe(2_000_000n);
		expect(await usdcAt(deposit.address)).toBe(3_000_000n);
		// The sweeper wallet paid the fee (its signature and the deposit's) and the payee account's rent.
		await until("the sweeper wallet's balance at finalized", async () => (await lamports(sweeper.publicKey.toBase58())) === sweeperBefore - 2n * FEE - TOKEN_ACCOUNT_RENT_EXEMPT, 10_000);
		// The merchant's ledger: what the deposit still holds; no fee charged to the merchant.
		await until("ledger equals the VM", async () => (await ledger(user.sandbox.id, USDC)).eq(usdcOf(3_000_000n)), 10_000);
		expect(await node.app.models.LedgerEntry.count({ where: { organizationId: user.sandbox.id, networkId: NET, kind: "fee" } })).toBe(0);
	}, 180_000);

	it("a sweep signed and recorded but never sent (refused, then the sweeper restarted) sends that same signature, never a second transaction", async () => {
		const { user, deposit } = await merchantWithSol(400_000_000n);
		await sol.sendMode("refuse");
		const destination = Keypair.generate().publicKey.toBase58();
		await settings(user, destination);
		const recorded = await until("signed and recorded", async () => (await sweepsOf(deposit.address)).find(s => s.status === "signed" && s.txHash), 30_000);
		// The sweeper goes away with the bytes recorded and never sent (as a crash right after recording).
		await node.broker.destroyService(node.broker.getLocalService("sweeper-solana")!);
		expect(await sol.status(recorded.txHash!)).toBeNull();
		await sol.sendMode("normal");
		await node.broker.createService(loadServiceSchema(availableServices()["sweeper-solana"]));

		const done = await until("confirmed", async () => (await sweepsOf(deposit.address)).find(s => s.status === "confirmed"), 60_000);
		expect({ id: done.id, txHash: done.txHash, hashes: done.hashes, rawTx: done.rawTx }).toEqual({ id: recorded.id, txHash: recorded.txHash, hashes: [recorded.txHash], rawTx: recorded.rawTx });
		expect(await sweepsOf(deposit.address)).toHaveLength(1);
		expect((await sol.status(recorded.txHash!))?.err).toBeNull();
		expect(await lamports(deposit.address)).toBe(0n);
		expect(await lamports(destination)).toBe(400_000_000n - FEE);
		await until("ledger equals the VM", async () => (await ledger(user.sandbox.id, SOL)).isZero(), 10_000);
	}, 180_000);

	it("a transaction the cluster never includes is signed again only once the FINALIZED height is past its lastValidBlockHeight; the funds move once", async () => {
		const { user, deposit } = await merchantWithSol(600_000_000n);
		// The finalized head stops; every transaction sent is accepted and never included.
		await sol.setFinalizeDistance(null);
		await sol.sendMode("withhold");
		const destination = Keypair.generate().publicKey.toBase58();
		await settings(user, destination);
		const first = await until("sent", async () => (await sweepsOf(deposit.address)).find(s => s.status === "broadcast"), 30_000);
		const lastValid = BigInt(String(first.lastValidBlockHeight));
		expect(await sol.withheld()).toContain(first.txHash);

		// The confirmed chain goes past its lastValidBlockHeight: it can never land now, but the finalized
		// chain has not shown it yet. Several steps later it is still the only transaction for these funds.
		await sol.produceBlocks(Number(lastValid) - (await sol.head("confirmed")).blockHeight + 5);
		expect(BigInt((await sol.head("confirmed")).blockHeight)).toBeGreaterThan(lastValid);
		const asked = await statusCalls();
		await until("five more steps", async () => (await statusCalls()) >= asked + 5, 30_000);
		const still = await sweepsOf(deposit.address);
		expect(still.map(s => [s.id, s.status, s.hashes])).toEqual([[first.id, "broadcast", [first.txHash]]]);
		expect(await sol.releaseWithheld()).toEqual([]); // forwarded now, it is too late to land
		await sol.sendMode("normal");

		// Finality passes its lastValidBlockHeight: proven dead, failed, and the funds signed again once.
		await sol.setFinalizeDistance(2);
		await sol.produceBlock();
		const again = await until("swept again and confirmed", async () => (await sweepsOf(deposit.address)).find(s => s.status === "confirmed"), 60_000);
		const all = await sweepsOf(deposit.address);
		expect(all.map(s => s.status)).toEqual(["failed", "confirmed"]);
		expect(all[0].reason).toMatch(/expired unsent/);
		expect(again.txHash).not.toBe(first.txHash);
		expect(await sol.status(first.txHash!)).toBeNull();
		expect(await lamports(deposit.address)).toBe(0n);
		expect(await lamports(destination)).toBe(600_000_000n - FEE);
		await until("ledger equals the VM", async () => (await ledger(user.sandbox.id, SOL)).isZero(), 10_000);
	}, 180_000);

	it("a request's transaction withheld while still valid is sent again as the same bytes, never re-signed: it lands once", async () => {
		const { user, deposit } = await merchantWithSol(1_000_000_000n);
		await sol.sendMode("withhold");
		const payee = Keypair.generate().publicKey.toBase58();
		const made = await node.http("POST", "/withdrawals/requests", { token: user.token, body: { amount: "0.25", tokenId: SOL, sourceNetworkId: NET, address: payee, strategy: 1 } });
		expect(made.status).toBe(201);
		const sent = await until("sent", async () => node.app.models.Sweep.findOne({ where: { requestId: made.body.id, status: "broadcast" } }), 30_000);
		// Many steps and blocks (within its validity) pass without it landing. The blocks are the
		// test's own: the node's 100 ms blocks are paused meanwhile, so a slow machine's steps cannot
		// carry the chain past the transaction's validity (~150 blocks) before it is released.
		await sol.autoProduce(null);
		try {
			await sol.produceBlocks(100);
			const asked = await statusCalls();
			await until("five more steps", async () => (await statusCalls()) >= asked + 5, 30_000);
			expect((await node.app.models.Sweep.findAll({ where: { requestId: made.body.id } })).map(s => s.hashes)).toEqual([[sent.txHash]]);
			// The cluster includes what it was given: one transaction.
			expect(await sol.releaseWithheld()).toEqual([sent.txHash]);
		} finally {
			await sol.sendMode("normal");
			await sol.autoProduce(100);
		}
		await until("request completed and its sweep confirmed", async () => (await node.app.models.WithdrawalRequest.findByPk(made.body.id))?.status === "completed" && (await node.app.models.Sweep.count({ where: { requestId: made.body.id, status: "confirmed" } })) === 1, 60_000);
		expect(await node.app.models.Sweep.count({ where: { requestId: made.body.id } })).toBe(1);
		expect(await lamports(payee)).toBe(250_000_000n);
		expect(await lamports(deposit.address)).toBe(750_000_000n - FEE);
		await until("ledger equals the VM", async () => (await ledger(user.sandbox.id, SOL)).eq(solOf(await lamports(deposit.address))), 10_000);
	}, 180_000);

	it("a runner whose lease was taken over writes nothing and sends nothing; the leader of the moment sweeps once", async () => {
		const { user, key } = await sandboxMerchant(node);
		const held = await until("the sweeper leads", async () => {
			const row = await node.app.models.ChainCursor.findByPk(LEASE_ID);
			return row?.leaseOwner ? { networkId: LEASE_ID, owner: row.leaseOwner, token: row.leaseToken } : null;
		}, 30_000);
		// Another node takes the lease over; the service's runner stands by.
		await node.app.models.ChainCursor.update({ leaseUntil: new Date(0) }, { where: { networkId: LEASE_ID } });
		const usurper = (await acquireLease(node.app.models, LEASE_ID, "usurper:1:sweeper-solana", 600_000, Date.now()))!;
		expect(usurper).not.toBeNull();
		await until("the service knows it lost the lease", async () => ((await node.broker.call("sweeper-solana.status")) as Array<{ leader: boolean }>)[0]?.leader === false, 30_000);

		const [deposit] = await paidSol(key, [300_000_000n]);
		await until("credited", async () => (await ledger(user.sandbox.id, SOL)).eq(money("0.3")), 30_000);
		const destination = Keypair.generate().publicKey.toBase58();
		await settings(user, destination);
		// The old leader's runner (its lease's fence) steps: planning is refused.
		const network = ((await node.broker.call("networks.watchable", { chainType: "solana" })) as WatchableNetwork[]).find(n => n.id === NET)!;
		const stale = new SolanaSweepRunner({
			sequelize: node.app.sequelize,
			models: node.app.models,
			connection: new Connection(sol.url, "confirmed"),
			network: liveSweepNetwork(network, false),
			sweeperKey: sweeper.secretKey,
			depositKey: index => codecFor("solana").derivePrivateKey(hdSeed(node.app).seed, chainParamsFor(network), index),
			ports: sweeperPorts({ broker: node.broker } as Service),
			settings: { batchSize: 20, minValueMultiple: 1, maxAgeMs: 0, maxFailures: 3, failureBackoffMs: 1000, proofPolls: 2, proofMs: 0 },
			now: () => new Date(),
			logger: { info: () => undefined, warn: () => undefined, error: () => undefined },
		});
		const sends = async () => (await sol.calls()).sendTransaction ?? 0;
		const sendsBefore = await sends();
		await expect(stale.step(held)).rejects.toBeInstanceOf(LeaseLostError);
		expect(await sweepsOf(deposit.address)).toHaveLength(0);
		// A sweep the leader of the moment planned: the stale runner cannot record it, so never sends it.
		const { completedAt: _, ...checkout } = ((await node.broker.call("transactions.sweepable", { networkId: NET })) as SweepableCheckout[]).find(c => c.transactionId === deposit.txId)!;
		const item = { ...checkout, amount: "0.3" };
		const planned = (await planSweep(node.app.sequelize, node.app.models, usurper, { networkId: NET, kind: "sol", tokenId: SOL, fromAddress: "solana-sweeps", toAddress: destination, chainNonce: 0, items: [item] }, new Date()))!;
		await expect(stale.step(held)).rejects.toBeInstanceOf(LeaseLostError);
		const after = (await node.app.models.Sweep.findByPk(planned.id))!;
		expect({ status: after.status, hashes: after.hashes, rawTx: after.rawTx }).toEqual({ status: "planned", hashes: [], rawTx: null });
		expect(await sends()).toBe(sendsBefore);
		expect(await lamports(deposit.address)).toBe(300_000_000n);

		// The other node goes away: the service leads again and carries the planned sweep through, once.
		await releaseLease(node.app.models, usurper);
		const done = await until("confirmed", async () => (await sweepsOf(deposit.address)).find(s => s.status === "confirmed"), 60_000);
		expect(done.id).toBe(planned.id);
		expect(await sweepsOf(deposit.address)).toHaveLength(1);
		expect(await lamports(deposit.address)).toBe(0n);
		expect(await lamports(destination)).toBe(300_000_000n - FEE);
		await until("ledger equals the VM", async () => (await ledger(user.sandbox.id, SOL)).isZero(), 10_000);
	}, 180_000);
});
