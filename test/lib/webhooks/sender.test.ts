/** The HTTP attempt against real loopback servers. */
import dns from "node:dns/promises";
import http from "node:http";
import os from "node:os";
import type { AddressInfo } from "node:net";
import { isInternalAddress } from "../../../lib/keys/webhook-url";
import { refuseUrl, sendWebhook } from "../../../lib/webhooks/sender";
import { signWebhookBody, verifyWebhookSignature } from "../../../lib/webhooks/signature";

interface Seen {
	headers: http.IncomingHttpHeaders;
	body: string;
}

function receiver(handler: (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void) {
	const seen: Seen[] = [];
	const server = http.createServer((req, res) => {
		const chunks: Buffer[] = [];
		req.on("data", c => chunks.push(c));
		req.on("end", () => {
			const body = Buffer.concat(chunks).toString("utf8");
			seen.push({ headers: req.headers, body });
			handler(req, res, body);
		});
	});
	return new Promise<{ url: string; seen: Seen[]; close: () => Promise<void> }>(resolve => {
		server.listen(0, "127.0.0.1", () => {
			const { port } = server.address() as AddressInfo;
			resolve({
				url: `http://127.0.0.1:${port}/hook`,
				seen,
				close: () => new Promise(r => {
					server.closeAllConnections();
					server.close(() => r());
				}),
			});
		});
	});
}

const base = { timeoutMs: 2000, enforcePublicUrls: false, responseMaxChars: 100 };

describe("sendWebhook", () => {
	it("POSTs the exact body as JSON with a signature the receiver can verify", async () => {
		const r = await receiver((_req, res) => res.writeHead(200, { "Content-Type": "text/plain" }).end("ok"));
		try {
			const body = JSON.stringify({ id: "evt_1", type: "payment_intent.completed", data: { object: { amount: "1" } } });
			const result = await sendWebhook({ ...base, url: r.url, body, signature: signWebhookBody(body, "s3cret"), eventId: "evt_1" });
			expect(result).toMatchObject({ statusCode: 200, response: "ok", error: null });
			expect(r.seen).toHaveLength(1);
			expect(r.seen[0].body).toBe(body);
			expect(r.seen[0].headers["content-type"]).toBe("application/json");
			expect(r.seen[0].headers["x-webhook-id"]).toBe("evt_1");
			expect(verifyWebhookSignature(r.seen[0].body, r.seen[0].headers["x-webhook-signature"], "s3cret")).toBe(true);
		} finally {
			await r.close();
		}
	});

	it("reports the status and body of a failing endpoint, cut to the limit", async () => {
		const r = await receiver((_req, res) => res.writeHead(500).end("e".repeat(5000)));
		try {
			const result = await sendWebhook({ ...base, url: r.url, body: "{}", signature: "x" });
			expect(result.statusCode).toBe(500);
			expect(result.error).toBeNull();
			expect(result.response.length).toBeLessThanOrEqual(101);
		} finally {
			await r.close();
		}
	});

	it("gives up at the timeout", async () => {
		const r = await receiver(() => undefined); // never answers
		try {
			const result = await sendWebhook({ ...base, timeoutMs: 300, url: r.url, body: "{}", signature: "x" });
			expect(result.statusCode).toBeNull();
			expect(result.error).toBe("Timed out after 300 ms");
			expect(result.durationMs).toBeGreaterThanOrEqual(290);
		} finally {
			await r.close();
		}
	});

	it("reports a refused connection", async () => {
		const r = await receiver((_req, res) => res.end());
		const url = r.url;
		await r.close();
		const result = await sendWebhook({ ...base, url, body: "{}", signature: "x" });
		expect(result.statusCode).toBeNull();
		expect(result.error).toMatch(/ECONNREFUSED/);
	});

	describe("in production", () => {
		it("refuses plain HTTP, localhost and internal literal addresses before connecting", () => {
			expect(refuseUrl(new URL("http://example.com/h"), true)).toMatch(/HTTPS/);
			expect(refuseUrl(new URL("https://localhost/h"), true)).toMatch(/non-public/);
			expect(refuseUrl(new URL("https://127.0.0.1/h"), true)).toMatch(/non-public/);
			expect(refuseUrl(new URL("https://[::1]/h"), true)).toMatch(/non-public/);
			expect(refuseUrl(new URL("https://10.1.2.3/h"), true)).toMatch(/non-public/);
			expect(refuseUrl(new URL("https://93.184.215.14/h"), true)).toBeNull();
			expect(refuseUrl(new URL("http://127.0.0.1/h"), false)).toBeNull();
		});

		it("checks the address a host name resolves to when connecting (DNS rebinding)", async () => {
			// The machine's own name resolves to a loopback address here and is not caught by the name rules.
			const name = os.hostname();
			const { address } = await dns.lookup(name);
			expect(isInternalAddress(address)).toBe(true);
			expect(refuseUrl(new URL(`https://${name}/h`), true)).toBeNull();
			const r = await receiver((_req, res) => res.end("should not be reached"));
			try {
				const port = new URL(r.url).port;
				const result = await sendWebhook({ ...base, enforcePublicUrls: true, url: `https://${name}:${port}/hook`, body: "{}", signature: "x" });
				expect(result.statusCode).toBeNull();
				expect(result.error).toMatch(/resolves to a non-public address/);
				expect(r.seen).toHaveLength(0);
			} finally {
				await r.close();
			}
		});
	});
});
