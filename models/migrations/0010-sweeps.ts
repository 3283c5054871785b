/**
 * The automatic EVM sweeper (docs/withdrawals.md "Sweeper"): nonces per sending wallet, one record
 * per on-chain sweep with its signed bytes (recorded before broadcast), and the deposit funds each
 * sweep moves, open at most once at a time.
 */
import { DataTypes, QueryInterface } from "sequelize";
import { moneyColumnType } from "../../lib/money";

export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
	const money = moneyColumnType(qi.sequelize.getDialect());
	await qi.createTable("sweep_wallets", {
		networkId: { type: DataTypes.STRING(36), primaryKey: true },
		address: { type: DataTypes.STRING(128), primaryKey: true },
		nextNonce: { type: DataTypes.INTEGER, allowNull: false },
		updatedAt: { type: DataTypes.DATE(3), allowNull: false },
	});
	await qi.createTable("sweeps", {
		id: { type: DataTypes.STRING(36), primaryKey: true },
		networkId: { type: DataTypes.STRING(36), allowNull: false },
		kind: { type: DataTypes.STRING(16), allowNull: false },
		status: { type: DataTypes.STRING(12), allowNull: false },
		tokenId: { type: DataTypes.STRING(36), allowNull: false },
		fromAddress: { type: DataTypes.STRING(128), allowNull: false },
		toAddress: { type: DataTypes.STRING(128), allowNull: false },
		nonce: { type: DataTypes.INTEGER, allowNull: false },
		rawTx: { type: DataTypes.TEXT, allowNull: true },
		txHash: { type: DataTypes.STRING(100), allowNull: true },
		hashes: { type: DataTypes.TEXT, allowNull: false },
		feeStep: { type: DataTypes.INTEGER, allowNull: false, defaultValue: 0 },
		gasUsed: { type: DataTypes.STRING(40), allowNull: true },
		feePaid: { type: DataTypes.STRING(80), allowNull: true },
		reason: { type: DataTypes.TEXT, allowNull: true },
		requestId: { type: DataTypes.STRING(36), allowNull: true },
		bridgeProvider: { type: DataTypes.STRING(64), allowNull: true },
		bridgeQuoteId: { type: DataTypes.STRING(200), allowNull: true },
		bridgeState: { type: DataTypes.STRING(12), allowNull: true },
		bridgeTxHash: { type: DataTypes.STRING(200), allowNull: true },
		broadcastAt: { type: DataTypes.DATE(3), allowNull: true },
		createdAt: { type: DataTypes.DATE(3), allowNull: false },
		updatedAt: { type: DataTypes.DATE(3), allowNull: false },
	});
	await qi.addIndex("sweeps", ["networkId", "status"], { name: "sweeps_network_status" });
	await qi.addIndex("sweeps", ["requestId"], { name: "sweeps_request" });
	// One sweep per nonce of a sending wallet.
	await qi.addIndex("sweeps", ["networkId", "fromAddress", "nonce"], { unique: true, name: "sweeps_wallet_nonce_unique" });
	await qi.createTable("sweep_items", {
		id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
		sweepId: { type: DataTypes.STRING(36), allowNull: false },
		transactionId: { type: DataTypes.STRING(36), allowNull: false },
		organizationId: { type: DataTypes.STRING(36), allowNull: false },
		mode: { type: DataTypes.STRING(10), allowNull: false },
		depositAddress: { type: DataTypes.STRING(128), allowNull: false },
		derivationIndex: { type: DataTypes.INTEGER, allowNull: false },
		tokenId: { type: DataTypes.STRING(36), allowNull: false },
		amount: { type: money, allowNull: false },
		openKey: { type: DataTypes.STRING(200), allowNull: true },
		createdAt: { type: DataTypes.DATE(3), allowNull: false },
	});
	await qi.addIndex("sweep_items", ["openKey"], { unique: true, name: "sweep_items_open_unique" });
	await qi.addIndex("sweep_items", ["sweepId"], { name: "sweep_items_sweep" });
	await qi.addIndex("sweep_items", ["transactionId"], { name: "sweep_items_transaction" });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
	for (const table of ["sweep_items", "sweeps", "sweep_wallets"]) await qi.dropTable(table);
}
