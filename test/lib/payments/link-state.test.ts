import { assertLinkPayable, canSettleLink, cancelLinkStatus, effectiveLinkStatus, LINK_STATUSES, patchedLinkStatus } from "../../../lib/payments/link-state";

const now = new Date("2030-01-01T00:00:00Z");
const past = new Date("2029-12-31T23:59:59Z");
const future = new Date("2030-01-02T00:00:00Z");

describe("payment link status", () => {
	it("shows active or paused links past expiresAt as expired", () => {
		expect(effectiveLinkStatus("active", past, now)).toBe("expired");
		expect(effectiveLinkStatus("paused", now, now)).toBe("expired");
		expect(effectiveLinkStatus("active", future, now)).toBe("active");
		expect(effectiveLinkStatus("active", null, now)).toBe("active");
		expect(effectiveLinkStatus("completed", past, now)).toBe("completed");
		expect(effectiveLinkStatus("canceled", past, now)).toBe("canceled");
	});

	it("is payable only while active", () => {
		for (const s of LINK_STATUSES) {
			if (s === "active") expect(() => assertLinkPayable(s)).not.toThrow();
			else expect(() => assertLinkPayable(s)).toThrow(`Cannot pay a payment link in state ${s}`);
		}
	});

	it("settles from active, paused and expired only", () => {
		expect(LINK_STATUSES.filter(canSettleLink)).toEqual(["active", "paused", "expired"]);
	});

	it("cancels from anything but completed", () => {
		expect(cancelLinkStatus("active")).toBe("canceled");
		expect(cancelLinkStatus("canceled")).toBe("canceled");
		expect(cancelLinkStatus("expired")).toBe("canceled");
		expect(() => cancelLinkStatus("completed")).toThrow("Cannot cancel a payment link in state completed");
	});

	describe("PATCH", () => {
		it("stores inactive as paused and reactivates", () => {
			expect(patchedLinkStatus({ status: "active", expiresAt: null }, { status: "inactive" }, now)).toBe("paused");
			expect(patchedLinkStatus({ status: "paused", expiresAt: null }, { status: "active" }, now)).toBe("active");
			expect(patchedLinkStatus({ status: "paused", expiresAt: future }, {}, now)).toBe("paused");
			expect(patchedLinkStatus({ status: "active", expiresAt: null }, { status: "canceled" }, now)).toBe("canceled");
		});
		it("refuses any change of final links, naming the state", () => {
			for (const status of ["completed", "canceled"] as const) {
				expect(() => patchedLinkStatus({ status, expiresAt: null }, { status: "active" }, now)).toThrow(`Cannot update a payment link in state ${status}`);
				expect(() => patchedLinkStatus({ status, expiresAt: null }, {}, now)).toThrow(`Cannot update a payment link in state ${status}`);
			}
		});
		it("keeps expired links expired unless given a future expiry", () => {
			expect(patchedLinkStatus({ status: "expired", expiresAt: past }, {}, now)).toBe("expired");
			expect(patchedLinkStatus({ status: "active", expiresAt: past }, {}, now)).toBe("expired");
			expect(() => patchedLinkStatus({ status: "expired", expiresAt: past }, { status: "active" }, now)).toThrow("Cannot activate a payment link in state expired");
			expect(() => patchedLinkStatus({ status: "expired", expiresAt: past }, { status: "paused" }, now)).toThrow("Cannot pause a payment link in state expired");
			expect(patchedLinkStatus({ status: "expired", expiresAt: past }, { expiresAt: future }, now)).toBe("active");
			expect(patchedLinkStatus({ status: "expired", expiresAt: past }, { expiresAt: null }, now)).toBe("active");
			expect(patchedLinkStatus({ status: "expired", expiresAt: past }, { expiresAt: future, status: "inactive" }, now)).toBe("paused");
			expect(patchedLinkStatus({ status: "expired", expiresAt: past }, { status: "canceled" }, now)).toBe("canceled");
		});
	});
});
