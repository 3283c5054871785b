/**
 * A real Chromium for browser tests: Debian's /usr/bin/chromium driven by playwright-core,
 * headless, with a throw-away profile, and no network but what the test routes.
 */
import { chromium, Browser } from "playwright-core";

export const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";

export async function launchBrowser(): Promise<{ browser: Browser; close(): Promise<void> }> {
	// playwright gives every launch a fresh temporary profile (it refuses --user-data-dir here).
	const browser = await chromium.launch({
		executablePath: CHROMIUM,
		headless: true,
		args: [
			"--headless",
			"--no-sandbox",
			"--disable-gpu",
			"--disable-background-networking",
			"--disable-component-update",
			"--disable-sync",
			"--disable-quic",
			"--no-first-run",
		],
	});
	return {
		browser,
		async close() {
			await browser.close();
		},
	};
}
