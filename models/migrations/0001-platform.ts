/**
 * Platform foundation: users, sessions, one-time codes and links, per-email events, files,
 * organizations, memberships, API keys.
 */
import { DataTypes, QueryInterface } from "sequelize";

const timestamps = {
	createdAt: { type: DataTypes.DATE(3), allowNull: false },
	updatedAt: { type: DataTypes.DATE(3), allowNull: false },
};

export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
	await qi.createTable("users", {
		id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
		email: { type: DataTypes.STRING(254), allowNull: true },
		passwordHash: { type: DataTypes.STRING(100), allowNull: true },
		firstName: { type: DataTypes.STRING(100), allowNull: true },
		lastName: { type: DataTypes.STRING(100), allowNull: true },
		role: { type: DataTypes.STRING(20), allowNull: false, defaultValue: "user" },
		status: { type: DataTypes.STRING(20), allowNull: false, defaultValue: "active" },
		provider: { type: DataTypes.STRING(20), allowNull: false, defaultValue: "email" },
		emailConfirmedAt: { type: DataTypes.DATE(3), allowNull: true },
		pendingEmail: { type: DataTypes.STRING(254), allowNull: true },
		passwordChangedAt: { type: DataTypes.DATE(3), allowNull: true },
		photoId: { type: DataTypes.STRING(36), allowNull: true },
		...timestamps,
		deletedAt: { type: DataTypes.DATE(3), allowNull: true },
	});
	await qi.addIndex("users", ["email"], { unique: true, name: "users_email_unique" });

	await qi.createTable("sessions", {
		id: { type: DataTypes.STRING(36), primaryKey: true },
		userId: { type: DataTypes.INTEGER, allowNull: false },
		refreshNonce: { type: DataTypes.STRING(64), allowNull: false },
		expiresAt: { type: DataTypes.DATE(3), allowNull: false },
		endedAt: { type: DataTypes.DATE(3), allowNull: true },
		endReason: { type: DataTypes.STRING(30), allowNull: true },
		...timestamps,
	});
	await qi.addIndex("sessions", ["userId"], { name: "sessions_user" });

	await qi.createTable("auth_codes", {
		id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
		email: { type: DataTypes.STRING(254), allowNull: false },
		purpose: { type: DataTypes.STRING(20), allowNull: false },
		codeDigest: { type: DataTypes.STRING(64), allowNull: false },
		attempts: { type: DataTypes.INTEGER, allowNull: false, defaultValue: 0 },
		expiresAt: { type: DataTypes.DATE(3), allowNull: false },
		usedAt: { type: DataTypes.DATE(3), allowNull: true },
		...timestamps,
	});
	await qi.addIndex("auth_codes", ["email", "purpose"], { name: "auth_codes_email_purpose" });

	await qi.createTable("auth_hashes", {
		id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
		userId: { type: DataTypes.INTEGER, allowNull: false },
		purpose: { type: DataTypes.STRING(20), allowNull: false },
		hashDigest: { type: DataTypes.STRING(64), allowNull: false },
		email: { type: DataTypes.STRING(254), allowNull: true },
		expiresAt: { type: DataTypes.DATE(3), allowNull: false },
		usedAt: { type: DataTypes.DATE(3), allowNull: true },
		...timestamps,
	});
	await qi.addIndex("auth_hashes", ["hashDigest"], { unique: true, name: "auth_hashes_digest_unique" });
	await qi.addIndex("auth_hashes", ["userId", "purpose"], { name: "auth_hashes_user_purpose" });

	await qi.createTable("email_events", {
		id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
		email: { type: DataTypes.STRING(254), allowNull: false },
		kind: { type: DataTypes.STRING(30), allowNull: false },
		createdAt: { type: DataTypes.DATE(3), allowNull: false },
	});
	await qi.addIndex("email_events", ["email", "kind", "createdAt"], { name: "email_events_lookup" });

	await qi.createTable("files", {
		id: { type: DataTypes.STRING(36), primaryKey: true },
		userId: { type: DataTypes.INTEGER, allowNull: false },
		path: { type: DataTypes.STRING(500), allowNull: false },
		originalName: { type: DataTypes.STRING(255), allowNull: false },
		mimeType: { type: DataTypes.STRING(100), allowNull: false },
		size: { type: DataTypes.INTEGER, allowNull: false },
		...timestamps,
	});

	await qi.createTable("organizations", {
		id: { type: DataTypes.STRING(36), primaryKey: true },
		name: { type: DataTypes.STRING(120), allowNull: false },
		mode: { type: DataTypes.STRING(10), allowNull: false },
		...timestamps,
	});

	await qi.createTable("memberships", {
		id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
		organizationId: { type: DataTypes.STRING(36), allowNull: false },
		userId: { type: DataTypes.INTEGER, allowNull: false },
		role: { type: DataTypes.STRING(20), allowNull: false },
		...timestamps,
	});
	await qi.addIndex("memberships", ["organizationId", "userId"], { unique: true, name: "memberships_org_user_unique" });
	await qi.addIndex("memberships", ["userId"], { name: "memberships_user" });

	await qi.createTable("api_keys", {
		id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
		organizationId: { type: DataTypes.STRING(36), allowNull: false },
		createdByUserId: { type: DataTypes.INTEGER, allowNull: true },
		name: { type: DataTypes.STRING(120), allowNull: false },
		mode: { type: DataTypes.STRING(10), allowNull: false },
		keyPrefix: { type: DataTypes.STRING(8), allowNull: false },
		keyDigest: { type: DataTypes.STRING(64), allowNull: false },
		last4: { type: DataTypes.STRING(4), allowNull: false },
		secretDigest: { type: DataTypes.STRING(64), allowNull: false },
		secretEncrypted: { type: DataTypes.TEXT, allowNull: false },
		webhookUrl: { type: DataTypes.STRING(2048), allowNull: true },
		status: { type: DataTypes.STRING(10), allowNull: false, defaultValue: "active" },
		revokedAt: { type: DataTypes.DATE(3), allowNull: true },
		...timestamps,
	});
	await qi.addIndex("api_keys", ["keyDigest"], { unique: true, name: "api_keys_key_digest_unique" });
	await qi.addIndex("api_keys", ["organizationId"], { name: "api_keys_org" });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
	for (const table of ["api_keys", "memberships", "organizations", "files", "email_events", "auth_hashes", "auth_codes", "sessions", "users"]) {
		await qi.dropTable(table);
	}
}
