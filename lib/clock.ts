/** Injectable clock so expiry, lockouts and windows are testable without sleeping. */
export interface Clock {
	now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock tests can move forward; it runs on with real time unless frozen. */
export class ManualClock implements Clock {
	private offsetMs = 0;
	private frozenAt: number | null = null;
	now(): Date {
		return new Date((this.frozenAt ?? Date.now()) + this.offsetMs);
	}
	advance(ms: number): void {
		this.offsetMs += ms;
	}
	/** Stops real time: from now on only advance() moves the clock (a due-time check cannot race a busy machine). */
	freeze(): void {
		this.frozenAt ??= Date.now();
	}
	reset(): void {
		this.offsetMs = 0;
		this.frozenAt = null;
	}
}
