/**
 * The frontend origin used in the pay page's redirect URL (POST /pay/:slug/confirm). The browser's
 * Origin or Referer header names it, but a header is the client's word: only an origin the
 * operator trusts is used (the public URL's own origin or one of CORS_ORIGINS, wildcards like
 * `https://*.example.com` included), so the endpoint cannot be made to redirect payers elsewhere.
 * Anything else falls back to the public URL.
 */

function originOf(value: string | undefined | null): string | null {
	if (!value) return null;
	try {
		const url = new URL(value);
		if (url.protocol !== "http:" && url.protocol !== "https:") return null;
		return url.origin;
	} catch {
		return null;
	}
}

function matches(origin: string, pattern: string): boolean {
	if (pattern === "*") return true;
	if (!pattern.includes("*")) return origin === pattern;
	const escaped = pattern.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\*/g, "[^./]+");
	return new RegExp(`^${escaped}$`).test(origin);
}

export function frontendOrigin(header: string | undefined | null, trusted: readonly string[], publicUrl: string): string {
	const fallback = originOf(publicUrl) ?? publicUrl.replace(/\/+$/, "");
	const candidate = originOf(header);
	if (!candidate) return fallback;
	if (candidate === fallback || trusted.some(p => matches(candidate, p))) return candidate;
	return fallback;
}
