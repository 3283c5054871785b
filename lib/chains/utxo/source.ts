/**
 * The UTXO chain source (the ChainSource contract of ./source.ts) over the Bitcoin Core JSON-RPC,
 * for Bitcoin and Litecoin (Litecoin Core 0.21 has Bitcoin Core 0.21's RPC). Decisions and what was
 * run on a node: docs/watchers.md "UTXO chains".
 *
 * - Blocks: `getblockchaininfo` (head), `getblockhash` + `getblockheader` (number, hash, parent,
 *   time), calls of a window sent as one JSON-RPC batch. `getblockhash` past the tip (-8) is "no
 *   such block" (null), never "no transfers".
 * - Transfers: `getblock <hash> 2` per block (by the hash the watcher read, so a reorg between the
 *   two reads fails the hash check instead of mixing chains). Every output whose scriptPubKey is
 *   the output script of a watched address is a payment keyed by txid + vout (`logIndex` = vout),
 *   so two outputs to one address in one transaction are two payments. Coinbase outputs (unspendable
 *   for 100 blocks) and Litecoin MWEB outputs (`ismweb`, no script) are not payments.
 * - Matching: the watched addresses' output scripts (bitcoinjs-lib `address.toOutputScript` with
 *   the network's parameters) are built once into a Map<script hex, address>, kept per watched Set
 *   and extended incrementally as the watcher adds addresses (a Set iterates in insertion order).
 * - Amounts: the node prints amounts as fixed-point decimals with 8 places ("0.10000000"); the
 *   reply text is rewritten so every `"value":<number>` becomes a JSON string before JSON.parse
 *   (which would turn 0.1 into a float), and the string is converted to satoshis with BigInt
 *   arithmetic. Anything that is not a plain decimal with at most 8 places is an error.
 * - Robustness: every request has a total timeout; network errors, timeouts, HTTP 5xx without a
 *   JSON-RPC error, and -28 (node warming up) are retried with exponential backoff and full
 *   jitter (exponential-backoff package), then RpcUnavailableError. The RPC URL may carry
 *   credentials (http://user:password@host:port/, or `__cookie__:<cookie>`): they go into an
 *   Authorization header and never into a message or log.
 * - Mempool: `mempoolTransfers` lists unconfirmed payments to watched addresses
 *   (`getrawmempool` + `getrawtransaction <txid> true`, which works on a mempool transaction
 *   without -txindex).
 */
import { backOff } from "exponential-backoff";
import { address as btcAddress, type Network } from "bitcoinjs-lib";
import { BlockUnavailableError, RpcError, RpcUnavailableError } from "../evm/source";
import type { BlockRef, ChainSource, ChainTransfer, TransferQuery } from "../source";
import { rpcCredentials } from "../../watchers/config";

export interface UtxoSourceLogger {
	warn(...args: unknown[]): void;
	info(...args: unknown[]): void;
}

export interface UtxoSourceOptions {
	networkId: string;
	rpcUrl: string;
	/** bitcoinjs-lib parameters of the network (lib/chains/utxo/codec.ts bitcoinjsNetwork). */
	network: Network;
	/** Total time of one HTTP request. Default 15,000 ms. */
	timeoutMs?: number;
	/** JSON-RPC calls per HTTP batch (hashes, headers). Default 50. */
	batchSize?: number;
	/** Full blocks (`getblock 2`) fetched at once. Default 4. */
	blockConcurrency?: number;
	retry?: { attempts?: number; startingDelayMs?: number; maxDelayMs?: number };
	logger?: UtxoSourceLogger;
}

/** An unconfirmed payment: a ChainTransfer without a block. */
export type MempoolTransfer = Omit<ChainTransfer, "blockNumber" | "blockHash">;

export interface UtxoSource extends ChainSource {
	mempoolTransfers(q: Pick<TransferQuery, "addresses" | "tokens">): Promise<MempoolTransfer[]>;
	/** Matches the outputs of one already-parsed `getblock 2` answer (the bench measures it alone). */
	matchBlock(block: RawBlock, q: Pick<TransferQuery, "addresses" | "tokens">, number: number): ChainTransfer[];
}

// ---- exact amounts (pure) ----

const VALUE_FIELD = /"value":\s*(-?[0-9][0-9.eE+-]*)/g;

/** The reply text with every `"value": <number>` as a JSON string, so JSON.parse keeps it exact. */
export function quoteValues(json: string): string {
	return json.replace(VALUE_FIELD, '"value":"$1"');
}

/** "0.10000000" -> 10000000n: a plain non-negative decimal with at most 8 places, converted exactly. */
export function satoshis(value: string): bigint {
	const m = /^(\d+)(?:\.(\d{1,8}))?$/.exec(value);
	if (!m) throw new TypeError(`not an amount with at most 8 decimals: ${JSON.stringify(value)}`);
	return BigInt(m[1]) * 100_000_000n + BigInt((m[2] ?? "").padEnd(8, "0"));
}

/** JSON.parse with amounts kept as strings. */
export function parseRpcReply<T>(text: string): T {
	return JSON.parse(quoteValues(text)) as T;
}

// ---- address matching (pure) ----

/** Output script (hex) -> address, built once per watched Set and extended as the Set grows. */
export class ScriptIndex {
	private readonly byScript = new Map<string, string>();
	private seen = 0;
	private source: ReadonlySet<string> | null = null;

	constructor(private readonly network: Network) {}

	/** The index for this Set; a different Set (a full reload) rebuilds it. */
	sync(addresses: ReadonlySet<string>): Map<string, string> {
		if (this.source !== addresses || addresses.size < this.seen) {
			this.byScript.clear();
			this.seen = 0;
			this.source = addresses;
		}
		if (addresses.size === this.seen) return this.byScript;
		let i = 0;
		for (const a of addresses) {
			if (i++ < this.seen) continue;
			try {
				this.byScript.set(btcAddress.toOutputScript(a, this.network).toString("hex"), a);
			} catch {
				// Not an address of this network: it can never be paid here.
			}
		}
		this.seen = addresses.size;
		return this.byScript;
	}
}

// ---- JSON-RPC shapes (values as strings, see quoteValues) ----

interface RawOutput {
	value: string;
	n: number;
	ismweb?: boolean;
	scriptPubKey?: { hex?: string };
}
interface RawTx {
	txid: string;
	vin: Array<{ coinbase?: string }>;
	vout: RawOutput[];
}
export interface RawBlock {
	hash: string;
	height: number;
	previousblockhash?: string;
	time: number;
	tx: RawTx[];
}
interface RawHeader {
	hash: string;
	height: number;
	previousblockhash?: string;
	time: number;
}

type Kind = "transient" | "notFound" | "rejected";

class CallError extends Error {
	constructor(
		message: string,
		readonly kind: Kind,
		readonly code?: number,
	) {
		super(message);
	}
}

/** Endpoint without credentials + the Authorization header; credentials never leave this function's result. */
function endpointOf(rpcUrl: string): { url: string; auth: string | null } {
	const { url, authorization } = rpcCredentials(rpcUrl);
	return { url, auth: authorization };
}

export function createUtxoSource(opts: UtxoSourceOptions): UtxoSource {
	const { url, auth } = endpointOf(opts.rpcUrl);
	const timeoutMs = opts.timeoutMs ?? 15_000;
	const batchSize = Math.max(1, opts.batchSize ?? 50);
	const blockConcurrency = Math.max(1, opts.blockConcurrency ?? 4);
	const attempts = Math.max(1, opts.retry?.attempts ?? 5);
	const index = new ScriptIndex(opts.network);
	let closed = false;
	let nextId = 0;

	/** One HTTP request carrying one call or a batch; each answer is a result or a CallError. */
	async function post(calls: Array<{ method: string; params: unknown[] }>): Promise<Array<unknown | CallError>> {
		const body = calls.map(c => ({ jsonrpc: "1.0", id: ++nextId, method: c.method, params: c.params }));
		const firstId = body[0].id;
		let res: Response;
		try {
			res = await fetch(url, {
				method: "POST",
				headers: { "content-type": "application/json", ...(auth ? { authorization: auth } : {}) },
				body: JSON.stringify(calls.length === 1 ? body[0] : body),
				signal: AbortSignal.timeout(timeoutMs),
			});
		} catch (e) {
			const name = (e as Error).name;
			throw new CallError(name === "TimeoutError" ? `timed out after ${timeoutMs} ms` : `${(e as Error).message} (${String((e as { cause?: { code?: string } }).cause?.code ?? "")})`, "transient");
		}
		const text = await res.text().catch(() => "");
		if (res.status === 401 || res.status === 403) throw new CallError(`HTTP ${res.status} (RPC credentials refused)`, "rejected");
		let parsed: unknown;
		try {
			parsed = parseRpcReply(text);
		} catch {
			throw new CallError(`HTTP ${res.status}: not a JSON-RPC answer`, res.status >= 500 || res.status === 429 ? "transient" : "rejected");
		}
		const answers = (Array.isArray(parsed) ? parsed : [parsed]) as Array<{ id: number; result: unknown; error: { code: number; message: string } | null }>;
		const byId = new Map(answers.map(a => [a.id, a]));
		return calls.map((c, i) => {
			const a = byId.get(firstId + i);
			if (!a) return new CallError(`${c.method}: no answer in the batch`, "transient");
			if (a.error) {
				const { code, message } = a.error;
				// -28 warming up; -8 out of range / -5 not found: the block or transaction does not exist.
				const kind: Kind = code === -28 ? "transient" : code === -8 || code === -5 ? "notFound" : "rejected";
				return new CallError(`${c.method}: ${String(message).slice(0, 200)} (${code})`, kind, code);
			}
			return a.result;
		});
	}

	/** A batch with retries on transient failures (of the request or of any call in it). */
	async function batch(calls: Array<{ method: string; params: unknown[] }>): Promise<Array<unknown | CallError>> {
		let tries = 0;
		try {
			return await backOff(
				async () => {
					tries++;
					const out = await post(calls);
					const transient = out.find(o => o instanceof CallError && o.kind === "transient");
					if (transient) throw transient;
					return out;
				},
				{
					numOfAttempts: attempts,
					startingDelay: opts.retry?.startingDelayMs ?? 250,
					maxDelay: opts.retry?.maxDelayMs ?? 5_000,
					timeMultiple: 2,
					jitter: "full",
					retry: e => !closed && e instanceof CallError && e.kind === "transient",
				},
			);
		} catch (e) {
			const method = calls[0]?.method ?? "batch";
			if (e instanceof CallError && e.kind === "transient") throw new RpcUnavailableError(method, tries, e);
			throw new RpcError(`${method} failed: ${(e as Error).message}`, method, "rejected");
		}
	}

	async function call<T>(method: string, params: unknown[] = []): Promise<T> {
		const [r] = await batch([{ method, params }]);
		if (r instanceof CallError) {
			if (r.kind === "notFound") throw new BlockUnavailableError(method, String(params[0] ?? ""), r.message);
			throw new RpcError(r.message, method, "rejected");
		}
		return r as T;
	}

	const ref = (h: RawHeader): BlockRef => ({ number: h.height, hash: h.hash, parentHash: h.previousblockhash ?? "", timestamp: h.time });

	/** Headers of blocks n..m by number, stopping at the first the node does not have. */
	async function headers(from: number, to: number): Promise<BlockRef[]> {
		const out: BlockRef[] = [];
		for (let start = from; start <= to; start += batchSize) {
			const numbers: number[] = [];
			for (let n = start; n <= Math.min(to, start + batchSize - 1); n++) numbers.push(n);
			const hashes = await batch(numbers.map(n => ({ method: "getblockhash", params: [n] })));
			const known: string[] = [];
			for (const h of hashes) {
				if (h instanceof CallError) {
					if (h.kind === "notFound") break;
					throw new RpcError(h.message, "getblockhash", "rejected");
				}
				known.push(h as string);
			}
			if (known.length === 0) return out;
			const heads = await batch(known.map(h => ({ method: "getblockheader", params: [h, true] })));
			for (const h of heads) {
				// A header gone between the two reads: a reorg; answer the run so far.
				if (h instanceof CallError) return out;
				out.push(ref(h as RawHeader));
			}
			if (known.length < numbers.length) return out;
		}
		return out;
	}

	function matchTx(tx: RawTx, scripts: Map<string, string>, tokenId: string): Array<{ txHash: string; logIndex: number; toAddress: string; tokenId: string; amount: string }> {
		const out = [];
		if (tx.vin.length > 0 && tx.vin[0].coinbase !== undefined) return [];
		for (const o of tx.vout) {
			if (o.ismweb) continue;
			const hex = o.scriptPubKey?.hex;
			if (!hex) continue;
			const to = scripts.get(hex);
			if (!to) continue;
			const amount = satoshis(o.value);
			if (amount === 0n) continue;
			out.push({ txHash: tx.txid, logIndex: o.n, toAddress: to, tokenId, amount: amount.toString() });
		}
		return out;
	}

	function nativeTokenId(q: Pick<TransferQuery, "tokens">): string | null {
		return q.tokens.find(t => t.contractAddress === "")?.tokenId ?? null;
	}

	function matchBlock(block: RawBlock, q: Pick<TransferQuery, "addresses" | "tokens">, number: number): ChainTransfer[] {
		const tokenId = nativeTokenId(q);
		if (!tokenId) return [];
		const scripts = index.sync(q.addresses);
		const out: ChainTransfer[] = [];
		for (const tx of block.tx) {
			for (const m of matchTx(tx, scripts, tokenId)) out.push({ networkId: opts.networkId, ...m, blockNumber: number, blockHash: block.hash });
		}
		return out;
	}

	return {
		async head() {
			const info = await call<{ blocks: number; bestblockhash: string }>("getblockchaininfo");
			const h = await call<RawHeader>("getblockheader", [info.bestblockhash, true]);
			return ref(h);
		},

		async block(number) {
			const [r] = await headers(number, number);
			return r ?? null;
		},

		blocks: headers,

		async transfers(q) {
			if (q.toBlock < q.fromBlock || q.addresses.size === 0 || !nativeTokenId(q)) return [];
			const numbers: number[] = [];
			for (let n = q.fromBlock; n <= q.toBlock; n++) numbers.push(n);
			const out: ChainTransfer[] = [];
			for (let i = 0; i < numbers.length; i += blockConcurrency) {
				const window = numbers.slice(i, i + blockConcurrency);
				const blocks = await Promise.all(
					window.map(async n => {
						const hash = q.blockHashes?.get(n) ?? (await call<string>("getblockhash", [n]));
						const block = await call<RawBlock>("getblock", [hash, 2]);
						// Never "no payments" for a block other than the one asked for.
						if (block.hash !== hash || block.height !== n) throw new BlockUnavailableError("getblock", hash, `the node answered block ${block.height} ${block.hash}`);
						return block;
					}),
				);
				blocks.forEach((b, k) => out.push(...matchBlock(b, q, window[k])));
			}
			return out.sort((a, b) => a.blockNumber - b.blockNumber || (a.txHash < b.txHash ? -1 : a.txHash > b.txHash ? 1 : 0) || a.logIndex - b.logIndex);
		},

		async mempoolTransfers(q) {
			const tokenId = nativeTokenId(q);
			if (!tokenId || q.addresses.size === 0) return [];
			const scripts = index.sync(q.addresses);
			const txids = await call<string[]>("getrawmempool");
			const out: MempoolTransfer[] = [];
			for (let i = 0; i < txids.length; i += batchSize) {
				const txs = await batch(txids.slice(i, i + batchSize).map(t => ({ method: "getrawtransaction", params: [t, true] })));
				for (const tx of txs) {
					if (tx instanceof CallError) continue; // left the mempool (mined or replaced) since the list
					for (const m of matchTx(tx as RawTx, scripts, tokenId)) out.push({ networkId: opts.networkId, ...m });
				}
			}
			return out;
		},

		matchBlock,

		async close() {
			closed = true;
		},
	};
}
