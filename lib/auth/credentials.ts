/**
 * Credential resolution of the gateway (docs/gateway.md "Credentials"): the `Authorization` header
 * becomes the caller in ctx.meta, a JWT session (`Bearer`) or an API key (`Basic key:secret`).
 * Session validity and key look-ups are cached briefly per node (TtlCache, one look-up at a time
 * per credential); logout and key revocation clear the caches on every node (the gateway hands
 * their events to `sessionsEnded` and `keysChanged`).
 */
import crypto from "node:crypto";
import jwt from "jsonwebtoken";
import type { Logger } from "moleculer";
import { digest } from "../crypto";
import { isDatabaseUnreachable } from "../db";
import { statusOf } from "../http-request";
import { httpError, isServiceUnavailable, serviceUnavailable, unauthorized } from "../errors";
import type { AuthApiKey, AuthMeta, AuthRequirement, AuthUser } from "../meta";
import { TtlCache } from "../ttl-cache";
import { verifyToken } from "./tokens";

/** What the refresh action receives: the verified claims of a refresh token. */
export type RefreshMeta = AuthMeta & { refresh?: { sessionId: string; nonce: unknown; userId: number } };

/** The broker call that asks a service (`auth.sessionActive`, `keys.authenticate`): the request's ctx.call. */
export type VerifierCall = (action: string, params: Record<string, unknown>, opts: { timeout: number }) => Promise<unknown>;

export interface CredentialResolverOptions {
	secrets: { jwt: string; refresh: string };
	/** The app clock (tests move it). */
	now: () => Date;
	logger: Pick<Logger, "warn">;
}

/** Session validity and key look-ups are cached briefly; logout/revocation clear them on every node by event. */
const AUTH_CACHE_TTL_MS = 30_000;
const AUTH_CACHE_MAX_ENTRIES = 100_000;
/**
 * Look-ups of the caller must not hold a request for the full call timeout (30 s), but they read the
 * database: under a burst they queue behind its writers (SQLite's one writer, MySQL's pool), and at
 * 5 s a loaded machine answered 503 to signed-in users whose requests would have succeeded.
 */
export const AUTH_CALL_TIMEOUT_MS = 15_000;
const MAX_TOKEN_LENGTH = 4096;
/** Key and secret of Basic credentials: printable ASCII, bounded (real ones are ~40 and ~56 characters). */
const CREDENTIAL_PART = /^[\x21-\x7e]{1,256}$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const USER_ROLES = ["admin", "user"];

export class CredentialResolver {
	private readonly sessionCache = new TtlCache<string, boolean>(AUTH_CACHE_TTL_MS, AUTH_CACHE_MAX_ENTRIES);
	private readonly keyCache = new TtlCache<string, AuthApiKey | null>(AUTH_CACHE_TTL_MS, AUTH_CACHE_MAX_ENTRIES);
	/** Per-process key for the API key cache's keys: credentials never sit in memory as map keys. */
	private readonly cacheKeySalt = crypto.randomBytes(32).toString("hex");
	private unavailableWarnedAt = 0;

	constructor(private readonly opts: CredentialResolverOptions) {}

	/** Resolves an `Authorization` value into `meta.user`, `meta.apiKey` or `meta.refresh`; 401 when it is not valid. */
	async resolve(meta: AuthMeta, value: string, requirement: AuthRequirement, call: VerifierCall): Promise<void> {
		const m = /^(\S+)\s+(\S+)$/.exec(value);
		if (!m) throw unauthorized("Unauthorized");
		const scheme = m[1].toLowerCase();
		if (scheme === "bearer") return this.resolveBearer(meta, m[2], requirement, call);
		if (scheme === "basic") return this.resolveBasic(meta, m[2], requirement, call);
		throw unauthorized("Unauthorized");
	}

	/**
	 * Logout, refresh-token reuse, password change, account deletion: `{ sessionIds }` (or
	 * `{ userId }` alone, which drops every cached session). Ended sessions never come back,
	 * so they are remembered as ended rather than forgotten.
	 */
	sessionsEnded(params: { sessionIds?: unknown; sessionId?: unknown }): void {
		const ids = Array.isArray(params.sessionIds) ? params.sessionIds : typeof params.sessionId === "string" ? [params.sessionId] : null;
		if (!ids) return void this.sessionCache.clear();
		for (const id of ids) {
			if (typeof id !== "string") continue;
			this.sessionCache.delete(id);
			this.sessionCache.set(id, false);
		}
	}

	/** Revocation or change of a key: the cache is keyed by credential digest, so all of it goes. */
	keysChanged(): void {
		this.keyCache.clear();
	}

	private async resolveBearer(meta: AuthMeta, token: string, requirement: AuthRequirement, call: VerifierCall): Promise<void> {
		if (token.length > MAX_TOKEN_LENGTH) throw unauthorized("Invalid token");
		const isRefresh = requirement === "refresh";
		let claims: jwt.JwtPayload;
		try {
			// HS256 only, `exp` required. Time is the app clock (tests move it).
			claims = verifyToken(token, isRefresh ? this.opts.secrets.refresh : this.opts.secrets.jwt, Math.floor(this.opts.now().getTime() / 1000));
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
			(meta as RefreshMeta).refresh = { sessionId, nonce: claims.nonce, userId };
			return;
		}
		if (claims.typ !== "access" || !USER_ROLES.includes(claims.role)) throw unauthorized("Invalid token");
		const active = await this.sessionActive(sessionId, requirement, call);
		if (active === null) return;
		if (!active) throw unauthorized("Session ended");
		const user: AuthUser = { id: userId, role: claims.role, sessionId };
		meta.user = user;
	}

	/** `true`/`false`, or `null` when the auth service cannot answer and the route is public. */
	private async sessionActive(sessionId: string, requirement: AuthRequirement, call: VerifierCall): Promise<boolean | null> {
		try {
			// Not stored if the session ended while we were asking; concurrent requests of one session ask once.
			return await this.sessionCache.lookup(sessionId, async () => (await call("auth.sessionActive", { sessionId }, { timeout: AUTH_CALL_TIMEOUT_MS })) === true);
		} catch (err) {
			return this.verifierFailed(err, requirement, "Invalid token", "bearer");
		}
	}

	private async resolveBasic(meta: AuthMeta, value: string, requirement: AuthRequirement, call: VerifierCall): Promise<void> {
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
				const p = (await call("keys.authenticate", { key, secret }, { timeout: AUTH_CALL_TIMEOUT_MS })) as Partial<AuthApiKey> | null;
				return p && Number.isSafeInteger(p.id) && typeof p.organizationId === "string" && (p.mode === "live" || p.mode === "sandbox")
					? { id: p.id as number, organizationId: p.organizationId, mode: p.mode }
					: null;
			});
		} catch (err) {
			this.verifierFailed(err, requirement, "Invalid API key", "basic");
			return;
		}
		if (!principal) throw unauthorized("Invalid API key");
		meta.apiKey = principal;
	}

	/**
	 * The service that verifies a credential failed. Its client errors mean "not valid" (401).
	 * If it is absent, the request goes on anonymously where this credential was not needed
	 * anyway (public routes; a key on a token-only route and the reverse, which authorize then
	 * refuses with 401); where it was needed, 503. Anything else is a real failure.
	 */
	private verifierFailed(err: unknown, requirement: AuthRequirement, what: string, scheme: "bearer" | "basic"): null {
		const name = (err as { name?: string })?.name || "";
		const status = statusOf(err);
		// Moleculer's "no such service" errors carry 404: check them first.
		if (isServiceUnavailable(err) || status === 503 || isDatabaseUnreachable(err)) {
			const needed = scheme === "basic" ? ["key", "any"] : ["jwt", "admin", "any", "refresh"];
			// Once a minute at most: during an outage every request with a credential lands here.
			const now = Date.now();
			if (now - this.unavailableWarnedAt > 60_000) {
				this.unavailableWarnedAt = now;
				this.opts.logger.warn(`Credential check unavailable (${name || status}): routes that need the credential answer 503`);
			}
			if (!needed.includes(requirement)) return null;
			throw serviceUnavailable();
		}
		if (status >= 400 && status < 500) throw unauthorized(what);
		throw err;
	}
}

/** Checks what the action declared it needs (`auth`) against the resolved caller. */
export function authorizeRequirement(meta: AuthMeta, requirement: AuthRequirement): void {
	const { user, apiKey } = meta;
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
			if (!(meta as RefreshMeta).refresh) throw unauthorized();
			break;
		case "public":
			break;
		default:
			// An unknown requirement is a programming error: refuse rather than expose the action.
			throw unauthorized();
	}
}
