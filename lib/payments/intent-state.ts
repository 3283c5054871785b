/**
 * The payment intent state machine (decisions.md "Payment intents"), as one transition table.
 * Pure: services ask `transition(state, op)` and persist the answer. An operation that the
 * current state does not allow is a 400 naming that state, e.g.
 * `Cannot cancel a payment intent in state succeeded`.
 *
 * Operations:
 * - merchant/payer operations: update (PATCH), confirm, complete, cancel, pay (start a checkout),
 *   simulate (sandbox payment through the normal flow);
 * - system operations: funds (first funds seen on chain), settle (payment confirmed and settled),
 *   expire (expires_at passed unpaid), lapse (the checkout's payment window passed unpaid),
 *   revert (the only funds seen on chain were orphaned by a reorg before they confirmed).
 */
import { badRequest } from "../errors";

export const INTENT_STATES = ["requires_payment_method", "requires_confirmation", "processing", "succeeded", "canceled"] as const;
export type IntentState = (typeof INTENT_STATES)[number];

export const INTENT_OPERATIONS = ["update", "confirm", "complete", "cancel", "pay", "simulate", "funds", "settle", "expire", "lapse", "revert"] as const;
export type IntentOperation = (typeof INTENT_OPERATIONS)[number];

/**
 * Webhook event types: the spec's event list (`payment_intent.succeeded` is only an alias of
 * completed) and our two about deep reorgs, which are not state changes (docs/webhooks.md): a
 * credit orphaned (`reversed`) and its transfer mined again (`recredited`).
 */
export type IntentEventType =
	| "payment_intent.processing"
	| "payment_intent.completed"
	| "payment_intent.canceled"
	| "payment_intent.requires_payment_method"
	| "payment_intent.reversed"
	| "payment_intent.recredited";

/** Events whose object carries latestTransaction (the spec's completed, and our reorg events). */
export const EVENTS_WITH_LATEST: readonly IntentEventType[] = ["payment_intent.completed", "payment_intent.reversed", "payment_intent.recredited"];

/** States in which the intent can still be paid, updated or canceled without a fuss. */
export const OPEN_STATES: readonly IntentState[] = ["requires_payment_method", "requires_confirmation", "processing"];
export const FINAL_STATES: readonly IntentState[] = ["succeeded", "canceled"];

const RPM = "requires_payment_method";
const RC = "requires_confirmation";
const PROC = "processing";
const OK = "succeeded";
const CANCELED = "canceled";

/**
 * TABLE[op][from] = next state; absent = not allowed (400). A transition to the same state is
 * allowed and changes nothing (e.g. cancel of a canceled intent answers it unchanged).
 */
export const TRANSITIONS: Record<IntentOperation, Partial<Record<IntentState, IntentState>>> = {
	update: { [RPM]: RPM, [RC]: RC },
	confirm: { [RPM]: RC, [RC]: RC },
	complete: { [RPM]: PROC, [RC]: PROC },
	cancel: { [RPM]: CANCELED, [RC]: CANCELED, [PROC]: CANCELED, [CANCELED]: CANCELED },
	// Starting a checkout does not move the intent; it is only refused once the intent is final.
	pay: { [RPM]: RPM, [RC]: RC, [PROC]: PROC },
	simulate: { [RPM]: OK, [RC]: OK, [PROC]: OK },
	funds: { [RPM]: PROC, [RC]: PROC, [PROC]: PROC },
	settle: { [RPM]: OK, [RC]: OK, [PROC]: OK },
	expire: { [RPM]: CANCELED, [RC]: CANCELED, [PROC]: CANCELED },
	lapse: { [RPM]: RPM, [RC]: RPM, [PROC]: RPM },
	revert: { [RPM]: RPM, [RC]: RC, [PROC]: RPM },
};

/** Event sent when a state is entered (none for requires_confirmation: the spec names no event). */
export const ENTRY_EVENTS: Partial<Record<IntentState, IntentEventType>> = {
	processing: "payment_intent.processing",
	succeeded: "payment_intent.completed",
	canceled: "payment_intent.canceled",
	requires_payment_method: "payment_intent.requires_payment_method",
};

/** Verb of the error message per operation. */
const VERBS: Record<IntentOperation, string> = {
	update: "update",
	confirm: "confirm",
	complete: "complete",
	cancel: "cancel",
	pay: "pay",
	simulate: "simulate a payment for",
	funds: "pay",
	settle: "pay",
	expire: "expire",
	lapse: "reopen",
	revert: "revert a payment for",
};

export interface Transition {
	from: IntentState;
	to: IntentState;
	/** false when the operation leaves the state as it was (no write of the status, no event). */
	changed: boolean;
	/** The event to send, when the state changed into one that has an event. */
	event: IntentEventType | null;
}

export function isIntentState(value: unknown): value is IntentState {
	return typeof value === "string" && (INTENT_STATES as readonly string[]).includes(value);
}

export function canTransition(from: IntentState, op: IntentOperation): boolean {
	return TRANSITIONS[op][from] !== undefined;
}

export function transitionError(from: IntentState, op: IntentOperation) {
	return badRequest(`Cannot ${VERBS[op]} a payment intent in state ${from}`);
}

/** The transition, or the 400 naming the current state. */
export function transition(from: IntentState, op: IntentOperation): Transition {
	const to = TRANSITIONS[op][from];
	if (to === undefined) throw transitionError(from, op);
	const changed = to !== from;
	return { from, to, changed, event: changed ? ENTRY_EVENTS[to] ?? null : null };
}

/** The transition when allowed, else null (system paths that record facts without failing). */
export function tryTransition(from: IntentState, op: IntentOperation): Transition | null {
	return canTransition(from, op) ? transition(from, op) : null;
}

/** Read views say `succeeded`; event payloads say `completed` for the same state. */
export function eventStatus(state: IntentState): string {
	return state === "succeeded" ? "completed" : state;
}
