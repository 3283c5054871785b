/**
 * What an idle node costs on the Kafka transporter (docs/deployment.md "Kafka (kafkajs)",
 * KAFKA_FETCH_MAX_WAIT_MS): one node with no services joins the cluster at TRANSPORTER, waits
 * until its consumer has settled, then for SECONDS (default 30) counts the requests its consumer
 * sends (by Kafka API: Fetch, Heartbeat, ...) and the process's CPU time. Run it once per value:
 *
 *   TRANSPORTER=kafka://127.0.0.1:9092 KAFKA_FETCH_MAX_WAIT_MS=500 node dist/bench/kafka-idle.js
 *
 * Prints one JSON line. The consumer is the transporter's own (a private field, read here only).
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { Consumer } from "kafkajs";
import { loadConfig } from "../lib/config";
import { createNode } from "../lib/node";

async function main(): Promise<void> {
	const seconds = Number(process.env.SECONDS || 30);
	const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-kafka-idle-"));
	const env = {
		NODE_ENV: "test",
		DATA_DIR: dataDir,
		LOG_LEVEL: "warn",
		TRANSPORTER: process.env.TRANSPORTER,
		NAMESPACE: process.env.NAMESPACE || `idle-${process.pid}`,
		KAFKA_FETCH_MAX_WAIT_MS: process.env.KAFKA_FETCH_MAX_WAIT_MS,
	};
	if (!env.TRANSPORTER?.startsWith("kafka://")) throw new Error("Set TRANSPORTER=kafka://host:port");
	const config = loadConfig(env);
	const broker = await createNode({ config, env, services: [] });
	await broker.start();
	// Let the group settle (joins, first fetches) before counting.
	await new Promise(r => setTimeout(r, 5_000));
	const consumer = (broker.transit!.tx as unknown as { nodeConsumer: Consumer | null }).nodeConsumer;
	if (!consumer) throw new Error("no node consumer");
	const requests: Record<string, number> = {};
	const off = consumer.on(consumer.events.REQUEST, e => {
		const api = (e.payload as { apiName: string }).apiName;
		requests[api] = (requests[api] || 0) + 1;
	});
	const cpu0 = process.cpuUsage();
	const t0 = process.hrtime.bigint();
	await new Promise(r => setTimeout(r, seconds * 1000));
	const cpu = process.cpuUsage(cpu0);
	const elapsed = Number(process.hrtime.bigint() - t0) / 1e9;
	off();
	await broker.stop();
	fs.rmSync(dataDir, { recursive: true, force: true });
	const perSecond = Object.fromEntries(Object.entries(requests).map(([k, v]) => [k, Math.round((v / elapsed) * 100) / 100]));
	console.log(
		JSON.stringify({
			fetchMaxWaitMs: Number(env.KAFKA_FETCH_MAX_WAIT_MS || 500),
			seconds: Math.round(elapsed * 10) / 10,
			requests,
			perSecond,
			cpuMsPerSecond: Math.round(((cpu.user + cpu.system) / 1000 / elapsed) * 100) / 100,
		}),
	);
}

main().catch(err => {
	console.error(err);
	process.exit(1);
});
