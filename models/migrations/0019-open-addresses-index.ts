/**
 * The open checkouts of a network in keyset order (transactions.openAddresses: the watchers'
 * balance reconciliation, a page of 2,000 every caught-up step). Without an index on the network
 * and the keyset, every page read the whole `transactions` table (a scan and a sort: about a
 * second a page with 100,000 checkouts, docs/benchmarks.md), and those scans pushed the credits'
 * rows out of MariaDB's buffer pool. The index holds the keyset (createdAt, id) in order and the
 * columns the page answers and filters on (status, depositAddress), so a page reads 2,000
 * neighbouring index entries and no table row.
 */
import { QueryInterface } from "sequelize";

export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
	await qi.addIndex("transactions", ["payerNetworkId", "createdAt", "id", "status", "depositAddress"], { name: "transactions_network_open" });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
	await qi.removeIndex("transactions", "transactions_network_open");
}
