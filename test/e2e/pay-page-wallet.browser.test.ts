/**
 * "Pay with wallet" on the hosted pay page: Chromium with a stub EIP-1193 provider
 * (window.ethereum) that records what the page asks of it and hands eth_sendTransaction to a
 * real anvil node (its default accounts are unlocked), where the EVM watcher sees the payment
 * and the page goes to paid. sqlite project only (browser time).
 */
import { Interface, parseEther, parseUnits } from "ethers";
import type { Browser, Page } from "playwright-core";
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import type { Anvil } from "../helpers/anvil";
import type { TestNode } from "../helpers/harness";
import { payPageOnAnvil } from "../helpers/pay-page";
import type { Merchant } from "./payments.helpers";

const NET = networkIdFor("anvil-local");
const ETH = tokenIdFor("anvil-local", "ETH");
const USDC = tokenIdFor("anvil-local", "USDC");
const SHOP = "https://shop.example.com";
const ERC20 = new Interface(["function transfer(address to, uint256 amount) returns (bool)"]);

interface Call {
	method: string;
	params?: unknown[];
}

/**
 * The injected wallet: starts on mainnet (0x1) so the page must ask to switch; sends through
 * `__walletSend`. Calls are kept in `window.__calls` and reported to the test through
 * `__walletCall` (the page navigates back to the shop once paid, taking `window` with it).
 */
function stubWallet(account: string): void {
	const w = globalThis as unknown as { __calls: Call[]; __walletSend(tx: string): Promise<string>; __walletCall(call: string): Promise<void>; ethereum: unknown };
	let chainId = "0x1";
	w.__calls = [];
	w.ethereum = {
		isStub: true,
		async request({ method, params }: Call): Promise<unknown> {
			const call = { method, params: params && JSON.parse(JSON.stringify(params)) };
			w.__calls.push(call);
			await w.__walletCall(JSON.stringify(call));
			switch (method) {
				case "eth_requestAccounts":
				case "eth_accounts":
					return [account];
				case "eth_chainId":
					return chainId;
				case "wallet_switchEthereumChain":
					chainId = (params as Array<{ chainId: string }>)[0].chainId;
					return null;
				case "eth_sendTransaction":
					return w.__walletSend(JSON.stringify((params as unknown[])[0]));
				default:
					throw Object.assign(new Error(`unsupported ${method}`), { code: 4200 });
			}
		},
	};
}

describe("hosted pay page: pay with an injected wallet on anvil", () => {
	let anvil: Anvil;
	let node: TestNode;
	let merchant: Merchant;
	let browser: Browser;
	let tokenAddress: string;
	payPageOnAnvil({ automine: true, confirmations: 1 }, t => ({ anvil, node, merchant, browser, tokenAddress } = t));

	/** Opens a checkout of a new intent with the wallet injected; returns the page and the deposit address. */
	async function checkout(body: Record<string, unknown>): Promise<{ page: Page; address: string; sent: string[]; calls: Call[]; close(): Promise<void> }> {
		const created = await node.http("POST", "/payment_intents", { key: merchant.sandboxKey, body: { payment_method_types: ["crypto"], networkId: NET, return_url: `${SHOP}/return`, ...body } });
		if (created.status !== 200) throw new Error(`intent: ${created.status} ${created.text}`);
		const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
		await context.route(`${SHOP}/**`, route => route.fulfill({ status: 200, contentType: "text/html", body: "<h1>Shop</h1>" }));
		const sent: string[] = [];
		const calls: Call[] = [];
		await context.exposeFunction("__walletCall", (json: string) => void calls.push(JSON.parse(json)));
		await context.exposeFunction("__walletSend", async (json: string) => {
			const hash = await anvil.rpc<string>("eth_sendTransaction", [JSON.parse(json)]);
			sent.push(hash);
			return hash;
		});
		await context.addInitScript(stubWallet, anvil.addresses[1]);
		const page = await context.newPage();
		const errors: string[] = [];
		page.on("pageerror", e => errors.push(e.message));
		await page.goto(created.body.paymentLink.link.replace(node.config.publicUrl, node.baseUrl.replace(/\/api\/v1$/, "")));
		await page.getByRole("button", { name: "Continue to payment" }).click();
		const address = (await page.locator("#address").textContent()) as string;
		return {
			page,
			address,
			sent,
			calls,
			async close() {
				expect(errors).toEqual([]);
				await context.close();
			},
		};
	}

	const inPage = (page: Page) => page.evaluate(() => (globalThis as unknown as { __calls: Call[] }).__calls);

	/** Clicks "Pay with wallet"; the page says the wallet sent it (the calls are then in `window.__calls`) and reaches paid. */
	async function payWithWallet(page: Page, calls: Call[]): Promise<void> {
		await page.getByRole("button", { name: "Pay with wallet" }).click();
		await page.locator("#status", { hasText: /Transaction sent from your wallet|Payment received/ }).waitFor({ timeout: 20_000 });
		// Read before the paid page leaves for the shop (it may already have: then the test's own record stands).
		const seen = await inPage(page).catch(() => null);
		if (seen) expect(seen).toEqual(calls.slice(0, seen.length));
		await page.waitForURL(`${SHOP}/return`, { timeout: 20_000 });
	}

	it("sends the exact native amount to the deposit address on the link's chain, and the page reaches paid", async () => {
		const { page, address, sent, calls, close } = await checkout({ amount: "0.25", currency: "eth", tokenId: ETH });
		await payWithWallet(page, calls);

		expect(calls.map(c => c.method)).toEqual(["eth_requestAccounts", "eth_chainId", "wallet_switchEthereumChain", "eth_sendTransaction"]);
		expect(calls[2].params).toEqual([{ chainId: "0x7a69" }]); // 31337
		const tx = (calls[3].params as Array<Record<string, string>>)[0];
		expect(tx.from.toLowerCase()).toBe(anvil.addresses[1].toLowerCase());
		expect(tx.to.toLowerCase()).toBe(address.toLowerCase());
		expect(BigInt(tx.value)).toBe(parseEther("0.25"));
		expect(tx.data).toBeUndefined();
		expect(sent).toHaveLength(1);
		const mined = await anvil.provider.getTransaction(sent[0]);
		expect(mined?.to?.toLowerCase()).toBe(address.toLowerCase());
		expect(await anvil.provider.getBalance(address)).toBe(parseEther("0.25"));
		await close();
	});

	it("calls transfer(depositAddress, amount) on the token contract for a USDC checkout, and the page reaches paid", async () => {
		const { page, address, calls, close } = await checkout({ amount: "12.5", currency: "usdc", tokenId: USDC });
		await payWithWallet(page, calls);

		expect(calls.map(c => c.method)).toEqual(["eth_requestAccounts", "eth_chainId", "wallet_switchEthereumChain", "eth_sendTransaction"]);
		expect(calls[2].params).toEqual([{ chainId: "0x7a69" }]);
		const tx = (calls[3].params as Array<Record<string, string>>)[0];
		expect(tx.to.toLowerCase()).toBe(tokenAddress.toLowerCase());
		expect(tx.value === undefined || BigInt(tx.value) === 0n).toBe(true);
		const decoded = ERC20.decodeFunctionData("transfer", tx.data);
		expect((decoded[0] as string).toLowerCase()).toBe(address.toLowerCase());
		expect(decoded[1]).toBe(parseUnits("12.5", 6));
		await close();
	});
});
