import { Errors } from "moleculer";
import { canTransition, eventStatus, INTENT_OPERATIONS, INTENT_STATES, IntentOperation, IntentState, transition, tryTransition } from "../../../lib/payments/intent-state";

/** The expected table, written out independently of the module's own table. */
const EXPECTED: Record<IntentOperation, Partial<Record<IntentState, IntentState>>> = {
	update: { requires_payment_method: "requires_payment_method", requires_confirmation: "requires_confirmation" },
	confirm: { requires_payment_method: "requires_confirmation", requires_confirmation: "requires_confirmation" },
	complete: { requires_payment_method: "processing", requires_confirmation: "processing" },
	cancel: { requires_payment_method: "canceled", requires_confirmation: "canceled", processing: "canceled", canceled: "canceled" },
	pay: { requires_payment_method: "requires_payment_method", requires_confirmation: "requires_confirmation", processing: "processing" },
	simulate: { requires_payment_method: "succeeded", requires_confirmation: "succeeded", processing: "succeeded" },
	funds: { requires_payment_method: "processing", requires_confirmation: "processing", processing: "processing" },
	settle: { requires_payment_method: "succeeded", requires_confirmation: "succeeded", processing: "succeeded" },
	expire: { requires_payment_method: "canceled", requires_confirmation: "canceled", processing: "canceled" },
	lapse: { requires_payment_method: "requires_payment_method", requires_confirmation: "requires_payment_method", processing: "requires_payment_method" },
	revert: { requires_payment_method: "requires_payment_method", requires_confirmation: "requires_confirmation", processing: "requires_payment_method" },
};

const VERB: Record<IntentOperation, string> = {
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

describe("payment intent state machine", () => {
	const pairs = INTENT_STATES.flatMap(state => INTENT_OPERATIONS.map(op => [state, op] as const));

	it.each(pairs)("%s + %s follows the table", (state, op) => {
		const expected = EXPECTED[op][state];
		expect(canTransition(state, op)).toBe(expected !== undefined);
		if (expected === undefined) {
			let error: unknown;
			try {
				transition(state, op);
			} catch (err) {
				error = err;
			}
			expect(error).toBeInstanceOf(Errors.MoleculerClientError);
			expect((error as Errors.MoleculerClientError).code).toBe(400);
			expect((error as Error).message).toBe(`Cannot ${VERB[op]} a payment intent in state ${state}`);
			expect(tryTransition(state, op)).toBeNull();
			return;
		}
		const t = transition(state, op);
		expect(t).toMatchObject({ from: state, to: expected, changed: expected !== state });
		expect(tryTransition(state, op)).toEqual(t);
	});

	it("names the events of the states entered, and none when nothing changed", () => {
		expect(transition("requires_confirmation", "complete").event).toBe("payment_intent.processing");
		expect(transition("processing", "settle").event).toBe("payment_intent.completed");
		expect(transition("requires_payment_method", "cancel").event).toBe("payment_intent.canceled");
		expect(transition("requires_confirmation", "expire").event).toBe("payment_intent.canceled");
		expect(transition("processing", "lapse").event).toBe("payment_intent.requires_payment_method");
		expect(transition("requires_payment_method", "confirm").event).toBeNull();
		expect(transition("canceled", "cancel")).toEqual({ from: "canceled", to: "canceled", changed: false, event: null });
		expect(transition("processing", "funds").event).toBeNull();
	});

	it("keeps the spec's examples", () => {
		expect(() => transition("succeeded", "cancel")).toThrow("Cannot cancel a payment intent in state succeeded");
		expect(() => transition("canceled", "pay")).toThrow("Cannot pay a payment intent in state canceled");
		expect(() => transition("processing", "update")).toThrow("Cannot update a payment intent in state processing");
	});

	it("says completed in events for succeeded", () => {
		expect(eventStatus("succeeded")).toBe("completed");
		for (const s of INTENT_STATES.filter(s => s !== "succeeded")) expect(eventStatus(s)).toBe(s);
	});
});
