import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { outboxFileName, writeOutboxMail } from "../../../lib/mail/outbox";

describe("mail outbox", () => {
	it("file names sort in creation order, even within one millisecond or if the clock steps back", () => {
		const names = [outboxFileName(1_000), outboxFileName(1_000), outboxFileName(999), outboxFileName(2_000_000_000_000)];
		expect([...names].sort()).toEqual(names);
		expect(new Set(names).size).toBe(names.length);
		for (const n of names) expect(n).toMatch(/^\d{15}-\d{6}-[0-9a-f]{8}\.json$/);
	});

	it("writes the mail as JSON and leaves no temporary file", async () => {
		const dir = fs.mkdtempSync(path.join(os.tmpdir(), "outbox-"));
		try {
			const mail = { to: "a@b.co", subject: "s", text: "t", html: "<p>h</p>", template: "generic", data: { x: 1 }, createdAt: new Date(0).toISOString() };
			const name = await writeOutboxMail(path.join(dir, "mail"), mail);
			expect(fs.readdirSync(path.join(dir, "mail"))).toEqual([name]);
			expect(JSON.parse(fs.readFileSync(path.join(dir, "mail", name), "utf8"))).toEqual(mail);
		} finally {
			fs.rmSync(dir, { recursive: true, force: true });
		}
	});
});
