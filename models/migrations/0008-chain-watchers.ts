/**
 * Chain watchers (docs/watchers.md): a cursor per network with its lease (one writer, fencing
 * token) and recent block hashes, and the transfers a watcher found, reported to the payments
 * side until they are credited or reverted. Payments side: the detections shown on a checkout
 * while it confirms, and the transaction's confirming amount and confirmations.
 */
import { DataTypes, QueryInterface } from "sequelize";
import { moneyColumnType } from "../../lib/money";

export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
	const money = moneyColumnType(qi.sequelize.getDialect());

	await qi.createTable("chain_cursors", {
		networkId: { type: DataTypes.STRING(36), primaryKey: true },
		chainType: { type: DataTypes.STRING(16), allowNull: false },
		blockNumber: { type: DataTypes.BIGINT, allowNull: true },
		blockHash: { type: DataTypes.STRING(100), allowNull: true },
		recentBlocks: { type: DataTypes.TEXT, allowNull: false },
		leaseOwner: { type: DataTypes.STRING(100), allowNull: true },
		leaseToken: { type: DataTypes.INTEGER, allowNull: false, defaultValue: 0 },
		leaseUntil: { type: DataTypes.DATE(3), allowNull: true },
		reconciledAt: { type: DataTypes.DATE(3), allowNull: true },
		updatedAt: { type: DataTypes.DATE(3), allowNull: false },
	});

	await qi.createTable("chain_transfers", {
		id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
		networkId: { type: DataTypes.STRING(36), allowNull: false },
		txHash: { type: DataTypes.STRING(128), allowNull: false },
		logIndex: { type: DataTypes.INTEGER, allowNull: false },
		blockNumber: { type: DataTypes.BIGINT, allowNull: false },
		blockHash: { type: DataTypes.STRING(100), allowNull: false },
		toAddress: { type: DataTypes.STRING(128), allowNull: false },
		tokenId: { type: DataTypes.STRING(36), allowNull: false },
		amount: { type: money, allowNull: false },
		status: { type: DataTypes.STRING(12), allowNull: false },
		reported: { type: DataTypes.STRING(12), allowNull: false },
		reportedConfirmations: { type: DataTypes.INTEGER, allowNull: true },
		pending: { type: DataTypes.BOOLEAN, allowNull: false },
		createdAt: { type: DataTypes.DATE(3), allowNull: false },
		updatedAt: { type: DataTypes.DATE(3), allowNull: false },
	});
	// One row per transfer per block it was seen in: a transfer re-included after a reorg is a new row.
	await qi.addIndex("chain_transfers", ["networkId", "txHash", "logIndex", "blockHash"], { unique: true, name: "chain_transfers_unique" });
	await qi.addIndex("chain_transfers", ["networkId", "pending"], { name: "chain_transfers_pending" });
	await qi.addIndex("chain_transfers", ["networkId", "blockNumber"], { name: "chain_transfers_block" });
	await qi.addIndex("chain_transfers", ["networkId", "toAddress"], { name: "chain_transfers_address" });

	await qi.createTable("payment_detections", {
		id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
		networkId: { type: DataTypes.STRING(36), allowNull: false },
		txHash: { type: DataTypes.STRING(128), allowNull: false },
		logIndex: { type: DataTypes.INTEGER, allowNull: false },
		blockHash: { type: DataTypes.STRING(100), allowNull: false },
		blockNumber: { type: DataTypes.BIGINT, allowNull: false },
		transactionId: { type: DataTypes.STRING(36), allowNull: false },
		tokenId: { type: DataTypes.STRING(36), allowNull: false },
		amount: { type: money, allowNull: false },
		counted: { type: DataTypes.BOOLEAN, allowNull: false },
		confirmations: { type: DataTypes.INTEGER, allowNull: false },
		status: { type: DataTypes.STRING(12), allowNull: false },
		createdAt: { type: DataTypes.DATE(3), allowNull: false },
		updatedAt: { type: DataTypes.DATE(3), allowNull: false },
	});
	await qi.addIndex("payment_detections", ["networkId", "txHash", "logIndex", "blockHash"], { unique: true, name: "payment_detections_unique" });
	await qi.addIndex("payment_detections", ["transactionId"], { name: "payment_detections_transaction" });

	await qi.addColumn("transactions", "amountConfirming", { type: money, allowNull: false, defaultValue: "0" });
	await qi.addColumn("transactions", "confirmations", { type: DataTypes.INTEGER, allowNull: true });
	await qi.addColumn("transactions", "requiredConfirmations", { type: DataTypes.INTEGER, allowNull: true });
	await qi.addIndex("deposit_addresses", ["networkId", "createdAt"], { name: "deposit_addresses_network_created" });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
	await qi.removeIndex("deposit_addresses", "deposit_addresses_network_created");
	for (const column of ["requiredConfirmations", "confirmations", "amountConfirming"]) await qi.removeColumn("transactions", column);
	for (const table of ["payment_detections", "chain_transfers", "chain_cursors"]) await qi.dropTable(table);
}
