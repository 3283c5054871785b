import { DataTypes, Model, Sequelize, CreationOptional, InferAttributes, InferCreationAttributes } from "sequelize";

/**
 * An event received on POST /webhooks, stored once: UNIQUE dedupeKey (the sender's scope and the
 * event's id, or the digest of the body when it has none). `dispatchedAt` is set once the
 * handlers were told.
 */
export class InboundEvent extends Model<InferAttributes<InboundEvent>, InferCreationAttributes<InboundEvent>> {
	declare id: CreationOptional<number>;
	declare dedupeKey: string;
	declare eventId: string;
	declare type: string;
	declare organizationId: string | null;
	declare apiKeyId: number | null;
	declare signatureVerified: boolean;
	declare payload: string;
	declare receivedAt: Date;
	declare dispatchedAt: Date | null;

	static initModel(sequelize: Sequelize): typeof InboundEvent {
		return (class extends InboundEvent {}).init(
			{
				id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
				dedupeKey: DataTypes.STRING(64),
				eventId: DataTypes.STRING(100),
				type: DataTypes.STRING(100),
				organizationId: DataTypes.STRING(36),
				apiKeyId: DataTypes.INTEGER,
				signatureVerified: DataTypes.BOOLEAN,
				payload: DataTypes.TEXT("medium"),
				receivedAt: DataTypes.DATE(3),
				dispatchedAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "inbound_events", timestamps: false },
		);
	}
}
