/**
 * Strategy 2's bridge provider (docs/withdrawals.md "Strategy 2: bridged withdrawals"): the
 * adapter interface and one HTTP implementation of a small, generic JSON API in the shape of
 * deposit-address bridges (quote -> send the source funds to the quoted deposit address -> poll
 * the status until the destination transfer is done):
 *   POST {baseUrl}/quote        body: BridgeQuoteRequest  -> BridgeQuote (JSON)
 *   GET  {baseUrl}/status/:id                             -> BridgeStatus (JSON)
 * Amounts are integer strings in the token's base units, never JS numbers.
 *
 * Robustness: every attempt has a real timeout (aborted); network errors, timeouts, HTTP 429 and
 * 5xx are retried with exponential backoff and full jitter (the exponential-backoff package),
 * then BridgeUnavailableError (try again later). Any other 4xx and any response that is not the
 * documented shape is BridgeRejectedError (do not send funds). The API key travels in a header
 * and never appears in an error message or a log line.
 */
import { backOff } from "exponential-backoff";
import Validator from "fastest-validator";

export interface BridgeQuoteRequest {
	sourceChainType: string;
	/** The catalogue's chain id of the network the funds are on. */
	sourceChainId: number;
	/** Token contract on the source network, "" for the native coin. */
	sourceToken: string;
	destinationChainType: string;
	destinationChainId: number;
	/** Token contract on the destination network, "" for the native coin. */
	destinationToken: string;
	/** Base units of the source token the sweeper will send, integer string. */
	amount: string;
	/** Where the provider delivers on the destination network (the merchant's address). */
	recipient: string;
	/** Where the provider returns the funds on the source network if the bridge fails; null: the provider's policy. */
	refundAddress: string | null;
}

export interface BridgeQuote {
	/** The provider's id of this quote, the key of its status. */
	quoteId: string;
	/** Where the sweeper must send exactly `amount` of the source token. */
	depositAddress: string;
	/** Memo / tag the deposit must carry on chains that need one (TON, Cosmos); null: none. */
	depositMemo: string | null;
	/** Base units of the destination token the recipient should receive, integer string. */
	expectedOutput: string;
	/** The provider's fee in base units of the source token, integer string. */
	fee: string;
	/** A deposit after this is not honoured at this quote: ask again. */
	expiresAt: Date;
}

export const BRIDGE_STATES = ["pending", "completed", "failed", "refunded"] as const;
export type BridgeState = (typeof BRIDGE_STATES)[number];

export interface BridgeStatus {
	state: BridgeState;
	/** The delivery on the destination network; always present once completed. */
	destinationTxHash: string | null;
	/** Base units of the destination token delivered, when the provider says. */
	outputAmount: string | null;
	/** The provider's explanation of a failure or refund. */
	reason: string | null;
}

export interface BridgeProvider {
	readonly name: string;
	quote(req: BridgeQuoteRequest): Promise<BridgeQuote>;
	status(quoteId: string): Promise<BridgeStatus>;
}

/** The provider could not be reached or kept failing (network, timeout, 429, 5xx) after the retries: try later. */
export class BridgeUnavailableError extends Error {
	constructor(
		readonly operation: "quote" | "status",
		readonly attempts: number,
		readonly reason: string,
	) {
		super(`Bridge provider unavailable (${operation}, ${attempts} attempt${attempts === 1 ? "" : "s"}): ${reason}`);
		this.name = "BridgeUnavailableError";
	}
}

/** The provider refused the request (4xx) or answered something that is not the documented shape: no funds move on it. */
export class BridgeRejectedError extends Error {
	constructor(
		readonly operation: "quote" | "status",
		readonly status: number | null,
		message: string,
	) {
		super(`Bridge provider rejected ${operation}: ${message}`);
		this.name = "BridgeRejectedError";
	}
}

export interface HttpBridgeProviderOptions {
	baseUrl: string;
	apiKey?: string | null;
	/** Header that carries the API key. Default x-api-key. */
	apiKeyHeader?: string;
	/** Per attempt. */
	timeoutMs: number;
	retry?: {
		/** Attempts in all (first included). Default 4. */
		attempts?: number;
		/** Ceiling of the first wait; doubles each attempt (full jitter: a random wait below it). Default 250 ms. */
		startingDelayMs?: number;
		maxDelayMs?: number;
	};
	/** Shown in logs and records. Default "http". */
	name?: string;
}

const BASE_UNITS = /^(0|[1-9]\d{0,77})$/;
const v = new Validator();
const baseUnits = { type: "string", pattern: BASE_UNITS };
const text = (max: number) => ({ type: "string", min: 1, max, trim: false });
const checkQuote = v.compile({
	$$root: true,
	type: "object",
	props: {
		quoteId: { ...text(200), pattern: /^[A-Za-z0-9._:-]+$/ },
		depositAddress: text(128),
		depositMemo: { type: "string", max: 128, optional: true, nullable: true },
		expectedOutput: baseUnits,
		fee: baseUnits,
		expiresAt: text(40),
	},
});
const checkStatus = v.compile({
	$$root: true,
	type: "object",
	props: {
		state: { type: "enum", values: [...BRIDGE_STATES] },
		destinationTxHash: { ...text(128), optional: true, nullable: true },
		outputAmount: { ...baseUnits, optional: true, nullable: true },
		reason: { type: "string", max: 1_000, optional: true, nullable: true },
	},
});

/** Carries what one attempt learnt to the retry decision. */
class AttemptFailure extends Error {
	constructor(
		readonly retryable: boolean,
		readonly status: number | null,
		message: string,
	) {
		super(message);
	}
}

function fieldsOf(result: true | unknown[] | Promise<true | unknown[]>): string {
	// Field names only: the validator's messages may quote values taken from the response.
	const list = Array.isArray(result) ? result.map(e => String((e as { field?: unknown }).field ?? "?")) : [];
	return [...new Set(list)].join(", ") || "body";
}

export function createHttpBridgeProvider(opts: HttpBridgeProviderOptions): BridgeProvider {
	const baseUrl = opts.baseUrl.replace(/\/+$/, "");
	const apiKey = opts.apiKey || null;
	const keyHeader = opts.apiKeyHeader ?? "x-api-key";
	const attempts = Math.max(1, opts.retry?.attempts ?? 4);
	const startingDelay = opts.retry?.startingDelayMs ?? 250;
	const maxDelay = opts.retry?.maxDelayMs ?? 5_000;

	/** Whatever a provider echoes, the key never leaves in a message. */
	const redact = (s: string): string => (apiKey ? s.split(apiKey).join("[redacted]") : s);

	async function attempt(operation: "quote" | "status", url: string, body: unknown): Promise<unknown> {
		const headers: Record<string, string> = { accept: "application/json" };
		if (body !== undefined) headers["content-type"] = "application/json";
		if (apiKey) headers[keyHeader] = apiKey;
		let res: Response;
		let raw: string;
		try {
			res = await fetch(url, { method: body === undefined ? "GET" : "POST", headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(opts.timeoutMs), redirect: "manual" });
			raw = await res.text();
		} catch (e) {
			const err = e as Error;
			const timedOut = err.name === "TimeoutError" || err.name === "AbortError";
			throw new AttemptFailure(true, null, timedOut ? `timed out after ${opts.timeoutMs} ms` : `network error (${(err.cause as { code?: string } | undefined)?.code ?? err.name})`);
		}
		if (res.status === 429 || res.status >= 500) throw new AttemptFailure(true, res.status, `HTTP ${res.status}`);
		if (res.status < 200 || res.status >= 300) {
			let said = "";
			try {
				const parsed = JSON.parse(raw) as { message?: unknown; error?: unknown };
				said = typeof parsed?.message === "string" ? parsed.message : typeof parsed?.error === "string" ? parsed.error : "";
			} catch {
				// not JSON: the status alone
			}
			throw new AttemptFailure(false, res.status, `HTTP ${res.status}${said ? `: ${redact(said).slice(0, 200)}` : ""}`);
		}
		try {
			return JSON.parse(raw);
		} catch {
			throw new AttemptFailure(false, res.status, `${operation} response is not JSON`);
		}
	}

	async function call(operation: "quote" | "status", url: string, body?: unknown): Promise<unknown> {
		let tries = 0;
		try {
			return await backOff(
				() => {
					tries++;
					return attempt(operation, url, body);
				},
				{ numOfAttempts: attempts, startingDelay, maxDelay, timeMultiple: 2, jitter: "full", retry: e => e instanceof AttemptFailure && e.retryable },
			);
		} catch (e) {
			if (e instanceof AttemptFailure && e.retryable) throw new BridgeUnavailableError(operation, tries, e.message);
			if (e instanceof AttemptFailure) throw new BridgeRejectedError(operation, e.status, e.message);
			throw e;
		}
	}

	return {
		name: opts.name ?? "http",

		async quote(req) {
			if (!BASE_UNITS.test(req.amount) || req.amount === "0") throw new RangeError("Bridge quote amount must be a positive integer string of base units");
			const body = await call("quote", `${baseUrl}/quote`, req);
			const checked = checkQuote(body);
			if (checked !== true) throw new BridgeRejectedError("quote", 200, `malformed quote response (${fieldsOf(checked)})`);
			const q = body as { quoteId: string; depositAddress: string; depositMemo?: string | null; expectedOutput: string; fee: string; expiresAt: string };
			const expiresAt = new Date(q.expiresAt);
			if (Number.isNaN(expiresAt.getTime())) throw new BridgeRejectedError("quote", 200, "malformed quote response (expiresAt)");
			if (q.expectedOutput === "0") throw new BridgeRejectedError("quote", 200, "quote delivers nothing (expectedOutput 0)");
			if (BigInt(q.fee) >= BigInt(req.amount)) throw new BridgeRejectedError("quote", 200, "quote fee is not below the amount");
			return { quoteId: q.quoteId, depositAddress: q.depositAddress, depositMemo: q.depositMemo ?? null, expectedOutput: q.expectedOutput, fee: q.fee, expiresAt };
		},

		async status(quoteId) {
			const body = await call("status", `${baseUrl}/status/${encodeURIComponent(quoteId)}`);
			const checked = checkStatus(body);
			if (checked !== true) throw new BridgeRejectedError("status", 200, `malformed status response (${fieldsOf(checked)})`);
			const s = body as { state: BridgeState; destinationTxHash?: string | null; outputAmount?: string | null; reason?: string | null };
			// "completed" is the sweeper's proof of delivery: without the destination transfer it is not one.
			if (s.state === "completed" && !s.destinationTxHash) throw new BridgeRejectedError("status", 200, "malformed status response (completed without destinationTxHash)");
			return { state: s.state, destinationTxHash: s.destinationTxHash ?? null, outputAmount: s.outputAmount ?? null, reason: s.reason == null ? null : redact(s.reason) };
		},
	};
}
