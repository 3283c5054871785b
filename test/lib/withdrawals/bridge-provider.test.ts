/**
 * The HTTP bridge provider against a local node:http server playing the provider's API.
 * No database: runs in the sqlite jest project only.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { inspect } from "node:util";
import {
	BridgeRejectedError, BridgeUnavailableError, createHttpBridgeProvider, type BridgeProvider, type BridgeQuoteRequest, type HttpBridgeProviderOptions,
} from "../../../lib/withdrawals/bridge-provider";

const describeHttp = process.env.TEST_BACKEND === "mysql" ? describe.skip : describe;

const API_KEY = "sk_live_bridge_0123456789abcdef";
const REQUEST: BridgeQuoteRequest = {
	sourceChainType: "evm",
	sourceChainId: 137,
	sourceToken: "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359",
	destinationChainType: "evm",
	destinationChainId: 8453,
	destinationToken: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
	// Beyond 2^53: must travel and come back as a string, exact.
	amount: "123456789012345678901",
	recipient: "0x000000000000000000000000000000000000bEEF",
	refundAddress: null,
};
const QUOTE = {
	quoteId: "q_1",
	depositAddress: "0x00000000000000000000000000000000000D3905",
	expectedOutput: "123456789012345000000",
	fee: "678901",
	expiresAt: "2030-01-01T00:00:00.000Z",
};

interface Seen {
	method: string;
	url: string;
	headers: http.IncomingHttpHeaders;
	body: string;
}
/** One scripted answer per request, in order; the last repeats. "hang" never answers. */
type Answer = { status: number; body: unknown } | "hang";

describeHttp("HTTP bridge provider (local server)", () => {
	let server: http.Server;
	let baseUrl: string;
	let answers: Answer[] = [];
	let seen: Seen[] = [];
	const hanging = new Set<http.ServerResponse>();

	beforeAll(async () => {
		server = http.createServer((req, res) => {
			let body = "";
			req.on("data", c => (body += c));
			req.on("end", () => {
				seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
				const a = answers.length > 1 ? answers.shift()! : answers[0];
				if (a === "hang") {
					hanging.add(res);
					return;
				}
				res.writeHead(a.status, { "content-type": "application/json" });
				res.end(typeof a.body === "string" ? a.body : JSON.stringify(a.body));
			});
		});
		await new Promise<void>(resolve => server.listen(0, "127.0.0.1", resolve));
		baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/`;
	});
	afterEach(() => {
		for (const res of hanging) res.destroy();
		hanging.clear();
	});
	afterAll(async () => {
		server.closeAllConnections();
		await new Promise(resolve => server.close(resolve));
	});
	beforeEach(() => {
		answers = [];
		seen = [];
	});

	const provider = (extra: Partial<HttpBridgeProviderOptions> = {}): BridgeProvider =>
		createHttpBridgeProvider({ baseUrl, apiKey: API_KEY, timeoutMs: 2_000, retry: { attempts: 3, startingDelayMs: 10, maxDelayMs: 40 }, ...extra });

	it("asks for a quote: POST {baseUrl}/quote with the request as JSON and the key in a header; amounts stay exact strings", async () => {
		answers = [{ status: 200, body: QUOTE }];
		const q = await provider().quote(REQUEST);
		expect(q).toEqual({ ...QUOTE, depositMemo: null, expiresAt: new Date(QUOTE.expiresAt) });
		expect(seen).toHaveLength(1);
		expect(seen[0].method).toBe("POST");
		expect(seen[0].url).toBe("/v1/quote");
		expect(seen[0].headers["x-api-key"]).toBe(API_KEY);
		expect(seen[0].headers["content-type"]).toBe("application/json");
		expect(JSON.parse(seen[0].body)).toEqual(REQUEST);
		expect(seen[0].body).toContain('"amount":"123456789012345678901"');
	});

	it("follows a status from pending to completed: GET {baseUrl}/status/:id", async () => {
		answers = [
			{ status: 200, body: { state: "pending" } },
			{ status: 200, body: { state: "completed", destinationTxHash: "0xabc", outputAmount: "123456789012345000000" } },
		];
		const p = provider();
		expect(await p.status("q_1")).toEqual({ state: "pending", destinationTxHash: null, outputAmount: null, reason: null });
		expect(await p.status("q_1")).toEqual({ state: "completed", destinationTxHash: "0xabc", outputAmount: "123456789012345000000", reason: null });
		expect(seen.map(s => `${s.method} ${s.url}`)).toEqual(["GET /v1/status/q_1", "GET /v1/status/q_1"]);
		expect(seen[0].headers["x-api-key"]).toBe(API_KEY);
	});

	it("reports failed and refunded with the provider's reason", async () => {
		answers = [
			{ status: 200, body: { state: "failed", reason: "slippage" } },
			{ status: 200, body: { state: "refunded", reason: "expired", destinationTxHash: null } },
		];
		const p = provider();
		expect(await p.status("q_1")).toMatchObject({ state: "failed", reason: "slippage" });
		expect(await p.status("q_1")).toMatchObject({ state: "refunded", reason: "expired", destinationTxHash: null });
	});

	it("retries a 429 and succeeds", async () => {
		answers = [{ status: 429, body: { message: "slow down" } }, { status: 200, body: QUOTE }];
		const q = await provider().quote(REQUEST);
		expect(q.quoteId).toBe("q_1");
		expect(seen).toHaveLength(2);
	});

	it("gives up after the attempts on 500s: BridgeUnavailableError", async () => {
		answers = [{ status: 500, body: { message: "boom" } }];
		const err = await provider().status("q_1").catch(e => e);
		expect(err).toBeInstanceOf(BridgeUnavailableError);
		expect(err).toMatchObject({ operation: "status", attempts: 3 });
		expect(err.message).toContain("HTTP 500");
		expect(seen).toHaveLength(3);
	});

	it("does not retry other 4xx: BridgeRejectedError with the provider's message, the key redacted", async () => {
		answers = [{ status: 400, body: { message: `unsupported route for key ${API_KEY}` } }];
		const err = await provider().quote(REQUEST).catch(e => e);
		expect(err).toBeInstanceOf(BridgeRejectedError);
		expect(err).toMatchObject({ operation: "quote", status: 400 });
		expect(err.message).toContain("unsupported route");
		expect(inspect(err)).not.toContain(API_KEY);
		expect(seen).toHaveLength(1);
	});

	it("refuses a malformed response: BridgeRejectedError naming the fields, no secret or echoed value in it", async () => {
		// A provider echoing the key back in a field that should be an amount.
		answers = [{ status: 200, body: { ...QUOTE, expectedOutput: 1.5e21, fee: API_KEY } }];
		const err = await provider().quote(REQUEST).catch(e => e);
		expect(err).toBeInstanceOf(BridgeRejectedError);
		expect(err.message).toContain("expectedOutput");
		expect(err.message).toContain("fee");
		expect(inspect(err)).not.toContain(API_KEY);
		expect(seen).toHaveLength(1);
	});

	it("refuses other malformed answers: not JSON, a completed status without its hash, an unknown state, a fee not below the amount, a redirect", async () => {
		const p = provider();
		answers = [{ status: 200, body: "<html>" }];
		await expect(p.quote(REQUEST)).rejects.toThrow(BridgeRejectedError);
		answers = [{ status: 200, body: { state: "completed" } }];
		await expect(p.status("q_1")).rejects.toThrow(/completed without destinationTxHash/);
		answers = [{ status: 200, body: { state: "done" } }];
		await expect(p.status("q_1")).rejects.toThrow(BridgeRejectedError);
		answers = [{ status: 200, body: { ...QUOTE, fee: REQUEST.amount } }];
		await expect(p.quote(REQUEST)).rejects.toThrow(/fee is not below the amount/);
		answers = [{ status: 200, body: { ...QUOTE, expiresAt: "soon" } }];
		await expect(p.quote(REQUEST)).rejects.toThrow(/expiresAt/);
		// A redirect is not followed (the key would go with it).
		answers = [{ status: 302, body: {} }];
		await expect(p.status("q_1")).rejects.toMatchObject({ name: "BridgeRejectedError", status: 302 });
	});

	it("times out a provider that never answers, retries, then BridgeUnavailableError", async () => {
		answers = ["hang"];
		const started = Date.now();
		const err = await provider({ timeoutMs: 200, retry: { attempts: 2, startingDelayMs: 10, maxDelayMs: 20 } }).status("q_1").catch(e => e);
		expect(err).toBeInstanceOf(BridgeUnavailableError);
		expect(err.message).toContain("timed out after 200 ms");
		expect(seen).toHaveLength(2);
		// Generous: it only says the call gave up instead of hanging (a loaded machine is slow, not wrong).
		expect(Date.now() - started).toBeLessThan(20_000);
	});

	it("treats a refused connection as unavailable", async () => {
		const closed = http.createServer();
		await new Promise<void>(resolve => closed.listen(0, "127.0.0.1", resolve));
		const port = (closed.address() as AddressInfo).port;
		await new Promise(resolve => closed.close(resolve));
		const err = await provider({ baseUrl: `http://127.0.0.1:${port}` }).status("q_1").catch(e => e);
		expect(err).toBeInstanceOf(BridgeUnavailableError);
		expect(err.message).toContain("ECONNREFUSED");
	});

	it("sends no key header without a key, and refuses a non-positive amount before any request", async () => {
		answers = [{ status: 200, body: { state: "pending" } }];
		await provider({ apiKey: null }).status("q 1/x");
		expect(seen[0].headers["x-api-key"]).toBeUndefined();
		expect(seen[0].url).toBe("/v1/status/q%201%2Fx");
		await expect(provider().quote({ ...REQUEST, amount: "0" })).rejects.toThrow(RangeError);
		await expect(provider().quote({ ...REQUEST, amount: "1.5" })).rejects.toThrow(RangeError);
		expect(seen).toHaveLength(1);
	});
});
