import { DataTypes, Model, Sequelize, InferAttributes, InferCreationAttributes } from "sequelize";
import { moneyAttribute } from "../lib/money";

/** A token's USD price. History: a change is a new row; the newest row of a token is its price. */
export class TokenPrice extends Model<InferAttributes<TokenPrice>, InferCreationAttributes<TokenPrice>> {
	declare id: string;
	declare tokenId: string;
	declare priceUsd: string;
	declare source: string;
	declare createdAt: Date;
	/** When the source last confirmed the price (a feed refresh finding it unchanged moves it). */
	declare confirmedAt: Date;

	static initModel(sequelize: Sequelize): typeof TokenPrice {
		// A subclass per Sequelize instance, so two brokers in one process never share model state.
		return (class extends TokenPrice {}).init(
			{
				id: { type: DataTypes.STRING(36), primaryKey: true },
				tokenId: DataTypes.STRING(36),
				priceUsd: moneyAttribute("priceUsd", sequelize.getDialect()),
				source: DataTypes.STRING(40),
				createdAt: DataTypes.DATE(3),
				confirmedAt: DataTypes.DATE(3),
			},
			// createdAt is set by the service (app clock, strictly increasing per token).
			{ sequelize, tableName: "token_prices", timestamps: false },
		);
	}
}
