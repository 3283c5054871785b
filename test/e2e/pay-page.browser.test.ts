/**
 * The hosted pay page in a real browser (Chromium through playwright-core) against a real node:
 * a sandbox payment from choosing the token to the merchant's return URL, canceled and expired
 * links, the payer's support choice, 360 px, Spanish, an unknown slug. Runs in the sqlite jest project only (browser time).
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { launchBrowser, pngPixels, verticalGap } from "../helpers/browser";
import { TestNode } from "../helpers/harness";
import { createMerchant, IDS, intentBody, Merchant, setPrices, startPaymentsNode } from "./payments.helpers";

const SHOP = "https://shop.example.com";
const SHOTS = process.env.PAY_PAGE_SCREENSHOTS; // a folder: saves the README's screenshots

describe("hosted pay page in a browser", () => {
	let node: TestNode;
	let merchant: Merchant;
	let browser: Browser;
	let closeBrowser: () => Promise<void>;
	let origin: string;

	beforeAll(async () => {
		node = await startPaymentsNode({ env: { PAY_EVENTS_POLL_MS: "200" } });
		origin = node.baseUrl.replace(/\/api\/v1$/, "");
		merchant = await createMerchant(node);
		await setPrices(node, { [IDS.sepoliaEth]: "2000", [IDS.sepoliaUsdc]: "1", [IDS.baseSepoliaUsdc]: "1" });
		({ browser, close: closeBrowser } = await launchBrowser());
	}, 120_000);

	afterAll(async () => {
		await closeBrowser?.();
		await node?.stop();
	});

	/** A sandbox intent (with the merchant's return and cancel URLs): its pay page slug. */
	async function intent(overrides: Record<string, unknown> = {}) {
		const res = await node.http("POST", "/payment_intents", {
			key: merchant.sandboxKey,
			body: intentBody({ return_url: `${SHOP}/return`, cancel_url: `${SHOP}/cancel`, description: "Order 42 — blue T-shirt", ...overrides }),
		});
		expect(res.status).toBe(200);
		return { id: res.body.id as string, slug: (res.body.paymentLink.link as string).split("/pay/")[1] };
	}

	/** A page whose requests to the shop are answered locally (no network). */
	async function open(opts: { width?: number; height?: number; locale?: string; colorScheme?: "light" | "dark" } = {}): Promise<{ page: Page; context: BrowserContext; errors: string[] }> {
		const context = await browser.newContext({ viewport: { width: opts.width ?? 1280, height: opts.height ?? 900 }, locale: opts.locale ?? "en-US", colorScheme: opts.colorScheme ?? "light" });
		await context.route(`${SHOP}/**`, route => route.fulfill({ status: 200, contentType: "text/html", body: "<h1>Shop</h1>" }));
		const page = await context.newPage();
		const errors: string[] = [];
		page.on("pageerror", e => errors.push(e.message));
		page.on("console", m => {
			// A CSP violation is a console error: the page must need nothing the policy forbids.
			if (m.type() === "error" && /Content Security Policy/i.test(m.text())) errors.push(m.text());
		});
		return { page, context, errors };
	}

	/**
	 * The pixels missing from the rule over the quote's Total row, between the label's left edge and
	 * the amount's right edge (0: unbroken). The rule is the one pixel row, in a strip just above the
	 * total, that differs from the card's background in the most places.
	 */
	async function totalRuleGaps(page: Page): Promise<number> {
		const label = await page.locator("#quote").getByText("Total", { exact: true }).boundingBox();
		const amount = await page.locator("#quote-total").boundingBox();
		if (!label || !amount) throw new Error("the Total row is not laid out");
		const x = Math.ceil(label.x) + 1;
		const clip = { x, y: Math.floor(Math.min(label.y, amount.y)) - 8, width: Math.floor(amount.x + amount.width) - 1 - x, height: 10 };
		const { width, height, data } = await pngPixels(page.context(), await page.screenshot({ clip }));
		const card = ((await page.evaluate("getComputedStyle(document.getElementById('app')).backgroundColor")) as string).match(/\d+/g)!.map(Number);
		let best = 0;
		for (let y = 0; y < height; y++) {
			let drawn = 0;
			for (let i = y * width * 4; i < (y + 1) * width * 4; i += 4) if ([0, 1, 2].some(c => Math.abs(data[i + c] - card[c]) > 8)) drawn++;
			best = Math.max(best, drawn);
		}
		return width - best;
	}

	it("pays a sandbox link: token choice, quote, address and QR, simulation, paid, back to the shop", async () => {
		const { slug } = await intent();
		const { page, context, errors } = await open();
		const res = await page.goto(`${origin}/pay/${slug}`);
		expect(res?.status()).toBe(200);
		const csp = res?.headers()["content-security-policy"] || "";
		expect(csp).toContain("script-src 'self'");
		expect(csp).not.toContain("unsafe-inline");
		// No watcher follows Sepolia here: the banner says plainly that only the simulation works.
		expect(await page.locator("#sandbox-banner").textContent()).toBe("Test mode: no watcher follows Ethereum Sepolia, so coins sent there would never be seen. Only “Simulate payment” works here.");
		expect(await page.locator("h1").textContent()).toBe("Order 42 — blue T-shirt");
		expect(await page.locator("#amount").textContent()).toBe("0.5 ETH on Ethereum Sepolia");
		// The link's own token first, quoted without fees.
		await page.locator("#quote-total").waitFor();
		expect(await page.locator("#quote-total").textContent()).toBe("0.5 ETH");
		// Another token on another network: converted and bridged, fees broken down.
		await page.getByLabel("Pay with").selectOption(IDS.baseSepoliaUsdc);
		await page.locator("#sandbox-banner", { hasText: "no watcher follows Base Sepolia" }).waitFor();
		await page.locator("#quote-total", { hasText: "USDC" }).waitFor();
		expect(await page.locator("#quote-amount").textContent()).toBe("1000 USDC");
		expect(await page.locator("#quote-bridge").textContent()).toBe("1.5 USDC");
		expect(await page.locator("#quote-support").textContent()).toBe("0 USDC");
		expect(await page.locator("#quote-total").textContent()).toBe("1001.5 USDC");
		expect(await totalRuleGaps(page)).toBe(0);
		if (SHOTS) await page.screenshot({ path: `${SHOTS}/pay-page-quote-desktop.png`, fullPage: true });
		await page.getByRole("button", { name: "Continue to payment" }).click();
		// The deposit address, its QR code (EIP-681 with token and amount), the countdown.
		const address = (await page.locator("#address").textContent()) as string;
		expect(address).toMatch(/^0x[0-9a-fA-F]{40}$/);
		const uri = await page.locator("#qr").getAttribute("data-uri");
		expect(uri).toMatch(new RegExp(`^ethereum:0x[0-9a-fA-F]{40}@84532/transfer\\?address=${address}&uint256=1001500000$`));
		expect(await page.locator("#qr path").getAttribute("d")).toMatch(/^M/);
		expect(await page.locator("#countdown").textContent()).toMatch(/^(29|30):\d\d$/);
		expect(await page.locator("#status").textContent()).toBe("Waiting for your payment…");
		expect(await page.locator("#status").getAttribute("aria-live")).toBe("polite");
		expect(await page.locator("#simulation-only").textContent()).toBe("Only “Simulate payment” completes this checkout: do not send coins to this address.");
		expect(await verticalGap(page.locator("#status"), page.locator("#simulation-only"))).toBeGreaterThanOrEqual(12);
		// The checkout is in the URL: a reload comes back to it.
		expect(page.url()).toMatch(/\/pay\/pl_\w+\/checkout\?transaction=[0-9a-f-]{36}/);
		await page.reload();
		expect(await page.locator("#address").textContent()).toBe(address);
		if (SHOTS) await page.screenshot({ path: `${SHOTS}/pay-page-desktop.png`, fullPage: true });
		await page.getByRole("button", { name: "Simulate payment" }).click();
		await page.locator("#status", { hasText: /Payment received/ }).waitFor();
		await page.waitForURL(`${SHOP}/return`, { timeout: 10_000 });
		expect(errors).toEqual([]);
		await context.close();
	});

	it("lets the payer add support: the quote's support line and total change, and the checkout asks for the new total", async () => {
		const { slug } = await intent();
		const { page, context, errors } = await open();
		await page.goto(`${origin}/pay/${slug}`);
		await page.locator("#quote-total", { hasText: "0.5 ETH" }).waitFor();
		const support = page.getByLabel("Add support");
		expect(await support.inputValue()).toBe("0");
		expect(await support.getAttribute("aria-describedby")).toBe("support-hint");
		expect(await page.locator("#quote-support").textContent()).toBe("0 ETH");
		await support.selectOption("1");
		await page.locator("#quote-total", { hasText: "0.505 ETH" }).waitFor();
		expect(await page.locator("#quote-amount").textContent()).toBe("0.5 ETH");
		expect(await page.locator("#quote-support").textContent()).toBe("0.005 ETH");
		await support.selectOption("2");
		await page.locator("#quote-total", { hasText: "0.51 ETH" }).waitFor();
		expect(await page.locator("#quote-support").textContent()).toBe("0.01 ETH");
		await page.getByRole("button", { name: "Continue to payment" }).click();
		expect(await page.locator("#due").textContent()).toBe("Send exactly 0.51 ETH on Ethereum Sepolia");
		expect(errors).toEqual([]);
		await context.close();
	});

	it("follows a payment made elsewhere through the event stream and survives a lost connection", async () => {
		const { slug } = await intent();
		const { page, context, errors } = await open();
		await page.goto(`${origin}/pay/${slug}`);
		await page.getByRole("button", { name: "Continue to payment" }).click();
		await page.locator("#address").waitFor();
		const txId = new URL(page.url()).searchParams.get("transaction") as string;
		// The event stream goes down for a moment (the page falls back to polling), then the payment arrives.
		await context.setOffline(true);
		await page.waitForTimeout(500);
		await context.setOffline(false);
		const sim = await node.http("POST", `/payments/links/${slug}/simulate`, { body: { transactionId: txId } });
		expect(sim.status).toBe(200);
		await page.waitForURL(`${SHOP}/return`, { timeout: 20_000 });
		expect(errors).toEqual([]);
		await context.close();
	});

	it("shows a canceled payment with the merchant's cancel URL", async () => {
		const { id, slug } = await intent();
		expect((await node.http("POST", `/payment_intents/${id}/cancel`, { key: merchant.sandboxKey })).status).toBe(200);
		const { page, context } = await open();
		await page.goto(`${origin}/pay/${slug}`);
		await page.locator("#status", { hasText: /canceled/ }).waitFor();
		expect(await page.locator("#status").textContent()).toBe("This payment was canceled.");
		expect(await page.locator("#back").getAttribute("href")).toBe(`${SHOP}/cancel`);
		expect(await verticalGap(page.locator("#status"), page.locator("#back"))).toBeGreaterThanOrEqual(12);
		expect(await page.locator("#continue").count()).toBe(0);
		await context.close();
	});

	it("shows an expired checkout once its window has passed", async () => {
		const { slug } = await intent();
		const { page, context } = await open();
		await page.goto(`${origin}/pay/${slug}`);
		await page.getByRole("button", { name: "Continue to payment" }).click();
		await page.locator("#address").waitFor();
		node.clock.advance(31 * 60_000);
		try {
			await page.locator("#status", { hasText: /run out/ }).waitFor({ timeout: 10_000 });
			expect(await page.locator("#back").getAttribute("href")).toBe(`${SHOP}/cancel`);
		} finally {
			node.clock.reset();
		}
		await context.close();
	});

	it("shows an expired link", async () => {
		const { slug } = await intent({ expires_at: new Date(Date.now() + 60_000).toISOString() });
		node.clock.advance(2 * 60_000);
		try {
			const { page, context } = await open();
			await page.goto(`${origin}/pay/${slug}`);
			await page.locator("#status", { hasText: /run out/ }).waitFor();
			await context.close();
		} finally {
			node.clock.reset();
		}
	});

	it("fits a 360 px phone screen, dark, without horizontal scrolling", async () => {
		const { slug } = await intent();
		const { page, context, errors } = await open({ width: 360, height: 740, colorScheme: "dark" });
		await page.goto(`${origin}/pay/${slug}`);
		await page.locator("#quote-total").waitFor();
		expect(await totalRuleGaps(page)).toBe(0);
		await page.getByRole("button", { name: "Continue to payment" }).click();
		await page.locator("#qr").waitFor();
		expect(await verticalGap(page.locator("#status"), page.locator("#simulation-only"))).toBeGreaterThanOrEqual(12);
		expect(await page.evaluate("document.documentElement.scrollWidth")).toBeLessThanOrEqual(360);
		const qr = await page.locator("#qr").boundingBox();
		expect(qr && qr.x >= 0 && qr.x + qr.width <= 360).toBe(true);
		// Keyboard order: the copy button, then simulate.
		await page.locator("#copy").focus();
		await page.keyboard.press("Tab");
		expect(await page.evaluate("document.activeElement && document.activeElement.id")).toBe("simulate");
		if (SHOTS) await page.screenshot({ path: `${SHOTS}/pay-page-360.png`, fullPage: true });
		expect(errors).toEqual([]);
		await context.close();
	});

	it("speaks Spanish from the browser language and from ?lang=es", async () => {
		const { slug } = await intent();
		for (const [locale, query] of [["es-ES", ""], ["en-US", "?lang=es"]]) {
			const { page, context } = await open({ locale });
			await page.goto(`${origin}/pay/${slug}${query}`);
			await page.getByLabel("Pagar con").waitFor();
			await page.getByLabel("Añadir apoyo").waitFor();
			expect(await page.locator("html").getAttribute("lang")).toBe("es");
			expect(await page.locator("#amount").textContent()).toBe("0.5 ETH en Ethereum Sepolia");
			await page.getByRole("button", { name: "Continuar al pago" }).waitFor();
			expect(await page.locator("#sandbox-banner").textContent()).toMatch(/^Modo de prueba: ningún vigilante de cadena sigue Ethereum Sepolia.*Aquí solo funciona «Simular pago»\.$/);
			await context.close();
		}
	});

	it("answers a friendly 404 page for unknown and deleted slugs", async () => {
		const { page, context } = await open();
		const res = await page.goto(`${origin}/pay/pl_doesNotExist000000000000`);
		expect(res?.status()).toBe(404);
		expect(await page.locator("h1").textContent()).toBe("We can't find this payment link");
		const link = await node.http("POST", "/payments/links", { token: merchant.token, body: { title: "Gone", amount: "1", tokenId: IDS.sepoliaUsdc, networkId: IDS.sepolia } });
		expect((await node.http("DELETE", `/payments/links/${link.body.id}`, { token: merchant.token })).status).toBe(204);
		expect((await page.goto(`${origin}/pay/${link.body.slug}?lang=es`))?.status()).toBe(404);
		expect(await page.locator("h1").textContent()).toBe("No encontramos este enlace de pago");
		await context.close();
	});
});
