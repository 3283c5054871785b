/** Injectable clock so expiry, lockouts and windows are testable without sleeping. */
export interface Clock {
	now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock tests can move forward. */
export class ManualClock implements Clock {
	private offsetMs = 0;
	now(): Date {
		return new Date(Date.now() + this.offsetMs);
	}
	advance(ms: number): void {
		this.offsetMs += ms;
	}
	reset(): void {
		this.offsetMs = 0;
	}
}
