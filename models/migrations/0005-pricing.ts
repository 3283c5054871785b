/**
 * Pricing: fiat currencies, currency rates and token prices. Rates and prices are history tables:
 * every change is a new row and reads take the newest (createdAt, then id). Currencies and the
 * placeholder rates are seeded by the pricing service at start (re-runnable, deterministic ids).
 */
import { DataTypes, QueryInterface } from "sequelize";
import { moneyColumnType } from "../../lib/money";

export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
	const money = moneyColumnType(qi.sequelize.getDialect());

	await qi.createTable("currencies", {
		id: { type: DataTypes.STRING(36), primaryKey: true },
		code: { type: DataTypes.STRING(3), allowNull: false },
		name: { type: DataTypes.STRING(100), allowNull: false },
		symbol: { type: DataTypes.STRING(10), allowNull: false },
		decimals: { type: DataTypes.INTEGER, allowNull: false },
		isActive: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: true },
		createdAt: { type: DataTypes.DATE(3), allowNull: false },
		updatedAt: { type: DataTypes.DATE(3), allowNull: false },
	});
	await qi.addIndex("currencies", ["code"], { unique: true, name: "currencies_code_unique" });

	await qi.createTable("currency_rates", {
		id: { type: DataTypes.STRING(36), primaryKey: true },
		baseCurrencyId: { type: DataTypes.STRING(36), allowNull: false },
		quoteCurrencyId: { type: DataTypes.STRING(36), allowNull: false },
		rate: { type: money, allowNull: false },
		source: { type: DataTypes.STRING(40), allowNull: false },
		createdAt: { type: DataTypes.DATE(3), allowNull: false },
		// When the source last confirmed the rate (staleness of feed rates).
		confirmedAt: { type: DataTypes.DATE(3), allowNull: false },
	});
	await qi.addIndex("currency_rates", ["baseCurrencyId", "quoteCurrencyId", "createdAt"], { name: "currency_rates_pair_newest" });

	await qi.createTable("token_prices", {
		id: { type: DataTypes.STRING(36), primaryKey: true },
		tokenId: { type: DataTypes.STRING(36), allowNull: false },
		priceUsd: { type: money, allowNull: false },
		source: { type: DataTypes.STRING(40), allowNull: false },
		createdAt: { type: DataTypes.DATE(3), allowNull: false },
		confirmedAt: { type: DataTypes.DATE(3), allowNull: false },
	});
	await qi.addIndex("token_prices", ["tokenId", "createdAt"], { name: "token_prices_token_newest" });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
	await qi.dropTable("token_prices");
	await qi.dropTable("currency_rates");
	await qi.dropTable("currencies");
}
