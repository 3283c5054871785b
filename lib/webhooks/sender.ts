/**
 * One webhook HTTP attempt: POST the exact body with its signature, within the timeout, and
 * report what happened (never throws). Keep-alive agents, so a busy endpoint is not a new TCP
 * (and TLS) handshake per event.
 *
 * With `enforcePublicUrls` (production) the URL must be HTTPS and the address actually
 * connected to must be public: the check runs inside the connection's DNS look-up, so the
 * address checked is the address used (a name that re-resolves to 127.0.0.1 between a check
 * and the connect — DNS rebinding — is refused).
 */
import dns from "node:dns";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import { isInternalAddress } from "../keys/webhook-url";
import { SIGNATURE_HEADER } from "./signature";

export interface SendRequest {
	url: string;
	body: string;
	signature: string;
	/** Sent as `x-webhook-id` too, so receivers can de-duplicate before parsing. */
	eventId?: string;
	timeoutMs: number;
	enforcePublicUrls: boolean;
	/** Characters of the response body to keep. */
	responseMaxChars: number;
}

export interface SendResult {
	statusCode: number | null;
	response: string;
	error: string | null;
	durationMs: number;
}

/** Bytes read of a response at most; the rest is dropped with the socket. */
const MAX_READ_BYTES = 256 * 1024;
const USER_AGENT = "crypto-payment-gateway-webhooks/1";

/**
 * Connections are pooled per endpoint origin (the agent keys its pool by host and port) and kept
 * alive between attempts. Bounded: at most MAX_SOCKETS_PER_ORIGIN open to one origin (above the
 * largest per-endpoint concurrency, so a node's own attempts never queue behind the bound; a
 * request beyond it waits for a socket within its own timeout), MAX_SOCKETS in all, and idle
 * ones kept per origin up to the same bound.
 */
export const MAX_SOCKETS_PER_ORIGIN = 128;
const MAX_SOCKETS = 4096;
const poolOptions = { keepAlive: true, maxSockets: MAX_SOCKETS_PER_ORIGIN, maxTotalSockets: MAX_SOCKETS, maxFreeSockets: MAX_SOCKETS_PER_ORIGIN, scheduling: "lifo" as const };
const agents = {
	http: new http.Agent(poolOptions),
	https: new https.Agent(poolOptions),
};

class RefusedAddress extends Error {}

/** dns.lookup that refuses internal addresses (all of them are checked when several are returned). */
const publicOnlyLookup: net.LookupFunction = (hostname, options, callback) => {
	dns.lookup(hostname, { ...options, verbatim: true } as dns.LookupAllOptions, (err, addresses) => {
		if (err) return (callback as (e: Error) => void)(err);
		const list = (Array.isArray(addresses) ? addresses : [{ address: addresses as unknown as string, family: 4 }]) as dns.LookupAddress[];
		const bad = list.find(a => isInternalAddress(a.address));
		if (bad || list.length === 0) return (callback as (e: Error) => void)(new RefusedAddress(`Webhook host ${hostname} resolves to a non-public address`));
		if ((options as dns.LookupOptions).all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, list);
		(callback as unknown as (e: null, a: string, f: number) => void)(null, list[0].address, list[0].family);
	});
};

/** Why a URL may not be called at all (before any connection), or null. */
export function refuseUrl(url: URL, enforcePublicUrls: boolean): string | null {
	if (url.protocol !== "http:" && url.protocol !== "https:") return "Webhook URL must be http(s)";
	if (!enforcePublicUrls) return null;
	if (url.protocol !== "https:") return "Webhook URL must use HTTPS in production";
	const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase();
	if (host === "localhost" || host.endsWith(".localhost")) return "Webhook URL points at a non-public address";
	// Literal addresses are connected to without a look-up, so they are checked here.
	if (net.isIP(host) && isInternalAddress(host)) return "Webhook URL points at a non-public address";
	return null;
}

export function sendWebhook(req: SendRequest): Promise<SendResult> {
	const started = performance.now();
	const done = (r: Omit<SendResult, "durationMs">): SendResult => ({ ...r, durationMs: Math.round(performance.now() - started) });
	let url: URL;
	try {
		url = new URL(req.url);
	} catch {
		return Promise.resolve(done({ statusCode: null, response: "", error: "Invalid webhook URL" }));
	}
	const refused = refuseUrl(url, req.enforcePublicUrls);
	if (refused) return Promise.resolve(done({ statusCode: null, response: "", error: refused }));

	return new Promise<SendResult>(resolve => {
		let settled = false;
		const finish = (r: Omit<SendResult, "durationMs">) => {
			if (settled) return;
			settled = true;
			clearTimeout(timer);
			resolve(done(r));
		};
		const headers: Record<string, string | number> = {
			"Content-Type": "application/json",
			"Content-Length": Buffer.byteLength(req.body),
			"User-Agent": USER_AGENT,
			[SIGNATURE_HEADER]: req.signature,
		};
		if (req.eventId) headers["x-webhook-id"] = req.eventId;
		const transport = url.protocol === "https:" ? https : http;
		const request = transport.request(url, {
			method: "POST",
			headers,
			agent: url.protocol === "https:" ? agents.https : agents.http,
			...(req.enforcePublicUrls ? { lookup: publicOnlyLookup } : {}),
		});
		const timer = setTimeout(() => {
			request.destroy();
			finish({ statusCode: null, response: "", error: `Timed out after ${req.timeoutMs} ms` });
		}, req.timeoutMs);

		request.on("response", res => {
			const chunks: Buffer[] = [];
			let read = 0;
			res.on("data", (chunk: Buffer) => {
				if (read < MAX_READ_BYTES) chunks.push(chunk);
				read += chunk.length;
				if (read > MAX_READ_BYTES) res.destroy();
			});
			const complete = () => {
				const text = Buffer.concat(chunks).toString("utf8").slice(0, req.responseMaxChars + 1);
				finish({ statusCode: res.statusCode ?? null, response: text, error: null });
			};
			res.on("end", complete);
			res.on("close", complete);
			res.on("error", complete);
		});
		request.on("error", (err: Error & { code?: string }) => {
			const error = err instanceof RefusedAddress ? err.message : `${err.code ? `${err.code}: ` : ""}${err.message}`;
			finish({ statusCode: null, response: "", error });
		});
		request.end(req.body);
	});
}
