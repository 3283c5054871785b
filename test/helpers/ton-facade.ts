/**
 * The TON test node's engine: an HTTP server on 127.0.0.1 (free port) over @ton/sandbox (the real
 * TVM emulator, in WASM) that answers the subset of toncenter's v3 indexer API (ton-indexer's
 * `ton-index-go`, paths `/api/v3/...`) a payment watcher and a sweeper use, in its response shapes.
 * Tests use it through test/helpers/ton-node.ts (wallets, payments, jettons, blocks, rollback).
 *
 * What is real: the emulator executes every message (wallet signature and seqno checks, state
 * init deployment, jetton contracts, gas and forward fees, bounces, aborted transactions), so
 * transactions, their hashes, phases, messages, balances and get-method results come from the TVM.
 * What this file invents: blocks. The sandbox has none; every transaction it executes is pending
 * until `seal()` puts the pending transactions into the next masterchain block (one workchain-0
 * shard block referenced by it), which gives `mc_block_seqno`, `block_ref`, `masterchainInfo` and
 * the block lists. Also invented: block hashes, trace ids (the root transaction's hash), when an
 * accepted external message runs (`externals`), the hop delay (`hopBlocks`) and rollback.
 *
 * Shapes: written after ton-index-go's models (index/models/blockchain.go, response.go, v2.go,
 * types.go) and handlers (main.go, index/crud/*.go, index/proxy.go), github.com/toncenter/ton-indexer,
 * and checked against a real answer published in the TON docs (ton-org/docs, cookbook/traces.mdx):
 * where newer ton-index-go code adds fields that answer lacks (`finality`, `decoded_opcode`,
 * `extra_flags`, the address book's `interfaces`, `"@type"` in a decoded comment), the facade
 * answers as the published example, so no client comes to depend on them.
 */
import crypto from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import {
	Address,
	Cell,
	Dictionary,
	beginCell,
	loadMessage,
	storeStateInit,
	type Message,
	type TupleItem,
	type Transaction,
} from "@ton/core";
import { Blockchain, LocalBlockchainStorage, type BlockchainSnapshot, type BlockchainTransaction } from "@ton/sandbox";

/** The shard every workchain-0 block of this node is in (a single shard: the whole workchain). */
export const SHARD = "8000000000000000";
const ZERO_HASH = Buffer.alloc(32).toString("base64");
const DEFAULT_LIMIT = 10;
const MAX_LIMIT = 1000;

/** Code hashes (base64) of the wallets ton-index-go recognises (index/parse/wallet_parse.go). */
export const WALLET_CODE_HASHES: Record<string, { type: string; v5: boolean }> = {
	"/rX/aCDi/w2Ug+fg1iyBfYRniftK5YDIeIZtlZ2r1cA=": { type: "wallet v4 r2", v5: false },
	"ZN1UgFUixb6KnbWc6gEFzPDQh4bKeb64y3nogKjXMi0=": { type: "wallet v4 r1", v5: false },
	"hNr6RJ+Ypph3ibojI1gHK8D3bcRSQAKl0JGLmnXS1Zk=": { type: "wallet v3 r2", v5: false },
	"IINLe3KxEhR+Gy+0V7hOdNGjDwT3N9T2KmaOlVLSty8=": { type: "wallet v5 r1", v5: true },
};

export type AccountStatus = "active" | "uninit" | "frozen" | "nonexist";

interface StateInfo {
	balance: bigint;
	status: AccountStatus;
	codeHash: string | null;
	dataHash: string | null;
	frozenHash: string | null;
	/** Known from the last transaction (for `walletInformation` / `account`). */
	lastTxLt: bigint;
	lastTxHash: string;
}

const NONEXIST: StateInfo = { balance: 0n, status: "nonexist", codeHash: null, dataHash: null, frozenHash: null, lastTxLt: 0n, lastTxHash: ZERO_HASH };

type Json = Record<string, unknown>;

export interface TxRecord {
	/** Raw form as the API prints it: `0:HEX` upper-case. */
	account: string;
	hash: string;
	lt: bigint;
	now: number;
	/** Masterchain seqno once sealed. */
	mcSeqno: number | null;
	shardSeqno: number | null;
	json: Json;
	/** Message hashes (and normalized hashes of external-in messages) with direction. */
	msgs: { hash: string; norm?: string; bodyHash: string; opcode: number | null; direction: "in" | "out" }[];
	/** Addresses for the address book (account, in_msg source, out_msgs destinations). */
	book: string[];
	/** The sandbox transaction (tests read phases and messages from it). */
	tx: BlockchainTransaction;
	/** Hops from the trace's first transaction (0 for it). */
	depth: number;
	/** The trace's first transaction's hash (`trace_id`) and this one's parent's (null for the first). */
	traceId: string;
	parent: string | null;
	/** Sealed blocks when it was executed: with `hopBlocks` it waits `depth * hopBlocks` seals more. */
	executedAt: number;
	/** `json` serialized, once sealed (then it no longer changes). */
	text?: string;
}

export interface McBlock {
	seqno: number;
	shardSeqno: number;
	genUtime: number;
	startLt: bigint;
	endLt: bigint;
	rootHash: string;
	fileHash: string;
	shardRootHash: string;
	shardFileHash: string;
	txs: TxRecord[];
}

export interface Checkpoint {
	id: number;
	seqno: number;
	shardSeqno: number;
	blocks: number;
	pending: TxRecord[];
	deferred: Cell[];
	states: Map<string, StateInfo>;
	snapshot: BlockchainSnapshot;
	clock: number;
	lastLt: bigint;
}

/** What POST /api/v3/message does with an external message. */
export type ExternalsMode =
	/** Run it at once (the contract must accept it, else 500): its trace is pending until the next seal. */
	| "execute"
	/** Check that the contract accepts it now (else 500), answer its hashes, run it at the next `seal()`: by then it may be refused (e.g. past valid_until) and never land. */
	| "defer"
	/** Check it as `defer`, answer its hashes, never run it (a message lost between the liteserver and the validators). */
	| "drop";

export interface TonFacadeOptions {
	/** Testnet: address book forms `0Q..`/`kQ..`, global_id -3 (default: mainnet, -239). */
	testnet?: boolean;
	/** Seqno of the first masterchain block (default 1000). */
	firstSeqno?: number;
	/** Seal a block every this many ms (default off: tests call `seal()`). */
	autoSealMs?: number;
	/**
	 * Blocks between the hops of a trace (default 0: a whole trace lands in one block). With 1, a
	 * transaction `d` messages away from the trace's first one is sealed `d` blocks after it, as
	 * on the real chain where each hop takes at least a block.
	 */
	hopBlocks?: number;
	externals?: ExternalsMode;
}

/** A response body already serialized. */
export class RawJson {
	constructor(readonly text: string) {}
}

export class HttpError extends Error {
	constructor(
		public code: number,
		message: string,
	) {
		super(message);
	}
}

/** `0:HEX` upper-case, as ton-index-go prints account addresses (AccountAddressConverter). */
export function rawAddress(a: Address): string {
	return `${a.workChain}:${a.hash.toString("hex").toUpperCase()}`;
}

/** Any address form the API accepts (raw, bounceable / non-bounceable, base64 or base64url). */
export function parseAddress(text: string): Address {
	try {
		return Address.parse(text);
	} catch {
		try {
			return Address.parse(text.replace(/\+/g, "-").replace(/\//g, "_"));
		} catch {
			throw new HttpError(422, `failed to parse address ${text}`);
		}
	}
}

/** ton-index-go's HashConverter: 64 hex chars (optionally 0x), or 44 chars of base64 / base64url; normalized to base64. */
export function normalizeHash(v: string): string | null {
	if (v.length === 64 || (v.length === 66 && v.startsWith("0x"))) {
		const hex = v.replace(/^0x/, "");
		return /^[0-9a-fA-F]{64}$/.test(hex) ? Buffer.from(hex, "hex").toString("base64") : null;
	}
	if (v.length === 44) {
		const b = Buffer.from(v.replace(/-/g, "+").replace(/_/g, "/"), "base64");
		return b.length === 32 ? b.toString("base64") : null;
	}
	return null;
}

const b64 = (b: Buffer) => b.toString("base64");
const hash256 = (n: bigint) => b64(Buffer.from(n.toString(16).padStart(64, "0"), "hex"));
/** `%#x` of a big integer, as ton-index-go renders stack numbers. */
const hexNum = (v: bigint) => (v < 0n ? `-0x${(-v).toString(16)}` : `0x${v.toString(16)}`);
const opcodeText = (op: number | null) => (op === null ? null : `0x${op.toString(16).padStart(8, "0")}`);
const statusOf = (s: string): AccountStatus => (s === "uninitialized" ? "uninit" : s === "non-existing" ? "nonexist" : (s as AccountStatus));

function opcodeOf(body: Cell): number | null {
	const s = body.beginParse();
	return s.remainingBits >= 32 ? s.preloadUint(32) : null;
}

/** A text comment as ton-index-go decodes it (index/detect/marker.go keeps the old scheme for text_comment). */
function decodedBody(body: Cell): Json | null {
	try {
		const s = body.beginParse();
		if (s.remainingBits < 32 || s.preloadUint(32) !== 0) return null;
		s.loadUint(32);
		return { type: "text_comment", comment: s.loadStringTail() };
	} catch {
		return null;
	}
}

/** TEP-467 normalized hash of an external-in message: no source, no import fee, no state init, body in a ref. */
export function normalizedHash(msg: Message): string {
	if (msg.info.type !== "external-in") throw new Error("not an external-in message");
	const c = beginCell().storeUint(2, 2).storeUint(0, 2).storeAddress(msg.info.dest).storeCoins(0).storeBit(false).storeBit(true).storeRef(msg.body).endCell();
	return b64(c.hash());
}

export class TonFacade {
	readonly blockchain: Blockchain;
	readonly storage: LocalBlockchainStorage;
	readonly testnet: boolean;
	/** Sealed masterchain blocks, oldest first. */
	readonly blocks: McBlock[] = [];
	/** Executed, not yet in a masterchain block. */
	pending: TxRecord[] = [];
	/** Sealed blocks not yet on the chain (`hold`): no endpoint sees them until `release`. */
	private held: McBlock[] | null = null;
	/** When each block went on the chain (ms, this machine's clock): what a bench measures latency from. */
	readonly onChainAt = new Map<number, number>();
	readonly calls: Record<string, number> = {};
	private states = new Map<string, StateInfo>();
	/** User-friendly forms by bounceable flag + raw address. */
	private friendly = new Map<string, string>();
	private server?: http.Server;
	private autoSeal?: NodeJS.Timeout;
	private clockOffset = 0;
	private lastNow = 0;
	private lastLt = 0n;
	private checkpoints = 0;
	private readonly firstSeqno: number;
	private genesisShardSeqno = 500;
	private queue: Promise<unknown> = Promise.resolve();
	hopBlocks: number;
	externals: ExternalsMode;
	/** External messages waiting for the next seal (mode "defer"). */
	private deferred: Cell[] = [];
	/** External messages answered but never run (mode "drop"), and deferred ones refused at seal time: message hashes. */
	readonly lost: string[] = [];
	/** Every external message POST /message was given (accepted or refused), in order: what a test checks re-sends against. */
	readonly posted: Array<{ to: string; hash: string; norm: string; boc: string }> = [];
	url = "";

	private constructor(bc: Blockchain, storage: LocalBlockchainStorage, opts: TonFacadeOptions) {
		this.blockchain = bc;
		this.storage = storage;
		this.testnet = opts.testnet ?? false;
		this.firstSeqno = opts.firstSeqno ?? 1000;
		this.hopBlocks = opts.hopBlocks ?? 0;
		this.externals = opts.externals ?? "execute";
		this.hook();
	}

	static async create(opts: TonFacadeOptions = {}): Promise<TonFacade> {
		const storage = new LocalBlockchainStorage();
		const bc = await Blockchain.create({ storage });
		bc.verbosity = { print: false, blockchainLogs: false, vmLogs: "none", debugLogs: false };
		const f = new TonFacade(bc, storage, opts);
		bc.now = f.now();
		// The genesis block: the API always has a first and a last masterchain block.
		f.sealNow();
		if (opts.autoSealMs) f.setAutoSeal(opts.autoSealMs);
		return f;
	}

	// -------------------------------------------------------------------------------------------
	// Time, execution and recording

	/** The node's clock (unix seconds): wall clock plus `advanceTime` offsets, never going back. */
	now(): number {
		this.lastNow = Math.max(this.lastNow, Math.floor(Date.now() / 1000) + this.clockOffset);
		return this.lastNow;
	}

	/** Moves the node's clock forward (e.g. past a wallet message's valid_until). */
	advanceTime(seconds: number): void {
		this.clockOffset += seconds;
		this.blockchain.now = this.now();
	}

	/** Runs `fn` after everything queued before it (HTTP handlers and test helpers share the emulator). */
	exclusive<T>(fn: () => Promise<T>): Promise<T> {
		const run = this.queue.then(fn, fn);
		this.queue = run.catch(() => undefined);
		return run;
	}

	/**
	 * Every transaction the emulator executes (whatever sent it: this node, `openContract(...).send*`,
	 * a treasury) passes the queue manager's onTransaction hook; account states are kept per
	 * transaction so each one gets its state before and after.
	 */
	private hook(): void {
		const bc = this.blockchain as unknown as {
			defaultQueueManager: { blockchain: { onTransaction: (tx: BlockchainTransaction) => void } };
			createQueueManager: () => { blockchain: { onTransaction: (tx: BlockchainTransaction) => void } };
			setShardAccount: (a: Address, acc: unknown) => Promise<void>;
		};
		const wrap = <Q extends { blockchain: { onTransaction: (tx: BlockchainTransaction) => void } }>(qm: Q): Q => {
			const orig = qm.blockchain.onTransaction;
			qm.blockchain.onTransaction = (tx: BlockchainTransaction) => {
				orig(tx);
				this.record(tx);
			};
			return qm;
		};
		wrap(bc.defaultQueueManager);
		const create = bc.createQueueManager.bind(bc);
		bc.createQueueManager = () => wrap(create());
		const setShard = bc.setShardAccount.bind(bc);
		bc.setShardAccount = async (a: Address, acc: unknown) => {
			await setShard(a, acc);
			this.states.set(rawAddress(a), this.readState(a, this.states.get(rawAddress(a))));
		};
	}

	/** The account as the emulator holds it now (synchronous: the local storage's map). */
	private readState(a: Address, prev?: StateInfo): StateInfo {
		const contracts = (this.storage as unknown as { contracts: Map<string, { account: { account?: { storage: { balance: { coins: bigint }; state: { type: string; state?: { code?: Cell; data?: Cell }; stateHash?: bigint } } } | null; lastTransactionLt: bigint; lastTransactionHash: bigint } }> }).contracts;
		const sc = contracts.get(a.toString());
		const acc = sc?.account.account;
		const last = { lastTxLt: sc?.account.lastTransactionLt ?? 0n, lastTxHash: sc && sc.account.lastTransactionLt > 0n ? hash256(sc.account.lastTransactionHash) : ZERO_HASH };
		if (!acc) return { ...NONEXIST, ...last };
		const st = acc.storage.state;
		const balance = acc.storage.balance.coins;
		if (st.type === "active") {
			return { balance, status: "active", codeHash: st.state?.code ? b64(st.state.code.hash()) : null, dataHash: st.state?.data ? b64(st.state.data.hash()) : null, frozenHash: null, ...last };
		}
		if (st.type === "frozen") return { balance, status: "frozen", codeHash: null, dataHash: null, frozenHash: st.stateHash !== undefined ? hash256(st.stateHash) : null, ...last };
		// The sandbox keeps an empty uninit account for any address it has looked at; with no
		// transaction and no balance it is what the chain calls nonexistent.
		if (balance === 0n && last.lastTxLt === 0n && !prev) return { ...NONEXIST, ...last };
		return { balance, status: "uninit", codeHash: null, dataHash: null, frozenHash: null, ...last };
	}

	/** The latest state of an account (what `walletInformation` / `account` read). */
	state(a: Address): StateInfo {
		return this.states.get(rawAddress(a)) ?? this.readState(a);
	}

	private record(tx: BlockchainTransaction): void {
		const inMsg = tx.inMessage;
		const dest = inMsg && (inMsg.info.type === "internal" || inMsg.info.type === "external-in") ? inMsg.info.dest : new Address(0, Buffer.from(tx.address.toString(16).padStart(64, "0"), "hex"));
		const account = rawAddress(dest);
		const before = this.states.get(account) ?? { ...NONEXIST };
		const after = this.readState(dest, before);
		this.states.set(account, after);
		const hash = b64(tx.hash());
		let root: BlockchainTransaction = tx;
		let depth = 0;
		while (root.parent) {
			root = root.parent;
			depth++;
		}

		// The exact message cells (hashes are of these), from the transaction's own cell.
		const msgCell = tx.raw.refs[0].beginParse();
		const inCell = msgCell.loadMaybeRef();
		const outDict = msgCell.loadDict(Dictionary.Keys.Uint(15), Dictionary.Values.Cell());
		const msgs: TxRecord["msgs"] = [];
		const book = new Set<string>([account]);
		const msgJson = (cell: Cell, direction: "in" | "out"): Json => {
			const m = loadMessage(cell.beginParse());
			const info = m.info;
			const op = opcodeOf(m.body);
			const bodyHash = b64(m.body.hash());
			const norm = info.type === "external-in" ? normalizedHash(m) : undefined;
			msgs.push({ hash: b64(cell.hash()), norm, bodyHash, opcode: op, direction });
			if (direction === "in" && info.type === "internal") book.add(rawAddress(info.src));
			if (direction === "out" && info.type === "internal") book.add(rawAddress(info.dest));
			const init = m.init ? beginCell().store(storeStateInit(m.init)).endCell() : null;
			const internal = info.type === "internal" ? info : null;
			const j: Json = {
				hash: b64(cell.hash()),
				source: info.type === "internal" || info.type === "external-out" ? rawAddress(info.src) : null,
				destination: info.type === "internal" || info.type === "external-in" ? rawAddress(info.dest) : null,
				value: internal ? internal.value.coins.toString() : null,
				value_extra_currencies: internal ? {} : null,
				fwd_fee: internal ? internal.forwardFee.toString() : null,
				ihr_fee: internal ? internal.ihrFee.toString() : null,
				created_lt: info.type === "external-in" ? null : info.createdLt.toString(),
				created_at: info.type === "external-in" ? null : info.createdAt.toString(),
				opcode: opcodeText(op),
				ihr_disabled: internal ? internal.ihrDisabled : null,
				bounce: internal ? internal.bounce : null,
				bounced: internal ? internal.bounced : null,
				import_fee: info.type === "external-in" ? info.importFee.toString() : null,
				message_content: { hash: bodyHash, body: m.body.toBoc().toString("base64"), decoded: decodedBody(m.body) },
				init_state: init ? { hash: b64(init.hash()), body: init.toBoc().toString("base64"), decoded: null } : null,
			};
			if (norm) j.hash_norm = norm;
			return j;
		};
		const inJson = inCell ? msgJson(inCell, "in") : null;
		const outJson = [...outDict.keys()]
			.sort((x, y) => x - y)
			.map(k => msgJson(outDict.get(k)!, "out"))
			.sort((x, y) => Number(BigInt((x.created_lt as string) ?? "0") - BigInt((y.created_lt as string) ?? "0")));

		const origStatus = tx.oldStatus === "uninitialized" && before.status === "nonexist" ? "nonexist" : statusOf(tx.oldStatus);
		const json: Json = {
			account,
			hash,
			lt: tx.lt.toString(),
			now: tx.now,
			mc_block_seqno: null,
			trace_id: b64(root.hash()),
			prev_trans_hash: hash256(tx.prevTransactionHash),
			prev_trans_lt: tx.prevTransactionLt.toString(),
			orig_status: origStatus,
			end_status: statusOf(tx.endStatus),
			total_fees: tx.totalFees.coins.toString(),
			total_fees_extra_currencies: {},
			description: describe(tx),
			block_ref: null,
			in_msg: inJson,
			out_msgs: outJson,
			account_state_before: accountStateJson(b64(tx.stateUpdate.oldHash), before),
			account_state_after: accountStateJson(b64(tx.stateUpdate.newHash), after),
			emulated: false,
		};
		if (tx.lt > this.lastLt) this.lastLt = tx.lt;
		const traceId = b64(root.hash());
		const parent = tx.parent ? b64(tx.parent.hash()) : null;
		this.pending.push({ account, hash, lt: tx.lt, now: tx.now, mcSeqno: null, shardSeqno: null, json, msgs, book: [...book], tx, depth, executedAt: this.blocks.length, traceId, parent });
	}

	// -------------------------------------------------------------------------------------------
	// Blocks

	private sealNow(): McBlock {
		const prev = this.held?.length ? this.held[this.held.length - 1] : this.blocks[this.blocks.length - 1];
		const seqno = prev ? prev.seqno + 1 : this.firstSeqno;
		const shardSeqno = prev ? prev.shardSeqno + 1 : this.genesisShardSeqno;
		const ready = (t: TxRecord) => this.blocks.length >= t.executedAt + t.depth * this.hopBlocks;
		const txs = this.pending.filter(ready).sort((a, b) => (a.lt < b.lt ? -1 : a.lt > b.lt ? 1 : a.account.localeCompare(b.account)));
		this.pending = this.pending.filter(t => !ready(t));
		const genUtime = Math.max(this.now(), ...txs.map(t => t.now));
		const startLt = prev ? prev.endLt + 1n : 0n;
		const endLt = txs.length ? (txs[txs.length - 1].lt > startLt ? txs[txs.length - 1].lt + 1n : startLt + 1n) : startLt + 1n;
		const digest = (what: string) => b64(crypto.createHash("sha256").update(`${what}:${seqno}:${txs.map(t => t.hash).join(",")}:${prev?.rootHash ?? ""}`).digest());
		const block: McBlock = {
			seqno,
			shardSeqno,
			genUtime,
			startLt,
			endLt,
			rootHash: digest("mc-root"),
			fileHash: digest("mc-file"),
			shardRootHash: digest("shard-root"),
			shardFileHash: digest("shard-file"),
			txs,
		};
		for (const t of txs) {
			t.text = undefined;
			t.mcSeqno = seqno;
			t.shardSeqno = shardSeqno;
			t.json.mc_block_seqno = seqno;
			t.json.block_ref = t.account.startsWith("-1:") ? { workchain: -1, shard: SHARD, seqno } : { workchain: 0, shard: SHARD, seqno: shardSeqno };
		}
		if (this.held) this.held.push(block);
		else this.putOnChain(block);
		return block;
	}

	private putOnChain(block: McBlock): void {
		this.blocks.push(block);
		this.onChainAt.set(block.seqno, Date.now());
	}

	/** From now on sealed blocks are held off the chain (a bench builds its blocks ahead of the window it measures). */
	hold(): void {
		this.held ??= [];
	}

	/** Blocks sealed and held. */
	heldCount(): number {
		return this.held?.length ?? 0;
	}

	/** Puts the held blocks on the chain, `perSecond` blocks a second; blocks sealed meanwhile follow them; then stops holding. */
	async release(perSecond: number): Promise<void> {
		const start = Date.now();
		for (let n = 0; this.held?.length; n++) {
			const wait = start + (n * 1000) / perSecond - Date.now();
			if (wait > 0) await new Promise(r => setTimeout(r, wait));
			this.putOnChain(this.held.shift()!);
		}
		this.held = null;
	}

	/**
	 * Runs the deferred external messages, then puts the pending transactions (all of them, or with
	 * `hopBlocks` those whose hop is due) into the next masterchain block and its shard block;
	 * returns its seqno.
	 */
	seal(): Promise<number> {
		return this.exclusive(async () => {
			const deferred = this.deferred;
			this.deferred = [];
			for (const cell of deferred) {
				this.blockchain.now = this.now();
				try {
					await this.blockchain.sendMessage(cell, { now: this.blockchain.now });
				} catch {
					this.lost.push(b64(cell.hash()));
				}
			}
			return this.sealNow().seqno;
		});
	}

	/** Seals until no transaction is pending (with `hopBlocks`, a trace needs several blocks); returns the last seqno. */
	async settle(): Promise<number> {
		let seqno = await this.seal();
		while (this.pending.length || this.deferred.length) seqno = await this.seal();
		return seqno;
	}

	setAutoSeal(ms: number | null): void {
		if (this.autoSeal) clearInterval(this.autoSeal);
		this.autoSeal = ms ? setInterval(() => void this.seal(), ms) : undefined;
		this.autoSeal?.unref();
	}

	/**
	 * Remembers the emulator's state, the sealed blocks and the pending transactions; `rollback`
	 * returns to it. Take it between `seal()`s.
	 */
	checkpoint(): Promise<Checkpoint> {
		return this.exclusive(async () => {
			const last = this.blocks[this.blocks.length - 1];
			return {
				id: ++this.checkpoints,
				seqno: last.seqno,
				shardSeqno: last.shardSeqno,
				blocks: this.blocks.length,
				pending: [...this.pending],
				deferred: [...this.deferred],
				states: new Map(this.states),
				snapshot: this.blockchain.snapshot(),
				clock: this.lastNow,
				lastLt: this.lastLt,
			};
		});
	}

	/**
	 * Returns to a checkpoint: every block sealed after it disappears (the next `seal()` re-uses its
	 * seqno with whatever is executed next), the emulator's accounts are as they were, and the
	 * transactions executed since never happened. The clock is not turned back.
	 */
	rollback(cp: Checkpoint): Promise<void> {
		return this.exclusive(async () => {
			await this.blockchain.loadFrom(cp.snapshot);
			this.blocks.length = cp.blocks;
			this.pending = [...cp.pending];
			// Pending then, perhaps sealed into a block that is now gone: unsealed again.
			for (const t of this.pending) {
				t.mcSeqno = t.shardSeqno = null;
				t.json.mc_block_seqno = t.json.block_ref = null;
				t.text = undefined;
			}
			this.deferred = [...cp.deferred];
			this.states = new Map(cp.states);
			this.lastLt = cp.lastLt;
			this.blockchain.now = this.now();
		});
	}

	/** The transactions of sealed blocks (oldest first). */
	sealedTransactions(): TxRecord[] {
		return this.blocks.flatMap(b => b.txs);
	}

	// -------------------------------------------------------------------------------------------
	// Messages

	/**
	 * Executes an external message now, as a liteserver that accepts it would have it included
	 * (the whole trace it starts is executed; its transactions are pending until `seal()`).
	 * Refused (HttpError 500, the text toncenter relays) when the contract does not accept it.
	 */
	sendBoc(boc: Buffer): Promise<{ message_hash: string; message_hash_norm: string }> {
		return this.exclusive(async () => {
			let cell: Cell;
			let msg: Message;
			try {
				cell = Cell.fromBoc(boc)[0];
				msg = loadMessage(cell.beginParse());
			} catch (e) {
				throw new HttpError(500, `LITE_SERVER_UNKNOWN: failed to deserialize message: ${(e as Error).message}`);
			}
			if (msg.info.type !== "external-in") throw new HttpError(500, "LITE_SERVER_UNKNOWN: external message expected");
			this.posted.push({ to: rawAddress(msg.info.dest), hash: b64(cell.hash()), norm: normalizedHash(msg), boc: boc.toString("base64") });
			this.blockchain.now = this.now();
			// "defer" / "drop": the liteserver's check (run it on the current state, keep nothing).
			const trial = this.externals !== "execute" ? { snapshot: this.blockchain.snapshot(), pending: this.pending.length, states: new Map(this.states), lastLt: this.lastLt } : null;
			try {
				await this.blockchain.sendMessage(cell, { now: this.blockchain.now });
				if (trial) {
					await this.blockchain.loadFrom(trial.snapshot);
					this.pending.length = trial.pending;
					this.states = trial.states;
					this.lastLt = trial.lastLt;
					if (this.externals === "defer") this.deferred.push(cell);
					else this.lost.push(b64(cell.hash()));
				}
			} catch (e) {
				const exit = (e as { exitCode?: number }).exitCode;
				throw new HttpError(
					500,
					`LITE_SERVER_UNKNOWN: cannot apply external message to current state : External message was not accepted\nCannot run message on account: inbound external message rejected by transaction ${rawAddress(msg.info.dest)}:\nexitcode=${exit ?? 0}, steps=0, gas_used=0`,
				);
			}
			return { message_hash: b64(cell.hash()), message_hash_norm: normalizedHash(msg) };
		});
	}

	/** Executes any message (internal messages from nowhere, e.g. a genesis credit) through the emulator. */
	execute(message: Message | Cell): Promise<BlockchainTransaction[]> {
		return this.exclusive(async () => {
			this.blockchain.now = this.now();
			const r = await this.blockchain.sendMessage(message, { now: this.blockchain.now });
			return r.transactions;
		});
	}

	// -------------------------------------------------------------------------------------------
	// HTTP

	async listen(): Promise<string> {
		this.server = http.createServer((req, res) => void this.handle(req, res));
		this.server.keepAliveTimeout = 1000;
		await new Promise<void>(resolve => this.server!.listen(0, "127.0.0.1", () => resolve()));
		// A test that forgets stop() must not keep its jest worker alive.
		this.server.unref();
		this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
		return this.url;
	}

	async close(): Promise<void> {
		this.setAutoSeal(null);
		if (!this.server) return;
		this.server.closeAllConnections();
		await new Promise<void>(resolve => this.server!.close(() => resolve()));
	}

	private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
		const u = new URL(req.url ?? "/", "http://x");
		const chunks: Buffer[] = [];
		for await (const c of req) chunks.push(c as Buffer);
		let status = 200;
		let body: unknown;
		try {
			const route = ROUTES[`${req.method} ${u.pathname}`];
			if (!route) throw new HttpError(404, `Cannot ${req.method} ${u.pathname}`);
			this.calls[u.pathname] = (this.calls[u.pathname] ?? 0) + 1;
			let json: Json = {};
			if (req.method === "POST") {
				try {
					json = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}");
				} catch (e) {
					throw new HttpError(422, (e as Error).message);
				}
			}
			body = await route(this, u.searchParams, json);
		} catch (e) {
			status = e instanceof HttpError ? e.code : 500;
			body = { error: e instanceof HttpError ? e.message : `internal server error: ${(e as Error).message}` };
		}
		const text = body instanceof RawJson ? body.text : JSON.stringify(body);
		res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
		res.end(text);
	}

	// -------------------------------------------------------------------------------------------
	// API pieces

	blockJson(b: McBlock, shard: boolean): Json {
		const prev = this.blocks.find(x => x.seqno === b.seqno - 1);
		const wc = shard ? 0 : -1;
		const seqno = shard ? b.shardSeqno : b.seqno;
		return {
			workchain: wc,
			shard: SHARD,
			seqno,
			root_hash: shard ? b.shardRootHash : b.rootHash,
			file_hash: shard ? b.shardFileHash : b.fileHash,
			global_id: this.testnet ? -3 : -239,
			version: 0,
			after_merge: false,
			before_split: false,
			after_split: false,
			want_merge: shard,
			want_split: false,
			key_block: false,
			vert_seqno_incr: false,
			flags: 1,
			gen_utime: String(b.genUtime),
			start_lt: b.startLt.toString(),
			end_lt: b.endLt.toString(),
			validator_list_hash_short: 0,
			gen_catchain_seqno: 0,
			min_ref_mc_seqno: Math.max(this.firstSeqno, b.seqno - 1),
			prev_key_block_seqno: this.firstSeqno,
			vert_seqno: 0,
			master_ref_seqno: shard ? b.seqno : 0,
			rand_seed: b64(crypto.createHash("sha256").update(`rand:${b.rootHash}`).digest()),
			created_by: b64(crypto.createHash("sha256").update("validator").digest()),
			tx_count: b.txs.filter(t => t.account.startsWith("-1:") !== shard).length,
			masterchain_block_ref: { workchain: -1, shard: SHARD, seqno: b.seqno },
			prev_blocks: prev ? [{ workchain: wc, shard: SHARD, seqno: seqno - 1 }] : [],
		};
	}

	/** The address book of `addrs` (raw forms), serialized: a watcher reads thousands of these a second. */
	addressBookText(addrs: string[]): string {
		const parts: string[] = [];
		for (const raw of addrs) {
			const st = this.states.get(raw) ?? this.readState(Address.parseRaw(raw));
			const wallet = st.codeHash ? WALLET_CODE_HASHES[st.codeHash] : undefined;
			// GetAccountAddressFriendly: non-bounceable when there is no code or it is a wallet's.
			const bounceable = !!st.codeHash && !wallet;
			const key = (bounceable ? "B" : "N") + raw;
			let friendly = this.friendly.get(key);
			if (friendly === undefined) {
				friendly = Address.parseRaw(raw).toString({ urlSafe: true, bounceable, testOnly: this.testnet });
				this.friendly.set(key, friendly);
			}
			parts.push(`${JSON.stringify(raw)}:{"user_friendly":${JSON.stringify(friendly)},"domain":null}`);
		}
		return `{${parts.join(",")}}`;
	}

	transactionsResponse(txs: TxRecord[]): RawJson {
		const texts = txs.map(t => (t.text ??= JSON.stringify(t.json)));
		return new RawJson(`{"transactions":[${texts.join(",")}],"address_book":${this.addressBookText([...new Set(txs.flatMap(t => t.book))])}}`);
	}

	/**
	 * A trace as ton-index-go's `models.Trace` (no actions): its sealed transactions; `complete`
	 * once none of it is pending (with `hopBlocks` a trace spans blocks). `transactions` holds the
	 * records (serialized by the route).
	 */
	traceJson(txs: TxRecord[]): Json {
		const sorted = [...txs].sort(byLt(1));
		const root = sorted.find(t => t.parent === null) ?? sorted[0];
		const pending = this.pending.filter(t => t.traceId === root.traceId);
		const node = (t: TxRecord): Json => ({
			tx_hash: t.hash,
			in_msg_hash: t.msgs.find(m => m.direction === "in")?.hash,
			children: sorted.filter(c => c.parent === t.hash).map(node),
		});
		const last = sorted[sorted.length - 1];
		const ext = root.msgs.find(m => m.direction === "in" && m.norm !== undefined);
		return {
			trace_id: root.traceId,
			external_hash: ext?.hash ?? null,
			mc_seqno_start: String(root.mcSeqno),
			mc_seqno_end: String(last.mcSeqno),
			start_lt: root.lt.toString(),
			start_utime: root.now,
			end_lt: last.lt.toString(),
			end_utime: last.now,
			trace_info: {
				trace_state: pending.length ? "pending" : "complete",
				messages: sorted.filter(t => t.msgs.some(m => m.direction === "in")).length,
				transactions: sorted.length,
				pending_messages: pending.length,
				classification_state: "unclassified",
			},
			is_incomplete: pending.length > 0,
			trace: node(root),
			transactions_order: sorted.map(t => t.hash),
			transactions: Object.fromEntries(sorted.map(t => [t.hash, t])),
		};
	}

	async runGetMethod(a: Address, method: string | number, stack: TupleItem[]): Promise<Json> {
		const st = this.state(a);
		if (st.status !== "active") return { gas_used: 0, exit_code: -13, stack: [] };
		try {
			const r = await this.blockchain.runGetMethod(a, method, stack, { now: this.now() });
			return { gas_used: Number(r.gasUsed), exit_code: r.exitCode, stack: r.stack.map(stackEntryJson) };
		} catch (e) {
			const err = e as { exitCode?: number; gasUsed?: bigint };
			if (err.exitCode === undefined) throw e;
			return { gas_used: Number(err.gasUsed ?? 0n), exit_code: err.exitCode, stack: [] };
		}
	}
}

function accountStateJson(hash: string, s: StateInfo): Json {
	return {
		hash,
		balance: s.balance.toString(),
		extra_currencies: {},
		account_status: s.status,
		frozen_hash: s.frozenHash,
		data_hash: s.dataHash,
		code_hash: s.codeHash,
	};
}

function stackEntryJson(item: TupleItem): Json {
	switch (item.type) {
		case "int":
			return { type: "num", value: hexNum(item.value) };
		case "cell":
			return { type: "cell", value: item.cell.toBoc().toString("base64") };
		case "slice":
			// ton-http-api (tvm_valuetypes' serialize_tvm_element) renders a slice as ["cell", {bytes}],
			// which ton-index-go's DecodeStackEntry passes on as type "cell".
			return { type: "cell", value: item.cell.toBoc().toString("base64") };
		case "builder":
			return { type: "cell", value: item.cell.toBoc().toString("base64") };
		case "tuple":
			return { type: "tuple", value: item.items.map(stackEntryJson) };
		default:
			// ton-index-go's DecodeStackEntry refuses what it does not know (null, NaN).
			throw new HttpError(501, `failed to decode api/v2 stack: unsupported stack entry type: ${item.type}`);
	}
}

function stackEntryIn(e: { type?: string; value?: unknown }): TupleItem {
	switch (e.type) {
		case "num": {
			const v = typeof e.value === "number" ? BigInt(e.value) : String(e.value ?? "");
			try {
				if (typeof v === "bigint") return { type: "int", value: v };
				const neg = v.startsWith("-");
				const n = BigInt(neg ? v.slice(1) : v);
				return { type: "int", value: neg ? -n : n };
			} catch {
				throw new HttpError(500, `failed to parse number ${String(e.value)}`);
			}
		}
		case "cell":
			return { type: "cell", cell: Cell.fromBase64(String(e.value)) };
		case "slice":
			return { type: "slice", cell: Cell.fromBase64(String(e.value)) };
		default:
			throw new HttpError(500, `unsupported stack parameter type: ${String(e.type)}`);
	}
}

function describe(tx: Transaction): Json {
	const d = tx.description;
	if (d.type !== "generic") return { type: d.type === "tick-tock" ? "tick_tock" : d.type };
	const j: Json = { type: "ord", aborted: d.aborted, destroyed: d.destroyed, credit_first: d.creditFirst };
	if (d.storagePhase) {
		j.storage_ph = { storage_fees_collected: d.storagePhase.storageFeesCollected.toString(), ...(d.storagePhase.storageFeesDue != null ? { storage_fees_due: d.storagePhase.storageFeesDue.toString() } : {}), status_change: d.storagePhase.statusChange }; // unchanged | frozen | deleted: the API's words too
	}
	if (d.creditPhase) {
		j.credit_ph = { ...(d.creditPhase.dueFeesColelcted != null ? { due_fees_collected: d.creditPhase.dueFeesColelcted.toString() } : {}), credit: d.creditPhase.credit.coins.toString() };
	}
	const c = d.computePhase;
	if (c.type === "skipped") {
		j.compute_ph = { skipped: true, reason: c.reason.replace("-", "_") };
	} else {
		j.compute_ph = {
			skipped: false,
			success: c.success,
			msg_state_used: c.messageStateUsed,
			account_activated: c.accountActivated,
			gas_fees: c.gasFees.toString(),
			gas_used: c.gasUsed.toString(),
			gas_limit: c.gasLimit.toString(),
			...(c.gasCredit != null ? { gas_credit: c.gasCredit.toString() } : {}),
			mode: c.mode,
			exit_code: c.exitCode,
			...(c.exitArg != null ? { exit_arg: c.exitArg } : {}),
			vm_steps: c.vmSteps,
			vm_init_state_hash: hash256(c.vmInitStateHash),
			vm_final_state_hash: hash256(c.vmFinalStateHash),
		};
	}
	const a = d.actionPhase;
	if (a) {
		j.action = {
			success: a.success,
			valid: a.valid,
			no_funds: a.noFunds,
			status_change: a.statusChange,
			...(a.totalFwdFees != null ? { total_fwd_fees: a.totalFwdFees.toString() } : {}),
			...(a.totalActionFees != null ? { total_action_fees: a.totalActionFees.toString() } : {}),
			result_code: a.resultCode,
			...(a.resultArg != null ? { result_arg: a.resultArg } : {}),
			tot_actions: a.totalActions,
			spec_actions: a.specActions,
			skipped_actions: a.skippedActions,
			msgs_created: a.messagesCreated,
			action_list_hash: hash256(a.actionListHash),
			tot_msg_size: { cells: a.totalMessageSize.cells.toString(), bits: a.totalMessageSize.bits.toString() },
		};
	}
	const b = d.bouncePhase;
	if (b) {
		if (b.type === "negative-funds") j.bounce = { type: "negfunds" };
		else if (b.type === "no-funds") j.bounce = { type: "nofunds", msg_size: { cells: b.messageSize.cells.toString(), bits: b.messageSize.bits.toString() }, req_fwd_fees: b.requiredForwardFees.toString() };
		else j.bounce = { type: "ok", msg_size: { cells: b.messageSize.cells.toString(), bits: b.messageSize.bits.toString() }, msg_fees: b.messageFees.toString(), fwd_fees: b.forwardFees.toString() };
	}
	return j;
}

// ---------------------------------------------------------------------------------------------
// Routes (ton-index-go main.go). Query parameters as its LimitRequest / BlockRequest / ... parse them.

type Route = (f: TonFacade, q: URLSearchParams, body: Json) => Promise<unknown> | unknown;

function intParam(q: URLSearchParams, name: string): number | undefined {
	const v = q.get(name);
	if (v === null || v === "") return undefined;
	if (!/^-?\d+$/.test(v)) throw new HttpError(422, `failed to decode: schema: error converting value for "${name}"`);
	return Number(v);
}
function bigParam(q: URLSearchParams, name: string): bigint | undefined {
	const v = q.get(name);
	if (v === null || v === "") return undefined;
	if (!/^\d+$/.test(v)) throw new HttpError(422, `failed to decode: schema: error converting value for "${name}"`);
	return BigInt(v);
}
function page<T>(rows: T[], q: URLSearchParams): T[] {
	const limit = intParam(q, "limit") ?? DEFAULT_LIMIT;
	if (limit > MAX_LIMIT) throw new HttpError(422, `limit is not allowed: ${limit} > ${MAX_LIMIT}`);
	const offset = Math.max(0, intParam(q, "offset") ?? 0);
	return rows.slice(offset, offset + Math.max(1, limit));
}
function sortOrder(q: URLSearchParams): 1 | -1 {
	const s = q.get("sort");
	if (s === null || s === "" || s === "desc") return -1;
	if (s === "asc") return 1;
	throw new HttpError(422, "wrong value for sort parameter");
}
function byLt(order: 1 | -1) {
	return (a: TxRecord, b: TxRecord) => (a.lt === b.lt ? a.account.localeCompare(b.account) : a.lt < b.lt ? -order : order);
}
function mcBlock(f: TonFacade, seqno: number | undefined): McBlock {
	const b = f.blocks.find(x => x.seqno === seqno);
	if (!b) throw new HttpError(404, `masterchain block ${seqno ?? 0} not found`);
	return b;
}
/** A list parameter: repeated (`a=1&a=2`) and/or comma-separated (`a=1,2`), as fiber's QueryParser reads slices. */
function multi(q: URLSearchParams, name: string): string[] {
	return q
		.getAll(name)
		.flatMap(v => v.split(","))
		.filter(v => v !== "");
}

/** ton-index-go's ShardIdConverter: hex (optionally 0x) or signed decimal; every block here is in SHARD. */
function shardMatches(q: URLSearchParams): boolean {
	const v = q.get("shard");
	if (v === null || v === "") return true;
	let n: bigint;
	try {
		n = /^-?\d+$/.test(v) && v.startsWith("-") ? BigInt(v) : BigInt(`0x${v.replace(/^0x/i, "")}`);
	} catch {
		throw new HttpError(422, `failed to decode: schema: error converting value for "shard"`);
	}
	return BigInt.asUintN(64, n) === BigInt(`0x${SHARD}`);
}

function hashParams(q: URLSearchParams, name: string): string[] {
	return multi(q, name).map(v => {
		const h = normalizeHash(v);
		if (!h) throw new HttpError(422, `failed to decode: schema: error converting value for "${name}"`);
		return h;
	});
}
function opcodeParam(q: URLSearchParams): number | undefined {
	const v = q.get("opcode");
	if (v === null || v === "") return undefined;
	if (/^0x[0-9a-f]+$/i.test(v)) return Number.parseInt(v.slice(2), 16) >>> 0;
	if (/^-?\d+$/.test(v)) return Number(v) >>> 0;
	throw new HttpError(422, `failed to decode: schema: error converting value for "opcode"`);
}

/** GET /api/v3/transactionsByMasterchainBlock: `seqno` (required), limit, offset, sort (by lt). */
function transactionsByMasterchainBlock(f: TonFacade, q: URLSearchParams): RawJson {
	const txs = mcBlock(f, intParam(q, "seqno") ?? 0).txs;
	return f.transactionsResponse(page([...txs].sort(byLt(sortOrder(q))), q));
}

/** GET /api/v3/transactions: ton-index-go's BlockRequest, TransactionRequest, UtimeRequest, LtRequest and LimitRequest filters. */
function transactionsQuery(f: TonFacade, q: URLSearchParams): RawJson {
	let txs = f.sealedTransactions();
	const mcSeqno = intParam(q, "mc_seqno");
	if (mcSeqno !== undefined) txs = mcBlock(f, mcSeqno).txs;
	const wc = intParam(q, "workchain");
	if (wc !== undefined) txs = txs.filter(t => (t.account.startsWith("-1:") ? -1 : 0) === wc);
	if (!shardMatches(q)) txs = [];
	const seqno = intParam(q, "seqno");
	if (seqno !== undefined) txs = txs.filter(t => (t.account.startsWith("-1:") ? t.mcSeqno : t.shardSeqno) === seqno);
	const accounts = multi(q, "account").map(a => rawAddress(parseAddress(a)));
	if (accounts.length) txs = txs.filter(t => accounts.includes(t.account));
	const hashes = hashParams(q, "hash");
	if (hashes.length) txs = txs.filter(t => hashes.includes(t.hash));
	const lt = bigParam(q, "lt");
	if (lt !== undefined) txs = txs.filter(t => t.lt === lt);
	const startLt = bigParam(q, "start_lt");
	if (startLt !== undefined) txs = txs.filter(t => t.lt >= startLt);
	const endLt = bigParam(q, "end_lt");
	if (endLt !== undefined) txs = txs.filter(t => t.lt <= endLt);
	const startUtime = intParam(q, "start_utime");
	if (startUtime !== undefined) txs = txs.filter(t => t.now >= startUtime);
	const endUtime = intParam(q, "end_utime");
	if (endUtime !== undefined) txs = txs.filter(t => t.now <= endUtime);
	const order = sortOrder(q);
	return f.transactionsResponse(page([...txs].sort(byLt(order)), q));
}

function walletInformation(f: TonFacade, q: URLSearchParams): Json {
	const addr = q.get("address");
	if (!addr) throw new HttpError(401, "address of account is required");
	const a = parseAddress(addr);
	const st = f.state(a);
	if (st.status === "nonexist" && st.lastTxLt === 0n) {
		return { balance: "0", last_transaction_lt: "0", last_transaction_hash: ZERO_HASH, status: "uninit" };
	}
	const wallet = st.codeHash ? WALLET_CODE_HASHES[st.codeHash] : undefined;
	if (!wallet && st.status !== "uninit") throw new HttpError(409, "not a wallet");
	const out: Json = { balance: st.balance.toString() };
	if (wallet) {
		const contracts = (f.storage as unknown as { contracts: Map<string, { accountState?: { type: string; state?: { data?: Cell } } }> }).contracts;
		const data = contracts.get(a.toString())?.accountState?.state?.data;
		if (data) {
			const s = data.beginParse();
			out.wallet_type = wallet.type;
			if (wallet.v5) {
				s.loadBit();
				out.seqno = s.loadUint(32);
				out.wallet_id = s.loadUint(32);
			} else {
				out.seqno = s.loadUint(32);
				out.wallet_id = s.loadUint(32);
			}
		}
	}
	out.last_transaction_lt = st.lastTxLt.toString();
	out.last_transaction_hash = st.lastTxHash;
	out.status = st.status;
	return out;
}

function addressInformation(f: TonFacade, q: URLSearchParams): Json {
	const addr = q.get("address");
	if (!addr) throw new HttpError(401, "address of account is required");
	const a = parseAddress(addr);
	const st = f.state(a);
	if (st.status === "nonexist" && st.lastTxLt === 0n) {
		return { balance: "0", code: null, data: null, last_transaction_lt: "0", last_transaction_hash: ZERO_HASH, frozen_hash: null, status: "uninit" };
	}
	const contracts = (f.storage as unknown as { contracts: Map<string, { accountState?: { type: string; state?: { code?: Cell; data?: Cell } } }> }).contracts;
	const state = contracts.get(a.toString())?.accountState?.state;
	return {
		balance: st.balance.toString(),
		code: state?.code ? state.code.toBoc().toString("base64") : null,
		data: state?.data ? state.data.toBoc().toString("base64") : null,
		last_transaction_lt: st.lastTxLt.toString(),
		last_transaction_hash: st.lastTxHash,
		frozen_hash: st.frozenHash,
		status: st.status,
	};
}

const ROUTES: Record<string, Route> = {
	"GET /api/v3/masterchainInfo": f => ({ last: f.blockJson(f.blocks[f.blocks.length - 1], false), first: f.blockJson(f.blocks[0], false) }),
	"GET /api/v3/transactionsByMasterchainBlock": (f, q) => transactionsByMasterchainBlock(f, q),
	"GET /api/v3/transactions": (f, q) => transactionsQuery(f, q),
	"GET /api/v3/transactionsByMessage": (f, q) => {
		const dir = q.get("direction");
		if (dir !== null && dir !== "" && dir !== "in" && dir !== "out") throw new HttpError(422, "wrong value for direction parameter");
		const hashes = hashParams(q, "msg_hash");
		const bodyHash = q.get("body_hash") ? hashParams(q, "body_hash")[0] : undefined;
		const opcode = opcodeParam(q);
		if (!hashes.length && bodyHash === undefined && opcode === undefined) throw new HttpError(422, "at least one of msg_hash, body_hash, opcode should be specified");
		const txs = f.sealedTransactions().filter(t =>
			t.msgs.some(
				m =>
					(!dir || m.direction === dir) &&
					(!hashes.length || hashes.includes(m.hash) || (m.norm !== undefined && hashes.includes(m.norm))) &&
					(bodyHash === undefined || m.bodyHash === bodyHash) &&
					(opcode === undefined || (m.opcode === opcode && m.direction === "in")),
			),
		);
		return f.transactionsResponse(page(txs.sort(byLt(sortOrder(q))), q));
	},
	"GET /api/v3/adjacentTransactions": (f, q) => {
		// ton-index-go: transactions sharing a message with the given one, in the opposite direction
		// (direction "out": the ones its out messages created; "in": the one that sent its in message).
		const hash = normalizeHash(q.get("hash") ?? "");
		if (!hash) throw new HttpError(422, `failed to decode: schema: error converting value for "hash"`);
		const dir = q.get("direction");
		if (dir !== null && dir !== "" && dir !== "in" && dir !== "out") throw new HttpError(422, "wrong value for direction parameter");
		const all = f.sealedTransactions();
		const tx = all.find(t => t.hash === hash);
		const mine = new Set((tx?.msgs ?? []).filter(m => !dir || m.direction === dir).map(m => `${m.direction}:${m.hash}`));
		const linked = all.filter(t => t !== tx && t.msgs.some(m => mine.has(`${m.direction === "in" ? "out" : "in"}:${m.hash}`)));
		return f.transactionsResponse(linked.sort(byLt(-1)));
	},
	"GET /api/v3/traces": (f, q) => {
		const traceIds = hashParams(q, "trace_id");
		const txHashes = hashParams(q, "tx_hash");
		const msgHashes = hashParams(q, "msg_hash");
		const account = q.get("account");
		if ([account !== null && account !== "", traceIds.length > 0, txHashes.length > 0, msgHashes.length > 0].filter(Boolean).length > 1) {
			throw new HttpError(422, "only one of account, trace_id, tx_hash, msg_hash should be specified");
		}
		const sealed = f.sealedTransactions();
		const byTrace = new Map<string, TxRecord[]>();
		for (const t of sealed) byTrace.set(t.traceId, [...(byTrace.get(t.traceId) ?? []), t]);
		let ids = [...byTrace.keys()];
		if (traceIds.length) ids = ids.filter(id => traceIds.includes(id));
		if (txHashes.length) ids = ids.filter(id => byTrace.get(id)!.some(t => txHashes.includes(t.hash)));
		if (msgHashes.length) ids = ids.filter(id => byTrace.get(id)!.some(t => t.msgs.some(m => msgHashes.includes(m.hash) || (m.norm !== undefined && msgHashes.includes(m.norm)))));
		if (account) {
			const raw = rawAddress(parseAddress(account));
			ids = ids.filter(id => byTrace.get(id)!.some(t => t.account === raw));
		}
		const mcSeqno = intParam(q, "mc_seqno");
		const traces = ids.map(id => f.traceJson(byTrace.get(id)!)).filter(t => mcSeqno === undefined || t.mc_seqno_end === String(mcSeqno));
		const order = sortOrder(q);
		traces.sort((x, y) => (BigInt(x.end_lt as string) < BigInt(y.end_lt as string) ? -order : order));
		const shown = page(traces, q);
		const addrs = [...new Set(shown.flatMap(t => Object.values(t.transactions as Record<string, TxRecord>).flatMap(r => r.book)))];
		const body = shown.map(t => {
			const txs = t.transactions as Record<string, TxRecord>;
			const rest = JSON.stringify({ ...t, transactions: undefined }).slice(0, -1);
			const txText = Object.entries(txs).map(([h, r]) => `${JSON.stringify(h)}:${(r.text ??= JSON.stringify(r.json))}`);
			return `${rest},"transactions":{${txText.join(",")}}}`;
		});
		return new RawJson(`{"traces":[${body.join(",")}],"address_book":${f.addressBookText(addrs)},"metadata":{}}`);
	},
	"GET /api/v3/blocks": (f, q) => {
		const wc = intParam(q, "workchain");
		const seqno = intParam(q, "seqno");
		const mc = intParam(q, "mc_seqno");
		let rows = f.blocks.flatMap(b => [
			{ b, shard: false, wc: -1, seqno: b.seqno },
			{ b, shard: true, wc: 0, seqno: b.shardSeqno },
		]);
		if (wc !== undefined) rows = rows.filter(r => r.wc === wc);
		if (!shardMatches(q)) rows = [];
		if (seqno !== undefined) rows = rows.filter(r => r.seqno === seqno);
		if (mc !== undefined) rows = rows.filter(r => r.b.seqno === mc);
		const order = sortOrder(q);
		rows.sort((x, y) => (x.b.genUtime - y.b.genUtime || x.b.seqno - y.b.seqno || x.wc - y.wc) * order);
		return { blocks: page(rows, q).map(r => f.blockJson(r.b, r.shard)) };
	},
	"GET /api/v3/masterchainBlockShards": (f, q) => {
		const b = mcBlock(f, intParam(q, "seqno"));
		return { blocks: page([f.blockJson(b, false), f.blockJson(b, true)], q) };
	},
	"GET /api/v3/masterchainBlockShardState": (f, q) => {
		const b = f.blocks.find(x => x.seqno === intParam(q, "seqno"));
		if (!b) throw new HttpError(404, "blocks not found");
		return { blocks: [f.blockJson(b, true)] };
	},
	// State reads wait for a running trace to finish (a liteserver reads whole blocks' states).
	"GET /api/v3/walletInformation": (f, q) => f.exclusive(async () => walletInformation(f, q)),
	"GET /api/v3/wallet": (f, q) => f.exclusive(async () => walletInformation(f, q)),
	"GET /api/v3/addressInformation": (f, q) => f.exclusive(async () => addressInformation(f, q)),
	"GET /api/v3/account": (f, q) => f.exclusive(async () => addressInformation(f, q)),
	"POST /api/v3/message": async (f, _q, body) => {
		if (typeof body.boc !== "string" || body.boc.length === 0) throw new HttpError(401, "boc is required");
		return f.sendBoc(Buffer.from(body.boc, "base64"));
	},
	"POST /api/v3/runGetMethod": async (f, _q, body) => {
		if (typeof body.address !== "string" || !body.address) throw new HttpError(401, "address is required");
		if ((typeof body.method !== "string" && typeof body.method !== "number") || body.method === "") throw new HttpError(401, "method is required");
		const a = parseAddress(body.address);
		const stack = Array.isArray(body.stack) ? (body.stack as { type?: string; value?: unknown }[]).map(stackEntryIn) : [];
		const method = typeof body.method === "string" && /^\d+$/.test(body.method) ? Number(body.method) : body.method;
		return f.exclusive(() => f.runGetMethod(a, method, stack));
	},
};
