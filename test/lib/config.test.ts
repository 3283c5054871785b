import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Env, inboundWebhooksRefused, loadConfig, processEnvironment, readDotEnv, startupWarnings } from "../../lib/config";
import { DEFAULT_FEED_URL } from "../../lib/pricing/config";

const SECRETS = { AUTH_JWT_SECRET: "j".repeat(32), AUTH_REFRESH_SECRET: "r".repeat(32), MASTER_KEY: "m".repeat(32) };

describe("configuration", () => {
	let dataDir: string;
	const load = (env: Env = {}) => loadConfig({ DATA_DIR: dataDir, ...env });

	beforeEach(() => {
		dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-config-"));
	});
	afterEach(() => fs.rmSync(dataDir, { recursive: true, force: true }));

	it("runs embedded with no configuration at all", () => {
		const c = load();
		expect(c).toMatchObject({
			env: "development",
			port: 3000,
			dataDir,
			databaseUrl: `sqlite:${path.join(dataDir, "gateway.sqlite")}`,
			redisUrl: null,
			transporter: null,
			services: null,
			publicUrl: "http://localhost:3000",
			paymentsWebhookSecret: null,
			rateLimit: "identity",
			rateLimitScale: 1,
			trustProxy: false,
			trustProxyHops: 0,
			corsOrigins: [],
			bcryptRounds: 10,
			tokenTtlSeconds: 3600,
			refreshTtlSeconds: 30 * 24 * 3600,
			mailgun: null,
			recaptcha: null,
			admin: null,
			logLevel: "info",
			logRequests: false,
			metrics: false,
			tracing: false,
			cacher: "memory",
			redisPrefix: "cpg:",
		});
		expect(c.upload.maxBytes).toBe(5 * 1024 * 1024);
		expect(c.google.clientIds).toEqual([]);
	});

	it("reads every switch from the environment", () => {
		const c = load({
			PORT: "8080",
			DATABASE_URL: "mysql://u:p@db:3306/cpg",
			REDIS_URL: "redis://cache:6379/1",
			TRANSPORTER: "nats://bus:4222",
			SERVICES: "api, auth ,keys,",
			PUBLIC_URL: "https://pay.example.com/",
			PAYMENTS_WEBHOOK_SECRET: "whsec",
			RATE_LIMIT: "IP",
			RATE_LIMIT_SCALE: "2.5",
			TRUST_PROXY: "2",
			CORS_ORIGINS: "https://dash.example.com/, https://*.admin.example.com:8443/x",
			BCRYPT_ROUNDS: "12",
			LOG_REQUESTS: "true",
			LOG_LEVEL: "debug",
			RECAPTCHA_SECRET: "rs",
			RECAPTCHA_MIN_SCORE: "0.7",
			ADMIN_EMAIL: "Admin@Example.com",
			ADMIN_PASSWORD: "pw",
			REDIS_PREFIX: "x:",
		});
		expect(c).toMatchObject({
			port: 8080,
			databaseUrl: "mysql://u:p@db:3306/cpg",
			redisUrl: "redis://cache:6379/1",
			cacher: "redis",
			transporter: "nats://bus:4222",
			services: ["api", "auth", "keys"],
			publicUrl: "https://pay.example.com",
			paymentsWebhookSecret: "whsec",
			rateLimit: "ip",
			rateLimitScale: 2.5,
			trustProxy: true,
			trustProxyHops: 2,
			corsOrigins: ["https://dash.example.com", "https://*.admin.example.com:8443"],
			bcryptRounds: 12,
			logRequests: true,
			logLevel: "debug",
			recaptcha: { secret: "rs", verifyUrl: "https://www.google.com/recaptcha/api/siteverify", minScore: 0.7 },
			admin: { email: "admin@example.com", password: "pw" },
			redisPrefix: "x:",
		});
	});

	it("accepts the three rate-limit modes and nothing else", () => {
		for (const mode of ["identity", "ip", "off", "Off", " ip "]) expect(load({ RATE_LIMIT: mode }).rateLimit).toBe(mode.trim().toLowerCase());
		for (const bad of ["none", "user", "600", "on"]) expect(() => load({ RATE_LIMIT: bad })).toThrow(/RATE_LIMIT must be identity, ip or off/);
		for (const bad of ["0", "-1", "abc"]) expect(() => load({ RATE_LIMIT_SCALE: bad })).toThrow(/RATE_LIMIT_SCALE/);
	});

	it("reads TRUST_PROXY as a number of proxies", () => {
		expect(load({ TRUST_PROXY: "true" }).trustProxyHops).toBe(1);
		expect(load({ TRUST_PROXY: "yes" }).trustProxy).toBe(true);
		expect(load({ TRUST_PROXY: "3" }).trustProxyHops).toBe(3);
		expect(load({ TRUST_PROXY: "false" })).toMatchObject({ trustProxy: false, trustProxyHops: 0 });
		expect(load({ TRUST_PROXY: "0" }).trustProxy).toBe(false);
		expect(() => load({ TRUST_PROXY: "maybe" })).toThrow(/TRUST_PROXY/);
		expect(() => load({ TRUST_PROXY: "99" })).toThrow(/TRUST_PROXY/);
	});

	it("refuses malformed numbers and URLs with a message naming the variable", () => {
		const cases: Array<[Env, RegExp]> = [
			[{ PORT: "abc" }, /PORT/],
			[{ PORT: "70000" }, /PORT/],
			[{ PORT: "80.5" }, /PORT/],
			[{ BCRYPT_ROUNDS: "3" }, /BCRYPT_ROUNDS/],
			[{ BCRYPT_ROUNDS: "32" }, /BCRYPT_ROUNDS/],
			[{ AUTH_TOKEN_TTL: "0" }, /AUTH_TOKEN_TTL/],
			[{ UPLOAD_MAX_BYTES: "-5" }, /UPLOAD_MAX_BYTES/],
			[{ PUBLIC_URL: "pay.example.com" }, /PUBLIC_URL/],
			[{ PUBLIC_URL: "ftp://pay.example.com" }, /PUBLIC_URL/],
			[{ RECAPTCHA_SECRET: "x", RECAPTCHA_MIN_SCORE: "2" }, /RECAPTCHA_MIN_SCORE/],
			[{ RECAPTCHA_SECRET: "x", RECAPTCHA_VERIFY_URL: "not a url" }, /RECAPTCHA_VERIFY_URL/],
			[{ CORS_ORIGINS: "dash.example.com" }, /CORS_ORIGINS/],
		];
		for (const [env, message] of cases) expect(() => load(env)).toThrow(message);
		expect(load({ PORT: "0" }).port).toBe(0);
		expect(load({ CORS_ORIGINS: "*" }).corsOrigins).toEqual(["*"]);
	});

	describe("secrets", () => {
		it("are required in production, and must be long", () => {
			expect(() => load({ NODE_ENV: "production" })).toThrow(/required in production.*AUTH_JWT_SECRET, AUTH_REFRESH_SECRET, MASTER_KEY/);
			expect(() => load({ NODE_ENV: "production", ...SECRETS, MASTER_KEY: "" })).toThrow(/missing: MASTER_KEY/);
			expect(() => load({ NODE_ENV: "production", ...SECRETS, AUTH_JWT_SECRET: "short" })).toThrow(/AUTH_JWT_SECRET must be at least 32/);
			const c = load({ NODE_ENV: "production", ...SECRETS });
			expect(c.env).toBe("production");
			expect(c.secrets).toEqual({ jwt: SECRETS.AUTH_JWT_SECRET, refresh: SECRETS.AUTH_REFRESH_SECRET, master: SECRETS.MASTER_KEY });
			// Production never writes generated secrets to disk.
			expect(fs.existsSync(path.join(dataDir, "secrets.json"))).toBe(false);
		});

		it("are generated once in development and kept in DATA_DIR", () => {
			const first = load();
			const file = path.join(dataDir, "secrets.json");
			expect(fs.existsSync(file)).toBe(true);
			expect(fs.statSync(file).mode & 0o777).toBe(0o600);
			for (const s of Object.values(first.secrets)) expect(s).toMatch(/^[0-9a-f]{64}$/);
			expect(new Set(Object.values(first.secrets)).size).toBe(3);
			expect(load().secrets).toEqual(first.secrets);
			// A configured secret wins over the stored one; the others stay.
			const mixed = load({ AUTH_JWT_SECRET: "from-env" });
			expect(mixed.secrets).toEqual({ ...first.secrets, jwt: "from-env" });
		});

		it("explain a corrupt secrets file instead of crashing obscurely", () => {
			fs.writeFileSync(path.join(dataDir, "secrets.json"), "{ not json");
			expect(() => load()).toThrow(/secrets\.json is not valid JSON/);
		});

		it("need no file when all are configured", () => {
			load(SECRETS);
			expect(fs.existsSync(path.join(dataDir, "secrets.json"))).toBe(false);
		});
	});

	it("refuses inbound webhooks in production without PAYMENTS_WEBHOOK_SECRET, and warns at start where the webhooks service runs", () => {
		const prod = load({ NODE_ENV: "production", ...SECRETS });
		expect(inboundWebhooksRefused(prod)).toBe(true);
		expect(startupWarnings(prod, ["api", "webhooks"])).toEqual([expect.stringMatching(/^PAYMENTS_WEBHOOK_SECRET is not set: inbound POST \/webhooks answers 503/)]);
		expect(startupWarnings(prod, ["api", "keys"])).toEqual([]);
		const signed = load({ NODE_ENV: "production", ...SECRETS, PAYMENTS_WEBHOOK_SECRET: "whsec" });
		expect(inboundWebhooksRefused(signed)).toBe(false);
		expect(startupWarnings(signed, ["webhooks"])).toEqual([]);
		// Development takes unsigned events (no secret, no check), as before.
		expect(inboundWebhooksRefused(load())).toBe(false);
		expect(startupWarnings(load(), ["webhooks"])).toEqual([]);
	});

	it("reads .env files", () => {
		const file = path.join(dataDir, ".env");
		fs.writeFileSync(file, "PORT=4000\n# comment\nRATE_LIMIT=off\nQUOTED=\"a b\"\n");
		expect(readDotEnv(file)).toEqual({ PORT: "4000", RATE_LIMIT: "off", QUOTED: "a b" });
		expect(readDotEnv(path.join(dataDir, "missing.env"))).toEqual({});
		const c = load(readDotEnv(file));
		expect(c.port).toBe(4000);
		expect(c.rateLimit).toBe("off");
	});
	it("reads every section from a plain environment object", () => {
		const defaults = load();
		expect(defaults.payments).toEqual({ paymentWindowMs: 30 * 60_000, sweepIntervalMs: 30_000, maxOpenCheckouts: 20, bridgeFee: { flatUsd: "0.5", bps: 10 } });
		expect(defaults.pricing).toMatchObject({ feed: "manual", feedUrl: DEFAULT_FEED_URL, apiKey: null, refreshSeconds: 60, timeoutMs: 5000, maxAgeSeconds: 900 });
		expect(defaults.payPage).toEqual({ eventsPollMs: 30_000 });

		const c = load({
			PAYMENT_WINDOW_MINUTES: "45",
			PAYMENTS_SWEEP_SECONDS: "0",
			PAYMENTS_MAX_OPEN_CHECKOUTS: " 5 ",
			BRIDGE_FEE_FLAT_USD: "1.25",
			BRIDGE_FEE_BPS: "30",
			PRICE_FEED: "coingecko",
			PRICE_FEED_URL: "http://127.0.0.1:9999/api/v3/",
			PRICE_FEED_API_KEY: "k",
			PRICE_REFRESH_SECONDS: "1.5",
			PRICE_MAX_AGE_SECONDS: "120",
			PRICE_FEED_IDS: "FOO=foo-token",
			PAY_EVENTS_POLL_MS: "250",
			WEBHOOK_MAX_ATTEMPTS: "5",
			WATCHER_POLL_MS: "100",
			REQUIRED_CONFIRMATIONS_ANVIL_LOCAL: "3",
			WITHDRAWALS_FEED_BATCH: "50",
			SWEEP_BATCH_SIZE: "7",
			EIP7702_ANVIL_LOCAL: "off",
			METRICS: "yes",
			TRACING: "0",
		});
		expect(c.payments).toEqual({ paymentWindowMs: 45 * 60_000, sweepIntervalMs: 0, maxOpenCheckouts: 5, bridgeFee: { flatUsd: "1.25", bps: 30 } });
		expect(c.pricing).toMatchObject({ feed: "coingecko", feedUrl: "http://127.0.0.1:9999/api/v3", apiKey: "k", refreshSeconds: 1.5, maxAgeSeconds: 120 });
		expect(c.pricing.feedIds.FOO).toBe("foo-token");
		expect(c.payPage.eventsPollMs).toBe(250);
		expect(c.webhooks.maxAttempts).toBe(5);
		expect(c.watchers).toMatchObject({ pollMs: 100, requiredConfirmations: { ANVIL_LOCAL: 3 } });
		expect(c.withdrawals.feedBatch).toBe(50);
		expect(c.sweeper.batchSize).toBe(7);
		expect(c.sweeper.eip7702Off.has("ANVIL_LOCAL")).toBe(true);
		expect(c).toMatchObject({ metrics: true, tracing: false });
	});

	it("refuses a bad value of any section with one Configuration: line naming the variable", () => {
		const cases: Env[] = [
			{ PAYMENT_WINDOW_MINUTES: "0" },
			{ PAYMENTS_SWEEP_SECONDS: "soon" },
			{ PAYMENTS_MAX_OPEN_CHECKOUTS: "2.5" },
			{ BRIDGE_FEE_BPS: "10001" },
			{ BRIDGE_FEE_FLAT_USD: "-1" },
			{ PRICE_FEED: "binance" },
			{ PRICE_FEED_URL: "ftp://prices.example" },
			{ PRICE_REFRESH_SECONDS: "0" },
			{ PRICE_FEED_IDS: "ETH" },
			{ PAY_EVENTS_POLL_MS: "50" },
			{ WEBHOOK_TIMEOUT_MS: "abc" },
			{ WATCHER_POLL_MS: "1" },
			{ REQUIRED_CONFIRMATIONS_ANVIL_LOCAL: "0" },
			{ WITHDRAWALS_FEED_BATCH: "0" },
			{ SWEEP_BATCH_SIZE: "1000" },
			{ EIP7702_ANVIL_LOCAL: "sometimes" },
			{ METRICS: "maybe" },
			{ LOG_REQUESTS: "2" },
		];
		for (const env of cases) {
			const [name] = Object.keys(env);
			expect(() => load(env)).toThrow(new RegExp(`^Configuration: ${name}\\b`));
		}
	});

	it("takes the process environment over .env, and leaves .env out under NODE_ENV=test", () => {
		const file = path.join(dataDir, ".env");
		fs.writeFileSync(file, "PRICE_FEED=coingecko\nPORT=4000\n");
		expect(processEnvironment({ PORT: "5000" }, file)).toEqual({ PRICE_FEED: "coingecko", PORT: "5000" });
		expect(processEnvironment({ NODE_ENV: "test", PORT: "5000" }, file)).toEqual({ NODE_ENV: "test", PORT: "5000" });
	});

	it("docs/configuration.md names every variable the configuration reads", () => {
		const root = path.resolve(__dirname, "../..");
		const sources: string[] = [path.join(root, "moleculer.config.ts")];
		const walk = (dir: string) => {
			for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
				const full = path.join(dir, entry.name);
				if (entry.isDirectory() && entry.name !== "dev") walk(full);
				else if (entry.isFile() && entry.name.endsWith(".ts")) sources.push(full);
			}
		};
		walk(path.join(root, "lib"));
		// `env.NAME`, a parser given "NAME", `(env, "NAME"`, and prefixes of per-network variables.
		const patterns = [/\benv\.([A-Z][A-Z0-9_]+)/g, /\b(?:int|num|bool)\("([A-Z][A-Z0-9_]+)"/g, /\(env, "([A-Z][A-Z0-9_]+)"/g, /startsWith\("([A-Z][A-Z0-9_]*_)"\)/g];
		const names = new Set<string>();
		for (const file of sources) {
			const text = fs.readFileSync(file, "utf8");
			for (const re of patterns) for (const m of text.matchAll(re)) names.add(m[1]);
		}
		expect(names.size).toBeGreaterThan(80);
		for (const name of ["PAYMENT_WINDOW_MINUTES", "PRICE_FEED", "PAY_EVENTS_POLL_MS", "RPC_URL_", "KAFKA_SSL"]) expect(names).toContain(name);
		const doc = fs.readFileSync(path.join(root, "docs/configuration.md"), "utf8");
		const missing = [...names].filter(name => !doc.includes(`\`${name}`)).sort();
		expect(missing).toEqual([]);
	});

	it("reads the bridge provider: none by default, http(s) in development, https only in production, the key kept apart", () => {
		expect(load().withdrawals.bridge).toEqual({ url: null, apiKey: null, timeoutMs: 15_000 });
		const dev = load({ BRIDGE_PROVIDER_URL: "http://127.0.0.1:8080/v1/", BRIDGE_PROVIDER_API_KEY: " k ", BRIDGE_TIMEOUT_MS: "5000" });
		expect(dev.withdrawals.bridge).toEqual({ url: "http://127.0.0.1:8080/v1", apiKey: "k", timeoutMs: 5_000 });
		expect(() => load({ BRIDGE_PROVIDER_URL: "ftp://bridge.example" })).toThrow(/BRIDGE_PROVIDER_URL must be an http\(s\) URL/);
		expect(() => load({ BRIDGE_PROVIDER_URL: "not a url" })).toThrow(/BRIDGE_PROVIDER_URL/);
		expect(() => load({ BRIDGE_PROVIDER_URL: "https://user:pw@bridge.example" })).toThrow(/no credentials/);
		expect(() => load({ BRIDGE_TIMEOUT_MS: "10" })).toThrow(/BRIDGE_TIMEOUT_MS/);
		expect(() => load({ NODE_ENV: "production", ...SECRETS, BRIDGE_PROVIDER_URL: "http://bridge.example" })).toThrow(/https URL in production/);
		expect(load({ NODE_ENV: "production", ...SECRETS, BRIDGE_PROVIDER_URL: "https://bridge.example" }).withdrawals.bridge.url).toBe("https://bridge.example");
	});
});

describe("health endpoint configuration", () => {
	const load = (env: Env = {}) => loadConfig({ DATA_DIR: os.tmpdir(), ...SECRETS, ...env });

	it("listens on 0.0.0.0:3031 by default; HEALTH_PORT=0 picks a free port, off disables it", () => {
		expect(load().health).toEqual({ port: 3031, host: "0.0.0.0" });
		expect(load({ HEALTH_PORT: "0", HEALTH_HOST: "127.0.0.1" }).health).toEqual({ port: 0, host: "127.0.0.1" });
		expect(load({ HEALTH_PORT: " OFF " }).health).toEqual({ port: null, host: "0.0.0.0" });
		expect(load({ HEALTH_PORT: "8081" }).health.port).toBe(8081);
	});

	it("refuses anything else, naming the variable", () => {
		for (const bad of ["no", "-1", "65536", "3.5"]) expect(() => load({ HEALTH_PORT: bad })).toThrow(`Configuration: HEALTH_PORT must be a port number from 0 to 65535 or "off", got "${bad}"`);
	});
});

describe("stop bound (STOP_TIMEOUT_MS)", () => {
	const load = (env: Env = {}) => loadConfig({ DATA_DIR: os.tmpdir(), ...SECRETS, ...env });

	it("is 30 s by default, inside the api and core pods' 40 s grace period; settable in ms", () => {
		expect(load().stopTimeoutMs).toBe(30_000);
		expect(load({ STOP_TIMEOUT_MS: "50000" }).stopTimeoutMs).toBe(50_000);
	});

	it("refuses less than a second or junk, naming the variable", () => {
		for (const bad of ["999", "-1", "soon", "1.5"]) expect(() => load({ STOP_TIMEOUT_MS: bad })).toThrow(/STOP_TIMEOUT_MS/);
	});
});
