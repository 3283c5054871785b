/**
 * The pay page with a real Solana chain: the litesvm-backed test node (test/helpers/solana-node.ts,
 * blocks and finality moved by hand), watcher-solana on `solana-devnet`, and Chromium. The test reads
 * the Solana Pay URI the page encodes in its QR code, checks recipient, amount and mint against the
 * checkout and the catalogue, then pays exactly what the URI says with a signed transaction, as a
 * wallet would, and watches the page go "confirming n of 32" -> paid -> back to the shop.
 * sqlite project only.
 */
import { Connection, Keypair, LAMPORTS_PER_SOL, PublicKey, SystemProgram } from "@solana/web3.js";
import { createAssociatedTokenAccountIdempotentInstruction, createTransferCheckedInstruction, getAssociatedTokenAddressSync, getMint } from "@solana/spl-token";
import type { Browser, Page } from "playwright-core";
import { catalogueNetwork, networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { startSolanaNode, type SolanaNode } from "../helpers/solana-node";
import { until } from "../helpers/until";
import { launchBrowser } from "../helpers/browser";
import { TestNode } from "../helpers/harness";
import { createMerchant, Merchant, PAYMENTS_SERVICES, startPaymentsNode } from "./payments.helpers";

const NET = networkIdFor("solana-devnet");
const SOL = tokenIdFor("solana-devnet", "SOL");
const USDC = tokenIdFor("solana-devnet", "USDC");
const SHOP = "https://shop.example.com";

/** A wallet's reading of a Solana Pay amount: a plain decimal, at most `decimals` places, to base units (no floats). */
function walletUnits(amount: string, decimals: number): bigint {
	const m = /^(0|[1-9]\d*)(?:\.(\d+))?$/.exec(amount);
	if (!m) throw new Error(`not a Solana Pay amount: ${amount}`);
	const frac = m[2] ?? "";
	if (frac.length > decimals) throw new Error(`more than ${decimals} decimals: ${amount}`);
	return BigInt(m[1] + frac.padEnd(decimals, "0"));
}

/** A stored decimal without trailing zeros ("12.3456780000" -> "12.345678", "10" stays). */
const plain = (a: string) => (a.includes(".") ? a.replace(/0+$/, "").replace(/\.$/, "") : a);

describe("hosted pay page paid on the Solana test node", () => {
	let sol: SolanaNode;
	let node: TestNode;
	let merchant: Merchant;
	let browser: Browser;
	let closeBrowser: () => Promise<void>;
	let wallet: Keypair;
	let usdcMint: PublicKey;

	beforeAll(async () => {
		sol = await startSolanaNode({ finalizeDistance: null });
		wallet = Keypair.generate();
		await sol.airdrop(wallet.publicKey, 10n * BigInt(LAMPORTS_PER_SOL));
		// The catalogue's devnet USDC mint, as it exists on the cluster: the watcher credits only that mint.
		const catalogueMint = catalogueNetwork("solana-devnet")!.tokens.find(t => t.symbol === "USDC")!.contractAddress!;
		usdcMint = await sol.createMint(6, { address: new PublicKey(catalogueMint) });
		await sol.mintTo(usdcMint, wallet.publicKey, 1_000_000_000n);
		await sol.settle();
		node = await startPaymentsNode({
			services: [...PAYMENTS_SERVICES, "watcher-solana"],
			env: { PAY_EVENTS_POLL_MS: "200", RPC_URL_SOLANA_DEVNET: sol.url, WATCHER_POLL_MS: "50" },
		});
		merchant = await createMerchant(node);
		// The watcher leads the network and has started its cursor before anything is paid.
		await until("solana-devnet watched", async () => ((await node.http("GET", "/payments/networks", { query: { chainType: "solana", testnet: "true" } })).body as Array<{ id: string; watched: boolean }>).find(n => n.id === NET)?.watched, 60_000);
		await until("cursor", async () => (await node.app.models.ChainCursor.findByPk(NET))?.blockNumber != null, 60_000);
		({ browser, close: closeBrowser } = await launchBrowser());
	}, 180_000);

	afterAll(async () => {
		await closeBrowser?.();
		await node?.stop();
		await sol?.stop();
	});

	/** Opens the intent's hosted page, continues to the payment, and returns the page, the Solana Pay URI of its QR code and the checkout. */
	async function openPayPage(amount: string, currency: string, tokenId: string): Promise<{ page: Page; uri: URL; tx: { amount: string; totalAmount: string; depositAddress: string; id: string }; close(): Promise<void> }> {
		const created = await node.http("POST", "/payment_intents", {
			key: merchant.sandboxKey,
			body: { amount, currency, payment_method_types: ["crypto"], tokenId, networkId: NET, return_url: `${SHOP}/return`, description: "Solana order" },
		});
		expect(created.status).toBe(200);
		const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
		await context.route(`${SHOP}/**`, route => route.fulfill({ status: 200, contentType: "text/html", body: "<h1>Shop</h1>" }));
		const page = await context.newPage();
		await page.goto(created.body.paymentLink.link.replace(node.config.publicUrl, node.baseUrl.replace(/\/api\/v1$/, "")));
		await page.getByRole("button", { name: "Continue to payment" }).click();
		const address = (await page.locator("#address").textContent()) as string;
		// A real watcher follows the network: no "only the simulation works" note.
		expect(await page.locator("#simulation-only").count()).toBe(0);
		await page.locator("#status", { hasText: "Waiting for your payment" }).waitFor();
		const row = await until("checkout stored", () => node.app.models.Transaction.findOne({ where: { depositAddress: address } }));
		const uri = new URL((await page.locator("#qr").getAttribute("data-uri")) as string);
		return { page, uri, tx: { id: row.id, amount: row.amount, totalAmount: row.totalAmount, depositAddress: row.depositAddress }, close: () => context.close() };
	}

	/** Puts the sent payment in a block: the page shows it confirming, and nothing is credited before finality. */
	async function confirm(page: Page, txId: string): Promise<void> {
		await sol.produceBlock();
		await page.locator("#status", { hasText: /Payment seen: \d+ of 32 confirmations/ }).waitFor({ timeout: 60_000 });
		const seen = (await node.app.models.Transaction.findByPk(txId))!.confirmations!;
		await sol.produceBlocks(2);
		await until("deeper", async () => ((await node.app.models.Transaction.findByPk(txId))!.confirmations ?? 0) > seen, 60_000);
		expect(await node.app.models.Transaction.findByPk(txId)).toMatchObject({ status: "pending" });
	}

	/** Confirms, then finalizes: the page goes paid and back to the shop. */
	async function confirmAndFinalize(page: Page, txId: string): Promise<void> {
		await confirm(page, txId);
		await sol.finalize();
		await page.locator("#status", { hasText: "Payment received" }).waitFor({ timeout: 60_000 });
		await page.waitForURL(`${SHOP}/return`, { timeout: 30_000 });
	}

	/** The wallet: the mint's decimals from the chain, a transferChecked of the URI's amount to the recipient's associated token account. */
	async function payTokenUri(uri: URL): Promise<{ ata: PublicKey; units: bigint }> {
		const mint = new PublicKey(uri.searchParams.get("spl-token")!);
		const { decimals } = await getMint(new Connection(sol.url, "confirmed"), mint);
		const units = walletUnits(uri.searchParams.get("amount")!, decimals);
		const recipient = new PublicKey(uri.pathname);
		const ata = getAssociatedTokenAddressSync(mint, recipient);
		await sol.send(
			[createAssociatedTokenAccountIdempotentInstruction(wallet.publicKey, ata, recipient, mint), createTransferCheckedInstruction(getAssociatedTokenAddressSync(mint, wallet.publicKey), mint, ata, wallet.publicKey, units, decimals)],
			[wallet],
		);
		return { ata, units };
	}

	it("shows a Solana Pay URI for USDC with the deposit address, the exact amount and the catalogue's mint; paying what it says completes the checkout", async () => {
		const { page, uri, tx, close } = await openPayPage("12.345678", "usdc", USDC);
		expect(uri.protocol).toBe("solana:");
		expect(uri.pathname).toBe(tx.depositAddress);
		expect([...uri.searchParams.keys()].sort()).toEqual(["amount", "spl-token"]);
		expect(uri.searchParams.get("amount")).toBe("12.345678");
		expect(walletUnits(uri.searchParams.get("amount")!, 6)).toBe(walletUnits(plain(tx.totalAmount), 6));
		expect(uri.searchParams.get("spl-token")).toBe(usdcMint.toBase58());

		const { ata, units } = await payTokenUri(uri);
		expect(units).toBe(12_345_678n);
		await confirmAndFinalize(page, tx.id);
		expect(await sol.tokenBalance(ata, "finalized")).toBe(12_345_678n);
		const done = await node.app.models.Transaction.findByPk(tx.id);
		expect(done).toMatchObject({ status: "completed" });
		expect(walletUnits(plain(done!.amountReceived), 6)).toBe(12_345_678n);
		await close();
	});

	it("shows a Solana Pay URI for SOL without spl-token, in SOL (not lamports); paying what it says completes the checkout", async () => {
		const { page, uri, tx, close } = await openPayPage("0.123456789", "sol", SOL);
		expect(uri.protocol).toBe("solana:");
		expect(uri.pathname).toBe(tx.depositAddress);
		expect([...uri.searchParams.keys()]).toEqual(["amount"]);
		expect(uri.searchParams.get("amount")).toBe("0.123456789");
		const lamports = walletUnits(uri.searchParams.get("amount")!, 9);
		expect(lamports).toBe(123_456_789n);
		await sol.send([SystemProgram.transfer({ fromPubkey: wallet.publicKey, toPubkey: new PublicKey(uri.pathname), lamports })], [wallet]);
		await confirmAndFinalize(page, tx.id);
		expect(await sol.balance(new PublicKey(tx.depositAddress), "finalized")).toBe(123_456_789n);
		expect(await node.app.models.Transaction.findByPk(tx.id)).toMatchObject({ status: "completed" });
		await close();
	});

	it("after a partial payment, shows a Solana Pay URI for what is still due; paying it completes the checkout", async () => {
		const { page, uri, tx, close } = await openPayPage("5", "usdc", USDC);
		expect(uri.searchParams.get("amount")).toBe("5");
		// The payer sends less than asked (edited in the wallet): 2 of 5 USDC.
		const partial = new URL(uri.href);
		partial.searchParams.set("amount", "2");
		await payTokenUri(partial);
		await confirm(page, tx.id);
		await sol.finalize();
		await page.locator("#status", { hasText: "Partly paid: 3 USDC still due." }).waitFor({ timeout: 60_000 });
		const rest = new URL((await page.locator("#qr").getAttribute("data-uri")) as string);
		expect(rest.pathname).toBe(tx.depositAddress);
		expect(Object.fromEntries(rest.searchParams)).toEqual({ amount: "3", "spl-token": usdcMint.toBase58() });
		const { ata } = await payTokenUri(rest);
		await confirmAndFinalize(page, tx.id);
		expect(await sol.tokenBalance(ata, "finalized")).toBe(5_000_000n);
		await close();
	});
});
