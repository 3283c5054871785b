import { MAIL_TEMPLATES, MailTemplateError, escapeHtml, renderMail } from "../../../lib/mail/templates";

const URL = "https://pay.example.com";
const SAMPLE: Record<string, Record<string, unknown>> = {
	confirm: { hash: "h1", firstName: "Ada" },
	confirmNew: { hash: "h2" },
	resetPassword: { hash: "h3" },
	loginCode: { code: "012345" },
	registerCode: { code: "987654" },
	accountExists: {},
	emailChanged: { newEmail: "new@example.com" },
	generic: { subject: "Hi", text: "Body" },
};

describe("mail templates", () => {
	it.each(MAIL_TEMPLATES.map(t => [t]))("%s renders in English and Spanish", template => {
		const en = renderMail(template, SAMPLE[template], "en", URL);
		const es = renderMail(template, SAMPLE[template], "es", URL);
		for (const m of [en, es]) {
			expect(m.subject.length).toBeGreaterThan(0);
			expect(m.subject).not.toMatch(/[\r\n]/);
			expect(m.text.length).toBeGreaterThan(0);
			expect(m.html).toMatch(/^<!doctype html>/);
		}
		if (template !== "generic") expect(es.subject).not.toBe(en.subject);
	});

	it("links point at the public URL and carry the hash", () => {
		expect(renderMail("confirm", { hash: "a/b c" }, "en", `${URL}/`).text).toContain(`${URL}/confirm-email?hash=a%2Fb%20c`);
		expect(renderMail("confirmNew", { hash: "x" }, "en", URL).text).toContain(`${URL}/confirm-new-email?hash=x`);
		expect(renderMail("resetPassword", { hash: "y" }, "en", URL).html).toContain(`href="${URL}/password-change?hash=y"`);
	});

	it("codes appear in subject and body", () => {
		const m = renderMail("loginCode", { code: "012345" }, "en", URL);
		expect(m.subject).toContain("012345");
		expect(m.text).toContain("012345");
		expect(m.html).toContain("012345");
	});

	it("escapes data in HTML", () => {
		const m = renderMail("confirm", { hash: "h", firstName: `<script>"x"&'y'</script>` }, "en", URL);
		expect(m.html).not.toContain("<script>");
		expect(m.html).toContain("&lt;script&gt;&quot;x&quot;&amp;&#39;y&#39;&lt;/script&gt;");
		expect(escapeHtml(`<a href="x">&'`)).toBe("&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
	});

	it("falls back to English for other languages", () => {
		expect(renderMail("resetPassword", { hash: "h" }, "fr", URL).subject).toBe("Reset your password");
		expect(renderMail("resetPassword", { hash: "h" }, undefined, URL).subject).toBe("Reset your password");
	});

	it("refuses missing data", () => {
		expect(() => renderMail("confirm", {}, "en", URL)).toThrow(MailTemplateError);
		expect(() => renderMail("loginCode", { code: "" }, "en", URL)).toThrow(MailTemplateError);
		expect(() => renderMail("nope" as never, {}, "en", URL)).toThrow(MailTemplateError);
	});
});
