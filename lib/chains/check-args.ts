/** The options every chain's `npm run chain:check` takes, read the same way (pure; errors for the person at the terminal). */

/** `--blocks`: how many of the newest blocks to read (default 10, 1..500). */
export function blocksOption(value: string | true | undefined): number {
	if (typeof value !== "string") return 10;
	const blocks = /^\d{1,3}$/.test(value) ? Number(value) : NaN;
	if (!(blocks >= 1 && blocks <= 500)) throw new Error(`--blocks must be a whole number from 1 to 500, got "${value}"`);
	return blocks;
}

/** `--address A[,B...]` in the codec's canonical form; null when not given (every account). */
export function addressesOption(value: string | true | undefined, canonical: (address: string) => string | null, what: string): string[] | null {
	if (typeof value !== "string") return null;
	return value.split(",").map(a => {
		const c = canonical(a.trim());
		if (!c) throw new Error(`--address: "${a.trim()}" is not ${what}`);
		return c;
	});
}
