/**
 * Webhooks: the delivery queue (one row per event and endpoint, with its lease), one log row
 * per attempt, and inbound events stored once. The outbox (outbox_events, 0006) feeds the queue.
 */
import { DataTypes, QueryInterface } from "sequelize";

export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
	const longText = qi.sequelize.getDialect() === "mysql" ? DataTypes.TEXT("medium") : DataTypes.TEXT;

	await qi.createTable("webhook_deliveries", {
		id: { type: DataTypes.STRING(36), primaryKey: true },
		eventId: { type: DataTypes.STRING(64), allowNull: false },
		kind: { type: DataTypes.STRING(10), allowNull: false },
		type: { type: DataTypes.STRING(64), allowNull: false },
		organizationId: { type: DataTypes.STRING(36), allowNull: false },
		apiKeyId: { type: DataTypes.INTEGER, allowNull: false },
		userId: { type: DataTypes.INTEGER, allowNull: true },
		livemode: { type: DataTypes.BOOLEAN, allowNull: false },
		url: { type: DataTypes.STRING(2048), allowNull: false },
		body: { type: longText, allowNull: false },
		status: { type: DataTypes.STRING(12), allowNull: false },
		attempts: { type: DataTypes.INTEGER, allowNull: false, defaultValue: 0 },
		nextAttemptAt: { type: DataTypes.DATE(3), allowNull: true },
		leaseOwner: { type: DataTypes.STRING(100), allowNull: true },
		leaseToken: { type: DataTypes.STRING(36), allowNull: true },
		leaseUntil: { type: DataTypes.DATE(3), allowNull: true },
		lastStatusCode: { type: DataTypes.INTEGER, allowNull: true },
		lastError: { type: DataTypes.TEXT, allowNull: true },
		createdAt: { type: DataTypes.DATE(3), allowNull: false },
		updatedAt: { type: DataTypes.DATE(3), allowNull: false },
		deliveredAt: { type: DataTypes.DATE(3), allowNull: true },
	});
	// An event reaches an endpoint through one delivery, however many nodes relay the outbox.
	await qi.addIndex("webhook_deliveries", ["eventId", "apiKeyId"], { unique: true, name: "webhook_deliveries_event_key_unique" });
	await qi.addIndex("webhook_deliveries", ["status", "nextAttemptAt"], { name: "webhook_deliveries_due" });
	// The claim skips endpoints at their concurrency cap (apiKeyId NOT IN ...): without apiKeyId in an
	// index, a backlog behind one busy endpoint is scanned row by row on every claim.
	await qi.addIndex("webhook_deliveries", ["status", "apiKeyId", "nextAttemptAt"], { name: "webhook_deliveries_due_by_key" });
	await qi.addIndex("webhook_deliveries", ["status", "leaseUntil"], { name: "webhook_deliveries_lease" });
	await qi.addIndex("webhook_deliveries", ["leaseToken"], { name: "webhook_deliveries_lease_token" });
	await qi.addIndex("webhook_deliveries", ["updatedAt"], { name: "webhook_deliveries_updated" });

	await qi.createTable("webhook_logs", {
		id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
		deliveryId: { type: DataTypes.STRING(36), allowNull: false },
		eventId: { type: DataTypes.STRING(64), allowNull: false },
		organizationId: { type: DataTypes.STRING(36), allowNull: false },
		apiKeyId: { type: DataTypes.INTEGER, allowNull: false },
		userId: { type: DataTypes.INTEGER, allowNull: true },
		event: { type: DataTypes.STRING(64), allowNull: false },
		url: { type: DataTypes.STRING(2048), allowNull: false },
		statusCode: { type: DataTypes.INTEGER, allowNull: true },
		success: { type: DataTypes.BOOLEAN, allowNull: false },
		attemptNumber: { type: DataTypes.INTEGER, allowNull: false },
		error: { type: DataTypes.TEXT, allowNull: true },
		response: { type: DataTypes.TEXT, allowNull: true },
		durationMs: { type: DataTypes.INTEGER, allowNull: true },
		createdAt: { type: DataTypes.DATE(3), allowNull: false },
	});
	await qi.addIndex("webhook_logs", ["deliveryId", "attemptNumber"], { unique: true, name: "webhook_logs_attempt_unique" });
	await qi.addIndex("webhook_logs", ["organizationId", "id"], { name: "webhook_logs_org_id" });
	await qi.addIndex("webhook_logs", ["createdAt"], { name: "webhook_logs_created" });

	await qi.createTable("inbound_events", {
		id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
		dedupeKey: { type: DataTypes.STRING(64), allowNull: false },
		eventId: { type: DataTypes.STRING(100), allowNull: false },
		type: { type: DataTypes.STRING(100), allowNull: false },
		organizationId: { type: DataTypes.STRING(36), allowNull: true },
		apiKeyId: { type: DataTypes.INTEGER, allowNull: true },
		signatureVerified: { type: DataTypes.BOOLEAN, allowNull: false },
		payload: { type: longText, allowNull: false },
		receivedAt: { type: DataTypes.DATE(3), allowNull: false },
		dispatchedAt: { type: DataTypes.DATE(3), allowNull: true },
	});
	await qi.addIndex("inbound_events", ["dedupeKey"], { unique: true, name: "inbound_events_dedupe_unique" });
	await qi.addIndex("inbound_events", ["receivedAt"], { name: "inbound_events_received" });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
	for (const table of ["inbound_events", "webhook_logs", "webhook_deliveries"]) await qi.dropTable(table);
}
