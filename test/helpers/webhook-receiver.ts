/**
 * A merchant's webhook endpoint on loopback for tests: records every request (raw body, headers,
 * arrival time) and answers what the test programs (`respond`), 200 by default.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface ReceivedWebhook {
	at: number;
	headers: http.IncomingHttpHeaders;
	rawBody: string;
	json: any;
}

export interface WebhookReceiver {
	url: string;
	received: ReceivedWebhook[];
	/** Status for the next requests; a function gets the request number (1-based) and the request. */
	respond(answer: number | ((n: number, hit: ReceivedWebhook) => number)): void;
	/** Waits for `count` webhooks, at most `timeoutMs` (20 s, as `until`: a generous bound, which a loaded machine needs). */
	waitFor(count: number, timeoutMs?: number): Promise<ReceivedWebhook[]>;
	close(): Promise<void>;
}

export async function startReceiver(): Promise<WebhookReceiver> {
	const received: ReceivedWebhook[] = [];
	let answer: number | ((n: number, hit: ReceivedWebhook) => number) = 200;
	const server = http.createServer((req, res) => {
		const chunks: Buffer[] = [];
		req.on("data", c => chunks.push(c));
		req.on("end", () => {
			const rawBody = Buffer.concat(chunks).toString("utf8");
			let json: unknown = null;
			try {
				json = JSON.parse(rawBody);
			} catch {
				/* kept raw */
			}
			const hit = { at: Date.now(), headers: req.headers, rawBody, json };
			received.push(hit);
			const status = typeof answer === "function" ? answer(received.length, hit) : answer;
			res.writeHead(status, { "Content-Type": "text/plain" }).end(status === 200 ? "ok" : `failed with ${status}`);
		});
	});
	server.keepAliveTimeout = 5000;
	await new Promise<void>(resolve => server.listen(0, "127.0.0.1", resolve));
	const { port } = server.address() as AddressInfo;
	return {
		url: `http://127.0.0.1:${port}/webhooks/crypto`,
		received,
		respond(a) {
			answer = a;
		},
		async waitFor(count, timeoutMs = 20_000) {
			const until = Date.now() + timeoutMs;
			while (received.length < count) {
				if (Date.now() > until) throw new Error(`Receiver got ${received.length} of ${count} webhooks in ${timeoutMs} ms`);
				await new Promise(r => setTimeout(r, 10));
			}
			return received;
		},
		close() {
			return new Promise(resolve => {
				server.closeAllConnections();
				server.close(() => resolve());
			});
		},
	};
}
