import { DataTypes, Model, Sequelize, InferAttributes, InferCreationAttributes } from "sequelize";

export type DeliveryStatus = "pending" | "sending" | "delivered" | "failed" | "canceled";
export type DeliveryKind = "event" | "test" | "custom";

/**
 * One event on its way to one API key's webhook URL: the durable queue of the webhooks service.
 * `body` is the exact JSON sent (every attempt sends the same bytes and event id). An attempt is
 * claimed by setting status `sending` with a lease (owner, token, until); a lease that ran out
 * belongs to a node that stopped mid-attempt, and another node records that attempt's outcome.
 */
export class WebhookDelivery extends Model<InferAttributes<WebhookDelivery>, InferCreationAttributes<WebhookDelivery>> {
	declare id: string;
	declare eventId: string;
	declare kind: DeliveryKind;
	declare type: string;
	declare organizationId: string;
	declare apiKeyId: number;
	/** Who the log rows name: the user who sent a test, else the key's creator. */
	declare userId: number | null;
	declare livemode: boolean;
	declare url: string;
	declare body: string;
	declare status: DeliveryStatus;
	/** Attempts started (the number of the attempt in flight while `sending`). */
	declare attempts: number;
	declare nextAttemptAt: Date | null;
	declare leaseOwner: string | null;
	declare leaseToken: string | null;
	declare leaseUntil: Date | null;
	declare lastStatusCode: number | null;
	declare lastError: string | null;
	declare createdAt: Date;
	declare updatedAt: Date;
	declare deliveredAt: Date | null;

	static initModel(sequelize: Sequelize): typeof WebhookDelivery {
		// A subclass per Sequelize instance, so two brokers in one process never share model state.
		return (class extends WebhookDelivery {}).init(
			{
				id: { type: DataTypes.STRING(36), primaryKey: true },
				eventId: DataTypes.STRING(64),
				kind: DataTypes.STRING(10),
				type: DataTypes.STRING(64),
				organizationId: DataTypes.STRING(36),
				apiKeyId: DataTypes.INTEGER,
				userId: DataTypes.INTEGER,
				livemode: DataTypes.BOOLEAN,
				url: DataTypes.STRING(2048),
				body: DataTypes.TEXT("medium"),
				status: DataTypes.STRING(12),
				attempts: DataTypes.INTEGER,
				nextAttemptAt: DataTypes.DATE(3),
				leaseOwner: DataTypes.STRING(100),
				leaseToken: DataTypes.STRING(36),
				leaseUntil: DataTypes.DATE(3),
				lastStatusCode: DataTypes.INTEGER,
				lastError: DataTypes.TEXT,
				createdAt: DataTypes.DATE(3),
				updatedAt: DataTypes.DATE(3),
				deliveredAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "webhook_deliveries", timestamps: false },
		);
	}
}
