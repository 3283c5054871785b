/**
 * moleculer-db on the node's ONE shared Sequelize instance. `DbMixin("User")` gives a service
 * `this.adapter` (moleculer-db-adapter-sequelize) bound to the model already defined in
 * models/ (`appOf(broker).models.User`): no second connection pool, no sync() (migrations own
 * the schema), and stopping the service never closes the shared instance (the node does, once).
 *
 * moleculer-db's generic CRUD actions (find, list, get, create, update, remove, ...) are removed:
 * they declare `rest` routes of their own and would bypass `auth`, validation and tenancy.
 * Services write their own actions and use `this.adapter` / `this.adapter.model`.
 */
import type { ServiceBroker, ServiceSchema } from "moleculer";
import DbService from "moleculer-db";
import SequelizeDbAdapter from "moleculer-db-adapter-sequelize";
import type { Sequelize, ModelStatic, Model } from "sequelize";
import { appOf } from "../lib/app";
import type { Models } from "../models";

export type ModelName = keyof Models;

/** The parts of the adapter services use, typed (the package's typings omit `model`). */
export interface SharedAdapter<M extends ModelName = ModelName> {
	model: Models[M];
	db: Sequelize;
	findById(id: unknown): Promise<InstanceType<Models[M]> | null>;
	find(filters: { query?: object; limit?: number; offset?: number; sort?: string | string[] }): Promise<Array<InstanceType<Models[M]>>>;
	count(filters?: { query?: object }): Promise<number>;
	entityToObject(entity: Model): Record<string, unknown>;
}

interface AdapterInternals {
	broker: ServiceBroker;
	service: { model?: unknown; logger: { debug(...args: unknown[]): void } };
	db?: Sequelize;
	model?: ModelStatic<Model>;
}

/** Uses the shared instance and the defined model; never syncs, never closes. */
export class SharedSequelizeAdapter extends SequelizeDbAdapter {
	readonly modelName: ModelName;

	constructor(modelName: ModelName) {
		super({});
		this.modelName = modelName;
	}

	/** moleculer-db's check for `schema.model` does not apply: the model comes from the node. */
	init(broker: ServiceBroker, service: any): void {
		const self = this as unknown as AdapterInternals;
		self.broker = broker;
		self.service = service;
	}

	async connect(): Promise<void> {
		const self = this as unknown as AdapterInternals;
		const app = appOf(self.broker);
		const model = app.models[this.modelName] as unknown as ModelStatic<Model> | undefined;
		if (!model) throw new Error(`DbMixin: no model "${this.modelName}" on this node`);
		self.db = app.sequelize;
		self.model = model;
		self.service.model = model;
	}

	async disconnect(): Promise<void> {
		// The shared instance belongs to the node (lib/node.ts closes it once when the broker stops).
	}
}

const REMOVED_ACTIONS = ["find", "count", "list", "create", "insert", "get", "update", "remove"] as const;

export function DbMixin(modelName: ModelName): Partial<ServiceSchema> {
	return {
		mixins: [DbService as unknown as ServiceSchema],
		// moleculer-db requires an adapter on the schema; each service instance gets its own below
		// (a schema may be instantiated by several brokers in one process, e.g. tests).
		adapter: new SharedSequelizeAdapter(modelName),
		settings: { idField: "id" },
		actions: Object.fromEntries(REMOVED_ACTIONS.map(name => [name, false])),
		created(this: any) {
			this.adapter = new SharedSequelizeAdapter(modelName);
			this.adapter.init(this.broker, this);
		},
	} as Partial<ServiceSchema>;
}

export default DbMixin;
