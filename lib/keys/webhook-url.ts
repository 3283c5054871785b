/**
 * Which webhook URLs an API key may carry. Always: an absolute http(s) URL without credentials,
 * at most 2048 characters. In production (decisions.md "Webhooks"): HTTPS only, no `localhost`,
 * and no literal address that is not global unicast.
 *
 * This checks the URL as written. A host NAME that resolves to an internal address can only be
 * caught when connecting; the webhook sender re-checks the resolved address with the same
 * classifier (lib/webhooks/sender.ts) before sending.
 */
import ipaddr from "ipaddr.js";

/** What the webhook sender needs of an API key (keys.webhookTargets). */
export interface WebhookTarget {
	id: number;
	organizationId: string;
	mode: "sandbox" | "live";
	webhookUrl: string | null;
	status: "active" | "revoked";
	createdByUserId: number | null;
}

export type WebhookUrlProblem = "invalidUrl" | "httpsRequired" | "privateAddress";

export const WEBHOOK_URL_MAX_LENGTH = 2048;

/** IANA's global unicast block: every other IPv6 prefix is reserved, local or special. */
const IPV6_GLOBAL_UNICAST = ipaddr.parseCIDR("2000::/3") as [ipaddr.IPv6, number];

/**
 * True for any literal address that is not global unicast, by ipaddr.js's table of special
 * ranges (IANA's special-purpose registries): loopback, private, link-local, CGNAT, multicast,
 * reserved, documentation, site-local... Every IPv6 form that carries an IPv4 address is refused
 * whatever that address is: IPv4-mapped and SIIT (`::ffff:0:0/96`, `::ffff:0:0:0/96`), NAT64
 * (`64:ff9b::/96`, `64:ff9b:1::/48`: reaches 169.254.169.254 where a NAT64 gateway exists), 6to4
 * (`2002::/16`), Teredo (`2001::/32`), and IPv4-compatible (`::/96`, deprecated) which ipaddr.js
 * reports as unicast and the 2000::/3 rule catches. Names are not addresses (false).
 */
export function isInternalAddress(host: string): boolean {
	const h = host.replace(/^\[|\]$/g, "");
	if (!ipaddr.isValid(h)) return false;
	const address = ipaddr.parse(h);
	if (address.range() !== "unicast") return true;
	return address.kind() === "ipv6" && !address.match(IPV6_GLOBAL_UNICAST);
}

export function webhookUrlProblem(raw: string, opts: { production: boolean }): WebhookUrlProblem | null {
	if (raw.length > WEBHOOK_URL_MAX_LENGTH) return "invalidUrl";
	let url: URL;
	try {
		url = new URL(raw);
	} catch {
		return "invalidUrl";
	}
	if (url.protocol !== "http:" && url.protocol !== "https:") return "invalidUrl";
	if (!url.hostname || url.username || url.password) return "invalidUrl";
	if (!opts.production) return null;
	// Production-only rules.
	if (url.protocol !== "https:") return "httpsRequired";
	const host = url.hostname.toLowerCase().replace(/\.$/, "");
	if (host === "localhost" || host.endsWith(".localhost") || isInternalAddress(host)) return "privateAddress";
	return null;
}
