/**
 * Networks and tokens. The rows themselves are the catalogue (lib/networks/catalogue.ts), seeded
 * by the networks service at start; a migration never carries catalogue data, so later schema
 * changes cannot break it.
 */
import { DataTypes, QueryInterface } from "sequelize";

const timestamps = {
	createdAt: { type: DataTypes.DATE(3), allowNull: false },
	updatedAt: { type: DataTypes.DATE(3), allowNull: false },
	deletedAt: { type: DataTypes.DATE(3), allowNull: true },
};

export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
	await qi.createTable("networks", {
		id: { type: DataTypes.STRING(36), primaryKey: true },
		slug: { type: DataTypes.STRING(64), allowNull: false },
		name: { type: DataTypes.STRING(100), allowNull: false },
		chainType: { type: DataTypes.STRING(16), allowNull: false },
		// BIGINT: some chains' own ids exceed 32 bits (Tron Nile 3448148188); TON's are negative.
		chainId: { type: DataTypes.BIGINT, allowNull: false },
		blockExplorerUrl: { type: DataTypes.STRING(255), allowNull: false, defaultValue: "" },
		publicRpcUrls: { type: DataTypes.TEXT, allowNull: false },
		isActive: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: true },
		isTestnet: { type: DataTypes.BOOLEAN, allowNull: false },
		listenerConfig: { type: DataTypes.TEXT, allowNull: true },
		requiredConfirmations: { type: DataTypes.INTEGER, allowNull: false },
		image: { type: DataTypes.STRING(500), allowNull: true },
		...timestamps,
	});
	await qi.addIndex("networks", ["slug"], { unique: true, name: "networks_slug_unique" });

	await qi.createTable("tokens", {
		id: { type: DataTypes.STRING(36), primaryKey: true },
		networkId: { type: DataTypes.STRING(36), allowNull: false },
		symbol: { type: DataTypes.STRING(20), allowNull: false },
		name: { type: DataTypes.STRING(100), allowNull: false },
		contractAddress: { type: DataTypes.STRING(128), allowNull: false, defaultValue: "" },
		decimals: { type: DataTypes.INTEGER, allowNull: false },
		isNative: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: false },
		isStablecoin: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: false },
		isActive: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: true },
		image: { type: DataTypes.STRING(500), allowNull: true },
		...timestamps,
	});
	await qi.addIndex("tokens", ["networkId", "symbol"], { unique: true, name: "tokens_network_symbol_unique" });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
	await qi.dropTable("tokens");
	await qi.dropTable("networks");
}
