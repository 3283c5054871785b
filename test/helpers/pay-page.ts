/**
 * The set-up the pay page's browser tests (test/e2e/pay-page-*.browser.test.ts) share: a payments
 * node with a merchant, and Chromium; on anvil, the chain and the EVM watcher too.
 */
import type { Browser } from "playwright-core";
import { deployTestUsdc, startAnvil, type Anvil } from "./anvil";
import { launchBrowser } from "./browser";
import type { StartOptions, TestNode } from "./harness";
import { createMerchant, PAYMENTS_SERVICES, startPaymentsNode, type Merchant } from "../e2e/payments.helpers";

export interface PayPageTest {
	node: TestNode;
	merchant: Merchant;
	browser: Browser;
}

/**
 * Call in a describe: before its tests a payments node started with `nodeOptions()`, a merchant and
 * Chromium, handed to `set`; after them Chromium closed and the node stopped.
 */
export function payPageTest(nodeOptions: () => StartOptions | Promise<StartOptions>, set: (t: PayPageTest) => void): void {
	let node: TestNode | undefined;
	let closeBrowser: (() => Promise<void>) | undefined;
	beforeAll(async () => {
		node = await startPaymentsNode(await nodeOptions());
		const merchant = await createMerchant(node);
		const launched = await launchBrowser();
		closeBrowser = launched.close;
		set({ node, merchant, browser: launched.browser });
	}, 120_000);
	afterAll(async () => {
		await closeBrowser?.();
		await node?.stop();
	});
}

/**
 * payPageTest on anvil (call in a describe): anvil with the test USDC deployed (account 1 holding
 * it) and automine as given, and the node running the EVM watcher on it (polling every 50 ms) with
 * `confirmations` required; anvil stopped after the node.
 */
export function payPageOnAnvil(opts: { automine: boolean; confirmations: number }, set: (t: PayPageTest & { anvil: Anvil; tokenAddress: string }) => void): void {
	let anvil: Anvil | undefined;
	let tokenAddress: string;
	payPageTest(
		async () => {
			anvil = await startAnvil();
			const token = await deployTestUsdc(anvil, [1]);
			tokenAddress = await token.getAddress();
			await anvil.setAutomine(opts.automine);
			return {
				services: [...PAYMENTS_SERVICES, "watcher-evm"],
				env: {
					PAY_EVENTS_POLL_MS: "200",
					RPC_URL_ANVIL_LOCAL: anvil.url,
					TEST_USDC_ADDRESS: tokenAddress,
					REQUIRED_CONFIRMATIONS_ANVIL_LOCAL: String(opts.confirmations),
					WATCHER_POLL_MS: "50",
					WATCHER_RECONCILE_MS: "200",
				},
			};
		},
		t => set({ ...t, anvil: anvil!, tokenAddress }),
	);
	afterAll(async () => {
		await anvil?.stop();
	});
}
