/**
 * The client: typed requests to the gateway's API on Node's global fetch, authenticated by an API
 * key (HTTP Basic: key and secret) or a user's bearer token, tried again with exponential backoff
 * (exponential-backoff) on 429, 503 and network errors where that is safe (retry.ts), an
 * Idempotency-Key generated for the creates that honour one, and pagination over the list routes.
 */
import { randomUUID } from "node:crypto";
import { backOff } from "exponential-backoff";
import { CryptoPayApiError, CryptoPayConnectionError, errorBodyOf } from "./errors";
import { paginate } from "./pagination";
import { isIdempotentRequest, isRetryableOutcome, parseRetryAfter } from "./retry";
import type { ApiPath, CallOptions, HttpMethod, Operation, Page, PageItem, PaginatedPath, PathsWith, RequestOptions, SuccessBody } from "./types";

export const SDK_VERSION = "0.1.0";

/** The POSTs that honour Idempotency-Key (the document's `IdempotencyKey` parameter; test/sdk/client.test.ts keeps them in step). */
export const IDEMPOTENT_CREATES: readonly string[] = ["/payment_intents", "/payments/links", "/payments/links/{slug}/transactions"];

export interface RetryOptions {
	/** Attempts after the first (default 3; 0 turns retries off). */
	retries?: number;
	/** First backoff delay in ms (default 500), doubled per attempt with full jitter. */
	initialDelayMs?: number;
	/** Largest backoff delay in ms (default 8,000). */
	maxDelayMs?: number;
	/** A Retry-After longer than this (ms, default 60,000) is not waited for: the error is thrown. */
	maxRetryAfterMs?: number;
}

export interface ClientOptions {
	/** The API's base URL, e.g. `http://localhost:3000/api/v1`. */
	baseUrl: string;
	/** An organization's API key and secret (HTTP Basic). */
	apiKey?: { key: string; secret: string };
	/** A user's access token (Bearer), e.g. for creating API keys. */
	token?: string;
	/** `x-organization-id` on every request (bearer tokens act on this organization). */
	organizationId?: string;
	/** Per attempt, connection and answer together, in ms (default 30,000). */
	timeoutMs?: number;
	retry?: RetryOptions;
	/** Headers sent on every request (e.g. `x-custom-lang`). */
	headers?: Record<string, string>;
	/** Replaces the global fetch (tests, proxies). */
	fetch?: typeof fetch;
}

/** One answer that may be retried: the status (null: no answer) and what it said. */
class Attempt extends Error {
	constructor(
		readonly status: number | null,
		readonly cause: unknown,
		readonly retryAfterMs: number | undefined,
	) {
		super("attempt failed");
	}
}

type Query = Record<string, string | number | boolean | undefined | null>;

/** Fills `{name}` segments of `path` with the URL-encoded values of `params`. */
export function fillPath(path: string, params: Record<string, string | number> | undefined): string {
	return path.replace(/\{([^}]+)\}/g, (_, name: string) => {
		const value = params?.[name];
		if (value === undefined || value === null || value === "") throw new TypeError(`Path parameter "${name}" is required for ${path}`);
		return encodeURIComponent(String(value));
	});
}

export class CryptoPayClient {
	private readonly baseUrl: string;
	private readonly options: ClientOptions;
	private readonly doFetch: typeof fetch;

	constructor(options: ClientOptions) {
		if (!options?.baseUrl) throw new TypeError("baseUrl is required, e.g. http://localhost:3000/api/v1");
		if (options.apiKey && options.token) throw new TypeError("Give either apiKey or token, not both");
		this.baseUrl = options.baseUrl.replace(/\/+$/, "");
		this.options = options;
		this.doFetch = options.fetch ?? fetch;
	}

	/** A client like this one with other credentials or settings (e.g. `withOptions({ apiKey })`). */
	withOptions(overrides: Partial<ClientOptions>): CryptoPayClient {
		const merged = { ...this.options, ...overrides };
		if (overrides.apiKey) delete merged.token;
		if (overrides.token) delete merged.apiKey;
		return new CryptoPayClient(merged);
	}

	get<P extends PathsWith<"get">>(path: P, ...[opts]: OptionalIfEmpty<RequestOptions<Operation<P, "get">>>): Promise<SuccessBody<Operation<P, "get">>> {
		return this.request("get", path, opts as RequestOptions<Operation<P, "get">>);
	}
	post<P extends PathsWith<"post">>(path: P, ...[opts]: OptionalIfEmpty<RequestOptions<Operation<P, "post">>>): Promise<SuccessBody<Operation<P, "post">>> {
		return this.request("post", path, opts as RequestOptions<Operation<P, "post">>);
	}
	put<P extends PathsWith<"put">>(path: P, ...[opts]: OptionalIfEmpty<RequestOptions<Operation<P, "put">>>): Promise<SuccessBody<Operation<P, "put">>> {
		return this.request("put", path, opts as RequestOptions<Operation<P, "put">>);
	}
	patch<P extends PathsWith<"patch">>(path: P, ...[opts]: OptionalIfEmpty<RequestOptions<Operation<P, "patch">>>): Promise<SuccessBody<Operation<P, "patch">>> {
		return this.request("patch", path, opts as RequestOptions<Operation<P, "patch">>);
	}
	delete<P extends PathsWith<"delete">>(path: P, ...[opts]: OptionalIfEmpty<RequestOptions<Operation<P, "delete">>>): Promise<SuccessBody<Operation<P, "delete">>> {
		return this.request("delete", path, opts as RequestOptions<Operation<P, "delete">>);
	}

	/**
	 * Every item of a paginated list (`{ data, hasNextPage }`), page after page, as an async
	 * iterator: `for await (const tx of client.paginate("/payments/transactions", { query: { status: "completed" } }))`.
	 * `query.page` is where it starts (default 1), `query.limit` the page size (default 100, the gateway's maximum).
	 */
	paginate<P extends PaginatedPath>(path: P, opts?: RequestOptions<Operation<P, "get">>): AsyncGenerator<PageItem<Operation<P, "get">>> {
		const base = (opts ?? {}) as { query?: Query } & CallOptions & { path?: Record<string, string> };
		const query: Query = { limit: 100, ...(base.query ?? {}) };
		const first = Number(query.page ?? 1);
		return paginate(page => this.request("get", path, { ...base, query: { ...query, page } } as never) as Promise<Page<PageItem<Operation<P, "get">>>>, { firstPage: first });
	}

	/** Any operation: `request("post", "/payment_intents/{id}/simulate", { path: { id } })`. */
	async request<M extends HttpMethod, P extends ApiPath>(method: M, path: P, opts?: RequestOptions<Operation<P, M>>): Promise<SuccessBody<Operation<P, M>>> {
		const o = (opts ?? {}) as { path?: Record<string, string | number>; query?: Query; body?: unknown } & CallOptions;
		const METHOD = method.toUpperCase();
		const url = new URL(this.baseUrl + fillPath(path, o.path));
		for (const [name, value] of Object.entries(o.query ?? {})) {
			if (value !== undefined && value !== null) url.searchParams.set(name, String(value));
		}
		const headers: Record<string, string> = {
			Accept: "application/json",
			"User-Agent": `cryptopay-gateway-sdk/${SDK_VERSION}`,
			...this.options.headers,
			...o.headers,
		};
		if (this.options.apiKey) headers.Authorization = `Basic ${Buffer.from(`${this.options.apiKey.key}:${this.options.apiKey.secret}`).toString("base64")}`;
		else if (this.options.token) headers.Authorization = `Bearer ${this.options.token}`;
		const organizationId = o.organizationId ?? this.options.organizationId;
		if (organizationId) headers["x-organization-id"] = organizationId;
		if (METHOD === "POST" && (o.idempotencyKey || IDEMPOTENT_CREATES.includes(path))) headers["Idempotency-Key"] = o.idempotencyKey ?? randomUUID();
		let payload: string | undefined;
		if (o.body !== undefined) {
			payload = JSON.stringify(o.body);
			headers["Content-Type"] = "application/json";
		}
		const idempotent = isIdempotentRequest(METHOD, headers);
		const retry = this.options.retry ?? {};
		const maxRetryAfterMs = retry.maxRetryAfterMs ?? 60_000;
		const timeoutMs = this.options.timeoutMs ?? 30_000;
		let last: Response | undefined;
		let lastText = "";

		const attempt = async (): Promise<SuccessBody<Operation<P, M>>> => {
			const signals = [AbortSignal.timeout(timeoutMs), ...(o.signal ? [o.signal] : [])];
			let res: Response;
			try {
				res = await this.doFetch(url, { method: METHOD, headers, body: payload, signal: AbortSignal.any(signals) });
			} catch (err) {
				if (o.signal?.aborted) throw o.signal.reason ?? err;
				throw new Attempt(null, err, undefined);
			}
			const text = await res.text();
			if (res.ok) return (text === "" ? undefined : JSON.parse(text)) as SuccessBody<Operation<P, M>>;
			last = res;
			lastText = text;
			throw new Attempt(res.status, null, parseRetryAfter(res.headers.get("retry-after"), Date.now()));
		};

		const numOfAttempts = 1 + Math.max(0, retry.retries ?? 3);
		try {
			return await backOff(attempt, {
				numOfAttempts,
				startingDelay: retry.initialDelayMs ?? 500,
				timeMultiple: 2,
				maxDelay: retry.maxDelayMs ?? 8_000,
				jitter: "full",
				// Called after the last attempt too: no waiting then.
				retry: async (e, attemptNumber) => {
					if (attemptNumber >= numOfAttempts || !(e instanceof Attempt) || !isRetryableOutcome(e.status, idempotent) || o.signal?.aborted) return false;
					if (e.retryAfterMs !== undefined) {
						if (e.retryAfterMs > maxRetryAfterMs) return false;
						// At least Retry-After: this wait, then the backoff's own (jittered) delay.
						await sleep(e.retryAfterMs, o.signal);
					}
					return !o.signal?.aborted;
				},
			});
		} catch (e) {
			if (o.signal?.aborted) throw o.signal.reason ?? e;
			if (!(e instanceof Attempt)) throw e;
			if (e.status === null) throw new CryptoPayConnectionError(METHOD, url.toString(), e.cause);
			throw new CryptoPayApiError({ status: e.status, body: errorBodyOf(e.status, last!.statusText, lastText), headers: last!.headers, method: METHOD, url: url.toString(), retryAfterMs: e.retryAfterMs });
		}
	}

	/** Payment intents (spec "Payment intents"). */
	readonly paymentIntents = {
		/** POST /payment_intents; an Idempotency-Key is generated unless `idempotencyKey` is given (give your order id to make retries across processes safe). */
		create: (body: RequestOptions<Operation<"/payment_intents", "post">>["body"], opts: CallOptions = {}) => this.post("/payment_intents", { ...opts, body }),
		retrieve: (id: string, opts: CallOptions = {}) => this.get("/payment_intents/{id}", { ...opts, path: { id } }),
		update: (id: string, body: RequestOptions<Operation<"/payment_intents/{id}", "patch">>["body"], opts: CallOptions = {}) =>
			this.patch("/payment_intents/{id}", { ...opts, path: { id }, body } as RequestOptions<Operation<"/payment_intents/{id}", "patch">>),
		confirm: (id: string, body: RequestOptions<Operation<"/payment_intents/{id}/confirm", "post">>["body"], opts: CallOptions = {}) =>
			this.post("/payment_intents/{id}/confirm", { ...opts, path: { id }, body } as RequestOptions<Operation<"/payment_intents/{id}/confirm", "post">>),
		cancel: (id: string, opts: CallOptions = {}) => this.post("/payment_intents/{id}/cancel", { ...opts, path: { id } }),
		complete: (id: string, opts: CallOptions = {}) => this.post("/payment_intents/{id}/complete", { ...opts, path: { id } }),
		/** Sandbox keys only: pays the intent with a simulated transfer (403 SIMULATION_SANDBOX_ONLY for a live key). */
		simulate: (id: string, opts: CallOptions = {}) => this.post("/payment_intents/{id}/simulate", { ...opts, path: { id } }),
	};
}

/** The options argument is optional when the operation needs nothing. */
type OptionalIfEmpty<T> = {} extends T ? [opts?: T] : [opts: T];

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
	return new Promise(resolve => {
		const timer = setTimeout(done, ms);
		function done() {
			clearTimeout(timer);
			signal?.removeEventListener("abort", done);
			resolve();
		}
		signal?.addEventListener("abort", done, { once: true });
	});
}
