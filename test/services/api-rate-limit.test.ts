/**
 * Rate limits over HTTP with the real numbers (RATE_LIMIT_SCALE=1): every per-IP endpoint rule
 * of the spec, both profiles, RATE_LIMIT=off, the headers, and counters shared by two gateway
 * nodes through Redis. Clients are told apart by X-Forwarded-For (TRUST_PROXY=1), so each test
 * has its own addresses and buckets.
 */
import type { Context, ServiceSchema } from "moleculer";
import { BACKEND, startNode, TestNode } from "../helpers/harness";
import type { AuthMeta } from "../../lib/meta";
import { ENDPOINT_RULES } from "../../lib/rate-limit";
import { addService, authStub, basic, expectErrorShape, keysStub, signAccess } from "./api.helpers";

/** Every sensitive path the spec's Limits table names (wallet paths: the spec does not fix them). */
const SENSITIVE_PATHS = [
	"/auth/forgot/password",
	"/auth/email/login",
	"/auth/email/register",
	"/auth/email/register/send-code",
	"/auth/email/login/send-code",
	"/auth/reset/password",
	"/auth/email/confirm/resend",
	"/auth/email/register/verify-code",
	"/auth/email/login/verify-code",
	"/api-keys/test",
	"/auth/google/login",
	"/auth/wallet/challenge",
	"/auth/wallet/verify",
	"/widgets/:id/checkout",
	"/pay/:slug/confirm",
	"/pay/:slug/cancel",
];

const RULES: Array<{ name: string; points: number; seconds: number; paths: string[] }> = [
	{ name: "forgot-password", points: 3, seconds: 900, paths: ["/auth/forgot/password"] },
	{ name: "login", points: 10, seconds: 300, paths: ["/auth/email/login"] },
	{
		name: "sign-up, sign-in codes, password reset",
		points: 5,
		seconds: 900,
		paths: ["/auth/email/register", "/auth/email/register/send-code", "/auth/email/login/send-code", "/auth/reset/password"],
	},
	{ name: "confirmation resend", points: 3, seconds: 900, paths: ["/auth/email/confirm/resend"] },
	{ name: "code verification", points: 10, seconds: 900, paths: ["/auth/email/register/verify-code", "/auth/email/login/verify-code", "/api-keys/test"] },
	{ name: "google and wallet", points: 20, seconds: 300, paths: ["/auth/google/login", "/auth/wallet/challenge", "/auth/wallet/verify"] },
	{ name: "checkout", points: 30, seconds: 60, paths: ["/widgets/w-1/checkout", "/pay/pl_abc/confirm", "/pay/pl_xyz/cancel", "/pay/pl_abc/cancel"] },
];

const whoami = (ctx: Context<unknown, AuthMeta>) => ({ user: ctx.meta.user || null, apiKey: ctx.meta.apiKey || null });

/** Stand-ins for the sensitive routes: an optional email, so `{ email: 5 }` is a validation error. */
function limitedService(): ServiceSchema {
	const actions: Record<string, unknown> = {
		open: { rest: "GET /open", handler: whoami },
		jwt: { rest: "GET /mine", auth: "jwt", handler: whoami },
		status: { rest: "POST /auth/email/confirm/resend/status", params: { email: { type: "email", optional: true } }, handler: () => ({ ok: true }) },
	};
	SENSITIVE_PATHS.forEach((path, i) => {
		actions[`route${i}`] = { rest: `POST ${path}`, params: { email: { type: "email", optional: true } }, handler: () => ({ ok: true }) };
	});
	return { name: "limited", settings: { rest: "/" }, actions } as unknown as ServiceSchema;
}

let ipCounter = 0;
/** A fresh client address per call, so tests never share buckets. */
function freshIp(): string {
	ipCounter++;
	return `203.0.${Math.floor(ipCounter / 250)}.${(ipCounter % 250) + 1}`;
}

function from(ip: string, extra: Record<string, string> = {}): Record<string, string> {
	return { "X-Forwarded-For": ip, ...extra };
}

async function startLimited(env: Record<string, string>, shareWith?: TestNode): Promise<TestNode> {
	const node = await startNode({ services: ["api"], env: { RATE_LIMIT_SCALE: "1", TRUST_PROXY: "1", ...env }, shareWith });
	node.broker.createService(authStub().schema);
	await addService(node, limitedService());
	return node;
}

function expectThrottled(res: { status: number; body: any; headers: Headers }, maxSeconds: number): void {
	expect(res.status).toBe(429);
	expect(res.body).toEqual({ statusCode: 429, message: "ThrottlerException: Too Many Requests", error: "Too Many Requests" });
	const retryAfter = Number(res.headers.get("retry-after"));
	expect(Number.isInteger(retryAfter)).toBe(true);
	expect(retryAfter).toBeGreaterThan(0);
	expect(retryAfter).toBeLessThanOrEqual(maxSeconds);
	expect(res.headers.get("x-ratelimit-remaining")).toBe("0");
}

describe("rate limits", () => {
	describe("per-IP endpoint rules (RATE_LIMIT=ip)", () => {
		let node: TestNode;
		beforeAll(async () => {
			node = await startLimited({ RATE_LIMIT: "ip" });
		});
		afterAll(async () => node?.stop());

		it("has a rule for every sensitive path, and only those", () => {
			const limiter = (node.broker.getLocalService("api") as unknown as { limiter: { endpointRule(m: string, p: string): { name: string } | null } }).limiter;
			for (const path of SENSITIVE_PATHS) expect({ path, rule: limiter.endpointRule("POST", path) }).toEqual({ path, rule: expect.any(Object) });
			for (const path of ["/auth/email/confirm/resend/status", "/auth/email/confirm", "/auth/refresh", "/payment_intents", "/pay/:slug"]) {
				expect({ path, rule: limiter.endpointRule("POST", path) }).toEqual({ path, rule: null });
			}
			expect(limiter.endpointRule("GET", "/auth/email/login")).toBeNull();
			expect(new Set(ENDPOINT_RULES.map(r => r.rule.name)).size).toBe(RULES.length);
		});

		for (const rule of RULES) {
			it(`limits ${rule.name} to ${rule.points} per ${rule.seconds / 60} min per IP, before validation`, async () => {
				const ip = freshIp();
				const startedAt = Math.floor(Date.now() / 1000);
				for (let i = 0; i < rule.points; i++) {
					const path = rule.paths[i % rule.paths.length];
					// Every other request is invalid: it still counts.
					const invalid = i % 2 === 1;
					const res = await node.http("POST", path, { body: invalid ? { email: 5 } : {}, headers: from(ip) });
					expect({ i, path, status: res.status }).toEqual({ i, path, status: invalid ? 400 : 200 });
					if (!invalid) {
						expect(res.headers.get("x-ratelimit-limit")).toBe(String(rule.points));
						expect(res.headers.get("x-ratelimit-remaining")).toBe(String(rule.points - i - 1));
						const reset = Number(res.headers.get("x-ratelimit-reset"));
						expect(reset).toBeGreaterThanOrEqual(startedAt + rule.seconds - 1);
						expect(reset).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + rule.seconds + 1);
					}
				}
				for (const path of rule.paths) {
					const res = await node.http("POST", path, { body: {}, headers: from(ip) });
					expectThrottled(res, rule.seconds);
				}
				// Another address is not affected.
				const other = await node.http("POST", rule.paths[0], { body: {}, headers: from(freshIp()) });
				expect(other.status).toBe(200);
			});
		}

		it("counts every spelling of a path that reaches the same route", async () => {
			const ip = freshIp();
			for (const path of ["/auth/forgot/password", "/AUTH/Forgot/Password", "/auth/forgot/password/"]) {
				expect((await node.http("POST", path, { body: {}, headers: from(ip) })).status).toBe(200);
			}
			expectThrottled(await node.http("POST", "/auth/FORGOT/password?x=1", { body: {}, headers: from(ip) }), 900);
		});

		it("answers 429 in the caller's language", async () => {
			const ip = freshIp();
			for (let i = 0; i < 3; i++) await node.http("POST", "/auth/forgot/password", { body: {}, headers: from(ip) });
			const res = await node.http("POST", "/auth/forgot/password", { body: {}, headers: from(ip, { "x-custom-lang": "es" }) });
			expect(res.status).toBe(429);
			expect(res.body.message).toBe("ThrottlerException: Demasiadas solicitudes");
		});

		it("keys clients by the address the trusted proxy saw, not by what the client wrote", async () => {
			const real = freshIp();
			for (const spoofed of ["1.1.1.1", "2.2.2.2", "3.3.3.3"]) {
				expect((await node.http("POST", "/auth/forgot/password", { body: {}, headers: from(`${spoofed}, ${real}`) })).status).toBe(200);
			}
			expectThrottled(await node.http("POST", "/auth/forgot/password", { body: {}, headers: from(`4.4.4.4, ${real}`) }), 900);
		});

		it("falls back to the connection's address when the proxy's entry is not an address", async () => {
			for (const junk of ["not-an-ip", "999.1.1.1", "'; DROP TABLE"]) {
				expect((await node.http("POST", "/auth/forgot/password", { body: {}, headers: from(junk) })).status).toBe(200);
			}
			expectThrottled(await node.http("POST", "/auth/forgot/password", { body: {}, headers: from("unknown") }), 900);
		});

		it("counts an IPv6 /64 as one client", async () => {
			const prefix = `2001:db8:${(ipCounter++).toString(16)}:1`;
			for (const host of ["::1", "::2", ":0:0:0:ffff"]) {
				expect((await node.http("POST", "/auth/forgot/password", { body: {}, headers: from(`${prefix}${host}`) })).status).toBe(200);
			}
			expectThrottled(await node.http("POST", "/auth/forgot/password", { body: {}, headers: from(`${prefix}:abcd:0:0:9`) }), 900);
			const neighbour = await node.http("POST", "/auth/forgot/password", { body: {}, headers: from(`2001:db8:${ipCounter.toString(16)}:2::1`) });
			expect(neighbour.status).toBe(200);
		});

		it("applies 600 a minute per IP to every endpoint in the ip profile", async () => {
			const ip = freshIp();
			const first = await node.http("GET", "/open", { headers: from(ip) });
			expect(first.status).toBe(200);
			expect(first.headers.get("x-ratelimit-limit")).toBe("600");
			expect(first.headers.get("x-ratelimit-remaining")).toBe("599");
			for (let sent = 1; sent < 600; sent += 50) {
				const batch = await Promise.all(Array.from({ length: Math.min(50, 600 - sent) }, () => node.http("GET", "/open", { headers: from(ip) })));
				expect(batch.every(r => r.status === 200)).toBe(true);
			}
			expectThrottled(await node.http("GET", "/open", { headers: from(ip) }), 60);
			// Failing requests of the same address are throttled too.
			expectThrottled(await node.http("GET", "/mine", { headers: from(ip) }), 60);
			expect((await node.http("GET", "/open", { headers: from(freshIp()) })).status).toBe(200);
		});
	});

	describe("identity profile (default)", () => {
		let node: TestNode;
		const keys = keysStub();
		const auth = authStub();
		const KEY = { key: "ak_test_limitkey0000000000000000000000", secret: "sk_test_" + "k".repeat(48) };
		const OTHER_KEY = { key: "ak_test_otherkey0000000000000000000000", secret: "sk_test_" + "o".repeat(48) };

		beforeAll(async () => {
			node = await startNode({ services: ["api"], env: { RATE_LIMIT_SCALE: "1", TRUST_PROXY: "1" } });
			expect(node.config.rateLimit).toBe("identity");
			node.broker.createService(auth.schema);
			node.broker.createService(keys.schema);
			keys.keys.set(`${KEY.key}:${KEY.secret}`, { id: 1, organizationId: "11111111-2222-4333-8444-555555555555", mode: "sandbox" });
			keys.keys.set(`${OTHER_KEY.key}:${OTHER_KEY.secret}`, { id: 2, organizationId: "11111111-2222-4333-8444-555555555555", mode: "sandbox" });
			for (const sid of ["s1", "s2"]) auth.active.add(sid);
			await addService(node, limitedService());
		});
		afterAll(async () => node?.stop());

		it("allows an unauthenticated IP 10 requests a minute", async () => {
			const ip = freshIp();
			for (let i = 0; i < 10; i++) {
				const res = await node.http("GET", "/open", { headers: from(ip) });
				expect(res.status).toBe(200);
				expect(res.headers.get("x-ratelimit-limit")).toBe("10");
				expect(res.headers.get("x-ratelimit-remaining")).toBe(String(9 - i));
			}
			expectThrottled(await node.http("GET", "/open", { headers: from(ip) }), 60);
			// Requests that would fail anyway are throttled as well.
			expectThrottled(await node.http("GET", "/mine", { headers: from(ip) }), 60);
		});

		it("allows a user 100 requests a minute wherever they come from", async () => {
			const token = signAccess(node, { userId: 1, sessionId: "s1" });
			const ipA = freshIp();
			const ipB = freshIp();
			for (let i = 0; i < 100; i += 20) {
				const batch = await Promise.all(Array.from({ length: 20 }, (_, j) => node.http("GET", "/mine", { token, headers: from(j % 2 ? ipA : ipB) })));
				expect(batch.map(r => r.status).every(s => s === 200)).toBe(true);
				expect(batch[0].headers.get("x-ratelimit-limit")).toBe("100");
			}
			expectThrottled(await node.http("GET", "/mine", { token, headers: from(freshIp()) }), 60);
			expectThrottled(await node.http("GET", "/open", { token, headers: from(ipA) }), 60);
			// Another user, and anonymous callers of the same address, have their own budgets.
			const other = await node.http("GET", "/mine", { token: signAccess(node, { userId: 2, sessionId: "s2" }), headers: from(ipA) });
			expect(other.status).toBe(200);
			expect(other.headers.get("x-ratelimit-remaining")).toBe("99");
			expect((await node.http("GET", "/open", { headers: from(ipA) })).status).toBe(200);
		});

		it("allows an API key 100 requests a minute", async () => {
			const ip = freshIp();
			for (let i = 0; i < 100; i += 25) {
				const batch = await Promise.all(
					Array.from({ length: 25 }, () => node.http("GET", "/open", { headers: from(ip, { Authorization: basic(KEY.key, KEY.secret) }) })),
				);
				expect(batch.map(r => r.status).every(s => s === 200)).toBe(true);
				expect(batch.every(r => r.body.apiKey?.id === 1)).toBe(true);
			}
			expectThrottled(await node.http("GET", "/open", { headers: from(ip, { Authorization: basic(KEY.key, KEY.secret) }) }), 60);
			const other = await node.http("GET", "/open", { headers: from(ip, { Authorization: basic(OTHER_KEY.key, OTHER_KEY.secret) }) });
			expect(other.status).toBe(200);
			expect(other.headers.get("x-ratelimit-limit")).toBe("100");
		});

		/** Eleven keys of one organization in the keys stub, as Authorization headers. */
		function keysOfOneOrganization(organizationId: string, tag: string, firstId: number): Array<Record<string, string>> {
			return Array.from({ length: 11 }, (_, i) => {
				const cred = { key: `ak_test_${tag}${String(i).padStart(2, "0")}${"0".repeat(27)}`, secret: "sk_test_" + String(i % 10).repeat(48) };
				keys.keys.set(`${cred.key}:${cred.secret}`, { id: firstId + i, organizationId, mode: "sandbox" });
				return { Authorization: basic(cred.key, cred.secret) };
			});
		}

		it("allows an organization 1000 requests a minute over all its keys (10 x the per-key limit)", async () => {
			const orgKeys = keysOfOneOrganization("22222222-3333-4444-8555-666666666666", "org", 100);
			const ip = freshIp();
			// Ten keys spend their full 100 each: 1000 requests, all within both limits.
			for (let k = 0; k < 10; k++) {
				for (let i = 0; i < 100; i += 50) {
					const batch = await Promise.all(Array.from({ length: 50 }, () => node.http("GET", "/open", { headers: from(ip, orgKeys[k]) })));
					expect(batch.map(r => r.status).every(s => s === 200)).toBe(true);
				}
			}
			// An eleventh key of the same organization has its own 100 left, but the organization has none.
			const eleventh = await node.http("GET", "/open", { headers: from(ip, orgKeys[10]) });
			expectThrottled(eleventh, 60);
			expect(eleventh.headers.get("x-ratelimit-limit")).toBe("1000");
			// Another organization's key is not affected.
			const other = await node.http("GET", "/open", { headers: from(ip, { Authorization: basic(OTHER_KEY.key, OTHER_KEY.secret) }) });
			expect(other.status).toBe(200);
		});

		it("reports the organization's limit when it is the tighter one", async () => {
			const creds = keysOfOneOrganization("33333333-4444-4555-8666-777777777777", "hdr", 200);
			const ip = freshIp();
			for (let k = 0; k < 10; k++) {
				const batch = await Promise.all(Array.from({ length: k < 9 ? 100 : 95 }, () => node.http("GET", "/open", { headers: from(ip, creds[k]) })));
				expect(batch.map(r => r.status).every(s => s === 200)).toBe(true);
			}
			// 995 spent: the new key has 99 left, the organization 4.
			const res = await node.http("GET", "/open", { headers: from(ip, creds[10]) });
			expect(res.status).toBe(200);
			expect([res.headers.get("x-ratelimit-limit"), res.headers.get("x-ratelimit-remaining")]).toEqual(["1000", "4"]);
		});

		it("spends the address's anonymous budget on failed credentials", async () => {
			const ip = freshIp();
			const bad = { Authorization: basic("ak_test_guess", "sk_test_guess") };
			for (let i = 0; i < 10; i++) {
				const res = await node.http("GET", "/open", { headers: from(ip, i % 2 ? bad : { Authorization: "Bearer forged.token.here" }) });
				expect(res.status).toBe(401);
				expectErrorShape(res.body, 401);
			}
			expectThrottled(await node.http("GET", "/open", { headers: from(ip, bad) }), 60);
		});

		it("applies the endpoint rules on top of the profile", async () => {
			const ip = freshIp();
			for (let i = 0; i < 3; i++) {
				const res = await node.http("POST", "/auth/forgot/password", { body: {}, headers: from(ip) });
				expect(res.status).toBe(200);
				// The tighter of the two limits is the one reported.
				expect(res.headers.get("x-ratelimit-limit")).toBe("3");
			}
			expectThrottled(await node.http("POST", "/auth/forgot/password", { body: {}, headers: from(ip) }), 900);
			const open = await node.http("GET", "/open", { headers: from(ip) });
			expect(open.status).toBe(200);
			// Three passed requests spent the profile budget; the one refused by the endpoint rule did not.
			expect(open.headers.get("x-ratelimit-remaining")).toBe("6");
		});

		it("does not count the info endpoint or OPTIONS requests", async () => {
			const ip = freshIp();
			for (let i = 0; i < 15; i++) {
				const info = await node.http("GET", "/", { headers: from(ip) });
				expect(info.status).toBe(200);
				expect(info.headers.get("x-ratelimit-limit")).toBeNull();
				expect((await node.http("OPTIONS", "/open", { headers: from(ip) })).status).toBe(405);
			}
			const open = await node.http("GET", "/open", { headers: from(ip) });
			expect(open.headers.get("x-ratelimit-remaining")).toBe("9");
		});
	});

	describe("RATE_LIMIT=off", () => {
		let node: TestNode;
		beforeAll(async () => {
			node = await startLimited({ RATE_LIMIT: "off" });
		});
		afterAll(async () => node?.stop());

		it("never answers 429 and sends no rate-limit headers", async () => {
			const ip = freshIp();
			for (let i = 0; i < 25; i++) {
				for (const [method, path] of [["POST", "/auth/forgot/password"], ["GET", "/open"], ["POST", "/pay/pl_1/confirm"]]) {
					const res = await node.http(method, path, { body: method === "POST" ? {} : undefined, headers: from(ip) });
					expect(res.status).toBe(200);
					expect(res.headers.get("x-ratelimit-limit")).toBeNull();
					expect(res.headers.get("x-ratelimit-remaining")).toBeNull();
					expect(res.headers.get("x-ratelimit-reset")).toBeNull();
				}
			}
			const bad = await node.http("GET", "/open", { headers: from(ip, { Authorization: "Bearer nope" }) });
			expect(bad.status).toBe(401);
		});
	});

	describe("without TRUST_PROXY", () => {
		let node: TestNode;
		beforeAll(async () => {
			node = await startLimited({ RATE_LIMIT: "ip", TRUST_PROXY: "false" });
		});
		afterAll(async () => node?.stop());

		it("ignores X-Forwarded-For and counts the connection's address", async () => {
			for (let i = 0; i < 3; i++) {
				expect((await node.http("POST", "/auth/forgot/password", { body: {}, headers: from(freshIp()) })).status).toBe(200);
			}
			expectThrottled(await node.http("POST", "/auth/forgot/password", { body: {}, headers: from(freshIp()) }), 900);
		});
	});

	(BACKEND === "mysql" ? describe : describe.skip)("counters shared through Redis", () => {
		let a: TestNode;
		let b: TestNode;
		beforeAll(async () => {
			a = await startLimited({});
			b = await startLimited({}, a);
		});
		afterAll(async () => {
			await b?.stop();
			await a?.stop();
		});

		it("counts requests to two gateway nodes against one budget", async () => {
			expect(a.config.redisUrl).toBeTruthy();
			expect(b.config.redisPrefix).toBe(a.config.redisPrefix);
			const ip = freshIp();
			for (let i = 0; i < 10; i++) {
				const res = await (i % 2 ? b : a).http("GET", "/open", { headers: from(ip) });
				expect(res.status).toBe(200);
				expect(res.headers.get("x-ratelimit-remaining")).toBe(String(9 - i));
			}
			expectThrottled(await a.http("GET", "/open", { headers: from(ip) }), 60);
			expectThrottled(await b.http("GET", "/open", { headers: from(ip) }), 60);
			const login = freshIp();
			for (let i = 0; i < 3; i++) await (i % 2 ? b : a).http("POST", "/auth/forgot/password", { body: {}, headers: from(login) });
			expectThrottled(await b.http("POST", "/auth/forgot/password", { body: {}, headers: from(login) }), 900);
		});
	});
});
