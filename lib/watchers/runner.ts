/**
 * The chain-independent loop of a watcher for one network (docs/watchers.md):
 * 1. lease: only the holder of the network's lease reads and writes; others stand by and take
 *    over when it expires (renewed every third of its length while alive);
 * 2. head first, then the deposit addresses and the network's catalogue (tokens, required
 *    confirmations: lib/watchers/catalogue.ts), so every address and token paid in a block up to
 *    that head is known; then the range after the cursor (at most maxRange blocks), checked to
 *    continue the cursor's chain;
 * 3. a cursor block the chain no longer has: walk back to the common ancestor, transfers above
 *    it reverted;
 * 4. the range's transfers and the new cursor in one fenced DB transaction;
 * 5. report what the payments side has not heard: confirmations below the requirement
 *    (transactions.detectBatch), the credits at the requirement (transactions.creditBatch), both in
 *    batches of a page's transfers; reverts one by one;
 * 6. now and then, and after a catch-up, reconcile native balances of open checkouts (coin sent
 *    by a contract has no log and no top-level `to`); not while a report backlog is being sent,
 *    for at most the reconciliation interval.
 * Errors never stop the loop: an unreachable node is logged once, and once more when it is back.
 */
import crypto from "node:crypto";
import type { Attributes, Sequelize } from "sequelize";
import pLimit from "p-limit";
import { MEMPOOL_BLOCK_HASH, type BlockRef, type ChainSource, type ChainTransfer as SourceTransfer, type WatchedToken } from "../chains/source";
import { isServiceUnavailable } from "../errors";
import { fromBaseUnits, toBaseUnits } from "../money";
import type { Models } from "../../models";
import type { ChainTransfer, ChainTransferReported } from "../../models/chain.model";
/** A stored transfer as pendingTransfers reads it (a plain row, no model instance). */
type TransferRow = Attributes<ChainTransfer>;
import { readNetworkCatalogue, type NetworkCatalogue } from "./catalogue";
import { envSlug, type WatchersConfig } from "./config";
import { appendRecent, commonAncestor, continuesChain } from "./reorg";
import { acquireLease, commitRange, syncMempool, ensureCursor, Lease, LeaseLostError, loadCursor, markReported, NewTransfer, pendingTransfers, recordReconciled, releaseLease, renewLease, rewindTo, seenNativeAmounts } from "./store";

/** The network a runner follows; `requiredConfirmations` and `tokens` are only its start: every step reads them again (lib/watchers/catalogue.ts). */
export interface WatchedNetwork {
	id: string;
	slug: string;
	chainType: string;
	requiredConfirmations: number;
	tokens: Array<WatchedToken & { symbol: string }>;
}

/** A transfer reported for its credit (at the required confirmations). */
export interface CreditItem {
	txHash: string;
	logIndex: number;
	blockHash: string;
	toAddress: string;
	tokenId: string;
	amount: string;
	confirmations: number;
	requiredConfirmations: number;
}

/** A transfer reported below the required confirmations (its block number too). */
export interface DetectItem extends CreditItem {
	blockNumber: number;
}

/** What a watcher asks of the payments side (actions of the transactions service). */
export interface PaymentsPort {
	depositAddresses(p: { networkId: string; since: string; afterCreatedAt?: string; afterId?: string; limit: number }): Promise<Array<{ id: string; address: string; createdAt: string }>>;
	/** Deposit addresses of open checkouts (reconciliation), by keyset pages like depositAddresses. */
	openAddresses(p: { networkId: string; since: string; afterCreatedAt?: string; afterId?: string; limit: number }): Promise<Array<{ id: string; address: string; createdAt: string }>>;
	/**
	 * Detections and credits of one network, in batches (transactions.detectBatch, creditBatch): one
	 * answer per item, in order; an item that failed answers `error` and is reported again.
	 * `requiredConfirmations`: the requirement the watcher applies (the payer is shown it: docs/watchers.md "Catalogue changes").
	 */
	detectBatch(p: { networkId: string; items: DetectItem[] }): Promise<Array<{ outcome?: string; error?: unknown }>>;
	creditBatch(p: { networkId: string; items: CreditItem[]; brief?: boolean }): Promise<Array<{ credited: boolean; duplicate: boolean; reason?: string; error?: unknown }>>;
	revert(p: { networkId: string; txHash: string; logIndex: number; blockHash: string }): Promise<{ outcome: string }>;
}

export interface WatcherLogger {
	info(...args: unknown[]): void;
	warn(...args: unknown[]): void;
	error(...args: unknown[]): void;
}

export interface RunnerDeps {
	sequelize: Sequelize;
	models: Models;
	source: ChainSource;
	network: WatchedNetwork;
	payments: PaymentsPort;
	config: WatchersConfig;
	logger: WatcherLogger;
	/** Payments time (detections' timestamps); leases use the wall clock. */
	now: () => Date;
	/** Unique per process: a restarted process is a new owner and waits for (or takes) the lease. */
	owner: string;
	/** Lag and head gauges (metrics), when enabled. */
	onProgress?: (p: { head: number; cursor: number; lag: number }) => void;
	/** This process took the network's lease, or started the network's cursor (every node then reads again which networks are watched: lib/watchers/watched.ts). */
	onLead?: () => void;
	/** This process no longer leads the network (lease lost, or stopped): its gauges go, so only the leader's remain. */
	onStandby?: () => void;
	/** Where a step's time went (the watcher bench: bench/watcher-evm.ts); unset in production. */
	onStepTimings?: (t: StepTimings) => void;
	/** One report pass: how long it took and how many transfers it reported (the bench); unset in production. */
	onReportTimings?: (t: { ms: number; reported: number }) => void;
	/** A failure that is not the RPC being unreachable, a reorg under the read or a lost lease (error tracking). */
	onFailure?: (err: unknown) => void;
	/**
	 * How long the lease must have been free before this process takes it (the fair share,
	 * lib/watchers/balancer.ts): 0 below its share, more at or above it. Unset: 0.
	 */
	takeDelayMs?: () => number;
	/** This process gave the lease up (a hand-over, or `stopping`: a graceful stop): the standbys are told, to take it at once. */
	onRelease?: (stopping: boolean) => void;
}

/** Milliseconds per phase of one step that read a range, and how many transfers it stored and reported. */
export interface StepTimings {
	head: number;
	addresses: number;
	cursor: number;
	blocks: number;
	transfers: number;
	commit: number;
	reconcile: number;
	stored: number;
	fromBlock: number;
	toBlock: number;
	/** The range was read while the previous one was committed (the read-ahead), not after it. */
	readAhead: boolean;
}

/** A range's blocks and the transfers to watched addresses in them. */
interface RangeRead {
	blocks: BlockRef[];
	found: SourceTransfer[];
	/** The blocks do not continue the block they were read after: the node reorganised under the read. */
	broken: boolean;
}

/** A range read ahead, with the tokens it was matched against (the catalogue read after its head). */
interface AheadRead extends RangeRead {
	catalogueKey: string;
}

/**
 * The next range, read while the range before it is committed: a head read of its own, then the
 * catalogue and the deposit addresses covering that head, then the blocks after the one being
 * committed. Used only by the next step of the same lease, when the cursor is the block it was
 * read after, the catalogue is the one it matched, it ends at or below that step's head and its
 * last block is still the chain's; else read again. A lost lease, a reorg or a rewind drops it.
 */
interface ReadAhead {
	lease: Lease;
	parent: { number: number; hash: string };
	/** Never rejects: a failed read is an Error, and the step reads the range itself. */
	result: Promise<AheadRead | Error>;
	discarded: boolean;
}

/** What identifies the tokens a range was matched against. */
function catalogueKey(c: NetworkCatalogue): string {
	return c.tokens.map(t => `${t.tokenId}:${t.contractAddress.toLowerCase()}:${t.decimals}`).join(",");
}

export interface WatcherStatus {
	networkId: string;
	slug: string;
	leader: boolean;
	head: number | null;
	cursor: number | null;
	lag: number | null;
	rpcDown: boolean;
	lastError: string | null;
	/** The catalogue as the last step applied it: confirmations required, symbols of the tokens followed. */
	requiredConfirmations: number;
	tokens: string[];
}

/** What the payments side acknowledged for one stored transfer: how it is to be recorded (lib/watchers/store.ts markReported). */
interface Ack {
	id: number;
	reported: ChainTransferReported;
	pending: boolean;
	confirmations: number | null;
}

type ReportPlan =
	| { kind: "revert"; row: TransferRow; key: { networkId: string; txHash: string; logIndex: number; blockHash: string } }
	| { kind: "detect"; row: TransferRow; mempool: boolean; item: DetectItem }
	| { kind: "credit"; row: TransferRow; item: CreditItem };

/**
 * A report pass's call slots: at most REPORT_CALLS calls at once, the rest queued in order (p-limit),
 * shared by the pass's pages, so the next page's calls start as soon as this page's slots free (no
 * idle tail at a page's end).
 */
type CallSlots = pLimit.Limit;

/** `fn` over `items`, at most `width` at once, answers in order. */
async function inChunks<T, R>(items: readonly T[], width: number, fn: (item: T) => Promise<R>): Promise<R[]> {
	const out: R[] = [];
	for (let i = 0; i < items.length; i += width) out.push(...(await Promise.all(items.slice(i, i + width).map(fn))));
	return out;
}

/** Reverts (one call each) and finality reads at once. */
const REPORT_CONCURRENCY = 16;
/**
 * Items a detectBatch / creditBatch call carries: about 300 bytes each asked and less answered
 * (creditBatch is asked `brief`: without each checkout's 1.5 kB view), so a call stays well under
 * a transporter's 1 MB message limit.
 */
const REPORT_CALL_ITEMS = 200;
/**
 * Batch calls of one page at once (their DB transactions run side by side on MySQL): a batch
 * spends most of its time waiting for pages MariaDB reads from disk (a checkout's rows are
 * anywhere in tables larger than its buffer pool), so four in flight keep the disk and both cores
 * busy where two left them half idle (docs/benchmarks.md).
 */
const REPORT_CALLS = 4;
/** Pending transfers a report pass reads at a time: two rounds of full calls (a page's last call does not run alone). */
const REPORT_BATCH = 2 * REPORT_CALLS * REPORT_CALL_ITEMS;
/**
 * Deposit addresses a depositAddresses or openAddresses call answers at most (openAddresses:
 * unless WATCHER_RECONCILE_PAGE says less). 2,000 (about 280 kB of JSON) keeps an
 * answer under a transporter's message limit when the watcher runs on a node of its own (NATS's
 * default max_payload and Kafka's message.max.bytes are 1 MB): 10,000 a page failed with NATS's
 * MAX_PAYLOAD_EXCEEDED (the TON watcher bench, docs/benchmarks.md).
 */
const ADDRESS_PAGE = 2_000;
/** Full reload of the address set (drops addresses past the watch window). */
const ADDRESS_RELOAD_MS = 10 * 60_000;
/** Blocks from the head inside which transfers are queried by block hash. */
const NEAR_HEAD_BLOCKS = 16;

export class NetworkWatcher {
	private running = false;
	private loop: Promise<void> | null = null;
	private wake: (() => void) | null = null;
	private lease: Lease | null = null;
	/** Wall-clock ms until which the lease is known to be held (its last take or renewal). */
	private leaseUntil: number | null = null;
	private renewTimer: NodeJS.Timeout | null = null;
	private addresses = new Set<string>();
	private addressKeyset: { createdAt: string; id: string } | null = null;
	private addressesLoadedAt = 0;
	/**
	 * The address set holds every deposit address that can be paid in a block up to this head: a
	 * refresh started after reading it has ended (-1: none yet). A step reads no block above it.
	 */
	private addressCover = -1;
	/** The address refresh in flight (one at a time), beside the steps. */
	private addressRefresh: Promise<void> | null = null;
	private readAhead: ReadAhead | null = null;
	/** The last read-ahead started, until it ends (used or not): a source reads one range at a time (Solana keeps a range's blocks between blocks() and transfers()). */
	private aheadInFlight: Promise<unknown> | null = null;
	private lastReconcileAt = 0;
	/** Where the reconciliation cycle stands: the next page starts after this address; null: the next page starts a cycle. */
	private reconcileAfter: { afterCreatedAt: string; afterId: string } | null = null;
	/** The report pass in flight; the newest head (reports count confirmations against it); another pass wanted. */
	private reporting: Promise<void> | null = null;
	private reportHead: BlockRef | null = null;
	private reportAgain = false;
	/** The report pass in flight has transfers to send (found some, or a step stored some for it): a burst's credits. */
	private reportBacklog = false;
	/** Since when reconciliation has waited for a report backlog (null: not waiting); it waits at most reconcileMs. */
	private reconcileDeferredSince: number | null = null;
	private rpcDown = false;
	/** The payments services could not be reached (no node offers them, or their node died mid-call). */
	private paymentsDown = false;
	/** deps.payments, noting when a call succeeds again after the payments services were unreachable. */
	private readonly payments: PaymentsPort;
	private lagging = false;
	/** The network's catalogue as the last step read it (after its head): tokens followed, confirmations required. */
	private catalogue: NetworkCatalogue;
	/** A head read before the lease was taken, while the network has no cursor: where the cursor starts (see run()). */
	private preLeaseHead: number | null = null;
	/** A hand-over asked (handOver()): done at the next step boundary; its waiters. */
	private handOverWaiters: Array<(released: boolean) => void> = [];
	readonly status: WatcherStatus;

	constructor(private readonly deps: RunnerDeps) {
		this.catalogue = { requiredConfirmations: deps.network.requiredConfirmations, tokens: [...deps.network.tokens] };
		this.status = { networkId: deps.network.id, slug: deps.network.slug, leader: false, head: null, cursor: null, lag: null, rpcDown: false, lastError: null, requiredConfirmations: this.catalogue.requiredConfirmations, tokens: this.catalogue.tokens.map(t => t.symbol) };
		const port = deps.payments;
		const reached = <T>(call: Promise<T>) =>
			call.then(out => {
				if (this.paymentsDown) {
					this.paymentsDown = false;
					deps.logger.info(`Watcher: payments services reachable again from network ${deps.network.slug}; pending reports go out`);
				}
				return out;
			});
		this.payments = {
			depositAddresses: p => reached(port.depositAddresses(p)),
			openAddresses: p => reached(port.openAddresses(p)),
			detectBatch: p => reached(port.detectBatch(p)),
			creditBatch: p => reached(port.creditBatch(p)),
			revert: p => reached(port.revert(p)),
		};
	}

	start(): void {
		if (this.running) return;
		this.running = true;
		this.loop = this.run();
	}

	/** A block of this network as its node has it now, null when the node has none at that height (support's rewind). */
	readBlock(n: number): Promise<BlockRef | null> {
		return this.deps.source.block(n);
	}

	/**
	 * Gives the lease up at the next step boundary so another replica takes the network (the fair
	 * share: lib/watchers/balancer.ts): the step in progress and the report pass end, the lease is
	 * released (takeable at once), the standbys are told. True once released; false when this
	 * process did not lead the network, or stopped first.
	 */
	handOver(): Promise<boolean> {
		if (!this.lease || !this.running) return Promise.resolve(false);
		const done = new Promise<boolean>(resolve => this.handOverWaiters.push(resolve));
		this.wake?.();
		return done;
	}

	/** A standby reads the lease again now (another replica released it) instead of at its next poll. */
	nudge(): void {
		if (!this.lease) this.wake?.();
	}

	/** Leading, with a started cursor: a network that can be handed over. */
	get handOverReady(): boolean {
		return this.lease !== null && this.status.cursor !== null && this.running;
	}

	private async handOverNow(): Promise<void> {
		const waiters = this.handOverWaiters.splice(0);
		const lease = this.lease;
		if (!lease) return waiters.forEach(w => w(false));
		this.discardReadAhead();
		await this.aheadInFlight;
		// The report pass of this lease ends first: the next leader reports what is left, never beside it.
		await this.reporting;
		if (this.renewTimer) clearInterval(this.renewTimer);
		this.renewTimer = null;
		const released = this.lease === lease && (await releaseLease(this.deps.models, lease, Date.now()).then(() => true, () => false));
		if (this.lease === lease) {
			this.lease = null;
			this.leaseUntil = null;
			this.status.leader = false;
			this.deps.onStandby?.();
		}
		if (released) {
			this.deps.logger.info(`Watcher ${this.deps.owner} hands network ${this.deps.network.slug} over (fair share)`);
			this.deps.onRelease?.(false);
		}
		waiters.forEach(w => w(released));
	}

	/** Stops the loop, waits for the step in progress, and gives the lease up. */
	async stop(): Promise<void> {
		this.running = false;
		this.wake?.();
		await this.loop;
		this.handOverWaiters.splice(0).forEach(w => w(false));
		await this.reporting;
		this.discardReadAhead();
		await this.aheadInFlight;
		await this.addressRefresh?.catch(() => undefined);
		if (this.renewTimer) clearInterval(this.renewTimer);
		const held = this.lease;
		if (held) await releaseLease(this.deps.models, held, Date.now()).then(() => this.deps.onRelease?.(true), () => undefined);
		this.lease = null;
		this.leaseUntil = null;
		this.status.leader = false;
		this.deps.onStandby?.();
		await this.deps.source.close().catch(() => undefined);
	}

	private async sleep(ms: number): Promise<void> {
		if (!this.running) return;
		await new Promise<void>(resolve => {
			const timer = setTimeout(resolve, ms);
			this.wake = () => {
				clearTimeout(timer);
				resolve();
			};
		});
		this.wake = null;
	}

	private async run(): Promise<void> {
		const { models, network, config } = this.deps;
		while (this.running) {
			let again = false;
			try {
				const started = await ensureCursor(models, network.id, network.chainType, this.deps.now());
				if (!this.lease) {
					// A network never read: the head is read BEFORE the lease is taken, and the cursor starts
					// there. The lease makes the network "watched" (lib/watchers/watched.ts) and so open to
					// live checkouts; each of those is paid in a block after this head, which is then read.
					this.preLeaseHead = started ? null : (await this.deps.source.head()).number;
					await this.tryLead();
				}
				if (this.lease && this.handOverWaiters.length === 0) again = await this.step();
				this.status.lastError = null;
			} catch (err) {
				this.onError(err);
			}
			// A hand-over at the step boundary: nothing of a step is half done.
			if (this.handOverWaiters.length > 0) {
				await this.handOverNow();
				again = false;
			}
			if (!again) await this.sleep(this.lease ? config.pollMs : Math.min(config.pollMs * 2, Math.max(500, config.leaseMs / 4)));
		}
	}

	/**
	 * Wall-clock ms until which this watcher knows it holds the network's lease; null: standing by.
	 * A leader whose renewals fail (the database is unreachable) sees it pass (/readyz).
	 */
	get leaseHeldUntil(): number | null {
		return this.lease ? this.leaseUntil : null;
	}

	private async tryLead(): Promise<void> {
		const { models, network, config, owner, logger } = this.deps;
		const at = Date.now();
		const lease = await acquireLease(models, network.id, owner, config.leaseMs, at, this.deps.takeDelayMs?.() ?? 0);
		if (!lease) return;
		this.lease = lease;
		this.leaseUntil = at + config.leaseMs;
		this.status.leader = true;
		logger.info(`Watcher ${owner} leads network ${network.slug} (lease token ${lease.token})`);
		this.deps.onLead?.();
		// Renewed on its own timer, beside the steps (never behind one). One renewal at a time: on a
		// busy machine one can wait (for a pooled connection, the SQLite writer queue, the event loop)
		// past the next tick, and a late one must not write an older leaseUntil over a newer one. A
		// renewal that comes after the expiry still holds the lease if nobody took it (renewLease).
		let renewing = false;
		this.renewTimer = setInterval(() => {
			const held = this.lease;
			if (!held || renewing) return;
			renewing = true;
			const at = Date.now();
			renewLease(models, held, config.leaseMs, at)
				.then(ok => {
					if (ok && this.lease === held) this.leaseUntil = at + config.leaseMs;
					if (!ok && this.lease === held) this.loseLease();
				})
				.catch(() => undefined)
				.finally(() => {
					renewing = false;
				});
		}, Math.max(200, Math.floor(config.leaseMs / 3)));
	}

	private loseLease(): void {
		if (!this.lease) return;
		this.deps.logger.warn(`Watcher ${this.deps.owner} lost the lease on network ${this.deps.network.slug}; standing by`);
		this.lease = null;
		this.leaseUntil = null;
		this.status.leader = false;
		this.discardReadAhead();
		if (this.renewTimer) clearInterval(this.renewTimer);
		this.renewTimer = null;
		this.deps.onStandby?.();
	}

	private onError(err: unknown): void {
		const { logger, network } = this.deps;
		if (err instanceof LeaseLostError) return this.loseLease();
		// The node does not have a block (yet) or reorganised under the read: the next step reads again.
		if ((err as Error)?.name === "BlockUnavailableError") return;
		const message = (err as Error)?.message ?? String(err);
		this.status.lastError = message;
		// A core node restarting or killed: the reports stay pending and go out when it is back.
		// Logged once per outage, not at every poll.
		if (isServiceUnavailable(err)) {
			if (!this.paymentsDown) logger.warn(`Watcher: payments services unreachable from network ${network.slug} (${message.slice(0, 200)}); reports stay pending and are retried`);
			this.paymentsDown = true;
			return;
		}
		const rpc = (err as Error)?.name === "RpcUnavailableError" || /timeout|ECONNREFUSED|ECONNRESET|socket|network/i.test(message);
		if (rpc) {
			if (!this.rpcDown) logger.warn(`Watcher: RPC of network ${network.slug} unreachable (${message.slice(0, 200)}); retrying`);
			this.rpcDown = true;
			this.status.rpcDown = true;
			return;
		}
		logger.error(`Watcher step failed on network ${network.slug}: ${message}`);
		this.deps.onFailure?.(err);
	}

	/** One step; true when there is more to do at once (catching up). */
	private async step(): Promise<boolean> {
		const { source, models, network, config, logger, sequelize } = this.deps;
		const lease = this.lease!;
		const timed = this.deps.onStepTimings;
		let mark = performance.now();
		const t: StepTimings = { head: 0, addresses: 0, cursor: 0, blocks: 0, transfers: 0, commit: 0, reconcile: 0, stored: 0, fromBlock: 0, toBlock: 0, readAhead: false };
		const lap = (phase: "head" | "addresses" | "cursor" | "blocks" | "transfers" | "commit" | "reconcile") => {
			const at = performance.now();
			t[phase] += at - mark;
			mark = at;
		};
		// The mempool is read before the head: a transaction that leaves it was mined at or below
		// the head read next (then found in a block row), or dropped.
		const mempool = source.mempoolTransfers && this.addresses.size ? await source.mempoolTransfers({ addresses: this.addresses, tokens: this.catalogue.tokens }) : null;
		const head = await source.head();
		lap("head");
		if (this.rpcDown) {
			logger.info(`Watcher: RPC of network ${network.slug} reachable again`);
			this.rpcDown = false;
			this.status.rpcDown = false;
		}
		// The catalogue, like the addresses, after the head: a token switched on after this read can
		// only have checkouts paid in a later block, which the next step reads with it. The addresses
		// are refreshed beside the step: it reads no block above the head the set covers, and waits
		// for this refresh only when the cursor has reached that (at the head, every step).
		this.refreshAddressesAfter(head.number);
		await this.refreshCatalogue();
		lap("addresses");
		// Before anything of this range is stored, so a report pass never meets a row above its head;
		// after the catalogue, so a pass counting against this head applies a requirement read after it.
		this.reportHead = head;
		const cursor = await loadCursor(models, network.id);
		lap("cursor");
		if (!cursor) return false;

		if (cursor.blockNumber === null) {
			const start = config.startBlocks[envSlug(network.slug)];
			const startHead = Math.min(head.number, this.preLeaseHead ?? head.number);
			const from = start !== undefined ? Math.max(0, Math.min(start, startHead + 1) - 1) : Math.max(0, startHead - 1);
			// Solana: the slot before the start may be skipped (no block ever); the cursor then sits on
			// the newest block below it, and the slots between hold nothing to read.
			const base = source.blockAtOrBefore ? await source.blockAtOrBefore(from) : await source.block(from);
			if (!base) return false;
			await commitRange(sequelize, models, lease, { number: base.number, hash: base.hash, recent: [[base.number, base.hash]] }, [], this.deps.now());
			logger.info(`Watcher: network ${network.slug} starts after block ${base.number}`);
			// Only now is the network watched (lib/watchers/watched.ts: a lease on a started cursor): say so at once.
			this.deps.onLead?.();
			return true;
		}

		// Reorg check: is the cursor's block still on the chain?
		const tip = { number: cursor.blockNumber, hash: cursor.blockHash! };
		const onChain = tip.number <= head.number ? await source.block(tip.number) : null;
		if (!onChain || onChain.hash.toLowerCase() !== tip.hash.toLowerCase()) {
			this.discardReadAhead();
			// A report pass must not mark a transfer credited after the rewind marked it reverted.
			await this.reporting;
			await this.walkBack(cursor.recentBlocks);
			return true;
		}

		let to = Math.min(head.number, tip.number + config.maxRange);
		let caughtUp = true;
		if (to > tip.number) {
			let read: RangeRead | null = await this.takeReadAhead(lease, tip, head.number);
			if (this.lease !== lease) return false;
			t.readAhead = read !== null;
			lap("transfers");
			if (!read) {
				if (this.addressCover <= tip.number) {
					await this.addressesCovering(head.number);
					lap("addresses");
				}
				to = Math.min(to, this.addressCover);
				await this.aheadInFlight;
				read = await this.readRange(tip, to, head.number, this.addresses, this.catalogue.tokens, () => lap("blocks"));
				lap("transfers");
			}
			const { blocks, found } = read;
			if (blocks.length === 0) return false;
			if (read.broken) return true; // reorganised under us: the next step walks back
			to = blocks[blocks.length - 1].number;
			const byNumber = new Map(blocks.map(b => [b.number, b.hash.toLowerCase()]));
			// A transfer from a block that is not the one just read: the node reorganised in between.
			if (found.some(f => byNumber.get(f.blockNumber) !== f.blockHash.toLowerCase())) return true;
			const last = blocks[blocks.length - 1];
			const recent = appendRecent(cursor.recentBlocks, blocks.slice(-config.reorgDepth), config.reorgDepth);
			const rows = this.toRows(found);
			// The next range is read while this one is committed (one range ahead at most); only the
			// next step of this lease may use it.
			this.startReadAhead(lease, { number: last.number, hash: last.hash });
			try {
				await commitRange(sequelize, models, lease, { number: last.number, hash: last.hash, recent }, rows, this.deps.now());
			} catch (err) {
				this.discardReadAhead();
				throw err;
			}
			lap("commit");
			Object.assign(t, { stored: rows.length, fromBlock: tip.number + 1, toBlock: to });
			caughtUp = to >= head.number;
		} else {
			to = tip.number;
		}
		const cursorNumber = to;
		this.progress(head.number, cursorNumber);
		if (caughtUp && mempool) await this.syncMempool(mempool);
		// Reports run beside the loop: the next block is read and stored while credits of this one
		// are still being reported (a credit costs far more than storing a transfer).
		this.reportInBackground(head, t.stored > 0);
		if (caughtUp) await this.maybeReconcile(head, cursorNumber);
		lap("reconcile");
		if (timed && t.toBlock > 0) timed(t);
		return !caughtUp;
	}

	/**
	 * Blocks after `parent` up to `to` (the source may answer fewer) and their transfers to
	 * `addresses`; the transfers are not read when the blocks do not continue `parent`.
	 */
	private async readRange(parent: { number: number; hash: string }, to: number, headNumber: number, addresses: ReadonlySet<string>, tokens: readonly WatchedToken[], onBlocks?: () => void): Promise<RangeRead> {
		const { source } = this.deps;
		// A lagging node may have fewer blocks than its head said: the source answers the run it has.
		const blocks = await source.blocks(parent.number + 1, to);
		onBlocks?.();
		if (blocks.length === 0) return { blocks, found: [], broken: false };
		if (!continuesChain(parent, blocks)) return { blocks, found: [], broken: true };
		const hashes = new Map<number, string>();
		for (const b of blocks) if (headNumber - b.number < NEAR_HEAD_BLOCKS) hashes.set(b.number, b.hash);
		const last = blocks[blocks.length - 1].number;
		const found = addresses.size ? await source.transfers({ fromBlock: parent.number + 1, toBlock: last, addresses, tokens, blockHashes: hashes }) : [];
		return { blocks, found, broken: false };
	}

	/**
	 * Reads the range after `parent` (being committed), for the next step, as a step would: the
	 * head, then the catalogue and the addresses (covering that head: a checkout paid at or below it
	 * is in the set), then the blocks, at most WATCHER_MAX_RANGE of them.
	 */
	private startReadAhead(lease: Lease, parent: { number: number; hash: string }): void {
		this.discardReadAhead();
		const { source, models, network, config } = this.deps;
		const read = async (): Promise<AheadRead> => {
			const head = await source.head();
			this.refreshAddressesAfter(head.number);
			const catalogue = (await readNetworkCatalogue(models, network.id)) ?? this.catalogue;
			const to = Math.min(head.number, parent.number + config.maxRange);
			if (to <= parent.number) return { blocks: [], found: [], broken: false, catalogueKey: catalogueKey(catalogue) };
			if (this.addressCover < to) await this.addressesCovering(head.number);
			return { ...(await this.readRange(parent, to, head.number, this.addresses, catalogue.tokens)), catalogueKey: catalogueKey(catalogue) };
		};
		const result = read().catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))));
		this.readAhead = { lease, parent, result, discarded: false };
		const inFlight = result.finally(() => {
			if (this.aheadInFlight === inFlight) this.aheadInFlight = null;
		});
		this.aheadInFlight = inFlight;
	}

	private discardReadAhead(): void {
		if (this.readAhead) this.readAhead.discarded = true;
		this.readAhead = null;
	}

	/**
	 * The read-ahead, if it is the range after the cursor `tip` read under `lease`, ended without
	 * error, matched the catalogue this step applies, ends at or below this step's head (a report
	 * pass never meets a row above its head) and its last block is still the chain's (a reorg in it
	 * since: read again, so nothing of a dropped block is stored). Taken once, whatever the answer.
	 */
	private async takeReadAhead(lease: Lease, tip: { number: number; hash: string }, headNumber: number): Promise<RangeRead | null> {
		const ahead = this.readAhead;
		if (!ahead) return null;
		try {
			if (ahead.lease !== lease || ahead.parent.number !== tip.number || ahead.parent.hash.toLowerCase() !== tip.hash.toLowerCase()) return null;
			const read = await ahead.result;
			if (ahead.discarded || read instanceof Error) return null;
			if (read.broken || read.blocks.length === 0 || read.catalogueKey !== catalogueKey(this.catalogue)) return null;
			const last = read.blocks[read.blocks.length - 1];
			if (last.number > headNumber) return null;
			const now = await this.deps.source.block(last.number);
			if (ahead.discarded || !now || now.hash.toLowerCase() !== last.hash.toLowerCase()) return null;
			return read;
		} finally {
			if (this.readAhead === ahead) this.discardReadAhead();
			ahead.discarded = true;
		}
	}

	private progress(head: number, cursor: number): void {
		const { network, config, logger } = this.deps;
		const lag = Math.max(0, head - cursor);
		this.status.head = head;
		this.status.cursor = cursor;
		this.status.lag = lag;
		// A step that ends after the lease was lost reports nothing: only the leader's gauges stand.
		if (this.lease) this.deps.onProgress?.({ head, cursor, lag });
		if (lag > config.lagWarnBlocks && !this.lagging) {
			this.lagging = true;
			logger.warn(`Watcher: network ${network.slug} is ${lag} blocks behind the head (catching up)`);
		} else if (lag <= config.lagWarnBlocks && this.lagging) {
			this.lagging = false;
			logger.info(`Watcher: network ${network.slug} caught up (lag ${lag})`);
		}
	}

	private toRows(found: readonly SourceTransfer[]): NewTransfer[] {
		const decimals = new Map(this.catalogue.tokens.map(t => [t.tokenId, t.decimals]));
		const rows: NewTransfer[] = [];
		for (const f of found) {
			const d = decimals.get(f.tokenId);
			if (d === undefined || BigInt(f.amount) <= 0n) continue;
			rows.push({ networkId: f.networkId, txHash: f.txHash, logIndex: f.logIndex, blockNumber: f.blockNumber, blockHash: f.blockHash, toAddress: f.toAddress, tokenId: f.tokenId, amount: fromBaseUnits(BigInt(f.amount), d) });
		}
		return rows;
	}

	private async walkBack(recent: Array<[number, string]>): Promise<void> {
		const { source, sequelize, models, logger, network } = this.deps;
		const ancestor = await commonAncestor(recent, async n => (await source.block(n))?.hash ?? null);
		if (!ancestor) {
			throw new Error(`reorg deeper than the ${recent.length} recorded blocks on ${network.slug}: set WATCHER_START_BLOCK_${envSlug(network.slug)} and clear its cursor after review`);
		}
		const kept = recent.filter(([n]) => n <= ancestor.number);
		const reverted = await rewindTo(sequelize, models, this.lease!, { ...ancestor, recent: kept }, this.deps.now());
		logger.warn(`Watcher: reorg on ${network.slug}: back to block ${ancestor.number}; ${reverted} transfer(s) reverted`);
	}

	/**
	 * The network's tokens and required confirmations as the catalogue has them now (one small read
	 * per step: lib/watchers/catalogue.ts). A change is logged once; a network gone keeps the last.
	 */
	private async refreshCatalogue(): Promise<void> {
		const { models, network, logger } = this.deps;
		const next = await readNetworkCatalogue(models, network.id);
		if (!next) return;
		const before = this.catalogue;
		if (catalogueKey(before) !== catalogueKey(next)) {
			logger.info(`Watcher: network ${network.slug} follows ${next.tokens.map(t => `${t.symbol}${t.contractAddress ? ` (${t.contractAddress})` : ""}`).join(", ") || "no token"}`);
		}
		if (before.requiredConfirmations !== next.requiredConfirmations) {
			logger.info(`Watcher: network ${network.slug} requires ${next.requiredConfirmations} confirmation(s) (was ${before.requiredConfirmations})`);
		}
		this.catalogue = next;
		this.status.requiredConfirmations = next.requiredConfirmations;
		this.status.tokens = next.tokens.map(t => t.symbol);
	}

	/**
	 * Starts a refresh of the address set unless one runs, `head` having been read before: once it
	 * ends the set covers that head. Not awaited by a step that reads below the cover already; a
	 * failure shows when a step waits for it (addressesCovering).
	 */
	private refreshAddressesAfter(head: number): Promise<void> {
		if (this.addressRefresh) return this.addressRefresh;
		const run = (async () => {
			try {
				await this.refreshAddresses();
				this.addressCover = Math.max(this.addressCover, head);
			} finally {
				this.addressRefresh = null;
			}
		})();
		this.addressRefresh = run;
		run.catch(() => undefined);
		return run;
	}

	/** Until the address set covers `head` (read by this step): a refresh started before it was read covers less, so another follows. */
	private async addressesCovering(head: number): Promise<void> {
		while (this.addressCover < head) await (this.addressRefresh ?? this.refreshAddressesAfter(head));
	}

	/**
	 * Loads new deposit addresses (keyset pages); a full reload now and then drops those past the
	 * window, built apart and swapped in whole (a read beside it keeps a complete set).
	 */
	private async refreshAddresses(): Promise<void> {
		const { network, config } = this.deps;
		const payments = this.payments;
		const since = new Date(Date.now() - config.watchHours * 3_600_000).toISOString();
		const reload = Date.now() - this.addressesLoadedAt > ADDRESS_RELOAD_MS;
		const into = reload ? new Set<string>() : this.addresses;
		let keyset = reload ? null : this.addressKeyset;
		for (;;) {
			const page = await payments.depositAddresses({ networkId: network.id, since, limit: ADDRESS_PAGE, ...(keyset ? { afterCreatedAt: keyset.createdAt, afterId: keyset.id } : {}) });
			for (const a of page) into.add(a.address);
			if (page.length) keyset = { createdAt: page[page.length - 1].createdAt, id: page[page.length - 1].id };
			if (!reload) this.addressKeyset = keyset;
			if (page.length < ADDRESS_PAGE) break;
		}
		if (reload) {
			this.addresses = into;
			this.addressKeyset = keyset;
			this.addressesLoadedAt = Date.now();
		}
	}

	/**
	 * Starts a report pass unless one runs; then that one runs another pass when it ends. At most
	 * one pass at a time, so a transfer is never reported twice at once. A pass counts
	 * confirmations against the newest head a step read (a pass also reaches rows that steps
	 * stored after it began: against the head of its start they would be in the future).
	 */
	private reportInBackground(head: BlockRef, stored = false): void {
		this.reportHead = head;
		// Transfers just stored: the pass has them to send (reconciliation waits, maybeReconcile).
		if (stored) this.reportBacklog = true;
		if (this.reporting) {
			this.reportAgain = true;
			return;
		}
		this.reporting = (async () => {
			do {
				this.reportAgain = false;
				const started = performance.now();
				const reported = await this.report().catch(err => {
					this.onError(err);
					return 0;
				});
				if (reported > 0) this.deps.onReportTimings?.({ ms: performance.now() - started, reported });
			} while (this.reportAgain && this.running);
		})().finally(() => {
			this.reporting = null;
			this.reportBacklog = false;
		});
	}

	/**
	 * Tells the payments side what it has not heard yet; what fails stays pending for the next step.
	 * Pipelined: the next page is read while this one's calls run, and its calls start as soon as
	 * this page's free their slots (REPORT_CALLS at once across pages); a page's acknowledgements
	 * are recorded beside the next page's calls. At most two pages are in flight, and the pass ends
	 * only when every call and record of it has (a rewind awaits the pass: nothing is recorded after it).
	 */
	private async report(): Promise<number> {
		const { models, network } = this.deps;
		const slot: CallSlots = pLimit(REPORT_CALLS);
		const pages: Array<Promise<void>> = [];
		let next: Promise<TransferRow[]> | null = pendingTransfers(models, network.id, REPORT_BATCH, 0);
		let count = 0;
		try {
			while (next) {
				const rows: TransferRow[] = await next;
				next = null;
				if (rows.length === 0) break;
				count += rows.length;
				this.reportBacklog = true;
				// Rows above this page's last id only: no row is in two pages of a pass.
				if (rows.length === REPORT_BATCH) next = pendingTransfers(models, network.id, REPORT_BATCH, rows[rows.length - 1].id);
				const { credits } = await this.reportPage(rows, this.reportHead!, slot);
				pages.push(credits.then(acks => this.markAcknowledged(acks)).catch(err => this.onError(err)));
				// The page before this one done first: at most two pages' calls queued.
				if (pages.length >= 2) await pages[pages.length - 2];
			}
		} finally {
			next?.catch(() => undefined);
			await Promise.all(pages);
		}
		return count;
	}

	/**
	 * Reports one page of stored transfers: reverts one by one, then the detections (both recorded
	 * before it returns), then the credits in batch calls, which it starts and does not await: the
	 * promise it returns ends with what the payments side acknowledged of them (to be recorded). A
	 * failed call or item acknowledges nothing (reported again at the next pass).
	 */
	private async reportPage(rows: readonly TransferRow[], head: BlockRef, slot: CallSlots): Promise<{ credits: Promise<Array<Ack | null>> }> {
		const payments = this.payments;
		const networkId = this.deps.network.id;
		const plans = await inChunks(rows, REPORT_CONCURRENCY, row => this.planReport(row, head).catch(err => (this.onError(err), null)));
		const acks: Array<Ack | null> = [];
		const reverts = plans.filter((p): p is Extract<ReportPlan, { kind: "revert" }> => p?.kind === "revert");
		// Reverts are rare (reorgs): one call each; a failed one leaves its row pending.
		const reverted = await inChunks(reverts, REPORT_CONCURRENCY, p =>
			payments.revert(p.key).then(
				(): Ack => ({ id: p.row.id, reported: "reverted", pending: false, confirmations: p.row.reportedConfirmations }),
				err => (this.onError(err), null),
			),
		);
		acks.push(...reverted);
		const detects = plans.filter((p): p is Extract<ReportPlan, { kind: "detect" }> => p?.kind === "detect");
		const credits = plans.filter((p): p is Extract<ReportPlan, { kind: "credit" }> => p?.kind === "credit");
		// Detections go first: a transfer's sighting before its credit, as the chain saw them. A
		// revert of this page ends before any credit of it or of a later page starts (a transfer
		// mined again after a reorg: the old block's revert before the new block's credit).
		acks.push(
			...(await this.inBatchCalls<DetectItem, (typeof detects)[number], Awaited<ReturnType<PaymentsPort["detectBatch"]>>[number]>(detects, slot, items => payments.detectBatch({ networkId, items }), (p, r) => {
				if (r.error || !r.outcome) return null;
				const ignored = r.outcome === "unknownAddress";
				return { id: p.row.id, reported: ignored ? "ignored" : "detected", pending: !p.mempool && !ignored, confirmations: p.item.confirmations };
			})),
		);
		if (acks.some(a => a)) await this.markAcknowledged(acks).catch(err => this.onError(err));
		const credited = this.inBatchCalls<CreditItem, (typeof credits)[number], Awaited<ReturnType<PaymentsPort["creditBatch"]>>[number]>(credits, slot, items => payments.creditBatch({ networkId, items, brief: true }), (p, r) => {
			// Refused for its confirmations (a core that counts differently): never dropped, asked again at the next pass.
			if (r.error || (!r.credited && !r.duplicate && r.reason === "insufficientConfirmations")) return null;
			return { id: p.row.id, reported: r.credited || r.duplicate ? "credited" : "ignored", pending: false, confirmations: p.item.confirmations };
		});
		return { credits: credited };
	}

	/** Sends `plans` in calls of REPORT_CALL_ITEMS items, each call in a `slot`; a call that fails acknowledges none of its items. */
	private async inBatchCalls<I, P extends { item: I }, R>(plans: P[], slot: CallSlots, send: (items: I[]) => Promise<R[]>, ack: (plan: P, answer: R) => Ack | null): Promise<Array<Ack | null>> {
		const parts: P[][] = [];
		for (let i = 0; i < plans.length; i += REPORT_CALL_ITEMS) parts.push(plans.slice(i, i + REPORT_CALL_ITEMS));
		const answered = await Promise.all(
			parts.map(part =>
				slot(() => send(part.map(p => p.item))).then(
					answers => part.map((p, j) => (answers[j] ? ack(p, answers[j]) : null)),
					err => (this.onError(err), [] as Array<Ack | null>),
				),
			),
		);
		return answered.flat();
	}

	/** What one stored transfer is to be reported as (the per-row rules: finality, confirmations); null: nothing to report. */
	private async planReport(row: TransferRow, head: BlockRef): Promise<ReportPlan | null> {
		// The freshest requirement, sent with every report: the core records and shows the one applied.
		const required = this.catalogue.requiredConfirmations;
		const key = { networkId: row.networkId, txHash: row.txHash, logIndex: row.logIndex, blockHash: row.blockHash };
		if (row.status === "reverted") return { kind: "revert", row, key };
		if (row.status !== "active") return null;
		const transfer = { txHash: row.txHash, logIndex: row.logIndex, blockHash: row.blockHash, toAddress: row.toAddress, tokenId: row.tokenId, amount: row.amount };
		if (row.blockHash === MEMPOOL_BLOCK_HASH) {
			// Unconfirmed: shown as 0 confirmations, never credited; its block's transfer takes over.
			return { kind: "detect", row, mempool: true, item: { ...transfer, confirmations: 0, blockNumber: 0, requiredConfirmations: required } };
		}
		const depth = Math.max(0, head.number - row.blockNumber + 1);
		let confirmations = depth;
		let final = depth >= required;
		const { source } = this.deps;
		if (source.finalizedHash) {
			// A chain with finality (Solana): credited iff its block is the finalized one at its
			// number; before that the depth shows progress, held below the requirement.
			const finalized = await source.finalizedHash(row.blockNumber);
			// Finalized with another block at this number: this block was dropped; the step's reorg check reverts it.
			if (finalized !== null && finalized !== row.blockHash) return null;
			final = finalized !== null;
			confirmations = final ? Math.max(depth, required) : Math.min(depth, Math.max(0, required - 1));
		}
		if (final) return { kind: "credit", row, item: { ...transfer, confirmations, requiredConfirmations: required } };
		if (row.reported !== "none" && row.reportedConfirmations === confirmations) return null;
		return { kind: "detect", row, mempool: false, item: { ...transfer, confirmations, requiredConfirmations: required, blockNumber: row.blockNumber } };
	}

	/**
	 * Records what the payments side acknowledged for a chunk of reports: one UPDATE per distinct
	 * outcome rather than one per transfer (each was a statement of its own, in this process and in
	 * the database). A crash before it leaves the rows pending: reported again, answered as duplicates.
	 */
	private async markAcknowledged(acks: ReadonlyArray<Ack | null>): Promise<void> {
		const groups = new Map<string, { ids: number[]; ack: Ack }>();
		for (const ack of acks) {
			if (!ack) continue;
			const key = `${ack.reported}:${ack.pending}:${ack.confirmations}`;
			const group = groups.get(key);
			if (group) group.ids.push(ack.id);
			else groups.set(key, { ids: [ack.id], ack });
		}
		const now = this.deps.now();
		for (const { ids, ack } of groups.values()) await markReported(this.deps.models, ids, ack.reported, ack.pending, ack.confirmations, now);
	}

	/** Stores new mempool sightings and ends those that were mined or dropped (lib/watchers/store.ts syncMempool). */
	private async syncMempool(seen: ReadonlyArray<Omit<SourceTransfer, "blockNumber" | "blockHash">>): Promise<void> {
		const { sequelize, models, network, logger } = this.deps;
		const rows = this.toRows(seen.map(x => ({ ...x, blockNumber: 0, blockHash: MEMPOOL_BLOCK_HASH })));
		const out = await syncMempool(sequelize, models, this.lease!, rows, this.deps.now());
		if (out.dropped) logger.warn(`Watcher: ${out.dropped} unconfirmed payment(s) on ${network.slug} left the mempool without being mined (replaced or double-spent): reverted`);
	}

	/**
	 * Native coin that arrived without a top-level transfer (sent by a contract): the balance of an
	 * open checkout's address at a confirmed block, above what was seen there, is recorded as one
	 * transfer keyed `reconcile:<address>:<block>`.
	 */
	private async maybeReconcile(head: BlockRef, cursorNumber: number): Promise<void> {
		const { source, config, network, models, sequelize, logger } = this.deps;
		const payments = this.payments;
		if (!source.nativeBalances || config.reconcileMs === 0) return;
		// A cycle starts every reconcileMs; then one page a caught-up step until it ends, so a step
		// never waits for every open address's balance (100,000 of them: minutes of RPC calls).
		if (this.reconcileAfter === null && Date.now() - this.lastReconcileAt < config.reconcileMs) return;
		// A burst's credits first: while a report pass has transfers to send, the cycle waits (its
		// balance reads and address pages took a core's worth of the burst), at most reconcileMs, then
		// goes on one page a step as before even if the backlog lasts; nothing is skipped, only later.
		if (this.reportBacklog) {
			this.reconcileDeferredSince ??= Date.now();
			if (Date.now() - this.reconcileDeferredSince < config.reconcileMs) return;
		} else this.reconcileDeferredSince = null;
		const native = this.catalogue.tokens.find(t => t.contractAddress === "");
		if (!native) return;
		const at = Math.min(cursorNumber, head.number - this.catalogue.requiredConfirmations + 1);
		if (at < 0) return;
		if (this.reconcileAfter === null) this.lastReconcileAt = Date.now();
		const since = new Date(Date.now() - config.watchHours * 3_600_000).toISOString();
		const limit = config.reconcilePage ?? ADDRESS_PAGE;
		// Each page under a transporter's message limit, checked against the newest block it may.
		const page = await payments.openAddresses({ networkId: network.id, since, limit, ...this.reconcileAfter });
		const last = page[page.length - 1];
		// The cycle moves on once this page is checked (a failure below checks it again next step).
		const next = page.length < limit ? null : { afterCreatedAt: last.createdAt, afterId: last.id };
		if (page.length === 0) return void (this.reconcileAfter = null);
		const block = await source.block(at);
		if (!block) return;
		const open = page.map(p => p.address);
		const balances = await source.nativeBalances(open, at);
		const seen = await seenNativeAmounts(models, network.id, native.tokenId, open, at);
		for (const address of open) {
			const balance = BigInt(balances.get(address) ?? "0");
			const known = (seen.get(address) ?? []).reduce((sum, a) => sum + toBaseUnits(a, native.decimals), 0n);
			if (balance <= known) continue;
			const amount = fromBaseUnits(balance - known, native.decimals);
			logger.info(`Watcher: reconciliation found ${amount} ${native.symbol} without a transfer at ${address} on ${network.slug} (block ${at})`);
			await recordReconciled(sequelize, models, this.lease!, { networkId: network.id, txHash: `reconcile:${address}:${at}`, logIndex: 0, blockNumber: at, blockHash: block.hash, toAddress: address, tokenId: native.tokenId, amount }, this.deps.now());
		}
		this.reconcileAfter = next;
		this.reportInBackground(head);
	}
}

/** A process-unique owner id for leases: host, pid and a random part. */
export function watcherOwnerId(nodeID: string): string {
	return `${nodeID}:${process.pid}:${crypto.randomBytes(4).toString("hex")}`.slice(0, 100);
}
