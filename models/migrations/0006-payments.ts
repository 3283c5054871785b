/**
 * Payments: intents, idempotency keys, links, checkout transactions and their on-chain credits,
 * HD deposit addresses (with a derivation-index counter per chain type), and the outbox of events. Every money column is exact
 * (lib/money.ts: DECIMAL(65,18) on MySQL, canonical TEXT on SQLite).
 */
import { DataTypes, QueryInterface } from "sequelize";
import { CHAIN_TYPES } from "../../lib/chains/types";
import { moneyColumnType } from "../../lib/money";

const timestamps = {
	createdAt: { type: DataTypes.DATE(3), allowNull: false },
	updatedAt: { type: DataTypes.DATE(3), allowNull: false },
};

export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
	const money = moneyColumnType(qi.sequelize.getDialect());
	const longText = qi.sequelize.getDialect() === "mysql" ? DataTypes.TEXT("medium") : DataTypes.TEXT;

	await qi.createTable("payment_intents", {
		id: { type: DataTypes.STRING(36), primaryKey: true },
		organizationId: { type: DataTypes.STRING(36), allowNull: false },
		apiKeyId: { type: DataTypes.INTEGER, allowNull: true },
		mode: { type: DataTypes.STRING(10), allowNull: false },
		amount: { type: money, allowNull: false },
		currency: { type: DataTypes.STRING(20), allowNull: false },
		tokenId: { type: DataTypes.STRING(36), allowNull: false },
		networkId: { type: DataTypes.STRING(36), allowNull: false },
		tokenAmount: { type: money, allowNull: false },
		currencyRateId: { type: DataTypes.STRING(36), allowNull: true },
		amountUsd: { type: money, allowNull: true },
		rate: { type: money, allowNull: true },
		status: { type: DataTypes.STRING(30), allowNull: false },
		paymentMethodTypes: { type: DataTypes.TEXT, allowNull: false },
		clientSecretDigest: { type: DataTypes.STRING(64), allowNull: false },
		returnUrl: { type: DataTypes.STRING(2048), allowNull: false },
		cancelUrl: { type: DataTypes.STRING(2048), allowNull: true },
		description: { type: DataTypes.TEXT, allowNull: true },
		metadata: { type: DataTypes.TEXT, allowNull: true },
		expiresAt: { type: DataTypes.DATE(3), allowNull: true },
		withdrawalAddresses: { type: DataTypes.TEXT, allowNull: true },
		paymentLinkId: { type: DataTypes.STRING(36), allowNull: false },
		latestTransactionId: { type: DataTypes.STRING(36), allowNull: true },
		cancellationReason: { type: DataTypes.STRING(40), allowNull: true },
		canceledAt: { type: DataTypes.DATE(3), allowNull: true },
		succeededAt: { type: DataTypes.DATE(3), allowNull: true },
		...timestamps,
	});
	await qi.addIndex("payment_intents", ["organizationId", "createdAt"], { name: "payment_intents_org_created" });
	await qi.addIndex("payment_intents", ["status", "expiresAt"], { name: "payment_intents_status_expires" });

	await qi.createTable("idempotency_keys", {
		id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
		scope: { type: DataTypes.STRING(100), allowNull: false },
		key: { type: DataTypes.STRING(255), allowNull: false },
		requestHash: { type: DataTypes.STRING(64), allowNull: false },
		responseStatus: { type: DataTypes.INTEGER, allowNull: false },
		responseBody: { type: longText, allowNull: false },
		createdAt: { type: DataTypes.DATE(3), allowNull: false },
		expiresAt: { type: DataTypes.DATE(3), allowNull: false },
	});
	await qi.addIndex("idempotency_keys", ["scope", "key"], { unique: true, name: "idempotency_keys_scope_key_unique" });
	await qi.addIndex("idempotency_keys", ["expiresAt"], { name: "idempotency_keys_expires" });

	await qi.createTable("payment_links", {
		id: { type: DataTypes.STRING(36), primaryKey: true },
		organizationId: { type: DataTypes.STRING(36), allowNull: false },
		mode: { type: DataTypes.STRING(10), allowNull: false },
		intentId: { type: DataTypes.STRING(36), allowNull: true },
		ownedByIntent: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: false },
		slug: { type: DataTypes.STRING(40), allowNull: false },
		title: { type: DataTypes.STRING(200), allowNull: false },
		amount: { type: money, allowNull: false },
		tokenId: { type: DataTypes.STRING(36), allowNull: false },
		networkId: { type: DataTypes.STRING(36), allowNull: false },
		status: { type: DataTypes.STRING(20), allowNull: false },
		expiresAt: { type: DataTypes.DATE(3), allowNull: true },
		metadata: { type: DataTypes.TEXT, allowNull: true },
		withdrawalAddresses: { type: DataTypes.TEXT, allowNull: true },
		singleUse: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: true },
		payerEmail: { type: DataTypes.STRING(254), allowNull: true },
		payerAddress: { type: DataTypes.STRING(128), allowNull: true },
		createdByUserId: { type: DataTypes.INTEGER, allowNull: true },
		...timestamps,
		deletedAt: { type: DataTypes.DATE(3), allowNull: true },
	});
	await qi.addIndex("payment_links", ["slug"], { unique: true, name: "payment_links_slug_unique" });
	await qi.addIndex("payment_links", ["organizationId", "createdAt"], { name: "payment_links_org_created" });
	await qi.addIndex("payment_links", ["status", "expiresAt"], { name: "payment_links_status_expires" });
	await qi.addIndex("payment_links", ["intentId"], { name: "payment_links_intent" });

	await qi.createTable("transactions", {
		id: { type: DataTypes.STRING(36), primaryKey: true },
		organizationId: { type: DataTypes.STRING(36), allowNull: false },
		mode: { type: DataTypes.STRING(10), allowNull: false },
		paymentLinkId: { type: DataTypes.STRING(36), allowNull: false },
		intentId: { type: DataTypes.STRING(36), allowNull: true },
		payerTokenId: { type: DataTypes.STRING(36), allowNull: false },
		payerNetworkId: { type: DataTypes.STRING(36), allowNull: false },
		supportPercent: { type: money, allowNull: false },
		amount: { type: money, allowNull: false },
		totalAmount: { type: money, allowNull: false },
		amountReceived: { type: money, allowNull: false },
		overpaidAmount: { type: money, allowNull: false },
		quote: { type: DataTypes.TEXT, allowNull: true },
		depositAddressId: { type: DataTypes.STRING(36), allowNull: false },
		depositAddress: { type: DataTypes.STRING(128), allowNull: false },
		status: { type: DataTypes.STRING(20), allowNull: false },
		simulated: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: false },
		hash: { type: DataTypes.STRING(128), allowNull: true },
		payerEmail: { type: DataTypes.STRING(254), allowNull: true },
		payerAddress: { type: DataTypes.STRING(128), allowNull: true },
		expiresAt: { type: DataTypes.DATE(3), allowNull: false },
		confirmedAt: { type: DataTypes.DATE(3), allowNull: true },
		completedAt: { type: DataTypes.DATE(3), allowNull: true },
		...timestamps,
	});
	await qi.addIndex("transactions", ["organizationId", "createdAt"], { name: "transactions_org_created" });
	await qi.addIndex("transactions", ["paymentLinkId", "status"], { name: "transactions_link_status" });
	await qi.addIndex("transactions", ["intentId"], { name: "transactions_intent" });
	await qi.addIndex("transactions", ["status", "expiresAt"], { name: "transactions_status_expires" });

	await qi.createTable("transaction_credits", {
		id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
		networkId: { type: DataTypes.STRING(36), allowNull: false },
		txHash: { type: DataTypes.STRING(128), allowNull: false },
		logIndex: { type: DataTypes.INTEGER, allowNull: false },
		transactionId: { type: DataTypes.STRING(36), allowNull: false },
		tokenId: { type: DataTypes.STRING(36), allowNull: false },
		amount: { type: money, allowNull: false },
		counted: { type: DataTypes.BOOLEAN, allowNull: false },
		confirmations: { type: DataTypes.INTEGER, allowNull: true },
		simulated: { type: DataTypes.BOOLEAN, allowNull: false, defaultValue: false },
		createdAt: { type: DataTypes.DATE(3), allowNull: false },
	});
	await qi.addIndex("transaction_credits", ["networkId", "txHash", "logIndex"], { unique: true, name: "transaction_credits_transfer_unique" });
	await qi.addIndex("transaction_credits", ["transactionId"], { name: "transaction_credits_transaction" });

	await qi.createTable("deposit_addresses", {
		id: { type: DataTypes.STRING(36), primaryKey: true },
		chainType: { type: DataTypes.STRING(16), allowNull: false },
		networkId: { type: DataTypes.STRING(36), allowNull: false },
		derivationIndex: { type: DataTypes.INTEGER, allowNull: false },
		address: { type: DataTypes.STRING(128), allowNull: false },
		seedFingerprint: { type: DataTypes.STRING(16), allowNull: false },
		organizationId: { type: DataTypes.STRING(36), allowNull: false },
		transactionId: { type: DataTypes.STRING(36), allowNull: false },
		createdAt: { type: DataTypes.DATE(3), allowNull: false },
	});
	await qi.addIndex("deposit_addresses", ["chainType", "derivationIndex"], { unique: true, name: "deposit_addresses_chain_index_unique" });
	await qi.addIndex("deposit_addresses", ["networkId", "address"], { unique: true, name: "deposit_addresses_network_address_unique" });

	await qi.createTable("deposit_address_counters", {
		chainType: { type: DataTypes.STRING(16), primaryKey: true },
		nextIndex: { type: DataTypes.INTEGER, allowNull: false },
	});
	await qi.bulkInsert("deposit_address_counters", CHAIN_TYPES.map(chainType => ({ chainType, nextIndex: 0 })));

	await qi.createTable("outbox_events", {
		id: { type: DataTypes.STRING(36), primaryKey: true },
		type: { type: DataTypes.STRING(64), allowNull: false },
		organizationId: { type: DataTypes.STRING(36), allowNull: false },
		apiKeyId: { type: DataTypes.INTEGER, allowNull: true },
		livemode: { type: DataTypes.BOOLEAN, allowNull: false },
		payload: { type: longText, allowNull: false },
		createdAt: { type: DataTypes.DATE(3), allowNull: false },
		publishedAt: { type: DataTypes.DATE(3), allowNull: true },
	});
	await qi.addIndex("outbox_events", ["publishedAt", "createdAt"], { name: "outbox_events_unpublished" });
	await qi.addIndex("outbox_events", ["organizationId", "createdAt"], { name: "outbox_events_org_created" });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
	for (const table of ["outbox_events", "deposit_address_counters", "deposit_addresses", "transaction_credits", "transactions", "payment_links", "idempotency_keys", "payment_intents"]) {
		await qi.dropTable(table);
	}
}
