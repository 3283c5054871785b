/**
 * A small HTTP JSON-RPC server for source tests: each call is answered with the full response
 * object `handler` returns (e.g. a documented response example), its id set to the request's.
 * Every call is recorded.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export type JsonRpcHandler = (method: string, params: unknown[]) => unknown;

export interface JsonRpcServer {
	url: string;
	calls: Array<{ method: string; params: unknown[] }>;
	close(): Promise<void>;
}

export async function jsonRpcServer(handler: JsonRpcHandler): Promise<JsonRpcServer> {
	const calls: JsonRpcServer["calls"] = [];
	const server = http.createServer((req, res) => {
		let body = "";
		req.on("data", c => (body += c));
		req.on("end", () => {
			const call = JSON.parse(body) as { id: unknown; method: string; params?: unknown[] };
			calls.push({ method: call.method, params: call.params ?? [] });
			const out = handler(call.method, call.params ?? []) as Record<string, unknown>;
			res.setHeader("content-type", "application/json");
			// Documented examples carry id 1; a client matches a response to its request by id.
			res.end(JSON.stringify({ ...out, id: call.id }));
		});
	});
	await new Promise<void>(r => server.listen(0, "127.0.0.1", r));
	return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, calls, close: () => new Promise(r => server.close(() => r())) };
}
