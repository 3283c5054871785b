/**
 * The REST gateway at /api/v1 (moleculer-web). Routes come from the `rest` declarations of the
 * services' actions (autoAliases), so the gateway knows no business logic. Per request it:
 * picks the language, applies per-IP endpoint limits, resolves the caller once into ctx.meta
 * (JWT bearer or Basic API key), applies the identity/IP profile limit, checks the action's
 * declared `auth` requirement, and shapes every error as `{ statusCode, message, error, errors? }`.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Context, Service, ServiceSchema } from "moleculer";
import ApiGateway from "moleculer-web";
import jwt from "jsonwebtoken";
import { appOf } from "../lib/app";
import { pickLang, translate } from "../lib/i18n";
import { STATUS_PHRASES, httpError, unauthorized } from "../lib/errors";
import { GatewayRateLimiter, LimitState, PROFILE_RULES, RateLimitExceededError, rateLimitHeaders } from "../lib/rate-limit";
import { TtlCache } from "../lib/ttl-cache";
import type { AuthApiKey, AuthMeta, AuthRequirement, AuthUser } from "../lib/meta";
import { verifyRecaptcha } from "../lib/recaptcha";
import pkg from "../package.json";

interface GatewayRequest extends IncomingMessage {
	$ctx: Context<unknown, AuthMeta>;
	$action?: { auth?: AuthRequirement; recaptcha?: boolean; name: string };
	$route?: unknown;
	$alias?: { path: string; method: string };
	parsedUrl?: string;
	originalUrl?: string;
	url: string;
	$rateLimitStates?: LimitState[];
}

interface GatewayVars {
	limiter: GatewayRateLimiter;
	sessionCache: TtlCache<string, boolean>;
	keyCache: TtlCache<string, AuthApiKey | null>;
}

interface GatewayMethods {
	clientIp(req: GatewayRequest): string;
	resolveBearer(ctx: Context<unknown, AuthMeta>, token: string, requirement: AuthRequirement | undefined): Promise<void>;
	resolveBasic(ctx: Context<unknown, AuthMeta>, header: string): Promise<void>;
	applyLimit(req: GatewayRequest, res: ServerResponse, rule: { name: string; points: number; durationSeconds: number }, key: string): Promise<void>;
	sendErrorBody(req: GatewayRequest, res: ServerResponse, err: any): void;
	beforeCall(ctx: Context<unknown, AuthMeta>, req: GatewayRequest, res: ServerResponse): Promise<void>;
}

type GatewayThis = Service<Record<string, any>> & GatewayVars & GatewayMethods;

const API_PREFIX = "/api/v1";

/** Session validity and key look-ups are cached briefly; logout/revocation clear them on every node by event. */
const AUTH_CACHE_TTL_MS = 30_000;

function pathBelowPrefix(req: GatewayRequest): string {
	const url = (req.originalUrl || req.url || "").split("?")[0];
	return url.startsWith(API_PREFIX) ? url.slice(API_PREFIX.length) || "/" : url;
}

const ApiService: ServiceSchema<Record<string, any>, GatewayMethods & Record<string, any>, GatewayVars> = {
	name: "api",
	mixins: [ApiGateway],

	settings: {
		port: 3000,
		ip: "0.0.0.0",
		log4XXResponses: false,
		logRequest: null,
		logResponse: null,
		logRequestParams: null,
		logResponseData: null,
		routes: [
			{
				name: "v1",
				path: API_PREFIX,
				autoAliases: true,
				mappingPolicy: "restrict",
				mergeParams: true,
				authentication: true,
				authorization: true,
				bodyParsers: { json: { strict: false, limit: "1mb" }, urlencoded: false },
				callOptions: { timeout: 30_000 },
				aliases: {
					"GET /": "api.info",
				},
				onBeforeCall(this: GatewayThis, ctx: Context<unknown, AuthMeta>, _route: unknown, req: GatewayRequest, res: ServerResponse) {
					return this.beforeCall(ctx, req, res);
				},
				onAfterCall(this: GatewayThis, ctx: Context<unknown, AuthMeta>, _route: unknown, req: GatewayRequest, res: ServerResponse, data: unknown) {
					for (const [k, v] of Object.entries(rateLimitHeaders(req.$rateLimitStates || []))) res.setHeader(k, v);
					return data;
				},
			},
		],
		onError(this: GatewayThis, req: GatewayRequest, res: ServerResponse, err: any) {
			this.sendErrorBody(req, res, err);
		},
	},

	actions: {
		info: {
			auth: "public",
			handler(this: any) {
				const { config } = appOf(this.broker);
				return {
					name: "Crypto Payment Gateway",
					version: pkg.version,
					apiVersion: "v1",
					environment: config.env,
					nodeID: this.broker.nodeID,
					publicUrl: config.publicUrl,
					time: new Date().toISOString(),
				};
			},
		},
	},

	events: {
		/** Logout, password change, account deletion: sessions end at once on every gateway node. */
		"auth.sessions.ended"(this: GatewayThis, ctx: Context<{ sessionIds: string[] }>) {
			for (const id of ctx.params.sessionIds || []) this.sessionCache.delete(id);
		},
		/** Revocation or change of a key. */
		"keys.changed"(this: GatewayThis) {
			this.keyCache.clear();
		},
	},

	methods: {
		clientIp(req: GatewayRequest): string {
			const { config } = appOf((this as any).broker);
			if (config.trustProxy) {
				const fwd = req.headers["x-forwarded-for"];
				const first = (Array.isArray(fwd) ? fwd[0] : fwd || "").split(",")[0].trim();
				if (first) return first;
			}
			return req.socket?.remoteAddress || "unknown";
		},

		async applyLimit(this: GatewayThis, req: GatewayRequest, res: ServerResponse, rule, key: string) {
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

		/** Before authentication: language, client facts, per-IP limits of sensitive endpoints. */
		async beforeCall(this: GatewayThis, ctx: Context<unknown, AuthMeta>, req: GatewayRequest, res: ServerResponse) {
			ctx.meta.lang = pickLang(req.headers["x-custom-lang"]);
			ctx.meta.ip = this.clientIp(req);
			const origin = req.headers.origin || req.headers.referer;
			if (typeof origin === "string" && origin) ctx.meta.origin = origin;
			if (typeof req.headers["user-agent"] === "string") ctx.meta.userAgent = req.headers["user-agent"];
			const orgHeader = req.headers["x-organization-id"];
			if (typeof orgHeader === "string" && orgHeader) ctx.meta.organizationId = orgHeader;
			const recaptcha = req.headers["x-recaptcha-token"];
			if (typeof recaptcha === "string") ctx.meta.recaptchaToken = recaptcha;
			if (!this.limiter.enabled) return;
			const rule = this.limiter.endpointRule(req.method || "GET", pathBelowPrefix(req));
			if (rule) await this.applyLimit(req, res, rule, ctx.meta.ip);
		},

		async resolveBearer(this: GatewayThis, ctx: Context<unknown, AuthMeta>, token: string, requirement: AuthRequirement | undefined) {
			const { config } = appOf(this.broker);
			const isRefresh = requirement === "refresh";
			let claims: jwt.JwtPayload;
			try {
				claims = jwt.verify(token, isRefresh ? config.secrets.refresh : config.secrets.jwt, { algorithms: ["HS256"] }) as jwt.JwtPayload;
			} catch (err) {
				if (err instanceof jwt.TokenExpiredError) throw unauthorized("Token expired");
				throw unauthorized("Invalid token");
			}
			if (isRefresh) {
				// The refresh action itself checks rotation; the gateway only hands it the verified claims.
				if (claims.typ !== "refresh" || typeof claims.sid !== "string") throw unauthorized("Invalid token");
				(ctx.meta as AuthMeta & { refresh?: unknown }).refresh = { sessionId: claims.sid, nonce: claims.nonce, userId: Number(claims.sub) };
				return;
			}
			if (claims.typ !== "access" || typeof claims.sid !== "string" || !claims.sub) throw unauthorized("Invalid token");
			let active = this.sessionCache.get(claims.sid);
			if (active === undefined) {
				active = (await ctx.call("auth.sessionActive", { sessionId: claims.sid })) as boolean;
				this.sessionCache.set(claims.sid, active);
			}
			if (!active) throw unauthorized("Session ended");
			const user: AuthUser = { id: Number(claims.sub), role: claims.role, sessionId: claims.sid };
			ctx.meta.user = user;
		},

		async resolveBasic(this: GatewayThis, ctx: Context<unknown, AuthMeta>, header: string) {
			let decoded = "";
			try {
				decoded = Buffer.from(header, "base64").toString("utf8");
			} catch {
				throw unauthorized("Invalid API key");
			}
			const sep = decoded.indexOf(":");
			if (sep <= 0) throw unauthorized("Invalid API key");
			const key = decoded.slice(0, sep);
			const secret = decoded.slice(sep + 1);
			const cacheKey = `${key}:${secret}`;
			let principal = this.keyCache.get(cacheKey);
			if (principal === undefined) {
				principal = (await ctx.call("keys.authenticate", { key, secret })) as AuthApiKey | null;
				this.keyCache.set(cacheKey, principal);
			}
			if (!principal) throw unauthorized("Invalid API key");
			ctx.meta.apiKey = principal;
		},

		/** Resolves the caller (when a credential is presented) and applies the profile limit. */
		async authenticate(this: GatewayThis, ctx: Context<unknown, AuthMeta>, _route: unknown, req: GatewayRequest, res: ServerResponse) {
			const requirement = req.$action?.auth;
			const header = req.headers.authorization;
			if (typeof header === "string" && header.trim()) {
				const [scheme, ...rest] = header.trim().split(/\s+/);
				const value = rest.join(" ");
				if (/^bearer$/i.test(scheme) && value) await this.resolveBearer(ctx, value, requirement);
				else if (/^basic$/i.test(scheme) && value) await this.resolveBasic(ctx, value);
				else throw unauthorized("Unauthorized");
			}
			if (!this.limiter.enabled) return null;
			const ip = ctx.meta.ip || "unknown";
			if (this.limiter.mode === "ip") {
				await this.applyLimit(req, res, PROFILE_RULES.ip, ip);
			} else if (ctx.meta.apiKey) {
				await this.applyLimit(req, res, PROFILE_RULES.identity, `key:${ctx.meta.apiKey.id}`);
			} else if (ctx.meta.user) {
				await this.applyLimit(req, res, PROFILE_RULES.identity, `user:${ctx.meta.user.id}`);
			} else {
				await this.applyLimit(req, res, PROFILE_RULES.anonymous, ip);
			}
			return null;
		},

		/** Checks what the action declared it needs (`auth`), and the bot check where configured. */
		async authorize(this: GatewayThis, ctx: Context<unknown, AuthMeta>, _route: unknown, req: GatewayRequest) {
			const requirement: AuthRequirement = req.$action?.auth || "public";
			const { user, apiKey } = ctx.meta;
			const refresh = (ctx.meta as { refresh?: unknown }).refresh;
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
				default:
					break;
			}
			if (req.$action?.recaptcha) {
				const { config } = appOf(this.broker);
				if (config.recaptcha) await verifyRecaptcha(config.recaptcha, ctx.meta.recaptchaToken, ctx.meta.ip);
			}
		},

		sendErrorBody(this: GatewayThis, req: GatewayRequest, res: ServerResponse, err: any) {
			const lang = req.$ctx?.meta?.lang || pickLang(req.headers["x-custom-lang"]);
			const body = toErrorBody(err);
			if (body.statusCode >= 500) {
				this.logger.error("Request failed:", req.method, pathBelowPrefix(req), err && err.stack ? err.stack : err);
			}
			body.message = translate(body.message, lang);
			if (res.headersSent) return void res.end();
			res.statusCode = body.statusCode;
			res.setHeader("Content-Type", "application/json; charset=utf-8");
			res.end(JSON.stringify(body));
		},
	},

	created(this: GatewayThis) {
		const app = appOf(this.broker);
		this.settings.port = app.config.port;
		this.limiter = new GatewayRateLimiter({
			mode: app.config.rateLimit,
			redis: app.redis,
			keyPrefix: app.config.redisPrefix,
			scale: app.config.rateLimitScale,
		});
		this.sessionCache = new TtlCache(AUTH_CACHE_TTL_MS, 100_000);
		this.keyCache = new TtlCache(AUTH_CACHE_TTL_MS, 100_000);
	},
};

/**
 * Maps any error to the spec's body. Moleculer validation errors become 400 with `errors` per
 * field; client errors keep their status and data; anything else is a bare 500.
 */
export function toErrorBody(err: any): { statusCode: number; message: string; error: string; errors?: Record<string, string>; [k: string]: unknown } {
	const name = err?.name;
	// Validation: fastest-validator's list of { field, type }.
	if (name === "ValidationError" && Array.isArray(err.data)) {
		const errors: Record<string, string> = {};
		for (const item of err.data as Array<{ field?: string; type?: string }>) {
			if (item.field && !errors[item.field]) errors[item.field] = item.type || "invalid";
		}
		return { statusCode: 400, message: "Validation failed", error: STATUS_PHRASES[400], errors };
	}
	// Body parser (raw-body / body-parser) errors carry `status` and `type`.
	if (err && typeof err.status === "number" && err.type && String(err.type).startsWith("entity.")) {
		const status = err.status === 413 ? 413 : err.status === 415 ? 415 : 400;
		const message = err.type === "entity.parse.failed" ? "Invalid JSON body" : STATUS_PHRASES[status];
		return { statusCode: status, message, error: STATUS_PHRASES[status] };
	}
	if (name === "ServiceNotFoundError" || name === "NotFoundError") {
		return { statusCode: 404, message: "Not Found", error: STATUS_PHRASES[404] };
	}
	const code = Number(err?.code);
	if (Number.isInteger(code) && code >= 400 && code < 500) {
		const data = err.data && typeof err.data === "object" && !Array.isArray(err.data) ? err.data : {};
		const { errors, ...extra } = data as { errors?: Record<string, string> };
		const message = typeof err.message === "string" && err.message ? err.message : STATUS_PHRASES[code] || "Error";
		// moleculer-web's own 401s ("NO_TOKEN"/"INVALID_TOKEN") and 404s keep our wording.
		const statusMessage = name === "UnAuthorizedError" ? "Unauthorized" : message;
		return {
			statusCode: code,
			message: statusMessage,
			error: STATUS_PHRASES[code] || "Error",
			...(errors ? { errors } : {}),
			...sanitizeExtra(extra),
		};
	}
	if (name === "ServiceNotAvailableError" || name === "RequestTimeoutError" || code === 503) {
		return { statusCode: 503, message: "Service Unavailable", error: STATUS_PHRASES[503] };
	}
	return { statusCode: 500, message: "Internal Server Error", error: STATUS_PHRASES[500] };
}

/** Only plain values of the error's data reach the body (never stacks or nested errors). */
function sanitizeExtra(extra: Record<string, unknown>): Record<string, unknown> {
	const out: Record<string, unknown> = {};
	for (const [k, v] of Object.entries(extra)) {
		if (["string", "number", "boolean"].includes(typeof v) || v === null) out[k] = v;
	}
	return out;
}

export default ApiService;
