import { DataTypes, Model, Sequelize, CreationOptional, InferAttributes, InferCreationAttributes } from "sequelize";

/**
 * A claimed Idempotency-Key and the response it produced (mixins/idempotency.mixin.ts). The row
 * is written in the same DB transaction as what the request created, so a key is either unused
 * or bound to a committed result.
 */
export class IdempotencyKey extends Model<InferAttributes<IdempotencyKey>, InferCreationAttributes<IdempotencyKey>> {
	declare id: CreationOptional<number>;
	/** Whose key it is: `org:<id>` for API keys, `user:<id>|<organization>` for bearer tokens, `public` otherwise. */
	declare scope: string;
	declare key: string;
	/** sha256 of the action and its canonical params. */
	declare requestHash: string;
	declare responseStatus: number;
	declare responseBody: string;
	declare createdAt: Date;
	declare expiresAt: Date;

	static initModel(sequelize: Sequelize): typeof IdempotencyKey {
		// A subclass per Sequelize instance, so two brokers in one process never share model state.
		return (class extends IdempotencyKey {}).init(
			{
				id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
				scope: DataTypes.STRING(100),
				key: DataTypes.STRING(255),
				requestHash: DataTypes.STRING(64),
				responseStatus: DataTypes.INTEGER,
				responseBody: DataTypes.TEXT("medium"),
				createdAt: DataTypes.DATE(3),
				expiresAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "idempotency_keys", timestamps: false },
		);
	}
}
