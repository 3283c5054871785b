import http from "node:http";
import fs from "node:fs";
import path from "node:path";
import type { AddressInfo } from "node:net";
import { startNode, TestNode } from "../helpers/harness";
import { PASSWORD, authRoutesReady, uniqueEmail } from "./auth.helpers";

describe("mail: outbox (no provider configured)", () => {
	let node: TestNode;
	beforeAll(async () => {
		node = await startNode({ services: ["api", "mail", "auth"] });
		await authRoutesReady(node);
	});
	afterAll(async () => node?.stop());

	it("writes one JSON file per mail with the documented fields", async () => {
		const to = uniqueEmail("outbox");
		const res = await node.broker.call("mail.send", { to, template: "resetPassword", data: { hash: "abc_DEF-123" }, lang: "en" });
		expect(res).toMatchObject({ transport: "outbox" });
		const mails = node.mails(to);
		expect(mails).toHaveLength(1);
		expect(Object.keys(mails[0]).sort()).toEqual(["createdAt", "data", "html", "subject", "template", "text", "to"]);
		expect(mails[0]).toMatchObject({ to, template: "resetPassword", subject: "Reset your password", data: { hash: "abc_DEF-123" } });
		expect(mails[0].text).toContain(`${node.config.publicUrl}/password-change?hash=abc_DEF-123`);
		expect(new Date(mails[0].createdAt).toISOString()).toBe(mails[0].createdAt);
		// No half-written temporary files are left behind.
		expect(fs.readdirSync(path.join(node.dataDir, "mail")).filter(f => !f.endsWith(".json"))).toEqual([]);
	});

	it("file names sort in creation order", async () => {
		const to = uniqueEmail("order");
		for (let i = 0; i < 25; i++) await node.broker.call("mail.send", { to, template: "loginCode", data: { code: String(100000 + i) } });
		expect(node.mails(to).map(m => m.data.code)).toEqual(Array.from({ length: 25 }, (_, i) => String(100000 + i)));
	});

	it("renders Spanish and escapes data in HTML", async () => {
		const to = uniqueEmail("es");
		await node.broker.call("mail.send", { to, template: "confirm", data: { hash: "h1", firstName: '<img src=x onerror="alert(1)">' }, lang: "es" });
		const mail = node.lastMail(to);
		expect(mail.subject).toBe("Confirma tu correo electrónico");
		expect(mail.html).not.toContain("<img");
		expect(mail.html).toContain("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;");
		expect(mail.text).toContain("Hola <img");
	});

	it("renders the generic template from data", async () => {
		const to = uniqueEmail("generic");
		await node.broker.call("mail.send", { to, template: "generic", data: { subject: "Hello\r\nBcc: x@evil.test", text: "Line <b>one</b>\n\nLine two" } });
		const mail = node.lastMail(to);
		expect(mail.subject).toBe("Hello Bcc: x@evil.test");
		expect(mail.text).toContain("Line <b>one</b>");
		expect(mail.html).toContain("Line &lt;b&gt;one&lt;/b&gt;");
	});

	it("rejects bad input: unknown template, bad address, missing template data", async () => {
		await expect(node.broker.call("mail.send", { to: uniqueEmail(), template: "nope", data: {} })).rejects.toMatchObject({ name: "ValidationError" });
		await expect(node.broker.call("mail.send", { to: "not-an-address", template: "generic", data: {} })).rejects.toMatchObject({ name: "ValidationError" });
		await expect(node.broker.call("mail.send", { to: uniqueEmail(), template: "loginCode", data: {} })).rejects.toMatchObject({ code: 400 });
	});

	it("is not reachable over HTTP", async () => {
		const res = await node.http("POST", "/mail/send", { body: { to: uniqueEmail(), template: "generic", data: { subject: "x", text: "y" } } });
		expect(res.status).toBe(404);
	});
});

describe("mail: Mailgun", () => {
	const DOMAIN = "mg.example.test";
	const API_KEY = "key-test-123";
	let server: http.Server;
	let failNext = false;
	const requests: Array<{ method: string; url: string; auth: string; fields: Record<string, string[]> }> = [];
	let node: TestNode;

	beforeAll(async () => {
		server = http.createServer(async (req, res) => {
			const chunks: Buffer[] = [];
			for await (const c of req) chunks.push(c as Buffer);
			// The platform's own multipart parser reads the form mailgun.js sent.
			const form = await new Request("http://local/", { method: "POST", headers: req.headers as Record<string, string>, body: Buffer.concat(chunks) }).formData();
			const fields: Record<string, string[]> = {};
			for (const [k, v] of form.entries()) (fields[k] ||= []).push(String(v));
			requests.push({ method: req.method || "", url: req.url || "", auth: req.headers.authorization || "", fields });
			res.setHeader("Content-Type", "application/json");
			if (failNext) {
				failNext = false;
				res.statusCode = 500;
				return void res.end(JSON.stringify({ message: "boom" }));
			}
			res.end(JSON.stringify({ id: "<20240101.1@mg.example.test>", message: "Queued. Thank you." }));
		});
		await new Promise<void>(resolve => server.listen(0, "127.0.0.1", resolve));
		const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
		node = await startNode({ env: { MAILGUN_API_KEY: API_KEY, MAILGUN_DOMAIN: DOMAIN, MAILGUN_URL: url } });
		await authRoutesReady(node);
	});
	afterAll(async () => {
		await node?.stop();
		await new Promise(resolve => server.close(resolve));
	});

	it("sends through the Mailgun API instead of the outbox", async () => {
		const email = uniqueEmail("mailgun");
		const res = await node.http("POST", "/auth/email/register", { body: { email, password: PASSWORD, firstName: "Mail", lastName: "Gun" } });
		expect(res.status).toBe(204);
		expect(requests).toHaveLength(1);
		const sent = requests[0];
		expect(sent.method).toBe("POST");
		expect(sent.url).toBe(`/v3/${DOMAIN}/messages`);
		expect(sent.auth).toBe(`Basic ${Buffer.from(`api:${API_KEY}`).toString("base64")}`);
		expect(sent.fields.to).toEqual([email]);
		expect(sent.fields.subject).toEqual(["Confirm your email"]);
		expect(sent.fields.text[0]).toContain("/confirm-email?hash=");
		expect(sent.fields.html[0]).toContain("/confirm-email?hash=");
		expect(sent.fields.from[0]).toContain(DOMAIN);
		expect(node.mails()).toHaveLength(0);
	});

	it("a provider failure does not fail the request that triggered it", async () => {
		failNext = true;
		const before = requests.length;
		const email = uniqueEmail("mgfail");
		const res = await node.http("POST", "/auth/forgot/password", { body: { email } });
		expect(res.status).toBe(204);
		expect(requests).toHaveLength(before); // unknown address: nothing sent at all
		failNext = true;
		const reg = await node.http("POST", "/auth/email/register", { body: { email, password: PASSWORD, firstName: "A", lastName: "B" } });
		expect(reg.status).toBe(204);
		expect(requests).toHaveLength(before + 1);
		const code = await node.http("POST", "/auth/email/register/send-code", { body: { email: uniqueEmail("mgcode") } });
		expect(code.status).toBe(200);
	});

	it("mail.send reports the failure to its caller", async () => {
		failNext = true;
		await expect(node.broker.call("mail.send", { to: uniqueEmail(), template: "loginCode", data: { code: "123456" } })).rejects.toMatchObject({ code: 503 });
	});
});
