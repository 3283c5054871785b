/**
 * Rate limits of the spec's Limits section, counted by rate-limiter-flexible: atomically in Redis
 * (shared by every gateway node) when Redis is configured, in memory otherwise.
 *
 * - Per-IP limits of sensitive endpoints always apply (unless RATE_LIMIT=off).
 * - Profile `identity` (default): 100/min per API key or user; 10/min per IP when unauthenticated;
 *   and 1000/min per organization over all its API keys (10 x the per-key limit).
 * - Profile `ip`: 600/min per IP on every endpoint.
 *
 * Endpoint rules are matched against the route that serves the request (the alias path, e.g.
 * `/pay/:slug/confirm`), not the raw URL, so `/AUTH/email/login/` or percent-encoded variants
 * that reach the same action cannot dodge them.
 */
import net from "node:net";
import type Redis from "ioredis";
import { RateLimiterMemory, RateLimiterRedis, RateLimiterAbstract, RateLimiterRes } from "rate-limiter-flexible";
import type { RateLimitMode } from "./config";

export interface LimitRule {
	name: string;
	points: number;
	durationSeconds: number;
}

/**
 * Sensitive endpoints, matched on method + path below /api/v1. The payer wallet challenge and
 * verify paths are not fixed by the spec: any path ending in `/wallet/challenge` or
 * `/wallet/verify` gets their limit.
 */
export const ENDPOINT_RULES: Array<{ method: string; pattern: RegExp; rule: LimitRule }> = [
	{ method: "POST", pattern: /^\/auth\/forgot\/password$/i, rule: { name: "forgot-password", points: 3, durationSeconds: 15 * 60 } },
	{ method: "POST", pattern: /^\/auth\/email\/login$/i, rule: { name: "login", points: 10, durationSeconds: 5 * 60 } },
	{
		method: "POST",
		pattern: /^\/auth\/(email\/register|email\/register\/send-code|email\/login\/send-code|reset\/password)$/i,
		rule: { name: "signup-codes-reset", points: 5, durationSeconds: 15 * 60 },
	},
	{ method: "POST", pattern: /^\/auth\/email\/confirm\/resend$/i, rule: { name: "confirm-resend", points: 3, durationSeconds: 15 * 60 } },
	{
		method: "POST",
		pattern: /^\/(auth\/email\/(register|login)\/verify-code|api-keys\/test)$/i,
		rule: { name: "code-verification", points: 10, durationSeconds: 15 * 60 },
	},
	{ method: "POST", pattern: /^\/(auth\/google\/login|(.+\/)?wallet\/(challenge|verify))$/i, rule: { name: "google-wallet", points: 20, durationSeconds: 5 * 60 } },
	{
		method: "POST",
		pattern: /^\/(widgets\/[^/]+\/checkout|pay\/[^/]+\/(confirm|cancel))$/i,
		rule: { name: "checkout", points: 30, durationSeconds: 60 },
	},
];

/** An organization's keys together may use this many times one key's budget (docs/gateway.md). */
export const ORGANIZATION_KEY_MULTIPLE = 10;

export const PROFILE_RULES = {
	identity: { name: "identity", points: 100, durationSeconds: 60 },
	organization: { name: "organization", points: 100 * ORGANIZATION_KEY_MULTIPLE, durationSeconds: 60 },
	anonymous: { name: "anonymous-ip", points: 10, durationSeconds: 60 },
	ip: { name: "ip", points: 600, durationSeconds: 60 },
} satisfies Record<string, LimitRule>;

export interface LimitState {
	limit: number;
	remaining: number;
	/** Unix time (seconds) when the window resets. */
	resetAt: number;
}

export class RateLimitExceededError extends Error {
	constructor(public readonly retryAfterSeconds: number, public readonly state: LimitState) {
		super("ThrottlerException: Too Many Requests");
	}
}

export interface RateLimiterOptions {
	mode: RateLimitMode;
	redis: Redis | null;
	keyPrefix: string;
	scale: number;
	now?: () => number;
}

export class GatewayRateLimiter {
	private limiters = new Map<string, RateLimiterAbstract>();

	constructor(private readonly opts: RateLimiterOptions) {}

	get enabled(): boolean {
		return this.opts.mode !== "off";
	}

	get mode(): RateLimitMode {
		return this.opts.mode;
	}

	private limiter(rule: LimitRule): RateLimiterAbstract {
		let limiter = this.limiters.get(rule.name);
		if (!limiter) {
			const common = {
				keyPrefix: `${this.opts.keyPrefix}rl:${rule.name}`,
				points: Math.max(1, Math.round(rule.points * this.opts.scale)),
				duration: rule.durationSeconds,
			};
			limiter = this.opts.redis
				? new RateLimiterRedis({
						...common,
						storeClient: this.opts.redis,
						// If Redis is unreachable, keep limiting per node instead of failing requests,
						// without even trying Redis until its connection is back (lib/redis.ts).
						insuranceLimiter: new RateLimiterMemory(common),
						rejectIfRedisNotReady: true,
					})
				: new RateLimiterMemory(common);
			this.limiters.set(rule.name, limiter);
		}
		return limiter;
	}

	/** The per-IP rule of a route, by method and path below /api/v1 (the alias path or the request path). */
	endpointRule(method: string, path: string): LimitRule | null {
		const p = path.length > 1 ? path.replace(/\/+$/, "") : path;
		const match = ENDPOINT_RULES.find(r => r.method === method.toUpperCase() && r.pattern.test(p));
		return match ? match.rule : null;
	}

	/** Consumes one point under `rule` for `key`; throws RateLimitExceededError past the limit. */
	async consume(rule: LimitRule, key: string): Promise<LimitState> {
		const limiter = this.limiter(rule);
		const now = this.opts.now ? this.opts.now() : Date.now();
		try {
			const res = await limiter.consume(key);
			return toState(limiter.points, res, now);
		} catch (err) {
			if (err instanceof RateLimiterRes) {
				const state = toState(limiter.points, err, now);
				throw new RateLimitExceededError(Math.max(1, Math.ceil(err.msBeforeNext / 1000)), state);
			}
			throw err;
		}
	}
}

function toState(limit: number, res: RateLimiterRes, now: number): LimitState {
	return { limit, remaining: Math.max(0, res.remainingPoints), resetAt: Math.ceil((now + res.msBeforeNext) / 1000) };
}

/** The headers for the most restrictive of the limits a request passed. */
export function rateLimitHeaders(states: LimitState[]): Record<string, string> {
	if (states.length === 0) return {};
	const tightest = states.reduce((a, b) => (b.remaining < a.remaining ? b : a));
	return {
		"X-RateLimit-Limit": String(tightest.limit),
		"X-RateLimit-Remaining": String(tightest.remaining),
		"X-RateLimit-Reset": String(tightest.resetAt),
	};
}

/**
 * The counter key of a client address. IPv4 as is; IPv6 by its /64 network, because one
 * subscriber usually holds a whole /64 and could otherwise rotate addresses to dodge limits.
 * IPv4-mapped IPv6 (`::ffff:1.2.3.4`) counts as the IPv4 address.
 */
export function limitKeyForIp(ip: string): string {
	const addr = ip.trim().toLowerCase().replace(/%.*$/, "");
	const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(addr);
	if (mapped) return mapped[1];
	if (!net.isIPv6(addr)) return addr;
	const [head, tail = ""] = addr.split("::");
	const h = head ? head.split(":") : [];
	const t = addr.includes("::") && tail ? tail.split(":") : [];
	// An embedded IPv4 tail (::1.2.3.4) stands for two groups; only the first four groups matter here.
	const groups = addr.includes("::") ? [...h, ...Array(Math.max(0, 8 - h.length - t.length)).fill("0"), ...t] : h;
	return `${groups.slice(0, 4).map(g => g.replace(/^0+(?=.)/, "")).join(":")}::/64`;
}
