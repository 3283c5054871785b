/**
 * Per-address protections of the spec's Limits section, as pure window maths over event
 * timestamps (epoch ms). The service loads the timestamps from email_events and asks these
 * functions; nothing here reads a clock or a database.
 */

export const MINUTE_MS = 60_000;
export const HOUR_MS = 60 * MINUTE_MS;
export const DAY_MS = 24 * HOUR_MS;

export interface Cap {
	max: number;
	windowMs: number;
}

/** Per address per 24 hours, regardless of IP. */
export const EMAIL_CAPS = {
	confirm_resend: { max: 5, windowMs: DAY_MS },
	reset: { max: 5, windowMs: DAY_MS },
	login_code: { max: 10, windowMs: DAY_MS },
	register_code: { max: 10, windowMs: DAY_MS },
} satisfies Record<string, Cap>;

export type CappedKind = keyof typeof EMAIL_CAPS;

/** A password reset mail at most once per 5 minutes per address. */
export const RESET_COOLDOWN_MS = 5 * MINUTE_MS;

export interface LockRule {
	/** Failures within `windowMs` that lock the address. */
	threshold: number;
	windowMs: number;
	/** How long the lock lasts from the failure that triggered it. */
	lockMs: number;
}

/** After 10 failed password sign-ins the address is locked for 15 minutes. */
export const LOGIN_LOCK: LockRule = { threshold: 10, windowMs: 15 * MINUTE_MS, lockMs: 15 * MINUTE_MS };

/** How far back the service loads failures: long enough for any lock still running, and the run-up to it. */
export const LOGIN_FAILURE_LOOKBACK_MS = 2 * (LOGIN_LOCK.windowMs + LOGIN_LOCK.lockMs);

export interface CapState {
	allowed: boolean;
	used: number;
	remaining: number;
	/** When the next request would be allowed again; null while allowed. */
	retryAt: number | null;
}

/** Rolling-window cap: allowed while fewer than `max` events happened in the last `windowMs`. */
export function capState(eventTimes: number[], now: number, cap: Cap): CapState {
	// Events stamped after `now` (a clock moved back) still count: the window is never shorter.
	const inWindow = eventTimes.filter(t => t > now - cap.windowMs).sort((a, b) => a - b);
	const used = inWindow.length;
	if (used < cap.max) return { allowed: true, used, remaining: cap.max - used, retryAt: null };
	// Allowed again once all but max-1 of the counted events have left the window.
	const retryAt = inWindow[used - cap.max] + cap.windowMs;
	return { allowed: false, used, remaining: 0, retryAt };
}

export interface CooldownState {
	allowed: boolean;
	retryAt: number | null;
}

/** At most one event per `cooldownMs`. */
export function cooldownState(eventTimes: number[], now: number, cooldownMs: number): CooldownState {
	if (eventTimes.length === 0) return { allowed: true, retryAt: null };
	const last = Math.max(...eventTimes);
	const retryAt = last + cooldownMs;
	return retryAt > now ? { allowed: false, retryAt } : { allowed: true, retryAt: null };
}

/** Both a cap and a cooldown: allowed only when both allow; retryAt is the later of the two. */
export function combine(a: { allowed: boolean; retryAt: number | null }, b: { allowed: boolean; retryAt: number | null }) {
	if (a.allowed && b.allowed) return { allowed: true, retryAt: null };
	return { allowed: false, retryAt: Math.max(a.retryAt ?? 0, b.retryAt ?? 0) };
}

export interface LockState {
	locked: boolean;
	/** End of the current lock; null when not locked. */
	until: number | null;
}

/**
 * Replays the failures in order: when `threshold` of them fall within `windowMs`, the address is
 * locked for `lockMs` from that failure and the count starts again (failures are not recorded
 * while locked, and those before a lock never count towards the next one).
 */
export function loginLockState(failureTimes: number[], now: number, rule: LockRule = LOGIN_LOCK): LockState {
	const sorted = [...failureTimes].sort((a, b) => a - b);
	let lockedUntil = -Infinity;
	let recent: number[] = [];
	for (const t of sorted) {
		if (t < lockedUntil) continue;
		recent = recent.filter(r => r > t - rule.windowMs);
		recent.push(t);
		if (recent.length >= rule.threshold) {
			lockedUntil = t + rule.lockMs;
			recent = [];
		}
	}
	return now < lockedUntil ? { locked: true, until: lockedUntil } : { locked: false, until: null };
}
