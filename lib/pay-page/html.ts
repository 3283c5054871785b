/**
 * The HTML documents of the hosted pay page: the page shell (the script renders the checkout
 * from the JSON it carries) and the friendly 404 page, with the page's Content-Security-Policy.
 * Pure: the pages service (services/pages.service.ts) serves them on the gateway's port. See docs/pay-page.md.
 */

/**
 * Nothing inline runs or styles (no 'unsafe-inline'): scripts and styles come only from the
 * gateway's own hashed assets; requests go only to the gateway (API, events); QR codes are
 * drawn as inline SVG, so images need nothing but the page's own origin. No framing
 * (clickjacking of a payment page), no forms posting elsewhere, no <base> tricks.
 */
export const PAY_PAGE_CSP = [
	"default-src 'none'",
	"script-src 'self'",
	"style-src 'self'",
	"img-src 'self'",
	"connect-src 'self'",
	"base-uri 'none'",
	"form-action 'none'",
	"frame-ancestors 'none'",
].join("; ");

/** Headers of every pay page document and answer. */
export function payPageHeaders(): Record<string, string> {
	return {
		"Content-Security-Policy": PAY_PAGE_CSP,
		"X-Content-Type-Options": "nosniff",
		"Referrer-Policy": "no-referrer",
		"X-Frame-Options": "DENY",
	};
}

export type PageLang = "en" | "es";

/** `?lang=` wins, then the browser's Accept-Language; English otherwise. */
export function pickPageLang(query: string | undefined, acceptLanguage: string | undefined): PageLang {
	const candidates = [query || "", ...(acceptLanguage || "").split(",").map(part => part.split(";")[0])];
	for (const c of candidates) {
		const base = c.trim().toLowerCase().split(/[-_]/)[0];
		if (base === "es" || base === "en") return base;
	}
	return "en";
}

export function escapeHtml(s: string): string {
	return s.replace(/[&<>"']/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] as string);
}

/** JSON inside <script type="application/json">: no `<` can close the element. */
export function jsonForHtml(value: unknown): string {
	return JSON.stringify(value).replace(/</g, "\\u003c").replace(/>/g, "\\u003e").replace(/&/g, "\\u0026").replace(/\u2028/g, "\\u2028").replace(/\u2029/g, "\\u2029");
}

export interface ShellInput {
	lang: PageLang;
	title: string;
	scriptUrl: string;
	styleUrl: string;
	boot: unknown;
}

export function payPageShell(input: ShellInput): string {
	return `<!doctype html>
<html lang="${input.lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="robots" content="noindex">
<title>${escapeHtml(input.title)}</title>
<link rel="stylesheet" href="${escapeHtml(input.styleUrl)}">
<script id="pay-boot" type="application/json">${jsonForHtml(input.boot)}</script>
<script defer src="${escapeHtml(input.scriptUrl)}"></script>
</head>
<body>
<main id="app" class="card" aria-busy="true"><p class="muted">${input.lang === "es" ? "Cargando…" : "Loading…"}</p></main>
<noscript><p class="card">${input.lang === "es" ? "Esta página necesita JavaScript." : "This page needs JavaScript."}</p></noscript>
</body>
</html>`;
}

const NOT_FOUND_TEXT: Record<PageLang, { title: string; heading: string; body: string }> = {
	en: {
		title: "Payment link not found",
		heading: "We can't find this payment link",
		body: "The link may be mistyped, or the merchant removed it. Please check the address or ask the merchant for a new link.",
	},
	es: {
		title: "Enlace de pago no encontrado",
		heading: "No encontramos este enlace de pago",
		body: "Puede que el enlace esté mal escrito o que el comercio lo haya eliminado. Revisa la dirección o pide al comercio un enlace nuevo.",
	},
};

export function notFoundPage(lang: PageLang, styleUrl: string | null): string {
	const t = NOT_FOUND_TEXT[lang];
	return `<!doctype html>
<html lang="${lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="robots" content="noindex">
<title>${t.title}</title>
${styleUrl ? `<link rel="stylesheet" href="${escapeHtml(styleUrl)}">` : ""}
</head>
<body>
<main class="card" id="not-found">
<h1>${t.heading}</h1>
<p>${t.body}</p>
</main>
</body>
</html>`;
}
