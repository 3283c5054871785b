import { DataTypes, Model, Sequelize, InferAttributes, InferCreationAttributes } from "sequelize";
import { jsonTextAttribute } from "../lib/payments/columns";

/**
 * An event written in the same DB transaction as the state change it describes (outbox). `id`
 * is the webhook event id (stable across retries); the envelope is
 * `{ id, type, created: createdAt, livemode, data: { object: payload } }`. `publishedAt` is set by
 * whoever delivers it (webhooks), who may add delivery columns in a later migration.
 */
export class OutboxEvent extends Model<InferAttributes<OutboxEvent>, InferCreationAttributes<OutboxEvent>> {
	declare id: string;
	declare type: string;
	declare organizationId: string;
	/** The API key that owns the payment (its webhook URL and secret); null: no webhook. */
	declare apiKeyId: number | null;
	declare livemode: boolean;
	declare payload: Record<string, unknown>;
	declare createdAt: Date;
	declare publishedAt: Date | null;

	static initModel(sequelize: Sequelize): typeof OutboxEvent {
		// A subclass per Sequelize instance, so two brokers in one process never share model state.
		return (class extends OutboxEvent {}).init(
			{
				id: { type: DataTypes.STRING(36), primaryKey: true },
				type: DataTypes.STRING(64),
				organizationId: DataTypes.STRING(36),
				apiKeyId: DataTypes.INTEGER,
				livemode: DataTypes.BOOLEAN,
				payload: jsonTextAttribute("payload", {}, false),
				createdAt: DataTypes.DATE(3),
				publishedAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "outbox_events", timestamps: false },
		);
	}
}
