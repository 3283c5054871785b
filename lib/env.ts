/** Reading settings from an environment object (the configuration contract, docs/configuration.md). */

export type EnvVars = Record<string, string | undefined>;

/** A whole-number setting within [min, max]; unset or empty gives the fallback, anything else out of range stops the start. */
export function wholeNumber(env: EnvVars, name: string, fallback: number, min: number, max: number): number {
	const raw = (env[name] ?? "").trim();
	if (raw === "") return fallback;
	const n = Number(raw);
	if (!Number.isInteger(n) || n < min || n > max) throw new Error(`Configuration: ${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
	return n;
}
