/**
 * Error tracking with the official Sentry SDK (docs/error-tracking.md). Off unless SENTRY_DSN is
 * set: then `captureError` is a no-op and the SDK is not even loaded (it costs a second of start-up).
 *
 * On, the SDK is kept light: no performance tracing, no OpenTelemetry set-up, none of the
 * integrations that patch http, fetch or database drivers; only error events, linked causes,
 * the runtime context and the console lines before an error as breadcrumbs. Every event and
 * breadcrumb goes through the scrubber below before it leaves the process: no request bodies,
 * headers, cookies or query strings, and nothing that looks like a credential of ours.
 *
 * What is reported (the callers decide): the gateway's 500s (not 4xx, not the 503 of an outage),
 * the failures of the webhook, watcher and sweeper loops (`captureLoopError`: outages are not
 * reported, a repeated failure once per LOOP_REPEAT_MS), and a crash of `npm start`.
 */
import type * as SentryNode from "@sentry/node";
import type { Breadcrumb, ErrorEvent } from "@sentry/node";
import { wordlist } from "@scure/bip39/wordlists/english";
import type { AppConfig, Env } from "./config";
import { isDatabaseUnreachable } from "./db";
import { isServiceUnavailable } from "./errors";
import pkg from "../package.json";

export const FILTERED = "[Filtered]";

/** The same failure of the same loop is reported again only after this long (a loop retries every few seconds). */
export const LOOP_REPEAT_MS = 10 * 60_000;
const LOOP_KEYS_MAX = 1_000;
/** Time the SDK gets to send what is queued when the process stops. */
const FLUSH_TIMEOUT_MS = 2_000;

let sentry: typeof SentryNode | null = null;
const loopReported = new Map<string, number>();

export interface InitOptions {
	/** The environment the node started with: values of secret-looking variables are scrubbed wherever they appear. */
	env?: Env;
	/**
	 * Report uncaught exceptions and unhandled rejections, then exit as Node would (exit code 1).
	 * Only `npm start` (lib/start.ts) sets it: it installs process-wide handlers.
	 */
	processHandlers?: boolean;
}

/**
 * Starts error tracking when SENTRY_DSN is configured; once per process (later calls keep the
 * first set-up until `closeErrorTracking`). Returns whether error tracking is on.
 */
export function initErrorTracking(config: AppConfig, opts: InitOptions = {}): boolean {
	const { dsn, environment, release } = config.errorTracking;
	if (!dsn) return false;
	if (sentry) return true;
	// Loaded only when configured (see the header comment).
	// eslint-disable-next-line @typescript-eslint/no-require-imports
	const Sentry = require("@sentry/node") as typeof SentryNode;
	const scrubber = createScrubber(knownSecrets(config, opts.env));
	Sentry.init({
		dsn,
		environment,
		release: release ?? `${pkg.name}@${pkg.version}`,
		// Every option the SDK would otherwise read from SENTRY_* variables is given here.
		debug: false,
		// null (not 0): span recording off, and SENTRY_TRACES_SAMPLE_RATE is not read.
		tracesSampleRate: null as unknown as undefined,
		skipOpenTelemetrySetup: true,
		registerEsmLoaderHooks: false,
		sendDefaultPii: false,
		includeLocalVariables: false,
		sendClientReports: false,
		maxBreadcrumbs: 30,
		defaultIntegrations: false,
		integrations: [
			Sentry.eventFiltersIntegration(),
			Sentry.functionToStringIntegration(),
			Sentry.linkedErrorsIntegration(),
			Sentry.nodeContextIntegration(),
			Sentry.consoleIntegration(),
			...(opts.processHandlers ? [Sentry.onUncaughtExceptionIntegration(), Sentry.onUnhandledRejectionIntegration({ mode: "strict" })] : []),
		],
		beforeSend: event => scrubber.event(event),
		beforeBreadcrumb: breadcrumb => scrubber.breadcrumb(breadcrumb),
	});
	sentry = Sentry;
	return true;
}

export function errorTrackingEnabled(): boolean {
	return sentry !== null;
}

/** Reports an unexpected error with tags (service, network, route...: never secrets or merchants' ids). A no-op when off. */
export function captureError(err: unknown, context: Record<string, string> = {}): void {
	if (!sentry) return;
	try {
		sentry.captureException(err, { tags: context });
	} catch {
		// Reporting never breaks the caller.
	}
}

/**
 * A failed job of a background loop (webhook delivery, chain watcher, sweeper). Outages (the
 * database, a service or a node unreachable) are operational events, seen in logs, metrics and
 * /readyz: not reported. The same failure of the same loop is reported once per LOOP_REPEAT_MS.
 */
export function captureLoopError(err: unknown, context: Record<string, string>, now = Date.now()): void {
	if (!sentry || isOutage(err)) return;
	const key = JSON.stringify([context, (err as Error)?.name, String((err as Error)?.message ?? err).slice(0, 300)]);
	const last = loopReported.get(key);
	if (last !== undefined && now - last < LOOP_REPEAT_MS) return;
	loopReported.delete(key);
	loopReported.set(key, now);
	// Oldest first (insertion order): a bounded memory of what was reported.
	if (loopReported.size > LOOP_KEYS_MAX) loopReported.delete(loopReported.keys().next().value as string);
	captureError(err, context);
}

/** Sends what is queued (on shutdown). Resolves false when it did not finish in time or tracking is off. */
export async function flushErrorTracking(timeoutMs = FLUSH_TIMEOUT_MS): Promise<boolean> {
	if (!sentry) return false;
	return sentry.flush(timeoutMs).catch(() => false);
}

/** Flushes and turns error tracking off (tests; a later `initErrorTracking` starts it again). */
export async function closeErrorTracking(timeoutMs = FLUSH_TIMEOUT_MS): Promise<void> {
	if (!sentry) return;
	const Sentry = sentry;
	sentry = null;
	loopReported.clear();
	await Sentry.close(timeoutMs).catch(() => false);
}

const NETWORK_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "ETIMEDOUT", "EPIPE", "EHOSTUNREACH", "ENETUNREACH", "ENOTFOUND", "EAI_AGAIN", "UND_ERR_CONNECT_TIMEOUT", "UND_ERR_SOCKET"]);
/** ethers' codes for a node that cannot be reached or answers 5xx. */
const RPC_OUTAGE_CODES = new Set(["NETWORK_ERROR", "TIMEOUT", "SERVER_ERROR"]);

/** An operational outage rather than a defect: the database, a service, a chain node or a host unreachable. */
export function isOutage(err: unknown): boolean {
	if (!err || typeof err !== "object") return false;
	const e = err as { name?: unknown; code?: unknown; cause?: { code?: unknown } };
	const name = typeof e.name === "string" ? e.name : "";
	if (isServiceUnavailable(err) || name === "ServiceUnavailableError" || name === "RpcUnavailableError" || name === "TimeoutError") return true;
	if (isDatabaseUnreachable(err) || e.code === 503) return true;
	if (typeof e.code === "string" && (NETWORK_CODES.has(e.code) || RPC_OUTAGE_CODES.has(e.code))) return true;
	return typeof e.cause?.code === "string" && NETWORK_CODES.has(e.cause.code);
}

// ---- the scrubber ----

/** Object keys whose values are never sent (any depth): credentials, signatures, bodies, seeds. */
const SENSITIVE_KEY = /pass(word|wd|phrase)?$|secret|token|authori[sz]ation|cookie|api[-_]?key|signature|mnemonic|seed|private[-_]?key|credential|^(x-)?(api-)?key$|^body$|^raw[-_]?body$/i;
/** ...except ids (`tokenId`, `apiKeyId`): not secrets, and what support needs. */
const ID_KEY = /ids?$/i;
const URL_CREDENTIALS = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@]+@/gi;
/** Credentials of an Authorization header (`Bearer <token>`, `Basic <base64>`) quoted in a message. */
const AUTH_SCHEME = /\b(Bearer|Basic|Digest|bearer|basic)(\s+)[A-Za-z0-9._~+/=-]{16,}/g;
const JWT = /\beyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*/g;
/** Our API keys and secrets (lib/keys/format.ts), whatever the body's length. */
const OUR_KEYS = /\b(ak|sk)_(live|test)_[0-9A-Za-z]+/g;
const OTHER_KEYS = /\b(sk|whsec)_[0-9A-Za-z_]{12,}/g;
/** Payment intents' client secrets: `<intent id>_secret_<random>`. */
const CLIENT_SECRET = /_secret_[0-9A-Za-z]+/g;
/** Extended private keys and WIF private keys (base58). */
const PRIVATE_KEYS = /\b[xtyzuv]prv[1-9A-HJ-NP-Za-km-z]{100,}|\b[5KLc9][1-9A-HJ-NP-Za-km-z]{50,51}\b/g;
/** `name=value` and `"name": "value"` of a sensitive name, in query strings, logs or JSON text. */
const NAMED_VALUE = /(["']?)([\w.-]*(?:pass(?:word|wd|phrase)|secret|token|api[-_]?key|signature|mnemonic|seed|private[-_]?key|authorization|cookie|credential)[\w.-]*)\1(\s*[:=]\s*)("(?:[^"\\]|\\.)*"|'[^']*'|[^\s,;&}\]"']+)/gi;
/** A run of lower-case words, tested against the BIP-39 list: a mnemonic is 12 to 24 of them. */
const WORD_RUN = /\b[a-z]{3,8}(?:[\s,]+[a-z]{3,8}){11,}\b/g;
const MNEMONIC_MIN_WORDS = 12;
const BIP39 = new Set(wordlist);
const ANSI = /\x1b\[[0-9;]*m/g;
const MAX_DEPTH = 20;

export interface Scrubber {
	text(value: string): string;
	value(value: unknown): unknown;
	event(event: ErrorEvent): ErrorEvent;
	breadcrumb(breadcrumb: Breadcrumb): Breadcrumb;
}

function scrubMnemonics(run: string): string {
	const words = run.split(/([\s,]+)/);
	// words: [word, separator, word, separator, ...]; find runs of list words.
	let start = -1;
	const out = [...words];
	// `end`: index of the first word after the run; the run's words and inner separators go.
	const close = (end: number) => {
		if ((end - start) / 2 >= MNEMONIC_MIN_WORDS) {
			for (let i = start; i <= end - 2; i++) out[i] = "";
			out[start] = FILTERED;
		}
		start = -1;
	};
	for (let i = 0; i < words.length; i += 2) {
		if (BIP39.has(words[i])) {
			if (start < 0) start = i;
		} else if (start >= 0) close(i);
	}
	if (start >= 0) close(words.length + 1);
	return out.join("");
}

/**
 * The scrubber of events and breadcrumbs. `secrets`: literal values never to send (the node's
 * configured secrets; see knownSecrets).
 */
export function createScrubber(secrets: readonly string[] = []): Scrubber {
	// Short or numeric values would blank unrelated text (a TTL, "true").
	const literals = [...new Set(secrets.filter(s => s.length >= 8 && !/^\d+$/.test(s)))].sort((a, b) => b.length - a.length);
	const text = (value: string): string => {
		let s = value;
		for (const secret of literals) if (s.includes(secret)) s = s.split(secret).join(FILTERED);
		return s
			.replace(URL_CREDENTIALS, `$1${FILTERED}@`)
			.replace(AUTH_SCHEME, `$1$2${FILTERED}`)
			.replace(JWT, FILTERED)
			.replace(OUR_KEYS, `$1_$2_${FILTERED}`)
			.replace(OTHER_KEYS, `$1_${FILTERED}`)
			.replace(CLIENT_SECRET, `_secret_${FILTERED}`)
			.replace(PRIVATE_KEYS, FILTERED)
			.replace(NAMED_VALUE, (whole, quote: string, name: string, sep: string, val: string) => {
				if (ID_KEY.test(name)) return whole;
				const q = val.startsWith('"') ? '"' : val.startsWith("'") ? "'" : "";
				return `${quote}${name}${quote}${sep}${q}${FILTERED}${q}`;
			})
			.replace(WORD_RUN, scrubMnemonics);
	};
	const value = (v: unknown, depth = 0): unknown => {
		if (typeof v === "string") return text(v);
		if (!v || typeof v !== "object") return v;
		if (depth > MAX_DEPTH) return FILTERED;
		if (Array.isArray(v)) return v.map(item => value(item, depth + 1));
		const out: Record<string, unknown> = {};
		for (const [k, item] of Object.entries(v)) {
			// The SDK's own bookkeeping (scopes), dropped before the event is sent.
			if (depth === 0 && k === "sdkProcessingMetadata") {
				out[k] = item;
				continue;
			}
			out[k] = SENSITIVE_KEY.test(k) && !ID_KEY.test(k) && item !== null && item !== undefined ? FILTERED : value(item, depth + 1);
		}
		return out;
	};
	return {
		text,
		value: v => value(v),
		event(event) {
			const e = value(event) as ErrorEvent;
			// Of a request only its method and URL without the query string: never headers,
			// cookies, bodies or query strings (the SDK adds none with our integrations; this holds
			// should one ever be added).
			if (event.request) {
				const url = typeof event.request.url === "string" ? text(event.request.url.split("?")[0]) : undefined;
				e.request = { ...(event.request.method ? { method: event.request.method } : {}), ...(url ? { url } : {}) };
			}
			// sendDefaultPii is off; no user (address, email) is ever attached.
			delete e.user;
			for (const frame of e.exception?.values?.flatMap(v => v.stacktrace?.frames ?? []) ?? []) delete frame.vars;
			return e;
		},
		breadcrumb(breadcrumb) {
			const copy = { ...breadcrumb };
			// Console breadcrumbs repeat the message's parts (any object logged) in `data.arguments`.
			if (copy.category === "console" && copy.data) {
				const { arguments: _args, ...data } = copy.data;
				copy.data = data;
			}
			if (typeof copy.message === "string") copy.message = copy.message.replace(ANSI, "");
			return value(copy) as Breadcrumb;
		},
	};
}

/** Names of environment variables that hold secrets, and those that hold URLs (credentials, keys in paths). */
const SECRET_VAR = /SECRET|PASSWORD|PASSWD|TOKEN|API_KEY|PRIVATE_KEY|MASTER_KEY|MNEMONIC|SEED|CREDENTIAL|SASL/i;
const URL_VAR = /(_URL|_URLS|_DSN)$|^TRANSPORTER$|^RPC_URL_/i;

/** Credentials of a URL, and path segments and query values long enough to be keys (`/v3/<key>`). */
function secretsOfUrl(raw: string): string[] {
	let u: URL;
	try {
		u = new URL(raw);
	} catch {
		return [];
	}
	const out = [decodeURIComponent(u.username), decodeURIComponent(u.password), u.username, u.password];
	// Only web URLs carry keys in their paths (not `sqlite:/home/...`, whose folders are in every stack frame).
	if (!["http:", "https:", "ws:", "wss:"].includes(u.protocol)) return out.filter(Boolean);
	for (const segment of u.pathname.split("/")) if (segment.length >= 16) out.push(segment);
	for (const v of u.searchParams.values()) if (v.length >= 16) out.push(v);
	return out.filter(Boolean);
}

/** The literal values the scrubber removes: configured secrets, and credentials inside configured URLs. */
export function knownSecrets(config: AppConfig, env: Env = {}): string[] {
	const out: Array<string | null | undefined> = [
		config.secrets.jwt,
		config.secrets.refresh,
		config.secrets.master,
		config.paymentsWebhookSecret,
		config.masterSeed,
		config.mailgun?.apiKey,
		config.recaptcha?.secret,
		config.admin?.password,
		config.sweeper.privateKey,
		config.sweeper.privateKey?.replace(/^0x/i, ""),
		config.sweeper.solanaPrivateKey,
		config.withdrawals.bridge.apiKey,
	];
	const urls = [config.databaseUrl, config.redisUrl, config.transporter, ...Object.values(config.watchers.rpcUrls)];
	for (const [name, value] of Object.entries(env)) {
		if (!value) continue;
		if (URL_VAR.test(name)) urls.push(value);
		else if (SECRET_VAR.test(name)) out.push(value.trim());
	}
	for (const url of urls) if (url) out.push(...secretsOfUrl(url));
	return out.filter((s): s is string => typeof s === "string" && s.length > 0);
}
