/**
 * Types of the API derived from the generated document types (generated/openapi.ts): paths below
 * `/api/v1`, each operation's path, query and body parameters and its success body.
 */
import type { components, paths, webhooks } from "./generated/openapi";

type Strip<P> = P extends `/api/v1/${infer R}` ? `/${R}` : never;
/** Every path of the API, below the base URL (`/payment_intents/{id}`). */
export type ApiPath = Strip<keyof paths>;
export type HttpMethod = "get" | "post" | "put" | "patch" | "delete";

type Item<P extends ApiPath> = paths[`/api/v1${P}`];
/** The operation at `method path`. */
export type Operation<P extends ApiPath, M extends HttpMethod> = Item<P>[M] extends infer O ? (O extends { responses: unknown } ? O : never) : never;
/** The paths that have `method`. */
export type PathsWith<M extends HttpMethod> = { [P in ApiPath]: Item<P>[M] extends { responses: unknown } ? P : never }[ApiPath];

type IsNever<T> = [T] extends [never] ? true : false;
type Params<O> = O extends { parameters: infer X } ? X : never;
type PathParams<O> = Params<O> extends { path: infer X } ? X : never;
type QueryParams<O> = Params<O> extends { query?: infer X } ? Exclude<X, undefined> : never;
type JsonBody<O> = O extends { requestBody: { content: { "application/json": infer B } } }
	? B
	: O extends { requestBody?: { content: { "application/json": infer B } } }
		? B
		: never;
type BodyRequired<O> = O extends { requestBody: { content: unknown } } ? true : false;

/** The body of the operation's success answer (2xx); `undefined` for 204. */
export type SuccessBody<O> = O extends { responses: infer R }
	? {
			[S in keyof R]: S extends 200 | 201 | 202 ? (R[S] extends { content: { "application/json": infer B } } ? B : unknown) : S extends 204 ? undefined : never;
		}[keyof R]
	: never;

/** Options of one request: what the operation takes, plus per-request settings. */
export type RequestOptions<O> = (IsNever<PathParams<O>> extends true ? { path?: undefined } : { path: PathParams<O> }) &
	(IsNever<QueryParams<O>> extends true ? { query?: undefined } : { query?: QueryParams<O> }) &
	(IsNever<JsonBody<O>> extends true ? { body?: undefined } : BodyRequired<O> extends true ? { body: JsonBody<O> } : { body?: JsonBody<O> }) &
	CallOptions;

/** Per-request settings every call accepts. */
export interface CallOptions {
	/** Idempotency-Key for a POST (a fresh UUID is generated for the creates that honour one). */
	idempotencyKey?: string;
	/** Extra headers (e.g. `x-custom-lang: es`). */
	headers?: Record<string, string>;
	/** `x-organization-id`: with a bearer token, the organization acted on. */
	organizationId?: string;
	/** Cancels the request and its retries. */
	signal?: AbortSignal;
}

/** A list answer of the spec's pagination: `{ data, hasNextPage }`. */
export interface Page<T> {
	data: T[];
	hasNextPage: boolean;
}

/** The GET paths whose query takes `page` (the paginated lists). */
export type PaginatedPath = {
	[P in PathsWith<"get">]: QueryParams<Operation<P, "get">> extends { page?: unknown } ? P : never;
}[PathsWith<"get">];
/** The items of a paginated list (unknown while the document does not describe its answer). */
export type PageItem<O> = SuccessBody<O> extends { data: Array<infer I> } ? I : unknown;

export type Schemas = components["schemas"];
export type PaymentIntent = Schemas["PaymentIntent"];
export type PaymentIntentCreated = Schemas["PaymentIntentCreated"];
export type { ErrorBody } from "./errors";

/** The body of a webhook event of type `T`. */
export type WebhookEventOf<T extends keyof webhooks> = webhooks[T]["post"] extends { requestBody: { content: { "application/json": infer B } } } ? B : never;
/** Any webhook event the gateway sends: `{ id, type, created, livemode, data: { object } }`. */
export type WebhookEvent = { [T in keyof webhooks]: WebhookEventOf<T> }[keyof webhooks];
export type WebhookEventType = WebhookEvent["type"];
