/**
 * Rate limits of the spec's Limits section, counted by rate-limiter-flexible: atomically in Redis
 * (shared by every gateway node) when Redis is configured, in memory otherwise.
 *
 * - Per-IP limits of sensitive endpoints always apply (unless RATE_LIMIT=off).
 * - Profile `identity` (default): 100/min per API key or user; 10/min per IP when unauthenticated.
 * - Profile `ip`: 600/min per IP on every endpoint.
 */
import type Redis from "ioredis";
import { RateLimiterMemory, RateLimiterRedis, RateLimiterAbstract, RateLimiterRes } from "rate-limiter-flexible";
import type { RateLimitMode } from "./config";

export interface LimitRule {
	name: string;
	points: number;
	durationSeconds: number;
}

/** Sensitive endpoints, matched on method + path below /api/v1. */
export const ENDPOINT_RULES: Array<{ method: string; pattern: RegExp; rule: LimitRule }> = [
	{ method: "POST", pattern: /^\/auth\/forgot\/password$/, rule: { name: "forgot-password", points: 3, durationSeconds: 15 * 60 } },
	{ method: "POST", pattern: /^\/auth\/email\/login$/, rule: { name: "login", points: 10, durationSeconds: 5 * 60 } },
	{
		method: "POST",
		pattern: /^\/auth\/(email\/register|email\/register\/send-code|email\/login\/send-code|reset\/password)$/,
		rule: { name: "signup-codes-reset", points: 5, durationSeconds: 15 * 60 },
	},
	{ method: "POST", pattern: /^\/auth\/email\/confirm\/resend$/, rule: { name: "confirm-resend", points: 3, durationSeconds: 15 * 60 } },
	{
		method: "POST",
		pattern: /^\/(auth\/email\/(register|login)\/verify-code|api-keys\/test)$/,
		rule: { name: "code-verification", points: 10, durationSeconds: 15 * 60 },
	},
	{ method: "POST", pattern: /^\/(auth\/google\/login|auth\/wallet\/(challenge|verify))$/, rule: { name: "google-wallet", points: 20, durationSeconds: 5 * 60 } },
	{
		method: "POST",
		pattern: /^\/(widgets\/[^/]+\/checkout|pay\/[^/]+\/(confirm|cancel))$/,
		rule: { name: "checkout", points: 30, durationSeconds: 60 },
	},
];

export const PROFILE_RULES = {
	identity: { name: "identity", points: 100, durationSeconds: 60 },
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
						// If Redis is briefly unreachable, keep limiting per node instead of failing requests.
						insuranceLimiter: new RateLimiterMemory(common),
					})
				: new RateLimiterMemory(common);
			this.limiters.set(rule.name, limiter);
		}
		return limiter;
	}

	endpointRule(method: string, path: string): LimitRule | null {
		const match = ENDPOINT_RULES.find(r => r.method === method && r.pattern.test(path));
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
