import { countdown, isFinal, linkState, payState, StatusPayload } from "../../../web/pay/state";

function status(tx: Partial<StatusPayload["transaction"]>, rest: Partial<StatusPayload> = {}): StatusPayload {
	return {
		linkStatus: "active",
		intentStatus: "requires_confirmation",
		amountDue: "1",
		transaction: { id: "t", status: "pending", totalAmount: "1", amountReceived: "0", amountConfirming: "0", confirmations: null, requiredConfirmations: null, depositAddress: "0x", expiresAt: "", payerTokenId: "x", payerNetworkId: "y", hash: null, ...tx },
		...rest,
	};
}

describe("pay page states", () => {
	it("waiting → partial → confirming → paid", () => {
		expect(payState(status({}))).toEqual({ kind: "waiting" });
		expect(payState(status({ amountReceived: "0.4" }, { amountDue: "0.6" }))).toEqual({ kind: "partial", due: "0.6" });
		expect(payState(status({ amountConfirming: "1", confirmations: 2, requiredConfirmations: 6 }))).toEqual({ kind: "confirming", confirmations: 2, required: 6 });
		expect(payState(status({ status: "completed" }))).toEqual({ kind: "paid" });
		expect(payState(status({ status: "confirmed" }))).toEqual({ kind: "paid" });
	});
	it("canceled by the merchant or the payer; expired windows and links", () => {
		expect(payState(status({ status: "expired" }, { linkStatus: "canceled", intentStatus: "canceled" }))).toEqual({ kind: "canceled" });
		expect(payState(status({ status: "expired" }, { linkStatus: "expired", intentStatus: "canceled" }))).toEqual({ kind: "expired", partial: false });
		expect(payState(status({ status: "failed" }))).toEqual({ kind: "expired", partial: true });
		expect(linkState("expired", "canceled")).toEqual({ kind: "expired", partial: false });
		expect(linkState("canceled", null)).toEqual({ kind: "canceled" });
		expect(linkState("completed", null)).toEqual({ kind: "paid" });
		expect(linkState("active", "requires_payment_method")).toBeNull();
		expect(isFinal({ kind: "partial", due: "1" })).toBe(false);
		expect(isFinal({ kind: "canceled" })).toBe(true);
	});
	it("counts down", () => {
		expect(countdown(90_500, 0)).toBe("1:30");
		expect(countdown(3_725_000, 0)).toBe("1:02:05");
		expect(countdown(0, 10_000)).toBe("0:00");
	});
});
