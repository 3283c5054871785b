/**
 * Builds one node: configuration, the shared Sequelize instance (migrated), Redis, the broker and
 * the services this node runs (`SERVICES`, default all). Used by `npm start` and by the tests.
 */
import fs from "node:fs";
import path from "node:path";
import { ServiceBroker, ServiceSchema } from "moleculer";
import Redis from "ioredis";
import { AppConfig, startupWarnings } from "./config";
import { createSequelize, runMigrations } from "./db";
import { defineModels } from "../models";
import { attachApp, App } from "./app";
import { Clock, systemClock } from "./clock";
import { brokerOptions } from "../moleculer.config";

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
	env?: NodeJS.ProcessEnv;
	nodeID?: string;
}

export async function createNode(opts: NodeOptions): Promise<ServiceBroker> {
	const { config } = opts;
	const sequelize = createSequelize(config.databaseUrl);
	await runMigrations(sequelize);
	const models = defineModels(sequelize);
	const redis = config.redisUrl ? new Redis(config.redisUrl, { maxRetriesPerRequest: 3, lazyConnect: false }) : null;
	if (redis) redis.on("error", () => undefined); // surfaced where used; avoid unhandled 'error' events

	const options = brokerOptions(config, opts.env || process.env);
	if (opts.nodeID) options.nodeID = opts.nodeID;
	const broker = new ServiceBroker({
		...options,
		stopped: async () => {
			await sequelize.close().catch(() => undefined);
			if (redis) redis.disconnect();
		},
	});
	const app: App = { config, sequelize, models, redis, clock: opts.clock || systemClock };
	attachApp(broker, app);

	const available = availableServices();
	const wanted = opts.services || config.services || Object.keys(available);
	for (const name of wanted) {
		const file = available[name];
		if (!file) throw new Error(`Configuration: unknown service "${name}" in SERVICES (known: ${Object.keys(available).join(", ")})`);
		broker.createService(loadServiceSchema(file));
	}
	for (const warning of startupWarnings(config, wanted)) broker.logger.warn(warning);
	return broker;
}
