/**
 * The transporter is a trust boundary (docs/deployment.md "Security"): NATS servers of the test's
 * own that ask for credentials and TLS. Nodes with the right settings form the cluster (the full
 * cluster scenario); a node with wrong or missing credentials, or that cannot verify the server's
 * certificate, is refused with a clear line that holds no secret.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { startNodeProcess, NodeProcess } from "../helpers/node-process";
import { makeCertificates, TestCertificates } from "../helpers/certificates";
import { natsServerAvailable, startNatsServer, NatsServer } from "../helpers/nats-server";
import { until } from "../helpers/until";
import { describeCluster } from "./cluster.helpers";

// Characters that must be percent-encoded in a URL: decoded once, whether given in the URL or not.
const USER = "gateway";
const PASSWORD = "s3cret:p@ss/w%rd";
const TOKEN = "t0ken-for-the-cluster";
const WRONG = "not-the-password-4711";

const available = natsServerAvailable();
if (!available) console.warn("nats-auth: skipped (no nats-server on PATH)");
const maybe = (title: string, fn: () => void) => (available ? describe(title, fn) : describe.skip(title, fn));

const servers: NatsServer[] = [];
let certs: TestCertificates | null = null;
afterAll(async () => {
	for (const s of servers) await s.stop();
	certs?.remove();
});

async function server(args: string[]): Promise<NatsServer> {
	const s = await startNatsServer(args);
	servers.push(s);
	return s;
}

function certificates(): TestCertificates {
	certs ??= makeCertificates();
	return certs;
}

maybe("NATS with user and password", () => {
	describeCluster("cluster over NATS with NATS_USER/NATS_PASSWORD", {
		env: async (_ids, namespace) => {
			const s = await server(["--user", USER, "--pass", PASSWORD]);
			const env = { TRANSPORTER: s.url, NATS_USER: USER, NATS_PASSWORD: PASSWORD, NAMESPACE: namespace };
			return { a: env, b: env };
		},
	});
});

maybe("NATS with a token in the URL", () => {
	describeCluster("cluster over NATS with nats://<token>@host", {
		env: async (_ids, namespace) => {
			const s = await server(["--auth", TOKEN]);
			const env = { TRANSPORTER: `nats://${TOKEN}@127.0.0.1:${s.port}`, NAMESPACE: namespace };
			return { a: env, b: env };
		},
	});
});

maybe("NATS over TLS that verifies clients, with credentials", () => {
	describeCluster("cluster over NATS with TLS (CA, client certificate) and a password in the URL", {
		env: async (_ids, namespace) => {
			const c = certificates();
			const s = await server(["--user", USER, "--pass", PASSWORD, "--tlsverify", "--tlscert", c.serverCert, "--tlskey", c.serverKey, "--tlscacert", c.ca]);
			const env = {
				TRANSPORTER: `nats://${USER}:${encodeURIComponent(PASSWORD)}@127.0.0.1:${s.port}`,
				NATS_TLS_CA_FILE: c.ca,
				NATS_TLS_CERT_FILE: c.clientCert,
				NATS_TLS_KEY_FILE: c.clientKey,
				NAMESPACE: namespace,
			};
			return { a: env, b: env };
		},
	});
});

maybe("NATS refuses a node without the right credentials or certificates", () => {
	let passwordServer: NatsServer;
	let tlsServer: NatsServer;
	let dataDir: string;
	const processes: NodeProcess[] = [];

	beforeAll(async () => {
		const c = certificates();
		passwordServer = await server(["--user", USER, "--pass", PASSWORD]);
		tlsServer = await server(["--user", USER, "--pass", PASSWORD, "--tls", "--tlscert", c.serverCert, "--tlskey", c.serverKey]);
		dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-nats-auth-"));
	});
	afterAll(async () => {
		for (const p of processes) await p.kill();
		fs.rmSync(dataDir, { recursive: true, force: true });
	});

	/** A real node process (lib/start.ts) with this transporter setting, until it logs `line`. */
	async function refused(env: Record<string, string>, line: RegExp): Promise<string> {
		const node = startNodeProcess({ DATA_DIR: dataDir, SERVICES: "networks", PORT: "0", NAMESPACE: "nats-auth", ...env });
		processes.push(node);
		await until(`the node to log ${line}`, () => line.test(node.output()), 30_000, node.output);
		// Refused is not fatal: it keeps retrying (a credential rotated on the server may start to work).
		expect([node.child.exitCode, node.child.signalCode]).toEqual([null, null]);
		return node.output();
	}

	const AUTH_REFUSED = /NATS refused this node's credentials \(Authorization Violation\): check NATS_USER and NATS_PASSWORD, NATS_TOKEN, or the credentials in TRANSPORTER/;

	it("refuses a wrong password with a clear error and no secret in the logs", async () => {
		const out = await refused({ TRANSPORTER: passwordServer.url, NATS_USER: USER, NATS_PASSWORD: WRONG }, AUTH_REFUSED);
		expect(out).not.toContain(WRONG);
		expect(out).not.toContain(PASSWORD);
		expect(passwordServer.output()).not.toContain(WRONG);
	});

	it("refuses a wrong password given in the URL, and a node with no credentials at all", async () => {
		const inUrl = await refused({ TRANSPORTER: `nats://${USER}:${WRONG}@127.0.0.1:${passwordServer.port}` }, AUTH_REFUSED);
		expect(inUrl).not.toContain(WRONG);
		const none = await refused({ TRANSPORTER: passwordServer.url }, AUTH_REFUSED);
		expect(none).not.toContain(PASSWORD);
	});

	it("refuses a server whose certificate the node cannot verify (no CA, another CA), before sending the credentials", async () => {
		const notTrusted = /Connection is failed\. .*(self[- ]signed|unable to verify|certificate)/i;
		const systemCas = await refused({ TRANSPORTER: tlsServer.url, NATS_USER: USER, NATS_PASSWORD: PASSWORD }, notTrusted);
		expect(systemCas).not.toContain(PASSWORD);
		const otherCa = await refused({ TRANSPORTER: tlsServer.url, NATS_USER: USER, NATS_PASSWORD: PASSWORD, NATS_TLS_CA_FILE: certificates().otherCa }, notTrusted);
		expect(otherCa).not.toContain(PASSWORD);
	});

	it("refuses a server without TLS when the node asks for it", async () => {
		const out = await refused({ TRANSPORTER: passwordServer.url, NATS_USER: USER, NATS_PASSWORD: PASSWORD, NATS_TLS: "true" }, /Connection is failed\. .*tls/i);
		expect(out).not.toContain(PASSWORD);
	});
});
