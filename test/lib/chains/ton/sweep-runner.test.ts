/**
 * The TON sweep runner (lib/chains/ton/sweep-runner.ts) on the TON test node (test/helpers/
 * ton-facade.ts: toncenter v3 API over @ton/sandbox, the real TVM with real v4R2 / v5R1 wallet
 * code and the reference jetton) and the sweeper's real records on this project's database
 * (both jest projects). The services' side (sweepable checkouts, destinations, the ledger,
 * requests) is a small in-memory stand-in (test/helpers/sweeper-services.ts) whose ledger writes
 * are fenced like withdrawals.record.
 * Every case ends with the ledger equal to what the emulator holds.
 */
import { Address, type Cell } from "@ton/core";
import { loadConfig, updateConfig } from "@ton/sandbox";
import { keyPairFromSeed } from "@ton/crypto";
import { tonCodec } from "../../../../lib/chains/ton/codec";
import { createTonApi, type TonApi } from "../../../../lib/chains/ton/api";
import { merchantAddress, sameTonAddress, signedOf, tonSweeperKey, TonSweepRunner } from "../../../../lib/chains/ton/sweep-runner";
import { buildTonPayment, walletAddress } from "../../../../lib/chains/ton/sweep";
import { fromBaseUnits, money, toBaseUnits } from "../../../../lib/money";
import type { SweepNetwork } from "../../../../lib/sweeps/ports";
import type { SweepFence } from "../../../../lib/sweeps/store";
import { clearHoldsAt } from "../../../../lib/sweeps/holds";
import { acquireLease, ensureCursor, LeaseLostError, releaseLease } from "../../../../lib/watchers/store";
import { startNode, type TestNode } from "../../../helpers/harness";
import { standInServices } from "../../../helpers/sweeper-services";
import { startTonNode, type Jetton, type TonNode } from "../../../helpers/ton-node";
import { ABANDON_SEED } from "../fixtures";

const NET = "00000000-0000-4000-8000-0000000070a1";
const TON_ID = "00000000-0000-4000-8000-0000000070a2";
const USDT_ID = "00000000-0000-4000-8000-0000000070a3";
const ORG = "00000000-0000-4000-8000-0000000070a4";
const LEASE = "00000000-0000-4000-8000-0000000070f0";
const SWEEPER_SEED = Buffer.alloc(32, 9);
const TON = 1_000_000_000n;

describe("TON sweep runner on the TON test node", () => {
	let db: TestNode;
	let chain: TonNode;
	let jetton: Jetton;
	let api: TonApi;
	let fence: SweepFence;
	const network: SweepNetwork = { id: NET, slug: "ton-test", chainId: 0, requiredConfirmations: 1, eip7702: false, tokens: [] };
	let merchant: string;
	let sweeper: string;
	/** The stand-in services (test/helpers/sweeper-services.ts); checkouts in `noDestination` are not swept automatically. */
	let noDestination = new Set<string>();
	const { ports, checkouts, ledger, requests, ledgerSum, settle } = standInServices({ db: () => db, merchant: () => merchant, noDestination: id => noDestination.has(id) });
	let next = 0;
	/** Added to the runner's clock: holds' pauses pass without waiting. */
	let clockMs = 0;

	const runner = (over: Partial<{ api: TonApi; batchSize: number; validForSec: number }> = {}) =>
		new TonSweepRunner({
			sequelize: db.app.sequelize,
			models: db.app.models,
			api: over.api ?? api,
			network,
			sweeperKey: async () => new Uint8Array(SWEEPER_SEED),
			depositKey: index => tonCodec.derivePrivateKey(ABANDON_SEED, { isTestnet: false }, index),
			ports,
			settings: { batchSize: over.batchSize ?? 255, maxAgeMs: 0, validForSec: over.validForSec ?? 30, proofPolls: 2, proofMs: 0, maxFailures: 3, failureBackoffMs: 60_000 },
			now: () => new Date(Date.now() + clockMs),
			logger: process.env.DEBUG_SWEEP ? console : { info: () => undefined, warn: () => undefined, error: () => undefined },
		});

	/** Every deposit address this file paid, by token. */
	const deposits: Array<{ tokenId: string; addr: Address }> = [];
	/** The ledger's balance of a token equals what all the deposits hold on the emulator. */
	async function ledgerEqualsChain(tokenId: string): Promise<boolean> {
		let held = 0n;
		for (const d of deposits.filter(x => x.tokenId === tokenId)) held += tokenId === TON_ID ? chain.balance(d.addr) : await chain.jettonBalance(jetton, d.addr);
		return ledgerSum(tokenId).eq(money(fromBaseUnits(held, tokenId === TON_ID ? 9 : 6)));
	}

	/** A settled checkout of `amount` at a fresh deposit address (index), its credit in the ledger. */
	async function checkout(tokenId: string, amount: string, decimals: number) {
		const index = 100 + next++;
		const { address } = await tonCodec.deriveAddress(ABANDON_SEED, { isTestnet: false }, index);
		const c = settle({ organizationId: ORG, depositAddress: address, derivationIndex: index, tokenId }, amount);
		void decimals;
		deposits.push({ tokenId, addr: Address.parse(address) });
		return { ...c, addr: Address.parse(address) };
	}

	/** Steps (each followed by sealing what ran) until `done` answers truthy. */
	async function stepUntil<T>(what: string, done: () => Promise<T | null | undefined | false>, r = runner(), max = 20): Promise<T> {
		for (let i = 0; i < max; i++) {
			await r.step(fence);
			await chain.settle();
			const v = await done();
			if (v) return v;
		}
		throw new Error(`not reached after ${max} steps: ${what}`);
	}

	beforeAll(async () => {
		db = await startNode({ services: [] });
		chain = await startTonNode();
		api = createTonApi({ baseUrl: chain.url, timeoutMs: 10_000, attempts: 1 });
		await ensureCursor(db.app.models, LEASE, "sweep", new Date());
		fence = (await acquireLease(db.app.models, LEASE, "test:1:sweeper-ton", 600_000, Date.now()))!;
		jetton = await chain.deployJetton({ symbol: "USDT", decimals: 6 });
		network.tokens = [
			{ tokenId: TON_ID, symbol: "TON", contractAddress: "", decimals: 9 },
			{ tokenId: USDT_ID, symbol: "USDT", contractAddress: jetton.master.toRawString(), decimals: 6 },
		];
		// The merchant's wallet is not deployed: it keeps exactly what it is sent (no compute fee of its own).
		merchant = (await chain.wallet()).friendly;
		const sw = await chain.wallet({ version: "v5", keyPair: keyPairFromSeed(SWEEPER_SEED), balance: 100n * TON });
		sweeper = sw.address.toRawString();
		expect(walletAddress(new Uint8Array(SWEEPER_SEED), "v5r1")).toBe(sweeper);
	}, 120_000);

	afterAll(async () => {
		await chain?.stop();
		await db?.stop();
	});

	afterEach(() => {
		// Each case's checkouts are its own; what it swept stays swept.
		checkouts.length = 0;
		noDestination = new Set();
	});

	it("sweeps an undeployed TON deposit to zero (destroyed), non-bounceable; the ledger equals the emulator", async () => {
		const c = await checkout(TON_ID, "1.5", 9);
		await chain.pay(chain.faucet, c.addr, 1_500_000_000n, { bounce: false });
		await chain.settle();
		expect(chain.status(c.addr)).toBe("uninit");
		const before = chain.balance(Address.parse(merchant));
		const sweep = await stepUntil("TON sweep confirmed", () => db.app.models.Sweep.findOne({ where: { networkId: NET, fromAddress: c.depositAddress, status: "confirmed" } }));
		expect(sweep.kind).toBe("native");
		expect(sweep.toAddress).toBe(merchantAddress(merchant));
		expect(Address.parseFriendly(sweep.toAddress).isBounceable).toBe(false);
		expect(chain.status(c.addr)).toBe("nonexist");
		expect(chain.balance(c.addr)).toBe(0n);
		const received = chain.balance(Address.parse(merchant)) - before;
		const entries = ledger.filter(e => e.refId === sweep.id || e.refType === "sweep_item");
		expect(entries.map(e => e.kind).sort()).toEqual(["fee", "sweep"]);
		// What the merchant received is the sweep entry; the fee entry is the rest; the deposit holds 0.
		expect(money(ledger.find(e => e.kind === "sweep")!.amount).neg().eq(money(fromBaseUnits(received, 9)))).toBe(true);
		expect(money(sweep.feePaid!).plus(money(received.toString())).eq(money("1500000000"))).toBe(true);
		expect(await ledgerEqualsChain(TON_ID)).toBe(true);
		// Its record's nonce is the counter, its seqno the message's (0: it deployed the wallet).
		expect(signedOf(sweep)!.seqno).toBe(0);
		// Later steps send nothing more.
		await runner().step(fence);
		expect(await db.app.models.Sweep.count({ where: { networkId: NET, fromAddress: c.depositAddress } })).toBe(1);
	}, 120_000);

	it("sweeps 20 USDT deposits after ONE batched top-up from the sweeper wallet; excesses return to it; the ledger equals the emulator", async () => {
		const paid = [];
		for (let i = 0; i < 20; i++) {
			const c = await checkout(USDT_ID, "20", 6);
			await chain.mint(jetton, c.addr, 20_000_000n);
			paid.push(c);
		}
		await chain.settle();
		const sweeperBefore = chain.balance(Address.parseRaw(sweeper));
		const merchantBefore = await chain.jettonBalance(jetton, Address.parse(merchant));
		await stepUntil("20 jetton sweeps confirmed", async () => (await db.app.models.Sweep.count({ where: { networkId: NET, kind: "token", status: "confirmed" } })) === 20);
		const topups = await db.app.models.Sweep.findAll({ where: { networkId: NET, kind: "topup" } });
		expect(topups).toHaveLength(1);
		expect(topups[0].status).toBe("confirmed");
		expect(await db.app.models.SweepItem.count({ where: { sweepId: topups[0].id } })).toBe(20);
		expect(BigInt(signedOf(topups[0])!.total!)).toBe(20n * 50_000_000n);
		for (const d of paid) {
			expect(await chain.jettonBalance(jetton, d.addr)).toBe(0n);
			expect(chain.status(d.addr)).toBe("nonexist");
		}
		expect((await chain.jettonBalance(jetton, Address.parse(merchant))) - merchantBefore).toBe(400_000_000n);
		expect(await ledgerEqualsChain(USDT_ID)).toBe(true);
		// The sweeper paid the top-ups and their fee, and got the unused part back as excesses.
		const spent = sweeperBefore - chain.balance(Address.parseRaw(sweeper));
		expect(spent).toBeGreaterThan(0n);
		expect(spent).toBeLessThan(20n * 50_000_000n);
		console.log(`sweep-ton: ${spent / 20n} nanotons of the sweeper's TON per swept jetton deposit (20 deposits, one top-up)`);
	}, 300_000);

	it("pays a TON withdrawal request exactly once from a deposit; its fee is in the ledger", async () => {
		const c = await checkout(TON_ID, "3", 9);
		noDestination.add(c.transactionId); // no automatic sweep: only the request moves funds
		await chain.pay(chain.faucet, c.addr, 3n * TON, { bounce: false });
		await chain.settle();
		const payee = (await chain.wallet()).friendly;
		const id = "00000000-0000-4000-8000-0000000070b1";
		const now = new Date();
		await db.app.models.WithdrawalRequest.create({ id, organizationId: ORG, mode: "sandbox", userId: 1, amount: "1.25", tokenId: TON_ID, sourceNetworkId: NET, destinationNetworkId: null, address: payee, strategy: 1, status: "pending", reason: null, txHash: null, createdAt: now, updatedAt: now, completedAt: null });
		requests.push({ id, organizationId: ORG, mode: "sandbox", amount: "1.25", tokenId: TON_ID, sourceNetworkId: NET, destinationNetworkId: null, address: payee, createdAt: now.toISOString(), status: "pending" });
		await stepUntil("request paid", async () => requests.find(r => r.id === id)!.status === "completed");
		expect(chain.balance(Address.parse(payee))).toBe(1_250_000_000n);
		// The deposit stays deployed with the rest; the ledger (credit − withdrawal − fee) equals it.
		expect(chain.status(c.addr)).toBe("active");
		const sweep = (await db.app.models.Sweep.findOne({ where: { requestId: id } }))!;
		const fee = ledger.find(e => e.kind === "fee" && e.refId === sweep.id)!;
		expect(money(fee.amount).neg().eq(money(fromBaseUnits(BigInt(sweep.feePaid!), 9)))).toBe(true);
		expect(3n * TON - 1_250_000_000n - BigInt(sweep.feePaid!)).toBe(chain.balance(c.addr));
		expect(await ledgerEqualsChain(TON_ID)).toBe(true);
		await runner().step(fence);
		await chain.settle();
		expect(await db.app.models.Sweep.count({ where: { requestId: id } })).toBe(1);
	}, 120_000);

	it("pays a USDT withdrawal request of part of a deposit exactly once: the sweeper tops the deposit up, the rest stays there and in the ledger", async () => {
		const c = await checkout(USDT_ID, "10", 6);
		noDestination.add(c.transactionId); // no automatic sweep: only the request moves funds
		await chain.mint(jetton, c.addr, 10_000_000n);
		await chain.settle();
		expect(chain.balance(c.addr)).toBeLessThan(60_000_000n); // not enough TON of its own for the transfer: a top-up first
		const payee = (await chain.wallet()).friendly;
		const id = "00000000-0000-4000-8000-0000000070b2";
		const now = new Date();
		await db.app.models.WithdrawalRequest.create({ id, organizationId: ORG, mode: "sandbox", userId: 1, amount: "4.5", tokenId: USDT_ID, sourceNetworkId: NET, destinationNetworkId: null, address: payee, strategy: 1, status: "pending", reason: null, txHash: null, createdAt: now, updatedAt: now, completedAt: null });
		requests.push({ id, organizationId: ORG, mode: "sandbox", amount: "4.5", tokenId: USDT_ID, sourceNetworkId: NET, destinationNetworkId: null, address: payee, createdAt: now.toISOString(), status: "pending" });
		// The sweeper wallet signs again only once its last message (an earlier case's top-up) is past its
		// validUntil; the emulator's clock moves only when told to.
		chain.advanceTime(31);
		await chain.seal();
		const entriesBefore = ledger.length;
		const sweeperBefore = chain.balance(Address.parseRaw(sweeper));
		await stepUntil("jetton request paid", async () => requests.find(r => r.id === id)!.status === "completed");
		// Exactly the request's amount reached the payee; the rest stays at the deposit.
		expect(await chain.jettonBalance(jetton, Address.parse(payee))).toBe(4_500_000n);
		expect(await chain.jettonBalance(jetton, c.addr)).toBe(5_500_000n);
		const own = await db.app.models.Sweep.findAll({ where: { requestId: id }, order: [["createdAt", "ASC"]] });
		expect(own.map(s => [s.kind, s.status]).sort()).toEqual([["token", "confirmed"], ["topup", "confirmed"]]);
		const payment = own.find(s => s.kind === "token")!;
		expect(payment.fromAddress).toBe(c.depositAddress);
		expect(Address.parseFriendly(payment.toAddress).isBounceable).toBe(false);
		expect(signedOf(payment)!.jettonAmount).toBe("4500000");
		expect(requests.find(r => r.id === id)!.txHash).toBe(payment.txHash);
		// The merchant's ledger: only the `withdrawal` entry; the TON was the sweeper's (no fee entry for the merchant).
		expect(ledger.slice(entriesBefore)).toEqual([{ tokenId: USDT_ID, kind: "withdrawal", amount: "-4.5", refType: "request", refId: id }]);
		expect(ledgerSum(USDT_ID).gt(0)).toBe(true);
		expect(await ledgerEqualsChain(USDT_ID)).toBe(true);
		const spent = sweeperBefore - chain.balance(Address.parseRaw(sweeper));
		expect(spent).toBeGreaterThan(0n); // the top-up, less the excesses returned to it
		// Later steps pay nothing more.
		for (let i = 0; i < 2; i++) {
			await runner().step(fence);
			await chain.settle();
		}
		expect(await db.app.models.Sweep.count({ where: { requestId: id } })).toBe(2);
		expect(await chain.jettonBalance(jetton, Address.parse(payee))).toBe(4_500_000n);
		expect(await chain.jettonBalance(jetton, c.addr)).toBe(5_500_000n);
	}, 300_000);

	/** The sweeps (top-ups included) whose items hold `address`, oldest first. */
	async function sweepsOf(address: string) {
		const items = await db.app.models.SweepItem.findAll({ where: { depositAddress: address } });
		return db.app.models.Sweep.findAll({ where: { id: items.map(i => i.sweepId) }, order: [["createdAt", "ASC"]] });
	}

	/**
	 * The basechain's forward prices (config param 25) times `k`, as validators may vote them up
	 * (1: as they were). At 10x the deposit's first message (it deploys the wallet: its state init
	 * is paid at forward prices) still lands, but what its 0.05 TON leaves for the reference jetton
	 * wallet does not pay that wallet's gas: the transfer fails there, on the real TVM.
	 */
	let defaultConfig: Cell | null = null;
	function forwardPricesTimes(k: bigint) {
		const bc = chain.facade.blockchain;
		defaultConfig ??= bc.config;
		if (k === 1n) return bc.setConfig(defaultConfig);
		const p = loadConfig(defaultConfig)[25];
		const f = p.anon0;
		bc.setConfig(updateConfig(defaultConfig, { ...p, anon0: { ...f, lump_price: f.lump_price * k, bit_price: f.bit_price * k, _cell_price: f._cell_price * k } }));
	}

	it("a jetton sweep that lands but whose transfer the jetton wallet does not take (too little TON for its gas at raised network fees) fails with its cost; retried after the pause (a new top-up), blocked after SWEEP_MAX_FAILURES (no more top-ups) until support clears it; a sweep that lands clears the hold", async () => {
		const c = await checkout(USDT_ID, "7", 6);
		await chain.mint(jetton, c.addr, 7_000_000n);
		await chain.settle();
		// The sweeper wallet signs again only once its last message (an earlier case's) is past its validUntil.
		chain.advanceTime(31);
		await chain.seal();
		const r = runner();
		const backoff = 60_000;
		/** `steps` steps plan nothing for the deposit and cost the sweeper wallet nothing. */
		const nothingSent = async (steps: number) => {
			const count = (await sweepsOf(c.depositAddress)).length;
			const balance = chain.balance(Address.parseRaw(sweeper));
			for (let i = 0; i < steps; i++) {
				await r.step(fence);
				await chain.settle();
			}
			expect(await sweepsOf(c.depositAddress)).toHaveLength(count);
			expect(chain.balance(Address.parseRaw(sweeper))).toBe(balance);
		};
		forwardPricesTimes(10n);
		try {
			for (let attempt = 1; attempt <= 3; attempt++) {
				const sweeperBefore = chain.balance(Address.parseRaw(sweeper));
				const failedSweep = await stepUntil(`jetton sweep ${attempt} failed`, async () => {
					const own = (await sweepsOf(c.depositAddress)).filter(s => s.kind === "token" && s.status === "failed");
					return own.length === attempt ? own[attempt - 1] : null;
				}, r);
				if (process.env.DEBUG_SWEEP) console.log(failedSweep.reason, failedSweep.feePaid);
				// Too little TON reached the jetton wallet to pay its gas: its compute phase ran out (exit code -14), the jettons stayed.
				expect(failedSweep.reason).toMatch(/failed on chain: the deposit's jetton wallet did not take the transfer \(exit code -14\)/);
				expect(BigInt(failedSweep.feePaid!)).toBeGreaterThan(0n);
				const own = await sweepsOf(c.depositAddress);
				expect(own.filter(s => s.kind === "topup").map(s => s.status)).toEqual(Array(attempt).fill("confirmed"));
				expect(own.filter(s => s.status !== "confirmed" && s.status !== "failed")).toHaveLength(0);
				// Each attempt cost the sweeper a top-up; the jettons never left the deposit.
				expect(chain.balance(Address.parseRaw(sweeper))).toBeLessThan(sweeperBefore);
				expect(await chain.jettonBalance(jetton, c.addr)).toBe(7_000_000n);
				// The merchant's books: no entry for a sweep that moved nothing (its TON was the sweeper's top-up).
				expect(ledger.filter(e => e.refId === failedSweep.id)).toHaveLength(0);
				expect(await ledgerEqualsChain(USDT_ID)).toBe(true);
				const hold = (await db.app.models.SweepHold.findOne({ where: { networkId: NET, scope: "deposit", tokenId: USDT_ID } }))!;
				expect(sameTonAddress(hold.address, c.depositAddress)).toBe(true);
				expect(hold.failures).toBe(attempt);
				expect(Boolean(hold.blockedAt)).toBe(attempt === 3);
				// Held: the deposit's last message's window passes, and still nothing is planned before the pause ends.
				chain.advanceTime(31);
				await chain.seal();
				await nothingSent(2);
				clockMs += backoff * 2 ** (attempt - 1) + 1_000;
			}
			// Blocked: long past any pause, nothing more is sent from it, and no top-up to it.
			clockMs += 365 * 86_400_000;
			await nothingSent(3);
		} finally {
			forwardPricesTimes(1n);
		}
		// Support clears it (sweeper-ton.support.clearHold runs clearHoldsAt with sameTonAddress), by the address as the merchant sees it.
		expect(await clearHoldsAt(db.app.models, NET, c.depositAddress, sameTonAddress)).toBe(1);
		const merchantBefore = await chain.jettonBalance(jetton, Address.parse(merchant));
		const done = await stepUntil("swept once cleared", async () => (await sweepsOf(c.depositAddress)).find(s => s.kind === "token" && s.status === "confirmed"), r);
		expect((await chain.jettonBalance(jetton, Address.parse(merchant))) - merchantBefore).toBe(7_000_000n);
		expect(await chain.jettonBalance(jetton, c.addr)).toBe(0n);
		expect(ledger.filter(e => e.kind === "sweep" && e.tokenId === USDT_ID && e.refType === "sweep_item").length).toBeGreaterThan(0);
		expect(await ledgerEqualsChain(USDT_ID)).toBe(true);
		expect(done.status).toBe("confirmed");
		expect(await db.app.models.SweepHold.count({ where: { networkId: NET } })).toBe(0);
	}, 300_000);

	it("a TON sweep that lands but sends nothing (forward fees raised 10x: its message skipped) fails with its fee in the ledger; swept after the pause, which clears the hold", async () => {
		const c = await checkout(TON_ID, "0.04", 9);
		await chain.pay(chain.faucet, c.addr, 40_000_000n, { bounce: false });
		await chain.settle();
		const r = runner();
		forwardPricesTimes(10n);
		let first;
		try {
			first = await stepUntil("TON sweep failed", async () => (await sweepsOf(c.depositAddress)).find(s => s.status === "failed"), r);
		} finally {
			forwardPricesTimes(1n);
		}
		if (process.env.DEBUG_SWEEP) console.log(first.reason, first.feePaid, chain.balance(c.addr));
		expect(first.reason).toMatch(/failed on chain: accepted, but its message was not sent \(action skipped\)/);
		// Its fee was the merchant's TON: a `fee` entry equal to the record's, and the ledger equals what the deposit still holds.
		const fee = ledger.filter(e => e.kind === "fee" && e.refId === first.id);
		expect(fee).toHaveLength(1);
		expect(toBaseUnits(fee[0].amount.replace(/^-/, ""), 9)).toBe(BigInt(first.feePaid!));
		expect(chain.balance(c.addr)).toBe(40_000_000n - BigInt(first.feePaid!));
		expect(await ledgerEqualsChain(TON_ID)).toBe(true);
		expect((await db.app.models.SweepHold.findOne({ where: { networkId: NET, tokenId: TON_ID } }))!.failures).toBe(1);
		// What is left (0.002 TON) is below a sweep's minimum: a later payment to the deposit (credited to its
		// checkout) makes it worth sweeping again, but the hold's pause comes first; then swept, the hold deleted.
		const left = chain.balance(c.addr);
		await chain.pay(chain.faucet, c.addr, 50_000_000n, { bounce: false });
		await chain.settle();
		// The deposit is a deployed wallet now: it paid its own compute fee on receipt. Credited here with what it kept.
		const kept = chain.balance(c.addr) - left;
		expect(kept > 49_000_000n && kept <= 50_000_000n).toBe(true);
		ledger.push({ tokenId: TON_ID, kind: "credit", amount: fromBaseUnits(kept, 9), refType: "transaction", refId: c.transactionId });
		chain.advanceTime(31);
		await chain.seal();
		await r.step(fence);
		expect(await sweepsOf(c.depositAddress)).toHaveLength(1);
		clockMs += 61_000;
		const done = await stepUntil("TON sweep confirmed", async () => (await sweepsOf(c.depositAddress)).find(s => s.status === "confirmed"), r);
		expect(chain.balance(c.addr)).toBe(0n);
		expect(await ledgerEqualsChain(TON_ID)).toBe(true);
		expect(done.id).not.toBe(first.id);
		expect(await db.app.models.SweepHold.count({ where: { networkId: NET } })).toBe(0);
	}, 300_000);

	it("a crash after the message is recorded and before it is sent: the same message is sent after the restart, never a second one", async () => {
		const c = await checkout(TON_ID, "2", 9);
		await chain.pay(chain.faucet, c.addr, 2n * TON, { bounce: false });
		await chain.settle();
		// The first process records the signed message, then dies before the node has it.
		const crashing: TonApi = { get: api.get, post: async (path, body) => (path === "message" ? Promise.reject(new Error("process killed")) : api.post(path, body)) };
		const dying = runner({ api: crashing });
		await dying.step(fence); // planned
		await dying.step(fence); // signed and recorded; the send never reaches the node
		await chain.settle();
		const recorded = (await db.app.models.Sweep.findOne({ where: { networkId: NET, fromAddress: c.depositAddress } }))!;
		expect(recorded.status).toBe("signed");
		expect(chain.status(c.addr)).toBe("uninit");
		// A new process (a new runner) sends exactly those bytes.
		const sent: string[] = [];
		const watching: TonApi = { get: api.get, post: async (path, body) => (path === "message" && sent.push((body as { boc: string }).boc), api.post(path, body)) };
		const done = await stepUntil("swept", () => db.app.models.Sweep.findOne({ where: { id: recorded.id, status: "confirmed" } }), runner({ api: watching }));
		expect(sent.length).toBeGreaterThan(0);
		expect(new Set(sent)).toEqual(new Set([signedOf(recorded)!.boc]));
		expect(done.hashes).toEqual([recorded.txHash]);
		expect(await db.app.models.Sweep.count({ where: { networkId: NET, fromAddress: c.depositAddress } })).toBe(1);
		expect(chain.balance(c.addr)).toBe(0n);
		expect(await ledgerEqualsChain(TON_ID)).toBe(true);
	}, 120_000);

	it("a message that expires unaccepted is proven dead and only then signed again; the funds are paid once", async () => {
		const c = await checkout(TON_ID, "1", 9);
		await chain.pay(chain.faucet, c.addr, TON, { bounce: false });
		await chain.settle();
		const before = chain.balance(Address.parse(merchant));
		chain.setExternals("drop"); // answered, never run: lost between the API and the validators
		const r = runner();
		for (let i = 0; i < 3; i++) {
			await r.step(fence);
			await chain.settle();
		}
		const first = (await db.app.models.Sweep.findOne({ where: { networkId: NET, fromAddress: c.depositAddress } }))!;
		expect(first.status).toBe("broadcast"); // pending: before validUntil nothing is proven, the same bytes go again
		expect(await db.app.models.Sweep.count({ where: { networkId: NET, fromAddress: c.depositAddress } })).toBe(1);
		chain.advanceTime(31);
		await chain.seal();
		chain.setExternals("execute");
		await r.step(fence);
		expect((await db.app.models.Sweep.findByPk(first.id))!.status).toBe("failed");
		expect((await db.app.models.Sweep.findByPk(first.id))!.reason).toMatch(/expired unaccepted/);
		const second = await stepUntil("signed again and swept", () => db.app.models.Sweep.findOne({ where: { networkId: NET, fromAddress: c.depositAddress, status: "confirmed" } }), r);
		expect(second.id).not.toBe(first.id);
		expect(second.txHash).not.toBe(first.txHash);
		expect(chain.balance(c.addr)).toBe(0n);
		// Once: the second sweep's ledger entry and fee are the whole TON; the merchant got that entry
		// (less the storage fee its own uninit account pays on receipt: a nanoton or so).
		const item = (await db.app.models.SweepItem.findOne({ where: { sweepId: second.id } }))!;
		const sent = toBaseUnits(ledger.find(e => e.refType === "sweep_item" && e.refId === String(item.id))!.amount.replace(/^-/, ""), 9);
		expect(sent + BigInt(second.feePaid!)).toBe(TON);
		const received = chain.balance(Address.parse(merchant)) - before;
		expect(received <= sent && received > sent - 1_000n).toBe(true);
		expect(await ledgerEqualsChain(TON_ID)).toBe(true);
	}, 120_000);

	it("a message whose seqno another message took (superseded) is never signed again: stalled for an operator, its funds locked", async () => {
		const c = await checkout(TON_ID, "1", 9);
		await chain.pay(chain.faucet, c.addr, TON, { bounce: false });
		await chain.settle();
		chain.setExternals("drop");
		const r = runner();
		await r.step(fence); // planned
		await r.step(fence); // signed, sent, lost
		await chain.settle();
		const mine = (await db.app.models.Sweep.findOne({ where: { networkId: NET, fromAddress: c.depositAddress } }))!;
		expect(mine.status).toBe("broadcast");
		// Another holder of the deposit key sends its own message with the same seqno, and it lands.
		chain.setExternals("execute");
		const key = await tonCodec.derivePrivateKey(ABANDON_SEED, { isTestnet: false }, c.derivationIndex);
		const other = (await chain.wallet()).friendly;
		const foreign = buildTonPayment({ wallet: { key, version: "v4r2", seqno: 0, deployed: false }, balance: TON, payee: other, amount: TON / 2n, validUntil: chain.facade.now() + 30 });
		expect((await chain.api("/api/v3/message", { boc: foreign.boc })).status).toBe(200);
		await chain.settle();
		chain.advanceTime(31);
		await chain.seal();
		for (let i = 0; i < 4; i++) {
			await r.step(fence);
			await chain.settle();
		}
		const after = (await db.app.models.Sweep.findByPk(mine.id))!;
		expect(after.status).toBe("stalled");
		expect(after.reason).toMatch(/seqno 0 .* was used/);
		// Nothing signed again for that deposit, its item still open (locked), nothing in the ledger for it.
		expect(await db.app.models.Sweep.count({ where: { networkId: NET, fromAddress: c.depositAddress } })).toBe(1);
		const item = (await db.app.models.SweepItem.findOne({ where: { sweepId: mine.id } }))!;
		expect(item.openKey).not.toBeNull();
		expect(ledger.filter(e => e.refId === mine.id || (e.refType === "sweep_item" && e.refId === String(item.id)))).toHaveLength(0);
		// The operator books what the unknown message moved (docs/operations.md "A stalled sweep"), so the books match again.
		ledger.push({ tokenId: TON_ID, kind: "adjustment", amount: `-${fromBaseUnits(TON - chain.balance(c.addr), 9)}`, refType: "operator", refId: mine.id });
		expect(await ledgerEqualsChain(TON_ID)).toBe(true);
	}, 120_000);

	it("a runner that lost its lease writes nothing", async () => {
		const c = await checkout(TON_ID, "1", 9);
		await chain.pay(chain.faucet, c.addr, TON, { bounce: false });
		await chain.settle();
		const sweeps = await db.app.models.Sweep.count();
		const entries = ledger.length;
		await releaseLease(db.app.models, fence);
		const other = (await acquireLease(db.app.models, LEASE, "test:2:sweeper-ton", 600_000, Date.now()))!;
		await expect(runner().step(fence)).rejects.toBeInstanceOf(LeaseLostError);
		expect(await db.app.models.Sweep.count()).toBe(sweeps);
		expect(ledger.length).toBe(entries);
		expect(chain.balance(c.addr)).toBe(TON);
		fence = other;
		await stepUntil("swept by the new holder", () => db.app.models.Sweep.findOne({ where: { networkId: NET, fromAddress: c.depositAddress, status: "confirmed" } }));
		expect(await ledgerEqualsChain(TON_ID)).toBe(true);
	}, 120_000);

	it("reads SWEEPER_PRIVATE_KEY_TON as a seed, a secret key or a 24-word mnemonic", async () => {
		const seed = Buffer.alloc(32, 7);
		const pair = keyPairFromSeed(seed);
		expect(Buffer.from(await tonSweeperKey(seed.toString("hex")))).toEqual(seed);
		expect(Buffer.from(await tonSweeperKey(`0x${pair.secretKey.toString("hex")}`))).toEqual(pair.secretKey);
		const { mnemonicNew, mnemonicToPrivateKey } = await import("@ton/crypto");
		const words = await mnemonicNew(24);
		expect(Buffer.from(await tonSweeperKey(words.join(" ")))).toEqual((await mnemonicToPrivateKey(words)).secretKey);
		await expect(tonSweeperKey(words.slice().reverse().join(" "))).rejects.toThrow(/not a valid 24-word TON mnemonic/);
	});
	it("signs the next top-up batch as soon as the previous one landed: the sweeper wallet, never destroyed, has no replay window", async () => {
		const paid = [];
		for (let i = 0; i < 4; i++) {
			const c = await checkout(USDT_ID, "3", 6);
			await chain.mint(jetton, c.addr, 3_000_000n);
			paid.push(c);
		}
		await chain.settle();
		const topupsBefore = await db.app.models.Sweep.count({ where: { networkId: NET, kind: "topup" } });
		// Two batches of two; each message valid for an hour of chain time, which the test never lets pass.
		const r = runner({ batchSize: 2, validForSec: 3600 });
		const addresses = paid.map(c => c.depositAddress);
		await stepUntil("4 jetton sweeps confirmed", async () => (await db.app.models.Sweep.count({ where: { networkId: NET, kind: "token", status: "confirmed", fromAddress: addresses } })) === 4, r);
		const topups = await db.app.models.Sweep.findAll({ where: { networkId: NET, kind: "topup" }, order: [["nonce", "ASC"]] });
		expect(topups.length - topupsBefore).toBe(2);
		const mine = topups.slice(topupsBefore);
		expect(mine.map(t => t.status)).toEqual(["confirmed", "confirmed"]);
		// The second was signed while the first's validUntil was still ahead (seqno + 1, not a replay).
		const [first, second] = mine.map(t => signedOf(t)!);
		expect(second.seqno).toBe(first.seqno + 1);
		expect(second.validUntil - first.validUntil).toBeLessThan(3600);
		for (const d of paid) expect(await chain.jettonBalance(jetton, d.addr)).toBe(0n);
		expect(await ledgerEqualsChain(USDT_ID)).toBe(true);
	}, 300_000);
});
