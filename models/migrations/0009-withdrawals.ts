/**
 * Withdrawals (docs/withdrawals.md): each organization's settings, the append-only ledger of what
 * it may withdraw (one row per source event, UNIQUE kind + reference), a lock row per ledger
 * account (organization + network + token) that serializes what checks the available balance,
 * withdrawal requests, and the feed's cursor over settled checkouts.
 */
import { DataTypes, QueryInterface } from "sequelize";
import { moneyColumnType } from "../../lib/money";

export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
	const money = moneyColumnType(qi.sequelize.getDialect());

	await qi.createTable("withdrawal_settings", {
		id: { type: DataTypes.STRING(36), primaryKey: true },
		organizationId: { type: DataTypes.STRING(36), allowNull: false },
		userId: { type: DataTypes.INTEGER, allowNull: false },
		addresses: { type: DataTypes.TEXT, allowNull: false },
		strategy: { type: DataTypes.INTEGER, allowNull: false },
		createdAt: { type: DataTypes.DATE(3), allowNull: false },
		updatedAt: { type: DataTypes.DATE(3), allowNull: false },
	});
	await qi.addIndex("withdrawal_settings", ["organizationId"], { unique: true, name: "withdrawal_settings_org_unique" });

	await qi.createTable("ledger_entries", {
		id: { type: DataTypes.STRING(36), primaryKey: true },
		organizationId: { type: DataTypes.STRING(36), allowNull: false },
		mode: { type: DataTypes.STRING(10), allowNull: false },
		networkId: { type: DataTypes.STRING(36), allowNull: false },
		tokenId: { type: DataTypes.STRING(36), allowNull: false },
		kind: { type: DataTypes.STRING(12), allowNull: false },
		// Signed: positive adds to what the organization may withdraw, negative takes away.
		amount: { type: money, allowNull: false },
		refType: { type: DataTypes.STRING(32), allowNull: false },
		refId: { type: DataTypes.STRING(128), allowNull: false },
		createdAt: { type: DataTypes.DATE(3), allowNull: false },
	});
	// Each source event is recorded once, whoever reports it and however often.
	await qi.addIndex("ledger_entries", ["kind", "refType", "refId"], { unique: true, name: "ledger_entries_source_unique" });
	await qi.addIndex("ledger_entries", ["organizationId", "networkId", "tokenId"], { name: "ledger_entries_account" });

	await qi.createTable("ledger_accounts", {
		id: { type: DataTypes.STRING(120), primaryKey: true },
		organizationId: { type: DataTypes.STRING(36), allowNull: false },
		networkId: { type: DataTypes.STRING(36), allowNull: false },
		tokenId: { type: DataTypes.STRING(36), allowNull: false },
		createdAt: { type: DataTypes.DATE(3), allowNull: false },
	});

	await qi.createTable("withdrawal_requests", {
		id: { type: DataTypes.STRING(36), primaryKey: true },
		organizationId: { type: DataTypes.STRING(36), allowNull: false },
		mode: { type: DataTypes.STRING(10), allowNull: false },
		userId: { type: DataTypes.INTEGER, allowNull: false },
		amount: { type: money, allowNull: false },
		tokenId: { type: DataTypes.STRING(36), allowNull: false },
		sourceNetworkId: { type: DataTypes.STRING(36), allowNull: false },
		destinationNetworkId: { type: DataTypes.STRING(36), allowNull: true },
		address: { type: DataTypes.STRING(200), allowNull: false },
		strategy: { type: DataTypes.INTEGER, allowNull: false },
		status: { type: DataTypes.STRING(12), allowNull: false },
		reason: { type: DataTypes.TEXT, allowNull: true },
		txHash: { type: DataTypes.STRING(128), allowNull: true },
		attempts: { type: DataTypes.INTEGER, allowNull: false, defaultValue: 0 },
		createdAt: { type: DataTypes.DATE(3), allowNull: false },
		updatedAt: { type: DataTypes.DATE(3), allowNull: false },
		completedAt: { type: DataTypes.DATE(3), allowNull: true },
	});
	await qi.addIndex("withdrawal_requests", ["organizationId", "createdAt"], { name: "withdrawal_requests_org_created" });
	await qi.addIndex("withdrawal_requests", ["organizationId", "sourceNetworkId", "tokenId", "status"], { name: "withdrawal_requests_account_status" });
	await qi.addIndex("withdrawal_requests", ["status", "createdAt"], { name: "withdrawal_requests_status" });

	await qi.createTable("withdrawal_feed_cursors", {
		name: { type: DataTypes.STRING(32), primaryKey: true },
		completedAt: { type: DataTypes.DATE(3), allowNull: true },
		transactionId: { type: DataTypes.STRING(36), allowNull: true },
		updatedAt: { type: DataTypes.DATE(3), allowNull: false },
	});
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
	for (const table of ["withdrawal_feed_cursors", "withdrawal_requests", "ledger_accounts", "ledger_entries", "withdrawal_settings"]) await qi.dropTable(table);
}
