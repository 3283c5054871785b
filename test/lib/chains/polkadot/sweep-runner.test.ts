/**
 * The Polkadot sweep runner (lib/chains/polkadot/sweep-runner.ts) on the Polkadot test node
 * (test/helpers/polkadot-node.ts: chopsticks running a real Asset Hub runtime offline; every
 * extrinsic is validated and executed by the runtime, ed25519 deposit signatures included) and
 * the sweeper's real records on this project's database (both jest projects). The services' side
 * (sweepable checkouts, destinations, the ledger, requests) is a small in-memory stand-in
 * (test/helpers/sweeper-services.ts) whose ledger writes are fenced like withdrawals.record. Each case ends with the ledger equal to what
 * the chain holds at the deposits.
 */
import type { KeyringPair } from "@polkadot/keyring/types";
import { polkadotCodec } from "../../../../lib/chains/polkadot/codec";
import { PolkadotSweepRunner, signedOf, type PolkadotSweepRunnerDeps } from "../../../../lib/chains/polkadot/sweep-runner";
import { polkadotSweeperPair, sendVerdict } from "../../../../lib/chains/polkadot/sweep";
import { fromBaseUnits, money } from "../../../../lib/money";
import type { SweepNetwork } from "../../../../lib/sweeps/ports";
import type { SweepFence } from "../../../../lib/sweeps/store";
import { acquireLease, ensureCursor } from "../../../../lib/watchers/store";
import { startNode, type TestNode } from "../../../helpers/harness";
import { startPolkadotNode, USDT, type PolkadotNode } from "../../../helpers/polkadot-node";
import { standInServices } from "../../../helpers/sweeper-services";
import { ABANDON_SEED } from "../fixtures";

const NET = "00000000-0000-4000-8000-0000000d07a1";
const NATIVE_ID = "00000000-0000-4000-8000-0000000d07a2";
const USDT_ID = "00000000-0000-4000-8000-0000000d07a3";
const ORG = "00000000-0000-4000-8000-0000000d07a4";
const LEASE = "00000000-0000-4000-8000-0000000d07f0";
const SWEEPER_SEED = `0x${"5a".repeat(32)}`;
const PERIOD = 8;

describe("sendVerdict", () => {
	it("is landed when found, pending until the finalized head reaches the era's death, then dead or superseded by the nonce", () => {
		expect(sendVerdict({ found: true, finalized: 5, death: 10, finalizedNonce: 0, nonce: 0 })).toBe("landed");
		expect(sendVerdict({ found: false, finalized: 9, death: 10, finalizedNonce: 9, nonce: 0 })).toBe("pending");
		expect(sendVerdict({ found: false, finalized: 10, death: 10, finalizedNonce: 3, nonce: 3 })).toBe("dead");
		expect(sendVerdict({ found: false, finalized: 10, death: 10, finalizedNonce: 4, nonce: 3 })).toBe("superseded");
	});
});

describe("Polkadot sweep runner on chopsticks (Asset Hub runtime)", () => {
	let db: TestNode;
	let chain: PolkadotNode;
	let fence: SweepFence;
	let merchant: KeyringPair;
	let sweeper: KeyringPair;
	let payee: KeyringPair;
	let payer: KeyringPair;
	let decimals = 12;
	const network: SweepNetwork = { id: NET, slug: "polkadot-test", chainId: 0, requiredConfirmations: 1, eip7702: false, tokens: [] };
	const { ports, ledger, requests, ledgerSum, settle, checkouts } = standInServices({ db: () => db, merchant: () => merchant.address });
	const deposits: Array<{ tokenId: string; address: string }> = [];
	let next = 0;

	const runner = (over: Partial<PolkadotSweepRunnerDeps> = {}) =>
		new PolkadotSweepRunner({
			sequelize: db.app.sequelize,
			models: db.app.models,
			api: async () => chain.api,
			network,
			ss58Format: chain.ss58Format,
			sweeperKey: async () => sweeper,
			depositKey: index => polkadotCodec.derivePrivateKey(ABANDON_SEED, { isTestnet: true, ss58Prefix: chain.ss58Format }, index),
			ports,
			settings: { batchSize: 20, maxAgeMs: 0, eraPeriod: PERIOD, proofPolls: 2, proofMs: 0, maxFailures: 3, failureBackoffMs: 60_000 },
			now: () => new Date(),
			logger: process.env.DEBUG_SWEEP ? { info: (...a: unknown[]) => process.stderr.write(`INFO ${a.join(" ")}\n`), warn: (...a: unknown[]) => process.stderr.write(`WARN ${a.join(" ")}\n`), error: (...a: unknown[]) => process.stderr.write(`ERROR ${a.join(" ")}\n`) } : { info: () => undefined, warn: () => undefined, error: () => undefined },
			...over,
		});

	async function free(address: string): Promise<bigint> {
		const at = await chain.api.at(chain.finalized().hash);
		const a = (await at.query.system.account(address)) as unknown as { data: { free: { toString(): string } } };
		return BigInt(a.data.free.toString());
	}
	async function assetOf(address: string): Promise<bigint> {
		const at = await chain.api.at(chain.finalized().hash);
		const a = (await at.query.assets.account(USDT.id, address)) as unknown as { isSome: boolean; unwrap(): { balance: { toString(): string } } };
		return a.isSome ? BigInt(a.unwrap().balance.toString()) : 0n;
	}
	/** The ledger's balance of a token equals what all this file's deposits hold on chain (finalized). */
	async function ledgerEqualsChain(tokenId: string): Promise<void> {
		let held = 0n;
		for (const d of deposits.filter(x => x.tokenId === tokenId)) held += tokenId === NATIVE_ID ? await free(d.address) : await assetOf(d.address);
		expect(ledgerSum(tokenId).toFixed()).toBe(money(fromBaseUnits(held, tokenId === NATIVE_ID ? decimals : 6)).toFixed());
	}

	/** A settled checkout of `units` at a fresh deposit address, credited in the ledger (the chain funded by the caller). */
	async function checkout(tokenId: string, units: bigint) {
		const index = 200 + next++;
		const { address } = await polkadotCodec.deriveAddress(ABANDON_SEED, { isTestnet: true, ss58Prefix: chain.ss58Format }, index);
		const c = settle({ organizationId: ORG, depositAddress: address, derivationIndex: index, tokenId }, fromBaseUnits(units, tokenId === NATIVE_ID ? decimals : 6));
		deposits.push({ tokenId, address });
		return c;
	}

	/** A payer's real balances.transferKeepAlive to `to` (a deposit's payment), in a finalized block. */
	async function pay(to: string, planck: bigint): Promise<void> {
		await chain.api.tx.balances.transferKeepAlive(to, planck).signAndSend(payer);
		await chain.newBlock();
		expect(await free(to)).toBe(planck);
	}

	/** Steps, each followed by a (finalized) block, until `done` answers truthy. */
	async function stepUntil<T>(what: string, done: () => Promise<T | null | undefined | false>, r = runner(), max = 20): Promise<T> {
		for (let i = 0; i < max; i++) {
			await r.step(fence);
			await chain.newBlock();
			const v = await done();
			if (v) return v;
		}
		const rows = await db.app.models.Sweep.findAll({ where: { networkId: NET } });
		throw new Error(`not reached after ${max} steps: ${what}; sweeps: ${JSON.stringify(rows.map(x => [x.kind, x.status, x.reason, x.fromAddress]))}`);
	}

	beforeAll(async () => {
		db = await startNode({ services: [] });
		chain = await startPolkadotNode();
		decimals = chain.decimals;
		network.tokens = [
			{ tokenId: NATIVE_ID, symbol: chain.symbol, contractAddress: "", decimals },
			{ tokenId: USDT_ID, symbol: "USDT", contractAddress: String(USDT.id), decimals: 6 },
		];
		await ensureCursor(db.app.models, LEASE, "sweep", new Date());
		fence = (await acquireLease(db.app.models, LEASE, "test:1:sweeper-polkadot", 600_000, Date.now()))!;
		merchant = chain.pair("//Merchant");
		payee = chain.pair("//Payee");
		payer = chain.pair("//Payer");
		await chain.fund(payer.address, 1_000n * 10n ** BigInt(decimals));
		// fund() writes balances by storage, not issuance: the runtime refuses to move more than the
		// total issuance (ArithmeticError::Underflow), so it is raised to cover what was written.
		await chain.rpc("dev_setStorage", [{ Balances: { TotalIssuance: (1_000_000n * 10n ** BigInt(decimals)).toString() } }]);
		sweeper = await polkadotSweeperPair(SWEEPER_SEED, chain.ss58Format);
		await chain.fund(sweeper.address, 1_000n * 10n ** BigInt(decimals));
		// The merchant's account exists (as a merchant's would): small sweeps need not reach the ED on their own.
		await chain.fund(merchant.address, 10n ** BigInt(decimals));
		await chain.newBlock();
	}, 240_000);

	afterAll(async () => {
		await chain?.stop();
		await db?.stop();
	});

	afterEach(() => {
		checkouts.length = 0;
	});

	it("sweeps a native deposit to zero (transferAll, reaped), the deposit paying its fee; ledger sweep + fee equal the chain", async () => {
		const amount = 5n * 10n ** BigInt(decimals);
		const c = await checkout(NATIVE_ID, amount);
		await pay(c.depositAddress, amount);
		const before = await free(merchant.address);
		const sweep = await stepUntil("native sweep confirmed", () => db.app.models.Sweep.findOne({ where: { networkId: NET, fromAddress: c.depositAddress, status: "confirmed" } }));
		expect(sweep.kind).toBe("native");
		expect(await free(c.depositAddress)).toBe(0n);
		const received = (await free(merchant.address)) - before;
		expect(received + BigInt(sweep.feePaid!)).toBe(amount);
		const entries = ledger.filter(e => e.refId === sweep.id || (e.refType === "sweep_item" && e.kind === "sweep" && e.tokenId === NATIVE_ID));
		expect(entries.map(e => e.kind).sort()).toEqual(["fee", "sweep"]);
		expect(money(entries.find(e => e.kind === "sweep")!.amount).neg().toFixed()).toBe(money(fromBaseUnits(received, decimals)).toFixed());
		const signed = signedOf(sweep)!;
		expect(signed.death - signed.birth).toBe(PERIOD);
		await ledgerEqualsChain(NATIVE_ID);
		// Later steps send nothing more.
		await runner().step(fence);
		expect(await db.app.models.Sweep.count({ where: { networkId: NET, fromAddress: c.depositAddress } })).toBe(1);
	}, 240_000);

	it("after a crash between recording and sending, submits the SAME recorded bytes (one extrinsic, one record)", async () => {
		const amount = 2n * 10n ** BigInt(decimals);
		const c = await checkout(NATIVE_ID, amount);
		await pay(c.depositAddress, amount);
		// The first process records the signed extrinsic, then "dies" before it reaches the node.
		const crashed = runner({ submit: async () => { throw new Error("process killed"); } });
		await crashed.step(fence); // planned
		await crashed.step(fence); // signed and recorded; its submission never happens
		const recorded = (await db.app.models.Sweep.findOne({ where: { networkId: NET, fromAddress: c.depositAddress } }))!;
		expect(recorded.status).toBe("signed");
		const hex = signedOf(recorded)!.hex;
		const sent: string[] = [];
		const restarted = runner({ submit: async (api, h) => { sent.push(h); await api.rpc.author.submitExtrinsic(h); } });
		const sweep = await stepUntil("confirmed after the restart", () => db.app.models.Sweep.findOne({ where: { id: recorded.id, status: "confirmed" } }), restarted);
		expect(sent[0]).toBe(hex);
		expect(new Set(sent)).toEqual(new Set([hex]));
		expect(sweep.txHash).toBe(recorded.txHash);
		expect(await db.app.models.Sweep.count({ where: { networkId: NET, fromAddress: c.depositAddress } })).toBe(1);
		expect(await free(c.depositAddress)).toBe(0n);
		await ledgerEqualsChain(NATIVE_ID);
	}, 240_000);

	it("re-signs an extrinsic the chain never saw only once the FINALIZED head is past its era", async () => {
		const amount = 3n * 10n ** BigInt(decimals);
		const c = await checkout(NATIVE_ID, amount);
		await pay(c.depositAddress, amount);
		// A node that accepts the submission and drops it: the extrinsic is never in a block.
		const dropping = runner({ submit: async () => undefined });
		await dropping.step(fence); // planned
		await dropping.step(fence); // signed, "submitted"
		const first = (await db.app.models.Sweep.findOne({ where: { networkId: NET, fromAddress: c.depositAddress } }))!;
		const era = signedOf(first)!;
		expect(first.status).toBe("broadcast");
		// Blocks past its death, but none finalized: still pending, not re-signed.
		chain.setAutoFinalize(false);
		try {
			await chain.newBlock(era.death - (await chain.head()).number + 2);
			for (let i = 0; i < 3; i++) await dropping.step(fence);
			expect((await db.app.models.Sweep.findByPk(first.id))!.status).toBe("broadcast");
			expect(await db.app.models.Sweep.count({ where: { networkId: NET, fromAddress: c.depositAddress } })).toBe(1);
			// Finalized up to the block before its death: still possible, still pending.
			await chain.finalize(era.death - 1);
			await dropping.step(fence);
			expect((await db.app.models.Sweep.findByPk(first.id))!.status).toBe("broadcast");
			await chain.finalize();
		} finally {
			chain.setAutoFinalize(true);
		}
		// Past its era at the finalized head, in no block, nonce unused: proven dead, its funds signed again.
		const sweep = await stepUntil("re-signed and confirmed", () => db.app.models.Sweep.findOne({ where: { networkId: NET, fromAddress: c.depositAddress, status: "confirmed" } }));
		expect((await db.app.models.Sweep.findByPk(first.id))!.status).toBe("failed");
		expect(sweep.id).not.toBe(first.id);
		expect(sweep.txHash).not.toBe(first.txHash);
		expect(signedOf(sweep)!.birth).toBeGreaterThanOrEqual(era.death);
		expect(await free(c.depositAddress)).toBe(0n);
		await ledgerEqualsChain(NATIVE_ID);
	}, 300_000);

	it("pays a native withdrawal request exactly (transferKeepAlive), the rest swept after; the ledger equals the chain", async () => {
		const amount = 4n * 10n ** BigInt(decimals);
		const c = await checkout(NATIVE_ID, amount);
		await pay(c.depositAddress, amount);
		const id = "00000000-0000-4000-8000-0000000d07b1";
		const now = new Date();
		await db.app.models.WithdrawalRequest.create({ id, organizationId: ORG, mode: "sandbox", userId: 1, amount: "1.25", tokenId: NATIVE_ID, sourceNetworkId: NET, destinationNetworkId: null, address: payee.address, strategy: 1, status: "pending", reason: null, txHash: null, createdAt: now, updatedAt: now, completedAt: null });
		requests.push({ id, organizationId: ORG, mode: "sandbox", amount: "1.25", tokenId: NATIVE_ID, sourceNetworkId: NET, destinationNetworkId: null, address: payee.address, createdAt: now.toISOString(), status: "pending" });
		// Only the request is paid first (the sweep waits: the checkout's funds are reserved for it).
		const r = runner();
		await stepUntil("request paid", async () => requests.find(x => x.id === id)!.status === "completed", r);
		expect(await free(payee.address)).toBe(125n * 10n ** BigInt(decimals - 2));
		const paid = (await db.app.models.Sweep.findOne({ where: { requestId: id } }))!;
		expect(paid.status).toBe("confirmed");
		await ledgerEqualsChain(NATIVE_ID);
		// The rest is swept to the merchant once the payment's era is over.
		await stepUntil("rest swept", () => db.app.models.Sweep.findOne({ where: { networkId: NET, fromAddress: c.depositAddress, status: "confirmed", requestId: null } }), r, 30);
		expect(await free(c.depositAddress)).toBe(0n);
		await ledgerEqualsChain(NATIVE_ID);
	}, 300_000);

	it("sweeps 20 USDT deposits after ONE batched native top-up (utility.batchAll); deposits keep ≥ ED native; the ledger equals the chain", async () => {
		const units = 20_000_000n;
		const paid = [];
		const first = ((await chain.api.query.system.account(chain.assetAdmin.address)) as unknown as { nonce: { toNumber(): number } }).nonce.toNumber();
		for (let i = 0; i < 20; i++) {
			const c = await checkout(USDT_ID, units);
			await chain.api.tx.assets.mint(USDT.id, c.depositAddress, units).signAndSend(chain.assetAdmin, { nonce: first + i });
			paid.push(c);
		}
		await chain.newBlock();
		for (const c of paid) expect(await assetOf(c.depositAddress)).toBe(units);
		const merchantBefore = await assetOf(merchant.address);
		const sweeperBefore = await free(sweeper.address);
		await stepUntil("20 asset sweeps confirmed", async () => (await db.app.models.Sweep.count({ where: { networkId: NET, kind: "token", status: "confirmed" } })) === 20, runner(), 30);
		const topups = await db.app.models.Sweep.findAll({ where: { networkId: NET, kind: "topup" } });
		expect(topups).toHaveLength(1);
		expect(topups[0].status).toBe("confirmed");
		expect(await db.app.models.SweepItem.count({ where: { sweepId: topups[0].id } })).toBe(20);
		const each = BigInt(signedOf(topups[0])!.each!);
		const ed = BigInt(chain.api.consts.balances.existentialDeposit.toString());
		expect(each).toBeGreaterThan(ed);
		for (const c of paid) {
			expect(await assetOf(c.depositAddress)).toBe(0n);
			// The top-up's native less one fee stays at the deposit, above the ED (never reaped with dust).
			expect(await free(c.depositAddress)).toBeGreaterThan(ed);
		}
		expect((await assetOf(merchant.address)) - merchantBefore).toBe(20n * units);
		// The sweeper wallet paid the 20 top-ups and the batch's fee, nothing else.
		expect(sweeperBefore - (await free(sweeper.address))).toBe(20n * each + BigInt(topups[0].feePaid!));
		await ledgerEqualsChain(USDT_ID);
		// The asset sweeps' fees were the sweeper's native (the top-up): no merchant fee entry for them.
		const tokenSweeps = new Set((await db.app.models.Sweep.findAll({ where: { networkId: NET, kind: "token" } })).map(s => s.id));
		expect(ledger.some(e => e.kind === "fee" && tokenSweeps.has(e.refId))).toBe(false);
	}, 400_000);

	it("pays a USDT withdrawal request exactly after a native top-up of its deposit, the rest swept after; the ledger equals the chain", async () => {
		const c = await checkout(USDT_ID, 10_000_000n);
		await chain.mintAsset(USDT.id, c.depositAddress, 10_000_000n);
		expect(await free(c.depositAddress)).toBe(0n);
		const id = "00000000-0000-4000-8000-0000000d07b2";
		const now = new Date();
		await db.app.models.WithdrawalRequest.create({ id, organizationId: ORG, mode: "sandbox", userId: 1, amount: "4.5", tokenId: USDT_ID, sourceNetworkId: NET, destinationNetworkId: null, address: payee.address, strategy: 1, status: "pending", reason: null, txHash: null, createdAt: now, updatedAt: now, completedAt: null });
		requests.push({ id, organizationId: ORG, mode: "sandbox", amount: "4.5", tokenId: USDT_ID, sourceNetworkId: NET, destinationNetworkId: null, address: payee.address, createdAt: now.toISOString(), status: "pending" });
		const r = runner();
		await stepUntil("USDT request paid", async () => requests.find(x => x.id === id)!.status === "completed", r, 40);
		expect(await assetOf(payee.address)).toBe(4_500_000n);
		const own = await db.app.models.Sweep.findAll({ where: { requestId: id }, order: [["createdAt", "ASC"]] });
		expect(own.map(s => [s.kind, s.status])).toEqual([["topup", "confirmed"], ["token", "confirmed"]]);
		await ledgerEqualsChain(USDT_ID);
		// The rest (5.5 USDT) is swept to the merchant with the native the top-up left (no second top-up).
		await stepUntil("rest swept", () => db.app.models.Sweep.findOne({ where: { networkId: NET, fromAddress: c.depositAddress, kind: "token", status: "confirmed", requestId: null } }), r, 30);
		expect(await assetOf(c.depositAddress)).toBe(0n);
		expect(await db.app.models.Sweep.count({ where: { networkId: NET, kind: "topup", toAddress: c.depositAddress } })).toBe(1);
		expect(await free(c.depositAddress)).toBeGreaterThan(BigInt(chain.api.consts.balances.existentialDeposit.toString()));
		await ledgerEqualsChain(USDT_ID);
	}, 400_000);
});
