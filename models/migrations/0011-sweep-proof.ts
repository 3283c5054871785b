/**
 * Sweeps failed only with proof (docs/withdrawals.md "Sweeper"): `openRequestKey` is the
 * withdrawal request a sweep in flight pays, UNIQUE, so a request is never in two sweeps at once
 * (cleared when the sweep is confirmed or proven failed, kept while it is `stalled`);
 * `unseenPolls` / `unseenSince` count the polls that found the sending nonce used and none of the
 * sweep's own transactions (an operator alert after a bounded number); `minedBlock` is the block a
 * UTXO sweep was found in, so its confirmations are read from the transaction itself even after
 * its output was spent.
 */
import { DataTypes, Op, QueryInterface } from "sequelize";

export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
	await qi.addColumn("sweeps", "openRequestKey", { type: DataTypes.STRING(36), allowNull: true });
	await qi.addColumn("sweeps", "unseenPolls", { type: DataTypes.INTEGER, allowNull: false, defaultValue: 0 });
	await qi.addColumn("sweeps", "unseenSince", { type: DataTypes.DATE(3), allowNull: true });
	await qi.addColumn("sweeps", "minedBlock", { type: DataTypes.STRING(100), allowNull: true });
	// Sweeps in flight for a request hold its key (the oldest one, should an old race have left two).
	const open = (await qi.select(null, "sweeps", { where: { requestId: { [Op.ne]: null }, status: { [Op.in]: ["planned", "signed", "broadcast"] } }})) as Array<{ id: string; requestId: string; createdAt: Date }>;
	open.sort((a, b) => new Date(a.createdAt).getTime() - new Date(b.createdAt).getTime());
	const seen = new Set<string>();
	for (const row of open) {
		if (seen.has(row.requestId)) continue;
		seen.add(row.requestId);
		await qi.bulkUpdate("sweeps", { openRequestKey: row.requestId }, { id: row.id });
	}
	await qi.addIndex("sweeps", ["openRequestKey"], { unique: true, name: "sweeps_open_request_unique" });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
	await qi.removeIndex("sweeps", "sweeps_open_request_unique");
	for (const column of ["minedBlock", "unseenSince", "unseenPolls", "openRequestKey"]) await qi.removeColumn("sweeps", column);
}
