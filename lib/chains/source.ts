/**
 * The chain-source contract every chain type implements for its watcher: the chain head, a
 * block's hash and parent hash (reorg checks), and the transfers to a set of deposit addresses in
 * a block range. One module per chain type (`evm/source.ts`, `utxo/source.ts`, ...; lib/chains/README.md);
 * the watcher mixin (mixins/watcher.mixin.ts) holds everything that is not chain-specific.
 *
 * Amounts are base units as decimal strings (never JS numbers). Addresses are in the canonical
 * form of the chain's codec (`codecFor(chainType).normalizeAddress`), so a transfer's `toAddress`
 * compares equal to the stored deposit address (EVM: EIP-55 checksummed; the watched set holds
 * them in that form too).
 *
 * A source never answers "nothing" for data the node does not have: a missing block, an unknown
 * block hash or a missing receipt is an error (EVM: BlockUnavailableError), so a lagging node
 * behind a load balancer cannot make the watcher skip a payment.
 */

export interface BlockRef {
	number: number;
	hash: string;
	parentHash: string;
	/**
	 * The parent's number when the chain skips numbers (Solana: `parentSlot`, since a slot without
	 * a block is normal); absent means `number - 1` (EVM, UTXO).
	 */
	parentNumber?: number;
	/** Seconds since the epoch, as the chain reports it. */
	timestamp: number;
}

/** A token the watcher looks for: the native coin (`contractAddress` "") or a token contract. */
export interface WatchedToken {
	tokenId: string;
	/** "" for the chain's native coin. */
	contractAddress: string;
	decimals: number;
}

export interface ChainTransfer {
	networkId: string;
	txHash: string;
	/**
	 * Position of the transfer: the log index in its block (EVM ERC-20), the output index (UTXO).
	 * Native EVM transfers use the transaction's index in its block plus NATIVE_INDEX_OFFSET so
	 * they never collide with a log index of the same transaction.
	 */
	logIndex: number;
	toAddress: string;
	tokenId: string;
	/** Base units (decimal string). */
	amount: string;
	blockNumber: number;
	blockHash: string;
}

/** EVM native transfers: logIndex = NATIVE_INDEX_OFFSET + transaction index (documented in docs/watchers.md). */
export const NATIVE_INDEX_OFFSET = 1_000_000;

/** The block hash under which an unconfirmed (mempool) transfer is stored and reported (block number 0). */
export const MEMPOOL_BLOCK_HASH = "mempool";

export interface TransferQuery {
	fromBlock: number;
	toBlock: number;
	/** Canonical deposit addresses to match. */
	addresses: ReadonlySet<string>;
	tokens: readonly WatchedToken[];
	/**
	 * The hashes the watcher already holds for blocks of the range (from its own block reads):
	 * a source that can query by block hash uses them, so a lagging node cannot answer "nothing"
	 * for a block it has not seen yet.
	 */
	blockHashes?: ReadonlyMap<number, string>;
}

export interface ChainSource {
	/** The latest block the node knows (number + hash). */
	head(): Promise<BlockRef>;
	/** The block at `number` on the node's current chain, or null when it does not exist (yet). */
	block(number: number): Promise<BlockRef | null>;
	/**
	 * Chains with skipped numbers (Solana: a slot without a block is normal): the newest block at
	 * or below `number`, or null when the node has none there. A new cursor sits on it when the
	 * block before the start was skipped (lib/watchers/runner.ts); absent: `block(number)`.
	 */
	blockAtOrBefore?(number: number): Promise<BlockRef | null>;
	/**
	 * Blocks fromBlock..toBlock inclusive, in order, stopping before the first block the node does not have (a gap-free run from fromBlock).
	 * A chain with skipped numbers (Solana) returns its produced blocks only, each naming its parent (`parentNumber`).
	 */
	blocks(fromBlock: number, toBlock: number): Promise<BlockRef[]>;
	/** Transfers to any of the addresses in the range, every token listed (native included). */
	transfers(query: TransferQuery): Promise<ChainTransfer[]>;
	/**
	 * Unconfirmed transfers to the addresses (UTXO chains: the node's mempool), shown as 0
	 * confirmations; the watcher stores them under the block hash MEMPOOL_BLOCK_HASH.
	 */
	mempoolTransfers?(query: Pick<TransferQuery, "addresses" | "tokens">): Promise<Array<Omit<ChainTransfer, "blockNumber" | "blockHash">>>;
	/** Native-coin balances of the addresses at a block (reconciliation of transfers without a log). */
	nativeBalances?(addresses: readonly string[], blockNumber: number): Promise<Map<string, string>>;
	/**
	 * Chains with a finality of their own instead of a depth (Solana: the `finalized` commitment):
	 * the hash of the finalized block at `number`, or null when `number` is not finalized yet (or
	 * was skipped on the finalized chain). When present, a transfer is credited iff its block is
	 * the finalized one at its number; confirmations only show progress until then
	 * (docs/watchers.md "Solana"). Absent (EVM, UTXO): credited at the required confirmations.
	 */
	finalizedHash?(number: number): Promise<string | null>;
	/** Releases connections and timers. */
	close(): Promise<void>;
}
