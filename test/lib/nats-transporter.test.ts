/**
 * NATS transporter settings (lib/nats-transporter.ts): credentials from NATS_* or the URL (decoded),
 * TLS files read at start, conflicting settings refused, and no credential in any error message.
 * The connection itself, against real nats-servers with authentication and TLS:
 * test/cluster/nats-auth.test.ts.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { natsAuthenticated, natsOptionsFromEnv, NatsTransporter } from "../../lib/nats-transporter";
import { loadConfig } from "../../lib/config";
import { transporterOption, transporterWarnings } from "../../moleculer.config";

const SECRETS = { AUTH_JWT_SECRET: "j".repeat(32), AUTH_REFRESH_SECRET: "r".repeat(32), MASTER_KEY: "m".repeat(32) };

describe("natsOptionsFromEnv", () => {
	let dir: string;
	beforeAll(() => {
		dir = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-nats-"));
		for (const f of ["ca.pem", "cert.pem", "key.pem"]) fs.writeFileSync(path.join(dir, f), `-----BEGIN ${f}-----\n`);
	});
	afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
	const file = (f: string) => path.join(dir, f);

	it("takes the servers, with the default port, and no credentials or TLS unless given", () => {
		expect(natsOptionsFromEnv("nats://a:4222,nats://b", {})).toEqual({ servers: ["a:4222", "b:4222"] });
		expect(natsAuthenticated(natsOptionsFromEnv("nats://a:4222", {}))).toBe(false);
	});

	it("reads user and password or a token from NATS_*", () => {
		expect(natsOptionsFromEnv("nats://a:4222", { NATS_USER: "gw", NATS_PASSWORD: "p@ss:w/rd" })).toEqual({ servers: ["a:4222"], user: "gw", pass: "p@ss:w/rd" });
		expect(natsOptionsFromEnv("nats://a:4222", { NATS_TOKEN: "tok" })).toEqual({ servers: ["a:4222"], token: "tok" });
		expect(natsAuthenticated(natsOptionsFromEnv("nats://a:4222", { NATS_TOKEN: "tok" }))).toBe(true);
	});

	it("reads credentials in the URL, percent-decoded: user:password, or a lone token", () => {
		expect(natsOptionsFromEnv(`nats://gw:${encodeURIComponent("p@ss:w/rd%")}@a:4222`, {})).toEqual({ servers: ["a:4222"], user: "gw", pass: "p@ss:w/rd%" });
		expect(natsOptionsFromEnv("nats://tok@a:4222", {})).toEqual({ servers: ["a:4222"], token: "tok" });
	});

	it("turns TLS on with NATS_TLS, a tls:// URL or any TLS file, and reads the files at start", () => {
		expect(natsOptionsFromEnv("nats://a:4222", { NATS_TLS: "true" }).tls).toEqual({});
		expect(natsOptionsFromEnv("tls://a:4222", {}).tls).toEqual({});
		expect(natsOptionsFromEnv("nats://a:4222", { NATS_TLS_CA_FILE: file("ca.pem"), NATS_TLS_CERT_FILE: file("cert.pem"), NATS_TLS_KEY_FILE: file("key.pem") }).tls).toEqual({
			ca: "-----BEGIN ca.pem-----\n",
			cert: "-----BEGIN cert.pem-----\n",
			key: "-----BEGIN key.pem-----\n",
		});
		expect(natsOptionsFromEnv("nats://a:4222", { NATS_TLS: "false" }).tls).toBeUndefined();
	});

	it("refuses incomplete or conflicting settings and unreadable files, naming the variable", () => {
		const url = "nats://a:4222";
		expect(() => natsOptionsFromEnv(url, { NATS_USER: "gw" })).toThrow("Configuration: NATS_USER needs NATS_PASSWORD");
		expect(() => natsOptionsFromEnv(url, { NATS_PASSWORD: "p" })).toThrow("Configuration: NATS_PASSWORD needs NATS_USER");
		expect(() => natsOptionsFromEnv(url, { NATS_USER: "gw", NATS_PASSWORD: "p", NATS_TOKEN: "t" })).toThrow(/not both/);
		expect(() => natsOptionsFromEnv("nats://tok@a:4222", { NATS_TOKEN: "t" })).toThrow(/both in TRANSPORTER and in NATS_USER\/NATS_TOKEN/);
		expect(() => natsOptionsFromEnv(url, { NATS_TLS_CERT_FILE: file("cert.pem") })).toThrow(/NATS_TLS_CERT_FILE and NATS_TLS_KEY_FILE go together/);
		expect(() => natsOptionsFromEnv(url, { NATS_TLS_CA_FILE: file("missing.pem") })).toThrow(/NATS_TLS_CA_FILE .* cannot be read/);
		expect(() => natsOptionsFromEnv(url, { NATS_TLS: "maybe" })).toThrow(/NATS_TLS must be true or false/);
		expect(() => natsOptionsFromEnv("http://a:4222", {})).toThrow(/nats:\/\/ or tls:\/\//);
	});

	it("never puts a credential in an error message", () => {
		for (const [url, env] of [
			["nats://gw:hunter2-secret@a:4222", { NATS_USER: "gw", NATS_PASSWORD: "other-secret" }],
			["nats://gw:%E0%A4%A-hunter2-secret@a:4222", {}],
			["nats://gw:hunter2-secret@", {}],
		] as const) {
			let message = "";
			try {
				natsOptionsFromEnv(url, env);
			} catch (err) {
				message = (err as Error).message;
			}
			expect(message).toMatch(/^Configuration: /);
			expect(message).not.toMatch(/hunter2|other-secret/);
		}
	});

	it("is what TRANSPORTER=nats:// gives the broker: Moleculer's NATS transporter with these options, no URL kept", () => {
		const config = loadConfig({ ...SECRETS, DATA_DIR: dir, TRANSPORTER: "nats://gw:secret@a:4222" });
		const tx = transporterOption(config, {}) as unknown as NatsTransporter & { opts: Record<string, unknown> };
		expect(tx).toBeInstanceOf(NatsTransporter);
		expect(tx.opts).toMatchObject({ servers: ["a:4222"], user: "gw", pass: "secret" });
		expect(tx.opts.url).toBeUndefined();
	});
});

describe("transporter security in production", () => {
	let dir: string;
	beforeAll(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-tx-"))));
	afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
	const production = (env: Record<string, string>) => loadConfig({ ...SECRETS, DATA_DIR: dir, NODE_ENV: "production", ...env });

	it("refuses the TCP transporter (no authentication, no encryption) unless TCP_ALLOW_INSECURE=true", () => {
		for (const transporter of ["tcp", "tcp://10.0.0.1:4000/a"]) {
			expect(() => production({ TRANSPORTER: transporter })).toThrow(/TRANSPORTER=tcp has no authentication or encryption and is refused in production/);
			expect(production({ TRANSPORTER: transporter, TCP_ALLOW_INSECURE: "true" }).transporter).toBe(transporter);
		}
		// Development and tests keep it (a few nodes on one machine).
		expect(loadConfig({ DATA_DIR: dir, TRANSPORTER: "tcp" }).transporter).toBe("tcp");
	});

	it("warns at start about a NATS or Kafka transporter that asks for no credentials", () => {
		const nats = production({ TRANSPORTER: "nats://nats:4222" });
		expect(transporterWarnings(nats, {})).toEqual([expect.stringMatching(/^The NATS transporter has no credentials .*internal money actions/)]);
		expect(transporterWarnings(nats, { NATS_USER: "gw", NATS_PASSWORD: "p" })).toEqual([]);
		expect(transporterWarnings(production({ TRANSPORTER: "nats://tok@nats:4222" }), {})).toEqual([]);
		const kafka = production({ TRANSPORTER: "kafka://kafka:9092" });
		expect(transporterWarnings(kafka, {})).toEqual([expect.stringMatching(/^The Kafka transporter has no SASL credentials/)]);
		expect(transporterWarnings(kafka, { KAFKA_SASL_MECHANISM: "plain", KAFKA_SASL_USERNAME: "u", KAFKA_SASL_PASSWORD: "p" })).toEqual([]);
		// Not in development, and never a credential in a warning.
		expect(transporterWarnings(loadConfig({ DATA_DIR: dir, TRANSPORTER: "nats://nats:4222" }), {})).toEqual([]);
	});
});
