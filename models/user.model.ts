import { DataTypes, Model, Sequelize, CreationOptional, InferAttributes, InferCreationAttributes } from "sequelize";

export type UserRole = "admin" | "user";
export type UserStatus = "active" | "inactive";

export class User extends Model<InferAttributes<User>, InferCreationAttributes<User>> {
	declare id: CreationOptional<number>;
	declare email: string | null;
	declare passwordHash: string | null;
	declare firstName: string | null;
	declare lastName: string | null;
	declare role: CreationOptional<UserRole>;
	declare status: CreationOptional<UserStatus>;
	declare provider: CreationOptional<string>;
	declare emailConfirmedAt: Date | null;
	declare pendingEmail: CreationOptional<string | null>;
	declare passwordChangedAt: CreationOptional<Date | null>;
	declare photoId: CreationOptional<string | null>;
	declare createdAt: CreationOptional<Date>;
	declare updatedAt: CreationOptional<Date>;
	declare deletedAt: CreationOptional<Date | null>;

	static initModel(sequelize: Sequelize): typeof User {
		// A subclass per Sequelize instance, so two brokers in one process never share model state.
		return (class extends User {}).init(
			{
				id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
				email: DataTypes.STRING(254),
				passwordHash: DataTypes.STRING(100),
				firstName: DataTypes.STRING(100),
				lastName: DataTypes.STRING(100),
				role: { type: DataTypes.STRING(20), defaultValue: "user" },
				status: { type: DataTypes.STRING(20), defaultValue: "active" },
				provider: { type: DataTypes.STRING(20), defaultValue: "email" },
				emailConfirmedAt: DataTypes.DATE(3),
				pendingEmail: DataTypes.STRING(254),
				passwordChangedAt: DataTypes.DATE(3),
				photoId: DataTypes.STRING(36),
				createdAt: DataTypes.DATE(3),
				updatedAt: DataTypes.DATE(3),
				deletedAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "users", paranoid: true },
		);
	}
}
