/**
 * The chain-facing half of the TON sweeper (docs/withdrawals.md "TON sweeps"): the signed external
 * messages that move TON and jettons out of deposit wallets, the sweeper wallet's batched gas
 * top-ups, exact withdrawal payments, and the expiry verdict. No RPC and no database: the caller
 * passes balances, seqnos and whether a wallet is deployed, records what is returned (the
 * normalized message hash, the BoC, seqno and `validUntil`) and sends it after.
 *
 * - TON: a deposit (wallet v4R2, usually never deployed) signs one external message that carries
 *   its state init (so the same message deploys it) and sends its whole balance to the merchant
 *   with send mode 128 (carry all remaining balance) + 32 (destroy the account if its balance is
 *   zero) + 2 (ignore action errors). Nothing remains: the storage, import, gas and forward fees
 *   are taken from the balance before the message leaves, the message carries the rest, and the
 *   account is deleted (an address with no state, as before the first payment).
 * - Jettons: the sweeper wallet (v5R1: up to 255 messages per external, v4R2 only 4) tops up many
 *   deposits in one transaction; each deposit then sends its jetton wallet a transfer
 *   (op 0x0f8a7ea5) of its whole jetton balance to the merchant, response_destination the sweeper
 *   wallet, with mode 128 + 32 + 2: all the deposit's TON goes with the transfer to pay the jetton
 *   wallets' gas, and what they do not burn comes back to the sweeper as `excesses`.
 * - Withdrawal requests: exactly `amount` (TON, mode 1 + 2: fees paid on top by the sender) or
 *   exactly `amount` jetton units, from any wallet of ours (deposit or sweeper).
 * - Every external message has a seqno and a `validUntil`; `sendVerdict` says when one that was
 *   never accepted is proven dead and its funds may be signed for again.
 *
 * Amounts are bigint nanotons and jetton base units. Keys are bytes (the 32-byte ed25519 seed the
 * codec derives, or a 64-byte secret key) and never appear in a message or a log.
 */
import {
	Address, type Cell, SendMode, beginCell, external, internal, storeMessage, type MessageRelaxed, type StateInit,
} from "@ton/core";
import { keyPairFromSeed } from "@ton/crypto";
import { WalletContractV4, WalletContractV5R1 } from "@ton/ton";

/** Jetton `transfer` (TEP-74). */
export const OP_JETTON_TRANSFER = 0x0f8a7ea5;
/** Jetton `excesses` (TEP-74): what the receiving jetton wallet returns to response_destination. */
export const OP_JETTON_EXCESSES = 0xd53276db;
/** Out actions one transaction may have (config param 24's limit, and wallet v5R1's own check). */
export const MAX_V5R1_MESSAGES = 255;
/** What wallet v4R2 accepts in one external message. */
export const MAX_V4R2_MESSAGES = 4;
/** The largest external message a validator accepts (max_msg_bits / max_msg_cells of config param 43). */
export const MAX_EXTERNAL_BITS = 1 << 21;
export const MAX_EXTERNAL_CELLS = 1 << 13;

/**
 * Fee bounds, measured on @ton/sandbox with its default (mainnet) config (test/lib/chains/ton/
 * sweep.test.ts prints them; docs/withdrawals.md "TON sweeps" gives the figures):
 * - a deposit's first message (deploy + one message, mode 128) costs 0.0054 TON: a TON sweep is
 *   refused below about twice that;
 * - a jetton sweep burns about 0.014 TON of fees in the deposit and the two jetton wallets, and
 *   the reference jetton wallet keeps its fixed 0.01 TON gas figure (and 0.01 TON storage when it
 *   deploys the merchant's jetton wallet): the worst sweep of 20 burned 0.039 TON. It also
 *   bounces a transfer carrying less than forward_ton_amount + 2 x 0.01 + 0.01 + forward fees.
 *   0.05 TON covers both with a margin; the unused part comes back as excesses.
 */
export const TON_SWEEP_MIN_BALANCE = 10_000_000n;
/** What a deposit must hold for its jetton sweep (the top-up sent when it holds nothing). */
export const JETTON_SWEEP_TON = 50_000_000n;
/** TON attached to a jetton withdrawal (mode 1: the wallet pays the forward fee on top); the unused part returns as excesses. */
export const JETTON_TRANSFER_TON = 50_000_000n;
/** A wallet paying a withdrawal keeps this much for its own fees (one message, mode 1). */
export const PAYMENT_FEE_RESERVE = 10_000_000n;
/** What a deposit must hold for a jetton withdrawal (the top-up a request's deposit gets when it holds less). */
export const JETTON_PAYMENT_TON = JETTON_TRANSFER_TON + PAYMENT_FEE_RESERVE;

/** Why a sweep or payment was not built: the caller waits or picks other funds instead of failing. */
export class SweepRefused extends Error {
	constructor(
		readonly reason: "dust" | "gas" | "size",
		message: string,
	) {
		super(message);
		this.name = "SweepRefused";
	}
}

export type WalletVersion = "v4r2" | "v5r1";

/** A wallet of ours that signs: its key, version and state as read from a final masterchain block. */
export interface TonWallet {
	/** 32-byte ed25519 seed (what the codec derives) or 64-byte secret key. */
	key: Uint8Array;
	version: WalletVersion;
	/** Its seqno now (0 when not deployed). */
	seqno: number;
	/** Whether its account is active; if not, the message carries the state init that deploys it. */
	deployed: boolean;
	/** When given, checked against the address the key derives (any form). */
	address?: string;
}

export interface SignedTonMessage {
	/** The normalized external-in message hash (TEP-467), hex: how the transaction is found. */
	hash: string;
	/** The external message BoC, base64: what sendBoc sends, as many times as needed until it expires. */
	boc: string;
	/** The signing wallet, raw `0:<hex>`. */
	wallet: string;
	seqno: number;
	/** Unix seconds: the wallet refuses the message at or after this time. */
	validUntil: number;
	/** The message deploys the wallet (carries its state init). */
	deploys: boolean;
	bits: number;
	cells: number;
}

// ---------------------------------------------------------------------------------------------
// Keys, wallets, addresses
// ---------------------------------------------------------------------------------------------

function secretKey(key: Uint8Array, where: string): { publicKey: Buffer; secretKey: Buffer } {
	if (!(key instanceof Uint8Array) || (key.length !== 32 && key.length !== 64)) throw new Error(`ton-sweep: ${where}: a key is 32 or 64 bytes`);
	// A 64-byte secret key is seed || public key: its public half must be the seed's.
	const pair = keyPairFromSeed(Buffer.from(key.subarray(0, 32)));
	if (key.length === 64 && !pair.publicKey.equals(Buffer.from(key.subarray(32)))) throw new Error(`ton-sweep: ${where}: not a valid ed25519 secret key`);
	return pair;
}

/** The wallet contract for `publicKey` on the basechain (v4R2: wallet id 698983191; v5R1: mainnet id, as wallets create them). */
export function walletContract(publicKey: Buffer, version: WalletVersion): WalletContractV4 | WalletContractV5R1 {
	return version === "v4r2" ? WalletContractV4.create({ workchain: 0, publicKey }) : WalletContractV5R1.create({ workchain: 0, publicKey });
}

/** The address of the wallet `key` controls (raw form). */
export function walletAddress(key: Uint8Array, version: WalletVersion): string {
	return walletContract(secretKey(key, "wallet").publicKey, version).address.toRawString();
}

export function parseAddress(address: string, what: string): { address: Address; bounceable: boolean } {
	try {
		if (Address.isFriendly(address)) {
			const f = Address.parseFriendly(address);
			return { address: f.address, bounceable: f.isBounceable };
		}
		// A raw address says nothing about bouncing: treated as non-bounceable (an uninit wallet keeps what it is sent).
		return { address: Address.parseRaw(address), bounceable: false };
	} catch {
		throw new Error(`ton-sweep: ${what} ${JSON.stringify(address)} is not a TON address`);
	}
}

function opened(w: TonWallet, where: string) {
	const pair = secretKey(w.key, where);
	if (w.version !== "v4r2" && w.version !== "v5r1") throw new Error(`ton-sweep: ${where}: unknown wallet version`);
	if (!Number.isSafeInteger(w.seqno) || w.seqno < 0 || w.seqno >= 2 ** 32) throw new Error(`ton-sweep: ${where}: seqno must be a uint32`);
	if (!w.deployed && w.seqno !== 0) throw new Error(`ton-sweep: ${where}: an undeployed wallet has seqno 0`);
	const contract = walletContract(pair.publicKey, w.version);
	if (w.address !== undefined && !parseAddress(w.address, `${where} address`).address.equals(contract.address)) {
		throw new Error(`ton-sweep: ${where}: the key given is not the key of ${w.address}`);
	}
	return { pair, contract };
}

function positive(value: unknown, what: string): bigint {
	if (typeof value !== "bigint" || value <= 0n || value >= 1n << 120n) throw new Error(`ton-sweep: ${what} must be a positive bigint below 2^120`);
	return value;
}

function validUntilOf(v: unknown): number {
	if (!Number.isSafeInteger(v) || (v as number) <= 0 || (v as number) >= 2 ** 32) throw new Error("ton-sweep: validUntil must be unix seconds (uint32)");
	return v as number;
}

// ---------------------------------------------------------------------------------------------
// Signing
// ---------------------------------------------------------------------------------------------

/**
 * The hash a transaction's inbound external message is found by whatever relayed it (TEP-467):
 * the message with no source, no import fee, no state init and its body in a reference. A
 * resent copy of the same bytes has the same hash; so does a copy a relayer re-wrapped.
 */
export function normalizedHash(message: Cell): string {
	const s = message.beginParse();
	if (s.loadUint(2) !== 2) throw new Error("ton-sweep: not an external-in message");
	s.loadMaybeAddress(); // src (addr_none, or an external address a relayer put there)
	const dest = s.loadAddress();
	s.loadCoins(); // import_fee
	if (s.loadBit()) {
		// init: Maybe (Either StateInit ^StateInit)
		if (s.loadBit()) s.loadRef();
		else {
			// inline StateInit: split_depth, special, code, data, library
			if (s.loadBit()) s.loadUint(5);
			if (s.loadBit()) s.loadUint(2);
			s.loadMaybeRef();
			s.loadMaybeRef();
			s.loadMaybeRef();
		}
	}
	const body = s.loadBit() ? s.loadRef() : s.asCell();
	return beginCell().storeUint(2, 2).storeUint(0, 2).storeAddress(dest).storeCoins(0).storeBit(0).storeBit(1).storeRef(body).endCell().hash().toString("hex");
}

function sign(w: TonWallet, where: string, messages: MessageRelaxed[], sendMode: SendMode, validUntilIn: number): SignedTonMessage {
	const validUntil = validUntilOf(validUntilIn);
	const { pair, contract } = opened(w, where);
	const limit = w.version === "v4r2" ? MAX_V4R2_MESSAGES : MAX_V5R1_MESSAGES;
	if (messages.length === 0 || messages.length > limit) throw new SweepRefused("size", `ton-sweep: wallet ${w.version} sends 1 to ${limit} messages in one external, not ${messages.length}`);
	const body = contract instanceof WalletContractV4
		? contract.createTransfer({ seqno: w.seqno, secretKey: pair.secretKey, messages, sendMode, timeout: validUntil })
		: contract.createTransfer({ seqno: w.seqno, secretKey: pair.secretKey, messages, sendMode, timeout: validUntil });
	const init: StateInit | undefined = w.deployed ? undefined : contract.init;
	const cell = beginCell().store(storeMessage(external({ to: contract.address, init, body }))).endCell();
	let bits = 0;
	let cells = 0;
	const seen = new Set<string>();
	const walk = (c: Cell) => {
		const h = c.hash().toString("hex");
		if (seen.has(h)) return;
		seen.add(h);
		cells++;
		bits += c.bits.length;
		c.refs.forEach(walk);
	};
	walk(cell);
	if (bits > MAX_EXTERNAL_BITS || cells > MAX_EXTERNAL_CELLS) throw new SweepRefused("size", `ton-sweep: ${cells} cells / ${bits} bits is over the external message limit`);
	return {
		hash: normalizedHash(cell),
		boc: cell.toBoc().toString("base64"),
		wallet: contract.address.toRawString(),
		seqno: w.seqno,
		validUntil,
		deploys: !w.deployed,
		bits,
		cells,
	};
}

/** Send modes. IGNORE_ERRORS on every message: an action that fails is skipped instead of undoing the seqno bump (which would leave the message replayable until it expires, paying gas each time); wallet v5R1 refuses externals without it. */
const SWEEP_MODE = SendMode.CARRY_ALL_REMAINING_BALANCE | SendMode.DESTROY_ACCOUNT_IF_ZERO | SendMode.IGNORE_ERRORS;
const EXACT_MODE = SendMode.PAY_GAS_SEPARATELY | SendMode.IGNORE_ERRORS;

// ---------------------------------------------------------------------------------------------
// TON
// ---------------------------------------------------------------------------------------------

export interface TonDeposit extends Omit<TonWallet, "version"> {
	/** Its whole balance now, nanotons. */
	balance: bigint;
}

/**
 * The whole balance of one deposit (wallet v4R2) to `destination` (bounce as its user-friendly
 * form says; raw: non-bounceable). Deploys the wallet if it is not, and destroys it after: the
 * merchant receives the balance less the storage, import, gas and forward fees of this one
 * transaction, and the account is deleted with nothing left. Refused ("dust") below
 * TON_SWEEP_MIN_BALANCE, where the fees would eat a large part of it.
 *
 * A destroyed wallet that is paid again is redeployed by its next sweep with seqno 0 again, so
 * this message stays acceptable until `validUntil` if the deposit is paid again before then (it
 * would send that balance to the same merchant): keep `validUntil` short and sweep a deposit
 * again only after the previous message has landed AND its `validUntil` has passed.
 */
export function buildTonSweep(p: { deposit: TonDeposit; destination: string; validUntil: number }): SignedTonMessage & { balance: bigint } {
	const balance = positive(p.deposit.balance, "deposit balance");
	if (balance < TON_SWEEP_MIN_BALANCE) throw new SweepRefused("dust", `ton-sweep: the deposit holds ${balance} nanotons, below the ${TON_SWEEP_MIN_BALANCE} a sweep is worth`);
	const dest = parseAddress(p.destination, "destination");
	const self = walletAddress(p.deposit.key, "v4r2");
	if (dest.address.toRawString() === self) throw new Error("ton-sweep: a deposit cannot be swept to itself");
	// value 0: with mode 128 the message carries whatever is left after this transaction's fees.
	const message = internal({ to: dest.address, value: 0n, bounce: dest.bounceable });
	return { ...sign({ ...p.deposit, version: "v4r2" }, "deposit", [message], SWEEP_MODE, p.validUntil), balance };
}

/**
 * Exactly `amount` nanotons from one of our wallets to `payee`, fees paid on top by the wallet
 * (mode 1). Refused ("dust") when `balance` does not cover the amount and PAYMENT_FEE_RESERVE.
 */
export function buildTonPayment(p: { wallet: TonWallet; balance: bigint; payee: string; amount: bigint; validUntil: number }): SignedTonMessage & { amount: bigint } {
	const amount = positive(p.amount, "amount");
	const balance = p.balance;
	if (typeof balance !== "bigint" || balance < 0n) throw new Error("ton-sweep: balance must be a bigint >= 0");
	if (balance < amount + PAYMENT_FEE_RESERVE) throw new SweepRefused("dust", `ton-sweep: ${balance} nanotons do not cover ${amount} and the fee reserve of ${PAYMENT_FEE_RESERVE}`);
	const payee = parseAddress(p.payee, "payee");
	if (payee.address.toRawString() === walletAddress(p.wallet.key, p.wallet.version)) throw new Error("ton-sweep: a wallet cannot pay itself");
	const message = internal({ to: payee.address, value: amount, bounce: payee.bounceable });
	return { ...sign(p.wallet, "wallet", [message], EXACT_MODE, p.validUntil), amount };
}

// ---------------------------------------------------------------------------------------------
// Jettons
// ---------------------------------------------------------------------------------------------

/**
 * The jetton `transfer` body (TEP-74). forward_ton_amount 0 by default: no transfer_notification
 * to the merchant's wallet (nothing there needs to react), so no extra message and its fees; a
 * caller paying an address that needs the notification (an exchange deposit address) passes 1.
 */
export function jettonTransferBody(p: { amount: bigint; destination: Address; responseDestination: Address; forwardTonAmount?: bigint; queryId?: bigint }): Cell {
	const forward = p.forwardTonAmount ?? 0n;
	if (typeof forward !== "bigint" || forward < 0n) throw new Error("ton-sweep: forwardTonAmount must be a bigint >= 0");
	return beginCell()
		.storeUint(OP_JETTON_TRANSFER, 32)
		.storeUint(p.queryId ?? 0n, 64)
		.storeCoins(p.amount)
		.storeAddress(p.destination)
		.storeAddress(p.responseDestination)
		.storeBit(0) // no custom_payload
		.storeCoins(forward)
		.storeBit(0) // forward_payload inline, empty
		.endCell();
}

export interface JettonDeposit extends Omit<TonWallet, "version"> {
	/** The deposit's jetton wallet: get_wallet_address(deposit) on the TRUSTED jetton master. */
	jettonWallet: string;
	/** Its whole jetton balance now, base units. */
	jettonAmount: bigint;
	/** The deposit's TON balance now (top-up included), nanotons. */
	tonBalance: bigint;
}

/**
 * The sweeper wallet's gas top-ups: `amount` nanotons to each deposit, all in one external
 * message (one transaction). Wallet v5R1: up to 255 (`maxTopUpsPerMessage`). Non-bounceable: the
 * deposits are usually undeployed and must keep what they are sent. Mode 1 + 2: each deposit
 * gets exactly `amount`; a message the wallet cannot pay is skipped (v5R1 demands IGNORE_ERRORS),
 * so the caller checks each deposit's balance before signing its sweep.
 */
export function buildTopUps(p: { sweeper: TonWallet; deposits: Array<{ address: string; amount?: bigint }>; validUntil: number }): SignedTonMessage & { total: bigint; amounts: bigint[] } {
	if (!Array.isArray(p.deposits) || p.deposits.length === 0) throw new Error("ton-sweep: top-ups need at least one deposit");
	const sweeper = walletAddress(p.sweeper.key, p.sweeper.version);
	const seen = new Set<string>();
	const amounts: bigint[] = [];
	const messages = p.deposits.map((d, i) => {
		const to = parseAddress(d.address, `deposit ${i}`).address;
		const raw = to.toRawString();
		if (raw === sweeper) throw new Error("ton-sweep: the sweeper wallet is not a deposit");
		if (seen.has(raw)) throw new Error(`ton-sweep: deposit ${raw} twice in one top-up`);
		seen.add(raw);
		const amount = positive(d.amount ?? JETTON_SWEEP_TON, `deposit ${i} top-up`);
		amounts.push(amount);
		return internal({ to, value: amount, bounce: false });
	});
	const total = amounts.reduce((a, b) => a + b, 0n);
	return { ...sign(p.sweeper, "sweeper", messages, EXACT_MODE, p.validUntil), total, amounts };
}

/** How many deposits one top-up message holds for this sweeper wallet version. */
export function maxTopUpsPerMessage(version: WalletVersion): number {
	return version === "v5r1" ? MAX_V5R1_MESSAGES : MAX_V4R2_MESSAGES;
}

/** `items` cut into batches of at most `size`, in order. */
export function batches<T>(items: readonly T[], size: number): T[][] {
	if (!Number.isSafeInteger(size) || size < 1) throw new RangeError("ton-sweep: a batch holds at least one item");
	const out: T[][] = [];
	for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
	return out;
}

/**
 * The whole jetton balance of one deposit (wallet v4R2, deployed by this message if it is not) to
 * `destination` (the merchant's wallet: the owner, not its jetton wallet). The message to the
 * deposit's jetton wallet uses mode 128 + 32 + 2: it carries all the deposit's TON (the top-up),
 * the deposit wallet is destroyed, and the jetton wallets return what their gas did not use to
 * `responseDestination` (the sweeper wallet) as excesses. Refused ("gas") when the deposit holds
 * less than JETTON_SWEEP_TON: the jetton wallet would bounce the transfer.
 */
export function buildJettonSweep(p: {
	deposit: JettonDeposit; destination: string; responseDestination: string; forwardTonAmount?: bigint; queryId?: bigint; validUntil: number;
}): SignedTonMessage & { jettonAmount: bigint; tonSent: bigint } {
	const jettonAmount = positive(p.deposit.jettonAmount, "deposit jetton amount");
	const ton = p.deposit.tonBalance;
	if (typeof ton !== "bigint" || ton < 0n) throw new Error("ton-sweep: tonBalance must be a bigint >= 0");
	if (ton < JETTON_SWEEP_TON) throw new SweepRefused("gas", `ton-sweep: the deposit holds ${ton} nanotons, less than the ${JETTON_SWEEP_TON} its jetton transfer needs: top it up first`);
	const destination = parseAddress(p.destination, "destination").address;
	const response = parseAddress(p.responseDestination, "response destination").address;
	const jettonWallet = parseAddress(p.deposit.jettonWallet, "jetton wallet").address;
	if (destination.toRawString() === walletAddress(p.deposit.key, "v4r2")) throw new Error("ton-sweep: a deposit cannot be swept to itself");
	const body = jettonTransferBody({ amount: jettonAmount, destination, responseDestination: response, forwardTonAmount: p.forwardTonAmount, queryId: p.queryId });
	// Bounceable: a transfer the jetton wallet refuses comes back (to the destroyed deposit's address, which keeps it).
	const message = internal({ to: jettonWallet, value: 0n, bounce: true, body });
	return { ...sign({ ...p.deposit, version: "v4r2" }, "deposit", [message], SWEEP_MODE, p.validUntil), jettonAmount, tonSent: ton };
}

/**
 * Exactly `amount` jetton units from one of our wallets to `payee` (an owner address): a transfer
 * to the wallet's jetton wallet with JETTON_TRANSFER_TON attached (mode 1: the forward fee on
 * top), excesses to `responseDestination` (default: the paying wallet). Refused ("dust") when the
 * jetton balance is short, ("gas") when the TON balance does not cover the attached value.
 */
export function buildJettonPayment(p: {
	wallet: TonWallet; jettonWallet: string; jettonBalance: bigint; tonBalance: bigint; payee: string; amount: bigint;
	responseDestination?: string; forwardTonAmount?: bigint; queryId?: bigint; validUntil: number;
}): SignedTonMessage & { amount: bigint; remainingAmount: bigint } {
	const amount = positive(p.amount, "amount");
	if (typeof p.jettonBalance !== "bigint" || p.jettonBalance < amount) throw new SweepRefused("dust", `ton-sweep: the wallet holds ${p.jettonBalance} jetton units, less than ${amount}`);
	const forward = p.forwardTonAmount ?? 0n;
	if (typeof p.tonBalance !== "bigint" || p.tonBalance < JETTON_TRANSFER_TON + forward + PAYMENT_FEE_RESERVE) {
		throw new SweepRefused("gas", `ton-sweep: the wallet holds ${p.tonBalance} nanotons, less than the transfer's ${JETTON_TRANSFER_TON + forward} and the fee reserve`);
	}
	const self = walletAddress(p.wallet.key, p.wallet.version);
	const payee = parseAddress(p.payee, "payee").address;
	if (payee.toRawString() === self) throw new Error("ton-sweep: a wallet cannot pay itself");
	const response = p.responseDestination === undefined ? Address.parseRaw(self) : parseAddress(p.responseDestination, "response destination").address;
	const body = jettonTransferBody({ amount, destination: payee, responseDestination: response, forwardTonAmount: forward, queryId: p.queryId });
	const message = internal({ to: parseAddress(p.jettonWallet, "jetton wallet").address, value: JETTON_TRANSFER_TON + forward, bounce: true, body });
	return { ...sign(p.wallet, "wallet", [message], EXACT_MODE, p.validUntil), amount, remainingAmount: p.jettonBalance - amount };
}

// ---------------------------------------------------------------------------------------------
// Expiry: when a message may be signed again
// ---------------------------------------------------------------------------------------------

/**
 * What became of a signed external message. Read, in this order, from ONE final masterchain block
 * (its `utime`) and the state it commits: the wallet's seqno (0 when the account is not active,
 * also after a destroy), then whether the wallet's transactions up to that block include one
 * whose inbound message has `hash` (`found`).
 * - "landed": found (accepted; the caller reads its effects from the transaction);
 * - "dead": not found, the block's utime is past `validUntil` and the seqno is still the one the
 *   message used: the wallet refuses it from now on (both v4R2 and v5R1 check valid_until before
 *   accepting), nothing used that seqno, and the same funds may be signed for again;
 * - "superseded": not found, expired, and the seqno is another (moved past it, or back to 0 after
 *   a destroy): the message is dead too, but a
 *   DIFFERENT message with that seqno was accepted (signed twice, or by another holder of the
 *   key) and may have moved the funds: re-read the balances before signing anything;
 * - "pending": anything else. Before `validUntil` nothing is proven, even when the seqno moved
 *   (a destroyed wallet starts again at seqno 0, so an old message may still be accepted): send
 *   the same bytes again, never new ones.
 */
export function sendVerdict(p: { found: boolean; walletSeqno: number; masterchainUtime: number; seqno: number; validUntil: number }): "landed" | "dead" | "superseded" | "pending" {
	if (p.found) return "landed";
	if (!(p.masterchainUtime > p.validUntil)) return "pending";
	// Any other seqno (higher, or 0 after a destroy) means some other message was accepted.
	return p.walletSeqno === p.seqno ? "dead" : "superseded";
}

/** The parts of a v3 transaction that say whether it did what its inbound message asked (ton-index-go models.Transaction). */
export interface LandedTx {
	description?: { aborted?: boolean; compute_ph?: { skipped?: boolean; success?: boolean; exit_code?: number }; action?: { success?: boolean; result_code?: number } };
	out_msgs: Array<{ opcode?: string | null }>;
}

/** A jetton wallet's internal_transfer to the receiving jetton wallet (TEP-74): what a transfer it accepted sends on. */
export const OP_JETTON_INTERNAL_TRANSFER = "0x178d4519";

/** Not aborted, its compute phase ran and succeeded, its action phase (where there is one) too. */
export function executed(tx: LandedTx): boolean {
	const d = tx.description ?? {};
	return !d.aborted && d.compute_ph?.skipped !== true && d.compute_ph?.success !== false && d.action?.success !== false;
}

const exitOf = (tx: LandedTx) => (tx.description?.compute_ph?.exit_code !== undefined ? ` (exit code ${tx.description.compute_ph.exit_code})` : "");

/**
 * Whether a landed sweep moved its funds, from its transactions in final blocks (docs/withdrawals.md
 * "TON sweeps"): the deposit's transaction (its external message) executed and sent its message;
 * for a jetton transfer also the deposit's jetton wallet took the transfer and sent the
 * internal_transfer on, and the receiving jetton wallet took that (a jetton wallet whose compute
 * phase fails, e.g. 709 "not enough TON" or -14 out of gas, keeps or restores the jettons and
 * bounces what is left of the TON: the TON it carried is spent on fees). `null` for a
 * hop not yet in a final block: "pending", asked again at the next step.
 */
export function landedOutcome(p: { jetton: boolean; deposit: LandedTx; jettonWallet?: LandedTx | null; destination?: LandedTx | null }): { status: "moved" } | { status: "pending" } | { status: "failed"; reason: string } {
	if (!executed(p.deposit)) return { status: "failed", reason: `the deposit's transaction failed${exitOf(p.deposit)}: nothing was sent` };
	if (p.deposit.out_msgs.length === 0) return { status: "failed", reason: "accepted, but its message was not sent (action skipped)" };
	if (!p.jetton) return { status: "moved" };
	if (!p.jettonWallet) return { status: "pending" };
	if (!executed(p.jettonWallet) || !p.jettonWallet.out_msgs.some(m => m.opcode === OP_JETTON_INTERNAL_TRANSFER)) {
		return { status: "failed", reason: `the deposit's jetton wallet did not take the transfer${exitOf(p.jettonWallet)}: the jettons stay at the deposit, any TON left bounced back to it` };
	}
	if (!p.destination) return { status: "pending" };
	if (!executed(p.destination)) return { status: "failed", reason: `the receiving jetton wallet did not take the transfer${exitOf(p.destination)}: it bounced back to the deposit's jetton wallet` };
	return { status: "moved" };
}
