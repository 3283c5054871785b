/**
 * Solana sweeps (docs/withdrawals.md "Solana sweeper"): a signed Solana transaction is valid until
 * its blockhash expires, at `lastValidBlockHeight`. It is recorded with the signed bytes, before
 * they are sent, so the sweeper knows when a transaction that never landed is proven dead (the
 * finalized block height past it, and no status for its signature) and only then signs the funds
 * again. Null for other chains' sweeps.
 */
import { DataTypes, QueryInterface } from "sequelize";

export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
	await qi.addColumn("sweeps", "lastValidBlockHeight", { type: DataTypes.BIGINT, allowNull: true });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
	await qi.removeColumn("sweeps", "lastValidBlockHeight");
}
