/**
 * Withdrawal requests are queued per network (docs/withdrawals.md "Requests"): each sweeper reads
 * the pending requests of its own network, oldest first, by keyset pages over (createdAt, id).
 */
import { QueryInterface } from "sequelize";

export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
	await qi.addIndex("withdrawal_requests", ["sourceNetworkId", "status", "createdAt", "id"], { name: "withdrawal_requests_network_queue" });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
	await qi.removeIndex("withdrawal_requests", "withdrawal_requests_network_queue");
}
