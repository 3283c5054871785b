/**
 * NATS as the transporter (`TRANSPORTER=nats://host:4222[,nats://host2:4222]`), with the
 * server's authentication and TLS. The transporter is a trust boundary: a node on it can call the
 * internal money actions (`transactions.credit`, `withdrawals.record`, ...), so a production NATS
 * asks every node for credentials and encrypts the traffic (docs/deployment.md "Security").
 *
 * Credentials: `NATS_USER` + `NATS_PASSWORD`, or `NATS_TOKEN`, or in the URL
 * (`nats://user:password@host:4222`, `nats://token@host:4222`; percent-encoded). TLS: `NATS_TLS`
 * (system CAs), `NATS_TLS_CA_FILE` (the server's CA), `NATS_TLS_CERT_FILE` + `NATS_TLS_KEY_FILE`
 * (a client certificate, for servers that verify clients), or a `tls://` URL. With TLS asked for, a
 * server without TLS is refused. Files are read at start, so a wrong path stops the node with a
 * `Configuration:` line; the credentials never reach a log line.
 */
import fs from "node:fs";
import { Transporters } from "moleculer";
import { EnvVars, bool } from "./env";

export interface NatsTlsOptions {
	ca?: string;
	cert?: string;
	key?: string;
}

/** What `nats.connect` is given (nats.js ConnectionOptions, the fields we set). */
export interface NatsConnectOptions {
	servers: string[];
	user?: string;
	pass?: string;
	token?: string;
	tls?: NatsTlsOptions;
}

function readPem(name: string, file: string): string {
	try {
		return fs.readFileSync(file, "utf8");
	} catch {
		throw new Error(`Configuration: ${name} ${file} cannot be read`);
	}
}

function decoded(name: string, part: string): string {
	try {
		return decodeURIComponent(part);
	} catch {
		throw new Error(`Configuration: ${name} has credentials that are not valid percent-encoding`);
	}
}

/** Servers and credentials of a `nats://` (or `tls://`) URL list; never echoes a credential in an error. */
function parseServers(url: string): { servers: string[]; user?: string; pass?: string; token?: string; tls: boolean } {
	const out: { servers: string[]; user?: string; pass?: string; token?: string; tls: boolean } = { servers: [], tls: false };
	for (const item of url.split(",").map(s => s.trim()).filter(Boolean)) {
		let u: URL;
		try {
			u = new URL(item);
		} catch {
			throw new Error("Configuration: TRANSPORTER must be nats://host:port[,nats://host:port] (a NATS URL could not be parsed)");
		}
		if (u.protocol !== "nats:" && u.protocol !== "tls:") throw new Error(`Configuration: TRANSPORTER NATS URLs must start with nats:// or tls://, got "${u.protocol}//"`);
		if (!u.hostname) throw new Error("Configuration: TRANSPORTER has a NATS URL without a host");
		if (u.protocol === "tls:") out.tls = true;
		out.servers.push(`${u.hostname}:${u.port || "4222"}`);
		if (u.username && u.password) {
			out.user ??= decoded("TRANSPORTER", u.username);
			out.pass ??= decoded("TRANSPORTER", u.password);
		} else if (u.username) {
			out.token ??= decoded("TRANSPORTER", u.username);
		}
	}
	if (!out.servers.length) throw new Error("Configuration: TRANSPORTER has no NATS server");
	return out;
}

/** The connection options of `TRANSPORTER=nats://...` and the NATS_* variables (docs/configuration.md). */
export function natsOptionsFromEnv(url: string, env: EnvVars): NatsConnectOptions {
	const parsed = parseServers(url);
	const opts: NatsConnectOptions = { servers: parsed.servers };

	const user = env.NATS_USER?.trim() || "";
	const password = env.NATS_PASSWORD ?? "";
	const token = env.NATS_TOKEN ?? "";
	if (user && token) throw new Error("Configuration: set NATS_USER/NATS_PASSWORD or NATS_TOKEN, not both");
	if (user && !password) throw new Error("Configuration: NATS_USER needs NATS_PASSWORD");
	if (!user && password) throw new Error("Configuration: NATS_PASSWORD needs NATS_USER");
	const fromUrl = parsed.user !== undefined || parsed.token !== undefined;
	if ((user || token) && fromUrl) throw new Error("Configuration: NATS credentials are given both in TRANSPORTER and in NATS_USER/NATS_TOKEN: keep one");
	if (user) Object.assign(opts, { user, pass: password });
	else if (token) opts.token = token;
	else if (parsed.user !== undefined) Object.assign(opts, { user: parsed.user, pass: parsed.pass });
	else if (parsed.token !== undefined) opts.token = parsed.token;

	const tls: NatsTlsOptions = {};
	if (env.NATS_TLS_CA_FILE) tls.ca = readPem("NATS_TLS_CA_FILE", env.NATS_TLS_CA_FILE);
	if (!!env.NATS_TLS_CERT_FILE !== !!env.NATS_TLS_KEY_FILE) throw new Error("Configuration: NATS_TLS_CERT_FILE and NATS_TLS_KEY_FILE go together");
	if (env.NATS_TLS_CERT_FILE && env.NATS_TLS_KEY_FILE) {
		tls.cert = readPem("NATS_TLS_CERT_FILE", env.NATS_TLS_CERT_FILE);
		tls.key = readPem("NATS_TLS_KEY_FILE", env.NATS_TLS_KEY_FILE);
	}
	if (parsed.tls || bool("NATS_TLS", env.NATS_TLS, false) || Object.keys(tls).length) opts.tls = tls;
	return opts;
}

/** Whether the NATS settings authenticate the node (production warns when they do not). */
export function natsAuthenticated(opts: NatsConnectOptions): boolean {
	return !!(opts.user || opts.token);
}

const AUTH_CODES = new Set(["AUTHORIZATION_VIOLATION", "AUTHENTICATION_EXPIRED", "PERMISSIONS_VIOLATION"]);

/**
 * Moleculer's NATS transporter, given the options above instead of a URL (so credentials are
 * decoded once, and no URL with a password is kept), with a clear error when the server refuses
 * the node: Moleculer keeps retrying every 5 s (a credential being rotated on the server may start
 * working), and each refusal says which settings to check, never their values.
 */
export class NatsTransporter extends Transporters.NATS {
	constructor(opts: NatsConnectOptions) {
		super(opts as unknown as ConstructorParameters<typeof Transporters.NATS>[0]);
	}

	connect(): Promise<void> {
		return (super.connect() as Promise<void>).catch((err: Error & { code?: string }) => {
			if (err && AUTH_CODES.has(String(err.code))) {
				// The server's words, without the quotes it puts around them.
				const message = `NATS refused this node's credentials (${String(err.message).replace(/^'(.*)'$/, "$1")}): check NATS_USER and NATS_PASSWORD, NATS_TOKEN, or the credentials in TRANSPORTER`;
				this.logger.error(message);
				throw Object.assign(new Error(message), { code: err.code });
			}
			throw err;
		});
	}
}
