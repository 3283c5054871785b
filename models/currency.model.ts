import { DataTypes, Model, Sequelize, CreationOptional, InferAttributes, InferCreationAttributes } from "sequelize";

/** A fiat currency (ISO 4217 code, minor-unit decimals). Seeded by the pricing service. */
export class Currency extends Model<InferAttributes<Currency>, InferCreationAttributes<Currency>> {
	declare id: string;
	declare code: string;
	declare name: string;
	declare symbol: string;
	declare decimals: number;
	declare isActive: CreationOptional<boolean>;
	declare createdAt: CreationOptional<Date>;
	declare updatedAt: CreationOptional<Date>;

	static initModel(sequelize: Sequelize): typeof Currency {
		// A subclass per Sequelize instance, so two brokers in one process never share model state.
		return (class extends Currency {}).init(
			{
				id: { type: DataTypes.STRING(36), primaryKey: true },
				code: DataTypes.STRING(3),
				name: DataTypes.STRING(100),
				symbol: DataTypes.STRING(10),
				decimals: DataTypes.INTEGER,
				isActive: { type: DataTypes.BOOLEAN, defaultValue: true },
				createdAt: DataTypes.DATE(3),
				updatedAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "currencies" },
		);
	}
}
