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
 * - Jettons: credited where they arrive, at each deposit's jetton wallet under the catalogue's
 *   (trusted) master (lib/chains/ton/jetton-wallets.ts: computed from the master's wallet code with
 *   a layout checked against its get_wallet_address, or asked of it): an internal_transfer that
 *   wallet accepted is the payment, with or without a transfer_notification to the owner. The
 *   notification from that wallet credits nothing more; one from any other source (a look-alike
 *   master's wallet, a forger) credits only the TON it carried.
 */
import { Address } from "@ton/core";
import type { BlockRef, ChainSource, ChainTransfer, TransferQuery, WatchedToken } from "../source";
import { mapLimit } from "../map-limit";
import { createTonApi, type TonApi } from "./api";
import { JettonWallets } from "./jetton-wallets";
import { candidates, hashHex, rawKey, type V3Transaction } from "./transactions";

export { stackAddress } from "./jetton-wallets";

/** Masterchain blocks read per step at most. */
export const MAX_BLOCKS_PER_READ = 16;
/** Transactions per transactionsByMasterchainBlock page: the most the API allows (ton-index-go's limit), so a busy block is one or two requests. */
export const TX_PAGE = 1000;
/** Requests in flight at once while a range is read. */
const READ_CONCURRENCY = 4;
/** (master, owner) -> jetton wallet answers kept; never wrong, only recomputed (or refetched) once dropped. */
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
	logger?: { info?(...args: unknown[]): void; warn(...args: unknown[]): void };
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

export class TonSource implements ChainSource {
	readonly api: TonApi;
	private readonly jettonWallets: JettonWallets;
	/** Watched jetton wallet (raw) -> its deposit owner (raw) and token, for the deposit index and masters it was built from. */
	private walletIndex: { byRaw: Map<string, string>; masters: string; wallets: Map<string, { owner: string; token: WatchedToken }> } | null = null;
	/** canonical deposit address -> raw key, kept across steps (parsing 100,000 addresses once, not per step). */
	private readonly rawOf = new Map<string, string>();
	private depositIndex: { set: ReadonlySet<string>; size: number; byRaw: Map<string, string> } | null = null;

	constructor(private readonly opts: TonSourceOptions) {
		this.api = opts.api ?? createTonApi({ baseUrl: opts.apiUrl, apiKey: opts.apiKey, timeoutMs: opts.timeoutMs });
		this.jettonWallets = new JettonWallets({ api: this.api, logger: opts.logger, cacheSize: WALLET_CACHE });
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

	/** The jetton wallet `master` gives `owner` (raw keys): computed with a verified layout or asked of the master; cached. */
	jettonWallet(master: string, owner: string): Promise<string> {
		return this.jettonWallets.walletOf(master, owner);
	}

	/** Every deposit's jetton wallet under each trusted master, rebuilt only when the deposits or masters changed (new deposits computed, known ones from the cache). */
	private async watchedWallets(byRaw: Map<string, string>, masters: ReadonlyArray<{ raw: string; token: WatchedToken }>): Promise<Map<string, { owner: string; token: WatchedToken }>> {
		const key = masters.map(m => `${m.raw}=${m.token.tokenId}`).join(",");
		const idx = this.walletIndex;
		if (idx && idx.byRaw === byRaw && idx.masters === key) return idx.wallets;
		const owners = [...byRaw.keys()];
		const wallets = new Map<string, { owner: string; token: WatchedToken }>();
		for (const m of masters) for (const [owner, wallet] of await this.jettonWallets.walletsOf(m.raw, owners)) wallets.set(wallet, { owner, token: m.token });
		this.walletIndex = { byRaw, masters: key, wallets };
		return wallets;
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
		const wallets = masters.length > 0 ? await this.watchedWallets(byRaw, masters) : new Map<string, { owner: string; token: WatchedToken }>();
		const seqnos: number[] = [];
		for (let s = query.fromBlock; s <= query.toBlock; s++) seqnos.push(s);
		const perBlock = await mapLimit(seqnos, READ_CONCURRENCY, async seqno => {
			let hash = query.blockHashes?.get(seqno);
			if (!hash) {
				const b = await this.header(seqno);
				if (!b) throw new TonBlockUnavailableError(seqno, "not served yet");
				hash = hashHex(b.root_hash);
			}
			return { seqno, hash, found: candidates(await this.blockTransactions(seqno), raw => byRaw.has(raw), masters.length > 0, raw => wallets.has(raw)) };
		});
		const out: ChainTransfer[] = [];
		for (const { seqno, hash, found } of perBlock) {
			for (const c of found) {
				const at = { networkId: this.opts.networkId, txHash: c.txHash, logIndex: 0, blockNumber: seqno, blockHash: hash };
				if (c.kind === "jetton") {
					// Keyed by the jetton wallet's transaction, reported to its owner: the one credit of this payment.
					const w = wallets.get(c.account)!;
					out.push({ ...at, toAddress: byRaw.get(w.owner)!, tokenId: w.token.tokenId, amount: c.amount.toString() });
					continue;
				}
				const toAddress = byRaw.get(c.account)!;
				if (c.kind === "notification") {
					// From the owner's trusted jetton wallet: the echo of a payment counted at that wallet.
					if (wallets.get(c.jettonWallet)?.owner === c.account) continue;
					// From anything else: only the TON it carried is real.
					if (native && c.tonValue > 0n) out.push({ ...at, toAddress, tokenId: native.tokenId, amount: c.tonValue.toString() });
					continue;
				}
				if (native) out.push({ ...at, toAddress, tokenId: native.tokenId, amount: c.amount.toString() });
			}
		}
		return out;
	}

	async close(): Promise<void> {
		if (!this.opts.api) this.api.close?.();
		this.depositIndex = null;
		this.walletIndex = null;
	}
}

export function createTonSource(opts: TonSourceOptions): TonSource {
	return new TonSource(opts);
}

/** The raw key of an address in any form (`0:hex`, user-friendly), for tests and chain:check. */
export function tonRawKey(address: string): string {
	return rawKey(address) ?? Address.parse(address).toRawString();
}
