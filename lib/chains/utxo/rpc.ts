/**
 * A small Bitcoin Core JSON-RPC client for the UTXO sweeper: credentials from the URL go into the
 * Authorization header only (never into a message or log), amounts stay exact strings
 * (parseRpcReply), transient failures are retried with backoff and jitter (exponential-backoff).
 */
import { backOff } from "exponential-backoff";
import { parseRpcReply } from "./source";
import { rpcCredentials } from "../../watchers/config";

export type UtxoRpcCall = <T = unknown>(method: string, params?: unknown[]) => Promise<T>;

/** An error the node answered (code and message), as opposed to a transport failure. */
export class UtxoRpcError extends Error {
	constructor(
		readonly method: string,
		readonly code: number,
		message: string,
	) {
		super(`${method}: ${message} (${code})`);
		this.name = "UtxoRpcError";
	}
}

export function createUtxoRpc(rpcUrl: string, opts: { timeoutMs?: number; attempts?: number } = {}): UtxoRpcCall {
	const { url, authorization: auth } = rpcCredentials(rpcUrl);
	const timeoutMs = opts.timeoutMs ?? 15_000;
	let id = 0;
	return async <T>(method: string, params: unknown[] = []): Promise<T> =>
		backOff(
			async () => {
				const res = await fetch(url, {
					method: "POST",
					headers: { "content-type": "application/json", ...(auth ? { authorization: auth } : {}) },
					body: JSON.stringify({ jsonrpc: "1.0", id: ++id, method, params }),
					signal: AbortSignal.timeout(timeoutMs),
				});
				const text = await res.text();
				if (res.status === 401 || res.status === 403) throw new UtxoRpcError(method, res.status, "RPC credentials refused");
				let reply: { result: T; error: { code: number; message: string } | null };
				try {
					reply = parseRpcReply(text);
				} catch {
					throw new Error(`${method}: HTTP ${res.status}, not a JSON-RPC answer`);
				}
				if (reply.error) throw new UtxoRpcError(method, reply.error.code, reply.error.message);
				return reply.result;
			},
			{
				numOfAttempts: opts.attempts ?? 4,
				startingDelay: 200,
				maxDelay: 3_000,
				jitter: "full",
				// The node's own answers (bad params, rejected transaction) are final; transport failures are not.
				retry: err => !(err instanceof UtxoRpcError),
			},
		);
}
