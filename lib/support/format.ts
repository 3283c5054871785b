/**
 * Plain-text layout of the support commands' answers (lib/support/commands.ts): aligned
 * "label  value" blocks and column tables, no colours (the text also goes to logs and tests).
 */

export const NONE = "—";

export function orNone(value: string | number | null | undefined): string {
	return value === null || value === undefined || value === "" ? NONE : String(value);
}

/** `label  value` lines, labels padded to one width, indented by two spaces. */
export function fields(rows: Array<[string, string | number | null | undefined]>): string {
	const width = Math.max(...rows.map(([label]) => label.length));
	return rows.map(([label, value]) => `  ${label.padEnd(width)}  ${orNone(value)}`).join("\n");
}

/** A table: a header row and rows, each column padded to its widest cell. */
export function table(headers: string[], rows: string[][]): string {
	const widths = headers.map((h, i) => Math.max(h.length, ...rows.map(r => (r[i] ?? "").length)));
	const line = (cells: string[]) => `  ${cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]))).join("  ")}`.trimEnd();
	return [line(headers), ...rows.map(line)].join("\n");
}

/** "3 s ago", "4 min ago", "2 h ago", "5 d ago", or "in 3 s" for a time after `now`. */
export function age(at: string | null | undefined, now: Date): string {
	if (!at) return NONE;
	const ms = now.getTime() - new Date(at).getTime();
	const abs = Math.abs(ms);
	const amount = abs < 60_000 ? `${Math.round(abs / 1000)} s` : abs < 3_600_000 ? `${Math.round(abs / 60_000)} min` : abs < 86_400_000 ? `${Math.round(abs / 3_600_000)} h` : `${Math.round(abs / 86_400_000)} d`;
	return ms >= 0 ? `${amount} ago` : `in ${amount}`;
}

export function plural(n: number, word: string): string {
	return `${n} ${word}${n === 1 ? "" : "s"}`;
}
