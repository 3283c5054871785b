/** Editing a `.env` file in place: the dev chain script records what it deployed there. */
import fs from "node:fs";

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/**
 * `content` with each `KEY=value` of `values` set: an existing line (also `export KEY=...`) is
 * replaced where it stands, a missing key is appended; every other line (comments, blank lines,
 * other keys) is kept as it was.
 */
export function setEnvValues(content: string, values: Record<string, string>): string {
	const lines = content === "" ? [] : content.replace(/\r?\n$/, "").split(/\r?\n/);
	for (const [key, value] of Object.entries(values)) {
		if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) throw new Error(`Not an environment variable name: ${key}`);
		if (/[\r\n]/.test(value)) throw new Error(`${key}: a value cannot span lines`);
		const pattern = new RegExp(`^\\s*(export\\s+)?${escapeRegExp(key)}\\s*=`);
		const line = `${key}=${value}`;
		const at = lines.findIndex(l => pattern.test(l));
		if (at >= 0) {
			lines[at] = line;
			// A later duplicate would win when the file is read: drop it.
			for (let i = lines.length - 1; i > at; i--) if (pattern.test(lines[i])) lines.splice(i, 1);
		} else {
			lines.push(line);
		}
	}
	return `${lines.join("\n")}\n`;
}

/** Writes the values into the file (created if missing), atomically. */
export function updateEnvFile(file: string, values: Record<string, string>): void {
	const current = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : "";
	const tmp = `${file}.${process.pid}.tmp`;
	fs.writeFileSync(tmp, setEnvValues(current, values));
	fs.renameSync(tmp, file);
}
