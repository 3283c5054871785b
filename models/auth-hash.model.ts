import { DataTypes, Model, Sequelize, CreationOptional, InferAttributes, InferCreationAttributes } from "sequelize";

export type AuthHashPurpose = "confirm" | "confirmNew" | "reset";

/** A single-use link token (email confirmation, changed-email confirmation, password reset), stored as a digest. */
export class AuthHash extends Model<InferAttributes<AuthHash>, InferCreationAttributes<AuthHash>> {
	declare id: CreationOptional<number>;
	declare userId: number;
	declare purpose: AuthHashPurpose;
	declare hashDigest: string;
	declare email: CreationOptional<string | null>;
	declare expiresAt: Date;
	declare usedAt: CreationOptional<Date | null>;
	declare createdAt: CreationOptional<Date>;
	declare updatedAt: CreationOptional<Date>;

	static initModel(sequelize: Sequelize): typeof AuthHash {
		// A subclass per Sequelize instance, so two brokers in one process never share model state.
		return (class extends AuthHash {}).init(
			{
				id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
				userId: DataTypes.INTEGER,
				purpose: DataTypes.STRING(20),
				hashDigest: DataTypes.STRING(64),
				email: DataTypes.STRING(254),
				expiresAt: DataTypes.DATE(3),
				usedAt: DataTypes.DATE(3),
				createdAt: DataTypes.DATE(3),
				updatedAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "auth_hashes" },
		);
	}
}
