/**
 * Certificates for TLS tests, made by the `openssl` CLI in a temporary folder: a CA, a server
 * certificate for 127.0.0.1 and localhost, a client certificate, and a second CA that signed
 * nothing here.
 */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

export interface TestCertificates {
	dir: string;
	/** The CA that signed both certificates. */
	ca: string;
	/** Server certificate for 127.0.0.1 and localhost, and its key. */
	serverCert: string;
	serverKey: string;
	/** Client certificate (for servers that verify clients), and its key. */
	clientCert: string;
	clientKey: string;
	/** A second CA that signed nothing here (a client trusting it must refuse the server). */
	otherCa: string;
	remove(): void;
}

/** A CA, a server and a client certificate (P-256, one day) made with the `openssl` CLI. */
export function makeCertificates(): TestCertificates {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-tls-"));
	const file = (name: string) => path.join(dir, name);
	const ssl = (...args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
	const key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
	ssl("req", "-x509", ...key, "-keyout", "ca.key", "-out", "ca.pem", "-days", "1", "-subj", "/CN=cpg test CA");
	ssl("req", "-x509", ...key, "-keyout", "other-ca.key", "-out", "other-ca.pem", "-days", "1", "-subj", "/CN=cpg other CA");
	fs.writeFileSync(file("server.ext"), "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n");
	fs.writeFileSync(file("client.ext"), "extendedKeyUsage=clientAuth\n");
	for (const who of ["server", "client"]) {
		ssl("req", ...key, "-keyout", `${who}.key`, "-out", `${who}.csr`, "-subj", `/CN=cpg test ${who}`);
		ssl("x509", "-req", "-in", `${who}.csr`, "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", `${who}.pem`, "-days", "1", "-extfile", `${who}.ext`);
	}
	return {
		dir,
		ca: file("ca.pem"),
		serverCert: file("server.pem"),
		serverKey: file("server.key"),
		clientCert: file("client.pem"),
		clientKey: file("client.key"),
		otherCa: file("other-ca.pem"),
		remove: () => fs.rmSync(dir, { recursive: true, force: true }),
	};
}
