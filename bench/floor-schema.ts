/**
 * The floor's own two tables in the bench database, shaped like the gateway's payment_intents and
 * payment_links (models/payment-intent.model.ts, payment-link.model.ts, models/migrations/0006-payments.ts): the same
 * columns and types (UUID strings, exact DECIMAL(65,18) amounts, JSON in TEXT, millisecond dates)
 * and the same indexes, so the floor's INSERTs cost at the database what the gateway's cost.
 */
export const FLOOR_INTENTS_TABLE = "bench_floor_payment_intents";
export const FLOOR_LINKS_TABLE = "bench_floor_payment_links";

export const FLOOR_SCHEMA: string[] = [
	`CREATE TABLE ${FLOOR_INTENTS_TABLE} (
		id VARCHAR(36) NOT NULL PRIMARY KEY,
		organizationId VARCHAR(36) NOT NULL,
		apiKeyId INT NULL,
		mode VARCHAR(10) NOT NULL,
		amount DECIMAL(65,18) NOT NULL,
		currency VARCHAR(20) NOT NULL,
		tokenId VARCHAR(36) NOT NULL,
		networkId VARCHAR(36) NOT NULL,
		tokenAmount DECIMAL(65,18) NOT NULL,
		currencyRateId VARCHAR(36) NULL,
		amountUsd DECIMAL(65,18) NULL,
		rate DECIMAL(65,18) NULL,
		status VARCHAR(30) NOT NULL,
		paymentMethodTypes TEXT NOT NULL,
		clientSecretDigest VARCHAR(64) NOT NULL,
		returnUrl VARCHAR(2048) NOT NULL,
		cancelUrl VARCHAR(2048) NULL,
		description TEXT NULL,
		metadata TEXT NULL,
		expiresAt DATETIME(3) NULL,
		withdrawalAddresses TEXT NULL,
		paymentLinkId VARCHAR(36) NOT NULL,
		latestTransactionId VARCHAR(36) NULL,
		cancellationReason VARCHAR(40) NULL,
		canceledAt DATETIME(3) NULL,
		succeededAt DATETIME(3) NULL,
		createdAt DATETIME(3) NOT NULL,
		updatedAt DATETIME(3) NOT NULL,
		KEY bench_floor_intents_org_created (organizationId, createdAt),
		KEY bench_floor_intents_status_expires (status, expiresAt)
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci`,
	`CREATE TABLE ${FLOOR_LINKS_TABLE} (
		id VARCHAR(36) NOT NULL PRIMARY KEY,
		organizationId VARCHAR(36) NOT NULL,
		mode VARCHAR(10) NOT NULL,
		intentId VARCHAR(36) NULL,
		ownedByIntent TINYINT(1) NOT NULL,
		slug VARCHAR(40) NOT NULL,
		title VARCHAR(200) NOT NULL,
		amount DECIMAL(65,18) NOT NULL,
		tokenId VARCHAR(36) NOT NULL,
		networkId VARCHAR(36) NOT NULL,
		status VARCHAR(20) NOT NULL,
		expiresAt DATETIME(3) NULL,
		metadata TEXT NULL,
		withdrawalAddresses TEXT NULL,
		singleUse TINYINT(1) NOT NULL,
		payerEmail VARCHAR(254) NULL,
		payerAddress VARCHAR(128) NULL,
		createdByUserId INT NULL,
		createdAt DATETIME(3) NOT NULL,
		updatedAt DATETIME(3) NOT NULL,
		deletedAt DATETIME(3) NULL,
		UNIQUE KEY bench_floor_links_slug (slug),
		KEY bench_floor_links_org_created (organizationId, createdAt),
		KEY bench_floor_links_status_expires (status, expiresAt),
		KEY bench_floor_links_intent (intentId)
	) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci`,
];
