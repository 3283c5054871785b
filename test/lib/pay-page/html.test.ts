import { jsonForHtml, notFoundPage, PAY_PAGE_CSP, payPageShell, pickPageLang } from "../../../lib/pay-page/html";

describe("pay page documents", () => {
	it("embeds data that cannot close its script element, escapes the title", () => {
		const html = payPageShell({ lang: "en", title: "<b>T</b>", scriptUrl: "/pay/assets/pay-A.js", styleUrl: "/pay/assets/pay-style-B.css", boot: { t: "</script><script>alert(1)</script>" } });
		expect(html).not.toContain("</script><script>alert");
		expect(html).toContain("<title>&lt;b&gt;T&lt;/b&gt;</title>");
		expect(JSON.parse(jsonForHtml({ a: "<&>\u2028" }))).toEqual({ a: "<&>\u2028" });
	});
	it("a strict policy: nothing inline, nothing foreign, no framing", () => {
		expect(PAY_PAGE_CSP).toContain("default-src 'none'");
		expect(PAY_PAGE_CSP).toContain("frame-ancestors 'none'");
		expect(PAY_PAGE_CSP).not.toMatch(/unsafe|\*/);
	});
	it("language from ?lang=, then Accept-Language", () => {
		expect(pickPageLang("es", "en-US")).toBe("es");
		expect(pickPageLang(undefined, "fr-FR,es;q=0.8")).toBe("es");
		expect(pickPageLang("de", undefined)).toBe("en");
		expect(notFoundPage("es", null)).toContain('lang="es"');
	});
});
