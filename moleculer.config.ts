/**
 * Broker options from the configuration contract (lib/config.ts): transporter, cacher, logger,
 * metrics and tracing. Nothing here is switched by code: only by environment variables.
 */
import os from "node:os";
import type { BrokerOptions } from "moleculer";
import type Redis from "ioredis";
import type { AppConfig } from "./lib/config";
import { int, list } from "./lib/env";
import { RedisCacher } from "./lib/redis";
import { KafkaJsTransporter, kafkaOptionsFromEnv } from "./lib/kafkajs-transporter";
import { NatsTransporter, natsAuthenticated, natsOptionsFromEnv } from "./lib/nats-transporter";

function tcpPort(value: string | undefined): number | undefined {
	// Unset: Moleculer picks a free one.
	return (value ?? "").trim() === "" ? undefined : int("TCP_PORT", value, 0, 1, 65535);
}

export function transporterOption(config: AppConfig, env: NodeJS.ProcessEnv = process.env): BrokerOptions["transporter"] {
	const url = config.transporter;
	if (!url) return undefined;
	if (url === "tcp" || url.startsWith("tcp://")) {
		// Never UDP discovery or multicast: peers come from a static list (TCP_URLS="host:port/nodeID,...").
		return {
			type: "TCP",
			options: {
				udpDiscovery: false,
				port: tcpPort(env.TCP_PORT),
				urls: env.TCP_URLS ? list(env.TCP_URLS) : url.startsWith("tcp://") ? url.slice(6).split(",") : [],
			},
		} as unknown as BrokerOptions["transporter"];
	}
	if (url.startsWith("kafka://")) {
		// Ours on kafkajs, not Moleculer's (which needs @platformatic/kafka); KAFKA_* tune it.
		return new KafkaJsTransporter(kafkaOptionsFromEnv(url, env)) as unknown as BrokerOptions["transporter"];
	}
	if (isNats(url)) {
		// Moleculer's, given decoded credentials and TLS from NATS_* (lib/nats-transporter.ts).
		return new NatsTransporter(natsOptionsFromEnv(url, env)) as unknown as BrokerOptions["transporter"];
	}
	return url as BrokerOptions["transporter"]; // redis://, amqp://: Moleculer's own transporters.
}

const isNats = (url: string) => url.startsWith("nats://") || url.startsWith("tls://");

/**
 * Production warnings about the transporter: whoever reaches it can call the internal money actions
 * (docs/deployment.md "Security"), so one that asks nodes for no credentials is said at start.
 * TCP in production is refused by the configuration itself (lib/config.ts).
 */
export function transporterWarnings(config: AppConfig, env: NodeJS.ProcessEnv = process.env): string[] {
	const url = config.transporter;
	if (config.env !== "production" || !url) return [];
	const risk = "any process that reaches it can call the internal money actions (docs/deployment.md \"Security\")";
	if (isNats(url) && !natsAuthenticated(natsOptionsFromEnv(url, env))) return [`The NATS transporter has no credentials (NATS_USER/NATS_PASSWORD, NATS_TOKEN): ${risk}`];
	if (url.startsWith("kafka://") && !kafkaOptionsFromEnv(url, env).sasl) return [`The Kafka transporter has no SASL credentials (KAFKA_SASL_MECHANISM): ${risk}`];
	if (url.startsWith("redis://") || url.startsWith("amqp://")) return [`The ${url.split(":")[0]} transporter's credentials and TLS are not checked here: ${risk}`];
	return [];
}

/** `redis`: the node's connection (lib/redis.ts), which the cache shares when `REDIS_URL` is set. */
export function brokerOptions(config: AppConfig, env: NodeJS.ProcessEnv = process.env, redis: Redis | null = null): BrokerOptions {
	return {
		namespace: env.NAMESPACE || "",
		nodeID: env.NODE_ID || `${os.hostname()}-${process.pid}`,
		transporter: transporterOption(config, env),
		cacher: config.cacher === "redis" && redis ? new RedisCacher(redis, { prefix: `${config.redisPrefix}cache` }) : "Memory",
		serializer: "JSON",
		requestTimeout: 30_000,
		retryPolicy: { enabled: false },
		contextParamsCloning: false,
		heartbeatInterval: 5,
		heartbeatTimeout: 15,
		tracking: { enabled: true, shutdownTimeout: 10_000 },
		disableBalancer: false,
		registry: { strategy: "RoundRobin", preferLocal: true },
		circuitBreaker: { enabled: false },
		bulkhead: { enabled: false },
		validator: true,
		errorHandler: undefined,
		metrics: { enabled: config.metrics, reporter: [{ type: "Prometheus", options: { port: int("METRICS_PORT", env.METRICS_PORT, 3030, 0, 65535) } }] },
		tracing: { enabled: config.tracing, exporter: [{ type: "Console" }] },
		logger: { type: "Console", options: { level: config.logLevel, colors: process.stdout.isTTY, formatter: "short" } },
		logLevel: config.logLevel as BrokerOptions["logLevel"],
	};
}

export default brokerOptions;
