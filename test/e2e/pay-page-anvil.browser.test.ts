/**
 * The pay page with a real chain: anvil (automine off, blocks mined by hand), the EVM watcher,
 * and Chromium. The test pays the page's deposit address from a script and watches the page go
 * through "confirming n of m" to paid and back to the shop. sqlite project only.
 */
import { parseEther } from "ethers";
import type { Browser } from "playwright-core";
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import type { Anvil } from "../helpers/anvil";
import { until } from "../helpers/until";
import type { TestNode } from "../helpers/harness";
import { payPageOnAnvil } from "../helpers/pay-page";
import type { Merchant } from "./payments.helpers";

const NET = networkIdFor("anvil-local");
const ETH = tokenIdFor("anvil-local", "ETH");
const SHOP = "https://shop.example.com";

describe("hosted pay page paid on anvil", () => {
	let anvil: Anvil;
	let node: TestNode;
	let merchant: Merchant;
	let browser: Browser;
	payPageOnAnvil({ automine: false, confirmations: 3 }, t => ({ anvil, node, merchant, browser } = t));

	it("moves from waiting through confirming 1, 2 of 3 to paid as blocks are mined", async () => {
		const created = await node.http("POST", "/payment_intents", {
			key: merchant.sandboxKey,
			body: { amount: "0.25", currency: "eth", payment_method_types: ["crypto"], tokenId: ETH, networkId: NET, return_url: `${SHOP}/return`, description: "Anvil order" },
		});
		expect(created.status).toBe(200);
		// The watcher leads the local chain (its lease) before the page is opened.
		await until("anvil-local watched", async () => ((await node.http("GET", "/payments/networks", { query: { chainType: "evm", testnet: "true" } })).body as Array<{ id: string; watched: boolean }>).find(n => n.id === NET)?.watched);
		const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
		await context.route(`${SHOP}/**`, route => route.fulfill({ status: 200, contentType: "text/html", body: "<h1>Shop</h1>" }));
		const page = await context.newPage();
		await page.goto(created.body.paymentLink.link.replace(node.config.publicUrl, node.baseUrl.replace(/\/api\/v1$/, "")));
		// A real watcher follows the local chain: the banner must not say that nothing moves, nor that only the simulation works.
		const banner = (await page.locator("#sandbox-banner").textContent()) as string;
		expect(banner).toBe("Test mode: test coins sent on Anvil (local) are seen on the chain and credited like a real payment, but have no value. “Simulate payment” also completes it.");
		await page.getByRole("button", { name: "Continue to payment" }).click();
		const address = (await page.locator("#address").textContent()) as string;
		expect(await page.locator("#simulation-only").count()).toBe(0);
		expect(await page.locator("#qr").getAttribute("data-uri")).toBe(`ethereum:${address}@31337?value=${parseEther("0.25")}`);
		await page.locator("#status", { hasText: "Waiting for your payment" }).waitFor();

		await anvil.accounts[2].sendTransaction({ to: address, value: parseEther("0.25") });
		await anvil.mine(1);
		await page.locator("#status", { hasText: "Payment seen: 1 of 3 confirmations" }).waitFor({ timeout: 15_000 });
		await anvil.mine(1);
		await page.locator("#status", { hasText: "Payment seen: 2 of 3 confirmations" }).waitFor({ timeout: 15_000 });
		await anvil.mine(1);
		await page.locator("#status", { hasText: "Payment received" }).waitFor({ timeout: 15_000 });
		await page.waitForURL(`${SHOP}/return`, { timeout: 10_000 });
		await context.close();
	});
});
