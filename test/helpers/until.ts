/** Polls `probe` until it answers something truthy (returned) or the time is up (an error naming `what`). */
export async function until<T>(what: string, probe: () => Promise<T | null | undefined | false> | T | null | undefined | false, timeoutMs = 20_000, detail?: () => string): Promise<T> {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		const value = await probe();
		if (value) return value;
		if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}${detail ? `\n${detail()}` : ""}`);
		await new Promise(r => setTimeout(r, 50));
	}
}
