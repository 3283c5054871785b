/**
 * What one on-chain credit does to a checkout transaction. Pure; the transactions service
 * applies the answer inside the DB transaction that records the credit.
 *
 * Transactions: pending (awaiting funds) -> confirmed (fully funded with the network's required
 * confirmations) -> completed (settled: intent succeeded, link completed). Also expired (window
 * passed, nothing received) and failed (window passed with a partial payment).
 * - A partial payment keeps the transaction pending (or turns an expired one into failed).
 * - Full funding settles at once when the link/intent can still be settled: pending -> completed
 *   with confirmedAt and completedAt. When they cannot (intent canceled, link completed by another
 *   checkout), it stops at `confirmed`: the money is there and needs the merchant's attention.
 * - Funds arriving late (expired/failed) still settle when nothing else forbids it.
 * - Over-payment completes and is recorded as `overpaidAmount` = amountReceived - totalAmount.
 */
import crypto from "node:crypto";
import { badRequest } from "../errors";
import { money, toAmountString } from "../money";
import { canTransition, IntentState, transitionError } from "./intent-state";
import { assertLinkPayable, LinkStatus } from "./link-state";

export const TRANSACTION_STATUSES = ["pending", "confirmed", "completed", "expired", "failed"] as const;
export type TransactionStatus = (typeof TRANSACTION_STATUSES)[number];

export interface CreditInput {
	status: TransactionStatus;
	amountReceived: string;
	totalAmount: string;
	/** Amount of this credit in the transaction's payer token. */
	amount: string;
	/** false when the transfer is of another token than the payer's (recorded, not counted). */
	counted: boolean;
	/** Whether the link and intent may still be settled by this transaction. */
	settleable: boolean;
}

export interface CreditOutcome {
	status: TransactionStatus;
	amountReceived: string;
	overpaidAmount: string;
	/** The transaction had received nothing before and now has funds. */
	firstFunds: boolean;
	/** This credit made the transaction fully funded (confirmed). */
	confirmed: boolean;
	/** This credit settled the transaction (completed). */
	settled: boolean;
}

export function applyCredit(input: CreditInput): CreditOutcome {
	const before = money(input.amountReceived);
	const total = money(input.totalAmount);
	const after = input.counted ? before.plus(money(input.amount)) : before;
	const full = after.gte(total);
	const overpaid = after.gt(total) ? after.minus(total) : money(0);
	let status = input.status;
	let confirmed = false;
	let settled = false;
	if (input.counted && (status === "pending" || status === "expired" || status === "failed")) {
		if (full) {
			confirmed = true;
			if (input.settleable) {
				status = "completed";
				settled = true;
			} else {
				status = "confirmed";
			}
		} else if (status === "expired" && after.gt(0)) {
			status = "failed";
		}
	}
	return {
		status,
		amountReceived: toAmountString(after),
		overpaidAmount: toAmountString(overpaid),
		firstFunds: input.counted && before.isZero() && after.gt(0),
		confirmed,
		settled,
	};
}

/** The status a pending transaction takes when its payment window passes. */
export function lapsedStatus(amountReceived: string): TransactionStatus {
	return money(amountReceived).gt(0) ? "failed" : "expired";
}

/** Amount still due (never negative). */
export function amountDue(totalAmount: string, amountReceived: string): string {
	const due = money(totalAmount).minus(money(amountReceived));
	return due.gt(0) ? toAmountString(due) : "0";
}

/**
 * The credit a sandbox simulation reports for a checkout: what is still due, under a `sim_` hash
 * that can never collide with a real chain's, so it goes through the one credit path. The hash is
 * the checkout's own (sha256 of its id), not a random one: a checkout has at most one simulated
 * credit, the UNIQUE (network, txHash, logIndex) index says so even if two simulations race past
 * every other check.
 */
export function simulatedCredit(tx: { id: string; payerNetworkId: string; depositAddress: string; payerTokenId: string; totalAmount: string; amountReceived: string }) {
	return {
		networkId: tx.payerNetworkId,
		txHash: `sim_${crypto.createHash("sha256").update(`simulated:${tx.id}`).digest("hex")}`,
		logIndex: 0,
		toAddress: tx.depositAddress,
		tokenId: tx.payerTokenId,
		amount: amountDue(tx.totalAmount, tx.amountReceived),
		simulated: true,
	};
}

export interface SimulationCheck {
	/** The checkout's intent, if any (locked). */
	intentStatus: IntentState | null;
	/** The link as a read would show it (expiry applied). */
	linkStatus: LinkStatus;
	status: TransactionStatus;
	totalAmount: string;
	amountReceived: string;
	/** What the simulation wants to credit. */
	amount: string;
}

/**
 * The decision "may this simulated payment be recorded?", taken by the credit path under the
 * rows' locks (the simulate actions' own early checks only spare work): a simulation pays a
 * pending checkout of a payable link and a payable intent exactly what it still owes, so it
 * always settles it; anything else is the 400 naming the state and nothing is recorded. So of
 * concurrent simulations of one intent or link one settles and the others get the state error.
 */
export function assertSimulatable(c: SimulationCheck): void {
	if (c.intentStatus && !canTransition(c.intentStatus, "simulate")) throw transitionError(c.intentStatus, "simulate");
	assertLinkPayable(c.linkStatus);
	if (c.status !== "pending") throw badRequest(`Cannot simulate a payment for a transaction in state ${c.status}`);
	if (!money(c.amount).eq(money(amountDue(c.totalAmount, c.amountReceived)))) {
		throw badRequest("The amount due of this transaction changed; simulate again", { transaction: "amountDueChanged" });
	}
}
