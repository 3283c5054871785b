/**
 * The gateway in front of the real services (whatever this node runs): routes are there as soon as
 * the node has started, the spec's sensitive routes get their limits, and a real sign-in is
 * resolved, limited and refused after logout exactly as the gateway contract says.
 */
import { startNode, TestNode } from "../helpers/harness";
import { signUp } from "./auth.helpers";

describe("gateway in front of the real services", () => {
	let node: TestNode;
	beforeAll(async () => {
		node = await startNode({ env: { RATE_LIMIT_SCALE: "1", TRUST_PROXY: "1" } });
	});
	afterAll(async () => node?.stop());

	let ipCounter = 0;
	const freshIp = () => `198.51.100.${++ipCounter}`;

	it("answers the services' routes as soon as the node has started", async () => {
		// No waiting: startNode returned and the first request is served by its action.
		const res = await node.http("POST", "/auth/email/confirm/resend/status", { body: {}, headers: { "X-Forwarded-For": freshIp() } });
		expect(res.status).toBe(400);
		expect(res.body.errors).toEqual({ email: "required" });
	});

	it("gives every sensitive auth route of the spec its per-IP limit", async () => {
		const api = node.broker.getLocalService("api") as unknown as {
			aliases: Array<{ method: string; fullPath: string; action: string }>;
			limiter: { endpointRule(method: string, path: string): { name: string; points: number } | null };
		};
		const expected: Record<string, string> = {
			"/auth/forgot/password": "forgot-password",
			"/auth/email/login": "login",
			"/auth/email/register": "signup-codes-reset",
			"/auth/email/register/send-code": "signup-codes-reset",
			"/auth/email/login/send-code": "signup-codes-reset",
			"/auth/reset/password": "signup-codes-reset",
			"/auth/email/confirm/resend": "confirm-resend",
			"/auth/email/register/verify-code": "code-verification",
			"/auth/email/login/verify-code": "code-verification",
			"/auth/google/login": "google-wallet",
			"/api-keys/test": "code-verification",
		};
		for (const [path, rule] of Object.entries(expected)) {
			const alias = api.aliases.find(a => a.method === "POST" && a.fullPath === `/api/v1${path}`);
			expect({ path, routed: !!alias }).toEqual({ path, routed: true });
			expect({ path, rule: api.limiter.endpointRule("POST", path)?.name }).toEqual({ path, rule });
		}
		const ip = freshIp();
		for (let i = 0; i < 3; i++) {
			const res = await node.http("POST", "/auth/forgot/password", { body: { email: "not-an-email" }, headers: { "X-Forwarded-For": ip } });
			expect(res.status).toBe(400);
		}
		const limited = await node.http("POST", "/auth/forgot/password", { body: { email: "someone@example.com" }, headers: { "X-Forwarded-For": ip } });
		expect(limited.status).toBe(429);
		expect(limited.body.message).toBe("ThrottlerException: Too Many Requests");
		expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(800);
	});

	it("resolves a real session, limits the user to 100 a minute, and refuses the token right after logout", async () => {
		const ip = freshIp();
		const account = await signUp(node);
		const me = await node.http("GET", "/auth/me", { token: account.token, headers: { "X-Forwarded-For": ip } });
		expect(me.status).toBe(200);
		expect(me.body.id).toBe(account.user.id);
		expect(me.headers.get("x-ratelimit-limit")).toBe("100");
		const remaining = Number(me.headers.get("x-ratelimit-remaining"));
		for (let sent = 0; sent < remaining; sent += 20) {
			const batch = await Promise.all(
				Array.from({ length: Math.min(20, remaining - sent) }, () => node.http("GET", "/auth/me", { token: account.token, headers: { "X-Forwarded-For": freshIp() } })),
			);
			expect(batch.every(r => r.status === 200)).toBe(true);
		}
		const throttled = await node.http("GET", "/auth/me", { token: account.token, headers: { "X-Forwarded-For": ip } });
		expect(throttled.status).toBe(429);

		const other = await signUp(node);
		const before = await node.http("GET", "/auth/me", { token: other.token, headers: { "X-Forwarded-For": ip } });
		expect(before.status).toBe(200);
		const logout = await node.http("POST", "/auth/logout", { token: other.token, body: {}, headers: { "X-Forwarded-For": ip } });
		expect(logout.status).toBe(204);
		const after = await node.http("GET", "/auth/me", { token: other.token, headers: { "X-Forwarded-For": ip } });
		expect(after.status).toBe(401);
		expect(after.body).toEqual({ statusCode: 401, message: "Session ended", error: "Unauthorized" });
	});

	it("resolves a real API key, limits it to 100 a minute, and refuses it right after revocation", async () => {
		const owner = await signUp(node);
		const orgs = await node.http("GET", "/organizations", { token: owner.token });
		expect(orgs.status).toBe(200);
		const sandbox = orgs.body.find((o: { mode: string }) => o.mode === "sandbox");
		expect(sandbox).toBeDefined();
		const created = await node.http("POST", `/organizations/${sandbox.id}/api-keys`, { token: owner.token, body: { name: "gateway test" } });
		expect(created.status).toBe(201);
		const key = { key: created.body.key as string, secret: created.body.secret as string };

		const me = await node.http("GET", "/api-keys/me", { key, headers: { "X-Forwarded-For": freshIp() } });
		expect(me.status).toBe(200);
		expect(me.body).toEqual({ id: created.body.apiKey.id, organizationId: sandbox.id, mode: "sandbox" });
		expect(me.headers.get("x-ratelimit-limit")).toBe("100");
		const remaining = Number(me.headers.get("x-ratelimit-remaining"));
		for (let sent = 0; sent < remaining; sent += 25) {
			const batch = await Promise.all(
				Array.from({ length: Math.min(25, remaining - sent) }, () => node.http("GET", "/api-keys/me", { key, headers: { "X-Forwarded-For": freshIp() } })),
			);
			expect(batch.every(r => r.status === 200)).toBe(true);
		}
		expect((await node.http("GET", "/api-keys/me", { key, headers: { "X-Forwarded-For": freshIp() } })).status).toBe(429);

		const second = await node.http("POST", `/organizations/${sandbox.id}/api-keys`, { token: owner.token, body: { name: "to revoke" } });
		const other = { key: second.body.key as string, secret: second.body.secret as string };
		expect((await node.http("GET", "/api-keys/me", { key: other })).status).toBe(200);
		const revoked = await node.http("POST", `/api-keys/${second.body.apiKey.id}/revoke`, { token: owner.token, body: {} });
		expect(revoked.status).toBe(200);
		const after = await node.http("GET", "/api-keys/me", { key: other });
		expect(after.status).toBe(401);
		expect(after.body).toEqual({ statusCode: 401, message: "Invalid API key", error: "Unauthorized" });
	});
});
