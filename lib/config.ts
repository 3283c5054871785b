/**
 * The configuration contract (docs/configuration.md): every setting comes from the environment
 * (a `.env` file is read when present), never from code changes. `loadConfig(env)` is pure
 * apart from the development-secrets file, so tests build configs from plain objects.
 */
import fs from "node:fs";
import path from "node:path";
import crypto from "node:crypto";
import { EnvVars, bool, httpUrl, int, list, num } from "./env";
import { PaymentsConfig, paymentsConfigFromEnv } from "./payments/config";
import { PricingConfig, parsePricingConfig } from "./pricing/config";
import { WebhooksConfig, webhooksConfigFromEnv } from "./webhooks/config";
import { WatchersConfig, watchersConfigFromEnv } from "./watchers/config";
import { WithdrawalsConfig, withdrawalsConfigFromEnv } from "./withdrawals/config";
import { SweeperConfig, sweeperConfigFromEnv } from "./sweeps/config";

export type RateLimitMode = "identity" | "ip" | "off";

export interface AppConfig {
	env: "development" | "production" | "test";
	port: number;
	dataDir: string;
	databaseUrl: string;
	redisUrl: string | null;
	transporter: string | null;
	services: string[] | null;
	publicUrl: string;
	secrets: { jwt: string; refresh: string; master: string };
	paymentsWebhookSecret: string | null;
	/** Payment window, expiry sweep, open checkouts per link, bridge fee model (lib/payments/config.ts). */
	payments: PaymentsConfig;
	/** The price feed (lib/pricing/config.ts); tests replace it at run time with `pricing.configureFeed`. */
	pricing: PricingConfig;
	/** The hosted pay page's event stream (docs/pay-page.md). */
	payPage: { eventsPollMs: number };
	/** Outbound delivery, logs and retention (lib/webhooks/config.ts). */
	webhooks: WebhooksConfig;
	/** Chain watchers: RPC URLs per network, leases, polling (lib/watchers/config.ts). */
	watchers: WatchersConfig;
	/** The withdrawals ledger's feed (lib/withdrawals/config.ts). */
	withdrawals: WithdrawalsConfig;
	/** The automatic EVM sweeper (lib/sweeps/config.ts). */
	sweeper: SweeperConfig;
	/** BIP-39 mnemonic of the HD master seed for deposit addresses; unset: generated once into DATA_DIR/hd-seed.enc. */
	masterSeed: string | null;
	rateLimit: RateLimitMode;
	/** Multiplies every rate limit; tests raise it so unrelated suites never hit a limit. */
	rateLimitScale: number;
	/** Trust X-Forwarded-For for the client IP (only behind a proxy you control). */
	trustProxy: boolean;
	/** How many proxies in front of the gateway append to X-Forwarded-For (0 when trustProxy is false). */
	trustProxyHops: number;
	/** Origins allowed to call the API from a browser (CORS); empty: no CORS headers; ["*"]: any. */
	corsOrigins: string[];
	bcryptRounds: number;
	tokenTtlSeconds: number;
	refreshTtlSeconds: number;
	mailgun: { apiKey: string; domain: string; url: string | null; from: string } | null;
	recaptcha: { secret: string; verifyUrl: string; minScore: number } | null;
	google: { clientIds: string[]; jwksUrl: string; issuers: string[] };
	admin: { email: string; password: string } | null;
	upload: { maxBytes: number; allowedTypes: string[] };
	logLevel: string;
	logRequests: boolean;
	metrics: boolean;
	/** The node's /healthz and /readyz endpoint (lib/health.ts); port null: off. */
	health: HealthConfig;
	/** STOP_TIMEOUT_MS: the longest a SIGTERM/SIGINT stop may take before the process exits anyway (lib/start.ts). */
	stopTimeoutMs: number;
	tracing: boolean;
	/** Error tracking with Sentry (lib/error-tracking.ts, docs/error-tracking.md); `dsn` null: off. */
	errorTracking: ErrorTrackingConfig;
	cacher: "redis" | "memory";
	/** Key prefix for Redis keys, so several deployments (or test runs) can share one Redis. */
	redisPrefix: string;
	/** Contract of the test stablecoin deployed on the local development chain (docs/networks.md). */
	testUsdcAddress?: string | null;
}

export type Env = EnvVars;

export interface ErrorTrackingConfig {
	dsn: string | null;
	/** SENTRY_ENVIRONMENT; default the node's environment (NODE_ENV). */
	environment: string;
	/** SENTRY_RELEASE; null: `<package name>@<version>`. */
	release: string | null;
}

export interface HealthConfig {
	/** HEALTH_PORT: 0 picks a free port; null (`off`) serves no health endpoint. */
	port: number | null;
	host: string;
}

const DEFAULT_UPLOAD_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf", "text/plain", "text/csv"];

/** HEALTH_PORT / HEALTH_HOST (docs/deployment.md "Health checks"). */
function healthConfig(env: Env): HealthConfig {
	const raw = (env.HEALTH_PORT ?? "").trim().toLowerCase();
	if (raw !== "" && raw !== "off" && !(/^\d+$/.test(raw) && Number(raw) <= 65535)) {
		throw new Error(`Configuration: HEALTH_PORT must be a port number from 0 to 65535 or "off", got "${env.HEALTH_PORT}"`);
	}
	const port = raw === "off" ? null : raw === "" ? 3031 : Number(raw);
	return { port, host: env.HEALTH_HOST?.trim() || "0.0.0.0" };
}

/** TRUST_PROXY: false/0 (default), true (one proxy), or the number of proxies in front. */
function proxyHops(value: string | undefined): number {
	if (value === undefined || value.trim() === "") return 0;
	const v = value.trim().toLowerCase();
	if (/^\d+$/.test(v)) return int("TRUST_PROXY", v, 0, 0, 10);
	if (["1", "true", "yes", "on"].includes(v)) return 1;
	if (["0", "false", "no", "off"].includes(v)) return 0;
	throw new Error(`Configuration: TRUST_PROXY must be true, false or a number of proxies, got "${value}"`);
}

/** CORS_ORIGINS: `*`, or origins (`https://dash.example.com`, wildcards like `https://*.example.com`); a path or trailing slash is dropped. */
function origins(value: string | undefined): string[] {
	return list(value).map(o => (o === "*" ? o : new URL(httpUrl("CORS_ORIGINS", o)).origin));
}

function evmAddress(name: string, value: string | undefined): string | null {
	const v = (value || "").trim();
	if (!v) return null;
	if (!/^0x[0-9a-fA-F]{40}$/.test(v)) throw new Error(`Configuration: ${name} must be an EVM address (0x and 40 hex digits), got "${value}"`);
	return v;
}

/** SENTRY_DSN (`https://<public key>@<host>/<project id>`), SENTRY_ENVIRONMENT, SENTRY_RELEASE. The DSN is never echoed. */
function errorTrackingFromEnv(env: Env, nodeEnv: AppConfig["env"]): ErrorTrackingConfig {
	const raw = env.SENTRY_DSN?.trim() || "";
	let dsn: string | null = null;
	if (raw) {
		let url: URL | null = null;
		try {
			url = new URL(raw);
		} catch {
			url = null;
		}
		if (!url || !["http:", "https:"].includes(url.protocol) || !url.username || !/\/[^/]+$/.test(url.pathname)) {
			throw new Error("Configuration: SENTRY_DSN must be a Sentry DSN, https://<public key>@<host>/<project id>");
		}
		dsn = raw;
	}
	// Sentry's rules for these names: no whitespace or slashes, bounded length.
	const environment = env.SENTRY_ENVIRONMENT?.trim() || nodeEnv;
	if (!/^[^\s/\\]{1,64}$/.test(environment)) throw new Error(`Configuration: SENTRY_ENVIRONMENT must be 1 to 64 characters without spaces or slashes, got "${environment}"`);
	const release = env.SENTRY_RELEASE?.trim() || null;
	if (release !== null && (!/^[^\s/\\]{1,200}$/.test(release) || release === "." || release === "..")) {
		throw new Error(`Configuration: SENTRY_RELEASE must be 1 to 200 characters without spaces or slashes, got "${release}"`);
	}
	return { dsn, environment, release };
}

/** Signing and encryption secrets shorter than this are refused in production. */
const MIN_SECRET_LENGTH = 32;

/** Reads `.env` (KEY=VALUE lines) into an object; the process environment wins over it. */
export function readDotEnv(file = path.resolve(process.cwd(), ".env")): Env {
	if (!fs.existsSync(file)) return {};
	// dotenv parses the file format; we merge ourselves so the real environment takes precedence.
	// eslint-disable-next-line @typescript-eslint/no-require-imports
	const dotenv = require("dotenv") as typeof import("dotenv");
	return dotenv.parse(fs.readFileSync(file));
}

/**
 * Development secrets are generated once and kept in DATA_DIR so tokens survive restarts;
 * production must configure them explicitly.
 */
function resolveSecrets(env: Env, dataDir: string, production: boolean): AppConfig["secrets"] {
	const given = { jwt: env.AUTH_JWT_SECRET, refresh: env.AUTH_REFRESH_SECRET, master: env.MASTER_KEY };
	const names = { jwt: "AUTH_JWT_SECRET", refresh: "AUTH_REFRESH_SECRET", master: "MASTER_KEY" } as const;
	const missing = (Object.keys(given) as Array<keyof typeof given>).filter(k => !given[k]).map(k => names[k]);
	if (missing.length === 0) {
		if (production) {
			const short = (Object.keys(given) as Array<keyof typeof given>).filter(k => (given[k] as string).length < MIN_SECRET_LENGTH).map(k => names[k]);
			if (short.length) throw new Error(`Configuration: ${short.join(", ")} must be at least ${MIN_SECRET_LENGTH} characters in production`);
		}
		return given as AppConfig["secrets"];
	}
	if (production) {
		throw new Error(`Configuration: AUTH_JWT_SECRET, AUTH_REFRESH_SECRET and MASTER_KEY are required in production (missing: ${missing.join(", ")})`);
	}
	const file = path.join(dataDir, "secrets.json");
	let stored: Partial<AppConfig["secrets"]> = {};
	if (fs.existsSync(file)) {
		try {
			stored = JSON.parse(fs.readFileSync(file, "utf8"));
		} catch {
			throw new Error(`Configuration: ${file} is not valid JSON; fix or remove it (removing it invalidates existing tokens and encrypted secrets)`);
		}
	}
	const secrets = {
		jwt: given.jwt || stored.jwt || crypto.randomBytes(32).toString("hex"),
		refresh: given.refresh || stored.refresh || crypto.randomBytes(32).toString("hex"),
		master: given.master || stored.master || crypto.randomBytes(32).toString("hex"),
	};
	if (!stored.jwt || !stored.refresh || !stored.master) {
		fs.mkdirSync(dataDir, { recursive: true });
		fs.writeFileSync(file, JSON.stringify(secrets, null, 2), { mode: 0o600 });
	}
	return secrets;
}

/**
 * Production without PAYMENTS_WEBHOOK_SECRET: inbound POST /webhooks answers 503 instead of
 * taking unsigned events, which anyone could post (docs/webhooks.md "Inbound events").
 */
export function inboundWebhooksRefused(config: Pick<AppConfig, "env" | "paymentsWebhookSecret">): boolean {
	return config.env === "production" && !config.paymentsWebhookSecret;
}

/** Settings a node runs with that turn something off: logged once when it starts (lib/node.ts). */
export function startupWarnings(config: AppConfig, services: string[]): string[] {
	const out: string[] = [];
	if (services.includes("webhooks") && inboundWebhooksRefused(config)) {
		out.push("PAYMENTS_WEBHOOK_SECRET is not set: inbound POST /webhooks answers 503 and takes no event until it is (production refuses unsigned events)");
	}
	return out;
}

/**
 * The environment a node process starts with: `.env` under the real environment. Under
 * NODE_ENV=test the process's environment alone: tests give every node its settings explicitly, so
 * a developer's `.env` (a live price feed, another database) never reaches a test node.
 */
export function processEnvironment(processEnv: Env = process.env, dotEnvFile?: string): Env {
	if (processEnv.NODE_ENV === "test") return { ...processEnv };
	return { ...readDotEnv(dotEnvFile), ...processEnv };
}

/**
 * TRANSPORTER as given. Moleculer's TCP transporter has no authentication and no encryption, and
 * whoever reaches a node's TCP port can call the internal money actions; production refuses it
 * unless TCP_ALLOW_INSECURE=true says the nodes share a private network nothing else reaches
 * (docs/deployment.md "Security").
 */
function transporterUrl(env: Env, production: boolean): string | null {
	const url = env.TRANSPORTER?.trim() || null;
	const tcp = url === "tcp" || !!url?.startsWith("tcp://");
	if (tcp && production && !bool("TCP_ALLOW_INSECURE", env.TCP_ALLOW_INSECURE, false)) {
		throw new Error("Configuration: TRANSPORTER=tcp has no authentication or encryption and is refused in production; use NATS or Kafka with credentials and TLS, or set TCP_ALLOW_INSECURE=true if every node is on a private network nothing else reaches");
	}
	return url;
}

export function loadConfig(envIn: Env = processEnvironment()): AppConfig {
	const env = envIn;
	const nodeEnv = env.NODE_ENV === "production" ? "production" : env.NODE_ENV === "test" ? "test" : "development";
	const production = nodeEnv === "production";
	const port = int("PORT", env.PORT, 3000, 0, 65535);
	const dataDir = path.resolve(env.DATA_DIR || "./data");
	const rateLimit = (env.RATE_LIMIT || "identity").trim().toLowerCase() as RateLimitMode;
	if (!["identity", "ip", "off"].includes(rateLimit)) {
		throw new Error(`Configuration: RATE_LIMIT must be identity, ip or off, got "${rateLimit}"`);
	}
	const redisUrl = env.REDIS_URL || null;
	const rateLimitScale = num("RATE_LIMIT_SCALE", env.RATE_LIMIT_SCALE, 1);
	if (!(rateLimitScale > 0)) throw new Error(`Configuration: RATE_LIMIT_SCALE must be a positive number, got "${env.RATE_LIMIT_SCALE}"`);
	const trustProxyHops = proxyHops(env.TRUST_PROXY);
	const minScore = num("RECAPTCHA_MIN_SCORE", env.RECAPTCHA_MIN_SCORE, 0.5, 0, 1);
	return {
		env: nodeEnv,
		port,
		dataDir,
		databaseUrl: env.DATABASE_URL || `sqlite:${path.join(dataDir, "gateway.sqlite")}`,
		redisUrl,
		transporter: transporterUrl(env, production),
		services: env.SERVICES ? list(env.SERVICES) : null,
		publicUrl: httpUrl("PUBLIC_URL", env.PUBLIC_URL || `http://localhost:${port}`).replace(/\/+$/, ""),
		secrets: resolveSecrets(env, dataDir, production),
		paymentsWebhookSecret: env.PAYMENTS_WEBHOOK_SECRET || null,
		payments: paymentsConfigFromEnv(env),
		pricing: parsePricingConfig(env),
		payPage: { eventsPollMs: int("PAY_EVENTS_POLL_MS", env.PAY_EVENTS_POLL_MS, 30_000, 100, 600_000) },
		webhooks: webhooksConfigFromEnv(env, production),
		watchers: watchersConfigFromEnv(env),
		withdrawals: withdrawalsConfigFromEnv(env, production),
		sweeper: sweeperConfigFromEnv(env),
		masterSeed: env.MASTER_SEED?.trim() || null,
		rateLimit,
		rateLimitScale,
		trustProxy: trustProxyHops > 0,
		trustProxyHops,
		corsOrigins: origins(env.CORS_ORIGINS),
		// bcrypt's own bounds; tests use 4 for speed.
		bcryptRounds: int("BCRYPT_ROUNDS", env.BCRYPT_ROUNDS, 10, 4, 31),
		tokenTtlSeconds: int("AUTH_TOKEN_TTL", env.AUTH_TOKEN_TTL, 3600, 1),
		refreshTtlSeconds: int("AUTH_REFRESH_TTL", env.AUTH_REFRESH_TTL, 30 * 24 * 3600, 1),
		mailgun:
			env.MAILGUN_API_KEY && env.MAILGUN_DOMAIN
				? {
						apiKey: env.MAILGUN_API_KEY,
						domain: env.MAILGUN_DOMAIN,
						url: env.MAILGUN_URL || null,
						from: env.MAIL_FROM || `Crypto Pay <no-reply@${env.MAILGUN_DOMAIN}>`,
					}
				: null,
		recaptcha: env.RECAPTCHA_SECRET
			? {
					secret: env.RECAPTCHA_SECRET,
					verifyUrl: httpUrl("RECAPTCHA_VERIFY_URL", env.RECAPTCHA_VERIFY_URL || "https://www.google.com/recaptcha/api/siteverify"),
					minScore,
				}
			: null,
		google: {
			clientIds: list(env.GOOGLE_CLIENT_ID),
			jwksUrl: env.GOOGLE_JWKS_URL || "https://www.googleapis.com/oauth2/v3/certs",
			issuers: list(env.GOOGLE_ISSUERS || "https://accounts.google.com,accounts.google.com"),
		},
		admin: env.ADMIN_EMAIL && env.ADMIN_PASSWORD ? { email: env.ADMIN_EMAIL.toLowerCase(), password: env.ADMIN_PASSWORD } : null,
		upload: {
			maxBytes: int("UPLOAD_MAX_BYTES", env.UPLOAD_MAX_BYTES, 5 * 1024 * 1024, 1),
			allowedTypes: env.UPLOAD_ALLOWED_TYPES ? list(env.UPLOAD_ALLOWED_TYPES) : DEFAULT_UPLOAD_TYPES,
		},
		logLevel: env.LOG_LEVEL || (nodeEnv === "test" ? "warn" : "info"),
		logRequests: bool("LOG_REQUESTS", env.LOG_REQUESTS, false),
		metrics: bool("METRICS", env.METRICS, false),
		tracing: bool("TRACING", env.TRACING, false),
		errorTracking: errorTrackingFromEnv(env, nodeEnv),
		health: healthConfig(env),
		stopTimeoutMs: int("STOP_TIMEOUT_MS", env.STOP_TIMEOUT_MS, 30_000, 1000),
		cacher: redisUrl ? "redis" : "memory",
		redisPrefix: env.REDIS_PREFIX || "cpg:",
		testUsdcAddress: evmAddress("TEST_USDC_ADDRESS", env.TEST_USDC_ADDRESS),
	};
}
