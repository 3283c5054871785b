/**
 * The EVM chain source (the ChainSource contract of ./source.ts) over JSON-RPC, on an ethers v6
 * JsonRpcProvider with nothing cached (`cacheTimeout: -1`) and a static network (no chain-id
 * probe loop when the node is down). Calls made in the same tick go out as one JSON-RPC batch.
 *
 * ERC-20 payments: `eth_getLogs` on the watched tokens' contracts for `Transfer(from, to, value)`.
 * - Up to `largeSetThreshold` (2,000) addresses the node filters: `topics = [Transfer, null,
 *   [padded addresses]]`, at most `topicChunkSize` (200) addresses a query.
 * - Above it, the source asks for every Transfer of the token contracts in the range
 *   (`topics = [Transfer]`) and looks each recipient up in the watched Set. A node answers that
 *   with one query whatever the set's size, where topic chunks would cost one query per 200
 *   addresses per range (100,000 addresses: 500 queries a range) and providers bill and throttle
 *   per query; the token's whole traffic is what a busy USDC block holds anyway (~1,000 logs:
 *   ~30 ms on anvil with 100,000 addresses, bench/evm-source.ts), and range halving keeps each
 *   answer under the provider's result limit.
 * - Ranges are at most `maxRange` (500) blocks. A refusal ("query returned more than 10000
 *   results", "block range too large", -32005, HTTP 413, ...) or a timeout halves the range and
 *   asks again, down to one block; the narrower span is kept and probed upward again (x2) at the
 *   next call.
 * - Blocks whose hash the watcher passes in `blockHashes` (the few newest, near the head) are
 *   queried by `blockHash`: a node that has not seen the block answers an error, where a range
 *   query on a lagging node behind a load balancer answers `[]` and a payment would be skipped.
 * - Logs flagged `removed`, other events sharing the Transfer topic (ERC-721 has 4 topics) and
 *   zero-value transfers (address-poisoning spam) are ignored. Reverted transactions emit no logs.
 *
 * Native coin: every block of the range is read with its transactions; a transaction whose `to`
 * is a deposit address with a value > 0 is a candidate, and its receipt (read for candidates
 * only) must say status 1, so a failed transaction never counts. `logIndex` is
 * NATIVE_INDEX_OFFSET + the transaction's index. Coins sent by a contract's internal call have
 * neither a log nor a top-level `to`: `nativeBalances` (eth_getBalance at a block) lets the
 * watcher reconcile those.
 *
 * Robustness: every HTTP request has a total timeout (`timeoutMs`, aborted for real). Network
 * errors, timeouts, HTTP 429 and 5xx are retried with exponential backoff and full jitter (the
 * exponential-backoff package), `retry.attempts` times in all; then RpcUnavailableError, which the
 * watcher logs and retries later. A node answering with nothing where it must have something (a
 * block by hash, a receipt) is BlockUnavailableError after the same retries; a node on another
 * chain than `chainId` is ChainMismatchError. A call throws only RpcError subclasses, except a
 * TypeError for a caller's mistake (watched addresses not EIP-55 checksummed); `close()` destroys
 * the provider. Decisions: docs/evm-source.md.
 */
import { backOff } from "exponential-backoff";
import { getAddress, id as keccakId } from "ethers";
import { checksumAddress } from "./checksum";
import { redactUrlsIn } from "../../watchers/config";
import { createEvmProvider } from "./rpc";
import { NATIVE_INDEX_OFFSET, type BlockRef, type ChainSource, type ChainTransfer, type TransferQuery, type WatchedToken } from "../source";

/** keccak256("Transfer(address,address,uint256)"). */
export const TRANSFER_TOPIC = keccakId("Transfer(address,address,uint256)");

export interface EvmSourceLogger {
	warn(...args: unknown[]): void;
	info(...args: unknown[]): void;
}

export interface EvmSourceOptions {
	networkId: string;
	rpcUrl: string;
	/** The EIP-155 chain id the node must report, checked before the first call; unset: not checked. */
	chainId?: number;
	/** Total time of one HTTP request, connect to last byte. Default 15,000 ms. */
	timeoutMs?: number;
	/** Widest eth_getLogs range in blocks. Default 500. */
	maxRange?: number;
	/** Padded addresses per eth_getLogs topic filter. Default 200. */
	topicChunkSize?: number;
	/** Above this many addresses, all Transfer logs of the tokens are fetched and matched in memory. Default 2,000. */
	largeSetThreshold?: number;
	/** JSON-RPC calls per HTTP batch (headers, balances, receipts, logs). Default 50. */
	batchSize?: number;
	/** Blocks with full transactions per HTTP batch (native detection). Default 10. */
	fullBlockBatchSize?: number;
	retry?: {
		/** Attempts in all, the first included. Default 5. */
		attempts?: number;
		/** Ceiling of the first wait; doubles each attempt (full jitter: a random wait below it). Default 250 ms. */
		startingDelayMs?: number;
		/** Cap of a wait. Default 5,000 ms. */
		maxDelayMs?: number;
	};
	logger?: EvmSourceLogger;
}

/** Why a call failed, as far as the source can tell. */
export type RpcFailureReason = "unavailable" | "timeout" | "tooLarge" | "unknownBlock" | "chainMismatch" | "rejected";

/**
 * Every error the source throws from a call. The message describes the failure without the RPC
 * URL (hosted providers put API keys in it), and the underlying ethers error is not attached as
 * `cause` for the same reason: its `info.requestUrl` holds the URL.
 */
export class RpcError extends Error {
	constructor(message: string, readonly method: string, readonly reason: RpcFailureReason) {
		super(message);
		this.name = "RpcError";
	}
}

/** The node could not be reached or kept failing (network, timeout, 429, 5xx) after the bounded retries. */
export class RpcUnavailableError extends RpcError {
	constructor(method: string, readonly attempts: number, cause: unknown) {
		super(`RPC unavailable: ${method} failed ${attempts} time(s): ${describe(cause)}`, method, "unavailable");
		this.name = "RpcUnavailableError";
	}
}

/** The node does not have (or no longer agrees on) a block it was asked about by hash or number. */
export class BlockUnavailableError extends RpcError {
	constructor(method: string, readonly block: string | number, detail: string) {
		super(`Block ${block} unavailable (${method}): ${detail}`, method, "unknownBlock");
		this.name = "BlockUnavailableError";
	}
}

/** The RPC endpoint serves another chain than the network's. */
export class ChainMismatchError extends RpcError {
	constructor(readonly expected: number, readonly actual: number) {
		super(`RPC endpoint is on chain ${actual}, expected ${expected}`, "eth_chainId", "chainMismatch");
		this.name = "ChainMismatchError";
	}
}

export interface EvmSource extends ChainSource {
	nativeBalances(addresses: readonly string[], blockNumber: number): Promise<Map<string, string>>;
}

// ---- failure classification (pure) ----

/** How classifyRpcFailure sorts a failure: retry (transient, timeout), halve the range (tooLarge, timeout), or give up. */
export type RpcFailureKind = "transient" | "timeout" | "tooLarge" | "unknownBlock" | "rejected";

const SOCKET_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ECONNABORTED", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN", "UND_ERR_SOCKET", "UND_ERR_CONNECT_TIMEOUT", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT", "UND_ERR_CLOSED"]);
const RATE_LIMITED = /rate.?limit|too many requests|exceeded .*capacity|compute units|request count|throttl/i;
const TOO_LARGE = /more than \d+ results|too many (results|logs)|block range|range (is )?too (large|wide|big)|limit exceeded|exceeds? (the )?(max|limit)|response (is )?too (large|big)|response size|query timeout|max(imum)? .*(range|results|logs)|log response size/i;
const UNKNOWN_BLOCK = /unknown block|block not found|header not found|not found/i;

function field(value: unknown, key: string): unknown {
	return value !== null && typeof value === "object" ? (value as Record<string, unknown>)[key] : undefined;
}

const clip = (text: string): string => (text.length > 300 ? `${text.slice(0, 300)}...` : text);

/** A failure in a few words, from the parts of an ethers error that never hold the request URL. */
function describe(e: unknown): string {
	const rpc = rpcErrorOf(e);
	if (rpc) return clip(redactUrlsIn(`JSON-RPC error${rpc.code === undefined ? "" : ` ${rpc.code}`}: ${rpc.message}`));
	const code = field(e, "code");
	if (code === "TIMEOUT" || field(e, "name") === "TimeoutError") return "timed out";
	if (code === "SERVER_ERROR") {
		const status = field(field(e, "info"), "responseStatus");
		if (typeof status === "string" && status) return `HTTP ${status}`;
	}
	const short = field(e, "shortMessage");
	const text = typeof short === "string" ? short : e instanceof Error ? e.message : String(e);
	const causeCode = field(field(e, "cause"), "code");
	return clip(redactUrlsIn(typeof causeCode === "string" ? `${text} (${causeCode})` : text));
}

/** The JSON-RPC error object ({ code, message }) inside an ethers error, if the node sent one. */
function rpcErrorOf(e: unknown): { code?: number; message: string } | null {
	for (const candidate of [field(e, "error"), field(field(e, "info"), "error")]) {
		const message = field(candidate, "message");
		if (typeof message === "string") {
			const code = field(candidate, "code");
			return { code: typeof code === "number" ? code : undefined, message };
		}
	}
	return null;
}

/** What kind of failure an error from provider.send is: decides retry, halving or giving up. */
export function classifyRpcFailure(e: unknown): RpcFailureKind {
	const code = field(e, "code");
	const name = field(e, "name");
	if (code === "TIMEOUT" || name === "TimeoutError") return "timeout";
	const rpc = rpcErrorOf(e);
	if (rpc) {
		if (rpc.code === 429 || RATE_LIMITED.test(rpc.message)) return "transient";
		if (rpc.code === -32005 || TOO_LARGE.test(rpc.message)) return "tooLarge";
		if (UNKNOWN_BLOCK.test(rpc.message)) return "unknownBlock";
		if (rpc.code === -32603) return "transient";
		return "rejected";
	}
	if (code === "SERVER_ERROR") {
		const info = field(e, "info");
		const status = Number(String(field(info, "responseStatus") ?? "").split(" ")[0]);
		const body = String(field(info, "responseBody") ?? "");
		if (status === 413) return "tooLarge";
		if (status === 429 || RATE_LIMITED.test(body)) return "transient";
		if (TOO_LARGE.test(body)) return "tooLarge";
		// 5xx, ethers' 599 (bad response), unparseable bodies: the node or its proxy is in trouble.
		if (!(status >= 400 && status < 500)) return "transient";
		return "rejected";
	}
	if (code === "BAD_DATA") return "transient"; // missing response in a batch, malformed JSON
	const cause = field(e, "cause");
	const socketCode = field(cause, "code") ?? code;
	if (typeof socketCode === "string" && SOCKET_CODES.has(socketCode)) return "transient";
	if (name === "TypeError" && /fetch failed|terminated|socket/i.test(describe(e))) return "transient";
	return "rejected";
}

// ---- JSON-RPC shapes (raw, unformatted) ----

interface RawBlock {
	number: string;
	hash: string;
	parentHash: string;
	timestamp: string;
	transactions: Array<string | RawTx>;
}

interface RawTx {
	hash: string;
	to: string | null;
	value: string;
	transactionIndex: string;
	blockHash: string;
}

interface RawLog {
	address: string;
	topics: string[];
	data: string;
	blockNumber: string;
	blockHash: string;
	transactionHash: string;
	logIndex: string;
	removed?: boolean;
}

interface RawReceipt {
	status?: string;
	blockHash: string;
}

const hex = (n: number | bigint): string => `0x${n.toString(16)}`;

/** The block a call was about, for error messages: a block hash, a number or tag, or a transaction hash. */
function blockParam(params: readonly unknown[]): string {
	const first = params[0];
	const byHash = field(first, "blockHash");
	if (typeof byHash === "string") return byHash;
	const range = field(first, "fromBlock");
	if (typeof range === "string") return `${range}..${String(field(first, "toBlock"))}`;
	return String(first);
}
const num = (h: string): number => Number(BigInt(h));

function blockRef(b: RawBlock): BlockRef {
	return { number: num(b.number), hash: b.hash, parentHash: b.parentHash, timestamp: num(b.timestamp) };
}

/** `topics[2]` form of an address: 32 bytes, left-padded. */
export function addressTopic(address: string): string {
	return `0x${"0".repeat(24)}${address.slice(2).toLowerCase()}`;
}

const ZERO_PAD = "0x000000000000000000000000";

/**
 * Matches a raw address from the chain against the watched set, which holds canonical (EIP-55)
 * addresses as the contract says: the address is checksummed and looked up, so a call costs
 * nothing per watched address (a lower-cased copy of 100,000 addresses costs ~100 ms a call).
 * Memoized within the call: a block often pays the same address several times.
 */
function watchedMatcher(addresses: ReadonlySet<string>): (raw: string) => string | null {
	const first = addresses.values().next().value;
	if (first !== undefined && (typeof first !== "string" || !/^0x[0-9a-fA-F]{40}$/.test(first) || getAddress(first) !== first)) {
		throw new TypeError(`EVM source: watched addresses must be EIP-55 checksummed (evmCodec.normalizeAddress), got "${String(first)}"`);
	}
	const memo = new Map<string, string | null>();
	return raw => {
		const lower = raw.toLowerCase();
		let hit = memo.get(lower);
		if (hit === undefined) {
			const checksummed = checksumAddress(lower);
			hit = checksummed !== null && addresses.has(checksummed) ? checksummed : null;
			memo.set(lower, hit);
		}
		return hit;
	};
}

function chunk<T>(items: readonly T[], size: number): T[][] {
	const out: T[][] = [];
	for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
	return out;
}

/** What one call may retry on: transient failures always; timeouts unless the caller halves on them instead. */
type RetryOn = ReadonlySet<RpcFailureKind>;
const RETRY_TRANSIENT: RetryOn = new Set(["transient", "timeout"]);
const RETRY_NO_TIMEOUT: RetryOn = new Set(["transient"]);
const RETRY_BY_HASH: RetryOn = new Set(["transient", "timeout", "unknownBlock"]);

export function createEvmSource(opts: EvmSourceOptions): EvmSource {
	const timeoutMs = opts.timeoutMs ?? 15_000;
	const maxRange = Math.max(1, opts.maxRange ?? 500);
	const topicChunkSize = Math.max(1, opts.topicChunkSize ?? 200);
	const largeSetThreshold = opts.largeSetThreshold ?? 2_000;
	const batchSize = Math.max(1, opts.batchSize ?? 50);
	const fullBlockBatchSize = Math.max(1, opts.fullBlockBatchSize ?? 10);
	const attempts = Math.max(1, opts.retry?.attempts ?? 5);
	const startingDelay = opts.retry?.startingDelayMs ?? 250;
	const maxDelay = opts.retry?.maxDelayMs ?? 5_000;
	const logger = opts.logger;

	const provider = createEvmProvider(opts.rpcUrl, { chainId: opts.chainId ?? 0, networkName: `evm:${opts.networkId}`, timeoutMs, batchMaxCount: batchSize, batchStallTime: 2 });

	let closed = false;
	let span = maxRange;
	let chainChecked: Promise<void> | null = null;

	/** One JSON-RPC call: retried on `retryOn` failures with backoff + full jitter, then a typed RpcError. */
	async function send<T>(method: string, params: unknown[], retryOn: RetryOn = RETRY_TRANSIENT): Promise<T> {
		let tries = 0;
		try {
			return await backOff(
				() => {
					tries++;
					return provider.send(method, params) as Promise<T>;
				},
				{
					numOfAttempts: attempts,
					startingDelay,
					maxDelay,
					timeMultiple: 2,
					jitter: "full",
					retry: e => !closed && retryOn.has(classifyRpcFailure(e)),
				},
			);
		} catch (e) {
			if (closed) throw new RpcError(`RPC source closed: ${describe(e)}`, method, "rejected");
			const kind = classifyRpcFailure(e);
			if (kind === "transient" || (kind === "timeout" && retryOn.has("timeout"))) throw new RpcUnavailableError(method, tries, e);
			if (kind === "timeout") throw new RpcError(`${method} timed out after ${timeoutMs} ms`, method, "timeout");
			if (kind === "unknownBlock") throw new BlockUnavailableError(method, blockParam(params), describe(e));
			throw new RpcError(`${method} failed: ${describe(e)}`, method, kind);
		}
	}

	async function checkChain(): Promise<void> {
		if (opts.chainId === undefined) return;
		if (!chainChecked) {
			chainChecked = send<string>("eth_chainId", []).then(actual => {
				if (num(actual) !== opts.chainId) throw new ChainMismatchError(opts.chainId!, num(actual));
			});
			// A failed look-up (node down) is asked again next time; a mismatch stays.
			chainChecked.catch(e => {
				if (!(e instanceof ChainMismatchError)) chainChecked = null;
			});
		}
		return chainChecked;
	}

	/** Runs `fn` on windows of `size` items, the calls of a window in one tick (one HTTP batch). */
	async function inWindows<T, R>(items: readonly T[], size: number, fn: (item: T) => Promise<R>): Promise<R[]> {
		const out: R[] = [];
		for (const window of chunk(items, size)) out.push(...(await Promise.all(window.map(fn))));
		return out;
	}

	function blockByNumber(n: number | "latest", full: boolean): Promise<RawBlock | null> {
		return send<RawBlock | null>("eth_getBlockByNumber", [typeof n === "number" ? hex(n) : n, full]);
	}

	/** Logs of one filter over [from, to], halving the span on refusals and timeouts. */
	async function logsOverRange(filter: Record<string, unknown>, from: number, to: number): Promise<RawLog[]> {
		const out: RawLog[] = [];
		let start = from;
		while (start <= to) {
			const end = Math.min(to, start + span - 1);
			try {
				// Over several blocks a timeout halves the range; for one block it is retried.
				const logs = await send<RawLog[]>("eth_getLogs", [{ ...filter, fromBlock: hex(start), toBlock: hex(end) }], end > start ? RETRY_NO_TIMEOUT : RETRY_TRANSIENT);
				out.push(...logs);
				start = end + 1;
			} catch (e) {
				if (end > start && e instanceof RpcError && (e.reason === "tooLarge" || e.reason === "timeout")) {
					span = Math.max(1, Math.floor((end - start + 1) / 2));
					logger?.info(`eth_getLogs ${start}-${end} refused (${e.reason}); trying ${span} block(s) a query`, { networkId: opts.networkId });
					continue;
				}
				throw e;
			}
		}
		return out;
	}

	async function logsByHash(filter: Record<string, unknown>, blockHash: string): Promise<RawLog[]> {
		return send<RawLog[]>("eth_getLogs", [{ ...filter, blockHash }], RETRY_BY_HASH);
	}

	/** Consecutive runs of the range: blocks the watcher gave a hash for, and the others. */
	function segments(q: TransferQuery): Array<{ from: number; to: number; hashes: string[] | null }> {
		const out: Array<{ from: number; to: number; hashes: string[] | null }> = [];
		for (let n = q.fromBlock; n <= q.toBlock; n++) {
			const hash = q.blockHashes?.get(n) ?? null;
			const last = out[out.length - 1];
			if (last && last.to === n - 1 && (last.hashes !== null) === (hash !== null)) {
				last.to = n;
				if (hash) last.hashes!.push(hash);
			} else {
				out.push({ from: n, to: n, hashes: hash ? [hash] : null });
			}
		}
		return out;
	}

	async function tokenTransfers(q: TransferQuery, tokens: readonly WatchedToken[], watched: (raw: string) => string | null): Promise<ChainTransfer[]> {
		const byContract = new Map(tokens.map(t => [t.contractAddress.toLowerCase(), t]));
		const contracts = [...byContract.keys()];
		const filters: Array<Record<string, unknown>> =
			q.addresses.size > largeSetThreshold
				? [{ address: contracts, topics: [TRANSFER_TOPIC] }]
				: chunk([...q.addresses], topicChunkSize).map(addrs => ({ address: contracts, topics: [TRANSFER_TOPIC, null, addrs.map(a => addressTopic(a))] }));
		const raw: RawLog[] = [];
		for (const seg of segments(q)) {
			const parts = await Promise.all(
				filters.map(filter =>
					seg.hashes ? inWindows(seg.hashes, batchSize, h => logsByHash(filter, h)).then(r => r.flat()) : logsOverRange(filter, seg.from, seg.to),
				),
			);
			for (const p of parts) raw.push(...p);
		}
		const out: ChainTransfer[] = [];
		const seen = new Set<string>();
		for (const log of raw) {
			if (log.removed) continue;
			const token = byContract.get(log.address.toLowerCase());
			// ERC-721 shares the topic with a 4th (indexed id) topic; ERC-20 has 3 and 32 bytes of data.
			if (!token || log.topics.length !== 3 || log.topics[0] !== TRANSFER_TOPIC || !/^0x[0-9a-fA-F]{64}$/.test(log.data)) continue;
			const toTopic = log.topics[2].toLowerCase();
			if (!toTopic.startsWith(ZERO_PAD) || toTopic.length !== 66) continue;
			const to = watched(`0x${toTopic.slice(26)}`);
			if (!to) continue;
			const amount = BigInt(log.data);
			if (amount === 0n) continue;
			const key = `${log.blockHash}:${log.logIndex}`;
			if (seen.has(key)) continue;
			seen.add(key);
			out.push({
				networkId: opts.networkId,
				txHash: log.transactionHash,
				logIndex: num(log.logIndex),
				toAddress: to,
				tokenId: token.tokenId,
				amount: amount.toString(),
				blockNumber: num(log.blockNumber),
				blockHash: log.blockHash,
			});
		}
		return out;
	}

	async function nativeTransfers(q: TransferQuery, token: WatchedToken, watched: (raw: string) => string | null): Promise<ChainTransfer[]> {
		const numbers: number[] = [];
		for (let n = q.fromBlock; n <= q.toBlock; n++) numbers.push(n);
		const blocks = await inWindows(numbers, fullBlockBatchSize, async n => {
			const hash = q.blockHashes?.get(n);
			const block = hash
				? await send<RawBlock | null>("eth_getBlockByHash", [hash, true], RETRY_BY_HASH)
				: await blockByNumber(n, true);
			// Never "no transactions" for a block the node does not have: the watcher must retry.
			if (!block) throw new BlockUnavailableError(hash ? "eth_getBlockByHash" : "eth_getBlockByNumber", hash ?? n, "the node returned no block");
			if (hash && block.hash !== hash) throw new BlockUnavailableError("eth_getBlockByHash", hash, `the node answered block ${block.hash}`);
			return block;
		});
		const candidates: Array<{ tx: RawTx; block: RawBlock; to: string }> = [];
		for (const block of blocks) {
			for (const tx of block.transactions) {
				if (typeof tx === "string" || !tx.to || BigInt(tx.value) === 0n) continue;
				const to = watched(tx.to);
				if (to) candidates.push({ tx, block, to });
			}
		}
		const receipts = await inWindows(candidates, batchSize, c => send<RawReceipt | null>("eth_getTransactionReceipt", [c.tx.hash], RETRY_BY_HASH));
		const out: ChainTransfer[] = [];
		candidates.forEach(({ tx, block, to }, i) => {
			const receipt = receipts[i];
			if (!receipt) throw new BlockUnavailableError("eth_getTransactionReceipt", block.hash, `no receipt for ${tx.hash}`);
			if (receipt.blockHash !== block.hash) throw new BlockUnavailableError("eth_getTransactionReceipt", block.hash, `receipt of ${tx.hash} is in block ${receipt.blockHash}`);
			if (receipt.status !== "0x1") return; // reverted: the value never moved
			out.push({
				networkId: opts.networkId,
				txHash: tx.hash,
				logIndex: NATIVE_INDEX_OFFSET + num(tx.transactionIndex),
				toAddress: to,
				tokenId: token.tokenId,
				amount: BigInt(tx.value).toString(),
				blockNumber: num(block.number),
				blockHash: block.hash,
			});
		});
		return out;
	}

	return {
		async head() {
			await checkChain();
			const block = await blockByNumber("latest", false);
			if (!block) throw new BlockUnavailableError("eth_getBlockByNumber", "latest", "the node returned no block");
			return blockRef(block);
		},

		async block(number) {
			await checkChain();
			const block = await blockByNumber(number, false);
			return block ? blockRef(block) : null;
		},

		/** Stops at the first block the node does not have: the answer is always a gap-free run from `fromBlock`. */
		async blocks(fromBlock, toBlock) {
			await checkChain();
			const out: BlockRef[] = [];
			for (let start = fromBlock; start <= toBlock; start += batchSize) {
				const numbers: number[] = [];
				for (let n = start; n <= Math.min(toBlock, start + batchSize - 1); n++) numbers.push(n);
				const window = await Promise.all(numbers.map(n => blockByNumber(n, false)));
				for (const b of window) {
					if (!b) return out;
					out.push(blockRef(b));
				}
			}
			return out;
		},

		async transfers(q) {
			await checkChain();
			if (q.toBlock < q.fromBlock || q.addresses.size === 0) return [];
			span = Math.min(maxRange, span * 2);
			const watched = watchedMatcher(q.addresses);
			const native = q.tokens.find(t => t.contractAddress === "");
			const contractTokens = q.tokens.filter(t => t.contractAddress !== "");
			const [erc20, coins] = await Promise.all([
				contractTokens.length > 0 ? tokenTransfers(q, contractTokens, watched) : [],
				native ? nativeTransfers(q, native, watched) : [],
			]);
			return [...erc20, ...coins].sort((a, b) => a.blockNumber - b.blockNumber || a.logIndex - b.logIndex);
		},

		async nativeBalances(addresses, blockNumber) {
			await checkChain();
			const balances = await inWindows(addresses, batchSize, a => send<string>("eth_getBalance", [a, hex(blockNumber)]));
			return new Map(addresses.map((a, i) => [a, BigInt(balances[i]).toString()]));
		},

		async close() {
			closed = true;
			provider.destroy();
		},
	};
}
