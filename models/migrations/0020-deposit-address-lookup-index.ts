/**
 * A watcher's batch finds each transfer's checkout by its deposit address
 * (transactions.creditBatch and detectBatch: `address` and `transactionId` of the network's
 * addresses IN the batch's). The unique index (networkId, address) finds the row but not its
 * checkout, so every address cost a second read in the table itself: a random page of a table
 * larger than MariaDB's buffer pool, read from disk, per credit (docs/benchmarks.md). This index
 * answers the lookup alone. The unique index stays: it is the constraint.
 */
import { QueryInterface } from "sequelize";

export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
	await qi.addIndex("deposit_addresses", ["networkId", "address", "transactionId"], { name: "deposit_addresses_lookup" });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
	await qi.removeIndex("deposit_addresses", "deposit_addresses_lookup");
}
