/**
 * Which webhook URLs an API key may carry. Always: an absolute http(s) URL without credentials,
 * at most 2048 characters. In production (decisions.md "Webhooks"): HTTPS only, and no loopback,
 * private, link-local or otherwise internal literal address or `localhost`.
 *
 * This checks the URL as written. A host NAME that resolves to an internal address can only be
 * caught when connecting; the webhook sender must re-check the resolved address before sending.
 */
import net from "node:net";

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

const internal = new net.BlockList();
for (const [addr, prefix] of [
	["0.0.0.0", 8],
	["10.0.0.0", 8],
	["100.64.0.0", 10],
	["127.0.0.0", 8],
	["169.254.0.0", 16],
	["172.16.0.0", 12],
	["192.0.0.0", 24],
	["192.168.0.0", 16],
	["198.18.0.0", 15],
	["224.0.0.0", 4],
	["240.0.0.0", 4],
] as Array<[string, number]>) {
	internal.addSubnet(addr, prefix, "ipv4");
}
for (const [addr, prefix] of [
	["::", 128],
	["::1", 128],
	["fc00::", 7],
	["fe80::", 10],
	["ff00::", 8],
] as Array<[string, number]>) {
	internal.addSubnet(addr, prefix, "ipv6");
}

/** True for loopback, private, link-local, CGNAT, multicast and reserved literal addresses. */
export function isInternalAddress(host: string): boolean {
	const h = host.replace(/^\[|\]$/g, "");
	const family = net.isIP(h);
	if (family === 4) return internal.check(h, "ipv4");
	if (family === 6) {
		// IPv4-mapped IPv6 (::ffff:10.0.0.1) is the IPv4 address.
		const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(h);
		if (mapped) return internal.check(mapped[1], "ipv4");
		return internal.check(h, "ipv6");
	}
	return false;
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
