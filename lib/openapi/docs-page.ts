/**
 * GET /docs: the API reference page. Swagger UI (swagger-ui-dist, from our node_modules: no CDN)
 * renders GET /api/v1/openapi.json. Nothing inline: the page loads the bundle, its stylesheet and
 * our init script (/docs/assets/init.js) from this origin, under a CSP without 'unsafe-inline'.
 */
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import type { IncomingMessage, ServerResponse } from "node:http";
import { notFound } from "../errors";

/** No inline script or style; only this origin; Swagger UI's icons are data: images. */
export const DOCS_PAGE_CSP = [
	"default-src 'none'",
	"script-src 'self'",
	"style-src 'self'",
	"img-src 'self' data:",
	"font-src 'self'",
	"connect-src 'self'",
	"base-uri 'none'",
	"form-action 'none'",
	"frame-ancestors 'none'",
].join("; ");

const DOCUMENT_URL = "/api/v1/openapi.json";

/** Our init script: a file of its own, since the CSP runs no inline script. */
const INIT_SCRIPT = `"use strict";
window.addEventListener("DOMContentLoaded", function () {
	window.ui = SwaggerUIBundle({
		url: ${JSON.stringify(DOCUMENT_URL)},
		dom_id: "#reference",
		deepLinking: true,
		// The page must not reach anything but this gateway (no validator badge from a third party).
		validatorUrl: null,
		presets: [SwaggerUIBundle.presets.apis],
		layout: "BaseLayout",
	});
});
`;

interface Asset {
	body: Buffer;
	gzip: Buffer;
	contentType: string;
}

const FROM_PACKAGE: Record<string, string> = {
	"swagger-ui-bundle.js": "text/javascript; charset=utf-8",
	"swagger-ui.css": "text/css; charset=utf-8",
};

let assets: Map<string, Asset> | null = null;

function loadAssets(): Map<string, Asset> {
	if (assets) return assets;
	const dir = path.dirname(require.resolve("swagger-ui-dist/package.json"));
	const map = new Map<string, Asset>();
	const add = (name: string, body: Buffer, contentType: string) => map.set(name, { body, gzip: zlib.gzipSync(body), contentType });
	for (const [name, type] of Object.entries(FROM_PACKAGE)) add(name, fs.readFileSync(path.join(dir, name)), type);
	add("init.js", Buffer.from(INIT_SCRIPT), "text/javascript; charset=utf-8");
	assets = map;
	return map;
}

export function docsPageHeaders(): Record<string, string> {
	return {
		"Content-Security-Policy": DOCS_PAGE_CSP,
		"X-Content-Type-Options": "nosniff",
		"Referrer-Policy": "no-referrer",
		"X-Frame-Options": "DENY",
	};
}

export function docsPageHtml(): string {
	return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Crypto Payment Gateway API reference</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
<div id="reference"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/init.js"></script>
</body>
</html>
`;
}

export function sendDocsPage(res: ServerResponse): void {
	res.writeHead(200, { ...docsPageHeaders(), "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-cache" });
	res.end(docsPageHtml());
}

/** One of the page's assets; anything else is 404 (the error shape). */
export function sendDocsAsset(req: IncomingMessage, res: ServerResponse, name: string): void {
	const asset = loadAssets().get(name);
	if (!asset) throw notFound();
	const accept = req.headers["accept-encoding"];
	const gzip = /\bgzip\b/.test(Array.isArray(accept) ? accept.join(",") : accept || "");
	res.writeHead(200, {
		"Content-Type": asset.contentType,
		// Not hashed names: revalidated after an hour (a new version of the renderer ships with a deploy).
		"Cache-Control": "public, max-age=3600",
		"X-Content-Type-Options": "nosniff",
		Vary: "Accept-Encoding",
		...(gzip ? { "Content-Encoding": "gzip" } : {}),
		"Content-Length": String((gzip ? asset.gzip : asset.body).length),
	});
	res.end(gzip ? asset.gzip : asset.body);
}
