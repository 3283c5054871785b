/**
 * The Polkadot sweep runner's test bench (test/lib/chains/polkadot/sweep-runner*.test.ts): the
 * runner on the Polkadot sweeper test chain (test/helpers/polkadot-sweeper-node.ts: chopsticks
 * running a real Asset Hub runtime offline) and the sweeper's real records on this project's
 * database (both jest projects). The services' side (sweepable checkouts, destinations, the
 * ledger, requests) is a small in-memory stand-in whose ledger writes are fenced like
 * withdrawals.record. `polkadotRunnerBench()` registers the file's beforeAll/afterAll/afterEach.
 */
import type { KeyringPair } from "@polkadot/keyring/types";
import { polkadotCodec } from "../../../../lib/chains/polkadot/codec";
import { PolkadotSweepRunner, type PolkadotSweepRunnerDeps } from "../../../../lib/chains/polkadot/sweep-runner";
import { inTransaction } from "../../../../lib/db";
import { fromBaseUnits, money } from "../../../../lib/money";
import type { SweepableCheckout, SweeperPorts, SweepNetwork, WithdrawalRequestView } from "../../../../lib/sweeps/ports";
import { assertFence, type SweepFence } from "../../../../lib/sweeps/store";
import { acquireLease, ensureCursor } from "../../../../lib/watchers/store";
import { startNode, type TestNode } from "../../../helpers/harness";
import { USDT, type PolkadotNode } from "../../../helpers/polkadot-node";
import { startPolkadotSweeperChain, type PolkadotSweeperChain } from "../../../helpers/polkadot-sweeper-node";
import type { LedgerEntry } from "../../../helpers/sweeper-services";
import { ABANDON_SEED } from "../fixtures";

export const NET = "00000000-0000-4000-8000-0000000d07a1";
export const NATIVE_ID = "00000000-0000-4000-8000-0000000d07a2";
export const USDT_ID = "00000000-0000-4000-8000-0000000d07a3";
export const ORG = "00000000-0000-4000-8000-0000000d07a4";
const LEASE = "00000000-0000-4000-8000-0000000d07f0";
/** Blocks a signed extrinsic stays valid in these tests. */
export const PERIOD = 8;

export const RUNNER_SETTINGS = { batchSize: 20, maxAgeMs: 0, eraPeriod: PERIOD, proofPolls: 2, proofMs: 0, maxFailures: 3, failureBackoffMs: 60_000 };

export type { LedgerEntry };

export type TestRequest = WithdrawalRequestView & { status: string; txHash?: string };

export interface PolkadotRunnerBench {
	db: TestNode;
	bench: PolkadotSweeperChain;
	chain: PolkadotNode;
	fence: SweepFence;
	merchant: KeyringPair;
	sweeper: KeyringPair;
	payee: KeyringPair;
	payer: KeyringPair;
	decimals: number;
	network: SweepNetwork;
	checkouts: SweepableCheckout[];
	ledger: LedgerEntry[];
	requests: TestRequest[];
	deposits: Array<{ tokenId: string; address: string }>;
	next: number;
	ports: SweeperPorts;
	runner(over?: Partial<PolkadotSweepRunnerDeps>): PolkadotSweepRunner;
	free(address: string): Promise<bigint>;
	assetOf(address: string): Promise<bigint>;
	ledgerSum(tokenId: string): ReturnType<typeof money>;
	ledgerEqualsChain(tokenId: string): Promise<void>;
	checkout(tokenId: string, units: bigint): Promise<SweepableCheckout>;
	pay(to: string, planck: bigint): Promise<void>;
	request(id: string, tokenId: string, amount: string, address: string): Promise<TestRequest>;
	stepUntil<T>(what: string, done: () => Promise<T | null | undefined | false>, r?: PolkadotSweepRunner, max?: number): Promise<T>;
}

export function polkadotRunnerBench(): PolkadotRunnerBench {
	const b: PolkadotRunnerBench = {
		db: null as unknown as TestNode,
		bench: null as unknown as PolkadotSweeperChain,
		chain: null as unknown as PolkadotNode,
		fence: null as unknown as SweepFence,
		merchant: null as unknown as KeyringPair,
		sweeper: null as unknown as KeyringPair,
		payee: null as unknown as KeyringPair,
		payer: null as unknown as KeyringPair,
		decimals: 12,
		network: { id: NET, slug: "polkadot-test", chainId: 0, requiredConfirmations: 1, eip7702: false, tokens: [] } as SweepNetwork,
		checkouts: [] as SweepableCheckout[],
		ledger: [] as LedgerEntry[],
		requests: [] as TestRequest[],
		deposits: [] as Array<{ tokenId: string; address: string }>,
		next: 0,
		ports: null as unknown as SweeperPorts,
		runner: null as unknown as (over?: Partial<PolkadotSweepRunnerDeps>) => PolkadotSweepRunner,
		free: (address: string) => b.bench.free(address),
		assetOf: (address: string) => b.bench.assetOf(USDT.id, address),
		ledgerSum: (tokenId: string) => b.ledger.filter(e => e.tokenId === tokenId).reduce((a, e) => a.plus(money(e.amount)), money(0)),
		/** The ledger's balance of a token equals what all this file's deposits hold on chain (finalized). */
		async ledgerEqualsChain(tokenId: string): Promise<void> {
			let held = 0n;
			for (const d of b.deposits.filter(x => x.tokenId === tokenId)) held += tokenId === NATIVE_ID ? await b.free(d.address) : await b.assetOf(d.address);
			expect(b.ledgerSum(tokenId).toFixed()).toBe(money(fromBaseUnits(held, tokenId === NATIVE_ID ? b.decimals : 6)).toFixed());
		},
		/** A settled checkout of `units` at a fresh deposit address, credited in the ledger (the chain funded by the caller). */
		async checkout(tokenId: string, units: bigint): Promise<SweepableCheckout> {
			const index = 200 + b.next++;
			const { address } = await polkadotCodec.deriveAddress(ABANDON_SEED, { isTestnet: true, ss58Prefix: b.chain.ss58Format }, index);
			const c: SweepableCheckout = { transactionId: `00000000-0000-4000-8000-${String(900000000000 + index)}`, organizationId: ORG, mode: "sandbox", depositAddress: address, derivationIndex: index, tokenId, completedAt: new Date(Date.now() - 60_000).toISOString() };
			b.checkouts.push(c);
			b.ledger.push({ tokenId, kind: "credit", amount: fromBaseUnits(units, tokenId === NATIVE_ID ? b.decimals : 6), refType: "transaction", refId: c.transactionId });
			b.deposits.push({ tokenId, address });
			return c;
		},
		/** A payer's real balances.transferKeepAlive to `to` (a deposit's payment), in a finalized block. */
		async pay(to: string, planck: bigint): Promise<void> {
			await b.bench.pay(to, planck);
			expect(await b.free(to)).toBe(planck);
		},
		/** A withdrawal request of the test organization, pending (its record and its stand-in view). */
		async request(id: string, tokenId: string, amount: string, address: string): Promise<TestRequest> {
			const now = new Date();
			await b.db.app.models.WithdrawalRequest.create({ id, organizationId: ORG, mode: "sandbox", userId: 1, amount, tokenId, sourceNetworkId: NET, destinationNetworkId: null, address, strategy: 1, status: "pending", reason: null, txHash: null, createdAt: now, updatedAt: now, completedAt: null });
			const r: TestRequest = { id, organizationId: ORG, mode: "sandbox", amount, tokenId, sourceNetworkId: NET, destinationNetworkId: null, address, createdAt: now.toISOString(), status: "pending" };
			b.requests.push(r);
			return r;
		},
		/** Steps, each followed by a (finalized) block, until `done` answers truthy. */
		async stepUntil<T>(what: string, done: () => Promise<T | null | undefined | false>, r: PolkadotSweepRunner = b.runner(), max = 20): Promise<T> {
			for (let i = 0; i < max; i++) {
				await r.step(b.fence);
				await b.chain.newBlock();
				const v = await done();
				if (v) return v;
			}
			const rows = await b.db.app.models.Sweep.findAll({ where: { networkId: NET } });
			throw new Error(`not reached after ${max} steps: ${what}; sweeps: ${JSON.stringify(rows.map(x => [x.kind, x.status, x.reason, x.fromAddress]))}`);
		},
	};

	b.ports = {
		sweepable: async () => b.checkouts.map(c => ({ ...c })),
		destination: async () => b.merchant.address,
		destinationOf: async () => ({ address: b.merchant.address, source: "settings" as const }),
		ownAddressCheckouts: async () => [],
		route: async () => ({ via: "direct", reason: "strategy" }) as never,
		record: async p => {
			await inTransaction(b.db.app.sequelize, t => assertFence(b.db.app.models, p.fence, t));
			b.ledger.push({ tokenId: p.tokenId, kind: p.kind, amount: p.amount, refType: p.refType, refId: p.refId });
		},
		pendingRequests: async () => b.requests.filter(r => r.status === "pending"),
		completeRequest: async p => {
			await inTransaction(b.db.app.sequelize, t => assertFence(b.db.app.models, p.fence, t));
			const r = b.requests.find(x => x.id === p.id)!;
			expect(r.status).toBe("pending"); // paid once
			r.status = "completed";
			r.txHash = p.txHash;
			await b.db.app.models.WithdrawalRequest.update({ status: "completed", txHash: p.txHash, completedAt: new Date() }, { where: { id: p.id } });
			b.ledger.push({ tokenId: r.tokenId, kind: "withdrawal", amount: `-${r.amount}`, refType: "request", refId: r.id });
		},
		failRequest: async () => undefined,
	};

	const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };
	const loud = { info: (...a: unknown[]) => process.stderr.write(`INFO ${a.join(" ")}\n`), warn: (...a: unknown[]) => process.stderr.write(`WARN ${a.join(" ")}\n`), error: (...a: unknown[]) => process.stderr.write(`ERROR ${a.join(" ")}\n`) };
	b.runner = (over = {}) =>
		new PolkadotSweepRunner({
			sequelize: b.db.app.sequelize,
			models: b.db.app.models,
			api: async () => b.chain.api,
			network: b.network,
			ss58Format: b.chain.ss58Format,
			sweeperKey: async () => b.sweeper,
			depositKey: index => polkadotCodec.derivePrivateKey(ABANDON_SEED, { isTestnet: true, ss58Prefix: b.chain.ss58Format }, index),
			ports: b.ports,
			settings: RUNNER_SETTINGS,
			now: () => new Date(),
			logger: process.env.DEBUG_SWEEP ? loud : quiet,
			...over,
		});

	beforeAll(async () => {
		b.db = await startNode({ services: [] });
		b.bench = await startPolkadotSweeperChain();
		b.chain = b.bench.chain;
		b.payer = b.bench.payer;
		b.sweeper = b.bench.sweeper;
		b.decimals = b.chain.decimals;
		b.network.tokens = [
			{ tokenId: NATIVE_ID, symbol: b.chain.symbol, contractAddress: "", decimals: b.decimals },
			{ tokenId: USDT_ID, symbol: "USDT", contractAddress: String(USDT.id), decimals: 6 },
		];
		await ensureCursor(b.db.app.models, LEASE, "sweep", new Date());
		b.fence = (await acquireLease(b.db.app.models, LEASE, "test:1:sweeper-polkadot", 600_000, Date.now()))!;
		b.merchant = b.chain.pair("//Merchant");
		b.payee = b.chain.pair("//Payee");
		// The merchant's account exists (as a merchant's would): small sweeps need not reach the ED on their own.
		await b.chain.fund(b.merchant.address, 10n ** BigInt(b.decimals));
		await b.chain.newBlock();
	}, 240_000);

	afterAll(async () => {
		await b.bench?.stop();
		await b.db?.stop();
	});

	afterEach(() => {
		b.checkouts.length = 0;
	});

	return b;
}
