/** Errors the client throws: the gateway's error answer, or no answer at all. */
/** The spec's error shape, `{ statusCode, message, error, errors?, ...extra }` (the document's `Error` schema). */
export interface ErrorBody {
	statusCode: number;
	message: string;
	error: string;
	/** Field (dotted path) to error code. */
	errors?: Record<string, string>;
	/** When a locked action may be tried again. */
	canRetryAt?: string;
	/** Machine-readable reason, e.g. SIMULATION_SANDBOX_ONLY. */
	code?: string;
	[extra: string]: unknown;
}

/** The gateway answered with a status of 400 or more. */
export class CryptoPayApiError extends Error {
	readonly name = "CryptoPayApiError";
	/** HTTP status of the answer. */
	readonly status: number;
	/** The answer's body in the spec's error shape (built from the status when the body was not JSON). */
	readonly body: ErrorBody;
	/** Field (dotted path) to error code, for validation failures (e.g. `{ amount: "stringPattern" }`). */
	readonly errors?: Record<string, string>;
	/** Machine-readable reason where the gateway gives one (e.g. `SIMULATION_SANDBOX_ONLY`). */
	readonly code?: string;
	/** From Retry-After on 429 and 503, in milliseconds. */
	readonly retryAfterMs?: number;
	readonly headers: Headers;
	readonly method: string;
	readonly url: string;

	constructor(init: { status: number; body: ErrorBody; headers: Headers; method: string; url: string; retryAfterMs?: number }) {
		super(`${init.method} ${init.url}: ${init.status} ${init.body.message}`);
		this.status = init.status;
		this.body = init.body;
		this.errors = init.body.errors;
		this.code = typeof init.body.code === "string" ? init.body.code : undefined;
		this.retryAfterMs = init.retryAfterMs;
		this.headers = init.headers;
		this.method = init.method;
		this.url = init.url;
	}
}

/** No answer came (connection refused or reset, DNS, timeout) after every allowed attempt. */
export class CryptoPayConnectionError extends Error {
	readonly name = "CryptoPayConnectionError";
	readonly method: string;
	readonly url: string;

	constructor(method: string, url: string, cause: unknown) {
		super(`${method} ${url}: no answer (${cause instanceof Error ? cause.message : String(cause)})`, { cause });
		this.method = method;
		this.url = url;
	}
}

/** The error body of an answer: the JSON the gateway sent, or one built from the status. */
export function errorBodyOf(status: number, statusText: string, text: string): ErrorBody {
	try {
		const parsed = JSON.parse(text) as unknown;
		if (parsed && typeof parsed === "object" && typeof (parsed as ErrorBody).message === "string") {
			return { ...(parsed as ErrorBody), statusCode: (parsed as ErrorBody).statusCode ?? status, error: (parsed as ErrorBody).error ?? statusText };
		}
	} catch {
		/* not JSON: below */
	}
	return { statusCode: status, message: text.trim().slice(0, 500) || statusText || `HTTP ${status}`, error: statusText || `HTTP ${status}` };
}
