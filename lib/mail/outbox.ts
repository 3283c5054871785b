/**
 * The embedded mail transport: one JSON file per mail in DATA_DIR/mail, named so that a plain
 * sort of the names is creation order (zero-padded epoch ms, then a per-process counter, then
 * a random suffix against collisions between processes). Files appear atomically (write, then
 * rename), so a reader never sees half a mail.
 */
import fs from "node:fs";
import path from "node:path";
import crypto from "node:crypto";

export interface OutboxMail {
	to: string;
	subject: string;
	text: string;
	html: string;
	template: string;
	data: Record<string, unknown>;
	createdAt: string;
}

let lastMs = 0;
let counter = 0;

/** Sortable, unique file name; `nowMs` never goes backwards within a process. */
export function outboxFileName(nowMs: number = Date.now()): string {
	lastMs = Math.max(lastMs, nowMs);
	counter = (counter + 1) % 1_000_000;
	return `${String(lastMs).padStart(15, "0")}-${String(counter).padStart(6, "0")}-${crypto.randomBytes(4).toString("hex")}.json`;
}

export async function writeOutboxMail(dir: string, mail: OutboxMail): Promise<string> {
	await fs.promises.mkdir(dir, { recursive: true });
	const name = outboxFileName();
	const tmp = path.join(dir, `.${name}.tmp`);
	await fs.promises.writeFile(tmp, JSON.stringify(mail, null, 2), { mode: 0o600 });
	await fs.promises.rename(tmp, path.join(dir, name));
	return name;
}
