/**
 * The TON chain source (docs/watchers.md "TON"): toncenter's v3 indexer API (ton-indexer;
 * RPC_URL_<SLUG> is its base, RPC_API_KEY_<SLUG> its optional key) read through lib/chains/ton/api.ts.
 *
 * - Block numbers are masterchain seqnos; a block's hash is the masterchain block's root hash
 *   (hex) and its parent hash the root hash of seqno - 1, so the runner's chain check
 *   (lib/watchers/reorg.ts) sees an API that starts serving other blocks at known seqnos.
 * - A masterchain block's transactions are those of the masterchain and of every shard block it
 *   commits (`transactionsByMasterchainBlock`, paged): a transaction read there is final on TON.
 *   The watcher credits at the catalogue's requiredConfirmations counted in masterchain blocks
 *   (1: credited from the block that commits it); there is no finalizedHash step.
 * - Catch-up in bounded ranges: at most MAX_BLOCKS_PER_READ masterchain blocks per step.
 * - Matching in memory: deposit addresses are held as raw `0:hex` keys (a Map: 100,000 addresses
 *   cost nothing per lookup); what counts as a payment is lib/chains/ton/transactions.ts.
 * - Jettons: a transfer_notification counts only when its source is the jetton wallet that the
 *   catalogue's (trusted) jetton master returns from `get_wallet_address` for that deposit
 *   (runGetMethod, cached per (master, owner): the answer never changes). A look-alike master's
 *   wallets give other addresses, so their notifications are never jetton payments.
 */
import { Address, beginCell, Cell } from "@ton/core";
import type { BlockRef, ChainSource, ChainTransfer, TransferQuery, WatchedToken } from "../source";
import { createTonApi, type TonApi } from "./api";
import { candidates, hashHex, rawKey, type TonCandidate, type V3Transaction } from "./transactions";

/** Masterchain blocks read per step at most. */
export const MAX_BLOCKS_PER_READ = 16;
/** Transactions per transactionsByMasterchainBlock page (the API allows up to 1,000). */
export const TX_PAGE = 256;
/** Requests in flight at once while a range is read. */
const READ_CONCURRENCY = 4;
/** (master, owner) -> jetton wallet answers kept; never wrong, only refetched once dropped. */
const WALLET_CACHE = 500_000;

const MASTERCHAIN = -1;
const MASTERCHAIN_SHARD = "8000000000000000";

/** The API has not (yet) got a masterchain block it should have: retried at the next step, never read as "nothing". */
export class TonBlockUnavailableError extends Error {
	constructor(readonly seqno: number, detail: string) {
		super(`TON masterchain block ${seqno} unavailable: ${detail}`);
		this.name = "BlockUnavailableError";
	}
}

export interface TonSourceOptions {
	networkId: string;
	/** RPC_URL_<SLUG>: the v3 API base (`https://toncenter.com` or `.../api/v3`). */
	apiUrl: string;
	apiKey?: string | null;
	timeoutMs: number;
	isTestnet: boolean;
	logger?: { warn(...args: unknown[]): void };
	/** For tests: an API client to use instead of one over apiUrl. */
	api?: TonApi;
}

interface V3Block {
	workchain: number;
	shard: string;
	seqno: number;
	root_hash: string;
	gen_utime: string | number;
}

async function mapLimit<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
	const out: R[] = new Array(items.length);
	let next = 0;
	await Promise.all(
		Array.from({ length: Math.min(limit, items.length) }, async () => {
			while (next < items.length) {
				const i = next++;
				out[i] = await fn(items[i]);
			}
		}),
	);
	return out;
}

/** The address in a get-method stack entry (`{type: "slice"|"cell", value: base64 BOC}`). */
export function stackAddress(entry: unknown): string | null {
	const e = entry as { type?: string; value?: unknown } | null;
	if (!e || (e.type !== "slice" && e.type !== "cell") || typeof e.value !== "string") return null;
	try {
		const a = Cell.fromBase64(e.value).beginParse().loadMaybeAddress();
		return a ? a.toRawString() : null;
	} catch {
		return null;
	}
}

export class TonSource implements ChainSource {
	readonly api: TonApi;
	private readonly wallets = new Map<string, string>();
	/** canonical deposit address -> raw key, kept across steps (parsing 100,000 addresses once, not per step). */
	private readonly rawOf = new Map<string, string>();
	private depositIndex: { set: ReadonlySet<string>; size: number; byRaw: Map<string, string> } | null = null;

	constructor(private readonly opts: TonSourceOptions) {
		this.api = opts.api ?? createTonApi({ baseUrl: opts.apiUrl, apiKey: opts.apiKey, timeoutMs: opts.timeoutMs });
	}

	private async header(seqno: number): Promise<V3Block | null> {
		if (seqno < 0) return null;
		const r = await this.api.get<{ blocks: V3Block[] }>("blocks", { workchain: MASTERCHAIN, shard: MASTERCHAIN_SHARD, seqno, limit: 1 });
		const b = r.blocks?.find(x => Number(x.seqno) === seqno && Number(x.workchain) === MASTERCHAIN);
		return b ?? null;
	}

	private static ref(b: V3Block, parent: V3Block | null): BlockRef {
		return { number: Number(b.seqno), hash: hashHex(b.root_hash), parentHash: parent ? hashHex(parent.root_hash) : "", timestamp: Number(b.gen_utime) };
	}

	async head(): Promise<BlockRef> {
		const info = await this.api.get<{ last: V3Block | null }>("masterchainInfo");
		if (!info.last) throw new TonBlockUnavailableError(-1, "masterchainInfo has no last block");
		const last = info.last;
		const parent = await this.header(Number(last.seqno) - 1);
		return TonSource.ref(last, parent);
	}

	async block(seqno: number): Promise<BlockRef | null> {
		const [parent, b] = await Promise.all([this.header(seqno - 1), this.header(seqno)]);
		return b ? TonSource.ref(b, parent) : null;
	}

	/** Masterchain blocks fromBlock..toBlock (at most MAX_BLOCKS_PER_READ), stopping before the first the API does not have. */
	async blocks(fromBlock: number, toBlock: number): Promise<BlockRef[]> {
		const last = Math.min(toBlock, fromBlock + MAX_BLOCKS_PER_READ - 1);
		if (last < fromBlock) return [];
		const seqnos = Array.from({ length: last - fromBlock + 2 }, (_, i) => fromBlock - 1 + i);
		const headers = await mapLimit(seqnos, READ_CONCURRENCY, s => this.header(s));
		const out: BlockRef[] = [];
		for (let i = 1; i < headers.length; i++) {
			const b = headers[i];
			if (!b) break;
			out.push(TonSource.ref(b, headers[i - 1]));
		}
		return out;
	}

	/** Every transaction committed by masterchain block `seqno` (masterchain and shards), all pages. */
	async blockTransactions(seqno: number): Promise<V3Transaction[]> {
		const out: V3Transaction[] = [];
		for (let offset = 0; ; offset += TX_PAGE) {
			const r = await this.api.get<{ transactions: V3Transaction[] }>("transactionsByMasterchainBlock", { seqno, limit: TX_PAGE, offset, sort: "asc" });
			const page = r.transactions ?? [];
			for (const tx of page) {
				// An answer for another block would file payments under the wrong block: refuse it.
				if (Number(tx.mc_block_seqno) !== seqno) throw new TonBlockUnavailableError(seqno, `transaction ${tx.hash} is in masterchain block ${tx.mc_block_seqno}`);
				out.push(tx);
			}
			if (page.length < TX_PAGE) return out;
		}
	}

	/** Raw key -> canonical deposit address, rebuilt only when the watched set changed. */
	private deposits(addresses: ReadonlySet<string>): Map<string, string> {
		const idx = this.depositIndex;
		if (idx && idx.set === addresses && idx.size === addresses.size) return idx.byRaw;
		const byRaw = new Map<string, string>();
		for (const a of addresses) {
			let raw = this.rawOf.get(a);
			if (raw === undefined) {
				try {
					raw = Address.parse(a).toRawString();
				} catch {
					raw = "";
				}
				this.rawOf.set(a, raw);
			}
			if (raw) byRaw.set(raw, a);
		}
		this.depositIndex = { set: addresses, size: addresses.size, byRaw };
		return byRaw;
	}

	/** The jetton wallet `master` computes for `owner` (raw keys), from get_wallet_address; cached. */
	async jettonWallet(master: string, owner: string): Promise<string> {
		const key = `${master}|${owner}`;
		const known = this.wallets.get(key);
		if (known) return known;
		const ownerSlice = beginCell().storeAddress(Address.parseRaw(owner)).endCell().toBoc().toString("base64");
		const r = await this.api.post<{ exit_code: number; stack: unknown[] }>("runGetMethod", { address: master, method: "get_wallet_address", stack: [{ type: "slice", value: ownerSlice }] });
		if (Number(r.exit_code) !== 0) throw new Error(`get_wallet_address on jetton master ${master} exited with code ${r.exit_code}`);
		const wallet = stackAddress(r.stack?.[0]);
		if (!wallet) throw new Error(`get_wallet_address on jetton master ${master} returned no address`);
		if (this.wallets.size >= WALLET_CACHE) this.wallets.delete(this.wallets.keys().next().value!);
		this.wallets.set(key, wallet);
		return wallet;
	}

	/** The watched jetton whose trusted master's wallet for `owner` is `jettonWallet`, or null. */
	private async trustedJetton(c: Extract<TonCandidate, { kind: "jetton" }>, masters: ReadonlyArray<{ raw: string; token: WatchedToken }>): Promise<WatchedToken | null> {
		for (const m of masters) if ((await this.jettonWallet(m.raw, c.account)) === c.jettonWallet) return m.token;
		return null;
	}

	/** Payments to the addresses in masterchain blocks fromBlock..toBlock (each block read in full, paged). */
	async transfers(query: TransferQuery): Promise<ChainTransfer[]> {
		const byRaw = this.deposits(query.addresses);
		const native = query.tokens.find(t => t.contractAddress === "");
		const masters = query.tokens.filter(t => t.contractAddress !== "").flatMap(token => {
			try {
				return [{ raw: Address.parse(token.contractAddress).toRawString(), token }];
			} catch {
				this.opts.logger?.warn(`TON source: jetton master "${token.contractAddress}" of token ${token.tokenId} is not an address; ignored`);
				return [];
			}
		});
		const seqnos: number[] = [];
		for (let s = query.fromBlock; s <= query.toBlock; s++) seqnos.push(s);
		const perBlock = await mapLimit(seqnos, READ_CONCURRENCY, async seqno => {
			let hash = query.blockHashes?.get(seqno);
			if (!hash) {
				const b = await this.header(seqno);
				if (!b) throw new TonBlockUnavailableError(seqno, "not served yet");
				hash = hashHex(b.root_hash);
			}
			return { seqno, hash, found: candidates(await this.blockTransactions(seqno), raw => byRaw.has(raw), masters.length > 0) };
		});
		const out: ChainTransfer[] = [];
		for (const { seqno, hash, found } of perBlock) {
			for (const c of found) {
				const toAddress = byRaw.get(c.account)!;
				const at = { networkId: this.opts.networkId, txHash: c.txHash, logIndex: 0, toAddress, blockNumber: seqno, blockHash: hash };
				if (c.kind === "jetton") {
					const token = await this.trustedJetton(c, masters);
					if (token) {
						out.push({ ...at, tokenId: token.tokenId, amount: c.amount.toString() });
						continue;
					}
					// Not from a trusted jetton wallet: only the TON it carried is real.
					if (native && c.tonValue > 0n) out.push({ ...at, tokenId: native.tokenId, amount: c.tonValue.toString() });
					continue;
				}
				if (native) out.push({ ...at, tokenId: native.tokenId, amount: c.amount.toString() });
			}
		}
		return out;
	}

	async close(): Promise<void> {
		this.depositIndex = null;
	}
}

export function createTonSource(opts: TonSourceOptions): TonSource {
	return new TonSource(opts);
}

/** The raw key of an address in any form (`0:hex`, user-friendly), for tests and chain:check. */
export function tonRawKey(address: string): string {
	return rawKey(address) ?? Address.parse(address).toRawString();
}
