/**
 * When a stored price or rate may be used for a quote. Rows written by an operator (`manual`)
 * are used until replaced; rows from a feed only while the feed last confirmed them within the
 * maximum age (PRICE_MAX_AGE_SECONDS). Reads (GET /price/token) show the newest row regardless.
 */
export const MANUAL_SOURCE = "manual";

export interface Confirmable {
	source: string;
	/** When the source last confirmed the value (a feed refresh that finds it unchanged moves it). */
	confirmedAt: Date;
}

export function isFresh(row: Confirmable, now: Date, maxAgeSeconds: number): boolean {
	if (row.source === MANUAL_SOURCE) return true;
	return now.getTime() - row.confirmedAt.getTime() <= maxAgeSeconds * 1000;
}
