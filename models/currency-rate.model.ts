import { DataTypes, Model, Sequelize, InferAttributes, InferCreationAttributes } from "sequelize";
import { moneyAttribute } from "../lib/money";

/** 1 base = rate quote. History: a change is a new row; the newest row of a pair is the rate. */
export class CurrencyRate extends Model<InferAttributes<CurrencyRate>, InferCreationAttributes<CurrencyRate>> {
	declare id: string;
	declare baseCurrencyId: string;
	declare quoteCurrencyId: string;
	declare rate: string;
	declare source: string;
	declare createdAt: Date;
	/** When the source last confirmed the rate. */
	declare confirmedAt: Date;

	static initModel(sequelize: Sequelize): typeof CurrencyRate {
		// A subclass per Sequelize instance, so two brokers in one process never share model state.
		return (class extends CurrencyRate {}).init(
			{
				id: { type: DataTypes.STRING(36), primaryKey: true },
				baseCurrencyId: DataTypes.STRING(36),
				quoteCurrencyId: DataTypes.STRING(36),
				rate: moneyAttribute("rate", sequelize.getDialect()),
				source: DataTypes.STRING(40),
				createdAt: DataTypes.DATE(3),
				confirmedAt: DataTypes.DATE(3),
			},
			// createdAt is set by the service (app clock, strictly increasing per pair).
			{ sequelize, tableName: "currency_rates", timestamps: false },
		);
	}
}
