/**
 * Sweep holds (docs/withdrawals.md "Reverted sends and holds"): a destination or a token deposit
 * whose sends revert is backed off, then stopped after a bounded number of failures, instead of
 * being tried again at every step on the merchant's or the operator's gas.
 */
import { DataTypes, QueryInterface } from "sequelize";

export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
	await qi.createTable("sweep_holds", {
		id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
		networkId: { type: DataTypes.STRING(36), allowNull: false },
		scope: { type: DataTypes.STRING(16), allowNull: false },
		address: { type: DataTypes.STRING(128), allowNull: false },
		tokenId: { type: DataTypes.STRING(36), allowNull: false },
		failures: { type: DataTypes.INTEGER, allowNull: false },
		reason: { type: DataTypes.TEXT, allowNull: false },
		nextAttemptAt: { type: DataTypes.DATE(3), allowNull: false },
		blockedAt: { type: DataTypes.DATE(3), allowNull: true },
		createdAt: { type: DataTypes.DATE(3), allowNull: false },
		updatedAt: { type: DataTypes.DATE(3), allowNull: false },
	});
	await qi.addIndex("sweep_holds", ["networkId", "scope", "address", "tokenId"], { unique: true, name: "sweep_holds_key_unique" });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
	await qi.dropTable("sweep_holds");
}
