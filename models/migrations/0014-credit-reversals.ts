/**
 * Credits orphaned by a reorg deeper than the required confirmations (docs/payments.md
 * "Reversals"): a credit remembers the block it was credited from and whether (and how often) a
 * reorg reversed it; the checkout shows what was reversed; the intent carries the latest reversal
 * (a JSON object, null when none stands).
 */
import { DataTypes, QueryInterface } from "sequelize";
import { moneyColumnType } from "../../lib/money";

export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
	const money = moneyColumnType(qi.sequelize.getDialect());
	// Null for credits recorded before this migration and for simulations (no block).
	await qi.addColumn("transaction_credits", "blockHash", { type: DataTypes.STRING(100), allowNull: true });
	await qi.addColumn("transaction_credits", "reversedAt", { type: DataTypes.DATE(3), allowNull: true });
	// How many times a reorg reversed it (a re-mined transfer credited again keeps the count): the generation in ledger references.
	await qi.addColumn("transaction_credits", "reversals", { type: DataTypes.INTEGER, allowNull: false, defaultValue: 0 });
	await qi.addIndex("transaction_credits", ["reversals", "id"], { name: "transaction_credits_reversals" });
	await qi.addColumn("transactions", "amountReversed", { type: money, allowNull: false, defaultValue: "0" });
	await qi.addColumn("transactions", "reversedAt", { type: DataTypes.DATE(3), allowNull: true });
	await qi.addColumn("payment_intents", "reversal", { type: DataTypes.TEXT, allowNull: true });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
	await qi.removeColumn("payment_intents", "reversal");
	for (const column of ["reversedAt", "amountReversed"]) await qi.removeColumn("transactions", column);
	await qi.removeIndex("transaction_credits", "transaction_credits_reversals");
	for (const column of ["reversals", "reversedAt", "blockHash"]) await qi.removeColumn("transaction_credits", column);
}
