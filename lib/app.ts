/**
 * Per-node shared resources, hung off the broker: configuration, the one Sequelize instance with
 * its models, Redis (when configured) and the clock. Services reach them with `appOf(this.broker)`.
 */
import type { ServiceBroker } from "moleculer";
import type { Sequelize } from "sequelize";
import type Redis from "ioredis";
import type { AppConfig } from "./config";
import type { Models } from "../models";
import type { Clock } from "./clock";

export interface App {
	config: AppConfig;
	sequelize: Sequelize;
	models: Models;
	redis: Redis | null;
	clock: Clock;
}

const apps = new WeakMap<ServiceBroker, App>();

export function attachApp(broker: ServiceBroker, app: App): void {
	apps.set(broker, app);
}

export function appOf(broker: ServiceBroker): App {
	const app = apps.get(broker);
	if (!app) throw new Error("No application context attached to this broker (use createBroker)");
	return app;
}
