import { ENDPOINT_RULES, GatewayRateLimiter, limitKeyForIp, PROFILE_RULES, RateLimitExceededError, rateLimitHeaders } from "../../lib/rate-limit";

const memory = (scale = 1, now?: () => number) => new GatewayRateLimiter({ mode: "identity", redis: null, keyPrefix: "t:", scale, now });

describe("rate limits", () => {
	it("carries the spec's numbers", () => {
		expect(PROFILE_RULES.identity).toMatchObject({ points: 100, durationSeconds: 60 });
		expect(PROFILE_RULES.anonymous).toMatchObject({ points: 10, durationSeconds: 60 });
		expect(PROFILE_RULES.ip).toMatchObject({ points: 600, durationSeconds: 60 });
		// Ours: an organization's keys together get 10 keys' worth (docs/gateway.md).
		expect(PROFILE_RULES.organization).toMatchObject({ points: 10 * PROFILE_RULES.identity.points, durationSeconds: PROFILE_RULES.identity.durationSeconds });
		const byName = Object.fromEntries(ENDPOINT_RULES.map(r => [r.rule.name, [r.rule.points, r.rule.durationSeconds]]));
		expect(byName).toEqual({
			"forgot-password": [3, 900],
			login: [10, 300],
			"signup-codes-reset": [5, 900],
			"confirm-resend": [3, 900],
			"code-verification": [10, 900],
			"google-wallet": [20, 300],
			checkout: [30, 60],
		});
	});

	it("matches endpoint rules by method and route path, in any case, with or without a trailing slash", () => {
		const limiter = memory();
		const cases: Array<[string, string, string | null]> = [
			["POST", "/auth/forgot/password", "forgot-password"],
			["POST", "/AUTH/Forgot/Password/", "forgot-password"],
			["post", "/auth/email/login", "login"],
			["POST", "/auth/email/login/send-code", "signup-codes-reset"],
			["POST", "/auth/email/register", "signup-codes-reset"],
			["POST", "/auth/email/register/send-code", "signup-codes-reset"],
			["POST", "/auth/reset/password", "signup-codes-reset"],
			["POST", "/auth/email/confirm/resend", "confirm-resend"],
			["POST", "/auth/email/register/verify-code", "code-verification"],
			["POST", "/auth/email/login/verify-code", "code-verification"],
			["POST", "/api-keys/test", "code-verification"],
			["POST", "/auth/google/login", "google-wallet"],
			["POST", "/auth/wallet/challenge", "google-wallet"],
			["POST", "/pay/:slug/wallet/verify", "google-wallet"],
			["POST", "/widgets/:id/checkout", "checkout"],
			["POST", "/pay/:slug/confirm", "checkout"],
			["POST", "/pay/pl_abc/cancel", "checkout"],
			["GET", "/auth/email/login", null],
			["POST", "/auth/email/confirm/resend/status", null],
			["POST", "/auth/email/login/extra", null],
			["POST", "/x/auth/email/login", null],
			["POST", "/pay/:slug", null],
			["POST", "/pay/a/b/confirm", null],
			["GET", "/", null],
		];
		for (const [method, path, name] of cases) {
			expect({ method, path, rule: limiter.endpointRule(method, path)?.name ?? null }).toEqual({ method, path, rule: name });
		}
	});

	it("counts down and reports the window's end as Unix seconds", async () => {
		const now = 1_700_000_000_123;
		const limiter = memory(1, () => now);
		const rule = { name: "unit-a", points: 3, durationSeconds: 60 };
		const states = [];
		for (let i = 0; i < 3; i++) states.push(await limiter.consume(rule, "k"));
		expect(states.map(s => s.remaining)).toEqual([2, 1, 0]);
		for (const s of states) {
			expect(s.limit).toBe(3);
			// The window is measured from the first request by the limiter's own clock; reported from ours.
			expect(s.resetAt).toBeGreaterThan(Math.floor(now / 1000));
			expect(s.resetAt).toBeLessThanOrEqual(Math.ceil(now / 1000) + 60);
		}
		const err = await limiter.consume(rule, "k").catch(e => e);
		expect(err).toBeInstanceOf(RateLimitExceededError);
		expect(err.message).toBe("ThrottlerException: Too Many Requests");
		expect(err.retryAfterSeconds).toBeGreaterThanOrEqual(1);
		expect(err.retryAfterSeconds).toBeLessThanOrEqual(60);
		expect(err.state).toMatchObject({ limit: 3, remaining: 0 });
		// Other keys and other rules have their own counters.
		expect((await limiter.consume(rule, "other")).remaining).toBe(2);
		expect((await limiter.consume({ name: "unit-b", points: 3, durationSeconds: 60 }, "k")).remaining).toBe(2);
	});

	it("scales every limit, never below one request", async () => {
		const half = memory(0.5);
		expect((await half.consume({ name: "s1", points: 10, durationSeconds: 60 }, "k")).limit).toBe(5);
		const tiny = memory(0.001);
		const rule = { name: "s2", points: 10, durationSeconds: 60 };
		expect((await tiny.consume(rule, "k")).limit).toBe(1);
		await expect(tiny.consume(rule, "k")).rejects.toBeInstanceOf(RateLimitExceededError);
		const big = memory(1000);
		expect((await big.consume(PROFILE_RULES.anonymous, "k")).limit).toBe(10_000);
	});

	it("opens a new window when the old one ends", async () => {
		const limiter = memory();
		const rule = { name: "short", points: 1, durationSeconds: 1 };
		await limiter.consume(rule, "k");
		const err = await limiter.consume(rule, "k").catch(e => e);
		expect(err.retryAfterSeconds).toBe(1);
		await new Promise(r => setTimeout(r, 1100));
		expect((await limiter.consume(rule, "k")).remaining).toBe(0);
	});

	it("knows its mode", () => {
		expect(new GatewayRateLimiter({ mode: "off", redis: null, keyPrefix: "", scale: 1 }).enabled).toBe(false);
		expect(new GatewayRateLimiter({ mode: "ip", redis: null, keyPrefix: "", scale: 1 })).toMatchObject({ enabled: true, mode: "ip" });
	});

	it("reports the tightest of the limits a request passed", () => {
		expect(rateLimitHeaders([])).toEqual({});
		expect(
			rateLimitHeaders([
				{ limit: 600, remaining: 590, resetAt: 1000 },
				{ limit: 3, remaining: 1, resetAt: 2000 },
				{ limit: 100, remaining: 50, resetAt: 1500 },
			]),
		).toEqual({ "X-RateLimit-Limit": "3", "X-RateLimit-Remaining": "1", "X-RateLimit-Reset": "2000" });
	});

	it("keys IPv4 by address and IPv6 by /64", () => {
		const cases: Array<[string, string]> = [
			["203.0.113.9", "203.0.113.9"],
			["::ffff:203.0.113.9", "203.0.113.9"],
			["::FFFF:203.0.113.9", "203.0.113.9"],
			["2001:db8:85a3:8d3:1319:8a2e:370:7348", "2001:db8:85a3:8d3::/64"],
			["2001:0db8:85a3:08d3:ffff:ffff:ffff:ffff", "2001:db8:85a3:8d3::/64"],
			["2001:DB8:85A3:8D3::1", "2001:db8:85a3:8d3::/64"],
			["2001:db8::1", "2001:db8:0:0::/64"],
			["2001:db8:0:0:1::", "2001:db8:0:0::/64"],
			["::1", "0:0:0:0::/64"],
			["fe80::1%eth0", "fe80:0:0:0::/64"],
			["unknown", "unknown"],
		];
		for (const [ip, key] of cases) expect({ ip, key: limitKeyForIp(ip) }).toEqual({ ip, key });
	});
});
