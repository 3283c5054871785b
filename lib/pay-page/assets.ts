/**
 * The pay page's assets as the gateway serves them: the prebuilt ones of `npm run build`
 * (dist/pay-assets/) or, where those are absent (tests, a source checkout), built once per
 * process in memory. Each file is kept with its gzip form.
 */
import zlib from "node:zlib";
import { buildPayAssets, PayAssetBundle, PREBUILT_DIR, readPayAssets } from "./build";

export interface ServedAsset {
	contentType: string;
	body: Buffer;
	gzip: Buffer;
}

export interface PayAssets {
	scriptUrl: string;
	styleUrl: string;
	files: Map<string, ServedAsset>;
}

export const ASSET_PREFIX = "/pay/assets/";

let loading: Promise<PayAssets> | null = null;

function served(bundle: PayAssetBundle): PayAssets {
	const files = new Map<string, ServedAsset>();
	for (const f of bundle.files) files.set(f.name, { contentType: f.contentType, body: f.body, gzip: zlib.gzipSync(f.body, { level: 9 }) });
	return { scriptUrl: ASSET_PREFIX + bundle.script, styleUrl: ASSET_PREFIX + bundle.style, files };
}

export function payAssets(): Promise<PayAssets> {
	loading ??= (async () => served(readPayAssets(PREBUILT_DIR) ?? (await buildPayAssets())))();
	// A failed build is not cached: the next request tries again.
	loading.catch(() => (loading = null));
	return loading;
}
