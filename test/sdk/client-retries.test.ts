/**
 * The SDK client's retries against a real local HTTP server (no gateway needed): 503 with
 * Retry-After then 200, Retry-After as an HTTP date, 429 retried even for a POST without a key,
 * 503 not retried for such a POST, network errors, the give-up error, and the generated
 * Idempotency-Key kept across attempts.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { CryptoPayApiError, CryptoPayClient, CryptoPayConnectionError } from "../../sdk/src";
import { until } from "../helpers/until";

interface Hit {
	at: number;
	method: string;
	url: string;
	headers: http.IncomingHttpHeaders;
}

/** A server answering each request with the next scripted answer (the last one repeats). */
async function scripted(answers: Array<{ status: number; headers?: Record<string, string>; body?: unknown }>) {
	const hits: Hit[] = [];
	const server = http.createServer((req, res) => {
		req.resume();
		req.on("end", () => {
			hits.push({ at: Date.now(), method: req.method!, url: req.url!, headers: req.headers });
			const a = answers[Math.min(hits.length - 1, answers.length - 1)];
			res.writeHead(a.status, { "Content-Type": "application/json", ...a.headers }).end(JSON.stringify(a.body ?? {}));
		});
	});
	await new Promise<void>(r => server.listen(0, "127.0.0.1", r));
	const { port } = server.address() as AddressInfo;
	return {
		hits,
		baseUrl: `http://127.0.0.1:${port}/api/v1`,
		close: () => new Promise<void>(r => (server.closeAllConnections(), server.close(() => r()))),
	};
}

const unavailable = (retryAfter: string) => ({ status: 503, headers: { "Retry-After": retryAfter }, body: { statusCode: 503, message: "Service unavailable", error: "Service Unavailable" } });
const fast = { initialDelayMs: 1, maxDelayMs: 5 };
const apiKey = { key: "ak_test_x", secret: "sk_test_y" };

describe("sdk/src/client retries", () => {
	it("waits Retry-After (seconds) on 503 and then returns the 200", async () => {
		const server = await scripted([unavailable("1"), { status: 200, body: { id: "pi_1", status: "succeeded" } }]);
		try {
			const client = new CryptoPayClient({ baseUrl: server.baseUrl, apiKey, retry: fast });
			expect(await client.paymentIntents.retrieve("pi_1")).toEqual({ id: "pi_1", status: "succeeded" });
			expect(server.hits.map(h => h.url)).toEqual(["/api/v1/payment_intents/pi_1", "/api/v1/payment_intents/pi_1"]);
			// A lower bound: a slow machine only makes the gap longer.
			expect(server.hits[1].at - server.hits[0].at).toBeGreaterThanOrEqual(1000);
			expect(server.hits[0].headers.authorization).toBe(`Basic ${Buffer.from("ak_test_x:sk_test_y").toString("base64")}`);
		} finally {
			await server.close();
		}
	});

	it("honours Retry-After given as an HTTP date", async () => {
		const server = await scripted([unavailable(new Date(Date.now() + 2000).toUTCString()), { status: 200, body: { ok: true } }]);
		try {
			const client = new CryptoPayClient({ baseUrl: server.baseUrl, retry: fast });
			expect(await client.get("/payment_intents/{id}", { path: { id: "pi_d" } })).toEqual({ ok: true });
			expect(server.hits).toHaveLength(2);
			expect(server.hits[1].at - server.hits[0].at).toBeGreaterThanOrEqual(1000);
		} finally {
			await server.close();
		}
	});

	it("retries a create on 503 with the same generated Idempotency-Key", async () => {
		const server = await scripted([unavailable("0"), unavailable("0"), { status: 200, body: { id: "pi_2" } }]);
		try {
			const client = new CryptoPayClient({ baseUrl: server.baseUrl, apiKey, retry: fast });
			await client.paymentIntents.create({ amount: "1", currency: "usdc", payment_method_types: ["crypto"], tokenId: "t", networkId: "n", return_url: "https://shop.example/r" });
			const keys = server.hits.map(h => h.headers["idempotency-key"]);
			expect(keys).toHaveLength(3);
			expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
			expect(new Set(keys).size).toBe(1);
		} finally {
			await server.close();
		}
	});

	it("retries 429 even for a POST without a key, but not 503", async () => {
		const limited = await scripted([{ status: 429, headers: { "Retry-After": "0" }, body: { statusCode: 429, message: "ThrottlerException: Too Many Requests", error: "Too Many Requests" } }, { status: 200, body: { id: "pi_3", status: "succeeded" } }]);
		const down = await scripted([unavailable("0"), { status: 200, body: {} }]);
		try {
			await new CryptoPayClient({ baseUrl: limited.baseUrl, apiKey, retry: fast }).paymentIntents.simulate("pi_3");
			expect(limited.hits).toHaveLength(2);
			expect(limited.hits[0].headers["idempotency-key"]).toBeUndefined();

			const err = await new CryptoPayClient({ baseUrl: down.baseUrl, apiKey, retry: fast }).paymentIntents.simulate("pi_3").catch(e => e);
			expect(err).toBeInstanceOf(CryptoPayApiError);
			expect(err).toMatchObject({ status: 503, retryAfterMs: 0, body: { statusCode: 503, message: "Service unavailable" } });
			expect(down.hits).toHaveLength(1);
		} finally {
			await limited.close();
			await down.close();
		}
	});

	it("gives up after the allowed attempts, and on a Retry-After longer than allowed", async () => {
		const server = await scripted([unavailable("0")]);
		try {
			const err = await new CryptoPayClient({ baseUrl: server.baseUrl, retry: { ...fast, retries: 2 } }).get("/payments/networks").catch((e: Error) => e);
			expect(err).toBeInstanceOf(CryptoPayApiError);
			expect(server.hits).toHaveLength(3);
		} finally {
			await server.close();
		}
		const slow = await scripted([unavailable("3600")]);
		try {
			const err = await new CryptoPayClient({ baseUrl: slow.baseUrl, retry: fast }).get("/payments/networks").catch((e: Error) => e);
			expect(err).toMatchObject({ status: 503, retryAfterMs: 3_600_000 });
			expect(slow.hits).toHaveLength(1);
		} finally {
			await slow.close();
		}
	});

	it("does not wait a Retry-After after the last allowed attempt", async () => {
		// Were the last 503's Retry-After (50 minutes) waited for, the test would time out.
		const server = await scripted([unavailable("0"), unavailable("3000")]);
		try {
			const err = await new CryptoPayClient({ baseUrl: server.baseUrl, retry: { ...fast, retries: 1, maxRetryAfterMs: 3_600_000 } }).get("/payments/networks").catch((e: Error) => e);
			expect(err).toMatchObject({ status: 503, retryAfterMs: 3_000_000 });
			expect(server.hits).toHaveLength(2);
		} finally {
			await server.close();
		}
	});

	it("stops retrying when the caller aborts", async () => {
		const server = await scripted([unavailable("30")]);
		try {
			const controller = new AbortController();
			const pending = new CryptoPayClient({ baseUrl: server.baseUrl, retry: fast }).get("/payments/networks", { signal: controller.signal }).catch((e: Error) => e);
			await until("the first attempt", () => server.hits.length === 1, 30_000);
			controller.abort();
			expect(await pending).toMatchObject({ name: "AbortError" });
			expect(server.hits).toHaveLength(1);
		} finally {
			await server.close();
		}
	});

	it("retries network errors for safe requests and then throws CryptoPayConnectionError", async () => {
		const server = await scripted([{ status: 200 }]);
		const { baseUrl } = server;
		await server.close(); // nothing listens on that port any more
		const err = await new CryptoPayClient({ baseUrl, retry: { ...fast, retries: 1 } }).get("/payments/networks").catch((e: Error) => e);
		expect(err).toBeInstanceOf(CryptoPayConnectionError);
		expect((err as Error).message).toContain("no answer");
	});

	it("errors without a JSON body still carry the spec's shape", async () => {
		const server = await scripted([{ status: 404 }]);
		try {
			const err = await new CryptoPayClient({ baseUrl: server.baseUrl }).get("/payments/links/{slug}", { path: { slug: "pl_x" } }).catch(e => e);
			expect(err).toBeInstanceOf(CryptoPayApiError);
			expect(err.body).toMatchObject({ statusCode: 404, error: "Not Found" });
			expect(server.hits[0].url).toBe("/api/v1/payments/links/pl_x");
		} finally {
			await server.close();
		}
	});
});
