/**
 * The API reference page (GET /docs) in a real browser (Chromium through playwright-core) against
 * a real node: Swagger UI renders every operation of GET /api/v1/openapi.json from the gateway's
 * own assets, under the page's strict CSP with no violation and no request to another origin.
 * DOCS_SCREENSHOTS=<folder> saves docs/img's screenshot. Runs in the sqlite jest project only.
 */
import type { Browser } from "playwright-core";
import { launchBrowser } from "../helpers/browser";
import { startNode, TestNode } from "../helpers/harness";

const SHOTS = process.env.DOCS_SCREENSHOTS;

describe("API reference page in a browser", () => {
	let node: TestNode;
	let browser: Browser;
	let closeBrowser: () => Promise<void>;
	let origin: string;

	beforeAll(async () => {
		node = await startNode();
		origin = node.baseUrl.replace(/\/api\/v1$/, "");
		({ browser, close: closeBrowser } = await launchBrowser());
	}, 120_000);

	afterAll(async () => {
		await closeBrowser?.();
		await node?.stop();
	});

	it("renders every operation of the document offline, with no CSP violation", async () => {
		const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
		const elsewhere: string[] = [];
		// Nothing may leave the gateway's origin (no CDN, no validator badge): such requests are refused and recorded.
		await context.route("**/*", route => {
			const url = route.request().url();
			if (url.startsWith(origin) || url.startsWith("data:")) return route.continue();
			elsewhere.push(url);
			return route.abort();
		});
		const page = await context.newPage();
		const errors: string[] = [];
		page.on("pageerror", e => errors.push(e.message));
		page.on("console", m => {
			if (m.type() === "error") errors.push(m.text());
		});
		// Registered by the browser itself (not a page script), so the CSP does not apply to it.
		await page.addInitScript(
			`window.cspViolations = []; document.addEventListener("securitypolicyviolation", e => window.cspViolations.push(e.violatedDirective + " " + e.blockedURI));`,
		);
		const res = await page.goto(`${origin}/docs`);
		expect(res?.status()).toBe(200);
		const csp = res?.headers()["content-security-policy"] || "";
		expect(csp).toContain("script-src 'self'");
		expect(csp).toContain("style-src 'self'");
		expect(csp).not.toContain("unsafe-inline");
		expect(csp).not.toContain("unsafe-eval");

		const doc = (await node.http("GET", "/openapi.json")).body;
		// The paths' operations and the webhooks' (Swagger UI lists both).
		const operations = [...Object.values(doc.paths as Record<string, object>), ...Object.values(doc.webhooks as Record<string, object>)].reduce((n: number, ops) => n + Object.keys(ops).length, 0);
		await page.waitForFunction(`document.querySelectorAll(".opblock").length >= ${operations}`, undefined, { timeout: 60_000 });
		expect(await page.locator(".opblock").count()).toBe(operations);
		await expect(page.locator(".info .title").first().textContent()).resolves.toContain("Crypto Payment Gateway API");

		// One operation opened: its parameters and response schemas render from the document.
		const create = page.locator(".opblock.opblock-post").filter({ has: page.locator('[data-path="/api/v1/payment_intents"]') });
		await create.locator(".opblock-summary").first().click();
		await create.locator(".responses-wrapper").first().waitFor({ timeout: 30_000 });
		await expect(create.first().textContent()).resolves.toContain("Idempotency-Key");

		if (SHOTS) await page.screenshot({ path: `${SHOTS}/api-reference.png`, fullPage: false });
		const violations = (await page.evaluate("window.cspViolations")) as string[];
		expect({ violations, errors, elsewhere }).toEqual({ violations: [], errors: [], elsewhere: [] });
		await context.close();
	}, 120_000);

	it("serves only the page's own assets", async () => {
		const asset = await fetch(`${origin}/docs/assets/init.js`);
		expect(asset.status).toBe(200);
		expect(asset.headers.get("content-type")).toMatch(/^text\/javascript/);
		expect(await asset.text()).toContain("/api/v1/openapi.json");
		const missing = await fetch(`${origin}/docs/assets/..%2Fpackage.json`);
		expect(missing.status).toBe(404);
		expect(await missing.json()).toEqual({ statusCode: 404, message: "Not Found", error: "Not Found" });
	});
});
