/**
 * What a payer's wallet reads from the pay page's QR code: the test screenshots the QR image,
 * decodes its pixels with jsQR (as a phone's scanner would) and checks the URI it holds for a
 * Litecoin checkout (`litecoin:` BIP-21, read back with bip21) and a TON checkout (the
 * `ton://transfer/` link to the non-bounceable deposit address, amount in nanotons, read with
 * @ton/core); a Tron USDT checkout (no payment URI its wallets share) holds the address alone,
 * with the exact amount and the token contract beside it. Sandbox links, sqlite project only.
 */
import { Address } from "@ton/core";
import * as bip21 from "bip21";
import Decimal from "decimal.js";
import jsQR from "jsqr";
import type { Browser, Page } from "playwright-core";
import { catalogueNetwork, networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { pngPixels, verticalGap } from "../helpers/browser";
import type { TestNode } from "../helpers/harness";
import { payPageTest } from "../helpers/pay-page";
import type { Merchant } from "./payments.helpers";

const SHOP = "https://shop.example.com";
const SHOTS = process.env.PAY_PAGE_SCREENSHOTS; // a folder: saves docs/pay-page.md's address-only screenshot

// A browser page per test on a busy machine: one checkout took over a minute with both cores loaded.
jest.setTimeout(240_000);

describe("pay page QR codes, decoded from the image", () => {
	let node: TestNode;
	let merchant: Merchant;
	let browser: Browser;
	payPageTest(() => ({ env: { PAY_EVENTS_POLL_MS: "200" } }), t => ({ node, merchant, browser } = t));

	/** A sandbox intent on `slug`'s `symbol`, opened and continued to the payment; the page, its CSP errors and the stored checkout. */
	async function checkout(slug: string, symbol: string, amount: string) {
		const created = await node.http("POST", "/payment_intents", {
			key: merchant.sandboxKey,
			body: { amount, currency: symbol.toLowerCase(), payment_method_types: ["crypto"], tokenId: tokenIdFor(slug, symbol), networkId: networkIdFor(slug), return_url: `${SHOP}/return`, description: `${symbol} order` },
		});
		expect(created.status).toBe(200);
		const context = await browser.newContext({ viewport: { width: 800, height: 1000 }, deviceScaleFactor: 2 });
		const page = await context.newPage();
		const errors: string[] = [];
		page.on("pageerror", e => errors.push(e.message));
		page.on("console", m => {
			if (m.type() === "error" && /Content Security Policy/i.test(m.text())) errors.push(m.text());
		});
		await page.goto((created.body.paymentLink.link as string).replace(node.config.publicUrl, node.baseUrl.replace(/\/api\/v1$/, "")));
		await page.getByRole("button", { name: "Continue to payment" }).click();
		await page.locator("#qr").waitFor();
		const address = (await page.locator("#address").textContent()) as string;
		const row = await node.app.models.Transaction.findOne({ where: { depositAddress: address } });
		expect(row).not.toBeNull();
		return { page, errors, address, total: row!.totalAmount, close: () => context.close() };
	}

	/** The text of the QR code as a scanner reads it: the element's screenshot, its pixels decoded by jsQR. */
	async function scan(page: Page): Promise<string> {
		const { width, height, data } = await pngPixels(page.context(), await page.locator("#qr").screenshot());
		const code = jsQR(data, width, height);
		if (!code) throw new Error("no QR code found in the image");
		return code.data;
	}

	/** "12.34500000" -> base units with `decimals`, exactly. */
	const units = (amount: string | number, decimals: number) => BigInt(new Decimal(amount).mul(new Decimal(10).pow(decimals)).toFixed());

	it("a Litecoin checkout's QR code is a litecoin: BIP-21 URI with the ltc deposit address and the amount due", async () => {
		const { page, errors, address, total, close } = await checkout("litecoin-testnet", "LTC", "0.12345678");
		expect(address).toMatch(/^(tltc1|[mnQ2])/);
		const text = await scan(page);
		expect(text).toBe(await page.locator("#qr").getAttribute("data-uri"));
		expect(text.startsWith("litecoin:")).toBe(true);
		expect(await page.locator("#wallet-link").getAttribute("href")).toBe(text);
		const { address: to, options } = bip21.decode(text, "litecoin");
		expect(to).toBe(address);
		expect(units(options.amount as number, 8)).toBe(units(total, 8));
		expect(units(total, 8)).toBe(12345678n);
		// A Bitcoin wallet refuses it instead of paying an ltc address.
		expect(() => bip21.decode(text, "bitcoin")).toThrow("Invalid BIP21 URI");
		// Wallets read the amount: no "type the amount" note.
		expect(await page.locator("#exact-note").count()).toBe(0);
		expect(errors).toEqual([]);
		await close();
	});

	it("a TON checkout's QR code is the ton://transfer link to the non-bounceable deposit address, amount in nanotons", async () => {
		const { page, errors, address, total, close } = await checkout("ton-testnet", "TON", "1.5");
		const text = await scan(page);
		expect(text).toBe(await page.locator("#qr").getAttribute("data-uri"));
		const url = new URL(text);
		expect(`${url.protocol}//${url.host}`).toBe("ton://transfer");
		expect(await page.locator("#wallet-link").getAttribute("href")).toBe(text);
		const friendly = Address.parseFriendly(url.pathname.slice(1));
		expect(friendly.isBounceable).toBe(false);
		expect(friendly.isTestOnly).toBe(true);
		expect(url.pathname.slice(1)).toBe(address);
		expect(BigInt(url.searchParams.get("amount") as string)).toBe(units(total, 9));
		expect(units(total, 9)).toBe(1_500_000_000n);
		expect(url.searchParams.get("jetton")).toBeNull();
		expect(errors).toEqual([]);
		await close();
	});

	it("a Tron USDT checkout's QR code holds the address alone; the exact amount and the token contract are beside it, with copy buttons", async () => {
		const contract = catalogueNetwork("tron-nile")!.tokens.find(t => t.symbol === "USDT")!.contractAddress;
		const { page, errors, address, close } = await checkout("tron-nile", "USDT", "12.5");
		expect(await scan(page)).toBe(address);
		expect(await page.locator("#wallet-link").count()).toBe(0);
		expect(await page.locator("#exact-note").textContent()).toBe("Send exactly 12.5 USDT: this QR code holds only the address, so your wallet cannot read the amount from it. Enter the amount yourself, and for a token pick the one whose id is shown below.");
		expect(await page.locator("#exact-amount").textContent()).toBe("12.5");
		expect(await page.locator("#exact-amount-label").textContent()).toBe("Amount to send");
		expect(await page.locator("#asset").textContent()).toBe(contract);
		expect(await page.locator("#asset-label").textContent()).toBe("USDT token contract");
		if (SHOTS) await page.screenshot({ path: `${SHOTS}/pay-page-address-only.png`, fullPage: true });
		// The note keeps as far from the address row above it as from the label below it (it touched the row once), on a phone too.
		const addressRow = page.locator("#address").locator("..");
		for (const width of [360, 800]) {
			await page.setViewportSize({ width, height: 1000 });
			const above = await verticalGap(addressRow, page.locator("#exact-note"));
			expect(above).toBeGreaterThanOrEqual(12);
			expect(above).toBeCloseTo(await verticalGap(page.locator("#exact-note"), page.locator("#exact-amount-label")), 0);
		}
		await page.getByRole("button", { name: "Copy amount" }).click();
		await page.locator("#status", { hasText: "Amount copied" }).waitFor();
		await page.getByRole("button", { name: "Copy token id" }).click();
		await page.locator("#status", { hasText: "Token id copied" }).waitFor();
		expect(errors).toEqual([]);
		await close();
	});

	it("says it in Spanish", async () => {
		const created = await node.http("POST", "/payment_intents", {
			key: merchant.sandboxKey,
			body: { amount: "3", currency: "usdt", payment_method_types: ["crypto"], tokenId: tokenIdFor("tron-nile", "USDT"), networkId: networkIdFor("tron-nile"), return_url: `${SHOP}/return` },
		});
		const context = await browser.newContext({ locale: "es-ES" });
		const page = await context.newPage();
		await page.goto((created.body.paymentLink.link as string).replace(node.config.publicUrl, node.baseUrl.replace(/\/api\/v1$/, "")));
		await page.getByRole("button", { name: "Continuar al pago" }).click();
		expect(await page.locator("#exact-note").textContent()).toMatch(/^Envía exactamente 3 USDT: este código QR solo contiene la dirección/);
		expect(await page.locator("#asset-label").textContent()).toBe("Contrato del token USDT");
		await context.close();
	});
});
