/**
 * Builds one node: configuration, the shared Sequelize instance (migrated), Redis, the broker and
 * the services this node runs (`SERVICES`, default all). Used by `npm start` and by the tests.
 */
import fs from "node:fs";
import path from "node:path";
import { Loggers, ServiceBroker, type BrokerOptions, type ServiceSchema } from "moleculer";
import { createRedis, logOutages, waitForRedis } from "./redis";
import { AppConfig, startupWarnings } from "./config";
import { createSequelize, runMigrations } from "./db";
import { defineModels } from "../models";
import { attachApp, App } from "./app";
import { Clock, systemClock } from "./clock";
import { brokerOptions, transporterWarnings } from "../moleculer.config";
import { registerAppMetrics } from "./metrics";
import { misplacedSettingWarnings } from "./setting-scopes";
import { announceCheckoutChanges } from "./payments/checkout-changes";

const SERVICES_DIR = path.resolve(__dirname, "../services");

/** Every service file `services/<name>.service.(ts|js)`, by name. */
export function availableServices(): Record<string, string> {
	const out: Record<string, string> = {};
	for (const file of fs.readdirSync(SERVICES_DIR)) {
		const m = /^(.+)\.service\.(ts|js)$/.exec(file);
		if (m && !file.endsWith(".d.ts")) out[m[1]] = path.join(SERVICES_DIR, file);
	}
	return out;
}

export function loadServiceSchema(file: string): ServiceSchema {
	// eslint-disable-next-line @typescript-eslint/no-require-imports
	const mod = require(file);
	return (mod.default || mod) as ServiceSchema;
}

export interface NodeOptions {
	config: AppConfig;
	/** Override SERVICES (tests pick what they need). */
	services?: string[];
	clock?: Clock;
	/** What the broker options read besides the configuration (NAMESPACE, NODE_ID, TCP_*, KAFKA_*, METRICS_PORT); start.ts passes the process's. */
	env?: NodeJS.ProcessEnv;
	nodeID?: string;
	/** A logger besides the configured one (tests collect log lines with it). */
	extraLogger?: Loggers.Base<{ level?: Loggers.LogLevels }>;
}

/**
 * A broker whose `stop()` runs once however many callers ask at the same time. Moleculer's own
 * SIGINT/SIGTERM handler, lib/start.ts's and the REPL's `quit` / Ctrl+D each call `stop()`; without
 * this, two of them at once stopped every service twice (each logging its stop twice). A stop
 * asked for after the previous one finished runs again (tests restart brokers).
 */
export class NodeBroker extends ServiceBroker {
	private stopRun: Promise<void> | null = null;

	stop(): Promise<void> {
		if (!this.stopRun) {
			this.stopRun = super.stop().finally(() => {
				this.stopRun = null;
			});
		}
		return this.stopRun;
	}
}

export async function createNode(opts: NodeOptions): Promise<ServiceBroker> {
	const { config } = opts;
	const sequelize = createSequelize(config.databaseUrl);
	await runMigrations(sequelize);
	const models = defineModels(sequelize);
	const redis = config.redisUrl ? createRedis(config.redisUrl) : null;

	const options = brokerOptions(config, opts.env ?? {}, redis);
	if (opts.nodeID) options.nodeID = opts.nodeID;
	if (opts.extraLogger) options.logger = [options.logger, opts.extraLogger] as BrokerOptions["logger"];
	const broker = new NodeBroker({
		...options,
		stopped: async () => {
			await sequelize.close().catch(() => undefined);
			if (redis) redis.disconnect();
		},
	});
	if (redis) {
		logOutages(redis, broker.getLogger("redis"));
		await waitForRedis(redis);
	}
	const app: App = { config, sequelize, models, redis, clock: opts.clock || systemClock };
	attachApp(broker, app);
	registerAppMetrics(broker);
	// Committed changes of checkouts, links and intents wake the pay page's streams on every gateway node.
	announceCheckoutChanges(broker, models);

	const available = availableServices();
	const wanted = opts.services || config.services || Object.keys(available);
	try {
		for (const name of wanted) {
			const file = available[name];
			if (!file) throw new Error(`Configuration: unknown service "${name}" in SERVICES (known: ${Object.keys(available).join(", ")})`);
			broker.createService(loadServiceSchema(file));
		}
	} catch (err) {
		// A service refused its configuration: nothing of this node may stay open.
		await sequelize.close().catch(() => undefined);
		if (redis) redis.disconnect();
		throw err;
	}
	// Variables this node's services do not act on (a catalogue setting given to a watcher, an RPC URL to the core): said once, here.
	const misplaced = await misplacedSettingWarnings(opts.env ?? {}, wanted, models);
	for (const warning of [...startupWarnings(config, wanted), ...transporterWarnings(config, opts.env ?? {}), ...misplaced]) broker.logger.warn(warning);
	return broker;
}
