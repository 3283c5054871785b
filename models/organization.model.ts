import { DataTypes, Model, Sequelize, CreationOptional, InferAttributes, InferCreationAttributes } from "sequelize";

export type OrganizationMode = "sandbox" | "live";
export type MembershipRole = "owner" | "admin" | "member";

export class Organization extends Model<InferAttributes<Organization>, InferCreationAttributes<Organization>> {
	declare id: string;
	declare name: string;
	declare mode: OrganizationMode;
	declare createdAt: CreationOptional<Date>;
	declare updatedAt: CreationOptional<Date>;

	static initModel(sequelize: Sequelize): typeof Organization {
		// A subclass per Sequelize instance, so two brokers in one process never share model state.
		return (class extends Organization {}).init(
			{
				id: { type: DataTypes.STRING(36), primaryKey: true },
				name: DataTypes.STRING(120),
				mode: DataTypes.STRING(10),
				createdAt: DataTypes.DATE(3),
				updatedAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "organizations" },
		);
	}
}

export class Membership extends Model<InferAttributes<Membership>, InferCreationAttributes<Membership>> {
	declare id: CreationOptional<number>;
	declare organizationId: string;
	declare userId: number;
	declare role: MembershipRole;
	declare createdAt: CreationOptional<Date>;
	declare updatedAt: CreationOptional<Date>;

	static initModel(sequelize: Sequelize): typeof Membership {
		// A subclass per Sequelize instance, so two brokers in one process never share model state.
		return (class extends Membership {}).init(
			{
				id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
				organizationId: DataTypes.STRING(36),
				userId: DataTypes.INTEGER,
				role: DataTypes.STRING(20),
				createdAt: DataTypes.DATE(3),
				updatedAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "memberships" },
		);
	}
}
