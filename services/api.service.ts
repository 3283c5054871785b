/**
 * The REST gateway at /api/v1 (moleculer-web). Routes come from the `rest` declarations of the
 * services' actions (autoAliases), so the gateway knows no business logic. Per request it:
 * picks the language, applies per-IP endpoint limits (and the `ip` profile), checks the body's
 * type and shape, resolves the caller once into ctx.meta (JWT bearer or Basic API key), applies
 * the identity profile limit, checks the action's declared `auth` requirement, and shapes every
 * error as `{ statusCode, message, error, errors? }`. See docs/gateway.md.
 */
import crypto from "node:crypto";
import type { IncomingMessage, ServerResponse, Server } from "node:http";
import net, { type Socket } from "node:net";
import type { Context, Service, ServiceSchema } from "moleculer";
import ApiGateway from "moleculer-web";
import jwt from "jsonwebtoken";
import { appOf } from "../lib/app";
import { pickLang, translate } from "../lib/i18n";
import { STATUS_PHRASES, badRequest, httpError, isServiceUnavailable, notFound, serviceUnavailable, unauthorized } from "../lib/errors";
import { captureError } from "../lib/error-tracking";
import { digest } from "../lib/crypto";
import { verifyToken } from "../lib/auth/tokens";
import { isDatabaseUnreachable } from "../lib/db";
import { GatewayRateLimiter, LimitRule, LimitState, PROFILE_RULES, RateLimitExceededError, limitKeyForIp, rateLimitHeaders } from "../lib/rate-limit";
import { TtlCache } from "../lib/ttl-cache";
import type { AuthApiKey, AuthMeta, AuthRequirement, AuthUser } from "../lib/meta";
import { verifyRecaptcha } from "../lib/recaptcha";
import { payAssets } from "../lib/pay-page/assets";
import { notFoundPage, payPageHeaders, payPageShell, pickPageLang } from "../lib/pay-page/html";
import { PayStreamHub } from "../lib/pay-page/live";
import { CHECKOUTS_CHANGED_EVENT, type CheckoutsChanged } from "../lib/payments/checkout-changes";
import type { StatusPayload } from "../web/pay/state";
import { OPENAPI_DOCUMENT } from "../lib/openapi/served";
import { sendDocsAsset, sendDocsPage } from "../lib/openapi/docs-page";
import pkg from "../package.json";

interface GatewayAlias {
	path: string;
	fullPath: string;
	method: string;
	type?: string;
	keys?: Array<{ name: string | number }>;
}

interface GatewayRequest extends IncomingMessage {
	$ctx: Context<unknown, AuthMeta>;
	$action?: { auth?: AuthRequirement; recaptcha?: boolean; name: string };
	$route?: unknown;
	$alias?: GatewayAlias;
	$params?: Record<string, unknown>;
	$startTime?: [number, number];
	body?: unknown;
	query?: Record<string, unknown>;
	parsedUrl?: string;
	originalUrl?: string;
	url: string;
	$rateLimitStates?: LimitState[];
	rawBody?: Buffer;
}

type RefreshMeta = AuthMeta & { refresh?: { sessionId: string; nonce: unknown; userId: number } };

interface GatewayVars {
	limiter: GatewayRateLimiter;
	sessionCache: TtlCache<string, boolean>;
	keyCache: TtlCache<string, AuthApiKey | null>;
	/** Per-process key for the API key cache's keys: credentials never sit in memory as map keys. */
	cacheKeySalt: string;
	unavailableWarnedAt: number;
	server: Server;
	/** Open server-sent event streams of the pay page, woken by checkout changes, ended when the gateway stops. */
	payStreams: PayStreamHub;
}

interface GatewayMethods {
	clientIp(req: GatewayRequest): string;
	resolveCredential(ctx: Context<unknown, AuthMeta>, header: string, requirement: AuthRequirement): Promise<void>;
	resolveBearer(ctx: Context<unknown, AuthMeta>, token: string, requirement: AuthRequirement): Promise<void>;
	resolveBasic(ctx: Context<unknown, AuthMeta>, value: string, requirement: AuthRequirement): Promise<void>;
	sessionActive(ctx: Context<unknown, AuthMeta>, sessionId: string, requirement: AuthRequirement): Promise<boolean | null>;
	verifierFailed(err: unknown, requirement: AuthRequirement, what: string, scheme: "bearer" | "basic"): null;
	applyLimit(req: GatewayRequest, res: ServerResponse, rule: LimitRule, key: string): Promise<void>;
	sendErrorBody(req: GatewayRequest, res: ServerResponse, err: unknown): void;
	beforeCall(ctx: Context<unknown, AuthMeta>, req: GatewayRequest, res: ServerResponse): Promise<void>;
	sendError(req: GatewayRequest, res: ServerResponse, err: unknown): void;
	logResponse(req: GatewayRequest, res: ServerResponse): void;
	payLimit(req: GatewayRequest, res: ServerResponse): Promise<void>;
	payPageDocument(req: GatewayRequest, res: ServerResponse): Promise<void>;
	payAsset(req: GatewayRequest, res: ServerResponse): Promise<void>;
	payStatusJson(req: GatewayRequest, res: ServerResponse): Promise<void>;
	payEvents(req: GatewayRequest, res: ServerResponse): Promise<void>;
	payNotFound(req: GatewayRequest, res: ServerResponse): Promise<void>;
	debugSentry(req: GatewayRequest, res: ServerResponse): Promise<void>;
	regenerateAutoAliases(route: unknown): void;
	openPort(): Promise<void>;
}

type GatewayThis = Service<Record<string, any>> & GatewayVars & GatewayMethods;

const API_PREFIX = "/api/v1";
/** Streams end after this long; the browser's EventSource reconnects (bounds a stream's life). */
const PAY_EVENTS_MAX_MS = 5 * 60_000;
const PAY_EVENTS_HEARTBEAT_MS = 15_000;
/** Open event streams per gateway node; more get 503 and the page polls instead. */
const PAY_EVENTS_MAX_STREAMS = 2_000;
const ASSET_NAME = /^[A-Za-z0-9_-]{1,64}\.(js|css)$/;

/** Session validity and key look-ups are cached briefly; logout/revocation clear them on every node by event. */
const AUTH_CACHE_TTL_MS = 30_000;
const AUTH_CACHE_MAX_ENTRIES = 100_000;
/**
 * Look-ups of the caller must not hold a request for the full call timeout (30 s), but they read the
 * database: under a burst they queue behind its writers (SQLite's one writer, MySQL's pool), and at
 * 5 s a loaded machine answered 503 to signed-in users whose requests would have succeeded.
 */
const AUTH_CALL_TIMEOUT_MS = 15_000;
const MAX_TOKEN_LENGTH = 4096;
/** Key and secret of Basic credentials: printable ASCII, bounded (real ones are ~40 and ~56 characters). */
const CREDENTIAL_PART = /^[\x21-\x7e]{1,256}$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const USER_ROLES = ["admin", "user"];
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** Retry-After of a 503: services and the database come back within seconds (restart, failover, reconnect). */
const RETRY_AFTER_UNAVAILABLE_SECONDS = 5;

function statusOf(err: unknown): number {
	const code = Number((err as { code?: unknown })?.code);
	return Number.isInteger(code) ? code : 500;
}

/** Path of the request below /api/v1, without query or trailing slash (for logs and unrouted requests). */
function requestPath(req: GatewayRequest): string {
	const url = (req.originalUrl || req.url || "").split("?")[0];
	const below = url.startsWith(API_PREFIX) ? url.slice(API_PREFIX.length) : url;
	return below.replace(/\/+$/, "") || "/";
}

/** The route that serves the request, below /api/v1 (`/pay/:slug/confirm`), else the request path. */
function routePath(req: GatewayRequest): string {
	const full = req.$alias?.fullPath;
	if (typeof full !== "string") return requestPath(req);
	return full.startsWith(API_PREFIX) ? full.slice(API_PREFIX.length) || "/" : full;
}

/** The info endpoint is exempt from the profile limits (health checks, uptime monitors); see docs/gateway.md. */
function countsTowardsProfile(req: GatewayRequest): boolean {
	return req.$action?.name !== "api.info";
}

function hasBody(req: IncomingMessage): boolean {
	const length = req.headers["content-length"];
	return (length !== undefined && Number(length) > 0) || req.headers["transfer-encoding"] !== undefined;
}

function header(req: IncomingMessage, name: string, maxLength = 2048): string | undefined {
	const value = req.headers[name];
	const first = Array.isArray(value) ? value[0] : value;
	return typeof first === "string" && first && first.length <= maxLength ? first : undefined;
}

const JSON_TYPE = /^application\/json\s*(;|$)/i;
const MULTIPART_TYPE = /^multipart\/form-data\s*;.*boundary=/i;

/**
 * Requests with a body must say what it is and send what the API takes: a JSON object (or a
 * multipart form where the route takes uploads). Anything else is 400, never silently ignored.
 */
function checkBody(req: GatewayRequest): void {
	if (!hasBody(req)) return;
	const type = header(req, "content-type") || "";
	const aliasType = req.$alias?.type;
	if (aliasType === "multipart") {
		if (!MULTIPART_TYPE.test(type)) throw badRequest("Content-Type must be multipart/form-data");
		return;
	}
	if (aliasType === "stream") return;
	if (!JSON_TYPE.test(type)) throw badRequest("Content-Type must be application/json");
	const body = req.body;
	if (body === null || typeof body !== "object" || Array.isArray(body)) throw badRequest("Request body must be a JSON object");
}

/**
 * moleculer-web merges query, then path parameters over the body; a query parameter would so
 * override a body field of the same name. The body wins over the query; path parameters win over both.
 */
function bodyOverQuery(req: GatewayRequest): void {
	const { body, query, $params: params, $alias: alias } = req;
	if (!params || !query || !body || typeof body !== "object" || Array.isArray(body) || alias?.type === "multipart") return;
	const pathKeys = new Set((alias?.keys || []).map(k => String(k.name)));
	for (const key of Object.keys(body)) {
		if (!pathKeys.has(key) && Object.prototype.hasOwnProperty.call(query, key)) params[key] = (body as Record<string, unknown>)[key];
	}
}

function elapsedMs(start: [number, number] | undefined): string {
	if (!start) return "";
	const [s, ns] = process.hrtime(start);
	return ` [+${(s * 1000 + ns / 1e6).toFixed(1)} ms]`;
}

/** Moleculer runs `merged(schema)` after mixins are applied; its typings do not declare the hook. */
type GatewaySchema = ServiceSchema<Record<string, any>, GatewayMethods & Record<string, any>, GatewayVars> & {
	merged(this: Service, schema: ServiceSchema<Record<string, any>>): void;
};

const ApiService: GatewaySchema = {
	name: "api",
	mixins: [ApiGateway],

	settings: {
		// The gateway opens its port itself once every local service has started (openPort below);
		// moleculer-web would listen in its own `started`, before the others were registered.
		server: false,
		port: 3000,
		ip: "0.0.0.0",
		// No per-request logging unless LOG_REQUESTS=true (merged() below); never params, bodies or headers.
		log4XXResponses: false,
		logRequest: null,
		logResponse: null,
		logRequestParams: null,
		logResponseData: null,
		logRouteRegistration: "debug",
		// Slow clients cannot hold a connection open for minutes (moleculer-web's default is 5).
		requestTimeout: 60_000,
		qsOptions: { depth: 5, arrayLimit: 50, parameterLimit: 200 },
		rootCallOptions(options: { requestID?: unknown }) {
			// X-Request-ID / X-Correlation-ID are echoed and logged: accept only a plain bounded token.
			if (typeof options.requestID !== "string" || !REQUEST_ID.test(options.requestID)) delete options.requestID;
		},
		routes: [
			{
				name: "v1",
				path: API_PREFIX,
				autoAliases: true,
				mappingPolicy: "restrict",
				mergeParams: true,
				authentication: true,
				authorization: true,
				bodyParsers: {
					json: {
						// Any JSON value parses, so a non-object body gets a clear 400 from checkBody.
						strict: false,
						limit: "1mb",
						// Compressed request bodies are refused (decompression costs CPU and hides sizes).
						inflate: false,
						// `__proto__` keys are dropped so a body can never swap the params' prototype.
						reviver: (key: string, value: unknown) => (key === "__proto__" ? undefined : value),
						// Signed requests (inbound webhooks) are verified over the exact bytes received.
						verify: (req: GatewayRequest, _res: ServerResponse, buf: Buffer) => {
							if (req.headers["x-webhook-signature"] !== undefined) req.rawBody = buf;
						},
					},
					urlencoded: false,
				},
				callOptions: { timeout: 30_000 },
				aliases: {
					"GET /": "api.info",
					"GET /openapi.json": "api.openapi",
				},
				onBeforeCall(this: GatewayThis, ctx: Context<unknown, AuthMeta>, _route: unknown, req: GatewayRequest, res: ServerResponse) {
					return this.beforeCall(ctx, req, res);
				},
				// Also called by moleculer-web's multipart handler with another `this`: keep it free of `this`.
				onAfterCall(ctx: Context<unknown, AuthMeta>, _route: unknown, req: GatewayRequest, res: ServerResponse, data: unknown) {
					for (const [k, v] of Object.entries(rateLimitHeaders(req.$rateLimitStates || []))) res.setHeader(k, v);
					return data;
				},
			},
			{
				// The hosted pay page (docs/pay-page.md): HTML, hashed assets, status and events.
				name: "pay",
				path: "/pay",
				mappingPolicy: "restrict",
				authentication: false,
				authorization: false,
				bodyParsers: { json: false, urlencoded: false },
				// A handler that fails hands its error to `next` (moleculer-web then calls onError below).
				aliases: {
					"GET /assets/:file"(this: GatewayThis, req: GatewayRequest, res: ServerResponse, next: (err?: unknown) => void) {
						this.payAsset(req, res).catch(next);
					},
					"GET /:slug"(this: GatewayThis, req: GatewayRequest, res: ServerResponse, next: (err?: unknown) => void) {
						this.payPageDocument(req, res).catch(next);
					},
					"GET /:slug/checkout"(this: GatewayThis, req: GatewayRequest, res: ServerResponse, next: (err?: unknown) => void) {
						this.payPageDocument(req, res).catch(next);
					},
					"GET /:slug/status"(this: GatewayThis, req: GatewayRequest, res: ServerResponse, next: (err?: unknown) => void) {
						this.payStatusJson(req, res).catch(next);
					},
					"GET /:slug/events"(this: GatewayThis, req: GatewayRequest, res: ServerResponse, next: (err?: unknown) => void) {
						this.payEvents(req, res).catch(next);
					},
				},
				onError(this: GatewayThis, req: GatewayRequest, res: ServerResponse, err: unknown) {
					if (statusOf(err) === 404 && !res.headersSent) return void this.payNotFound(req, res);
					this.sendErrorBody(req, res, err);
				},
			},
			{
				// The API reference page (docs/openapi.md): Swagger UI over GET /api/v1/openapi.json.
				name: "docs",
				path: "/docs",
				mappingPolicy: "restrict",
				authentication: false,
				authorization: false,
				bodyParsers: { json: false, urlencoded: false },
				aliases: {
					"GET /"(_req: GatewayRequest, res: ServerResponse) {
						sendDocsPage(res);
					},
					"GET /assets/:file"(req: GatewayRequest, res: ServerResponse, next: (err?: unknown) => void) {
						try {
							sendDocsAsset(req, res, String(req.$params?.file ?? ""));
						} catch (err) {
							next(err);
						}
					},
				},
			},
			{
				// The spec's check of error tracking, outside /api/v1 and without credentials (docs/error-tracking.md).
				name: "debug-sentry",
				path: "/api/debug-sentry",
				mappingPolicy: "restrict",
				authentication: false,
				authorization: false,
				bodyParsers: { json: false, urlencoded: false },
				aliases: {
					"GET /"(this: GatewayThis, req: GatewayRequest, res: ServerResponse, next: (err?: unknown) => void) {
						this.debugSentry(req, res).catch(next);
					},
				},
			},
		],
		onError(this: GatewayThis, req: GatewayRequest, res: ServerResponse, err: unknown) {
			this.sendErrorBody(req, res, err);
		},
	},

	/** Settings that depend on the configuration; runs before moleculer-web builds its routes. */
	merged(this: Service, schema: ServiceSchema<Record<string, any>>) {
		const { config } = appOf(this.broker);
		const settings = { ...schema.settings };
		settings.port = config.port;
		settings.logRequest = config.logRequests ? "info" : null;
		settings.logResponse = config.logRequests ? "info" : null;
		if (config.corsOrigins.length > 0) {
			// Browser clients on other origins (dashboard). Preflights are answered by moleculer-web
			// before any limit, credential or action is involved. The hosted pages' own origin is
			// always allowed (browsers send Origin on same-origin POSTs too).
			const own = new URL(config.publicUrl).origin;
			const cors = {
				origin: config.corsOrigins.includes("*") ? "*" : [...new Set([...config.corsOrigins, own])],
				methods: ["GET", "POST", "PUT", "PATCH", "DELETE"],
				allowedHeaders: ["Authorization", "Content-Type", "Idempotency-Key", "x-custom-lang", "x-organization-id", "x-recaptcha-token", "x-request-id"],
				exposedHeaders: ["X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After", "X-Request-ID", "Idempotent-Replayed"],
				credentials: false,
				maxAge: 600,
			};
			settings.routes = (settings.routes as Array<Record<string, unknown>>).map(r => (r.name === "v1" ? { ...r, cors } : r));
		}
		schema.settings = settings;
	},

	actions: {
		// moleculer-web's alias listing would be published as GET /api/v1/api/list-aliases.
		listAliases: false,
		info: {
			auth: "public",
			handler(this: Service) {
				const { config, clock } = appOf(this.broker);
				return {
					name: "Crypto Payment Gateway",
					version: pkg.version,
					apiVersion: "v1",
					environment: config.env,
					publicUrl: config.publicUrl,
					time: clock.now().toISOString(),
				};
			},
		},
		/** GET /api/v1/openapi.json: the OpenAPI 3.1 document of this API (docs/openapi.md). */
		openapi: {
			auth: "public",
			handler() {
				return OPENAPI_DOCUMENT;
			},
		},
		/**
		 * Acknowledged form of the `keys.changed` event (events are not acknowledged): the keys
		 * service calls it on every gateway node and waits, so a revocation holds everywhere
		 * before it is answered. Internal: no route.
		 */
		keysChanged: {
			visibility: "public",
			auth: "public",
			params: { id: { type: "number", optional: true } },
			handler(this: GatewayThis) {
				this.keyCache.clear();
				return true;
			},
		},
	},

	events: {
		/**
		 * Logout, refresh-token reuse, password change, account deletion: `{ sessionIds }` (or
		 * `{ userId }` alone, which drops every cached session). Ended sessions never come back,
		 * so they are remembered as ended rather than forgotten.
		 */
		"auth.sessions.ended"(this: GatewayThis, ctx: Context<{ sessionIds?: unknown; sessionId?: unknown }>) {
			const params = ctx.params || {};
			const ids = Array.isArray(params.sessionIds) ? params.sessionIds : typeof params.sessionId === "string" ? [params.sessionId] : null;
			if (!ids) return void this.sessionCache.clear();
			for (const id of ids) {
				if (typeof id !== "string") continue;
				this.sessionCache.delete(id);
				this.sessionCache.set(id, false);
			}
		},
		/** Revocation or change of a key: the cache is keyed by credential digest, so all of it goes. */
		"keys.changed"(this: GatewayThis) {
			this.keyCache.clear();
		},
		/** Broadcast after a checkout, link or intent change committed: only the streams it names re-read. */
		[CHECKOUTS_CHANGED_EVENT](this: GatewayThis, ctx: Context<CheckoutsChanged>) {
			this.payStreams.wake(ctx.params || {});
		},
	},

	methods: {
		/**
		 * Opens the port once the node is ready (docs/gateway.md "Start-up"): every local service has
		 * started and is registered, so the routes are built from all of them first and no request
		 * meets a route table still missing them (404 "Not Found" for a real route). Until then the
		 * port is closed: a client's connection is refused, which every client and probe reads as
		 * "not up yet". A port that cannot be opened fails the start.
		 */
		async openPort(this: GatewayThis) {
			if (this.server.listening) return;
			// moleculer-web would build them 0.5 s after the last change (debounced): at once instead.
			for (const route of (this as unknown as { routes: Array<{ opts: { autoAliases?: boolean } }> }).routes) {
				if (route.opts.autoAliases) this.regenerateAutoAliases(route);
			}
			const { port, ip } = this.settings as { port: number; ip: string };
			await new Promise<void>((resolve, reject) => {
				const failed = (err: Error) => reject(err);
				this.server.once("error", failed);
				this.server.listen(port, ip, () => {
					this.server.off("error", failed);
					resolve();
				});
			});
			const addr = this.server.address();
			this.logger.info(`API Gateway listening on http://${typeof addr === "object" && addr ? `${addr.address}:${addr.port}` : String(addr)}`);
		},

		/**
		 * GET /api/debug-sentry: where error tracking is configured, an error thrown on purpose (a
		 * 500, reported like any other); else 404. Limited per IP, as it costs an event each time.
		 */
		async debugSentry(this: GatewayThis, req: GatewayRequest, res: ServerResponse) {
			if (!appOf(this.broker).config.errorTracking.dsn) throw notFound();
			await this.payLimit(req, res);
			throw new Error("Deliberate error of GET /api/debug-sentry, to check error tracking");
		},

		/**
		 * moleculer-web rebuilds a route's aliases from the services registered now. When the last
		 * node of a service goes (a core node killed, restarting), its routes would vanish and answer
		 * 404 "Not Found", which a client reads as "no such payment intent". Routes of a service that
		 * left are kept: moleculer-web then finds no endpoint for them and answers 503 with
		 * Retry-After until a node of the service is back (docs/gateway.md "Errors"). Only the routes
		 * of services that left entirely are kept; a service still present publishes what it has now.
		 */
		regenerateAutoAliases(this: GatewayThis, route: unknown) {
			type Alias = { route: unknown; action: string | null; _generated?: boolean };
			const self = this as unknown as { aliases: Alias[]; settings: { optimizeOrder?: boolean }; optimizeAliasesOrder(): void };
			const before = self.aliases.filter(a => a.route === route && a._generated && a.action);
			(ApiGateway.methods as { regenerateAutoAliases(this: unknown, route: unknown): void }).regenerateAutoAliases.call(this, route);
			const present = new Set(this.broker.registry.getServiceList({ onlyAvailable: false }).map((svc: { name: string; fullName?: string }) => svc.fullName || svc.name));
			const left = before.filter(a => !present.has(a.action!.slice(0, a.action!.lastIndexOf("."))));
			if (left.length === 0) return;
			self.aliases.push(...left);
			if (self.settings.optimizeOrder) self.optimizeAliasesOrder();
		},

		/** The per-IP limit of anonymous callers applies to the pay page's documents and status reads (and the debug route). */
		async payLimit(this: GatewayThis, req: GatewayRequest, res: ServerResponse) {
			if (!this.limiter.enabled) return;
			const ipKey = limitKeyForIp(this.clientIp(req));
			await this.applyLimit(req, res, this.limiter.mode === "ip" ? PROFILE_RULES.ip : PROFILE_RULES.anonymous, ipKey);
		},

		async payNotFound(this: GatewayThis, req: GatewayRequest, res: ServerResponse) {
			const lang = pickPageLang(typeof req.query?.lang === "string" ? req.query.lang : undefined, header(req, "accept-language"));
			const assets = await payAssets().catch(() => null);
			res.writeHead(404, { ...payPageHeaders(), "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store" });
			res.end(notFoundPage(lang, assets?.styleUrl ?? null));
		},

		async payPageDocument(this: GatewayThis, req: GatewayRequest, res: ServerResponse) {
			await this.payLimit(req, res);
			const slug = String(req.$params?.slug ?? "");
			let page: { link: { title: string } };
			try {
				page = (await this.broker.call("links.payPage", { slug })) as typeof page;
			} catch (err) {
				if (statusOf(err) === 404) return this.payNotFound(req, res);
				throw err;
			}
			const assets = await payAssets();
			const lang = pickPageLang(typeof req.query?.lang === "string" ? req.query.lang : undefined, header(req, "accept-language"));
			res.writeHead(200, { ...payPageHeaders(), "Content-Type": "text/html; charset=utf-8", "Cache-Control": "no-store" });
			res.end(payPageShell({ lang, title: page.link.title, scriptUrl: assets.scriptUrl, styleUrl: assets.styleUrl, boot: { apiBase: API_PREFIX, page } }));
		},

		/** Hashed names never change content: cached for a year, gzip when the browser takes it. */
		async payAsset(this: GatewayThis, req: GatewayRequest, res: ServerResponse) {
			const name = String(req.$params?.file ?? "");
			const assets = await payAssets();
			const file = ASSET_NAME.test(name) ? assets.files.get(name) : undefined;
			if (!file) return this.payNotFound(req, res);
			const gzip = /\bgzip\b/.test(header(req, "accept-encoding") || "");
			res.writeHead(200, {
				"Content-Type": file.contentType,
				"Cache-Control": "public, max-age=31536000, immutable",
				"X-Content-Type-Options": "nosniff",
				Vary: "Accept-Encoding",
				...(gzip ? { "Content-Encoding": "gzip" } : {}),
				"Content-Length": String((gzip ? file.gzip : file.body).length),
			});
			res.end(gzip ? file.gzip : file.body);
		},

		async payStatusJson(this: GatewayThis, req: GatewayRequest, res: ServerResponse) {
			await this.payLimit(req, res);
			const status = await this.broker.call("links.payStatus", { slug: String(req.$params?.slug ?? ""), transactionId: String(req.query?.transaction ?? "") });
			res.writeHead(200, { ...payPageHeaders(), "Content-Type": "application/json; charset=utf-8", "Cache-Control": "no-store" });
			res.end(JSON.stringify(status));
		},

		/**
		 * Server-sent events of one checkout: `event: status` with the pay status whenever it
		 * changes, a comment as heartbeat, the end after a final state. Re-read when
		 * `payments.checkouts.changed` names it (whichever node the watcher or the credit ran on),
		 * at its expiry, and by the safety-net poll (PAY_EVENTS_POLL_MS): lib/pay-page/live.ts.
		 */
		async payEvents(this: GatewayThis, req: GatewayRequest, res: ServerResponse) {
			await this.payLimit(req, res);
			if (this.payStreams.size >= PAY_EVENTS_MAX_STREAMS) throw serviceUnavailable();
			const params = { slug: String(req.$params?.slug ?? ""), transactionId: String(req.query?.transaction ?? "") };
			const read = async () => (await this.broker.call("links.payStatus", params)) as StatusPayload;
			// A wrong slug or transaction is answered before the stream opens (404, no reconnect loop).
			const first = await read();
			res.writeHead(200, { ...payPageHeaders(), "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-store", Connection: "keep-alive", "X-Accel-Buffering": "no" });
			res.socket?.setTimeout(0);
			req.socket?.setNoDelay(true);
			req.on("close", this.payStreams.open(res, first, read));
		},

		clientIp(this: GatewayThis, req: GatewayRequest): string {
			const { config } = appOf(this.broker);
			const socketIp = req.socket?.remoteAddress || "unknown";
			if (config.trustProxyHops > 0) {
				// Each trusted proxy appends the address it received from; entries further left are
				// whatever the client wrote, so count from the right.
				const raw = req.headers["x-forwarded-for"];
				const hops = (Array.isArray(raw) ? raw.join(",") : raw || "")
					.split(",")
					.map(s => s.trim())
					.filter(Boolean);
				const candidate = hops[Math.max(0, hops.length - config.trustProxyHops)];
				if (candidate && net.isIP(candidate)) return candidate;
			}
			return socketIp;
		},

		async applyLimit(this: GatewayThis, req: GatewayRequest, res: ServerResponse, rule: LimitRule, key: string) {
			try {
				const state = await this.limiter.consume(rule, key);
				(req.$rateLimitStates ||= []).push(state);
			} catch (err) {
				if (err instanceof RateLimitExceededError) {
					res.setHeader("Retry-After", String(err.retryAfterSeconds));
					for (const [k, v] of Object.entries(rateLimitHeaders([err.state]))) res.setHeader(k, v);
					throw httpError(429, "ThrottlerException: Too Many Requests");
				}
				throw err;
			}
		},

		/** Before authentication: language, client facts, per-IP limits, body checks. */
		async beforeCall(this: GatewayThis, ctx: Context<unknown, AuthMeta>, req: GatewayRequest, res: ServerResponse) {
			ctx.meta.lang = pickLang(req.headers["x-custom-lang"]);
			// CORS preflights never get here (moleculer-web answers them when CORS is on); any other
			// OPTIONS would run the action of the GET route.
			if (req.method === "OPTIONS") throw httpError(405, "Method Not Allowed");
			ctx.meta.ip = this.clientIp(req);
			const origin = header(req, "origin") || header(req, "referer");
			if (origin) ctx.meta.origin = origin;
			const userAgent = header(req, "user-agent", 512);
			if (userAgent) ctx.meta.userAgent = userAgent;
			const org = header(req, "x-organization-id", 64);
			if (org) ctx.meta.organizationId = org;
			const recaptcha = header(req, "x-recaptcha-token", 8192);
			if (recaptcha) ctx.meta.recaptchaToken = recaptcha;
			// Checked (length, characters) by mixins/idempotency.mixin.ts, which answers 400 for a bad one.
			const idempotencyKey = header(req, "idempotency-key", 8192);
			if (idempotencyKey) ctx.meta.idempotencyKey = idempotencyKey;
			if (this.limiter.enabled) {
				const ipKey = limitKeyForIp(ctx.meta.ip);
				const rule = this.limiter.endpointRule(req.method || "GET", routePath(req));
				// Limits come before any validation: a rejected request still counts.
				if (rule) await this.applyLimit(req, res, rule, ipKey);
				if (this.limiter.mode === "ip" && countsTowardsProfile(req)) await this.applyLimit(req, res, PROFILE_RULES.ip, ipKey);
			}
			checkBody(req);
			bodyOverQuery(req);
			if (req.rawBody) ctx.meta.rawBody = req.rawBody.toString("utf8");
			const signature = header(req, "x-webhook-signature", 256);
			if (signature) ctx.meta.webhookSignature = signature;
		},

		async resolveCredential(this: GatewayThis, ctx: Context<unknown, AuthMeta>, value: string, requirement: AuthRequirement) {
			const m = /^(\S+)\s+(\S+)$/.exec(value);
			if (!m) throw unauthorized("Unauthorized");
			const scheme = m[1].toLowerCase();
			if (scheme === "bearer") return this.resolveBearer(ctx, m[2], requirement);
			if (scheme === "basic") return this.resolveBasic(ctx, m[2], requirement);
			throw unauthorized("Unauthorized");
		},

		async resolveBearer(this: GatewayThis, ctx: Context<unknown, AuthMeta>, token: string, requirement: AuthRequirement) {
			if (token.length > MAX_TOKEN_LENGTH) throw unauthorized("Invalid token");
			const { config, clock } = appOf(this.broker);
			const isRefresh = requirement === "refresh";
			let claims: jwt.JwtPayload;
			try {
				// HS256 only, `exp` required. Time is the app clock (tests move it).
				claims = verifyToken(token, isRefresh ? config.secrets.refresh : config.secrets.jwt, Math.floor(clock.now().getTime() / 1000));
			} catch (err) {
				if (err instanceof jwt.TokenExpiredError) throw unauthorized("Token expired");
				throw unauthorized("Invalid token");
			}
			const userId = Number(claims.sub);
			const sessionId = claims.sid;
			if (!Number.isSafeInteger(userId) || userId <= 0 || typeof sessionId !== "string" || !sessionId || sessionId.length > 64) {
				throw unauthorized("Invalid token");
			}
			if (isRefresh) {
				// The refresh action itself checks rotation; the gateway only hands it the verified claims.
				if (claims.typ !== "refresh") throw unauthorized("Invalid token");
				(ctx.meta as RefreshMeta).refresh = { sessionId, nonce: claims.nonce, userId };
				return;
			}
			if (claims.typ !== "access" || !USER_ROLES.includes(claims.role)) throw unauthorized("Invalid token");
			const active = await this.sessionActive(ctx, sessionId, requirement);
			if (active === null) return;
			if (!active) throw unauthorized("Session ended");
			const user: AuthUser = { id: userId, role: claims.role, sessionId };
			ctx.meta.user = user;
		},

		/** `true`/`false`, or `null` when the auth service cannot answer and the route is public. */
		async sessionActive(this: GatewayThis, ctx: Context<unknown, AuthMeta>, sessionId: string, requirement: AuthRequirement) {
			try {
				// Not stored if the session ended while we were asking; concurrent requests of one session ask once.
				return await this.sessionCache.lookup(sessionId, async () => (await ctx.call("auth.sessionActive", { sessionId }, { timeout: AUTH_CALL_TIMEOUT_MS })) === true);
			} catch (err) {
				return this.verifierFailed(err, requirement, "Invalid token", "bearer");
			}
		},

		async resolveBasic(this: GatewayThis, ctx: Context<unknown, AuthMeta>, value: string, requirement: AuthRequirement) {
			if (value.length > 1024 || !BASE64.test(value)) throw unauthorized("Invalid API key");
			const decoded = Buffer.from(value, "base64").toString("utf8");
			const sep = decoded.indexOf(":");
			const key = sep > 0 ? decoded.slice(0, sep) : "";
			const secret = sep > 0 ? decoded.slice(sep + 1) : "";
			if (!CREDENTIAL_PART.test(key) || !CREDENTIAL_PART.test(secret)) throw unauthorized("Invalid API key");
			const cacheKey = digest(`${key}:${secret}`, this.cacheKeySalt);
			let principal: AuthApiKey | null;
			try {
				// Not stored if a key changed while we were asking (a revocation must win); concurrent requests with one key ask once.
				principal = await this.keyCache.lookup(cacheKey, async () => {
					const p = (await ctx.call("keys.authenticate", { key, secret }, { timeout: AUTH_CALL_TIMEOUT_MS })) as Partial<AuthApiKey> | null;
					return p && Number.isSafeInteger(p.id) && typeof p.organizationId === "string" && (p.mode === "live" || p.mode === "sandbox")
						? { id: p.id as number, organizationId: p.organizationId, mode: p.mode }
						: null;
				});
			} catch (err) {
				this.verifierFailed(err, requirement, "Invalid API key", "basic");
				return;
			}
			if (!principal) throw unauthorized("Invalid API key");
			ctx.meta.apiKey = principal;
		},

		/**
		 * The service that verifies a credential failed. Its client errors mean "not valid" (401).
		 * If it is absent, the request goes on anonymously where this credential was not needed
		 * anyway (public routes; a key on a token-only route and the reverse, which authorize then
		 * refuses with 401); where it was needed, 503. Anything else is a real failure.
		 */
		verifierFailed(this: GatewayThis, err: unknown, requirement: AuthRequirement, what: string, scheme: "bearer" | "basic"): null {
			const name = (err as { name?: string })?.name || "";
			const status = statusOf(err);
			// Moleculer's "no such service" errors carry 404: check them first.
			if (isServiceUnavailable(err) || status === 503 || isDatabaseUnreachable(err)) {
				const needed = scheme === "basic" ? ["key", "any"] : ["jwt", "admin", "any", "refresh"];
				// Once a minute at most: during an outage every request with a credential lands here.
				const now = Date.now();
				if (now - this.unavailableWarnedAt > 60_000) {
					this.unavailableWarnedAt = now;
					this.logger.warn(`Credential check unavailable (${name || status}): routes that need the credential answer 503`);
				}
				if (!needed.includes(requirement)) return null;
				throw serviceUnavailable();
			}
			if (status >= 400 && status < 500) throw unauthorized(what);
			throw err;
		},

		/** Resolves the caller (when a credential is presented) and applies the identity profile limit. */
		async authenticate(this: GatewayThis, ctx: Context<unknown, AuthMeta>, _route: unknown, req: GatewayRequest, res: ServerResponse) {
			const requirement: AuthRequirement = req.$action?.auth || "public";
			const value = header(req, "authorization", 8192) ?? (req.headers.authorization ? "invalid" : undefined);
			const identity = this.limiter.enabled && this.limiter.mode === "identity";
			const ipKey = limitKeyForIp(ctx.meta.ip || "unknown");
			if (value !== undefined && value.trim()) {
				try {
					await this.resolveCredential(ctx, value.trim(), requirement);
				} catch (err) {
					// Failed credentials spend the address's anonymous budget, so guessing keys or tokens is throttled.
					if (identity && statusOf(err) === 401) await this.applyLimit(req, res, PROFILE_RULES.anonymous, ipKey);
					throw err;
				}
			}
			if (identity && countsTowardsProfile(req)) {
				if (ctx.meta.apiKey) {
					await this.applyLimit(req, res, PROFILE_RULES.identity, `key:${ctx.meta.apiKey.id}`);
					// More keys are not more budget. Only keys count here: a bearer's x-organization-id is not verified yet.
					await this.applyLimit(req, res, PROFILE_RULES.organization, `org:${ctx.meta.apiKey.organizationId}`);
				} else if (ctx.meta.user) await this.applyLimit(req, res, PROFILE_RULES.identity, `user:${ctx.meta.user.id}`);
				else await this.applyLimit(req, res, PROFILE_RULES.anonymous, ipKey);
			}
			// moleculer-web stores the return value as ctx.meta.user.
			return ctx.meta.user || null;
		},

		/** Checks what the action declared it needs (`auth`), and the bot check where configured. */
		async authorize(this: GatewayThis, ctx: Context<unknown, AuthMeta>, _route: unknown, req: GatewayRequest) {
			const requirement: AuthRequirement = req.$action?.auth || "public";
			const { user, apiKey } = ctx.meta;
			const refresh = (ctx.meta as RefreshMeta).refresh;
			switch (requirement) {
				case "jwt":
					if (!user) throw unauthorized();
					break;
				case "admin":
					if (!user) throw unauthorized();
					if (user.role !== "admin") throw httpError(403, "Insufficient role");
					break;
				case "key":
					if (!apiKey) throw unauthorized(user ? "This operation requires an API key" : "Unauthorized");
					break;
				case "any":
					if (!user && !apiKey) throw unauthorized();
					break;
				case "refresh":
					if (!refresh) throw unauthorized();
					break;
				case "public":
					break;
				default:
					// An unknown requirement is a programming error: refuse rather than expose the action.
					throw unauthorized();
			}
			if (req.$action?.recaptcha) {
				const { config } = appOf(this.broker);
				if (config.recaptcha) await verifyRecaptcha(config.recaptcha, ctx.meta.recaptchaToken, ctx.meta.ip);
			}
		},

		/** Every failure goes through onError (moleculer-web's own handler would log client errors as errors). */
		errorHandler(this: GatewayThis, req: GatewayRequest, res: ServerResponse, err: unknown) {
			this.sendError(req, res, err);
		},

		sendErrorBody(this: GatewayThis, req: GatewayRequest, res: ServerResponse, err: unknown) {
			// moleculer-web's multipart handler still tries to answer after an upload action failed and was answered.
			if (res.headersSent && (err as { code?: unknown })?.code === "ERR_HTTP_HEADERS_SENT") return void res.end();
			const lang = req.$ctx?.meta?.lang || pickLang(req.headers["x-custom-lang"]);
			const body = toErrorBody(err, { multipart: req.$alias?.type === "multipart" });
			if (body.statusCode === 503) {
				// An outage (database, a service gone) is operational: logged, seen on /readyz, not reported as an error.
				this.logger.warn("Service unavailable:", req.method, requestPath(req), (err as Error)?.name, (err as Error)?.message);
			} else if (body.statusCode >= 500) {
				// The stack stays in the server log (and goes to error tracking); the client gets the bare 500.
				this.logger.error("Request failed:", req.method, requestPath(req), err instanceof Error && err.stack ? err.stack : err);
				captureError(err, { service: this.name, route: `${req.method} ${req.$alias?.fullPath ?? "(no route)"}`, status: String(body.statusCode) });
			}
			body.message = translate(body.message, lang);
			if (res.headersSent) {
				res.end();
				return;
			}
			res.statusCode = body.statusCode;
			if (body.statusCode === 503) res.setHeader("Retry-After", String(RETRY_AFTER_UNAVAILABLE_SECONDS));
			res.setHeader("Content-Type", "application/json; charset=utf-8");
			res.setHeader("Cache-Control", "no-store");
			res.end(JSON.stringify(body));
			this.logResponse(req, res);
		},

		/**
		 * moleculer-web warns on every 201 without ctx.meta.$location; our creates answer the new
		 * resource in the body (as the spec shows), so that warning would only flood the log.
		 */
		sendResponse(this: GatewayThis, req: GatewayRequest, res: ServerResponse, data: unknown, action: unknown) {
			const base = (ApiGateway as unknown as { methods: Record<string, (...a: unknown[]) => unknown> }).methods.sendResponse;
			const meta = req.$ctx?.meta;
			if (!(meta?.$statusCode === 201 && !meta.$location)) return base.call(this, req, res, data, action);
			const logger = this.logger;
			this.logger = Object.create(logger, { warn: { value: () => undefined } });
			try {
				return base.call(this, req, res, data, action);
			} finally {
				this.logger = logger;
			}
		},

		// Request logs (LOG_REQUESTS=true): method, path without query, status, time. Never headers, params or bodies.
		logRequest(this: GatewayThis, req: GatewayRequest) {
			const level = this.settings.logRequest as string | null;
			if (level && level in this.logger) (this.logger as any)[level](`=> ${req.method} ${API_PREFIX}${requestPath(req)}`);
		},

		logResponse(this: GatewayThis, req: GatewayRequest, res: ServerResponse) {
			const level = this.settings.logResponse as string | null;
			if (level && level in this.logger) {
				(this.logger as any)[level](`<= ${res.statusCode} ${req.method} ${API_PREFIX}${requestPath(req)}${elapsedMs(req.$startTime)}`);
			}
		},
	},

	created(this: GatewayThis) {
		const app = appOf(this.broker);
		(this as unknown as { createServer(): void }).createServer();
		this.server.on("error", err => this.logger.error("Server error:", err.message));
		// The broker's `started` hook runs after every local service's `started` (and after the
		// transporter announced them): the moment the node is ready. A gateway created on a broker
		// that has already started opens in its own `started` instead.
		this.broker.middlewares.add({
			name: "GatewayPort",
			started: async () => {
				if (this.broker.services.includes(this)) await this.openPort();
			},
		});
		this.limiter = new GatewayRateLimiter({
			mode: app.config.rateLimit,
			redis: app.redis,
			keyPrefix: app.config.redisPrefix,
			scale: app.config.rateLimitScale,
		});
		this.sessionCache = new TtlCache(AUTH_CACHE_TTL_MS, AUTH_CACHE_MAX_ENTRIES);
		this.keyCache = new TtlCache(AUTH_CACHE_TTL_MS, AUTH_CACHE_MAX_ENTRIES);
		this.cacheKeySalt = crypto.randomBytes(32).toString("hex");
		this.unavailableWarnedAt = 0;
		this.payStreams = new PayStreamHub({
			pollMs: app.config.payPage.eventsPollMs,
			readMany: async transactionIds => (await this.broker.call("links.payStatuses", { transactionIds })) as StatusPayload[],
			heartbeatMs: PAY_EVENTS_HEARTBEAT_MS,
			maxMs: PAY_EVENTS_MAX_MS,
			// Transient (database, a service restarting): the next wake or poll tries again.
			onReadError: err => this.logger.debug("Pay page event read failed:", (err as Error)?.message),
		});
		// Requests Node's parser rejects (oversized headers, garbage) still get the error shape.
		this.server?.on("clientError", (err: NodeJS.ErrnoException, socket: Socket) => {
			const pending = (socket as Socket & { _httpMessage?: ServerResponse })._httpMessage;
			if (err.code === "ECONNRESET" || !socket.writable || pending?.headersSent) {
				socket.destroy();
				return;
			}
			const status = err.code === "HPE_HEADER_OVERFLOW" ? 431 : err.code === "ERR_HTTP_REQUEST_TIMEOUT" ? 408 : 400;
			const body = JSON.stringify({ statusCode: status, message: STATUS_PHRASES[status], error: STATUS_PHRASES[status] });
			socket.end(
				`HTTP/1.1 ${status} ${STATUS_PHRASES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
					`Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
			);
		});
	},

	started(this: GatewayThis) {
		if (this.broker.started) return this.openPort();
	},

	/** Open event streams would hold the HTTP server's close: they end first (the page reconnects elsewhere). */
	async stopped(this: GatewayThis) {
		this.payStreams.closeAll();
		if (this.server.listening) await new Promise<void>((resolve, reject) => this.server.close(err => (err ? reject(err) : resolve())));
	},
};

/** body-parser / raw-body failure types and what the client gets. */
const BODY_ERRORS: Record<string, { status: number; message: string }> = {
	"entity.parse.failed": { status: 400, message: "Invalid JSON body" },
	"entity.verify.failed": { status: 400, message: "Invalid JSON body" },
	"entity.too.large": { status: 413, message: "Payload Too Large" },
	"encoding.unsupported": { status: 400, message: "Unsupported Content-Encoding" },
	"charset.unsupported": { status: 400, message: "Unsupported charset" },
	"request.aborted": { status: 400, message: "Bad Request" },
	"request.size.invalid": { status: 400, message: "Bad Request" },
	"stream.encoding.set": { status: 400, message: "Bad Request" },
	"stream.not.readable": { status: 400, message: "Bad Request" },
	"parameters.too.many": { status: 400, message: "Bad Request" },
};

/** moleculer-web's own errors whose wording (and data) we replace. */
const GATEWAY_ERRORS: Record<string, { status: number; message: string }> = {
	NotFoundError: { status: 404, message: "Not Found" },
	UnAuthorizedError: { status: 401, message: "Unauthorized" },
	PayloadTooLarge: { status: 413, message: "Payload Too Large" },
	InvalidRequestBodyError: { status: 400, message: "Invalid JSON body" },
	RateLimitExceeded: { status: 429, message: "ThrottlerException: Too Many Requests" },
};

export type ErrorBody = { statusCode: number; message: string; error: string; errors?: Record<string, string>; [k: string]: unknown };

function shaped(status: number, message: string, errors?: Record<string, string>): ErrorBody {
	return { statusCode: status, message, error: STATUS_PHRASES[status] || "Error", ...(errors ? { errors } : {}) };
}

/** fastest-validator's list of `{ type, field, actual }` as `{ field: code }`; unknown fields (strict schemas) as `unknownField`. */
function validationErrors(items: Array<{ field?: string; type?: string; actual?: unknown }>): Record<string, string> {
	const errors: Record<string, string> = {};
	for (const item of items) {
		if (!item || typeof item !== "object") continue;
		if (item.type === "objectStrict" && typeof item.actual === "string") {
			for (const extra of item.actual.split(", ").filter(Boolean)) {
				const field = item.field ? `${item.field}.${extra}` : extra;
				errors[field] ??= "unknownField";
			}
			continue;
		}
		// A failure of the whole body (e.g. not an object) has no field.
		const field = typeof item.field === "string" && item.field ? item.field : "body";
		errors[field] ??= typeof item.type === "string" ? item.type : "invalid";
	}
	return errors;
}

/**
 * Maps any error to the spec's body. Validation errors become 400 with `errors` per field;
 * client errors keep their status, `errors` and plain extra fields (e.g. `canRetryAt`, `code`);
 * a missing or unreachable service is 503; anything else is a bare 500.
 * `multipart`: the request was an upload, so parser failures from busboy are the client's.
 */
export function toErrorBody(err: any, opts: { multipart?: boolean } = {}): ErrorBody {
	if (!err || typeof err !== "object") return shaped(500, "Internal Server Error");
	const name = typeof err.name === "string" ? err.name : "";
	// Validation: fastest-validator's list of { field, type }.
	if (name === "ValidationError" && Array.isArray(err.data)) {
		return shaped(400, "Validation failed", validationErrors(err.data));
	}
	// Body parser errors (moleculer-web rewraps them as MoleculerError keeping `type`).
	if (typeof err.type === "string" && BODY_ERRORS[err.type]) {
		const { status, message } = BODY_ERRORS[err.type];
		return shaped(status, message);
	}
	// A path parameter that is not valid percent-encoding.
	if (name === "BadRequestError" && err.type === "UNABLE_DECODE_PARAM") return shaped(400, "Invalid URL encoding");
	if (name === "ForbiddenError" && err.type === "ORIGIN_NOT_ALLOWED") return shaped(403, "Origin not allowed");
	if (GATEWAY_ERRORS[name]) return shaped(GATEWAY_ERRORS[name].status, GATEWAY_ERRORS[name].message);
	// moleculer-web's answer to an upload form without any file part.
	if (opts.multipart && err.message === "File missing in the request") return shaped(400, "A file is required", { file: "required" });
	// With autoAliases every route's service exists when the route does; a missing service here is
	// one that an action depends on, or one that just left: unavailable, not "no such resource".
	// The database down (or restarting) is the same for a client: try again shortly.
	if (isServiceUnavailable(err) || name === "ServiceUnavailableError" || isDatabaseUnreachable(err)) return shaped(503, "Service Unavailable");
	const code = Number(err.code);
	if (Number.isInteger(code) && code >= 400 && code < 500) {
		const data = err.data && typeof err.data === "object" && !Array.isArray(err.data) ? err.data : {};
		const { errors, ...extra } = data as { errors?: unknown };
		const message = typeof err.message === "string" && err.message ? err.message : STATUS_PHRASES[code] || "Error";
		const fieldErrors = flatStringMap(errors);
		return {
			...shaped(code, message, fieldErrors),
			// Only our own client errors carry extra body fields; other libraries' data stays out of the body.
			...(name === "MoleculerClientError" ? sanitizeExtra(extra) : {}),
		};
	}
	if (code === 503) return shaped(503, "Service Unavailable");
	// busboy (multipart parser) throws plain errors for malformed forms.
	if (opts.multipart && !("code" in err) && /multipart|boundary|unexpected end of/i.test(String(err.message))) {
		return shaped(400, "Malformed multipart body");
	}
	return shaped(500, "Internal Server Error");
}

function flatStringMap(value: unknown): Record<string, string> | undefined {
	if (!value || typeof value !== "object" || Array.isArray(value)) return undefined;
	const out: Record<string, string> = {};
	for (const [k, v] of Object.entries(value)) if (typeof v === "string") out[k] = v;
	return Object.keys(out).length ? out : undefined;
}

/** Only plain values of the error's data reach the body (never stacks or nested errors), and never the shape's own fields. */
function sanitizeExtra(extra: Record<string, unknown>): Record<string, unknown> {
	const out: Record<string, unknown> = {};
	for (const [k, v] of Object.entries(extra)) {
		if (k === "statusCode" || k === "message" || k === "error" || k === "stack") continue;
		if (["string", "number", "boolean"].includes(typeof v) || v === null) out[k] = v;
	}
	return out;
}

export default ApiService;
