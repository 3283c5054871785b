/**
 * The local webhook receiver of the webhook-delivery bench (bench/webhooks.ts): a bare node:http
 * server on 127.0.0.1, forked so it does not share the bench's event loop. Every POST is read to
 * the end and answered 200 "ok". It counts requests, distinct `x-webhook-id`s and body bytes,
 * keeps the times (monotonic, ms) of the first and the last request, and checks the
 * `x-webhook-signature` of one request in `sampleEvery` against the secret it was given.
 *
 * IPC (parent -> receiver): { cmd: "reset", secret, sampleEvery } | { cmd: "stats", seq }.
 * Answers { port } once listening, and { seq, stats } to "stats".
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { verifyWebhookSignature } from "../lib/webhooks/signature";

export interface ReceiverStats {
	requests: number;
	distinctIds: number;
	bytes: number;
	/** process.hrtime in ms (CLOCK_MONOTONIC: comparable across processes of this machine). */
	firstAt: number | null;
	lastAt: number | null;
	checked: number;
	badSignatures: number;
	notPost: number;
}

let secret = "";
let sampleEvery = 50;
let stats: ReceiverStats;
let ids = new Set<string>();

function reset(): void {
	stats = { requests: 0, distinctIds: 0, bytes: 0, firstAt: null, lastAt: null, checked: 0, badSignatures: 0, notPost: 0 };
	ids = new Set();
}
reset();

const nowMs = () => Number(process.hrtime.bigint()) / 1e6;

const server = http.createServer((req, res) => {
	const chunks: Buffer[] = [];
	req.on("data", (c: Buffer) => chunks.push(c));
	req.on("end", () => {
		const at = nowMs();
		const n = ++stats.requests;
		if (stats.firstAt === null) stats.firstAt = at;
		stats.lastAt = at;
		if (req.method !== "POST") stats.notPost++;
		const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
		stats.bytes += body.length;
		const id = req.headers["x-webhook-id"];
		if (typeof id === "string") ids.add(id);
		if (secret && sampleEvery > 0 && n % sampleEvery === 1) {
			stats.checked++;
			if (!verifyWebhookSignature(body, req.headers["x-webhook-signature"], secret)) stats.badSignatures++;
		}
		res.writeHead(200, { "Content-Type": "text/plain", "Content-Length": 2 });
		res.end("ok");
	});
});
server.keepAliveTimeout = 60_000;

process.on("message", (m: { cmd?: string; secret?: string; sampleEvery?: number; seq?: number }) => {
	if (m?.cmd === "reset") {
		secret = m.secret ?? "";
		sampleEvery = m.sampleEvery ?? 50;
		reset();
		process.send?.({ seq: m.seq, reset: true });
	} else if (m?.cmd === "stats") {
		process.send?.({ seq: m.seq, stats: { ...stats, distinctIds: ids.size } });
	}
});
process.on("disconnect", () => process.exit(0));

server.listen(0, "127.0.0.1", () => {
	process.send?.({ port: (server.address() as AddressInfo).port });
});
