/** The rule that turns "none of a sweep's transactions found" into proof (lib/sweeps/proof.ts). */
import { isProven } from "../../../lib/sweeps/proof";

const rule = { proofPolls: 3, proofMs: 60_000 };
const t0 = new Date("2026-01-01T00:00:00Z");
const at = (ms: number) => new Date(t0.getTime() + ms);

describe("isProven", () => {
	it("needs both the polls and the time: a lagging node answering null a few times quickly is not proof", () => {
		expect(isProven(2, t0, at(600_000), rule)).toBe(false);
		expect(isProven(50, t0, at(59_999), rule)).toBe(false);
		expect(isProven(3, t0, at(60_000), rule)).toBe(true);
	});

	it("is never proof without a first unseen poll", () => {
		expect(isProven(10, null, at(600_000), rule)).toBe(false);
	});

	it("with proofMs 0, the polls alone decide", () => {
		expect(isProven(2, t0, t0, { proofPolls: 2, proofMs: 0 })).toBe(true);
		expect(isProven(1, t0, at(1), { proofPolls: 2, proofMs: 0 })).toBe(false);
	});
});
