import { DataTypes, Model, Sequelize, CreationOptional, InferAttributes, InferCreationAttributes } from "sequelize";
import type { OrganizationMode } from "./organization.model";

export class ApiKey extends Model<InferAttributes<ApiKey>, InferCreationAttributes<ApiKey>> {
	declare id: CreationOptional<number>;
	declare organizationId: string;
	declare createdByUserId: number | null;
	declare name: string;
	declare mode: OrganizationMode;
	declare keyPrefix: string;
	/** Keyed digest of the whole key, for look-up. */
	declare keyDigest: string;
	declare last4: string;
	/** Keyed digest of the secret, for checking without bcrypt. */
	declare secretDigest: string;
	/** The secret under the master key, recovered only to sign webhooks. */
	declare secretEncrypted: string;
	declare webhookUrl: string | null;
	declare status: CreationOptional<"active" | "revoked">;
	declare revokedAt: CreationOptional<Date | null>;
	declare createdAt: CreationOptional<Date>;
	declare updatedAt: CreationOptional<Date>;

	static initModel(sequelize: Sequelize): typeof ApiKey {
		// A subclass per Sequelize instance, so two brokers in one process never share model state.
		return (class extends ApiKey {}).init(
			{
				id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
				organizationId: DataTypes.STRING(36),
				createdByUserId: DataTypes.INTEGER,
				name: DataTypes.STRING(120),
				mode: DataTypes.STRING(10),
				keyPrefix: DataTypes.STRING(8),
				keyDigest: DataTypes.STRING(64),
				last4: DataTypes.STRING(4),
				secretDigest: DataTypes.STRING(64),
				secretEncrypted: DataTypes.TEXT,
				webhookUrl: DataTypes.STRING(2048),
				status: { type: DataTypes.STRING(10), defaultValue: "active" },
				revokedAt: DataTypes.DATE(3),
				createdAt: DataTypes.DATE(3),
				updatedAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "api_keys" },
		);
	}
}
