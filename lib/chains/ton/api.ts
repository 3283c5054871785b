/**
 * A small client of toncenter's v3 indexer API (ton-indexer, `/api/v3/...`; docs/watchers.md
 * "TON"): GET with query parameters, POST with a JSON body. The API key, when configured, goes in
 * the `X-API-Key` header (never in a URL that could be logged); a key already in the configured
 * URL (`?api_key=`) is kept as given and redacted from messages. Transport failures, timeouts, HTTP
 * 429 and 5xx are retried with exponential backoff and full jitter (the exponential-backoff
 * package, as the EVM and UTXO clients do), then surface as TonApiUnavailableError, which the
 * watcher runner treats as "RPC down, retry at the next step". Other HTTP errors are final.
 *
 * Transport: Node's own http/https client over a keep-alive agent of the client's (sockets reused
 * across requests), not `fetch`: a busy masterchain block is about 1 MB of JSON, and fetch's web
 * streams, TextDecoder and WASM HTTP parser cost the watcher about twice the CPU per byte of
 * http.request (docs/benchmarks.md, TON chain watcher). No `accept-encoding`: answers come
 * uncompressed (no inflate on the watcher's core; the indexer is best run near the watcher).
 */
import http from "node:http";
import https from "node:https";
import { backOff } from "exponential-backoff";
import { rpcCredentials, scrubRpcText } from "../../watchers/config";

/** The API could not be reached, or kept failing (network, timeout, 429, 5xx) after the retries. */
export class TonApiUnavailableError extends Error {
	constructor(readonly path: string, readonly attempts: number, detail: string) {
		super(`TON API unavailable: ${path} failed ${attempts} time(s): ${detail}`);
		// The runner's name for "the RPC is down" (lib/watchers/runner.ts onError).
		this.name = "RpcUnavailableError";
	}
}

/** The API answered with an error that retrying does not change (4xx other than 429). */
export class TonApiError extends Error {
	constructor(readonly path: string, readonly status: number, detail: string) {
		super(`TON API ${path}: HTTP ${status}: ${detail}`);
		this.name = "TonApiError";
	}
}

class RetryableError extends Error {}

export interface TonApiOptions {
	/** The API base: `https://toncenter.com` or `https://toncenter.com/api/v3` (both accepted). */
	baseUrl: string;
	apiKey?: string | null;
	timeoutMs: number;
	/** Attempts in all, the first included. Default 4. */
	attempts?: number;
	startingDelayMs?: number;
	maxDelayMs?: number;
}

export interface TonApi {
	get<T>(path: string, query?: Record<string, string | number | undefined>): Promise<T>;
	post<T>(path: string, body: unknown): Promise<T>;
	/** Closes the kept-alive sockets (idle ones never hold the process open: Node unrefs them). */
	close?(): void;
}

/** Requests in flight to the API at once, per client; more wait for a socket. */
const MAX_SOCKETS = 16;

/** One request: status and body text. Rejects on a transport failure, a reset mid-body or the timeout. */
function send(agent: http.Agent, u: URL, method: string, headers: http.OutgoingHttpHeaders, body: string | undefined, timeoutMs: number): Promise<{ status: number; text: string }> {
	return new Promise((resolve, reject) => {
		const req = (u.protocol === "https:" ? https : http).request(u, { method, headers, agent, signal: AbortSignal.timeout(timeoutMs) }, res => {
			const chunks: Buffer[] = [];
			res.on("data", (c: Buffer) => chunks.push(c));
			res.on("end", () => {
				const answer = { status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") };
				// The agent frees the socket once the answer has ended AND the request finished writing.
				// On a busy machine the answer can end first; resolving then would make the caller's
				// next request open a second connection instead of reusing this one.
				if (req.writableFinished) resolve(answer);
				else req.once("finish", () => resolve(answer));
			});
			res.on("error", reject);
		});
		req.on("error", reject);
		req.end(body);
	});
}

/** `https://host[/prefix]` + `/api/v3` unless the base already ends with it. */
function apiRoot(base: string): URL {
	const u = new URL(base);
	const path = u.pathname.replace(/\/+$/, "");
	u.pathname = /\/api\/v3$/.test(path) ? path : `${path}/api/v3`;
	return u;
}

export function createTonApi(opts: TonApiOptions): TonApi {
	const { url, authorization, secrets } = rpcCredentials(opts.baseUrl);
	const root = apiRoot(url);
	const apiKey = opts.apiKey?.trim() || null;
	const allSecrets = apiKey ? [apiKey, ...secrets] : secrets;
	const headers: Record<string, string> = { accept: "application/json" };
	if (apiKey) headers["X-API-Key"] = apiKey;
	if (authorization) headers.authorization = authorization;
	const scrub = (s: string) => scrubRpcText(s, allSecrets);
	const agent = root.protocol === "https:" ? new https.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS }) : new http.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS });

	async function call<T>(path: string, init: { method: "GET" | "POST"; query?: Record<string, string | number | undefined>; body?: unknown }): Promise<T> {
		const u = new URL(root.toString());
		u.pathname = `${root.pathname}/${path.replace(/^\/+/, "")}`;
		for (const [k, v] of Object.entries(init.query ?? {})) if (v !== undefined) u.searchParams.set(k, String(v));
		const attempts = opts.attempts ?? 4;
		let tries = 0;
		try {
			return await backOff(
				async () => {
					tries++;
					let res: { status: number; text: string };
					try {
						res = await send(agent, u, init.method, init.body === undefined ? headers : { ...headers, "content-type": "application/json" }, init.body === undefined ? undefined : JSON.stringify(init.body), opts.timeoutMs);
					} catch (err) {
						throw new RetryableError(scrub((err as Error)?.message ?? String(err)));
					}
					const { status, text } = res;
					if (status === 429 || status >= 500) throw new RetryableError(`HTTP ${status}: ${scrub(text.slice(0, 200))}`);
					if (status < 200 || status > 299) throw new TonApiError(path, status, scrub(text.slice(0, 300)));
					try {
						return JSON.parse(text) as T;
					} catch {
						throw new RetryableError(`HTTP ${status}, not JSON`);
					}
				},
				{ numOfAttempts: attempts, startingDelay: opts.startingDelayMs ?? 200, maxDelay: opts.maxDelayMs ?? 3_000, jitter: "full", retry: err => err instanceof RetryableError },
			);
		} catch (err) {
			if (err instanceof RetryableError) throw new TonApiUnavailableError(path, tries, err.message);
			throw err;
		}
	}

	return {
		get: (path, query) => call(path, { method: "GET", query }),
		post: (path, body) => call(path, { method: "POST", body }),
		close: () => agent.destroy(),
	};
}
