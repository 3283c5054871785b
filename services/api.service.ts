/**
 * The REST gateway at /api/v1 (moleculer-web). Routes come from the `rest` declarations of the
 * services' actions (autoAliases), so the gateway knows no business logic. Per request it:
 * picks the language, applies per-IP endpoint limits (and the `ip` profile), checks the body's
 * type and shape, resolves the caller once into ctx.meta (JWT bearer or Basic API key), applies
 * the identity profile limit, checks the action's declared `auth` requirement, and shapes every
 * error as `{ statusCode, message, error, errors? }`. See docs/gateway.md.
 */
import type { IncomingMessage, ServerResponse, Server } from "node:http";
import net, { type Socket } from "node:net";
import type { Context, Service, ServiceSchema } from "moleculer";
import ApiGateway from "moleculer-web";
import { appOf } from "../lib/app";
import { pickLang, translate } from "../lib/i18n";
import { STATUS_PHRASES, badRequest, httpError, notFound, unauthorized } from "../lib/errors";
import { toErrorBody } from "../lib/error-body";
import { captureError } from "../lib/error-tracking";
import { CredentialResolver, authorizeRequirement } from "../lib/auth/credentials";
import { GatewayRateLimiter, LimitRule, LimitState, PROFILE_RULES, RateLimitExceededError, limitKeyForIp, rateLimitHeaders } from "../lib/rate-limit";
import type { AuthMeta, AuthRequirement } from "../lib/meta";
import { requestHeader as header, statusOf } from "../lib/http-request";
import { verifyRecaptcha } from "../lib/recaptcha";
import { OPENAPI_DOCUMENT } from "../lib/openapi/served";
import { jsonBodyParser } from "../lib/json-body";
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

interface GatewayVars {
	limiter: GatewayRateLimiter;
	/** The caller from the Authorization header, with its caches (lib/auth/credentials.ts). */
	credentials: CredentialResolver;
	server: Server;
}

interface GatewayMethods {
	clientIp(req: GatewayRequest): string;
	applyLimit(req: GatewayRequest, res: ServerResponse, rule: LimitRule, key: string): Promise<void>;
	sendErrorBody(req: GatewayRequest, res: ServerResponse, err: unknown): void;
	beforeCall(ctx: Context<unknown, AuthMeta>, req: GatewayRequest, res: ServerResponse): Promise<void>;
	sendError(req: GatewayRequest, res: ServerResponse, err: unknown): void;
	logResponse(req: GatewayRequest, res: ServerResponse): void;
	anonymousLimit(req: GatewayRequest, res: ServerResponse): Promise<void>;
	debugSentry(req: GatewayRequest, res: ServerResponse): Promise<void>;
	regenerateAutoAliases(route: unknown): void;
	openPort(): Promise<void>;
}

type GatewayThis = Service<Record<string, any>> & GatewayVars & GatewayMethods;

const API_PREFIX = "/api/v1";
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** Retry-After of a 503: services and the database come back within seconds (restart, failover, reconnect). */
const RETRY_AFTER_UNAVAILABLE_SECONDS = 5;

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
				// JSON bodies through lib/json-body.ts: body-parser's json (any JSON value parses, so a
				// non-object body gets a clear 400 from checkBody; compressed bodies are refused, as
				// decompression costs CPU and hides sizes; `__proto__` keys are dropped), with a short
				// path for the plain request. Signed requests (inbound webhooks) are verified over the
				// exact bytes received.
				bodyParsers: { json: false, urlencoded: false },
				use: [
					jsonBodyParser({
						limit: 1024 * 1024,
						verify: (req: GatewayRequest, _res: ServerResponse, buf: Buffer) => {
							if (req.headers["x-webhook-signature"] !== undefined) req.rawBody = buf;
						},
					}),
				],
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
				this.credentials.keysChanged();
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
			this.credentials.sessionsEnded(ctx.params || {});
		},
		/** Revocation or change of a key: the cache is keyed by credential digest, so all of it goes. */
		"keys.changed"(this: GatewayThis) {
			this.credentials.keysChanged();
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
			// The pay page and /docs are mounted by the pages service of this node (services/pages.service.ts).
			if (!this.broker.getLocalService("pages")) this.logger.info("No pages service on this node: /pay and /docs answer 404 here");
			const addr = this.server.address();
			this.logger.info(`API Gateway listening on http://${typeof addr === "object" && addr ? `${addr.address}:${addr.port}` : String(addr)}`);
		},

		/**
		 * GET /api/debug-sentry: where error tracking is configured, an error thrown on purpose (a
		 * 500, reported like any other); else 404. Limited per IP, as it costs an event each time.
		 */
		async debugSentry(this: GatewayThis, req: GatewayRequest, res: ServerResponse) {
			if (!appOf(this.broker).config.errorTracking.dsn) throw notFound();
			await this.anonymousLimit(req, res);
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

		/** The per-IP limit of anonymous callers: the pages' documents and status reads (services/pages.service.ts) and the debug route. */
		async anonymousLimit(this: GatewayThis, req: GatewayRequest, res: ServerResponse) {
			if (!this.limiter.enabled) return;
			const ipKey = limitKeyForIp(this.clientIp(req));
			await this.applyLimit(req, res, this.limiter.mode === "ip" ? PROFILE_RULES.ip : PROFILE_RULES.anonymous, ipKey);
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

		/** Resolves the caller (when a credential is presented) and applies the identity profile limit. */
		async authenticate(this: GatewayThis, ctx: Context<unknown, AuthMeta>, _route: unknown, req: GatewayRequest, res: ServerResponse) {
			const requirement: AuthRequirement = req.$action?.auth || "public";
			const value = header(req, "authorization", 8192) ?? (req.headers.authorization ? "invalid" : undefined);
			const identity = this.limiter.enabled && this.limiter.mode === "identity";
			const ipKey = limitKeyForIp(ctx.meta.ip || "unknown");
			if (value !== undefined && value.trim()) {
				try {
					await this.credentials.resolve(ctx.meta, value.trim(), requirement, (action, params, opts) => ctx.call(action, params, opts));
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
			authorizeRequirement(ctx.meta, requirement);
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
		this.credentials = new CredentialResolver({ secrets: app.config.secrets, now: () => app.clock.now(), logger: this.logger });
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

	/** The pay page's open event streams end in the pages service's `stopped` (the services stop together). */
	async stopped(this: GatewayThis) {
		if (this.server.listening) await new Promise<void>((resolve, reject) => this.server.close(err => (err ? reject(err) : resolve())));
	},
};

export default ApiService;
