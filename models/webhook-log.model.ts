import { DataTypes, Model, Sequelize, CreationOptional, InferAttributes, InferCreationAttributes } from "sequelize";

/** One delivery attempt (spec "Webhook log"); UNIQUE (deliveryId, attemptNumber): an attempt is logged once. */
export class WebhookLog extends Model<InferAttributes<WebhookLog>, InferCreationAttributes<WebhookLog>> {
	declare id: CreationOptional<number>;
	declare deliveryId: string;
	declare eventId: string;
	declare organizationId: string;
	declare apiKeyId: number;
	declare userId: number | null;
	declare event: string;
	declare url: string;
	declare statusCode: number | null;
	declare success: boolean;
	declare attemptNumber: number;
	declare error: string | null;
	declare response: string | null;
	declare durationMs: number | null;
	declare createdAt: Date;

	static initModel(sequelize: Sequelize): typeof WebhookLog {
		return (class extends WebhookLog {}).init(
			{
				id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
				deliveryId: DataTypes.STRING(36),
				eventId: DataTypes.STRING(64),
				organizationId: DataTypes.STRING(36),
				apiKeyId: DataTypes.INTEGER,
				userId: DataTypes.INTEGER,
				event: DataTypes.STRING(64),
				url: DataTypes.STRING(2048),
				statusCode: DataTypes.INTEGER,
				success: DataTypes.BOOLEAN,
				attemptNumber: DataTypes.INTEGER,
				error: DataTypes.TEXT,
				response: DataTypes.TEXT,
				durationMs: DataTypes.INTEGER,
				createdAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "webhook_logs", timestamps: false },
		);
	}
}
