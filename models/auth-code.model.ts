import { DataTypes, Model, Sequelize, CreationOptional, InferAttributes, InferCreationAttributes } from "sequelize";

export type AuthCodePurpose = "register" | "login";

/** An emailed 6-digit code, stored as a keyed digest. */
export class AuthCode extends Model<InferAttributes<AuthCode>, InferCreationAttributes<AuthCode>> {
	declare id: CreationOptional<number>;
	declare email: string;
	declare purpose: AuthCodePurpose;
	declare codeDigest: string;
	declare attempts: CreationOptional<number>;
	declare expiresAt: Date;
	declare usedAt: CreationOptional<Date | null>;
	declare createdAt: CreationOptional<Date>;
	declare updatedAt: CreationOptional<Date>;

	static initModel(sequelize: Sequelize): typeof AuthCode {
		// A subclass per Sequelize instance, so two brokers in one process never share model state.
		return (class extends AuthCode {}).init(
			{
				id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
				email: DataTypes.STRING(254),
				purpose: DataTypes.STRING(20),
				codeDigest: DataTypes.STRING(64),
				attempts: { type: DataTypes.INTEGER, defaultValue: 0 },
				expiresAt: DataTypes.DATE(3),
				usedAt: DataTypes.DATE(3),
				createdAt: DataTypes.DATE(3),
				updatedAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "auth_codes" },
		);
	}
}
