import { DAY_MS, EMAIL_CAPS, LOGIN_LOCK, MINUTE_MS, RESET_COOLDOWN_MS, capState, combine, cooldownState, loginLockState } from "../../../lib/auth/limits";

const T0 = Date.UTC(2024, 0, 1, 12, 0, 0);

describe("capState", () => {
	const cap = { max: 3, windowMs: DAY_MS };

	it("allows while under the cap and counts what remains", () => {
		expect(capState([], T0, cap)).toEqual({ allowed: true, used: 0, remaining: 3, retryAt: null });
		expect(capState([T0 - 1000, T0 - 2000], T0, cap)).toEqual({ allowed: true, used: 2, remaining: 1, retryAt: null });
	});

	it("refuses at the cap until the oldest counted event leaves the window", () => {
		const events = [T0 - 10 * MINUTE_MS, T0 - 5 * MINUTE_MS, T0 - MINUTE_MS];
		expect(capState(events, T0, cap)).toEqual({ allowed: false, used: 3, remaining: 0, retryAt: T0 - 10 * MINUTE_MS + DAY_MS });
		// Just after that moment, one slot is free again.
		expect(capState(events, T0 - 10 * MINUTE_MS + DAY_MS, cap).allowed).toBe(true);
	});

	it("with more events than the cap, waits until enough have left", () => {
		const events = [T0 - 4000, T0 - 3000, T0 - 2000, T0 - 1000];
		expect(capState(events, T0, cap).retryAt).toBe(T0 - 3000 + DAY_MS);
	});

	it("ignores events older than the window, whatever their order", () => {
		const events = [T0 - MINUTE_MS, T0 - DAY_MS - 1, T0 - 2 * DAY_MS, T0 - 2 * MINUTE_MS];
		expect(capState(events, T0, cap)).toMatchObject({ allowed: true, used: 2, remaining: 1 });
	});

	it("has the spec's daily caps", () => {
		expect(EMAIL_CAPS).toEqual({
			confirm_resend: { max: 5, windowMs: DAY_MS },
			reset: { max: 5, windowMs: DAY_MS },
			login_code: { max: 10, windowMs: DAY_MS },
			register_code: { max: 10, windowMs: DAY_MS },
		});
	});
});

describe("cooldownState", () => {
	it("allows with no history or once the cooldown has passed", () => {
		expect(cooldownState([], T0, RESET_COOLDOWN_MS)).toEqual({ allowed: true, retryAt: null });
		expect(cooldownState([T0 - RESET_COOLDOWN_MS], T0, RESET_COOLDOWN_MS)).toEqual({ allowed: true, retryAt: null });
	});

	it("refuses within the cooldown of the latest event", () => {
		expect(cooldownState([T0 - 20 * MINUTE_MS, T0 - MINUTE_MS], T0, RESET_COOLDOWN_MS)).toEqual({ allowed: false, retryAt: T0 + 4 * MINUTE_MS });
	});
});

describe("combine", () => {
	it("allows only when both allow, and retries at the later time", () => {
		expect(combine({ allowed: true, retryAt: null }, { allowed: true, retryAt: null })).toEqual({ allowed: true, retryAt: null });
		expect(combine({ allowed: false, retryAt: T0 + 5 }, { allowed: true, retryAt: null })).toEqual({ allowed: false, retryAt: T0 + 5 });
		expect(combine({ allowed: false, retryAt: T0 + 5 }, { allowed: false, retryAt: T0 + 9 })).toEqual({ allowed: false, retryAt: T0 + 9 });
	});
});

describe("loginLockState", () => {
	const failures = (n: number, start: number, stepMs: number) => Array.from({ length: n }, (_, i) => start + i * stepMs);

	it("is not locked below the threshold", () => {
		expect(loginLockState(failures(9, T0, 1000), T0 + 10_000)).toEqual({ locked: false, until: null });
	});

	it("locks for 15 minutes from the 10th failure", () => {
		const f = failures(10, T0, 1000);
		const tenth = f[9];
		expect(loginLockState(f, tenth)).toEqual({ locked: true, until: tenth + 15 * MINUTE_MS });
		expect(loginLockState(f, tenth + 15 * MINUTE_MS - 1).locked).toBe(true);
		expect(loginLockState(f, tenth + 15 * MINUTE_MS)).toEqual({ locked: false, until: null });
	});

	it("only counts failures that fall within 15 minutes of each other", () => {
		const spread = failures(10, T0, 2 * MINUTE_MS); // 18 minutes from first to last
		expect(loginLockState(spread, T0 + 18 * MINUTE_MS).locked).toBe(false);
	});

	it("starts counting again after a lock", () => {
		const first = failures(10, T0, 1000);
		const lockEnd = first[9] + LOGIN_LOCK.lockMs;
		// Nine more after the lock do not lock again, even though 19 happened within the last half hour.
		const after = failures(9, lockEnd + 1000, 1000);
		expect(loginLockState([...first, ...after], lockEnd + 20_000).locked).toBe(false);
		const tenth = lockEnd + 20_000;
		expect(loginLockState([...first, ...after, tenth], tenth)).toEqual({ locked: true, until: tenth + LOGIN_LOCK.lockMs });
	});

	it("does not depend on the order it is given the failures", () => {
		const f = failures(10, T0, 1000).reverse();
		expect(loginLockState(f, T0 + 10_000).locked).toBe(true);
	});
});
