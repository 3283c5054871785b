/** The hold policy of the sweeper (lib/sweeps/holds.ts): pure parts. */
import { holdDelayMs, isHeld } from "../../../lib/sweeps/holds";

describe("sweep holds", () => {
	const policy = { maxFailures: 3, backoffMs: 1_000 };

	it("doubles the pause with each failure in a row, at most 64 times the first", () => {
		expect([1, 2, 3, 4, 7, 8, 50].map(n => holdDelayMs(n, policy))).toEqual([1_000, 2_000, 4_000, 8_000, 64_000, 64_000, 64_000]);
		expect(holdDelayMs(0, policy)).toBe(1_000);
	});

	it("holds until the next attempt, and for good once blocked", () => {
		const now = new Date("2026-01-01T00:00:00Z");
		const later = new Date(now.getTime() + 1);
		expect(isHeld(null, now)).toBe(false);
		expect(isHeld({ blockedAt: null, nextAttemptAt: later }, now)).toBe(true);
		expect(isHeld({ blockedAt: null, nextAttemptAt: now }, now)).toBe(false);
		expect(isHeld({ blockedAt: now, nextAttemptAt: now }, later)).toBe(true);
	});
});
