/**
 * Builds the hosted pay page's browser assets (web/pay/) with esbuild: one minified script and
 * one stylesheet, named by content hash so they can be cached for a year. `npm run build` writes
 * them to dist/pay-assets/ (`node dist/lib/pay-page/build.js`); without that folder (tests, a
 * source checkout) the gateway builds them in memory on the first request. See docs/pay-page.md.
 */
import fs from "node:fs";
import path from "node:path";

export interface BuiltAsset {
	/** File name under /pay/assets/, e.g. `pay-3FJ2KQ.js`. */
	name: string;
	contentType: string;
	body: Buffer;
}

export interface PayAssetBundle {
	script: string;
	style: string;
	files: BuiltAsset[];
}

export const MANIFEST = "manifest.json";

/** The folder holding web/pay/main.ts: the repository root, from source or from dist/. */
export function webSourceDir(from = __dirname): string {
	for (let dir = from; ; dir = path.dirname(dir)) {
		const candidate = path.join(dir, "web", "pay");
		if (fs.existsSync(path.join(candidate, "main.ts"))) return candidate;
		if (path.dirname(dir) === dir) throw new Error("web/pay/main.ts not found");
	}
}

const TYPES: Record<string, string> = { ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8" };

export async function buildPayAssets(): Promise<PayAssetBundle> {
	// esbuild is a devDependency: required only when building.
	// eslint-disable-next-line @typescript-eslint/no-require-imports
	const esbuild = require("esbuild") as typeof import("esbuild");
	const src = webSourceDir();
	const result = await esbuild.build({
		entryPoints: { pay: path.join(src, "main.ts"), "pay-style": path.join(src, "pay.css") },
		bundle: true,
		minify: true,
		format: "iife",
		target: "es2020",
		entryNames: "[name]-[hash]",
		outdir: "/pay-assets",
		write: false,
		legalComments: "none",
		logLevel: "silent",
	});
	const files = result.outputFiles.map(f => {
		const name = path.basename(f.path);
		return { name, contentType: TYPES[path.extname(name)] || "application/octet-stream", body: Buffer.from(f.contents) };
	});
	const script = files.find(f => f.name.startsWith("pay-") && f.name.endsWith(".js"));
	const style = files.find(f => f.name.endsWith(".css"));
	if (!script || !style) throw new Error("pay page build produced no script or stylesheet");
	return { script: script.name, style: style.name, files };
}

export function writePayAssets(bundle: PayAssetBundle, outDir: string): void {
	fs.rmSync(outDir, { recursive: true, force: true });
	fs.mkdirSync(outDir, { recursive: true });
	for (const f of bundle.files) fs.writeFileSync(path.join(outDir, f.name), f.body);
	fs.writeFileSync(path.join(outDir, MANIFEST), JSON.stringify({ script: bundle.script, style: bundle.style, files: bundle.files.map(f => ({ name: f.name, contentType: f.contentType })) }, null, 2));
}

/** Prebuilt assets written by `npm run build`, or null. */
export function readPayAssets(dir: string): PayAssetBundle | null {
	const manifestPath = path.join(dir, MANIFEST);
	if (!fs.existsSync(manifestPath)) return null;
	const manifest = JSON.parse(fs.readFileSync(manifestPath, "utf8")) as { script: string; style: string; files: Array<{ name: string; contentType: string }> };
	return { script: manifest.script, style: manifest.style, files: manifest.files.map(f => ({ ...f, body: fs.readFileSync(path.join(dir, f.name)) })) };
}

/** dist/pay-assets when running from dist/lib/pay-page; from source it does not exist. */
export const PREBUILT_DIR = path.resolve(__dirname, "..", "..", "pay-assets");

if (require.main === module) {
	buildPayAssets()
		.then(bundle => {
			writePayAssets(bundle, PREBUILT_DIR);
			for (const f of bundle.files) console.log(`pay page: ${f.name} ${f.body.length} bytes`);
		})
		.catch(err => {
			console.error(err);
			process.exit(1);
		});
}
