/**
 * The one set of parsers for settings read from an environment object (the configuration contract,
 * docs/configuration.md). lib/config.ts and every section module (lib/<area>/config.ts) use these,
 * so a malformed value always stops the start with the same kind of line:
 * `Configuration: NAME must be ..., got "value"`. Unset or empty values give the fallback.
 */

export type EnvVars = Record<string, string | undefined>;

const TRUE = ["1", "true", "yes", "on"];
const FALSE = ["0", "false", "no", "off"];

function given(value: string | undefined): string | null {
	const v = (value ?? "").trim();
	return v === "" ? null : v;
}

function range(min: number, max: number): string {
	if (min === -Infinity && max === Infinity) return "";
	if (max === Infinity) return ` of at least ${min}`;
	if (min === -Infinity) return ` of at most ${max}`;
	return ` from ${min} to ${max}`;
}

/** `1`, `true`, `yes`, `on` / `0`, `false`, `no`, `off` (any case); anything else is refused. */
export function bool(name: string, value: string | undefined, fallback: boolean): boolean {
	const v = given(value)?.toLowerCase();
	if (v === undefined) return fallback;
	if (TRUE.includes(v)) return true;
	if (FALSE.includes(v)) return false;
	throw new Error(`Configuration: ${name} must be true or false, got "${value}"`);
}

/** A finite number within [min, max]. */
export function num(name: string, value: string | undefined, fallback: number, min = -Infinity, max = Infinity): number {
	const v = given(value);
	if (v === null) return fallback;
	const n = Number(v);
	if (!Number.isFinite(n) || n < min || n > max) throw new Error(`Configuration: ${name} must be a number${range(min, max)}, got "${value}"`);
	return n;
}

/** A whole number within [min, max]. */
export function int(name: string, value: string | undefined, fallback: number, min = -Infinity, max = Infinity): number {
	const v = given(value);
	if (v === null) return fallback;
	const n = Number(v);
	if (!Number.isInteger(n) || n < min || n > max) throw new Error(`Configuration: ${name} must be a whole number${range(min, max)}, got "${value}"`);
	return n;
}

/** A comma list; blanks around items and empty items are dropped. */
export function list(value: string | undefined): string[] {
	return (value || "").split(",").map(s => s.trim()).filter(Boolean);
}

/** An http(s) URL, as given. */
export function httpUrl(name: string, value: string): string {
	let url: URL;
	try {
		url = new URL(value);
	} catch {
		throw new Error(`Configuration: ${name} must be an http(s) URL, got "${value}"`);
	}
	if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error(`Configuration: ${name} must be an http(s) URL, got "${value}"`);
	return value;
}
