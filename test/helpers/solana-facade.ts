/**
 * The Solana test node's engine: a JSON-RPC 2.0 HTTP server on 127.0.0.1 (free port) over litesvm,
 * which a real `new Connection(url)` from @solana/web3.js v1 talks to. Tests use it through
 * test/helpers/solana-node.ts, which runs this file in a child process (see there why).
 *
 * What is real: litesvm executes the signed transactions (signature checks, the System, SPL Token
 * and associated-token programs, fees, rent), so balances, token accounts, logs, inner instructions
 * and errors come from the Solana runtime itself.
 * What is this file (the facade): slots, blocks, the confirmed and finalized heads, skipped slots,
 * dropped forks, blockhash validity (150 blocks), duplicate signatures, and the RPC response shapes
 * (written after Solana's RPC documentation and agave's rpc.rs; fixtures in test/fixtures/solana-rpc).
 *
 * Model: a transaction sent is executed at once against the VM (the "processed" working bank) and
 * waits in `pending`; `produceBlock()` seals the pending transactions into the block of the next
 * slot. Every block records, per account it changed, the account as it was before the block: that
 * gives account reads at `confirmed` / `finalized` (state at that head) and `dropBlock()` (restore,
 * newest first: the dropped transactions never happened on the surviving fork).
 */
import crypto from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import {
	Keypair,
	PublicKey,
	SystemProgram,
	Transaction,
	TransactionInstruction,
	VersionedMessage,
	VersionedTransaction,
	type Signer,
} from "@solana/web3.js";
import {
	ACCOUNT_SIZE,
	ASSOCIATED_TOKEN_PROGRAM_ID,
	MINT_SIZE,
	MintLayout,
	TOKEN_2022_PROGRAM_ID,
	TOKEN_PROGRAM_ID,
	createAssociatedTokenAccountIdempotentInstruction,
	createMintToInstruction,
	getAssociatedTokenAddressSync,
} from "@solana/spl-token";
import WebSocket from "ws";
import { Clock, FailedTransactionMetadata, LiteSVM, type AccountInfoBytes, type TransactionMetadata } from "litesvm";

export type Commitment = "processed" | "confirmed" | "finalized";

/** Solana's MAX_PROCESSING_AGE: a blockhash is usable while at most 150 blocks are above it. */
export const MAX_PROCESSING_AGE = 150;
const SLOTS_PER_EPOCH = 432_000;
const LAMPORTS_PER_SIGNATURE = 5_000n;
const API_VERSION = "2.2.0";
const DEFAULT_BLOCKHASH = "11111111111111111111111111111111";

// ---------------------------------------------------------------------------------------------
// base58 (Solana's alphabet), small and exact; bs58 is only a transitive dependency here.
const ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
export function base58Encode(bytes: Uint8Array): string {
	let n = 0n;
	for (const b of bytes) n = (n << 8n) | BigInt(b);
	let out = "";
	while (n > 0n) {
		out = ALPHABET[Number(n % 58n)] + out;
		n /= 58n;
	}
	for (const b of bytes) {
		if (b !== 0) break;
		out = "1" + out;
	}
	return out;
}
export function base58Decode(text: string): Uint8Array {
	let n = 0n;
	for (const c of text) {
		const v = ALPHABET.indexOf(c);
		if (v < 0) throw new Error("invalid base58");
		n = n * 58n + BigInt(v);
	}
	const bytes: number[] = [];
	while (n > 0n) {
		bytes.unshift(Number(n & 0xffn));
		n >>= 8n;
	}
	for (const c of text) {
		if (c !== "1") break;
		bytes.unshift(0);
	}
	return Uint8Array.from(bytes);
}

// ---------------------------------------------------------------------------------------------
// Errors: TransactionError / InstructionError in agave's JSON shape and Display text.

const TX_ERRORS = [
	"AccountInUse", "AccountLoadedTwice", "AccountNotFound", "ProgramAccountNotFound", "InsufficientFundsForFee",
	"InvalidAccountForFee", "AlreadyProcessed", "BlockhashNotFound", "CallChainTooDeep", "MissingSignatureForFee",
	"InvalidAccountIndex", "SignatureFailure", "InvalidProgramForExecution", "SanitizeFailure", "ClusterMaintenance",
	"AccountBorrowOutstanding", "WouldExceedMaxBlockCostLimit", "UnsupportedVersion", "InvalidWritableAccount",
	"WouldExceedMaxAccountCostLimit", "WouldExceedAccountDataBlockLimit", "TooManyAccountLocks", "AddressLookupTableNotFound",
	"InvalidAddressLookupTableOwner", "InvalidAddressLookupTableData", "InvalidAddressLookupTableIndex", "InvalidRentPayingAccount",
	"WouldExceedMaxVoteCostLimit", "WouldExceedAccountDataTotalLimit", "MaxLoadedAccountsDataSizeExceeded", "ResanitizationNeeded",
	"InvalidLoadedAccountsDataSizeLimit", "UnbalancedTransaction", "ProgramCacheHitMaxLimit", "CommitCancelled",
];
const IX_ERRORS = [
	"GenericError", "InvalidArgument", "InvalidInstructionData", "InvalidAccountData", "AccountDataTooSmall", "InsufficientFunds",
	"IncorrectProgramId", "MissingRequiredSignature", "AccountAlreadyInitialized", "UninitializedAccount", "UnbalancedInstruction",
	"ModifiedProgramId", "ExternalAccountLamportSpend", "ExternalAccountDataModified", "ReadonlyLamportChange", "ReadonlyDataModified",
	"DuplicateAccountIndex", "ExecutableModified", "RentEpochModified", "NotEnoughAccountKeys", "AccountDataSizeChanged",
	"AccountNotExecutable", "AccountBorrowFailed", "AccountBorrowOutstanding", "DuplicateAccountOutOfSync", "InvalidError",
	"ExecutableDataModified", "ExecutableLamportChange", "ExecutableAccountNotRentExempt", "UnsupportedProgramId", "CallDepth",
	"MissingAccount", "ReentrancyNotAllowed", "MaxSeedLengthExceeded", "InvalidSeeds", "InvalidRealloc", "ComputationalBudgetExceeded",
	"PrivilegeEscalation", "ProgramEnvironmentSetupFailure", "ProgramFailedToComplete", "ProgramFailedToCompile", "Immutable",
	"IncorrectAuthority", "AccountNotRentExempt", "InvalidAccountOwner", "ArithmeticOverflow", "UnsupportedSysvar", "IllegalOwner",
	"MaxAccountsDataAllocationsExceeded", "MaxAccountsExceeded", "MaxInstructionTraceLengthExceeded", "BuiltinProgramsMustConsumeComputeUnits",
];
/** Display texts (solana-sdk's thiserror messages) of the errors tests meet; others print their name. */
const TX_ERROR_TEXT: Record<string, string> = {
	AccountInUse: "Account in use",
	AccountLoadedTwice: "Account loaded twice",
	AccountNotFound: "Attempt to debit an account but found no record of a prior credit.",
	ProgramAccountNotFound: "Attempt to load a program that does not exist",
	InsufficientFundsForFee: "Insufficient funds for fee",
	InvalidAccountForFee: "This account may not be used to pay transaction fees",
	AlreadyProcessed: "This transaction has already been processed",
	BlockhashNotFound: "Blockhash not found",
	SignatureFailure: "Transaction did not pass signature verification",
	SanitizeFailure: "Transaction failed to sanitize accounts offsets correctly",
	UnsupportedVersion: "Transaction version is unsupported",
};
const IX_ERROR_TEXT: Record<string, string> = {
	GenericError: "generic instruction error",
	InvalidArgument: "invalid program argument",
	InvalidInstructionData: "invalid instruction data",
	InvalidAccountData: "invalid account data for instruction",
	AccountDataTooSmall: "account data too small for instruction",
	InsufficientFunds: "insufficient funds for instruction",
	IncorrectProgramId: "incorrect program id for instruction",
	MissingRequiredSignature: "missing required signature for instruction",
	AccountAlreadyInitialized: "instruction requires an uninitialized account",
	UninitializedAccount: "instruction requires an initialized account",
	IllegalOwner: "Provided owner is not allowed",
	ComputationalBudgetExceeded: "Computational budget exceeded",
};

/** A TransactionError as agave serializes it: a string for unit variants, an object otherwise. */
export type TxErrorJson = string | Record<string, unknown>;

function txErrorJson(err: ReturnType<FailedTransactionMetadata["err"]>): TxErrorJson {
	if (typeof err === "number") return TX_ERRORS[err] ?? `TransactionError${err}`;
	const name = (err as object).constructor.name;
	const e = err as unknown as { index: number; accountIndex: number; err: () => unknown };
	if (name === "TransactionErrorInstructionError") {
		const inner = e.err();
		let ix: unknown;
		if (typeof inner === "number") ix = IX_ERRORS[inner] ?? `InstructionError${inner}`;
		else if (inner && (inner as object).constructor.name === "InstructionErrorCustom") ix = { Custom: (inner as { code: number }).code };
		else ix = { BorshIoError: (inner as { msg: string }).msg };
		return { InstructionError: [e.index, ix] };
	}
	if (name === "TransactionErrorInsufficientFundsForRent") return { InsufficientFundsForRent: { account_index: e.accountIndex } };
	if (name === "TransactionErrorProgramExecutionTemporarilyRestricted") return { ProgramExecutionTemporarilyRestricted: { account_index: e.accountIndex } };
	if (name === "TransactionErrorDuplicateInstruction") return { DuplicateInstruction: e.index };
	return String(err);
}

/** agave's `Display` of a TransactionError (used in "Transaction simulation failed: ..."). */
export function txErrorText(err: TxErrorJson): string {
	if (typeof err === "string") return TX_ERROR_TEXT[err] ?? err;
	if ("InstructionError" in err) {
		const [index, ix] = err.InstructionError as [number, unknown];
		let text: string;
		if (typeof ix === "string") text = IX_ERROR_TEXT[ix] ?? ix;
		else if (ix && typeof ix === "object" && "Custom" in ix) text = `custom program error: 0x${(ix as { Custom: number }).Custom.toString(16)}`;
		else text = JSON.stringify(ix);
		return `Error processing Instruction ${index}: ${text}`;
	}
	if ("InsufficientFundsForRent" in err) {
		return `Transaction results in an account (${(err.InsufficientFundsForRent as { account_index: number }).account_index}) with insufficient funds for rent`;
	}
	return JSON.stringify(err);
}

/** A JSON-RPC error as agave answers it. */
export class RpcError extends Error {
	constructor(
		readonly code: number,
		message: string,
		readonly data?: unknown,
	) {
		super(message);
	}
}
const invalidParams = (message: string) => new RpcError(-32602, message);
const atLeastConfirmed = (c: Commitment) => {
	if (c === "processed") throw invalidParams("Method does not support commitment below `confirmed`");
};

// ---------------------------------------------------------------------------------------------
// Ledger records

/** An account as stored: `null` when it does not exist. */
type Snapshot = AccountInfoBytes | null;

interface TokenBalance {
	accountIndex: number;
	mint: string;
	owner: string;
	programId: string;
	uiTokenAmount: { amount: string; decimals: number; uiAmount: number | null; uiAmountString: string };
}

interface TxRecord {
	signature: string;
	raw: Uint8Array;
	tx: VersionedTransaction;
	err: TxErrorJson | null;
	fee: bigint;
	preBalances: bigint[];
	postBalances: bigint[];
	preTokenBalances: TokenBalance[];
	postTokenBalances: TokenBalance[];
	logMessages: string[];
	innerInstructions: Array<{ index: number; instructions: Array<{ programIdIndex: number; accounts: number[]; data: string; stackHeight: number }> }>;
	computeUnitsConsumed: bigint;
	/** Block slot, once sealed. */
	slot: number | null;
}

interface Block {
	slot: number;
	parentSlot: number;
	blockhash: string;
	previousBlockhash: string;
	blockHeight: number;
	blockTime: number;
	txs: TxRecord[];
	/** Per account this block changed: the account before the block (dropped once finalized). */
	before: Map<string, Snapshot> | null;
}

export interface SolanaNodeOptions {
	/**
	 * The finalized head trails the confirmed head by this many blocks (default 2); `null`: it moves
	 * only on `finalize()`.
	 */
	finalizeDistance?: number | null;
	/** Produce a block every this many ms (off by default: tests call `produceBlock()`). */
	autoProduceMs?: number;
	/** Lamports of the faucet (funds airdrops and pays for mint-to). */
	faucetLamports?: bigint;
}

export interface SolanaFacade {
	url: string;
	/** PubSub (signatureSubscribe, slotSubscribe, rootSubscribe) on the same port: `new Connection(url, { wsEndpoint: wsUrl })`. */
	wsUrl: string;
	port: number;
	svm: LiteSVM;
	/** Funds airdrops; mint authority of mints made by `createMint`. */
	faucet: Keypair;
	genesisHash: string;
	/** Seals the pending transactions into the block of the next slot (after `skipSlots` skipped ones); returns the block's slot. */
	produceBlock(): number;
	produceBlocks(n: number): number;
	/** Leaves the next `n` slots without a block. */
	skipSlots(n?: number): void;
	/** Moves the finalized head to `slot` (a block on the chain; default the confirmed head). */
	finalize(slot?: number): void;
	setFinalizeDistance(distance: number | null): void;
	/**
	 * Drops a confirmed, not finalized block and every block after it (its fork), and the pending
	 * transactions: their effects are undone and their signatures unknown again.
	 */
	dropBlock(slot: number): void;
	/** Produces blocks until every pending transaction is in a finalized block. */
	settle(): void;
	head(commitment?: Commitment): { slot: number; blockHeight: number; blockhash: string };
	latestBlockhash(commitment?: Commitment): { blockhash: string; lastValidBlockHeight: number };
	/** Sends a raw transaction as `sendTransaction` with preflight skipped does; returns the signature. Throws RpcError when a node would refuse it. */
	submit(raw: Uint8Array): string;
	/** Builds, signs (first signer pays) and submits a legacy transaction on the confirmed head's blockhash. */
	send(instructions: TransactionInstruction[], signers: Signer[]): string;
	/** A real transfer from the faucet (a transaction in the next block). */
	airdrop(to: PublicKey, lamports: bigint): string;
	/** A mint account set up as already on the cluster (at `address` when given: e.g. the catalogue's USDC mint). */
	createMint(decimals: number, opts?: { address?: PublicKey; authority?: PublicKey }): PublicKey;
	/** Creates `owner`'s associated token account when missing and mints `amount` to it (a real transaction; faucet is the mint authority). */
	mintTo(mint: PublicKey, owner: PublicKey, amount: bigint): { signature: string; ata: PublicKey };
	balance(address: PublicKey, commitment?: Commitment): bigint;
	tokenBalance(tokenAccount: PublicKey, commitment?: Commitment): bigint | null;
	/** Signature status as getSignatureStatuses would give it. */
	status(signature: string): { slot: number; confirmationStatus: Commitment; err: TxErrorJson | null } | null;
	stopAutoProduce(): void;
	startAutoProduce(ms: number): void;
	/** Number of RPC requests answered, by method. */
	calls: Map<string, number>;
	stop(): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Token account parsing (SPL Token and Token-2022 share the 165-byte base layout).

function isTokenProgram(owner: PublicKey): boolean {
	return owner.equals(TOKEN_PROGRAM_ID) || owner.equals(TOKEN_2022_PROGRAM_ID);
}
function parseTokenAccount(acc: Snapshot): { mint: PublicKey; owner: PublicKey; amount: bigint } | null {
	if (!acc || !isTokenProgram(acc.owner) || acc.data.length < ACCOUNT_SIZE) return null;
	const data = Buffer.from(acc.data);
	// Token-2022: a 165-byte base, then the account type byte (2 = account) when extended.
	if (acc.data.length > ACCOUNT_SIZE && data[ACCOUNT_SIZE] !== 2) return null;
	if (acc.data.length === MINT_SIZE) return null;
	const state = data[108];
	if (state === 0) return null;
	return { mint: new PublicKey(data.subarray(0, 32)), owner: new PublicKey(data.subarray(32, 64)), amount: data.readBigUInt64LE(64) };
}
function mintDecimals(acc: Snapshot): number | null {
	if (!acc || !isTokenProgram(acc.owner) || acc.data.length < MINT_SIZE) return null;
	return acc.data[44];
}
/** solana-account-decoder's `real_number_string_trimmed`. */
function uiAmountString(amount: bigint, decimals: number): string {
	if (decimals === 0) return amount.toString();
	const s = amount.toString().padStart(decimals + 1, "0");
	const whole = s.slice(0, s.length - decimals);
	const frac = s.slice(s.length - decimals).replace(/0+$/, "");
	return frac ? `${whole}.${frac}` : whole;
}
function uiTokenAmount(amount: bigint, decimals: number) {
	return { amount: amount.toString(), decimals, uiAmount: Number(uiAmountString(amount, decimals)), uiAmountString: uiAmountString(amount, decimals) };
}

// ---------------------------------------------------------------------------------------------
// JSON with exact u64: bigints are written as bare JSON numbers, as agave writes u64.

function toJson(value: unknown): string {
	const text = JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? `\u0000big:${v.toString()}\u0000` : v));
	return text.replace(/"\\u0000big:(-?\d+)\\u0000"/g, "$1");
}

function sameAccount(a: Snapshot, b: Snapshot): boolean {
	if (!a || !b) return a === b;
	return a.lamports === b.lamports && a.owner.equals(b.owner) && a.executable === b.executable && Buffer.from(a.data).equals(Buffer.from(b.data));
}
function copyAccount(a: Snapshot): Snapshot {
	if (!a) return null;
	return { lamports: a.lamports, data: Uint8Array.from(a.data), owner: a.owner, executable: a.executable, rentEpoch: a.rentEpoch };
}
/** u64::MAX (rent-exempt accounts) does not survive a JS number: written back exactly. */
const rentEpochOf = (a: AccountInfoBytes): bigint => {
	const e = a.rentEpoch ?? 0;
	return e >= 2 ** 64 - 1 ? 18446744073709551615n : BigInt(e);
};
const EMPTY_ACCOUNT: AccountInfoBytes = { lamports: 0, data: new Uint8Array(), owner: SystemProgram.programId, executable: false, rentEpoch: 0 };

// ---------------------------------------------------------------------------------------------

export async function startSolanaFacade(opts: SolanaNodeOptions = {}): Promise<SolanaFacade> {
	// Blockhash and duplicate checks are the facade's (150 blocks of our chain); the VM checks signatures, runs programs, charges fees.
	const svm = new LiteSVM().withBlockhashCheck(false).withTransactionHistory(0n).withSigverify(true);
	const faucet = Keypair.generate();
	svm.setAccount(faucet.publicKey, { ...EMPTY_ACCOUNT, lamports: Number(opts.faucetLamports ?? 1_000_000_000_000_000n) });
	let finalizeDistance: number | null = opts.finalizeDistance === undefined ? 2 : opts.finalizeDistance;

	const genesisHash = base58Encode(crypto.randomBytes(32));
	const now = () => Math.floor(Date.now() / 1000);
	const genesis: Block = {
		slot: 0,
		parentSlot: 0,
		blockhash: base58Encode(crypto.createHash("sha256").update(genesisHash).update("slot0").digest()),
		previousBlockhash: DEFAULT_BLOCKHASH,
		blockHeight: 0,
		blockTime: now(),
		txs: [],
		before: null,
	};
	/** Blocks of the surviving fork, oldest first. */
	const chain: Block[] = [genesis];
	const bySlot = new Map<number, Block>([[0, genesis]]);
	/** Slots that once held a block of a dropped fork (for the "skipped" answer once below the root). */
	let lastSlot = 0;
	let finalizedSlot = 0;
	let pending: TxRecord[] = [];
	let pendingBefore = new Map<string, Snapshot>();
	const signatures = new Map<string, TxRecord>();
	/** Every address a transaction or set-up touched (the VM cannot list its accounts). */
	const known = new Set<string>([faucet.publicKey.toBase58()]);
	const calls = new Map<string, number>();

	const tip = () => chain[chain.length - 1];
	/**
	 * Blocks sealed while `holding` (the bench: bench/watcher-solana.ts), not yet on the chain any
	 * reader sees: their transactions are executed (the VM holds their effects, as after `pending`),
	 * and `release` puts them on the chain later at a set slot rate. Oldest first.
	 */
	let holding = false;
	const held: Block[] = [];
	let releaseTimer: NodeJS.Timeout | null = null;
	/** When each slot's block became visible at `confirmed` / its slot `finalized` (ms since the epoch; the bench's clock). */
	const visibleAt = new Map<number, number>();
	const finalizedAt = new Map<number, number>();
	/** The newest sealed block, held or not: a leader builds on it and checks blockhash age against it. */
	const newest = () => held[held.length - 1] ?? tip();
	const headFor = (c: Commitment): Block => (c === "finalized" ? bySlot.get(finalizedSlot)! : tip());
	const heightOf = new Map<string, Block>([[genesis.blockhash, genesis]]);

	const setClock = () => {
		const c = svm.getClock();
		svm.setClock(new Clock(BigInt(lastSlot + 1), c.epochStartTimestamp, BigInt(Math.floor((lastSlot + 1) / SLOTS_PER_EPOCH)), c.leaderScheduleEpoch, BigInt(now())));
	};
	setClock();

	/** The account as of the head at `commitment`: the earliest "before" image after that head, else the VM's. */
	const accountAt = (address: PublicKey, commitment: Commitment): Snapshot => {
		const key = address.toBase58();
		if (commitment !== "processed") {
			const head = headFor(commitment);
			for (const b of chain) {
				if (b.slot <= head.slot || !b.before) continue;
				if (b.before.has(key)) return b.before.get(key)!;
			}
			for (const b of held) if (b.before?.has(key)) return b.before.get(key)!;
			if (pendingBefore.has(key)) return pendingBefore.get(key)!;
		}
		const acc = svm.getAccount(address);
		return acc && (acc.lamports > 0 || acc.data.length > 0) ? acc : null;
	};
	const current = (address: PublicKey): Snapshot => accountAt(address, "processed");

	const blockhashValid = (blockhash: string, head: Block): boolean => {
		const b = heightOf.get(blockhash);
		return !!b && bySlot.get(b.slot) === b && head.blockHeight - b.blockHeight <= MAX_PROCESSING_AGE && b.blockHeight <= head.blockHeight;
	};

	const tokenBalances = (states: Snapshot[]): TokenBalance[] => {
		const out: TokenBalance[] = [];
		states.forEach((acc, i) => {
			const t = parseTokenAccount(acc);
			if (!t) return;
			const decimals = mintDecimals(current(t.mint)) ?? 0;
			out.push({ accountIndex: i, mint: t.mint.toBase58(), owner: t.owner.toBase58(), programId: acc!.owner.toBase58(), uiTokenAmount: uiTokenAmount(t.amount, decimals) });
		});
		return out;
	};

	/** Executes a transaction on the VM; returns its record when a cluster would put it in a block. */
	const execute = (raw: Uint8Array): { record: TxRecord | null; err: TxErrorJson | null; logs: string[]; units: bigint } => {
		const tx = VersionedTransaction.deserialize(raw);
		const msg = tx.message;
		if (msg.addressTableLookups.length > 0) throw invalidParams("address lookup tables are not supported by this test node");
		const keys = msg.staticAccountKeys;
		const pre = keys.map(k => copyAccount(current(k)));
		const result = svm.sendTransaction(tx);
		const post = keys.map(k => copyAccount(current(k)));
		const failed = result instanceof FailedTransactionMetadata;
		const meta: TransactionMetadata = failed ? result.meta() : result;
		const err = failed ? txErrorJson(result.err()) : null;
		// A transaction is in a block exactly when its fee was charged (execution errors); the others never land.
		const payerPre = pre[0]?.lamports ?? 0;
		const payerPost = post[0]?.lamports ?? 0;
		if (failed && payerPost >= payerPre) return { record: null, err, logs: meta.logs(), units: meta.computeUnitsConsumed() };
		keys.forEach((k, i) => {
			const key = k.toBase58();
			known.add(key);
			if (!sameAccount(pre[i], post[i]) && !pendingBefore.has(key)) pendingBefore.set(key, pre[i]);
		});
		const preBalances = pre.map(a => BigInt(a?.lamports ?? 0));
		const postBalances = post.map(a => BigInt(a?.lamports ?? 0));
		const record: TxRecord = {
			signature: base58Encode(tx.signatures[0]),
			raw,
			tx,
			err,
			// Lamports only leave a transaction's accounts as its fee.
			fee: preBalances.reduce((s, v) => s + v, 0n) - postBalances.reduce((s, v) => s + v, 0n),
			preBalances,
			postBalances,
			preTokenBalances: tokenBalances(pre),
			postTokenBalances: tokenBalances(post),
			logMessages: meta.logs(),
			innerInstructions: meta
				.innerInstructions()
				.map((list, index) => ({
					index,
					instructions: list.map(ii => {
						const ci = ii.instruction();
						return { programIdIndex: ci.programIdIndex(), accounts: Array.from(ci.accounts()), data: base58Encode(ci.data()), stackHeight: ii.stackHeight() };
					}),
				}))
				.filter(x => x.instructions.length > 0),
			computeUnitsConsumed: meta.computeUnitsConsumed(),
			slot: null,
		};
		return { record, err, logs: meta.logs(), units: meta.computeUnitsConsumed() };
	};

	interface Subscription {
		ws: WebSocket;
		method: string;
		signature?: string;
		commitment: Commitment;
	}
	const subscriptions = new Map<number, Subscription>();
	let nextSubscription = 0;
	const rank: Record<Commitment, number> = { processed: 0, confirmed: 1, finalized: 2 };
	/** Sends what subscribers wait for: a signature reaching their commitment (then the subscription ends, as agave's), slots, roots. */
	const notify = (event: { slot?: { parent: number; root: number; slot: number }; root?: number } = {}) => {
		for (const [id, sub] of subscriptions) {
			const send = (method: string, result: unknown) => sub.ws.send(toJson({ jsonrpc: "2.0", method, params: { result, subscription: id } }));
			if (sub.method === "slotSubscribe" && event.slot) send("slotNotification", event.slot);
			if (sub.method === "rootSubscribe" && event.root !== undefined) send("rootNotification", event.root);
			if (sub.method !== "signatureSubscribe") continue;
			const r = signatures.get(sub.signature!);
			if (!r) continue;
			const st = statusOf(r);
			if (rank[st.confirmationStatus] < rank[sub.commitment]) continue;
			send("signatureNotification", { context: { slot: st.slot }, value: { err: r.err } });
			subscriptions.delete(id);
		}
	};

	/** sendTransaction with preflight skipped: what the node accepts (a signature) and what it refuses (an RpcError). */
	const submit = (raw: Uint8Array): string => {
		let tx: VersionedTransaction;
		try {
			tx = VersionedTransaction.deserialize(raw);
		} catch (e) {
			throw invalidParams(`failed to deserialize VersionedTransaction: ${(e as Error).message}`);
		}
		const signature = base58Encode(tx.signatures[0]);
		if (!verifySignatures(tx)) throw new RpcError(-32003, "Transaction signature verification failure");
		// Already landed or waiting: the same transaction is not executed twice (it is already "processed").
		if (signatures.has(signature)) return signature;
		// Unknown or expired blockhash: accepted by the RPC and forwarded, but no leader can execute it.
		if (!blockhashValid(tx.message.recentBlockhash, newest())) return signature;
		const { record } = execute(raw);
		if (record) {
			pending.push(record);
			signatures.set(signature, record);
			notify();
		}
		return signature;
	};

	const verifySignatures = (tx: VersionedTransaction): boolean => {
		const msg = tx.message.serialize();
		const n = tx.message.header.numRequiredSignatures;
		if (tx.signatures.length !== n) return false;
		for (let i = 0; i < n; i++) {
			const key = crypto.createPublicKey({ key: Buffer.concat([Buffer.from("302a300506032b6570032100", "hex"), tx.message.staticAccountKeys[i].toBuffer()]), format: "der", type: "spki" });
			if (!crypto.verify(null, msg, key, tx.signatures[i])) return false;
		}
		return true;
	};

	/** Preflight / simulateTransaction: runs on a throw-away basis (the VM's simulate leaves state untouched). */
	const simulate = (tx: VersionedTransaction, sigVerify: boolean, replaceBlockhash: boolean) => {
		let replacement: { blockhash: string; lastValidBlockHeight: number } | null = null;
		if (replaceBlockhash) {
			const head = tip();
			replacement = { blockhash: head.blockhash, lastValidBlockHeight: head.blockHeight + MAX_PROCESSING_AGE };
		} else if (!blockhashValid(tx.message.recentBlockhash, tip())) {
			return { err: "BlockhashNotFound" as TxErrorJson, logs: [] as string[], units: 0n, replacement, accounts: null };
		}
		if (sigVerify && !verifySignatures(tx)) return { err: "SignatureFailure" as TxErrorJson, logs: [], units: 0n, replacement, accounts: null };
		if (tx.message.addressTableLookups.length > 0) throw invalidParams("address lookup tables are not supported by this test node");
		const key = base58Encode(tx.signatures[0]);
		if (signatures.has(key)) return { err: "AlreadyProcessed" as TxErrorJson, logs: [], units: 0n, replacement, accounts: null };
		svm.withSigverify(false);
		try {
			const res = svm.simulateTransaction(tx);
			if (res instanceof FailedTransactionMetadata) return { err: txErrorJson(res.err()), logs: res.meta().logs(), units: res.meta().computeUnitsConsumed(), replacement, accounts: null };
			return { err: null, logs: res.meta().logs(), units: res.meta().computeUnitsConsumed(), replacement, accounts: null };
		} finally {
			svm.withSigverify(true);
		}
	};

	const finalizeByDistance = () => {
		if (finalizeDistance === null) return;
		const idx = chain.length - 1 - finalizeDistance;
		if (idx >= 0 && chain[idx].slot > finalizedSlot) setFinalized(chain[idx].slot);
	};
	const setFinalized = (slot: number) => {
		const b = bySlot.get(slot);
		if (!b || !chain.includes(b)) throw new Error(`slot ${slot} has no block on the chain`);
		if (slot < finalizedSlot) throw new Error(`slot ${slot} is below the finalized slot ${finalizedSlot}`);
		const moved = slot !== finalizedSlot;
		const at = Date.now();
		for (const blk of chain) if (blk.slot > finalizedSlot && blk.slot <= slot && !finalizedAt.has(blk.slot)) finalizedAt.set(blk.slot, at);
		finalizedSlot = slot;
		// Finalized blocks are never dropped: their "before" images are no longer needed.
		for (const blk of chain) if (blk.slot <= slot) blk.before = null;
		if (moved) notify({ root: slot });
	};

	const produceBlock = (): number => {
		// Released blocks go on the chain in order: a new one waits for them.
		if (!holding && held.length) throw new Error("produceBlock: held blocks are being released");
		const parent = newest();
		const slot = lastSlot + 1;
		lastSlot = slot;
		const h = crypto.createHash("sha256").update(parent.blockhash).update(String(slot));
		for (const r of pending) h.update(r.signature);
		const block: Block = {
			slot,
			parentSlot: parent.slot,
			blockhash: base58Encode(h.digest()),
			previousBlockhash: parent.blockhash,
			blockHeight: parent.blockHeight + 1,
			blockTime: Math.max(now(), parent.blockTime),
			txs: pending,
			before: pendingBefore,
		};
		pending = [];
		pendingBefore = new Map();
		setClock();
		if (holding) held.push(block);
		else addToChain(block);
		return slot;
	};

	/** A sealed block goes on the chain: readable at `confirmed`, its transactions confirmed. */
	const addToChain = (block: Block) => {
		for (const r of block.txs) r.slot = block.slot;
		chain.push(block);
		bySlot.set(block.slot, block);
		heightOf.set(block.blockhash, block);
		visibleAt.set(block.slot, Date.now());
		notify({ slot: { parent: block.parentSlot, root: finalizedSlot, slot: block.slot } });
		finalizeByDistance();
	};

	const noHeld = (what: string) => {
		if (holding || held.length) throw new Error(`${what}: blocks are held (release them first)`);
	};

	/**
	 * Puts the held blocks on the chain, `slotsPerSecond` of them a second (paced from the start, so
	 * timer slack does not lower the rate); resolves when the last is on the chain. Holding ends.
	 */
	const release = (slotsPerSecond: number): Promise<void> => {
		holding = false;
		if (releaseTimer) clearInterval(releaseTimer);
		const start = Date.now();
		let released = 0;
		return new Promise(resolve => {
			const tick = () => {
				const due = Math.floor(((Date.now() - start) * slotsPerSecond) / 1000) + 1;
				while (released < due && held.length) {
					addToChain(held.shift()!);
					released++;
				}
				if (!held.length) {
					if (releaseTimer) clearInterval(releaseTimer);
					releaseTimer = null;
					resolve();
				}
			};
			releaseTimer = setInterval(tick, Math.max(1, Math.floor(1000 / slotsPerSecond / 4)));
			tick();
		});
	};

	const settle = () => {
		noHeld("settle");
		if (pending.length) produceBlock();
		const target = tip().slot;
		while (finalizedSlot < target) {
			if (finalizeDistance === null) setFinalized(target);
			else produceBlock();
		}
	};

	const dropBlock = (slot: number) => {
		noHeld("dropBlock");
		const idx = chain.findIndex(b => b.slot === slot);
		if (idx < 0) throw new Error(`slot ${slot} has no block on the chain`);
		if (slot <= finalizedSlot) throw new Error(`slot ${slot} is finalized: it cannot be dropped`);
		const undo = (before: Map<string, Snapshot>) => {
			for (const [key, acc] of before) svm.setAccount(new PublicKey(key), acc ?? EMPTY_ACCOUNT);
		};
		undo(pendingBefore);
		for (const r of pending) signatures.delete(r.signature);
		pending = [];
		pendingBefore = new Map();
		for (let i = chain.length - 1; i >= idx; i--) {
			const b = chain[i];
			undo(b.before!);
			for (const r of b.txs) signatures.delete(r.signature);
			bySlot.delete(b.slot);
			heightOf.delete(b.blockhash);
		}
		chain.length = idx;
		setClock();
	};

	const statusOf = (r: TxRecord) => {
		if (r.slot === null) return { slot: lastSlot + 1, confirmations: 0, err: r.err, status: r.err ? { Err: r.err } : { Ok: null }, confirmationStatus: "processed" as Commitment };
		const block = bySlot.get(r.slot)!;
		const finalized = r.slot <= finalizedSlot;
		return {
			slot: r.slot,
			confirmations: finalized ? null : tip().blockHeight - block.blockHeight,
			err: r.err,
			status: r.err ? { Err: r.err } : { Ok: null },
			confirmationStatus: (finalized ? "finalized" : "confirmed") as Commitment,
		};
	};

	// ---- RPC encoding -------------------------------------------------------------------------

	const encodeTx = (r: TxRecord, encoding: string) => {
		const msg = r.tx.message;
		if (encoding === "base64") return [Buffer.from(r.raw).toString("base64"), "base64"];
		if (encoding === "base58") return [base58Encode(r.raw), "base58"];
		const message: Record<string, unknown> = {
			accountKeys: msg.staticAccountKeys.map(k => k.toBase58()),
			header: {
				numReadonlySignedAccounts: msg.header.numReadonlySignedAccounts,
				numReadonlyUnsignedAccounts: msg.header.numReadonlyUnsignedAccounts,
				numRequiredSignatures: msg.header.numRequiredSignatures,
			},
			instructions: msg.compiledInstructions.map(ix => ({ accounts: ix.accountKeyIndexes, data: base58Encode(ix.data), programIdIndex: ix.programIdIndex, stackHeight: null })),
			recentBlockhash: msg.recentBlockhash,
		};
		if (msg.version === 0) message.addressTableLookups = [];
		return { message, signatures: r.tx.signatures.map(s => base58Encode(s)) };
	};
	/** Older RPC nodes (before `owner` and `programId` were added to token balances) answer without them: `tokenBalanceOwners(false)`. */
	let tokenBalanceOwners = true;
	const tokenBalancesOut = (list: TokenBalance[]) => (tokenBalanceOwners ? list : list.map(({ owner: _owner, programId: _programId, ...rest }) => rest));
	const encodeMeta = (r: TxRecord) => ({
		computeUnitsConsumed: r.computeUnitsConsumed,
		err: r.err,
		fee: r.fee,
		innerInstructions: r.innerInstructions,
		loadedAddresses: { readonly: [], writable: [] },
		logMessages: r.logMessages,
		postBalances: r.postBalances,
		postTokenBalances: tokenBalancesOut(r.postTokenBalances),
		preBalances: r.preBalances,
		preTokenBalances: tokenBalancesOut(r.preTokenBalances),
		rewards: [],
		status: r.err ? { Err: r.err } : { Ok: null },
	});
	const versionOf = (r: TxRecord) => (r.tx.message.version === "legacy" ? "legacy" : r.tx.message.version);
	const checkVersion = (r: TxRecord, max: number | undefined) => {
		const v = r.tx.message.version;
		if (v !== "legacy" && (max === undefined || v > max)) {
			throw new RpcError(-32015, `Transaction version (${v}) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": ${v}`);
		}
	};

	type Cfg = Record<string, unknown> | undefined;
	const commitmentOf = (cfg: Cfg): Commitment => {
		const c = (cfg?.commitment as string | undefined) ?? "finalized";
		if (c === "processed" || c === "confirmed" || c === "finalized") return c;
		// Deprecated names agave still maps.
		if (c === "recent") return "processed";
		if (c === "single" || c === "singleGossip") return "confirmed";
		if (c === "root" || c === "max") return "finalized";
		throw invalidParams("Invalid params: unknown variant");
	};
	const ctx = (c: Commitment = "finalized") => ({ apiVersion: API_VERSION, slot: headFor(c).slot });
	const pubkey = (v: unknown): PublicKey => {
		try {
			return new PublicKey(String(v));
		} catch {
			throw invalidParams("Invalid param: Invalid");
		}
	};
	const encodeAccount = (acc: Snapshot, encoding: string, address?: PublicKey) => {
		if (!acc) return null;
		const base = { executable: acc.executable, lamports: BigInt(acc.lamports), owner: acc.owner.toBase58(), rentEpoch: rentEpochOf(acc), space: acc.data.length };
		if (encoding === "jsonParsed") {
			const t = parseTokenAccount(acc);
			if (t) {
				const decimals = mintDecimals(current(t.mint)) ?? 0;
				const isNative = Buffer.from(acc.data).readUInt32LE(109) === 1;
				return {
					...base,
					data: {
						parsed: { info: { isNative, mint: t.mint.toBase58(), owner: t.owner.toBase58(), state: "initialized", tokenAmount: uiTokenAmount(t.amount, decimals) }, type: "account" },
						program: acc.owner.equals(TOKEN_2022_PROGRAM_ID) ? "spl-token-2022" : "spl-token",
						space: acc.data.length,
					},
				};
			}
		}
		void address;
		if (encoding === "base58") return { ...base, data: [base58Encode(acc.data), "base58"] };
		return { ...base, data: [Buffer.from(acc.data).toString("base64"), "base64"] };
	};

	const decodeWire = (text: string, encoding: string): Uint8Array => {
		if (encoding === "base64") return Buffer.from(text, "base64");
		if (encoding === "base58") return base58Decode(text);
		throw invalidParams(`unsupported encoding: ${encoding}. Supported encodings: base58, base64`);
	};

	const getBlock = (slot: number, cfg: Cfg) => {
		const commitment = commitmentOf(cfg);
		atLeastConfirmed(commitment);
		const encoding = (cfg?.encoding as string | undefined) ?? "json";
		if (!["json", "base64", "base58"].includes(encoding)) throw invalidParams(`encoding ${encoding} is not supported by this test node`);
		const details = (cfg?.transactionDetails as string | undefined) ?? "full";
		const rewards = (cfg?.rewards as boolean | undefined) ?? true;
		const max = cfg?.maxSupportedTransactionVersion as number | undefined;
		const block = bySlot.get(slot);
		// agave: at or below the root a missing block is "skipped"; above it only confirmed ancestors are served.
		if (slot <= finalizedSlot) {
			if (!block) throw new RpcError(-32007, `Slot ${slot} was skipped, or missing due to ledger jump to recent snapshot`);
		} else if (commitment !== "confirmed" || !block) {
			throw new RpcError(-32004, `Block not available for slot ${slot}`);
		}
		const b = block!;
		const out: Record<string, unknown> = { blockHeight: b.blockHeight, blockTime: b.blockTime, blockhash: b.blockhash, parentSlot: b.parentSlot, previousBlockhash: b.previousBlockhash };
		if (rewards) out.rewards = [];
		if (details === "full") {
			for (const r of b.txs) checkVersion(r, max);
			out.transactions = b.txs.map(r => ({ meta: encodeMeta(r), transaction: encodeTx(r, encoding), ...(max !== undefined ? { version: versionOf(r) } : {}) }));
		} else if (details === "signatures") {
			out.signatures = b.txs.map(r => r.signature);
		} else if (details === "accounts") {
			for (const r of b.txs) checkVersion(r, max);
			out.transactions = b.txs.map(r => {
				const m = r.tx.message;
				return {
					meta: { err: r.err, fee: r.fee, postBalances: r.postBalances, postTokenBalances: tokenBalancesOut(r.postTokenBalances), preBalances: r.preBalances, preTokenBalances: tokenBalancesOut(r.preTokenBalances), status: r.err ? { Err: r.err } : { Ok: null } },
					transaction: {
						accountKeys: m.staticAccountKeys.map((k, i) => ({ pubkey: k.toBase58(), signer: m.isAccountSigner(i), source: "transaction", writable: m.isAccountWritable(i) })),
						signatures: r.tx.signatures.map(s => base58Encode(s)),
					},
					...(max !== undefined ? { version: versionOf(r) } : {}),
				};
			});
		} else if (details !== "none") {
			throw invalidParams("Invalid params: unknown variant");
		}
		return out;
	};

	const getBlocks = (start: number, end: number | undefined, cfg: Cfg, limit?: number) => {
		const commitment = commitmentOf(cfg);
		atLeastConfirmed(commitment);
		const head = headFor(commitment).slot;
		const last = Math.min(end ?? start + 500_000, head);
		const out: number[] = [];
		for (const b of chain) {
			if (b.slot < start || b.slot > last) continue;
			if (limit !== undefined && out.length >= limit) break;
			out.push(b.slot);
		}
		return out;
	};

	/**
	 * What sendTransaction does with a transaction (a test control): executes it ("normal"), keeps it
	 * without executing it ("withhold": accepted, a signature answered, never in a block until
	 * released: a leader that drops it), or refuses it ("refuse": an RPC error, as a node behind).
	 */
	let sendMode: "normal" | "withhold" | "refuse" = "normal";
	const withheld = new Map<string, Uint8Array>();

	const methods: Record<string, (params: unknown[]) => unknown> = {
		getHealth: () => "ok",
		getVersion: () => ({ "feature-set": 3294202862, "solana-core": API_VERSION }),
		getGenesisHash: () => genesisHash,
		getSlot: p => headFor(commitmentOf(p[0] as Cfg)).slot,
		getBlockHeight: p => headFor(commitmentOf(p[0] as Cfg)).blockHeight,
		getEpochInfo: p => {
			const head = headFor(commitmentOf(p[0] as Cfg));
			let count = 0;
			for (const b of chain) if (b.slot <= head.slot) count += b.txs.length;
			return { absoluteSlot: head.slot, blockHeight: head.blockHeight, epoch: Math.floor(head.slot / SLOTS_PER_EPOCH), slotIndex: head.slot % SLOTS_PER_EPOCH, slotsInEpoch: SLOTS_PER_EPOCH, transactionCount: count };
		},
		getLatestBlockhash: p => {
			const c = commitmentOf(p[0] as Cfg);
			const head = headFor(c);
			return { context: ctx(c), value: { blockhash: head.blockhash, lastValidBlockHeight: head.blockHeight + MAX_PROCESSING_AGE } };
		},
		isBlockhashValid: p => {
			const c = commitmentOf(p[1] as Cfg);
			return { context: ctx(c), value: blockhashValid(String(p[0]), headFor(c)) };
		},
		getBlock: p => getBlock(Number(p[0]), typeof p[1] === "string" ? { encoding: p[1] } : (p[1] as Cfg)),
		getBlocks: p => {
			const end = typeof p[1] === "number" ? p[1] : undefined;
			const cfg = (typeof p[1] === "object" && p[1] !== null ? p[1] : p[2]) as Cfg;
			return getBlocks(Number(p[0]), end, cfg);
		},
		getBlocksWithLimit: p => {
			const limit = Number(p[1]);
			if (limit > 500_000) throw invalidParams("Limit too large; max 500000");
			return getBlocks(Number(p[0]), undefined, p[2] as Cfg, limit);
		},
		getBlockTime: p => {
			const slot = Number(p[0]);
			const b = bySlot.get(slot);
			if (slot <= finalizedSlot && !b) throw new RpcError(-32007, `Slot ${slot} was skipped, or missing due to ledger jump to recent snapshot`);
			if (!b) throw new RpcError(-32004, `Block not available for slot ${slot}`);
			return b.blockTime;
		},
		getBalance: p => {
			const c = commitmentOf(p[1] as Cfg);
			return { context: ctx(c), value: BigInt(accountAt(pubkey(p[0]), c)?.lamports ?? 0) };
		},
		getAccountInfo: p => {
			const cfg = p[1] as Cfg;
			const c = commitmentOf(cfg);
			const address = pubkey(p[0]);
			return { context: ctx(c), value: encodeAccount(accountAt(address, c), (cfg?.encoding as string) ?? "base58", address) };
		},
		getMultipleAccounts: p => {
			const cfg = p[1] as Cfg;
			const c = commitmentOf(cfg);
			const list = (p[0] as unknown[]).map(pubkey);
			if (list.length > 100) throw invalidParams("Too many inputs provided; max 100");
			return { context: ctx(c), value: list.map(a => encodeAccount(accountAt(a, c), (cfg?.encoding as string) ?? "base64", a)) };
		},
		getTokenAccountsByOwner: p => {
			const owner = pubkey(p[0]);
			const filter = p[1] as { mint?: string; programId?: string };
			const cfg = p[2] as Cfg;
			const c = commitmentOf(cfg);
			const value: Array<{ account: unknown; pubkey: string }> = [];
			for (const key of known) {
				const address = new PublicKey(key);
				const acc = accountAt(address, c);
				const t = parseTokenAccount(acc);
				if (!t || !t.owner.equals(owner)) continue;
				if (filter?.mint && t.mint.toBase58() !== filter.mint) continue;
				if (filter?.programId && acc!.owner.toBase58() !== filter.programId) continue;
				value.push({ account: encodeAccount(acc, (cfg?.encoding as string) ?? "base64", address), pubkey: key });
			}
			return { context: ctx(c), value };
		},
		getTokenAccountBalance: p => {
			const c = commitmentOf(p[1] as Cfg);
			const t = parseTokenAccount(accountAt(pubkey(p[0]), c));
			if (!t) throw invalidParams("Invalid param: not a Token account");
			return { context: ctx(c), value: uiTokenAmount(t.amount, mintDecimals(current(t.mint)) ?? 0) };
		},
		getMinimumBalanceForRentExemption: p => svm.minimumBalanceForRentExemption(BigInt(Number(p[0] ?? 0))),
		getFeeForMessage: p => {
			const c = commitmentOf(p[1] as Cfg);
			const msg = VersionedMessage.deserialize(Buffer.from(String(p[0]), "base64"));
			if (!blockhashValid(msg.recentBlockhash, headFor(c))) return { context: ctx(c), value: null };
			return { context: ctx(c), value: feeFor(msg) };
		},
		getSignatureStatuses: p => {
			const list = p[0] as string[];
			if (list.length > 256) throw invalidParams("Too many inputs provided; max 256");
			return {
				context: ctx("processed"),
				value: list.map(s => {
					const r = signatures.get(s);
					return r ? statusOf(r) : null;
				}),
			};
		},
		getTransaction: p => {
			const cfg = (typeof p[1] === "string" ? { encoding: p[1] } : p[1]) as Cfg;
			const c = commitmentOf(cfg);
			atLeastConfirmed(c);
			const r = signatures.get(String(p[0]));
			if (!r || r.slot === null || (c === "finalized" && r.slot > finalizedSlot)) return null;
			const max = cfg?.maxSupportedTransactionVersion as number | undefined;
			checkVersion(r, max);
			return {
				blockTime: bySlot.get(r.slot)!.blockTime,
				meta: encodeMeta(r),
				slot: r.slot,
				transaction: encodeTx(r, (cfg?.encoding as string) ?? "json"),
				...(max !== undefined ? { version: versionOf(r) } : {}),
			};
		},
		sendTransaction: p => {
			const cfg = p[1] as Cfg;
			const raw = decodeWire(String(p[0]), (cfg?.encoding as string) ?? "base58");
			if (sendMode === "refuse") throw new RpcError(-32005, "Node is behind by 42 slots", { numSlotsBehind: 42 });
			if (sendMode === "withhold") {
				// Accepted, never forwarded to a leader (until released): what a congested cluster does to a transaction.
				const signature = base58Encode(VersionedTransaction.deserialize(raw).signatures[0]);
				if (!signatures.has(signature)) withheld.set(signature, raw);
				return signature;
			}
			if (!cfg?.skipPreflight) {
				let tx: VersionedTransaction;
				try {
					tx = VersionedTransaction.deserialize(raw);
				} catch (e) {
					throw invalidParams(`failed to deserialize VersionedTransaction: ${(e as Error).message}`);
				}
				if (!verifySignatures(tx)) throw new RpcError(-32003, "Transaction signature verification failure");
				const sim = simulate(tx, false, false);
				if (sim.err !== null) {
					throw new RpcError(-32002, `Transaction simulation failed: ${txErrorText(sim.err)}`, {
						accounts: null,
						err: sim.err,
						innerInstructions: null,
						loadedAccountsDataSize: 0,
						logs: sim.logs,
						replacementBlockhash: null,
						returnData: null,
						unitsConsumed: sim.units,
					});
				}
			}
			return submit(raw);
		},
		simulateTransaction: p => {
			const cfg = p[1] as Cfg;
			const raw = decodeWire(String(p[0]), (cfg?.encoding as string) ?? "base58");
			const tx = VersionedTransaction.deserialize(raw);
			const sigVerify = !!cfg?.sigVerify;
			const replace = !!cfg?.replaceRecentBlockhash;
			if (sigVerify && replace) throw invalidParams("sigVerify may not be used with replaceRecentBlockhash");
			const sim = simulate(tx, sigVerify, replace);
			return {
				context: ctx(commitmentOf(cfg)),
				value: { accounts: null, err: sim.err, innerInstructions: null, loadedAccountsDataSize: 0, logs: sim.logs, replacementBlockhash: sim.replacement, returnData: null, unitsConsumed: sim.units },
			};
		},
		getSignaturesForAddress: p => {
			const address = pubkey(p[0]).toBase58();
			const cfg = p[1] as Cfg;
			const c = commitmentOf(cfg);
			atLeastConfirmed(c);
			const limit = cfg?.limit === undefined ? 1000 : Number(cfg.limit);
			if (!(limit >= 1 && limit <= 1000)) throw invalidParams("Invalid limit; max 1000");
			const head = headFor(c).slot;
			// Newest first: by slot, and within a block from its last transaction to its first.
			const found: Array<{ r: TxRecord; block: Block }> = [];
			for (const block of chain) {
				if (block.slot > head) break;
				for (const r of block.txs) if (r.tx.message.staticAccountKeys.some(k => k.toBase58() === address)) found.push({ r, block });
			}
			found.reverse();
			let start = 0;
			if (cfg?.before) {
				const i = found.findIndex(f => f.r.signature === cfg.before);
				start = i < 0 ? found.length : i + 1;
			}
			const out: unknown[] = [];
			for (const { r, block } of found.slice(start)) {
				if (cfg?.until && r.signature === cfg.until) break;
				if (out.length >= limit) break;
				out.push({ blockTime: block.blockTime, confirmationStatus: block.slot <= finalizedSlot ? "finalized" : "confirmed", err: r.err, memo: null, signature: r.signature, slot: block.slot });
			}
			return out;
		},
		requestAirdrop: p => airdrop(pubkey(p[0]), BigInt(Number(p[1]))),
	};

	/** Fee of a message: 5000 lamports per signature plus the priority fee its compute-budget instructions set. */
	const feeFor = (msg: VersionedMessage): bigint => {
		const budget = new PublicKey("ComputeBudget111111111111111111111111111111");
		let price = 0n;
		let limit: bigint | null = null;
		let others = 0n;
		for (const ix of msg.compiledInstructions) {
			if (!msg.staticAccountKeys[ix.programIdIndex].equals(budget)) {
				others++;
				continue;
			}
			const d = Buffer.from(ix.data);
			if (d[0] === 2) limit = BigInt(d.readUInt32LE(1));
			if (d[0] === 3) price = d.readBigUInt64LE(1);
		}
		const units = limit ?? (others * 200_000n > 1_400_000n ? 1_400_000n : others * 200_000n);
		return LAMPORTS_PER_SIGNATURE * BigInt(msg.header.numRequiredSignatures) + (price * units + 999_999n) / 1_000_000n;
	};

	const send = (instructions: TransactionInstruction[], signers: Signer[]): string => {
		const tx = new Transaction({ feePayer: signers[0].publicKey, blockhash: tip().blockhash, lastValidBlockHeight: tip().blockHeight + MAX_PROCESSING_AGE });
		tx.add(...instructions);
		tx.sign(...signers);
		return submit(tx.serialize());
	};
	const airdrop = (to: PublicKey, lamports: bigint) => send([SystemProgram.transfer({ fromPubkey: faucet.publicKey, toPubkey: to, lamports })], [faucet]);

	const createMint = (decimals: number, o: { address?: PublicKey; authority?: PublicKey } = {}): PublicKey => {
		const address = o.address ?? Keypair.generate().publicKey;
		const data = Buffer.alloc(MINT_SIZE);
		MintLayout.encode(
			{ mintAuthorityOption: 1, mintAuthority: o.authority ?? faucet.publicKey, supply: 0n, decimals, isInitialized: true, freezeAuthorityOption: 0, freezeAuthority: PublicKey.default },
			data,
		);
		svm.setAccount(address, { lamports: Number(svm.minimumBalanceForRentExemption(BigInt(MINT_SIZE))), data, owner: TOKEN_PROGRAM_ID, executable: false, rentEpoch: 0 });
		known.add(address.toBase58());
		return address;
	};
	const mintTo = (mint: PublicKey, owner: PublicKey, amount: bigint) => {
		const ata = getAssociatedTokenAddressSync(mint, owner, true, TOKEN_PROGRAM_ID, ASSOCIATED_TOKEN_PROGRAM_ID);
		const signature = send(
			[createAssociatedTokenAccountIdempotentInstruction(faucet.publicKey, ata, owner, mint), createMintToInstruction(mint, ata, faucet.publicKey, amount)],
			[faucet],
		);
		return { signature, ata };
	};

	// ---- Test controls (not Solana methods): the parent process drives the node with these ----------

	const commitmentArg = (v: unknown): Commitment => (v === "processed" || v === "confirmed" || v === "finalized" ? v : "confirmed");
	const controls: Record<string, (p: unknown[]) => unknown> = {
		testNode_produceBlocks: p => {
			let s = lastSlot;
			for (let i = 0; i < Number(p[0] ?? 1); i++) s = produceBlock();
			return s;
		},
		testNode_skipSlots: p => {
			lastSlot += Number(p[0] ?? 1);
			setClock();
			return lastSlot;
		},
		testNode_finalize: p => {
			setFinalized(p[0] === undefined || p[0] === null ? tip().slot : Number(p[0]));
			return finalizedSlot;
		},
		testNode_setFinalizeDistance: p => {
			finalizeDistance = p[0] === null || p[0] === undefined ? null : Number(p[0]);
			finalizeByDistance();
			return finalizedSlot;
		},
		testNode_dropBlock: p => {
			dropBlock(Number(p[0]));
			return tip().slot;
		},
		testNode_settle: () => {
			settle();
			return finalizedSlot;
		},
		testNode_head: p => {
			const b = headFor(commitmentArg(p[0]));
			return { slot: b.slot, blockHeight: b.blockHeight, blockhash: b.blockhash, lastValidBlockHeight: b.blockHeight + MAX_PROCESSING_AGE };
		},
		testNode_lastSlot: () => lastSlot,
		testNode_tokenBalanceOwners: p => {
			tokenBalanceOwners = p[0] !== false;
			return tokenBalanceOwners;
		},
		testNode_hold: () => {
			holding = true;
			return null;
		},
		testNode_release: p => {
			const rate = Number(p[0]);
			if (!(rate > 0)) throw new Error("release: slots per second must be above 0");
			const n = held.length;
			void release(rate);
			return n;
		},
		testNode_held: () => held.map(b => ({ slot: b.slot, transactions: b.txs.length })),
		testNode_blockTimes: () => ({ visible: Object.fromEntries(visibleAt), finalized: Object.fromEntries(finalizedAt) }),
		testNode_airdrop: p => airdrop(pubkey(p[0]), BigInt(String(p[1]))),
		testNode_createMint: p => createMint(Number(p[0]), { address: p[1] ? pubkey(p[1]) : undefined, authority: p[2] ? pubkey(p[2]) : undefined }).toBase58(),
		testNode_mintTo: p => {
			const r = mintTo(pubkey(p[0]), pubkey(p[1]), BigInt(String(p[2])));
			return { signature: r.signature, ata: r.ata.toBase58() };
		},
		testNode_balance: p => String(accountAt(pubkey(p[0]), commitmentArg(p[1]))?.lamports ?? 0),
		testNode_tokenBalance: p => {
			const t = parseTokenAccount(accountAt(pubkey(p[0]), commitmentArg(p[1])));
			return t ? t.amount.toString() : null;
		},
		testNode_status: p => {
			const r = signatures.get(String(p[0]));
			if (!r) return null;
			const st = statusOf(r);
			return { slot: st.slot, confirmationStatus: st.confirmationStatus, err: st.err };
		},
		testNode_autoProduce: p => {
			if (p[0] === null || p[0] === undefined) stopAutoProduce();
			else startAutoProduce(Number(p[0]));
			return null;
		},
		testNode_sendMode: p => {
			const mode = String(p[0]);
			if (mode !== "normal" && mode !== "withhold" && mode !== "refuse") throw invalidParams(`unknown send mode ${mode}`);
			sendMode = mode;
			return null;
		},
		testNode_withheld: () => [...withheld.keys()],
		/** Forwards the withheld transactions (in the order sent): each executes if its blockhash is still valid, else it is gone. Answers those that executed. */
		testNode_releaseWithheld: () => {
			const landed: string[] = [];
			for (const [signature, raw] of withheld) {
				submit(raw);
				if (signatures.has(signature)) landed.push(signature);
			}
			withheld.clear();
			return landed;
		},
		testNode_calls: () => Object.fromEntries(calls),
		testNode_faucet: () => faucet.publicKey.toBase58(),
		testNode_wsClients: () => wss.clients.size,
		testNode_genesisHash: () => genesisHash,
	};
	Object.assign(methods, controls);

	// ---- HTTP ---------------------------------------------------------------------------------

	let timer: NodeJS.Timeout | null = null;

	const handle = (req: { jsonrpc?: string; id?: unknown; method?: string; params?: unknown }) => {
		const id = req.id ?? null;
		const method = String(req.method);
		calls.set(method, (calls.get(method) ?? 0) + 1);
		const fn = methods[method];
		if (!fn) return { jsonrpc: "2.0", error: { code: -32601, message: "Method not found" }, id };
		try {
			return { jsonrpc: "2.0", result: fn(Array.isArray(req.params) ? req.params : []), id };
		} catch (e) {
			if (e instanceof RpcError) return { jsonrpc: "2.0", error: { code: e.code, message: e.message, ...(e.data !== undefined ? { data: e.data } : {}) }, id };
			return { jsonrpc: "2.0", error: { code: -32603, message: `Internal error: ${(e as Error).message}` }, id };
		}
	};

	const server = http.createServer((req, res) => {
		const chunks: Buffer[] = [];
		req.on("data", c => chunks.push(c));
		req.on("end", () => {
			let body: unknown;
			try {
				body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
			} catch {
				res.writeHead(200, { "content-type": "application/json" });
				res.end(toJson({ jsonrpc: "2.0", error: { code: -32700, message: "Parse error" }, id: null }));
				return;
			}
			const out = Array.isArray(body) ? body.map(handle) : handle(body as never);
			res.writeHead(200, { "content-type": "application/json" });
			res.end(toJson(out));
		});
	});
	await new Promise<void>(resolve => server.listen(0, "127.0.0.1", () => resolve()));
	const port = (server.address() as AddressInfo).port;

	// PubSub on the same port (agave serves it on port + 1: give web3.js `wsEndpoint`): the
	// subscriptions web3.js's confirmTransaction and onSlotChange / onRootChange use.
	const wss = new WebSocket.Server({ server });
	wss.on("connection", ws => {
		ws.on("message", data => {
			let req: { id?: unknown; method?: string; params?: unknown[] };
			try {
				req = JSON.parse(String(data));
			} catch {
				return;
			}
			if (req.id === undefined || req.id === null) return; // web3.js's "ping" notifications
			const params = Array.isArray(req.params) ? req.params : [];
			const reply = (result: unknown) => ws.send(toJson({ jsonrpc: "2.0", result, id: req.id }));
			const method = String(req.method);
			calls.set(method, (calls.get(method) ?? 0) + 1);
			if (method === "signatureSubscribe" || method === "slotSubscribe" || method === "rootSubscribe") {
				const id = nextSubscription++;
				const cfg = params[1] as Cfg;
				subscriptions.set(id, { ws, method, signature: method === "signatureSubscribe" ? String(params[0]) : undefined, commitment: method === "signatureSubscribe" ? commitmentOf(cfg) : "processed" });
				reply(id);
				notify();
			} else if (method === "signatureUnsubscribe" || method === "slotUnsubscribe" || method === "rootUnsubscribe") {
				reply(subscriptions.delete(Number(params[0])));
			} else {
				ws.send(toJson({ jsonrpc: "2.0", error: { code: -32601, message: "Method not found" }, id: req.id }));
			}
		});
		ws.on("close", () => {
			for (const [id, sub] of subscriptions) if (sub.ws === ws) subscriptions.delete(id);
		});
	});

	const stopAutoProduce = () => {
		if (timer) clearInterval(timer);
		timer = null;
	};
	const startAutoProduce = (ms: number) => {
		if (timer) clearInterval(timer);
		timer = setInterval(() => produceBlock(), ms);
		timer.unref();
	};
	if (opts.autoProduceMs) startAutoProduce(opts.autoProduceMs);

	return {
		url: `http://127.0.0.1:${port}`,
		wsUrl: `ws://127.0.0.1:${port}`,
		port,
		svm,
		faucet,
		genesisHash,
		calls,
		produceBlock,
		produceBlocks: n => {
			let s = lastSlot;
			for (let i = 0; i < n; i++) s = produceBlock();
			return s;
		},
		skipSlots: (n = 1) => {
			lastSlot += n;
			setClock();
		},
		finalize: slot => setFinalized(slot ?? tip().slot),
		setFinalizeDistance: d => {
			finalizeDistance = d;
			finalizeByDistance();
		},
		dropBlock,
		settle,
		head: (c = "confirmed") => {
			const b = headFor(c);
			return { slot: b.slot, blockHeight: b.blockHeight, blockhash: b.blockhash };
		},
		latestBlockhash: (c = "confirmed") => {
			const b = headFor(c);
			return { blockhash: b.blockhash, lastValidBlockHeight: b.blockHeight + MAX_PROCESSING_AGE };
		},
		submit,
		send,
		airdrop,
		createMint,
		mintTo,
		balance: (a, c = "processed") => BigInt(accountAt(a, c)?.lamports ?? 0),
		tokenBalance: (a, c = "processed") => parseTokenAccount(accountAt(a, c))?.amount ?? null,
		status: s => {
			const r = signatures.get(s);
			if (!r) return null;
			const st = statusOf(r);
			return { slot: st.slot, confirmationStatus: st.confirmationStatus, err: st.err };
		},
		stopAutoProduce,
		startAutoProduce,
		stop: async () => {
			if (timer) clearInterval(timer);
			if (releaseTimer) clearInterval(releaseTimer);
			timer = null;
			for (const c of wss.clients) c.terminate();
			wss.close();
			server.closeAllConnections();
			await new Promise<void>(resolve => server.close(() => resolve()));
		},
	};
}

/**
 * Run as a child process (test/helpers/solana-node.ts): options as JSON in argv[2]; prints the URL;
 * exits when the parent's end of stdin closes (the parent stopped, or died).
 */
if (require.main === module) {
	void (async () => {
		const options = JSON.parse(process.argv[2] ?? "{}") as { finalizeDistance?: number | null; autoProduceMs?: number; faucetLamports?: string };
		const facade = await startSolanaFacade({ ...options, faucetLamports: options.faucetLamports ? BigInt(options.faucetLamports) : undefined });
		process.stdin.on("end", () => process.exit(0));
		process.stdin.on("error", () => process.exit(0));
		process.stdin.resume();
		process.stdout.write(`SOLANA_NODE_URL=${facade.url}\n`);
	})();
}
