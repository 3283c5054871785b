/**
 * Outages of Redis and of the database, staged with loopback TCP proxies the test cuts (the
 * server looks stopped: connections drop and new ones are refused) and restores.
 *
 * - Redis down: every request still answers, from the database and in-process fallbacks, with a
 *   client that fails a command at once instead of queueing it (no offline queue, no retries);
 *   rate limits still hold, counted per node; the outage is logged once and the recovery once;
 *   afterwards Redis is used again. Also when Redis is down from the start. How fast the answers
 *   are is a latency, not a pass/fail condition: on a loaded machine it says nothing about the
 *   code, so the suite never asserts it (docs/benchmarks.md).
 * - Database down (MySQL): routes that need it answer 503 with Retry-After in the error shape,
 *   the session check of a bearer token included; they recover by themselves.
 */
import Redis from "ioredis";
import type { Context, ServiceSchema } from "moleculer";
import { BACKEND, LogLine, MYSQL_URL, REDIS_URL, TestNode, startNode } from "../helpers/harness";
import { TcpProxy, startTcpProxy, targetOf } from "../helpers/tcp-proxy";
import { IDS, intentBody, startPaymentsNode } from "../e2e/payments.helpers";
import { createUserWithToken, UserWithToken } from "../helpers/users";
import { login, signUp, SignedUp } from "./auth.helpers";

type Key = { key: string; secret: string };

const RECOVERY_WAIT_MS = 15_000;

const sleep = (ms: number) => new Promise(r => setTimeout(r, ms));

let ipCounter = 0;
/** A fresh client address (TRUST_PROXY=1), so per-IP limits of one request never meet another's. */
function freshIp(): Record<string, string> {
	ipCounter++;
	return { "X-Forwarded-For": `198.51.${Math.floor(ipCounter / 250)}.${(ipCounter % 250) + 1}` };
}

async function until<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = RECOVERY_WAIT_MS): Promise<T> {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		const got = await probe();
		if (got) return got;
		if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
		await sleep(100);
	}
}

/** A merchant made through the real endpoints: signed up, a sandbox key. */
async function merchant(node: TestNode): Promise<{ user: SignedUp; key: Key }> {
	const user = await signUp(node);
	const orgs = await node.http("GET", "/organizations", { token: user.token });
	const sandbox = orgs.body.find((o: { mode: string }) => o.mode === "sandbox");
	const created = await node.http("POST", `/organizations/${sandbox.id}/api-keys`, { token: user.token, body: { name: "server" } });
	expect(created.status).toBe(201);
	return { user, key: { key: created.body.key, secret: created.body.secret } };
}

describe("Redis outage", () => {
	let proxy: TcpProxy;
	let node: TestNode;
	let direct: Redis;
	let user: SignedUp;
	let key: Key;
	let admin: UserWithToken;
	const logs: LogLine[] = [];

	beforeAll(async () => {
		proxy = await startTcpProxy(targetOf(REDIS_URL, 6379));
		direct = new Redis(REDIS_URL);
		node = await startPaymentsNode({ via: { redis: url => proxy.through(url) }, logs, env: { TRUST_PROXY: "1", RATE_LIMIT_SCALE: "1" } });
		({ user, key } = await merchant(node));
		admin = await createUserWithToken(node, { role: "admin" });
	});
	afterAll(async () => {
		await proxy?.restore().catch(() => undefined);
		await node?.stop();
		await proxy?.close();
		direct?.disconnect();
	});

	/** One of each: catalogue reads, sign-in, a bearer call, API-key calls, a rate-limited route. */
	async function round(): Promise<Array<{ what: string; status: number }>> {
		const calls: Array<[string, () => ReturnType<TestNode["http"]>]> = [
			["GET /payments/networks", () => node.http("GET", "/payments/networks", { headers: freshIp() })],
			["GET /payments/networks/:id/tokens", () => node.http("GET", `/payments/networks/${IDS.sepolia}/tokens`, { headers: freshIp() })],
			["POST /auth/email/login", () => node.http("POST", "/auth/email/login", { body: { email: user.email, password: user.password }, headers: freshIp() })],
			["GET /auth/me", () => node.http("GET", "/auth/me", { token: user.token })],
			["GET /api-keys/me", () => node.http("GET", "/api-keys/me", { key })],
			["POST /api-keys/test", () => node.http("POST", "/api-keys/test", { body: key, headers: freshIp() })],
			["POST /payment_intents", () => node.http("POST", "/payment_intents", { key, body: intentBody() })],
		];
		const out = [];
		for (const [what, call] of calls) out.push({ what, status: (await call()).status });
		return out;
	}

	const redisLines = (from: number) => logs.slice(from).filter(l => /redis/i.test(l.text) || l.mod === "redis" || l.mod === "cacher");

	it("keeps answering quickly while Redis is down, logs the outage and the recovery once, then uses Redis again", async () => {
		for (let i = 0; i < 3; i++) for (const r of await round()) expect([r.what, r.status]).toEqual([r.what, 200]);
		// Before the cut Redis holds the cache and the counters.
		expect(await direct.keys(`${node.config.redisPrefix}cache*`)).not.toEqual([]);
		expect(await direct.keys(`${node.config.redisPrefix}rl:login:*`)).not.toEqual([]);

		const mark = logs.length;
		await proxy.cut();
		const results = [];
		for (let i = 0; i < 15; i++) results.push(...(await round()));
		expect(results.filter(r => r.status !== 200)).toEqual([]);
		// Failing fast is the client's configuration: a command while disconnected fails at once.
		expect(node.app.redis!.options).toMatchObject({ enableOfflineQueue: false, maxRetriesPerRequest: 0 });

		// Limits still hold while Redis is away, counted by this node: login is 10 per 5 minutes per IP.
		const ip = freshIp();
		const statuses = [];
		for (let i = 0; i < 11; i++) statuses.push((await node.http("POST", "/auth/email/login", { body: { email: user.email, password: user.password }, headers: ip })).status);
		expect(statuses).toEqual([...Array(10).fill(200), 429]);
		// A change whose cache invalidation cannot reach Redis.
		expect((await node.http("PUT", `/price/admin/token/${IDS.sepoliaEth}`, { token: admin.token, body: { priceUsd: "2500" } })).status).toBe(200);

		// Several reconnect attempts later, still one line about the outage and no errors.
		await sleep(3000);
		const during = redisLines(mark);
		expect(during.map(l => l.level)).toEqual(["warn"]);
		expect(during[0].text).toMatch(/Redis unreachable/);
		expect(logs.slice(mark).filter(l => l.level === "error" || l.level === "fatal")).toEqual([]);

		await proxy.restore();
		await until("the recovery log line", async () => redisLines(mark).length > 1);
		await sleep(500);
		const after = redisLines(mark).slice(1);
		expect(after.map(l => [l.level, l.text])).toEqual([["info", expect.stringMatching(/Redis reachable again/)]]);

		// The invalidation missed during the outage clears the cache: no entry from before the change survives.
		await until("the cache cleared", async () => (await direct.keys(`${node.config.redisPrefix}cache*`)).length === 0, 3000);
		// Redis is used again: the cache is written there and counters are kept there.
		expect((await node.http("GET", "/payments/networks", { headers: freshIp() })).status).toBe(200);
		await until("a cache entry in Redis", async () => (await direct.keys(`${node.config.redisPrefix}cache*`)).length > 0, 2000);
		const again = freshIp();
		expect((await node.http("POST", "/auth/email/login", { body: { email: user.email, password: user.password }, headers: again })).status).toBe(200);
		expect(await direct.get(`${node.config.redisPrefix}rl:login:${again["X-Forwarded-For"]}`)).toBe("1");
	});

	it("starts and answers with Redis down from the start, and picks Redis up when it comes", async () => {
		const closed = await startTcpProxy(targetOf(REDIS_URL, 6379));
		await closed.cut();
		const lines: LogLine[] = [];
		const other = await startNode({ services: ["api", "networks"], via: { redis: url => closed.through(url) }, logs: lines });
		try {
			for (let i = 0; i < 30; i++) expect((await other.http("GET", "/payments/networks")).status).toBe(200);
			await sleep(2000);
			expect(lines.filter(l => l.level === "error" || l.level === "fatal")).toEqual([]);
			expect(lines.filter(l => /Redis unreachable/.test(l.text))).toHaveLength(1);
			await closed.restore();
			await until("the recovery log line", async () => lines.some(l => /Redis reachable again/.test(l.text)));
			expect((await other.http("GET", "/payments/networks")).status).toBe(200);
			await until("a cache entry in Redis", async () => (await direct.keys(`${other.config.redisPrefix}cache*`)).length > 0, 2000);
		} finally {
			await other.stop();
			await closed.close();
		}
	});
});

// A database outage needs a database server to lose: SQLite is a file inside the process.
(BACKEND === "mysql" ? describe : describe.skip)("database outage (MySQL)", () => {
	let proxy: TcpProxy;
	let node: TestNode;
	let user: SignedUp;
	let key: Key;

	beforeAll(async () => {
		proxy = await startTcpProxy(targetOf(MYSQL_URL, 3306));
		node = await startPaymentsNode({ via: { database: url => proxy.through(url) } });
		({ user, key } = await merchant(node));
	});
	afterAll(async () => {
		await proxy?.restore().catch(() => undefined);
		await node?.stop();
		await proxy?.close();
	});

	function expectUnavailable(res: Awaited<ReturnType<TestNode["http"]>>, what: string) {
		expect([what, res.status, res.headers.get("retry-after")]).toEqual([what, 503, "5"]);
		expect(res.body).toEqual({ statusCode: 503, message: "Service Unavailable", error: "Service Unavailable" });
	}

	it("answers 503 with Retry-After while the database is unreachable and recovers by itself", async () => {
		// A second session whose token the gateway has never checked: its check needs the database.
		const fresh = (await login(node, user.email, user.password)).body.token as string;
		expect((await node.http("GET", "/auth/me", { token: user.token })).status).toBe(200);
		expect((await node.http("GET", "/api-keys/me", { key })).status).toBe(200);

		await proxy.cut();
		const checks: Array<[string, () => ReturnType<TestNode["http"]>]> = [
			["GET /auth/me (session check)", () => node.http("GET", "/auth/me", { token: fresh })],
			["GET /auth/me", () => node.http("GET", "/auth/me", { token: user.token })],
			["POST /auth/email/login", () => login(node, user.email, user.password)],
			["POST /payment_intents", () => node.http("POST", "/payment_intents", { key, body: intentBody() })],
			["GET /payments/networks?chainType=evm", () => node.http("GET", "/payments/networks", { query: { chainType: "evm" } })],
			["POST /api-keys/test", () => node.http("POST", "/api-keys/test", { body: key })],
		];
		for (let i = 0; i < 2; i++) for (const [what, call] of checks) expectUnavailable(await call(), what);

		await proxy.restore();
		await until("GET /auth/me to answer again", async () => (await node.http("GET", "/auth/me", { token: fresh })).status === 200);
		expect((await node.http("GET", "/auth/me", { token: user.token })).status).toBe(200);
		expect((await login(node, user.email, user.password)).status).toBe(200);
		expect((await node.http("POST", "/payment_intents", { key, body: intentBody() })).status).toBe(200);
		expect((await node.http("GET", "/payments/networks", { query: { chainType: "evm" } })).status).toBe(200);
	});
});

describe("A service whose last node left", () => {
	let node: TestNode;
	const probe = (): ServiceSchema => ({
		name: "probe",
		settings: { rest: "/probe" },
		actions: { read: { rest: "GET /:id", auth: "public", params: { id: "string" }, handler: (ctx: Context<{ id: string }>) => ({ id: ctx.params.id }) } },
	});
	/** The gateway rebuilds its routes (debounced) some time after services change: awaited, never slept. */
	const answers = (path: string, status: number) => until(`GET ${path} to answer ${status}`, async () => {
		const res = await node.http("GET", path);
		return res.status === status && res;
	});

	beforeAll(async () => {
		node = await startNode({ services: ["api"] });
	});
	afterAll(async () => {
		await node?.stop();
	});

	it("keeps its routes: 503 with Retry-After while it is away (not 404), answers again when it is back", async () => {
		let service = node.broker.createService(probe());
		await node.broker.waitForServices(["probe"]);
		expect((await answers("/probe/a", 200)).body).toEqual({ id: "a" });

		await node.broker.destroyService(service);
		const away = await answers("/probe/a", 503);
		expect([away.status, away.headers.get("retry-after")]).toEqual([503, "5"]);
		expect(away.body).toEqual({ statusCode: 503, message: "Service Unavailable", error: "Service Unavailable" });
		// Paths no service ever published stay 404.
		expect((await node.http("GET", "/nothing-here")).status).toBe(404);

		service = node.broker.createService(probe());
		await node.broker.waitForServices(["probe"]);
		expect((await answers("/probe/b", 200)).body).toEqual({ id: "b" });
		await node.broker.destroyService(service);
	});
});
