import fc from "fast-check";
import Decimal from "decimal.js";
import { amountDue, applyCredit, assertSimulatable, lapsedStatus, simulatedCredit, SimulationCheck } from "../../../lib/payments/settlement";

const D = Decimal.clone({ precision: 200, toExpNeg: -200, toExpPos: 200 });
const amountArb = fc
	.tuple(fc.bigInt({ min: 0n, max: 10n ** 30n }), fc.bigInt({ min: 0n, max: 10n ** 18n - 1n }))
	.map(([i, f]) => new D(`${i}.${f.toString().padStart(18, "0")}`).toFixed());

describe("applyCredit", () => {
	it("keeps a partial payment pending and completes when the rest arrives", () => {
		const first = applyCredit({ status: "pending", amountReceived: "0", totalAmount: "10", amount: "4", counted: true, settleable: true });
		expect(first).toEqual({ status: "pending", amountReceived: "4", overpaidAmount: "0", firstFunds: true, confirmed: false, settled: false });
		const second = applyCredit({ status: "pending", amountReceived: "4", totalAmount: "10", amount: "6", counted: true, settleable: true });
		expect(second).toEqual({ status: "completed", amountReceived: "10", overpaidAmount: "0", firstFunds: false, confirmed: true, settled: true });
	});

	it("records over-payment as the excess over the total", () => {
		const out = applyCredit({ status: "pending", amountReceived: "0", totalAmount: "1.5", amount: "2.000000000000000001", counted: true, settleable: true });
		expect(out).toMatchObject({ status: "completed", amountReceived: "2.000000000000000001", overpaidAmount: "0.500000000000000001", settled: true });
		const later = applyCredit({ status: "completed", amountReceived: out.amountReceived, totalAmount: "1.5", amount: "1", counted: true, settleable: false });
		expect(later).toMatchObject({ status: "completed", amountReceived: "3.000000000000000001", overpaidAmount: "1.500000000000000001", settled: false, confirmed: false });
	});

	it("stops at confirmed when the payment can no longer settle", () => {
		expect(applyCredit({ status: "pending", amountReceived: "0", totalAmount: "1", amount: "1", counted: true, settleable: false })).toMatchObject({ status: "confirmed", confirmed: true, settled: false });
	});

	it("settles late funds of an expired checkout, and fails an expired one partly paid", () => {
		expect(applyCredit({ status: "expired", amountReceived: "0", totalAmount: "1", amount: "1", counted: true, settleable: true }).status).toBe("completed");
		expect(applyCredit({ status: "expired", amountReceived: "0", totalAmount: "1", amount: "0.5", counted: true, settleable: true }).status).toBe("failed");
		expect(applyCredit({ status: "failed", amountReceived: "0.5", totalAmount: "1", amount: "0.5", counted: true, settleable: true }).status).toBe("completed");
	});

	it("records other tokens without counting them", () => {
		expect(applyCredit({ status: "pending", amountReceived: "0", totalAmount: "1", amount: "5", counted: false, settleable: true })).toEqual({
			status: "pending",
			amountReceived: "0",
			overpaidAmount: "0",
			firstFunds: false,
			confirmed: false,
			settled: false,
		});
	});

	it("adds exactly, whatever the split", () => {
		fc.assert(
			fc.property(fc.array(amountArb, { minLength: 1, maxLength: 6 }), amountArb, (parts, total) => {
				let state = { status: "pending" as const as ReturnType<typeof applyCredit>["status"], amountReceived: "0" };
				let settledCount = 0;
				for (const part of parts) {
					const out = applyCredit({ status: state.status, amountReceived: state.amountReceived, totalAmount: total, amount: part, counted: true, settleable: true });
					if (out.settled) settledCount++;
					state = { status: out.status, amountReceived: out.amountReceived };
				}
				const sum = parts.reduce((a, p) => a.plus(p), new D(0));
				expect(state.amountReceived).toBe(sum.toFixed());
				expect(settledCount).toBe(sum.gte(total) ? 1 : 0);
				expect(state.status).toBe(sum.gte(total) ? "completed" : "pending");
			}),
		);
	});
});

describe("lapse and due", () => {
	it("expires unpaid and fails partly paid checkouts", () => {
		expect(lapsedStatus("0")).toBe("expired");
		expect(lapsedStatus("0.000000000000000001")).toBe("failed");
	});
	it("never owes a negative amount", () => {
		expect(amountDue("10", "4")).toBe("6");
		expect(amountDue("10", "12")).toBe("0");
	});
});

describe("simulations", () => {
	const checkout = { id: "3d61b3b6-f14d-430d-bc3f-df3f85b41533", payerNetworkId: "n", depositAddress: "0xabc", payerTokenId: "t", totalAmount: "10", amountReceived: "4" };

	it("credits what is due under the checkout's own sim_ hash, the same on every call", () => {
		const a = simulatedCredit(checkout);
		expect(a).toMatchObject({ networkId: "n", toAddress: "0xabc", tokenId: "t", amount: "6", logIndex: 0, simulated: true });
		expect(a.txHash).toMatch(/^sim_[0-9a-f]{64}$/);
		expect(simulatedCredit({ ...checkout, amountReceived: "0" }).txHash).toBe(a.txHash);
		expect(simulatedCredit({ ...checkout, id: "62b9de18-9de9-4501-9be1-5d654aedcd67" }).txHash).not.toBe(a.txHash);
	});

	const ok: SimulationCheck = { intentStatus: "requires_payment_method", linkStatus: "active", status: "pending", totalAmount: "10", amountReceived: "4", amount: "6" };

	it("accepts a full payment of a pending checkout of a payable link and intent", () => {
		expect(() => assertSimulatable(ok)).not.toThrow();
		expect(() => assertSimulatable({ ...ok, intentStatus: null })).not.toThrow();
		expect(() => assertSimulatable({ ...ok, intentStatus: "processing", amount: "6.000" })).not.toThrow();
	});

	it.each([
		[{ intentStatus: "succeeded" }, "Cannot simulate a payment for a payment intent in state succeeded"],
		[{ intentStatus: "canceled", linkStatus: "canceled" }, "Cannot simulate a payment for a payment intent in state canceled"],
		[{ intentStatus: null, linkStatus: "completed" }, "Cannot pay a payment link in state completed"],
		[{ linkStatus: "expired" }, "Cannot pay a payment link in state expired"],
		[{ status: "completed" }, "Cannot simulate a payment for a transaction in state completed"],
		[{ status: "expired" }, "Cannot simulate a payment for a transaction in state expired"],
		[{ amount: "10" }, "The amount due of this transaction changed; simulate again"],
	] as Array<[Partial<SimulationCheck>, string]>)("refuses %j with a 400 naming why", (change, message) => {
		expect(() => assertSimulatable({ ...ok, ...change })).toThrow(expect.objectContaining({ code: 400, message }));
	});
});
