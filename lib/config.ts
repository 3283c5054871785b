/**
 * The configuration contract (docs/configuration.md): every setting comes from the environment
 * (a `.env` file is read when present), never from code changes. `loadConfig(env)` is pure
 * apart from the development-secrets file, so tests build configs from plain objects.
 */
import fs from "node:fs";
import path from "node:path";
import crypto from "node:crypto";

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
	rateLimit: RateLimitMode;
	/** Multiplies every rate limit; tests raise it so unrelated suites never hit a limit. */
	rateLimitScale: number;
	/** Trust X-Forwarded-For for the client IP (only behind a proxy you control). */
	trustProxy: boolean;
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
	tracing: boolean;
	cacher: "redis" | "memory";
	/** Key prefix for Redis keys, so several deployments (or test runs) can share one Redis. */
	redisPrefix: string;
}

export type Env = Record<string, string | undefined>;

const DEFAULT_UPLOAD_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf", "text/plain", "text/csv"];

function bool(value: string | undefined, fallback: boolean): boolean {
	if (value === undefined || value === "") return fallback;
	return ["1", "true", "yes", "on"].includes(value.toLowerCase());
}

function int(name: string, value: string | undefined, fallback: number): number {
	if (value === undefined || value === "") return fallback;
	const n = Number(value);
	if (!Number.isFinite(n)) throw new Error(`Configuration: ${name} must be a number, got "${value}"`);
	return n;
}

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
	const missing = Object.entries(given).filter(([, v]) => !v).map(([k]) => k);
	if (missing.length === 0) return given as AppConfig["secrets"];
	if (production) {
		throw new Error("Configuration: AUTH_JWT_SECRET, AUTH_REFRESH_SECRET and MASTER_KEY are required in production");
	}
	const file = path.join(dataDir, "secrets.json");
	let stored: Partial<AppConfig["secrets"]> = {};
	if (fs.existsSync(file)) stored = JSON.parse(fs.readFileSync(file, "utf8"));
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

export function loadConfig(envIn: Env = { ...readDotEnv(), ...process.env }): AppConfig {
	const env = envIn;
	const nodeEnv = env.NODE_ENV === "production" ? "production" : env.NODE_ENV === "test" ? "test" : "development";
	const production = nodeEnv === "production";
	const port = int("PORT", env.PORT, 3000);
	const dataDir = path.resolve(env.DATA_DIR || "./data");
	const rateLimit = (env.RATE_LIMIT || "identity") as RateLimitMode;
	if (!["identity", "ip", "off"].includes(rateLimit)) {
		throw new Error(`Configuration: RATE_LIMIT must be identity, ip or off, got "${rateLimit}"`);
	}
	const redisUrl = env.REDIS_URL || null;
	return {
		env: nodeEnv,
		port,
		dataDir,
		databaseUrl: env.DATABASE_URL || `sqlite:${path.join(dataDir, "gateway.sqlite")}`,
		redisUrl,
		transporter: env.TRANSPORTER || null,
		services: env.SERVICES ? env.SERVICES.split(",").map(s => s.trim()).filter(Boolean) : null,
		publicUrl: (env.PUBLIC_URL || `http://localhost:${port}`).replace(/\/+$/, ""),
		secrets: resolveSecrets(env, dataDir, production),
		paymentsWebhookSecret: env.PAYMENTS_WEBHOOK_SECRET || null,
		rateLimit,
		rateLimitScale: int("RATE_LIMIT_SCALE", env.RATE_LIMIT_SCALE, 1),
		trustProxy: bool(env.TRUST_PROXY, false),
		bcryptRounds: int("BCRYPT_ROUNDS", env.BCRYPT_ROUNDS, 10),
		tokenTtlSeconds: int("AUTH_TOKEN_TTL", env.AUTH_TOKEN_TTL, 3600),
		refreshTtlSeconds: int("AUTH_REFRESH_TTL", env.AUTH_REFRESH_TTL, 30 * 24 * 3600),
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
					verifyUrl: env.RECAPTCHA_VERIFY_URL || "https://www.google.com/recaptcha/api/siteverify",
					minScore: Number(env.RECAPTCHA_MIN_SCORE || "0.5"),
				}
			: null,
		google: {
			clientIds: (env.GOOGLE_CLIENT_ID || "").split(",").map(s => s.trim()).filter(Boolean),
			jwksUrl: env.GOOGLE_JWKS_URL || "https://www.googleapis.com/oauth2/v3/certs",
			issuers: (env.GOOGLE_ISSUERS || "https://accounts.google.com,accounts.google.com").split(","),
		},
		admin: env.ADMIN_EMAIL && env.ADMIN_PASSWORD ? { email: env.ADMIN_EMAIL.toLowerCase(), password: env.ADMIN_PASSWORD } : null,
		upload: {
			maxBytes: int("UPLOAD_MAX_BYTES", env.UPLOAD_MAX_BYTES, 5 * 1024 * 1024),
			allowedTypes: env.UPLOAD_ALLOWED_TYPES ? env.UPLOAD_ALLOWED_TYPES.split(",").map(s => s.trim()) : DEFAULT_UPLOAD_TYPES,
		},
		logLevel: env.LOG_LEVEL || (nodeEnv === "test" ? "warn" : "info"),
		logRequests: bool(env.LOG_REQUESTS, false),
		metrics: bool(env.METRICS, false),
		tracing: bool(env.TRACING, false),
		cacher: redisUrl ? "redis" : "memory",
		redisPrefix: env.REDIS_PREFIX || "cpg:",
	};
}
