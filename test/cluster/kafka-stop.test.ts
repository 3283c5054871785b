/**
 * A node process (lib/start.ts) running the deployed core group over Kafka (KafkaJsTransporter on
 * librdkafka's mock cluster, test/helpers/kafka-mock.ts) stops on SIGTERM within the documented
 * bound (docs/deployment.md "Stopping within the grace period"):
 *
 * - with the brokers gone (the mock stopped under it), it exits by itself, exit code 0, well
 *   before STOP_TIMEOUT_MS (which would exit with code 1) and the pods' grace period, and logs the
 *   outage once, with no stack traces (kafkajs retries are debug lines);
 * - with the brokers up, its stop is graceful: the other nodes get its DISCONNECT (not a missed
 *   heartbeat), nothing is logged at WARN or ERROR.
 *
 * Skipped, with a warning, only when kcat is not installed (CI installs it). The node has its own
 * SQLite database, so its tests run in the sqlite project only.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { loadConfig } from "../../lib/config";
import { startNode, TestNode } from "../helpers/harness";
import { KafkaMock, kcatAvailable, startKafkaMock } from "../helpers/kafka-mock";
import { startNodeProcess, NodeProcess } from "../helpers/node-process";
import { until } from "../helpers/until";
import { DEPLOYED_CORE_SERVICES, uniqueId } from "./cluster.helpers";

const HAVE_KCAT = kcatAvailable();
if (!HAVE_KCAT) console.warn("kafka-stop.test.ts skipped: `kcat` is not installed (apt-get install kcat)");
const describeKafka = HAVE_KCAT && process.env.TEST_BACKEND !== "mysql" ? describe : describe.skip;

/**
 * The whole stop's bound (STOP_TIMEOUT_MS, default): past it the process exits with code 1. Read
 * with secrets given: without them loadConfig would write ./data/secrets.json in the checkout, and
 * both projects load this file, possibly at once in two jest workers (one reads the other's half-written file).
 */
const STOP_TIMEOUT_MS = loadConfig({ NODE_ENV: "test", AUTH_JWT_SECRET: "j".repeat(32), AUTH_REFRESH_SECRET: "r".repeat(32), MASTER_KEY: "m".repeat(32) }).stopTimeoutMs;
/** The shortest grace period of the deployment files (k8s/api.yaml, core.yaml). */
const GRACE_MS = 40_000;

describeKafka("a node over Kafka stopping on SIGTERM", () => {
	let mock: KafkaMock;
	let proc: NodeProcess | null = null;
	let observer: TestNode | null = null;
	let dataDir: string;
	/** Everything the node wrote (node-process keeps only the tail). */
	let log = "";

	beforeEach(async () => {
		mock = await startKafkaMock();
		dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-kafka-stop-"));
		log = "";
	});
	afterEach(async () => {
		await proc?.kill();
		proc = null;
		await observer?.stop();
		observer = null;
		await mock?.stop();
		fs.rmSync(dataDir, { recursive: true, force: true });
	});

	function startCore(namespace: string, nodeID: string): NodeProcess {
		const p = startNodeProcess({
			TRANSPORTER: mock.url,
			NAMESPACE: namespace,
			NODE_ID: nodeID,
			KAFKA_FETCH_MAX_WAIT_MS: "20",
			SERVICES: DEPLOYED_CORE_SERVICES.join(","),
			DATA_DIR: dataDir,
			DATABASE_URL: `sqlite:${path.join(dataDir, "core.sqlite")}`,
			BCRYPT_ROUNDS: "4",
			METRICS: "off",
			// info: the start line is awaited; the assertions look at WARN and ERROR lines only.
			LOG_LEVEL: "info",
		});
		p.child.stdout?.on("data", d => (log += d));
		p.child.stderr?.on("data", d => (log += d));
		return p;
	}

	const started = (p: NodeProcess) => until("the node started", () => /started successfully/.test(log), 120_000, () => p.output().slice(-3000));
	const warnings = () => log.split("\n").filter(l => /\b(WARN|ERROR|FATAL)\b/.test(l));

	/** SIGTERM, then the exit (awaited up to well past the grace period, so a slow stop is measured, not cut). */
	async function sigterm(p: NodeProcess): Promise<{ ms: number; code: number | null }> {
		const exited = new Promise<void>(resolve => p.child.once("exit", () => resolve()));
		const t0 = Date.now();
		p.child.kill("SIGTERM");
		let timer: NodeJS.Timeout | undefined;
		await Promise.race([exited, new Promise(r => (timer = setTimeout(r, 2 * GRACE_MS + 30_000)))]);
		const ms = Date.now() - t0;
		clearTimeout(timer);
		return { ms, code: p.child.exitCode };
	}

	it("exits within the bound when the brokers are gone, and logs the outage once", async () => {
		proc = startCore(uniqueId("kstop"), uniqueId("core"));
		await started(proc);
		await mock.stop();
		// The node noticed (its consumers fetch continuously).
		await until("the node to notice the brokers are gone", () => /ECONNREFUSED/.test(log), 60_000, () => log.slice(-3000));

		const { ms, code } = await sigterm(proc);
		// Stopped by itself (code 0), not by STOP_TIMEOUT_MS (code 1) nor the test (null).
		expect({ code, log: code === 0 ? "" : log.slice(-5000) }).toEqual({ code: 0, log: "" });
		// A correctness bound, far from the stop's usual length: it would have been past the grace period.
		expect(ms).toBeLessThan(STOP_TIMEOUT_MS);
		expect(STOP_TIMEOUT_MS).toBeLessThan(GRACE_MS);

		// The outage is said once; no stack traces; no line per kafkajs retry.
		expect(log.match(/Kafka cluster unreachable/g)).toHaveLength(1);
		expect(log).not.toMatch(/^\s+at /m);
		expect(log).not.toMatch(/stack:/);
		const kafkaWarnings = warnings().filter(l => /kafka|transporter|transit/i.test(l));
		expect(kafkaWarnings.length).toBeLessThanOrEqual(3);
	}, 240_000);

	it("stops gracefully when the brokers are up: the other nodes get its DISCONNECT, nothing is logged as a problem", async () => {
		const namespace = uniqueId("kstop");
		const nodeID = uniqueId("core");
		proc = startCore(namespace, nodeID);
		observer = await startNode({ services: [], env: { TRANSPORTER: mock.url, NAMESPACE: namespace, KAFKA_FETCH_MAX_WAIT_MS: "20" }, nodeID: uniqueId("observer") });
		await started(proc);
		await until("the observer to see the core node", () => observer!.broker.registry.nodes.get(nodeID)?.available, 60_000, () => log.slice(-3000));
		const left: Array<{ unexpected: boolean }> = [];
		observer.broker.localBus.on("$node.disconnected", ({ node, unexpected }: { node: { id: string }; unexpected: boolean }) => {
			if (node.id === nodeID) left.push({ unexpected });
		});

		const { ms, code } = await sigterm(proc);
		expect({ code, log: code === 0 ? "" : log.slice(-5000) }).toEqual({ code: 0, log: "" });
		expect(ms).toBeLessThan(STOP_TIMEOUT_MS);
		// Its DISCONNECT arrived: the observer knows at once, not after heartbeatTimeout.
		await until("the observer to get the DISCONNECT", () => left.length > 0, 30_000);
		expect(left).toEqual([{ unexpected: false }]);
		expect(warnings()).toEqual([]);
	}, 240_000);
});
