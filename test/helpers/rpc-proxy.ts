/**
 * A loopback JSON-RPC proxy in front of a node (anvil), to make it behave like a hosted provider
 * in tests: refuse wide eth_getLogs ranges the way providers do, answer 429 for a while, go down
 * and come back on the same port, answer eth_getLogs with no logs (a provider whose log index
 * missed blocks), require Basic credentials, answer with a body that quotes the request URL (a
 * provider's error page echoing an API key), answer each transaction receipt `null` once (a lagging
 * node behind a load balancer), hold answers and release them later (a call in flight while
 * something else happens), swallow signed transactions (they never reach the node), and count the
 * calls by method (batches counted per call), and tell a listener of each request as it arrives.
 */
import http from "node:http";
import type net from "node:net";
import { Transaction } from "ethers";

interface JsonRpcCall {
	jsonrpc: "2.0";
	id: number | string | null;
	method: string;
	params?: unknown[];
}

export interface RpcProxy {
	url: string;
	port: number;
	/** eth_getLogs spanning more than this many blocks (fromBlock..toBlock) gets -32005 "query returned more than 10000 results"; null: no limit. */
	maxLogsRange: number | null;
	/** Calls answered so far, by method (refused ones included). */
	calls(method?: string): number;
	/** HTTP requests received (a batch is one). */
	requests(): number;
	resetCounts(): void;
	/**
	 * The next `count` HTTP requests get this status (default 429) and no JSON-RPC answer; with
	 * `echoUrl`, a text body quoting the request's full URL (path and query), as some gateways do.
	 */
	failNext(count: number, status?: number, opts?: { echoUrl?: boolean }): void;
	/** The next `count` HTTP requests are held without an answer until the proxy stops (timeouts). */
	stallNext(count: number): void;
	/**
	 * Requests carrying this method are passed to the node, but their answer is held back (the
	 * caller waits until the proxy stops): the node acted, the caller never heard. null: off.
	 */
	swallowAnswers(method: string | null): void;
	/** true: eth_getLogs answers `[]` whatever the chain has (a provider's incomplete log index). */
	hideLogs(on: boolean): void;
	/**
	 * Calls of `method` are answered with `result` without reaching the node (e.g. eth_estimateGas
	 * saying a send passes when the chain will revert it: a state that changed between the
	 * estimate and the block); null: passed to the node again.
	 */
	answer(method: string, result: unknown): void;
	/** true: the first eth_getTransactionReceipt of each hash answers `null` (a node lagging behind the one that mined it). */
	nullReceiptsOnce(on: boolean): void;
	/** The hashes (lower case) whose receipt was answered `null` so far by nullReceiptsOnce. */
	nulledReceipts(): string[];
	/** Answers held back by swallowAnswers so far (still held). */
	heldCount(): number;
	/** Sends the answers held back by swallowAnswers (the caller hears late). */
	releaseHeld(): void;
	/** true: eth_sendRawTransaction is answered with the transaction's hash but never reaches the node. */
	dropSends(on: boolean): void;
	/** Closes the port and drops open connections (node down). */
	stop(): Promise<void>;
	/** Listens again on the same port (node back). */
	start(): Promise<void>;
}

const rangeError = (id: JsonRpcCall["id"]) => ({ jsonrpc: "2.0", id, error: { code: -32005, message: "query returned more than 10000 results" } });

export interface RpcProxyOptions {
	maxLogsRange?: number | null;
	/** Every request must carry these Basic credentials, else 401 (an RPC endpoint behind basic auth). */
	auth?: { user: string; password: string };
	/** Told of each request as it arrives (its methods), before it is passed on: who used the node when. */
	onRequest?: (methods: string[]) => void;
}

export async function startRpcProxy(upstream: string, opts: RpcProxyOptions = {}): Promise<RpcProxy> {
	const counts = new Map<string, number>();
	let requestCount = 0;
	let failures: { left: number; status: number; echoUrl: boolean } = { left: 0, status: 429, echoUrl: false };
	const expectedAuth = opts.auth ? `Basic ${Buffer.from(`${opts.auth.user}:${opts.auth.password}`).toString("base64")}` : null;
	let stalls = 0;
	let swallow: string | null = null;
	let logsHidden = false;
	const canned = new Map<string, unknown>();
	let nullReceipts = false;
	let sendsDropped = false;
	const nulled = new Set<string>();
	const sockets = new Set<net.Socket>();
	const held: http.ServerResponse[] = [];
	const heldAnswers: Array<{ res: http.ServerResponse; body: string }> = [];

	const proxy = {
		maxLogsRange: opts.maxLogsRange ?? null,
	} as RpcProxy;

	function refused(call: JsonRpcCall): boolean {
		if (call.method !== "eth_getLogs" || proxy.maxLogsRange === null) return false;
		const filter = (call.params?.[0] ?? {}) as { fromBlock?: string; toBlock?: string };
		if (typeof filter.fromBlock !== "string" || typeof filter.toBlock !== "string" || !filter.fromBlock.startsWith("0x") || !filter.toBlock.startsWith("0x")) return false;
		return Number(filter.toBlock) - Number(filter.fromBlock) + 1 > proxy.maxLogsRange;
	}

	async function forward(calls: JsonRpcCall[]): Promise<unknown[]> {
		const answers = new Map<number, unknown>();
		const passed: Array<{ index: number; call: JsonRpcCall }> = [];
		calls.forEach((call, index) => {
			counts.set(call.method, (counts.get(call.method) ?? 0) + 1);
			if (refused(call)) answers.set(index, rangeError(call.id));
			else if (logsHidden && call.method === "eth_getLogs") answers.set(index, { jsonrpc: "2.0", id: call.id, result: [] });
			else if (canned.has(call.method)) answers.set(index, { jsonrpc: "2.0", id: call.id, result: canned.get(call.method) });
			else if (nullReceipts && call.method === "eth_getTransactionReceipt" && !nulled.has(String(call.params?.[0]).toLowerCase())) {
				nulled.add(String(call.params?.[0]).toLowerCase());
				answers.set(index, { jsonrpc: "2.0", id: call.id, result: null });
			} else if (sendsDropped && call.method === "eth_sendRawTransaction") answers.set(index, { jsonrpc: "2.0", id: call.id, result: Transaction.from(String(call.params?.[0])).hash });
			else passed.push({ index, call });
		});
		if (passed.length > 0) {
			const res = await fetch(upstream, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(passed.map(p => p.call)) });
			const body = (await res.json()) as Array<{ id: JsonRpcCall["id"] }>;
			for (const p of passed) answers.set(p.index, body.find(b => b.id === p.call.id));
		}
		return calls.map((_, i) => answers.get(i));
	}

	const server = http.createServer((req, res) => {
		const chunks: Buffer[] = [];
		req.on("data", c => chunks.push(c));
		req.on("end", async () => {
			requestCount++;
			if (stalls > 0) {
				stalls--;
				held.push(res);
				return;
			}
			if (expectedAuth && req.headers.authorization !== expectedAuth) {
				res.writeHead(401, { "content-type": "text/plain", "www-authenticate": 'Basic realm="rpc"' }).end("401 Unauthorized");
				return;
			}
			if (failures.left > 0) {
				failures.left--;
				if (failures.echoUrl) res.writeHead(failures.status, { "content-type": "text/html" }).end(`<html><body>${failures.status} Bad Gateway: upstream error for POST http://${req.headers.host}${req.url}</body></html>`);
				else res.writeHead(failures.status, { "content-type": "application/json" }).end(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: failures.status, message: "Too Many Requests" } }));
				return;
			}
			try {
				const payload = JSON.parse(Buffer.concat(chunks).toString()) as JsonRpcCall | JsonRpcCall[];
				opts.onRequest?.((Array.isArray(payload) ? payload : [payload]).map(c => c.method));
				const answers = await forward(Array.isArray(payload) ? payload : [payload]);
				const body = JSON.stringify(Array.isArray(payload) ? answers : answers[0]);
				if (swallow && (Array.isArray(payload) ? payload : [payload]).some(c => c.method === swallow)) {
					held.push(res);
					heldAnswers.push({ res, body });
					return;
				}
				res.writeHead(200, { "content-type": "application/json" }).end(body);
			} catch (e) {
				res.writeHead(502, { "content-type": "text/plain" }).end(`proxy: ${(e as Error).message}`);
			}
		});
	});
	server.on("connection", socket => {
		sockets.add(socket);
		socket.on("close", () => sockets.delete(socket));
	});

	const listen = (port: number) =>
		new Promise<number>((resolve, reject) => {
			server.once("error", reject);
			server.listen(port, "127.0.0.1", () => {
				server.off("error", reject);
				resolve((server.address() as net.AddressInfo).port);
			});
		});

	const port = await listen(0);
	Object.assign(proxy, {
		url: `http://127.0.0.1:${port}`,
		port,
		calls: (method?: string) => (method ? (counts.get(method) ?? 0) : [...counts.values()].reduce((a, b) => a + b, 0)),
		requests: () => requestCount,
		resetCounts() {
			counts.clear();
			requestCount = 0;
		},
		failNext(count: number, status = 429, o: { echoUrl?: boolean } = {}) {
			failures = { left: count, status, echoUrl: o.echoUrl ?? false };
		},
		stallNext(count: number) {
			stalls = count;
		},
		swallowAnswers(method: string | null) {
			swallow = method;
		},
		hideLogs(on: boolean) {
			logsHidden = on;
		},
		answer(method: string, result: unknown) {
			if (result === null) canned.delete(method);
			else canned.set(method, result);
		},
		nullReceiptsOnce(on: boolean) {
			nullReceipts = on;
		},
		nulledReceipts: () => [...nulled],
		heldCount: () => heldAnswers.length,
		releaseHeld() {
			for (const { res, body } of heldAnswers.splice(0)) {
				held.splice(held.indexOf(res), 1);
				if (!res.destroyed) res.writeHead(200, { "content-type": "application/json" }).end(body);
			}
		},
		dropSends(on: boolean) {
			sendsDropped = on;
		},
		async stop() {
			const closed = new Promise<void>(resolve => server.close(() => resolve()));
			heldAnswers.length = 0;
			for (const res of held.splice(0)) res.destroy();
			for (const socket of sockets) socket.destroy();
			await closed;
		},
		async start() {
			await listen(port);
		},
	});
	return proxy;
}
