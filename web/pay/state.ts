/**
 * What the pay page shows for a checkout: the payer's view of the transaction, its link and its
 * intent. Pure: unit-tested in test/web/pay/state.test.ts.
 */

export interface StatusPayload {
	linkStatus: string;
	intentStatus: string | null;
	amountDue: string;
	transaction: {
		id: string;
		status: string;
		totalAmount: string;
		amountReceived: string;
		amountConfirming: string;
		confirmations: number | null;
		requiredConfirmations: number | null;
		depositAddress: string;
		expiresAt: string;
		payerTokenId: string;
		payerNetworkId: string;
		hash: string | null;
	};
}

export type PayState =
	| { kind: "waiting" }
	| { kind: "partial"; due: string }
	| { kind: "confirming"; confirmations: number; required: number }
	| { kind: "paid" }
	| { kind: "expired"; partial: boolean }
	| { kind: "canceled" };

/** An expired intent is canceled (reason `expired`) and its link `expired`: that is expiry, not a cancel. */
const isCanceled = (linkStatus: string, intentStatus: string | null) => linkStatus === "canceled" || (intentStatus === "canceled" && linkStatus !== "expired");

const isZero = (s: string) => /^0*(\.0*)?$/.test(s);

export function payState(s: StatusPayload): PayState {
	const tx = s.transaction;
	if (tx.status === "completed" || tx.status === "confirmed") return { kind: "paid" };
	if (isCanceled(s.linkStatus, s.intentStatus)) return { kind: "canceled" };
	if (tx.status === "expired") return { kind: "expired", partial: false };
	if (tx.status === "failed") return { kind: "expired", partial: true };
	if (!isZero(tx.amountConfirming || "0") && tx.confirmations !== null && tx.requiredConfirmations !== null) {
		return { kind: "confirming", confirmations: tx.confirmations, required: tx.requiredConfirmations };
	}
	if (!isZero(tx.amountReceived)) return { kind: "partial", due: s.amountDue };
	return { kind: "waiting" };
}

/** Final states end the live updates. */
export function isFinal(state: PayState): boolean {
	return state.kind === "paid" || state.kind === "expired" || state.kind === "canceled";
}

/** The state of a link before any checkout (already paid, canceled, expired), or null when payable. */
export function linkState(linkStatus: string, intentStatus: string | null): PayState | null {
	if (linkStatus === "completed" || intentStatus === "succeeded") return { kind: "paid" };
	if (isCanceled(linkStatus, intentStatus)) return { kind: "canceled" };
	if (linkStatus === "expired") return { kind: "expired", partial: false };
	return null;
}

/** "mm:ss" (or "h:mm:ss") until `expiresAt`; "0:00" once passed. */
export function countdown(expiresAtMs: number, nowMs: number): string {
	const total = Math.max(0, Math.floor((expiresAtMs - nowMs) / 1000));
	const h = Math.floor(total / 3600);
	const m = Math.floor((total % 3600) / 60);
	const s = String(total % 60).padStart(2, "0");
	return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${s}` : `${m}:${s}`;
}
