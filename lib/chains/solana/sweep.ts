/**
 * The chain-facing half of the Solana sweeper (docs/withdrawals.md "Solana sweeps"): fee maths,
 * transaction sizes and batching, and the signed transactions that move SOL and SPL tokens from
 * deposit addresses. No RPC and no database: the caller passes balances and a recent blockhash,
 * records what is returned (signature, bytes, `lastValidBlockHeight`) and sends it after.
 *
 * - SOL: each deposit sends its whole balance; the largest one also pays the fee (5,000 lamports
 *   a signature), so every deposit ends at exactly 0. Solana refuses a fee payer left between 0
 *   and the rent-exempt minimum, so a batch whose largest deposit holds less than that minimum
 *   plus the fee is refused (`SweepRefused` "dust").
 * - Tokens: the sweeper wallet pays the fee (and the rent of the destination's associated token
 *   account when it has to be created); each deposit signs as its token account's owner, sends the
 *   whole balance, and its token account is closed with the rent going to the sweeper wallet.
 * - A withdrawal request is paid exactly: `amount` to the payee, the rest stays where it was.
 * - Several deposits per transaction, as many as Solana's 1,232-byte limit allows
 *   (`maxSolDepositsPerTransaction`, `maxTokenDepositsPerTransaction`: computed by building).
 * - A transaction is valid until its blockhash expires (`lastValidBlockHeight`); `sendVerdict`
 *   says when one that never landed is proven dead and may be replaced.
 *
 * Amounts are bigint lamports and token base units. Keys are bytes (the 32-byte ed25519 seed the
 * codec derives, or a 64-byte secret key) and never appear in a message or a log.
 */
import {
	ACCOUNT_SIZE, TOKEN_PROGRAM_ID, createAssociatedTokenAccountIdempotentInstruction, createCloseAccountInstruction,
	createTransferCheckedInstruction, getAssociatedTokenAddressSync,
} from "@solana/spl-token";
import { Keypair, PublicKey, SystemProgram, Transaction, type TransactionInstruction } from "@solana/web3.js";
import { encodeBase58 } from "ethers";

/** The base fee of one signature (every cluster since launch; priority fees are not used). */
export const LAMPORTS_PER_SIGNATURE = 5000n;
/** The most bytes a serialized transaction may have (an IPv6 packet less headers: PACKET_DATA_SIZE). */
export const MAX_TRANSACTION_SIZE = 1232;
/** Lamports per byte-year, rent-exempt after 2 years, 128 bytes of account overhead (the runtime's default Rent). */
const RENT_LAMPORTS_PER_BYTE_YEAR = 3480n;
const RENT_EXEMPTION_YEARS = 2n;
const ACCOUNT_STORAGE_OVERHEAD = 128n;

/** The least an account with `dataLength` bytes holds to exist (890,880 lamports with no data; 2,039,280 for a token account). */
export function rentExemptMinimum(dataLength: number | bigint): bigint {
	return (ACCOUNT_STORAGE_OVERHEAD + BigInt(dataLength)) * RENT_LAMPORTS_PER_BYTE_YEAR * RENT_EXEMPTION_YEARS;
}

export const SYSTEM_ACCOUNT_RENT_EXEMPT = rentExemptMinimum(0);
export const TOKEN_ACCOUNT_RENT_EXEMPT = rentExemptMinimum(ACCOUNT_SIZE);

/** What a transaction with `signatures` signatures pays in fees. */
export function feeFor(signatures: number): bigint {
	if (!Number.isSafeInteger(signatures) || signatures < 1) throw new RangeError("solana-sweep: a transaction has at least one signature");
	return BigInt(signatures) * LAMPORTS_PER_SIGNATURE;
}

/** Why a sweep or payment was not built: the caller waits or picks other funds instead of failing. */
export class SweepRefused extends Error {
	constructor(
		readonly reason: "dust" | "rent" | "size",
		message: string,
	) {
		super(message);
		this.name = "SweepRefused";
	}
}

/** The blockhash a transaction is signed over and the last block height it may land in (getLatestBlockhash). */
export interface Blockhash {
	blockhash: string;
	lastValidBlockHeight: bigint | number;
}

export interface SignedSolanaTx {
	/** The first signature, base58: the transaction's id (getSignatureStatuses, getTransaction). */
	signature: string;
	/** The signed transaction, base64: what sendTransaction sends, as many times as needed until it expires. */
	serialized: string;
	/** Its size in bytes (≤ MAX_TRANSACTION_SIZE). */
	size: number;
	feePayer: string;
	recentBlockhash: string;
	lastValidBlockHeight: bigint;
	/** Fee charged to the fee payer: signatures × 5,000 lamports. */
	feeLamports: bigint;
}

/** A deposit address holding SOL, with its key (derived on demand: lib/chains/solana codec). */
export interface SolDeposit {
	address: string;
	key: Uint8Array;
	/** Its whole balance now (getBalance). */
	lamports: bigint;
}

export interface SolSweep extends SignedSolanaTx {
	/** Lamports each deposit sends (same order as given): its balance, less the fee for the fee payer. */
	amounts: bigint[];
	/** Σ amounts: what the destination receives. */
	outputLamports: bigint;
	inputsLamports: bigint;
}

/** A deposit owner holding tokens in its token account (its associated token account unless said). */
export interface TokenDeposit {
	owner: string;
	key: Uint8Array;
	/** The token account's whole balance now, in base units. */
	amount: bigint;
	/** The token account swept and closed (default: the owner's associated token account for the mint). */
	tokenAccount?: string;
	/** Lamports the token account holds: what its close returns to the sweeper (default the rent-exempt minimum). */
	tokenAccountLamports?: bigint;
}

export interface TokenSweep extends SignedSolanaTx {
	/** Σ deposits' amounts: what the destination's token account receives. */
	outputAmount: bigint;
	/** The destination's associated token account. */
	destinationTokenAccount: string;
	/** Rent the sweeper puts into the destination's token account when it is created here (0 when it exists). */
	rentPaidLamports: bigint;
	/** Rent the closed deposit token accounts return to the sweeper wallet. */
	rentRecoveredLamports: bigint;
}

// ---------------------------------------------------------------------------------------------
// Keys and addresses
// ---------------------------------------------------------------------------------------------

/** A keypair from a 32-byte seed or a 64-byte secret key (its public half checked); never quotes the key. */
export function keypairFrom(key: Uint8Array, where: string): Keypair {
	if (!(key instanceof Uint8Array) || (key.length !== 32 && key.length !== 64)) throw new Error(`solana-sweep: ${where}: a key is 32 or 64 bytes`);
	try {
		return key.length === 32 ? Keypair.fromSeed(key) : Keypair.fromSecretKey(key);
	} catch {
		throw new Error(`solana-sweep: ${where}: not a valid ed25519 secret key`);
	}
}

function publicKey(address: string, what: string): PublicKey {
	try {
		const key = new PublicKey(address);
		if (key.toBase58() === address && !key.equals(PublicKey.default)) return key;
	} catch {
		// fall through
	}
	throw new Error(`solana-sweep: ${what} ${JSON.stringify(address)} is not a Solana address`);
}

/** The deposit's keypair, checked against its address. */
function ownerKeypair(address: string, key: Uint8Array, where: string): Keypair {
	const pair = keypairFrom(key, where);
	if (!pair.publicKey.equals(publicKey(address, `${where} address`))) throw new Error(`solana-sweep: ${where}: the key given is not the key of ${address}`);
	return pair;
}

function positive(value: unknown, what: string): bigint {
	if (typeof value !== "bigint" || value <= 0n || value >= 1n << 64n) throw new Error(`solana-sweep: ${what} must be a positive bigint below 2^64`);
	return value;
}

/** Where `owner`'s tokens of `mint` live (owners off the curve, e.g. a multisig vault, are allowed). */
export function associatedTokenAccount(owner: string, mint: string, tokenProgramId: PublicKey = TOKEN_PROGRAM_ID): string {
	return getAssociatedTokenAddressSync(publicKey(mint, "mint"), publicKey(owner, "owner"), true, tokenProgramId).toBase58();
}

// ---------------------------------------------------------------------------------------------
// Sizes and batching
// ---------------------------------------------------------------------------------------------

function compactLength(n: number): number {
	return n < 0x80 ? 1 : n < 0x4000 ? 2 : 3;
}

/** The serialized size of `tx` once every signer has signed: signature count, 64 bytes each, the message. */
export function transactionSize(tx: Transaction): number {
	const message = tx.compileMessage();
	const signatures = message.header.numRequiredSignatures;
	return compactLength(signatures) + 64 * signatures + message.serialize().length;
}

/** Distinct stand-in keys (sizes depend only on how many accounts there are, not on which). */
function standIns(n: number, salt: number): PublicKey[] {
	return Array.from({ length: n }, (_, i) => {
		const bytes = new Uint8Array(32);
		bytes[0] = salt;
		bytes[1] = 1 + (i >> 8);
		bytes[2] = i & 0xff;
		return new PublicKey(bytes);
	});
}

const STAND_IN_BLOCKHASH = new PublicKey(new Uint8Array(32).fill(7)).toBase58();

function solSweepTransaction(payer: PublicKey, froms: PublicKey[], to: PublicKey, amounts: bigint[], blockhash: string): Transaction {
	const tx = new Transaction({ feePayer: payer, recentBlockhash: blockhash });
	froms.forEach((from, i) => tx.add(SystemProgram.transfer({ fromPubkey: from, toPubkey: to, lamports: amounts[i] })));
	return tx;
}

function tokenInstructions(p: {
	payer: PublicKey; mint: PublicKey; decimals: number; destinationOwner: PublicKey; destinationAccount: PublicKey; createDestination: boolean;
	sources: Array<{ account: PublicKey; owner: PublicKey; amount: bigint; close: boolean }>; tokenProgramId: PublicKey;
}): TransactionInstruction[] {
	const out: TransactionInstruction[] = [];
	if (p.createDestination) {
		out.push(createAssociatedTokenAccountIdempotentInstruction(p.payer, p.destinationAccount, p.destinationOwner, p.mint, p.tokenProgramId));
	}
	for (const s of p.sources) {
		out.push(createTransferCheckedInstruction(s.account, p.mint, p.destinationAccount, s.owner, s.amount, p.decimals, [], p.tokenProgramId));
		// Its rent goes to the sweeper wallet, which paid the fee.
		if (s.close) out.push(createCloseAccountInstruction(s.account, p.payer, s.owner, [], p.tokenProgramId));
	}
	return out;
}

/** The size of a SOL sweep of `deposits` deposits (one of them the fee payer). */
export function solSweepSize(deposits: number): number {
	const keys = standIns(deposits + 1, 1);
	return transactionSize(solSweepTransaction(keys[0], keys.slice(0, deposits), keys[deposits], keys.slice(0, deposits).map(() => 1n), STAND_IN_BLOCKHASH));
}

/** The size of a token sweep of `deposits` deposits paid by the sweeper wallet (with the destination account's creation when asked). */
export function tokenSweepSize(deposits: number, createDestination = true): number {
	const [payer, mint, destinationOwner, destinationAccount] = standIns(4, 2);
	const owners = standIns(deposits, 3);
	const accounts = standIns(deposits, 4);
	const tx = new Transaction({ feePayer: payer, recentBlockhash: STAND_IN_BLOCKHASH });
	tx.add(...tokenInstructions({
		payer, mint, decimals: 6, destinationOwner, destinationAccount, createDestination, tokenProgramId: TOKEN_PROGRAM_ID,
		sources: owners.map((owner, i) => ({ account: accounts[i], owner, amount: 1n, close: true })),
	}));
	return transactionSize(tx);
}

function largestFitting(size: (n: number) => number): number {
	let n = 0;
	while (size(n + 1) <= MAX_TRANSACTION_SIZE) n++;
	return n;
}

let maxSol: number | undefined;
const maxToken = new Map<boolean, number>();

/** How many SOL deposits one sweep transaction holds: 10 (102 bytes + 113 a deposit ≤ 1,232). */
export function maxSolDepositsPerTransaction(): number {
	return (maxSol ??= largestFitting(solSweepSize));
}

/**
 * How many token deposits one sweep transaction holds: 5 when it also creates the destination's
 * token account (336 bytes + 152 a deposit), 6 when that account exists (230 + 152).
 */
export function maxTokenDepositsPerTransaction(createDestination = true): number {
	let n = maxToken.get(createDestination);
	if (n === undefined) {
		n = largestFitting(k => tokenSweepSize(k, createDestination));
		maxToken.set(createDestination, n);
	}
	return n;
}

/** `items` cut into batches of at most `size`, in order. */
export function batches<T>(items: readonly T[], size: number): T[][] {
	if (!Number.isSafeInteger(size) || size < 1) throw new RangeError("solana-sweep: a batch holds at least one item");
	const out: T[][] = [];
	for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
	return out;
}

// ---------------------------------------------------------------------------------------------
// Signing
// ---------------------------------------------------------------------------------------------

function lastValid(b: Blockhash): bigint {
	const h = typeof b.lastValidBlockHeight === "bigint" ? b.lastValidBlockHeight : BigInt(b.lastValidBlockHeight);
	if (h < 0n) throw new Error("solana-sweep: lastValidBlockHeight must not be negative");
	publicKey(b.blockhash, "blockhash");
	return h;
}

function signed(tx: Transaction, signers: Keypair[], b: Blockhash): SignedSolanaTx {
	const size = transactionSize(tx);
	if (size > MAX_TRANSACTION_SIZE) throw new SweepRefused("size", `solana-sweep: ${size} bytes is over the ${MAX_TRANSACTION_SIZE}-byte limit`);
	tx.sign(...signers);
	// serialize() checks every required signature is there and verifies them.
	const bytes = tx.serialize({ requireAllSignatures: true, verifySignatures: true });
	if (bytes.length !== size) throw new Error(`solana-sweep: signed size ${bytes.length} differs from the computed ${size}`);
	const signatures = tx.compileMessage().header.numRequiredSignatures;
	return {
		signature: encodeBase58(tx.signature!),
		serialized: bytes.toString("base64"),
		size,
		feePayer: tx.feePayer!.toBase58(),
		recentBlockhash: b.blockhash,
		lastValidBlockHeight: lastValid(b),
		feeLamports: feeFor(signatures),
	};
}

function distinct(addresses: string[], what: string): void {
	const seen = new Set<string>();
	for (const a of addresses) {
		if (seen.has(a)) throw new Error(`solana-sweep: ${what} ${a} twice in one transaction`);
		seen.add(a);
	}
}

/**
 * SOL of `deposits` to `destination` in one transaction, every deposit ending at exactly 0: each
 * sends its whole balance, the largest (the fee payer) its balance less the fee. Refused ("dust")
 * when the fee payer would be left between 0 and the rent-exempt minimum after the fee (Solana
 * refuses such a fee payer) or would send nothing; ("size") over the 1,232-byte limit.
 */
export function buildSolSweep(p: Blockhash & { deposits: SolDeposit[]; destination: string }): SolSweep {
	if (!Array.isArray(p.deposits) || p.deposits.length === 0) throw new Error("solana-sweep: a sweep needs at least one deposit");
	const destination = publicKey(p.destination, "destination");
	distinct(p.deposits.map(d => d.address), "deposit");
	const pairs = p.deposits.map((d, i) => ownerKeypair(d.address, d.key, `deposit ${i}`));
	if (pairs.some(k => k.publicKey.equals(destination))) throw new Error("solana-sweep: a deposit cannot be swept to itself");
	const balances = p.deposits.map((d, i) => positive(d.lamports, `deposit ${i} lamports`));
	let payer = 0;
	balances.forEach((b, i) => {
		if (b > balances[payer]) payer = i;
	});
	const fee = feeFor(p.deposits.length);
	const afterFee = balances[payer] - fee;
	if (afterFee < SYSTEM_ACCOUNT_RENT_EXEMPT) {
		throw new SweepRefused("dust", `solana-sweep: the largest deposit holds ${balances[payer]} lamports: not enough for the fee of ${fee} and the rent-exempt minimum of ${SYSTEM_ACCOUNT_RENT_EXEMPT}`);
	}
	const amounts = balances.map((b, i) => (i === payer ? afterFee : b));
	// The fee payer's key is the first: its signature is the transaction's id.
	const tx = solSweepTransaction(pairs[payer].publicKey, pairs.map(k => k.publicKey), destination, amounts, p.blockhash);
	const out = signed(tx, [pairs[payer], ...pairs.filter((_, i) => i !== payer)], p);
	const outputLamports = amounts.reduce((a, b) => a + b, 0n);
	return { ...out, amounts, outputLamports, inputsLamports: outputLamports + fee };
}

export interface TokenParams extends Blockhash {
	/** The sweeper wallet: fee payer, payer of a created account's rent, receiver of closed accounts' rent. */
	sweeperKey: Uint8Array;
	mint: string;
	decimals: number;
	/** Create the destination's associated token account (idempotently) in the same transaction. Default true. */
	createDestinationAccount?: boolean;
	/** Default the SPL Token program (USDC and USDT); Token-2022 mints pass TOKEN_2022_PROGRAM_ID. */
	tokenProgramId?: PublicKey;
}

function tokenSetup(p: TokenParams, destinationOwner: string) {
	if (!Number.isInteger(p.decimals) || p.decimals < 0 || p.decimals > 255) throw new Error("solana-sweep: decimals must be 0..255");
	const sweeper = keypairFrom(p.sweeperKey, "sweeper wallet");
	const mint = publicKey(p.mint, "mint");
	const owner = publicKey(destinationOwner, "destination");
	const tokenProgramId = p.tokenProgramId ?? TOKEN_PROGRAM_ID;
	const destinationAccount = getAssociatedTokenAddressSync(mint, owner, true, tokenProgramId);
	const createDestination = p.createDestinationAccount ?? true;
	return { sweeper, mint, owner, tokenProgramId, destinationAccount, createDestination, rentPaidLamports: createDestination ? TOKEN_ACCOUNT_RENT_EXEMPT : 0n };
}

function tokenSource(d: TokenDeposit, mint: PublicKey, tokenProgramId: PublicKey, where: string) {
	const pair = ownerKeypair(d.owner, d.key, where);
	const account = d.tokenAccount ? publicKey(d.tokenAccount, `${where} token account`) : getAssociatedTokenAddressSync(mint, pair.publicKey, false, tokenProgramId);
	const lamports = d.tokenAccountLamports ?? TOKEN_ACCOUNT_RENT_EXEMPT;
	if (typeof lamports !== "bigint" || lamports < 0n) throw new Error(`solana-sweep: ${where}: tokenAccountLamports must be a bigint >= 0`);
	return { pair, account, amount: positive(d.amount, `${where} amount`), lamports };
}

/**
 * The whole token balance of `deposits` to `destination`'s associated token account (created
 * first when asked, idempotently), each deposit token account closed with its rent to the sweeper
 * wallet, which pays the fee (1 + deposits signatures). The close fails, and the transaction with
 * it (nothing moves; the fee is charged), if more tokens arrived after `amount` was read.
 */
export function buildTokenSweep(p: TokenParams & { deposits: TokenDeposit[]; destination: string }): TokenSweep {
	if (!Array.isArray(p.deposits) || p.deposits.length === 0) throw new Error("solana-sweep: a sweep needs at least one deposit");
	const s = tokenSetup(p, p.destination);
	const sources = p.deposits.map((d, i) => tokenSource(d, s.mint, s.tokenProgramId, `deposit ${i}`));
	distinct(sources.map(x => x.account.toBase58()), "token account");
	if (sources.some(x => x.account.equals(s.destinationAccount))) throw new Error("solana-sweep: a deposit cannot be swept to itself");
	if (sources.some(x => x.pair.publicKey.equals(s.sweeper.publicKey))) throw new Error("solana-sweep: the sweeper wallet is not a deposit");
	const tx = new Transaction({ feePayer: s.sweeper.publicKey, recentBlockhash: p.blockhash });
	tx.add(...tokenInstructions({
		payer: s.sweeper.publicKey, mint: s.mint, decimals: p.decimals, destinationOwner: s.owner, destinationAccount: s.destinationAccount,
		createDestination: s.createDestination, tokenProgramId: s.tokenProgramId,
		sources: sources.map(x => ({ account: x.account, owner: x.pair.publicKey, amount: x.amount, close: true })),
	}));
	const out = signed(tx, [s.sweeper, ...sources.map(x => x.pair)], p);
	return {
		...out,
		outputAmount: sources.reduce((a, x) => a + x.amount, 0n),
		destinationTokenAccount: s.destinationAccount.toBase58(),
		rentPaidLamports: s.rentPaidLamports,
		rentRecoveredLamports: sources.reduce((a, x) => a + x.lamports, 0n),
	};
}

/**
 * A withdrawal request paid in SOL from one deposit: exactly `amount` to `payee`, the deposit
 * paying the fee. What is left stays at the deposit (swept later) and must be 0 or at least the
 * rent-exempt minimum (refused "rent" otherwise). `payeeLamports` (the payee's balance now), when
 * given, refuses a payment that would leave a new payee account below the rent-exempt minimum.
 */
export function buildSolPayment(p: Blockhash & { deposit: SolDeposit; payee: string; amount: bigint; payeeLamports?: bigint }): SignedSolanaTx & { amount: bigint; remainingLamports: bigint } {
	const pair = ownerKeypair(p.deposit.address, p.deposit.key, "deposit");
	const payee = publicKey(p.payee, "payee");
	if (payee.equals(pair.publicKey)) throw new Error("solana-sweep: a deposit cannot pay itself");
	const balance = positive(p.deposit.lamports, "deposit lamports");
	const amount = positive(p.amount, "amount");
	const fee = feeFor(1);
	const remainingLamports = balance - amount - fee;
	if (remainingLamports < 0n) throw new SweepRefused("dust", `solana-sweep: ${balance} lamports do not cover ${amount} and the fee of ${fee}`);
	if (remainingLamports > 0n && remainingLamports < SYSTEM_ACCOUNT_RENT_EXEMPT) {
		throw new SweepRefused("rent", `solana-sweep: the deposit would keep ${remainingLamports} lamports, below the rent-exempt minimum of ${SYSTEM_ACCOUNT_RENT_EXEMPT}`);
	}
	if (p.payeeLamports !== undefined && p.payeeLamports === 0n && amount < SYSTEM_ACCOUNT_RENT_EXEMPT) {
		throw new SweepRefused("rent", `solana-sweep: ${amount} lamports to an empty account is below the rent-exempt minimum of ${SYSTEM_ACCOUNT_RENT_EXEMPT}`);
	}
	const tx = solSweepTransaction(pair.publicKey, [pair.publicKey], payee, [amount], p.blockhash);
	return { ...signed(tx, [pair], p), amount, remainingLamports };
}

/**
 * A withdrawal request paid in tokens from one deposit: exactly `amount` to the payee's associated
 * token account (created first when asked), the sweeper wallet paying the fee. The deposit's token
 * account is closed (rent to the sweeper) when `amount` is its whole balance; otherwise the rest
 * stays there.
 */
export function buildTokenPayment(p: TokenParams & { deposit: TokenDeposit; payee: string; amount: bigint }): TokenSweep & { amount: bigint; remainingAmount: bigint; closed: boolean } {
	const s = tokenSetup(p, p.payee);
	const source = tokenSource(p.deposit, s.mint, s.tokenProgramId, "deposit");
	if (source.account.equals(s.destinationAccount)) throw new Error("solana-sweep: a deposit cannot pay itself");
	const amount = positive(p.amount, "amount");
	if (amount > source.amount) throw new SweepRefused("dust", `solana-sweep: the deposit holds ${source.amount}, less than ${amount}`);
	const closed = amount === source.amount;
	const tx = new Transaction({ feePayer: s.sweeper.publicKey, recentBlockhash: p.blockhash });
	tx.add(...tokenInstructions({
		payer: s.sweeper.publicKey, mint: s.mint, decimals: p.decimals, destinationOwner: s.owner, destinationAccount: s.destinationAccount,
		createDestination: s.createDestination, tokenProgramId: s.tokenProgramId,
		sources: [{ account: source.account, owner: source.pair.publicKey, amount, close: closed }],
	}));
	return {
		...signed(tx, [s.sweeper, source.pair], p),
		outputAmount: amount,
		destinationTokenAccount: s.destinationAccount.toBase58(),
		rentPaidLamports: s.rentPaidLamports,
		rentRecoveredLamports: closed ? source.lamports : 0n,
		amount,
		remainingAmount: source.amount - amount,
		closed,
	};
}

// ---------------------------------------------------------------------------------------------
// Expiry: when a sent transaction may be replaced
// ---------------------------------------------------------------------------------------------

/** One entry of getSignatureStatuses (null: not found). */
export interface SignatureStatusLike {
	err: unknown;
	confirmationStatus?: "processed" | "confirmed" | "finalized" | null;
}

/**
 * What became of a signed transaction, from getSignatureStatuses([signature],
 * { searchTransactionHistory: true }) and the FINALIZED block height read BEFORE it:
 * - "landed": finalized without error (its funds moved);
 * - "failed": finalized with an error (nothing moved but the fee; the same funds may be signed again);
 * - "dead": not found anywhere although the finalized chain is past its lastValidBlockHeight: no
 *   block can include it any more, so the same funds may be signed again over a new blockhash;
 * - "pending": anything else (seen but not finalized, or not seen yet while still valid): send
 *   the same bytes again, never new ones.
 */
export function sendVerdict(p: { status: SignatureStatusLike | null | undefined; finalizedBlockHeight: bigint | number; lastValidBlockHeight: bigint | number }): "landed" | "failed" | "dead" | "pending" {
	const height = BigInt(p.finalizedBlockHeight);
	const lastValidBlockHeight = BigInt(p.lastValidBlockHeight);
	if (p.status) {
		if (p.status.confirmationStatus !== "finalized") return "pending";
		return p.status.err === null || p.status.err === undefined ? "landed" : "failed";
	}
	return height > lastValidBlockHeight ? "dead" : "pending";
}
