/**
 * KafkaJsTransporter configuration: TRANSPORTER=kafka://... and the KAFKA_* variables, topic
 * names, and the choice of transporter in moleculer.config.ts. (Traffic through a Kafka-protocol
 * broker: kafkajs-transporter.mock.test.ts.)
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import tls from "node:tls";
import type { AddressInfo } from "node:net";
import { ServiceBroker, Transporters } from "moleculer";
import { makeCertificates, TestCertificates } from "../helpers/certificates";
import { until } from "../helpers/until";
import { KafkaJsTransporter, kafkaOptionsFromEnv, kafkaTopicName, parseKafkaBrokers } from "../../lib/kafkajs-transporter";
import { transporterOption } from "../../moleculer.config";
import type { AppConfig } from "../../lib/config";

const configWith = (transporter: string | null) => ({ transporter }) as AppConfig;

describe("parseKafkaBrokers", () => {
	it("reads one or several host:port entries", () => {
		expect(parseKafkaBrokers("kafka://kafka:9092")).toEqual(["kafka:9092"]);
		expect(parseKafkaBrokers("kafka://k1:9092,k2:9093")).toEqual(["k1:9092", "k2:9093"]);
		expect(parseKafkaBrokers("kafka://k1:9092, kafka://k2:9093/")).toEqual(["k1:9092", "k2:9093"]);
		expect(parseKafkaBrokers("kafka://[::1]:9092")).toEqual(["[::1]:9092"]);
	});

	it("refuses entries without a valid port or with junk", () => {
		for (const bad of ["kafka://", "kafka://kafka", "kafka://kafka:0", "kafka://kafka:70000", "kafka://user@kafka:9092", "kafka://k1:9092,k2"]) {
			expect(() => parseKafkaBrokers(bad)).toThrow(/Configuration: TRANSPORTER/);
		}
	});
});

describe("kafkaOptionsFromEnv", () => {
	it("takes only the brokers when nothing else is set", () => {
		expect(kafkaOptionsFromEnv("kafka://kafka:9092", {})).toEqual({ brokers: ["kafka:9092"], topics: {}, consumer: {} });
	});

	it("maps the KAFKA_* variables", () => {
		const opts = kafkaOptionsFromEnv("kafka://kafka:9092", {
			KAFKA_CLIENT_ID: "gw",
			KAFKA_SSL: "true",
			KAFKA_SASL_MECHANISM: "SCRAM-SHA-512",
			KAFKA_SASL_USERNAME: "u",
			KAFKA_SASL_PASSWORD: "p",
			KAFKA_REPLICATION_FACTOR: "3",
			KAFKA_BALANCED_PARTITIONS: "6",
			KAFKA_TOPIC_RETENTION_MS: "600000",
			KAFKA_SESSION_TIMEOUT_MS: "6000",
			KAFKA_HEARTBEAT_INTERVAL_MS: "500",
			KAFKA_FETCH_MAX_WAIT_MS: "50",
			KAFKA_CONNECTION_TIMEOUT_MS: "2000",
			KAFKA_DISCONNECT_TIMEOUT_MS: "3000",
		});
		expect(opts).toEqual({
			brokers: ["kafka:9092"],
			clientId: "gw",
			ssl: true,
			sasl: { mechanism: "scram-sha-512", username: "u", password: "p" },
			connectionTimeout: 2000,
			disconnectTimeout: 3000,
			topics: { replicationFactor: 3, balancedPartitions: 6, retentionMs: 600000 },
			consumer: { sessionTimeout: 6000, rebalanceTimeout: 6000, heartbeatInterval: 500, maxWaitTimeInMs: 50 },
		});
	});

	it("reads a CA bundle for TLS", () => {
		const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-kafka-"));
		try {
			const file = path.join(dir, "ca.pem");
			fs.writeFileSync(file, "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n");
			const opts = kafkaOptionsFromEnv("kafka://kafka:9093", { KAFKA_SSL_CA_FILE: file });
			expect(opts.ssl).toEqual({ ca: [fs.readFileSync(file)] });
			expect(() => kafkaOptionsFromEnv("kafka://kafka:9093", { KAFKA_SSL_CA_FILE: path.join(dir, "missing.pem") })).toThrow(/KAFKA_SSL_CA_FILE/);
		} finally {
			fs.rmSync(dir, { recursive: true, force: true });
		}
	});

	it("refuses invalid values with the variable's name", () => {
		const url = "kafka://kafka:9092";
		expect(() => kafkaOptionsFromEnv(url, { KAFKA_SSL: "maybe" })).toThrow(/KAFKA_SSL/);
		expect(() => kafkaOptionsFromEnv(url, { KAFKA_SASL_MECHANISM: "gssapi", KAFKA_SASL_USERNAME: "u", KAFKA_SASL_PASSWORD: "p" })).toThrow(/KAFKA_SASL_MECHANISM/);
		expect(() => kafkaOptionsFromEnv(url, { KAFKA_SASL_MECHANISM: "plain", KAFKA_SASL_USERNAME: "u" })).toThrow(/KAFKA_SASL_PASSWORD/);
		expect(() => kafkaOptionsFromEnv(url, { KAFKA_REPLICATION_FACTOR: "0" })).toThrow(/KAFKA_REPLICATION_FACTOR/);
		expect(() => kafkaOptionsFromEnv(url, { KAFKA_REPLICATION_FACTOR: "two" })).toThrow(/KAFKA_REPLICATION_FACTOR/);
		expect(() => kafkaOptionsFromEnv(url, { KAFKA_BALANCED_PARTITIONS: "0" })).toThrow(/KAFKA_BALANCED_PARTITIONS/);
		expect(() => kafkaOptionsFromEnv(url, { KAFKA_TOPIC_RETENTION_MS: "1.5" })).toThrow(/KAFKA_TOPIC_RETENTION_MS/);
		expect(() => kafkaOptionsFromEnv(url, { KAFKA_FETCH_MAX_WAIT_MS: "-1" })).toThrow(/KAFKA_FETCH_MAX_WAIT_MS/);
		expect(() => kafkaOptionsFromEnv(url, { KAFKA_DISCONNECT_TIMEOUT_MS: "10" })).toThrow(/KAFKA_DISCONNECT_TIMEOUT_MS/);
		// kafkajs needs heartbeats well inside the session timeout.
		expect(() => kafkaOptionsFromEnv(url, { KAFKA_SESSION_TIMEOUT_MS: "3000", KAFKA_HEARTBEAT_INTERVAL_MS: "2000" })).toThrow(/KAFKA_HEARTBEAT_INTERVAL_MS/);
	});

	it("never puts the SASL password in an error message", () => {
		try {
			kafkaOptionsFromEnv("kafka://kafka:9092", { KAFKA_SASL_MECHANISM: "md5", KAFKA_SASL_USERNAME: "u", KAFKA_SASL_PASSWORD: "hunter2-secret" });
			throw new Error("expected a configuration error");
		} catch (err) {
			expect((err as Error).message).toMatch(/KAFKA_SASL_MECHANISM/);
			expect((err as Error).message).not.toContain("hunter2-secret");
		}
	});
});

describe("kafkaTopicName", () => {
	it("keeps Kafka's alphabet and encodes anything else", () => {
		expect(kafkaTopicName("MOL-ns.NODE.host-1_a")).toBe("MOL-ns.NODE.host-1_a");
		expect(kafkaTopicName("MOL.REQB.$node.list")).toBe("MOL.REQB.-24-node.list");
		expect(kafkaTopicName("MOL.EVENTB.a b:c")).toBe("MOL.EVENTB.a-20-b-3a-c");
	});

	it("keeps long names within 249 characters and distinct", () => {
		const a = kafkaTopicName(`MOL.REQB.${"x".repeat(300)}a`);
		const b = kafkaTopicName(`MOL.REQB.${"x".repeat(300)}b`);
		expect(a.length).toBeLessThanOrEqual(249);
		expect(a).toMatch(/^[A-Za-z0-9._-]+$/);
		expect(a).not.toBe(b);
	});
});

describe("transporterOption (moleculer.config.ts)", () => {
	it("uses KafkaJsTransporter for kafka:// URLs, with the KAFKA_* variables", () => {
		const tx = transporterOption(configWith("kafka://k1:9092,k2:9092"), { KAFKA_CLIENT_ID: "gw-test" });
		expect(tx).toBeInstanceOf(KafkaJsTransporter);
		expect(tx).toBeInstanceOf(Transporters.Base);
		expect((tx as unknown as { opts: Record<string, unknown> }).opts).toMatchObject({ brokers: ["k1:9092", "k2:9092"], clientId: "gw-test" });
		expect((tx as unknown as { hasBuiltInBalancer: boolean }).hasBuiltInBalancer).toBe(true);
	});

	it("surfaces a bad Kafka configuration at start-up", () => {
		expect(() => transporterOption(configWith("kafka://kafka"), {})).toThrow(/Configuration: TRANSPORTER/);
	});

	it("maps tcp to static peers without UDP discovery", () => {
		expect(transporterOption(configWith("tcp"), { TCP_PORT: "6100", TCP_URLS: "127.0.0.1:6101/b, 127.0.0.1:6100/a" })).toEqual({
			type: "TCP",
			options: { udpDiscovery: false, port: 6100, urls: ["127.0.0.1:6101/b", "127.0.0.1:6100/a"] },
		});
	});

	it("refuses a TCP_PORT that is not a port", () => {
		expect(() => transporterOption(configWith("tcp"), { TCP_PORT: "http" })).toThrow(/TCP_PORT/);
		expect(() => transporterOption(configWith("tcp"), { TCP_PORT: "70000" })).toThrow(/TCP_PORT/);
	});

	it("leaves nats:// to Moleculer's NATS transporter (lib/nats-transporter.ts), redis:// to Moleculer, and no transporter for one node", () => {
		expect(transporterOption(configWith("nats://127.0.0.1:4222"), {})).toBeInstanceOf(Transporters.NATS);
		expect(transporterOption(configWith("redis://127.0.0.1:6379"), {})).toBe("redis://127.0.0.1:6379");
		expect(transporterOption(configWith(null), {})).toBeUndefined();
	});
});

describe("TLS and SASL reach kafkajs", () => {
	// librdkafka's mock cluster (the Kafka-protocol broker of the other tests) speaks neither TLS nor
	// SASL (it answers SaslHandshake "unsupported version"), so the TLS handshake is checked against a
	// loopback TLS listener that verifies client certificates, and SASL as far as kafkajs is configured.
	let certs: TestCertificates;
	beforeAll(() => (certs = makeCertificates()));
	afterAll(() => certs?.remove());

	it("reads a client certificate and key for brokers that verify clients, both or neither", () => {
		const opts = kafkaOptionsFromEnv("kafka://kafka:9093", { KAFKA_SSL_CA_FILE: certs.ca, KAFKA_SSL_CERT_FILE: certs.clientCert, KAFKA_SSL_KEY_FILE: certs.clientKey });
		expect(opts.ssl).toEqual({ ca: [fs.readFileSync(certs.ca)], cert: fs.readFileSync(certs.clientCert), key: fs.readFileSync(certs.clientKey) });
		expect(() => kafkaOptionsFromEnv("kafka://kafka:9093", { KAFKA_SSL_CERT_FILE: certs.clientCert })).toThrow(/KAFKA_SSL_CERT_FILE and KAFKA_SSL_KEY_FILE go together/);
		expect(() => kafkaOptionsFromEnv("kafka://kafka:9093", { KAFKA_SSL_CERT_FILE: certs.clientCert, KAFKA_SSL_KEY_FILE: path.join(certs.dir, "none.key") })).toThrow(/KAFKA_SSL_KEY_FILE .* cannot be read/);
	});

	it("connects over TLS with the CA and the client certificate from KAFKA_SSL_*, and sends its first request encrypted", async () => {
		let authorized: boolean | null = null;
		let firstRequest: Buffer | null = null;
		const server = tls.createServer({ cert: fs.readFileSync(certs.serverCert), key: fs.readFileSync(certs.serverKey), ca: fs.readFileSync(certs.ca), requestCert: true, rejectUnauthorized: true }, socket => {
			authorized = socket.authorized;
			socket.once("data", (d: Buffer) => {
				firstRequest = d;
				socket.destroy();
			});
		});
		await new Promise<void>(r => server.listen(0, "127.0.0.1", () => r()));
		const { port } = server.address() as AddressInfo;
		const env = { KAFKA_SSL_CA_FILE: certs.ca, KAFKA_SSL_CERT_FILE: certs.clientCert, KAFKA_SSL_KEY_FILE: certs.clientKey, KAFKA_SASL_MECHANISM: "plain", KAFKA_SASL_USERNAME: "gw", KAFKA_SASL_PASSWORD: "pw" };
		// No reconnect timer or kafkajs retry left behind once the test stopped the broker.
		const broker = new ServiceBroker({ nodeID: `tls-${process.pid}`, logger: false, transit: { disableReconnect: true }, transporter: new KafkaJsTransporter({ ...kafkaOptionsFromEnv(`kafka://127.0.0.1:${port}`, env), retry: { retries: 0 } }) });
		const starting = broker.start().catch(() => undefined);
		try {
			await until("an encrypted first request from a verified client", () => firstRequest !== null, 20_000);
			expect(authorized).toBe(true);
			// A Kafka request: size, then API key 18 (ApiVersions), which precedes the SASL handshake.
			expect(firstRequest!.readInt32BE(0)).toBe(firstRequest!.length - 4);
			expect(firstRequest!.readInt16BE(4)).toBe(18);
			const tx = (broker.transit as unknown as { tx: { options: { sasl?: unknown } } }).tx;
			expect(tx.options.sasl).toEqual({ mechanism: "plain", username: "gw", password: "pw" });
		} finally {
			await broker.stop().catch(() => undefined);
			await Promise.race([starting, new Promise(r => setTimeout(r, 1000).unref())]);
			await new Promise(r => server.close(() => r(undefined)));
		}
	});
});
