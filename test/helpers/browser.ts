/**
 * A real Chromium for browser tests: Debian's /usr/bin/chromium driven by playwright-core,
 * headless, with a throw-away profile, and no network but what the test routes.
 */
import { chromium, Browser, BrowserContext, Locator } from "playwright-core";

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

/** The few DOM names the in-page PNG decoder uses (the test program is compiled without the DOM library). */
interface BrowserGlobals {
	Image: new () => { src: string; decode(): Promise<void>; naturalWidth: number; naturalHeight: number };
	document: {
		createElement(tag: "canvas"): {
			width: number;
			height: number;
			getContext(kind: "2d"): { drawImage(img: unknown, x: number, y: number): void; getImageData(x: number, y: number, w: number, h: number): { data: ArrayLike<number> } };
		};
	};
}

/** A screenshot's RGBA pixels, read through a canvas of a blank page of `context` (the pay page's CSP rightly forbids data: images). */
export async function pngPixels(context: BrowserContext, png: Buffer): Promise<{ width: number; height: number; data: Uint8ClampedArray }> {
	const blank = await context.newPage();
	try {
		const { width, height, data } = await blank.evaluate(async b64 => {
			const { Image, document } = globalThis as unknown as BrowserGlobals;
			const img = new Image();
			img.src = `data:image/png;base64,${b64}`;
			await img.decode();
			const canvas = document.createElement("canvas");
			canvas.width = img.naturalWidth;
			canvas.height = img.naturalHeight;
			const ctx = canvas.getContext("2d");
			ctx.drawImage(img, 0, 0);
			return { width: canvas.width, height: canvas.height, data: Array.from(ctx.getImageData(0, 0, canvas.width, canvas.height).data) };
		}, png.toString("base64"));
		return { width, height, data: Uint8ClampedArray.from(data) };
	} finally {
		await blank.close();
	}
}

/** The space in CSS px from the bottom of `above` to the top of `below` as laid out (0: touching, negative: overlapping). */
export async function verticalGap(above: Locator, below: Locator): Promise<number> {
	const [a, b] = [await above.boundingBox(), await below.boundingBox()];
	if (!a || !b) throw new Error("verticalGap: an element is not laid out");
	return b.y - (a.y + a.height);
}
