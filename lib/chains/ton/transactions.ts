/**
 * What the TON watcher reads in toncenter v3 transactions (pure; docs/watchers.md "TON"). A
 * transaction of a deposit account is a payment candidate when its inbound message is an
 * internal message (it has a source), not a bounce, and its value stayed with the account:
 *
 * - accepted: an ordinary transaction (`description.type` "ord") without a bounce phase, and
 *   either it succeeded (not aborted, compute phase success, action phase success where there is
 *   one), or its compute phase was skipped for "no_state": a deposit is an undeployed wallet
 *   until it first sends, and a non-bounceable message to an undeployed account leaves its value
 *   there in an aborted transaction (the credit phase ran; no bounce phase sent it back). Any
 *   other aborted or failed transaction is not a payment (the value bounced, or the outcome is
 *   not one a payment page promises).
 * - TON: the inbound message's value (nanotons, exact decimal string) to a deposit address.
 * - Jettons: an internal_transfer (op 0x178d4519) that a watched jetton wallet (one a trusted
 *   master gives a deposit: the source's list, lib/chains/ton/source.ts) accepted in a
 *   transaction that fully succeeded (not aborted, compute and action phases succeeded, no bounce;
 *   never the undeployed-account case above): the amount is read from its body. This is the
 *   jetton payment, seen whether or not the sender asked for a notification.
 * - A transfer_notification (op 0x7362d09c) to a deposit owner is proposed with its source and the
 *   TON it carried: from the owner's trusted jetton wallet it is the echo of a payment already
 *   counted at that wallet; from anything else only its TON is real (the source decides).
 *
 * Addresses in v3 answers are raw (`0:ABCD...`, upper case); they are compared lower-cased.
 */
import { Cell } from "@ton/core";

export const OP_TRANSFER_NOTIFICATION = 0x7362d09c;
/** TEP-74 internal_transfer: what a jetton wallet receives from its master (mint) or a sibling wallet. */
export const OP_INTERNAL_TRANSFER = 0x178d4519;

/** The fields of a v3 message this module reads (ton-index-go models.Message). */
export interface V3Message {
	hash: string;
	source: string | null;
	destination: string | null;
	value: string | null;
	opcode?: string | number | null;
	bounce?: boolean | null;
	bounced?: boolean | null;
	message_content?: { hash?: string | null; body?: string | null; decoded?: unknown } | null;
}

/** The fields of a v3 transaction this module reads (ton-index-go models.Transaction). */
export interface V3Transaction {
	account: string;
	hash: string;
	lt: string;
	now: number;
	mc_block_seqno: number;
	orig_status?: string;
	end_status?: string;
	description: {
		type: string;
		aborted?: boolean;
		compute_ph?: { skipped?: boolean; reason?: string; success?: boolean; exit_code?: number };
		action?: { success?: boolean; result_code?: number };
		bounce?: unknown;
	};
	in_msg: V3Message | null;
	out_msgs?: V3Message[];
}

export type TonCandidate =
	| { kind: "ton"; txHash: string; lt: string; mcSeqno: number; account: string; amount: bigint }
	/** A transfer_notification to a deposit: `tonValue` is the message's TON, a TON payment only if `jettonWallet` (its source) is not the deposit's trusted one. */
	| { kind: "notification"; txHash: string; lt: string; mcSeqno: number; account: string; jettonWallet: string; amount: bigint; tonValue: bigint }
	/** Jettons credited at a watched jetton wallet (`account`) by an internal_transfer of `amount`. */
	| { kind: "jetton"; txHash: string; lt: string; mcSeqno: number; account: string; amount: bigint };

/** A v3 hash (base64, standard or url-safe) as lower-case hex: the watcher's txHash / blockHash form. */
export function hashHex(hash: string): string {
	// Node's base64 decoder reads the url-safe alphabet as well ("-" "_").
	const hex = Buffer.from(hash, "base64").toString("hex");
	if (hex.length !== 64) throw new Error(`Not a 256-bit hash: "${hash.slice(0, 60)}"`);
	return hex;
}

/** A raw address (`wc:hex`) lower-cased; null for anything else (external, none). */
export function rawKey(address: string | null | undefined): string | null {
	if (!address) return null;
	// A test without captures, then one lower-casing: three of these a transaction (account, destination, source).
	if (!RAW_ADDRESS.test(address)) {
		const trimmed = address.trim();
		if (trimmed === address || !RAW_ADDRESS.test(trimmed)) return null;
		return trimmed.toLowerCase();
	}
	return address.toLowerCase();
}
const RAW_ADDRESS = /^(?:-1|0):[0-9a-fA-F]{64}$/;

/** Why a transaction's inbound value did not stay with its account, or null when it did. */
export function rejection(tx: V3Transaction): string | null {
	const d = tx.description;
	const msg = tx.in_msg;
	if (!msg || !rawKey(msg.source)) return "no internal inbound message";
	if (msg.bounced === true) return "bounced message";
	if (d.type !== "ord") return `${d.type} transaction`;
	if (d.bounce != null) return "bounce phase";
	const compute = d.compute_ph;
	if (!compute) return "no compute phase";
	if (compute.skipped === true) {
		// Value to an undeployed account without a bounce: credited and kept (the deposit case).
		return compute.reason === "no_state" ? null : `compute phase skipped (${compute.reason ?? "?"})`;
	}
	if (d.aborted !== false) return "aborted";
	if (compute.success !== true) return "compute phase failed";
	if (d.action && d.action.success !== true) return "action phase failed";
	return null;
}

function opcodeOf(msg: V3Message): number | null {
	const op = msg.opcode;
	if (op === null || op === undefined) return null;
	const n = typeof op === "number" ? op : Number(op);
	return Number.isFinite(n) ? n >>> 0 : null;
}

/** The jetton amount of a body `op query_id:uint64 amount:Coins ...` (transfer_notification, internal_transfer); null when its op is not `op`. */
function jettonAmount(bodyBoc: string, op: number): bigint | null {
	try {
		const s = Cell.fromBase64(bodyBoc).beginParse();
		if (s.loadUint(32) !== op) return null;
		s.loadUintBig(64);
		return s.loadCoins();
	} catch {
		return null;
	}
}

/** The jetton amount of a transfer_notification body (op, query_id, amount, ...); null when it is not one. */
export function notificationAmount(bodyBoc: string): bigint | null {
	return jettonAmount(bodyBoc, OP_TRANSFER_NOTIFICATION);
}

/** The jetton amount of an internal_transfer body (op, query_id, amount, from, ...); null when it is not one. */
export function internalTransferAmount(bodyBoc: string): bigint | null {
	return jettonAmount(bodyBoc, OP_INTERNAL_TRANSFER);
}

/** Whether a transaction fully succeeded: its state change and messages stand (the jetton wallet's credit). */
function succeeded(tx: V3Transaction): boolean {
	const d = tx.description;
	return rejection(tx) === null && d.aborted === false && d.compute_ph?.skipped === false && d.compute_ph.success === true && (!d.action || d.action.success === true);
}

/**
 * Payment candidates among `txs` for the deposit accounts (`isDeposit` on raw lower-case
 * addresses) and the watched jetton wallets (`isJettonWallet`, the same keys; none when omitted).
 * `watchJettons`: whether any jetton is watched (notifications are proposed only then).
 * A jetton payment is the internal_transfer a watched jetton wallet accepted (kind "jetton", keyed
 * by the wallet's transaction). A transfer_notification to a deposit is proposed apart (kind
 * "notification") with its TON value: from the deposit's trusted jetton wallet it is the echo of
 * that payment and credits nothing (its TON is the sender's forward amount); from any other source
 * the jetton part is worthless and the TON value, which did arrive, is a TON payment like any
 * other (the source decides: lib/chains/ton/source.ts).
 */
export function candidates(txs: readonly V3Transaction[], isDeposit: (raw: string) => boolean, watchJettons: boolean, isJettonWallet?: (raw: string) => boolean): TonCandidate[] {
	const out: TonCandidate[] = [];
	for (const tx of txs) {
		const account = rawKey(tx.account);
		if (!account || !tx.in_msg) continue;
		// v3 gives both in the same raw form: the same string needs no second parse.
		if (tx.in_msg.destination !== tx.account && rawKey(tx.in_msg.destination) !== account) continue;
		const msg = tx.in_msg;
		if (isJettonWallet?.(account)) {
			// A jetton wallet's credit stands only if the whole transaction did (a failed one bounced it back).
			if (!msg.message_content?.body || !succeeded(tx)) continue;
			const amount = internalTransferAmount(msg.message_content.body);
			if (amount !== null && amount > 0n) out.push({ kind: "jetton", txHash: hashHex(tx.hash), lt: String(tx.lt), mcSeqno: tx.mc_block_seqno, account, amount });
			continue;
		}
		if (!isDeposit(account)) continue;
		if (rejection(tx) !== null) continue;
		const base = { txHash: hashHex(tx.hash), lt: String(tx.lt), mcSeqno: tx.mc_block_seqno, account };
		const value = /^\d{1,40}$/.test(msg.value ?? "") ? BigInt(msg.value!) : 0n;
		if (watchJettons && opcodeOf(msg) === OP_TRANSFER_NOTIFICATION) {
			const amount = msg.message_content?.body ? notificationAmount(msg.message_content.body) : null;
			if (amount !== null && amount > 0n) {
				out.push({ kind: "notification", ...base, jettonWallet: rawKey(msg.source)!, amount, tonValue: value });
				continue;
			}
		}
		if (value > 0n) out.push({ kind: "ton", ...base, amount: value });
	}
	return out;
}
