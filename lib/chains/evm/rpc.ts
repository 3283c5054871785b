/**
 * The one way an EVM JSON-RPC provider is built for a configured RPC URL (`RPC_URL_<SLUG>`), by the
 * watcher (lib/chains/evm/source.ts) and the sweeper (services/sweeper-evm.service.ts) alike:
 *
 * - credentials in the URL (`https://user:pass@host`) go into a Basic Authorization header: Node's
 *   fetch refuses a URL that carries them, so such a URL never read a block before;
 * - every HTTP request has a total timeout, aborted for real (ethers' default getUrl only arms an
 *   idle-socket timer);
 * - ethers retries nothing itself (it would retry 429s up to 12 times): callers decide;
 * - every error leaving the provider is scrubbed: ethers quotes the request URL and the response
 *   body in its messages (a 502 page echoing `?apikey=...`), so the URL's secrets (password, query
 *   values, path segments) and every URL are removed from the message and the error's fields
 *   before anyone can log it or send it to error tracking;
 * - nothing cached (`cacheTimeout: -1`), a static network (no chain-id probe loop when the node is
 *   down), and responses decoded by the platform (see JsonRpcProviderFastJson).
 */
import { FetchRequest, JsonRpcProvider, Network, makeError, type FetchGetUrlFunc, type JsonRpcPayload, type JsonRpcResult } from "ethers";
import { rpcCredentials, scrubRpcText } from "../../watchers/config";

export interface EvmProviderOptions {
	chainId: number | bigint;
	/** The ethers Network name (default `evm:<chainId>`). */
	networkName?: string;
	/** Total time of one HTTP request, in ms (default ethers' 5 minutes). */
	timeoutMs?: number;
	/** JSON-RPC calls per HTTP batch (ethers' default 100). */
	batchMaxCount?: number;
	/** How long calls are gathered into one batch, in ms (ethers' default 10). */
	batchStallTime?: number;
}

/** Real timeouts: fetch aborted after `req.timeout` ms in all. */
const fetchGetUrl: FetchGetUrlFunc = async req => {
	const res = await fetch(req.url, {
		method: req.method,
		headers: req.headers,
		body: req.body ?? undefined,
		signal: AbortSignal.timeout(req.timeout),
	});
	const body = new Uint8Array(await res.arrayBuffer());
	const headers: Record<string, string> = {};
	res.headers.forEach((value, key) => {
		headers[key] = value;
	});
	return { statusCode: res.status, statusMessage: res.statusText, headers, body: body.length > 0 ? body : null };
};

/** Scrubs an error in place (its class, code and the fields callers classify by stay): message, shortMessage, info, cause. */
export function scrubRpcError(err: unknown, secrets: readonly string[]): unknown {
	const seen = new Set<unknown>();
	const walk = (e: unknown, depth: number): void => {
		if (!e || typeof e !== "object" || seen.has(e) || depth > 3) return;
		seen.add(e);
		const o = e as Record<string, unknown>;
		for (const key of ["message", "shortMessage", "stack", "body", "requestUrl", "responseBody"]) {
			if (typeof o[key] === "string") {
				try {
					o[key] = scrubRpcText(o[key] as string, secrets);
				} catch {
					// a read-only field: nothing to scrub there
				}
			}
		}
		for (const key of ["info", "cause", "error", "request"]) walk(o[key], depth + 1);
	};
	walk(err, 0);
	return err;
}

/**
 * ethers' JsonRpcProvider with the response decoded by the platform: ethers' own UTF-8 decoder
 * (FetchResponse.bodyJson) is pure JavaScript and takes ~90 ms for the 600 KB of a 1,000-log
 * answer, against well under 1 ms for TextDecoder. `_send` is the provider's documented override;
 * it is also the one place every HTTP failure passes, so errors are scrubbed here.
 */
class EvmJsonRpcProvider extends JsonRpcProvider {
	private readonly decoder = new TextDecoder();

	constructor(
		request: FetchRequest,
		network: Network,
		options: ConstructorParameters<typeof JsonRpcProvider>[2],
		private readonly secrets: readonly string[],
	) {
		super(request, network, options);
	}

	override async _send(payload: JsonRpcPayload | JsonRpcPayload[]): Promise<JsonRpcResult[]> {
		try {
			const request = this._getConnection();
			request.body = JSON.stringify(payload);
			request.setHeader("content-type", "application/json");
			const response = await request.send();
			response.assertOk();
			let body: unknown;
			try {
				body = JSON.parse(this.decoder.decode(response.body ?? new Uint8Array()));
			} catch (e) {
				throw makeError("invalid JSON-RPC response", "BAD_DATA", { value: scrubRpcText(this.decoder.decode(response.body ?? new Uint8Array()).slice(0, 300), this.secrets), info: { error: e } });
			}
			return (Array.isArray(body) ? body : [body]) as JsonRpcResult[];
		} catch (err) {
			throw scrubRpcError(err, this.secrets);
		}
	}
}

/** A provider for `rpcUrl` (see the module comment). `destroy()` it when done. */
export function createEvmProvider(rpcUrl: string, opts: EvmProviderOptions): JsonRpcProvider {
	const { url, authorization, secrets } = rpcCredentials(rpcUrl);
	const request = new FetchRequest(url);
	if (authorization) request.setHeader("authorization", authorization);
	if (opts.timeoutMs !== undefined) request.timeout = opts.timeoutMs;
	request.getUrlFunc = fetchGetUrl;
	request.retryFunc = async () => false;
	return new EvmJsonRpcProvider(request, new Network(opts.networkName ?? `evm:${opts.chainId}`, BigInt(opts.chainId)), {
		staticNetwork: true,
		cacheTimeout: -1,
		...(opts.batchMaxCount !== undefined ? { batchMaxCount: opts.batchMaxCount } : {}),
		...(opts.batchStallTime !== undefined ? { batchStallTime: opts.batchStallTime } : {}),
	}, secrets);
}
