/**
 * The Solana chain source (docs/watchers.md "Solana"): a Solana JSON-RPC node (RPC_URL_<SLUG>)
 * read through @solana/web3.js v1.
 *
 * - Block numbers are slots. A slot without a block (skipped, normal) is no block: `blocks()`
 *   returns the produced ones, each naming its parent slot and blockhash, which the runner checks
 *   (lib/watchers/reorg.ts continuesChain).
 * - The watcher follows the `confirmed` commitment (head, blocks), so a payment is shown as
 *   confirming within a second or so; it is credited only once its block is `finalized`
 *   (`finalizedHash`: the finalized block at that slot is the very block the transfer was read in).
 * - A confirmed block that is dropped (its fork abandoned) is reported as skipped by the node
 *   once its slot is rooted: the runner's reorg check then reverts its transfers.
 * - Catch-up in bounded ranges: at most MAX_BLOCKS_PER_READ produced blocks per step.
 * - Matching: every account of every successful transaction is looked up in the deposit set in
 *   memory (a Set: 100,000 addresses cost nothing per lookup). The alternative for a public RPC
 *   that rate-limits getBlock is documented in docs/watchers.md.
 */
import { Connection, PublicKey, SolanaJSONRPCError, type VersionedBlockResponse } from "@solana/web3.js";
import { mapLimit } from "../map-limit";
import type { BlockRef, ChainSource, ChainTransfer, TransferQuery } from "../source";
import { blockCredits, ownerlessTokenAccounts, type SolanaCredit } from "./block";

/** Produced blocks read per step at most (a mainnet block in full is megabytes of JSON, all held until the step's scan). */
export const MAX_BLOCKS_PER_READ = 16;
/** getBlock calls in flight at once while a range is read. */
const READ_CONCURRENCY = 4;
/** Finalized blockhashes kept (immutable once finalized): one per slot a payment was seen in. */
const FINALIZED_CACHE = 4_096;
/** The finalized slot is read again at most this often (a report pass asks for every confirming payment). */
const FINALIZED_SLOT_TTL_MS = 200;

/** Slots listed per getBlocks call while looking back for the newest block below a start (agave allows 500,000). */
const LOOKBACK_SLOTS = 1_000;
/** Look-back windows before giving up: 8,000 slots without a block is no chain a watcher should start on. */
const LOOKBACK_WINDOWS = 8;

/** Token accounts whose owner was read (for balances that omit it), kept at most; the oldest go first. */
const TOKEN_OWNER_CACHE = 200_000;
/** getMultipleAccounts takes at most 100 accounts a call. */
const ACCOUNTS_PER_CALL = 100;
/** The SPL Token and Token-2022 programs: a token account is owned by one of them; mint at bytes 0..32, owner at 32..64. */
const TOKEN_PROGRAMS = new Set(["TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA", "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"]);

/** JSON-RPC codes of a slot without a block (solana-rpc-client-api custom errors). */
const SLOT_SKIPPED = -32007;
const LONG_TERM_STORAGE_SLOT_SKIPPED = -32009;
/** The node has not got the block (yet): an error for block(), the end of the run for blocks(). */
const BLOCK_NOT_AVAILABLE = -32004;

/**
 * The node has not (yet) got a block it should have (-32004: a slot above its root without a
 * confirmed block, e.g. a dropped block before its slot is rooted, or a lagging node): retried at
 * the next step, never read as "nothing". Named as the runner expects (lib/watchers/runner.ts
 * onError): not an error to log or track, as for EVM.
 */
export class SolanaBlockUnavailableError extends Error {
	constructor(readonly slot: number, detail: string) {
		super(`Solana block at slot ${slot} unavailable: ${detail}`);
		this.name = "BlockUnavailableError";
	}
}

function isNotAvailable(err: unknown): err is SolanaJSONRPCError {
	return err instanceof SolanaJSONRPCError && err.code === BLOCK_NOT_AVAILABLE;
}

export interface SolanaSourceOptions {
	networkId: string;
	rpcUrl: string;
	timeoutMs: number;
	logger?: { warn(...args: unknown[]): void };
}

type FullBlock = VersionedBlockResponse;

interface ReadBlock {
	ref: BlockRef;
	block: FullBlock;
}

function toRef(slot: number, b: { blockhash: string; previousBlockhash: string; parentSlot: number; blockTime: number | null }): BlockRef {
	return { number: slot, hash: b.blockhash, parentHash: b.previousBlockhash, parentNumber: b.parentSlot, timestamp: b.blockTime ?? 0 };
}

function isSkipped(err: unknown): boolean {
	return err instanceof SolanaJSONRPCError && (err.code === SLOT_SKIPPED || err.code === LONG_TERM_STORAGE_SLOT_SKIPPED);
}

export class SolanaSource implements ChainSource {
	readonly connection: Connection;
	/** The range blocks() read last, kept for the transfers() call that follows it (one getBlock per block). */
	private lastRead = new Map<number, ReadBlock>();
	private finalizedSlot = -1;
	private finalizedSlotReadAt = 0;
	private readonly finalized = new Map<number, string | null>();
	/** Token account -> its mint and owner, read from the account (older RPC nodes omit `owner` in token balances). */
	private readonly tokenOwners = new Map<string, { mint: string; owner: string }>();

	constructor(private readonly opts: SolanaSourceOptions) {
		const timeoutMs = opts.timeoutMs;
		this.connection = new Connection(opts.rpcUrl, {
			commitment: "confirmed",
			// The runner retries at its next step; web3.js's own back-off would hold a step for seconds.
			disableRetryOnRateLimit: true,
			fetch: (input, init) => fetch(input, { ...init, signal: AbortSignal.timeout(timeoutMs) }),
		});
	}

	async head(): Promise<BlockRef> {
		const slot = await this.connection.getSlot("confirmed");
		const ref = await this.block(slot);
		if (!ref) throw new SolanaBlockUnavailableError(slot, "the confirmed head slot has no block");
		return ref;
	}

	/** The confirmed block at `slot`; null when the slot has no block (skipped, or its block was dropped). */
	async block(slot: number): Promise<BlockRef | null> {
		try {
			const b = await this.connection.getBlock(slot, { commitment: "confirmed", transactionDetails: "none", rewards: false, maxSupportedTransactionVersion: 0 });
			return b ? toRef(slot, b) : null;
		} catch (err) {
			if (isSkipped(err)) return null;
			if (isNotAvailable(err)) throw new SolanaBlockUnavailableError(slot, err.message);
			throw err;
		}
	}

	/**
	 * The newest confirmed block at or below `slot` (a new cursor's base when the slot before the
	 * start was skipped): the confirmed chain's produced slots from getBlocks, then that block.
	 * Asking for `slot` itself with getBlock would not do: a skipped slot above the root answers
	 * -32004 (not available) for ever, at or below it -32007 (skipped).
	 */
	async blockAtOrBefore(slot: number): Promise<BlockRef | null> {
		let end = slot;
		for (let i = 0; i < LOOKBACK_WINDOWS && end >= 0; i++) {
			const start = Math.max(0, end - LOOKBACK_SLOTS + 1);
			const produced = (await this.connection.getBlocks(start, end, "confirmed")).filter(s => s >= start && s <= end);
			if (produced.length) return this.block(produced[produced.length - 1]);
			end = start - 1;
		}
		if (end < 0) return null;
		throw new Error(`Solana: no confirmed block in slots ${end + 1}..${slot}: is the start slot right?`);
	}

	/** A listed slot's block in full; null when the node does not give it (dropped, or not there yet). */
	private async fullBlock(slot: number): Promise<FullBlock | null> {
		try {
			return await this.connection.getBlock(slot, { commitment: "confirmed", transactionDetails: "full", rewards: false, maxSupportedTransactionVersion: 0 });
		} catch (err) {
			if (isSkipped(err) || isNotAvailable(err)) return null;
			throw err;
		}
	}

	/**
	 * The produced blocks of fromBlock..toBlock (at most MAX_BLOCKS_PER_READ), in order, read in
	 * full and kept for transfers(); stops before a block the node does not give.
	 */
	async blocks(fromBlock: number, toBlock: number): Promise<BlockRef[]> {
		const slots = (await this.connection.getBlocks(fromBlock, toBlock, "confirmed")).filter(s => s >= fromBlock && s <= toBlock).slice(0, MAX_BLOCKS_PER_READ);
		const read = await mapLimit(slots, READ_CONCURRENCY, async slot => ({ slot, block: await this.fullBlock(slot) }));
		this.lastRead = new Map();
		const out: BlockRef[] = [];
		for (const { slot, block } of read) {
			// Listed as produced but not given: the node is behind or the block was just dropped; the run ends here.
			if (!block) break;
			const ref = toRef(slot, block);
			this.lastRead.set(slot, { ref, block });
			out.push(ref);
		}
		return out;
	}

	/** Payments to the addresses in the produced blocks of the range (the ones blocks() just read, else read now). */
	async transfers(query: TransferQuery): Promise<ChainTransfer[]> {
		const mints = new Map(query.tokens.map(t => [t.contractAddress, t.tokenId]));
		const native = mints.get("");
		const tokenMints = new Set([...mints.keys()].filter(m => m !== ""));
		const wanted = (a: string) => query.addresses.has(a);
		const cached = [...this.lastRead.values()].filter(r => r.ref.number >= query.fromBlock && r.ref.number <= query.toBlock);
		const blocks = cached.length ? cached : await this.readRange(query.fromBlock, query.toBlock);
		await this.readTokenOwners(blocks, tokenMints);
		const ownerOf = (account: string, mint: string) => {
			const known = this.tokenOwners.get(account);
			return known && known.mint === mint ? known.owner : undefined;
		};
		const out: ChainTransfer[] = [];
		for (const { ref, block } of blocks) {
			for (const c of blockCredits(block, wanted, tokenMints, ownerOf)) {
				const tokenId = c.mint === "" ? native : mints.get(c.mint);
				if (tokenId === undefined) continue;
				out.push(this.toTransfer(c, tokenId, ref));
			}
		}
		// Scanned: the full blocks are not held until the next step.
		this.lastRead = new Map();
		return out;
	}

	/**
	 * Owners of token accounts that gained a catalogue mint where the block does not name the owner
	 * (RPC nodes before token balances carried `owner`). Read from the token account itself
	 * (getMultipleAccounts at confirmed, 100 a call; SPL Token layout: mint, then owner) and kept
	 * per token account, so a block costs nothing when its balances carry owners and one call per
	 * 100 new token accounts when they do not, whatever the number of deposit addresses. The ATA
	 * of every deposit instead would cost two address derivations per deposit and mint up front
	 * (100,000 deposits: seconds of CPU at each start) and miss a token account that is not the
	 * associated one. The owner now is the owner then: an SPL token account's owner changes only
	 * by its owner's signature, and a deposit's key is the gateway's. A token account that is gone
	 * (closed since) or holds another mint is attributed to no one, and logged.
	 */
	private async readTokenOwners(blocks: readonly ReadBlock[], mints: ReadonlySet<string>): Promise<void> {
		if (mints.size === 0) return;
		const missing = new Map<string, string>();
		for (const { block } of blocks) for (const t of ownerlessTokenAccounts(block, mints)) if (!this.tokenOwners.has(t.account)) missing.set(t.account, t.mint);
		const accounts = [...missing.keys()];
		for (let i = 0; i < accounts.length; i += ACCOUNTS_PER_CALL) {
			const chunk = accounts.slice(i, i + ACCOUNTS_PER_CALL);
			const infos = await this.connection.getMultipleAccountsInfo(chunk.map(a => new PublicKey(a)), "confirmed");
			infos.forEach((info, j) => {
				if (!info || !TOKEN_PROGRAMS.has(info.owner.toBase58()) || info.data.length < 64) {
					this.opts.logger?.warn(`Solana: token account ${chunk[j]} gained ${missing.get(chunk[j])} in a block without its owner, and is ${info ? "not a token account" : "gone"} now: attributed to no one`);
					return;
				}
				if (this.tokenOwners.size >= TOKEN_OWNER_CACHE) this.tokenOwners.delete(this.tokenOwners.keys().next().value!);
				this.tokenOwners.set(chunk[j], { mint: new PublicKey(info.data.subarray(0, 32)).toBase58(), owner: new PublicKey(info.data.subarray(32, 64)).toBase58() });
			});
		}
	}

	private async readRange(fromBlock: number, toBlock: number): Promise<ReadBlock[]> {
		await this.blocks(fromBlock, toBlock);
		return [...this.lastRead.values()];
	}

	private toTransfer(c: SolanaCredit, tokenId: string, ref: BlockRef): ChainTransfer {
		return { networkId: this.opts.networkId, txHash: c.signature, logIndex: c.index, toAddress: c.account, tokenId, amount: c.amount.toString(), blockNumber: ref.number, blockHash: ref.hash };
	}

	/** The finalized block's hash at `slot`; null while the slot is above the finalized one, or skipped on the finalized chain. */
	async finalizedHash(slot: number): Promise<string | null> {
		const known = this.finalized.get(slot);
		if (known !== undefined) return known;
		if (slot > this.finalizedSlot && Date.now() - this.finalizedSlotReadAt >= FINALIZED_SLOT_TTL_MS) {
			const finalized = await this.connection.getSlot("finalized");
			this.finalizedSlot = Math.max(this.finalizedSlot, finalized);
			this.finalizedSlotReadAt = Date.now();
		}
		if (slot > this.finalizedSlot) return null;
		let hash: string | null;
		try {
			const b = await this.connection.getBlock(slot, { commitment: "finalized", transactionDetails: "none", rewards: false, maxSupportedTransactionVersion: 0 });
			// At or below the finalized slot the node has decided the slot: no block there is a skipped slot.
			hash = b ? b.blockhash : null;
		} catch (err) {
			if (isNotAvailable(err)) throw new SolanaBlockUnavailableError(slot, err.message);
			if (!isSkipped(err)) throw err;
			hash = null;
		}
		if (this.finalized.size >= FINALIZED_CACHE) this.finalized.delete(this.finalized.keys().next().value!);
		this.finalized.set(slot, hash);
		return hash;
	}

	async close(): Promise<void> {
		this.lastRead = new Map();
	}
}

export function createSolanaSource(opts: SolanaSourceOptions): SolanaSource {
	return new SolanaSource(opts);
}

/** The deposit-address side of one block, for `npm run chain:check` and tests: what the watcher would detect there. */
export function creditsOf(block: Pick<FullBlock, "transactions">, addresses: ReadonlySet<string>, mints: ReadonlySet<string>): SolanaCredit[] {
	return blockCredits(block, a => addresses.has(a), mints);
}
