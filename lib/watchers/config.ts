/**
 * Chain-watcher settings from the environment (docs/watchers.md "Configuration"). A network is
 * followed only when an RPC URL is configured for it: `RPC_URL_<SLUG>` with the catalogue slug in
 * upper case and `-` as `_` (RPC_URL_ETHEREUM, RPC_URL_ANVIL_LOCAL, ...). The catalogue's public
 * RPC URLs are for payers' wallets and are never called by the watchers.
 */
import fs from "node:fs";
import { EnvVars, int } from "../env";

export interface WatchersConfig {
	/** Network slug -> RPC URL (secrets in URLs are never logged: see redactUrl). */
	rpcUrls: Record<string, string>;
	/** RPC_COOKIE_FILE_<SLUG>: Bitcoin Core's `.cookie` file, used for the credentials when the URL has none. */
	rpcCookieFiles: Record<string, string>;
	/** RPC_API_KEY_<SLUG>: an API key sent in a header by sources whose API takes one (TON: toncenter's X-API-Key); never logged. */
	rpcApiKeys?: Record<string, string>;
	/** How long a watcher owns a network without renewing; a standby takes over after it. */
	leaseMs: number;
	/**
	 * Fair share (docs/deployment.md "Load sharing", lib/watchers/balancer.ts), for watchers and
	 * sweepers alike: how often a replica checks the spread of its service's networks (0: never
	 * hands one over), how long a free lease waits for a replica below its share before one at or
	 * above it takes it, and how long a handed-over network is awaited by another replica.
	 */
	rebalanceMs: number;
	takeDeferMs: number;
	handOverMs: number;
	/** Pause between two polls of the chain head when the watcher is caught up. */
	pollMs: number;
	/** Most blocks read in one range (halved by the source when the provider refuses). */
	maxRange: number;
	/** Block hashes kept for reorg checks (deepest reorg handled). */
	reorgDepth: number;
	/** How often the native balances of open checkouts are reconciled (0: never). */
	reconcileMs: number;
	/** Open deposit addresses one reconciliation page asks for (default 2,000: see runner.ts ADDRESS_PAGE). */
	reconcilePage?: number;
	/** Lag (head - cursor) in blocks above which the watcher logs a warning. */
	lagWarnBlocks: number;
	/** Lag above which a node leading a network is not ready (/readyz, lib/watchers/readiness.ts). */
	readyMaxLag: number;
	/** How long after its creation a deposit address is still watched (late payments are recorded). */
	watchHours: number;
	/** Per-request RPC timeout. */
	rpcTimeoutMs: number;
	/** Where a network without a cursor starts: "head" (default) or a block number per slug (WATCHER_START_BLOCK_<SLUG>). */
	startBlocks: Record<string, number>;
	/** REQUIRED_CONFIRMATIONS_<SLUG>: confirmations required before a payment on that network is credited (over the catalogue's). */
	requiredConfirmations: Record<string, number>;
}

export function envSlug(slug: string): string {
	return slug.toUpperCase().replace(/[^A-Z0-9]/g, "_");
}

/** An RPC URL with its credentials and query string removed, for logs. */
export function redactUrl(url: string): string {
	try {
		const u = new URL(url);
		return `${u.protocol}//${u.hostname}${u.port ? `:${u.port}` : ""}${u.pathname === "/" || u.pathname === "" ? "" : "/…"}`;
	} catch {
		return "(invalid url)";
	}
}

const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>]+/gi;

/** Every URL in a text (an error message, a response body) reduced to scheme, host and port. */
export function redactUrlsIn(text: string): string {
	return text.replace(URL_IN_TEXT, url => redactUrl(url));
}

/**
 * An RPC URL split for sending: the URL without its credentials (Node's fetch refuses a URL that
 * carries them) and the Basic Authorization header they become, or null. `secrets` are the parts
 * of the URL that may be a key (password, user, query values, path segments), for scrubbing any
 * text that quotes them: some providers echo the request in an error body.
 */
export function rpcCredentials(rpcUrl: string): { url: string; authorization: string | null; secrets: string[] } {
	const u = new URL(rpcUrl);
	const user = decodeURIComponent(u.username);
	const password = decodeURIComponent(u.password);
	const authorization = user || password ? `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}` : null;
	const raw = [u.username, u.password, ...u.search.slice(1).split("&").map(p => p.slice(p.indexOf("=") + 1)), ...u.pathname.split("/")];
	const secrets = [...raw, ...raw.map(s => safeDecode(s)), user, password, ...(authorization ? [authorization.slice(6)] : [])].filter(s => s.length >= 6);
	u.username = "";
	u.password = "";
	// Longest first, so a secret containing another is replaced whole.
	return { url: u.toString(), authorization, secrets: [...new Set(secrets)].sort((a, b) => b.length - a.length) };
}

function safeDecode(s: string): string {
	try {
		return decodeURIComponent(s.replace(/\+/g, " "));
	} catch {
		return s;
	}
}

/** `text` with every URL redacted and every literal secret replaced by "***". */
export function scrubRpcText(text: string, secrets: readonly string[]): string {
	let out = text;
	for (const s of secrets) out = out.split(s).join("***");
	return redactUrlsIn(out);
}

export function watchersConfigFromEnv(env: EnvVars): WatchersConfig {
	const rpcUrls: Record<string, string> = {};
	const rpcCookieFiles: Record<string, string> = {};
	const rpcApiKeys: Record<string, string> = {};
	const startBlocks: Record<string, number> = {};
	const requiredConfirmations: Record<string, number> = {};
	for (const [name, value] of Object.entries(env)) {
		if (!value) continue;
		if (name.startsWith("RPC_URL_")) {
			const key = name.slice("RPC_URL_".length);
			let parsed: URL;
			try {
				parsed = new URL(value.trim());
			} catch {
				throw new Error(`Configuration: ${name} must be a URL`);
			}
			if (!["http:", "https:", "ws:", "wss:"].includes(parsed.protocol)) throw new Error(`Configuration: ${name} must be an http(s) or ws(s) URL`);
			rpcUrls[key] = value.trim();
		} else if (name.startsWith("RPC_COOKIE_FILE_")) {
			rpcCookieFiles[name.slice("RPC_COOKIE_FILE_".length)] = value.trim();
		} else if (name.startsWith("RPC_API_KEY_")) {
			rpcApiKeys[name.slice("RPC_API_KEY_".length)] = value.trim();
		} else if (name.startsWith("WATCHER_START_BLOCK_")) {
			startBlocks[name.slice("WATCHER_START_BLOCK_".length)] = int(name, env[name], 0, 0, Number.MAX_SAFE_INTEGER);
		} else if (name.startsWith("REQUIRED_CONFIRMATIONS_")) {
			requiredConfirmations[name.slice("REQUIRED_CONFIRMATIONS_".length)] = int(name, env[name], 1, 1, 100_000);
		}
	}
	const leaseMs = int("WATCHER_LEASE_MS", env.WATCHER_LEASE_MS, 10_000, 1_000, 600_000);
	return {
		rpcUrls,
		rpcCookieFiles,
		rpcApiKeys,
		leaseMs,
		rebalanceMs: int("WATCHER_REBALANCE_MS", env.WATCHER_REBALANCE_MS, 5_000, 0, 3_600_000),
		takeDeferMs: int("WATCHER_TAKE_DEFER_MS", env.WATCHER_TAKE_DEFER_MS, 3_000, 0, 600_000),
		handOverMs: int("WATCHER_HANDOVER_MS", env.WATCHER_HANDOVER_MS, 30_000, 1_000, 3_600_000),
		pollMs: int("WATCHER_POLL_MS", env.WATCHER_POLL_MS, 1_000, 50, 600_000),
		maxRange: int("WATCHER_MAX_RANGE", env.WATCHER_MAX_RANGE, 500, 1, 10_000),
		reorgDepth: int("WATCHER_REORG_DEPTH", env.WATCHER_REORG_DEPTH, 64, 2, 10_000),
		reconcileMs: int("WATCHER_RECONCILE_MS", env.WATCHER_RECONCILE_MS, 60_000, 0, 86_400_000),
		reconcilePage: int("WATCHER_RECONCILE_PAGE", env.WATCHER_RECONCILE_PAGE, 2_000, 1, 20_000),
		lagWarnBlocks: int("WATCHER_LAG_WARN_BLOCKS", env.WATCHER_LAG_WARN_BLOCKS, 50, 1, 1_000_000),
		readyMaxLag: int("WATCHER_READY_MAX_LAG", env.WATCHER_READY_MAX_LAG, 50, 0, 1_000_000),
		watchHours: int("WATCHER_WATCH_HOURS", env.WATCHER_WATCH_HOURS, 7 * 24, 1, 24 * 365),
		rpcTimeoutMs: int("WATCHER_RPC_TIMEOUT_MS", env.WATCHER_RPC_TIMEOUT_MS, 10_000, 100, 120_000),
		startBlocks,
		requiredConfirmations,
	};
}

/**
 * The RPC URL configured for a network, if any. With RPC_COOKIE_FILE_<SLUG> and no credentials in
 * the URL, the credentials come from the node's cookie file (`__cookie__:<password>`), read now:
 * the cookie changes when the node restarts, and so must be read again (restart the watcher).
 */
export function rpcUrlFor(config: WatchersConfig, slug: string): string | null {
	const url = config.rpcUrls[envSlug(slug)] ?? null;
	const cookieFile = config.rpcCookieFiles?.[envSlug(slug)];
	if (!url || !cookieFile) return url;
	const u = new URL(url);
	if (u.username || u.password) return url;
	const cookie = fs.readFileSync(cookieFile, "utf8").trim();
	const colon = cookie.indexOf(":");
	if (colon < 1) throw new Error(`Configuration: RPC_COOKIE_FILE_${envSlug(slug)} is not a "user:password" cookie file`);
	u.username = encodeURIComponent(cookie.slice(0, colon));
	u.password = encodeURIComponent(cookie.slice(colon + 1));
	return u.toString();
}

/** The API key configured for a network (RPC_API_KEY_<SLUG>), if any. */
export function rpcApiKeyFor(config: WatchersConfig, slug: string): string | null {
	return config.rpcApiKeys?.[envSlug(slug)] || null;
}
