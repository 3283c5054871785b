/**
 * A Sentry ingestion endpoint on loopback for tests: the SDK posts its envelopes to
 * `POST /api/<project>/envelope/` of the DSN's host. Every envelope is kept as the bytes received
 * (gunzipped when the SDK compressed them) and parsed into its items: a header line, then per item
 * a header line and a payload (`length` bytes when the item header gives one, else one line).
 */
import http from "node:http";
import zlib from "node:zlib";
import type { AddressInfo } from "node:net";
import { until } from "./until";

export interface EnvelopeItem {
	header: { type: string; length?: number; [k: string]: unknown };
	payload: any;
}

export interface Envelope {
	/** The envelope as received (decompressed), for "does this appear anywhere" checks. */
	raw: string;
	header: Record<string, unknown>;
	items: EnvelopeItem[];
}

export interface SentryReceiver {
	/** `http://public@127.0.0.1:<port>/1` */
	dsn: string;
	envelopes: Envelope[];
	/** The error events received, oldest first. */
	events(): any[];
	/** Every byte received so far, all envelopes together. */
	bytes(): string;
	waitForEvent(what: string, match: (event: any) => boolean, timeoutMs?: number): Promise<any>;
	close(): Promise<void>;
}

export function parseEnvelope(body: Buffer): Envelope {
	let at = 0;
	const line = (): Buffer => {
		const end = body.indexOf(0x0a, at);
		const out = body.subarray(at, end < 0 ? body.length : end);
		at = end < 0 ? body.length : end + 1;
		return out;
	};
	const header = JSON.parse(line().toString("utf8"));
	const items: EnvelopeItem[] = [];
	while (at < body.length) {
		const headerLine = line().toString("utf8");
		if (!headerLine.trim()) continue;
		const itemHeader = JSON.parse(headerLine) as EnvelopeItem["header"];
		let payload: Buffer;
		if (typeof itemHeader.length === "number") {
			payload = body.subarray(at, at + itemHeader.length);
			at += itemHeader.length;
			if (body[at] === 0x0a) at++;
		} else payload = line();
		const text = payload.toString("utf8");
		let parsed: unknown = text;
		try {
			parsed = JSON.parse(text);
		} catch {
			/* not JSON: kept as text */
		}
		items.push({ header: itemHeader, payload: parsed });
	}
	return { raw: body.toString("utf8"), header, items };
}

export async function startSentryReceiver(): Promise<SentryReceiver> {
	const envelopes: Envelope[] = [];
	const server = http.createServer((req, res) => {
		const chunks: Buffer[] = [];
		req.on("data", c => chunks.push(c));
		req.on("end", () => {
			if (req.method !== "POST" || !/^\/api\/1\/envelope\/?(\?|$)/.test(req.url || "")) {
				res.writeHead(404).end();
				return;
			}
			let body = Buffer.concat(chunks);
			if (req.headers["content-encoding"] === "gzip") body = zlib.gunzipSync(body);
			envelopes.push(parseEnvelope(body));
			res.writeHead(200, { "Content-Type": "application/json" }).end("{}");
		});
	});
	await new Promise<void>(resolve => server.listen(0, "127.0.0.1", resolve));
	const { port } = server.address() as AddressInfo;
	const events = () => envelopes.flatMap(e => e.items.filter(i => i.header.type === "event").map(i => i.payload));
	return {
		dsn: `http://public@127.0.0.1:${port}/1`,
		envelopes,
		events,
		bytes: () => envelopes.map(e => e.raw).join("\n"),
		waitForEvent: (what, match, timeoutMs = 15_000) =>
			until(`error event: ${what}`, () => events().find(match), timeoutMs, () => `events received: ${JSON.stringify(events().map(e => [e.exception?.values?.[0]?.value, e.tags]))}`),
		close: () =>
			new Promise<void>(resolve => {
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
}

/** The message of an event's (outermost) exception. */
export function exceptionMessage(event: any): string {
	const values = event?.exception?.values ?? [];
	return String(values[values.length - 1]?.value ?? "");
}
