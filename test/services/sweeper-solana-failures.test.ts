/**
 * The Solana sweeper's sends that LAND WITH AN ERROR, and its holds, on the litesvm-backed test
 * node (test/helpers/solana-node.ts: the Solana runtime executes every transaction, so each failure
 * here is the runtime's own; slots, heads and the RPC are the facade's). Its own node: a short
 * failure pause (SWEEP_FAILURE_BACKOFF_MS) and SWEEP_MAX_FAILURES=2.
 *
 * Each failure is made the way it happens on a cluster: the sweep is signed and sent, held back
 * (the node's `withhold` send mode), and before it is included more funds reach the deposit, so
 * what was read is no longer the whole balance: a token sweep's close fails (the account is not
 * empty), a SOL sweep would leave the deposit below the rent-exempt minimum. Released, it lands
 * with `err`, the fee charged.
 *
 * LATE: those arrivals come after the checkout was settled; the watcher records them on the
 * checkout (amountReceived) but the ledger gets no credit for them, while the sweep that follows
 * moves (and debits) the deposit's whole balance. So the ledger ends short of the VM by exactly
 * what arrived late: a gap of the credit path (reported), not of the sweeper; asserted as such.
 */
import { Keypair, PublicKey, SystemProgram } from "@solana/web3.js";
import { createAssociatedTokenAccountIdempotentInstruction, createTransferCheckedInstruction, getAssociatedTokenAddressSync } from "@solana/spl-token";
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { money } from "../../lib/money";
import type { SolanaNode } from "../helpers/solana-node";
import { DEVNET_USDC_MINT, startSolanaSweeperNodes, stopSolanaSweeperNodes } from "../helpers/solana-sweeper-node";
import { until } from "../helpers/until";
import type { TestNode } from "../helpers/harness";
import type { UserWithToken } from "../helpers/users";
import { openCheckout, sandboxMerchant } from "../e2e/payments.helpers";

const NET = networkIdFor("solana-devnet");
const SOL = tokenIdFor("solana-devnet", "SOL");
const USDC = tokenIdFor("solana-devnet", "USDC");
const FEE = 5000n;

describe("Solana sweeper: sends that fail on chain, and holds (litesvm-backed test node)", () => {
	let sol: SolanaNode;
	let node: TestNode;
	let payer: Keypair;
	let sweeper: Keypair;

	beforeAll(async () => {
		({ sol, node, payer, sweeper } = await startSolanaSweeperNodes({ SWEEP_MAX_FAILURES: "2", SWEEP_FAILURE_BACKOFF_MS: "3000" }));
	}, 180_000);

	afterEach(async () => {
		// A test that failed midway leaves nothing held back for the next one.
		await sol.sendMode("normal");
		await sol.releaseWithheld();
	});

	afterAll(() => stopSolanaSweeperNodes({ sol, node }));

	const getTx = async (id: string) => (await node.http("GET", `/payments/transactions/${id}`)).body;
	const ledger = async (organizationId: string, tokenId: string) => money(((await node.broker.call("withdrawals.balance", { organizationId, networkId: NET, tokenId })) as { balance: string }).balance);
	const lamports = (address: string) => sol.balance(new PublicKey(address), "finalized");
	const ata = (owner: string | PublicKey) => getAssociatedTokenAddressSync(DEVNET_USDC_MINT, new PublicKey(owner), true);
	const usdcAt = async (owner: string) => sol.tokenBalance(ata(owner), "finalized");
	const solOf = (units: bigint) => money(units.toString()).div(1e9);
	const usdcOf = (units: bigint) => money(units.toString()).div(1e6);
	const settings = async (user: UserWithToken, address: string) => expect((await node.http("PUT", "/withdrawals/settings", { token: user.token, body: { addresses: { solana: address } } })).status).toBe(200);
	const holdOf = (address: string, tokenId: string) => node.app.models.SweepHold.findOne({ where: { networkId: NET, scope: "deposit", address, tokenId } });
	const feeEntries = async (organizationId: string) => (await node.app.models.LedgerEntry.findAll({ where: { organizationId, networkId: NET, kind: "fee" } })).reduce((sum, e) => sum.plus(money(e.amount)), money(0));

	async function merchantWithSol(amount: bigint) {
		const { user, key } = await sandboxMerchant(node);
		const c = await openCheckout(node, key, { amount: solOf(amount).toFixed(), currency: "sol", tokenId: SOL, networkId: NET });
		await sol.send([SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: new PublicKey(c.address), lamports: amount })], [payer]);
		await until("settled", async () => (await getTx(c.txId)).status === "completed", 60_000);
		await until("credited", async () => (await ledger(user.sandbox.id, SOL)).eq(solOf(amount)), 30_000);
		return { user, deposit: c };
	}

	async function merchantWithUsdc(units: bigint) {
		const { user, key } = await sandboxMerchant(node);
		const c = await openCheckout(node, key, { amount: usdcOf(units).toFixed(), currency: "usdc", tokenId: USDC, networkId: NET });
		const owner = new PublicKey(c.address);
		await sol.send([createAssociatedTokenAccountIdempotentInstruction(payer.publicKey, ata(owner), owner, DEVNET_USDC_MINT), createTransferCheckedInstruction(ata(payer.publicKey), DEVNET_USDC_MINT, ata(owner), payer.publicKey, units, 6)], [payer]);
		await until("settled", async () => (await getTx(c.txId)).status === "completed", 60_000);
		await until("credited", async () => (await ledger(user.sandbox.id, USDC)).eq(usdcOf(units)), 30_000);
		return { user, deposit: c };
	}

	async function sweepsOf(depositAddress: string) {
		const items = await node.app.models.SweepItem.findAll({ where: { depositAddress } });
		return node.app.models.Sweep.findAll({ where: { id: items.map(i => i.sweepId) }, order: [["createdAt", "ASC"], ["id", "ASC"]] });
	}

	/**
	 * The deposit's next sweep is sent and held back; `arrive` adds funds to the deposit (straight on
	 * the VM, not through the held-back sends); released, the sweep lands with an error. Answers the failed sweep.
	 */
	async function failOnce(depositAddress: string, before: number, arrive: () => Promise<unknown>, tokenId: string) {
		await sol.sendMode("withhold");
		const sent = await until("sent", async () => {
			const list = await sweepsOf(depositAddress);
			return list.length === before + 1 && list[before].status === "broadcast" ? list[before] : null;
		}, 60_000);
		expect(await sol.withheld()).toEqual([sent.txHash]);
		await arrive();
		// The cluster includes it: it executes, fails, and its fee is charged.
		expect(await sol.releaseWithheld()).toEqual([sent.txHash]);
		const failed = await until("failed on chain", async () => {
			const s = await node.app.models.Sweep.findByPk(sent.id);
			return s?.status === "failed" ? s : null;
		}, 60_000);
		expect((await sol.status(sent.txHash!))?.err).not.toBeNull();
		expect(failed.txHash).toBe(sent.txHash);
		expect(failed.reason).toMatch(/^failed on chain/);
		// Counted on the deposit (read before the pause ends and it is planned again).
		const hold = await until("the failure counted", async () => {
			const h = await holdOf(depositAddress, tokenId);
			return h && h.failures === before + 1 ? h : null;
		}, 10_000);
		return { failed, hold };
	}

	it("a token sweep that lands with an error: failed with the sweeper wallet's fee on its record, counted on the deposit, planned again after the pause and swept once", async () => {
		const { user, deposit } = await merchantWithUsdc(1_000_000n);
		const destination = Keypair.generate().publicKey.toBase58();
		const sweeperBefore = await lamports(sweeper.publicKey.toBase58());
		await sol.sendMode("withhold");
		await settings(user, destination);
		// 0.5 USDC more reach the deposit's token account after its amount was read: the close fails.
		const { failed, hold } = await failOnce(deposit.address, 0, () => sol.mintTo(DEVNET_USDC_MINT, new PublicKey(deposit.address), 500_000n), USDC);
		expect(hold.blockedAt).toBeNull();
		await sol.sendMode("normal");
		// The sweeper wallet paid both signatures' fee; nothing moved (the destination's account creation rolled back too).
		expect(failed.feePaid).toBe((2n * FEE).toString());
		expect(await until("the failed send at finalized", async () => ((await lamports(sweeper.publicKey.toBase58())) === sweeperBefore - 2n * FEE ? true : null), 30_000)).toBe(true);
		expect(await usdcAt(destination)).toBeNull();

		const again = await until("swept again and confirmed", async () => (await sweepsOf(deposit.address)).find(s => s.status === "confirmed"), 60_000);
		const all = await sweepsOf(deposit.address);
		expect(all.map(s => s.status)).toEqual(["failed", "confirmed"]);
		// Not before the pause after the failure.
		expect(again.createdAt.getTime()).toBeGreaterThanOrEqual(hold.nextAttemptAt.getTime());
		expect(again.txHash).not.toBe(failed.txHash);
		// Everything the deposit held, once; its token account closed, the rent back to the sweeper wallet.
		expect(await usdcAt(destination)).toBe(1_500_000n);
		expect(await usdcAt(deposit.address)).toBeNull();
		expect(again.feePaid).toBe((2n * FEE).toString());
		await until("the sweeper wallet's balance at finalized", async () => (await lamports(sweeper.publicKey.toBase58())) === sweeperBefore - 4n * FEE, 10_000);
		expect(await holdOf(deposit.address, USDC)).toBeNull(); // a confirmed send clears the count
		// The merchant's ledger: as the VM (nothing at the deposit) but for the 0.5 USDC that arrived after
		// settlement: recorded on the checkout, never credited (LATE below), swept and debited. No fee on the merchant.
		await until("ledger equals the VM less the uncredited arrival", async () => (await ledger(user.sandbox.id, USDC)).plus(usdcOf(500_000n)).isZero(), 10_000);
		expect((await feeEntries(user.sandbox.id)).isZero()).toBe(true);
	}, 180_000);

	it("a SOL sweep that lands with an error: the deposit paid the fee, its fee entry is in the ledger; swept again once", async () => {
		const { user, deposit } = await merchantWithSol(400_000_000n);
		const destination = Keypair.generate().publicKey.toBase58();
		await sol.sendMode("withhold");
		await settings(user, destination);
		// 1,000 lamports arrive after the balance was read: the deposit would keep them, below the rent-exempt minimum.
		const { failed } = await failOnce(deposit.address, 0, () => sol.airdrop(new PublicKey(deposit.address), 1000n), SOL);
		await sol.sendMode("normal");
		expect(failed.feePaid).toBe(FEE.toString());
		expect(await lamports(destination)).toBe(0n);
		await until("the failed send at finalized", async () => (await lamports(deposit.address)) === 400_001_000n - FEE, 30_000);
		// The fee the deposit paid is the merchant's: a fee entry for the failed send.
		const fee = await node.app.models.LedgerEntry.findAll({ where: { organizationId: user.sandbox.id, networkId: NET, kind: "fee", refId: failed.id } });
		expect(fee.map(e => money(e.amount).eq(solOf(FEE).negated()))).toEqual([true]);

		await until("swept again and confirmed", async () => (await sweepsOf(deposit.address)).find(s => s.status === "confirmed"), 60_000);
		expect((await sweepsOf(deposit.address)).map(s => s.status)).toEqual(["failed", "confirmed"]);
		expect(await lamports(deposit.address)).toBe(0n);
		expect(await lamports(destination)).toBe(400_001_000n - 2n * FEE);
		// Both fees (the failed send's too) are in the ledger: it equals the VM but for the uncredited arrival (LATE).
		await until("ledger equals the VM less the uncredited arrival", async () => (await ledger(user.sandbox.id, SOL)).plus(solOf(1000n)).isZero(), 10_000);
		expect((await feeEntries(user.sandbox.id)).eq(solOf(2n * FEE).negated())).toBe(true);
		expect(await holdOf(deposit.address, SOL)).toBeNull();
	}, 180_000);

	it("after SWEEP_MAX_FAILURES failures on chain the deposit is held: not sent again until support clears the hold, then swept once", async () => {
		const { user, deposit } = await merchantWithSol(300_000_000n);
		const destination = Keypair.generate().publicKey.toBase58();
		await sol.sendMode("withhold");
		await settings(user, destination);
		const arrive = () => sol.airdrop(new PublicKey(deposit.address), 1000n);
		expect((await failOnce(deposit.address, 0, arrive, SOL)).hold.blockedAt).toBeNull();
		// Still withholding: planned again after the pause, it fails the same way.
		const { hold } = await failOnce(deposit.address, 1, arrive, SOL);
		await sol.sendMode("normal");
		expect(hold.blockedAt).not.toBeNull();
		const status = (await node.broker.call("sweeper-solana.status")) as Array<{ holds: Array<{ address: string; blocked: boolean }> }>;
		expect(status.flatMap(n => n.holds).filter(h => h.address === deposit.address)).toEqual([expect.objectContaining({ blocked: true })]);
		await until("the failed sends at finalized", async () => (await lamports(deposit.address)) === 300_002_000n - 2n * FEE, 30_000);
		// Held: the ledger is what the deposit holds (both failed sends' fees booked) but for the uncredited arrivals (LATE).
		await until("ledger equals the VM while held", async () => (await ledger(user.sandbox.id, SOL)).plus(solOf(2000n)).eq(solOf(await lamports(deposit.address))), 30_000);

		// Well past the pause that followed the second failure: still nothing sent from there.
		const sends = async () => (await sol.calls()).sendTransaction ?? 0;
		const sent = await sends();
		await until("past the pause", async () => Date.now() > hold.nextAttemptAt.getTime() + 3000, 30_000);
		expect((await sweepsOf(deposit.address)).map(s => s.status)).toEqual(["failed", "failed"]);
		expect(await sends()).toBe(sent);

		const cleared = (await node.broker.call("sweeper-solana.support.clearHold", { network: "solana-devnet", address: deposit.address })) as { cleared: number };
		expect(cleared.cleared).toBe(1);
		await until("swept and confirmed", async () => (await sweepsOf(deposit.address)).find(s => s.status === "confirmed"), 60_000);
		expect((await sweepsOf(deposit.address)).map(s => s.status)).toEqual(["failed", "failed", "confirmed"]);
		expect(await lamports(deposit.address)).toBe(0n);
		expect(await lamports(destination)).toBe(300_002_000n - 3n * FEE);
		await until("ledger equals the VM less the uncredited arrivals", async () => (await ledger(user.sandbox.id, SOL)).plus(solOf(2000n)).isZero(), 10_000);
		expect((await feeEntries(user.sandbox.id)).eq(solOf(3n * FEE).negated())).toBe(true);
	}, 240_000);
});
