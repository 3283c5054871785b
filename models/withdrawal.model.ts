import { DataTypes, Model, Sequelize, CreationOptional, InferAttributes, InferCreationAttributes } from "sequelize";
import { moneyAttribute } from "../lib/money";
import { jsonTextAttribute } from "../lib/payments/columns";
import type { LedgerKind, WithdrawalRequestStatus } from "../lib/withdrawals/ledger";
import type { OrganizationMode } from "./organization.model";

/** An organization's withdrawal settings (one row each): where swept funds go, per chain type. */
export class WithdrawalSettings extends Model<InferAttributes<WithdrawalSettings>, InferCreationAttributes<WithdrawalSettings>> {
	declare id: string;
	declare organizationId: string;
	/** The user who saved them last. */
	declare userId: number;
	/** Chain type -> canonical address. */
	declare addresses: Record<string, string>;
	declare strategy: number;
	declare createdAt: Date;
	declare updatedAt: Date;

	static initModel(sequelize: Sequelize): typeof WithdrawalSettings {
		// A subclass per Sequelize instance, so two brokers in one process never share model state.
		return (class extends WithdrawalSettings {}).init(
			{
				id: { type: DataTypes.STRING(36), primaryKey: true },
				organizationId: DataTypes.STRING(36),
				userId: DataTypes.INTEGER,
				addresses: jsonTextAttribute("addresses", {}, false),
				strategy: DataTypes.INTEGER,
				createdAt: DataTypes.DATE(3),
				updatedAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "withdrawal_settings", timestamps: false },
		);
	}
}

/**
 * One movement of what an organization may withdraw, per network and token. Append-only; the
 * amount is signed (positive adds, negative takes away; lib/withdrawals/ledger.ts). UNIQUE
 * (kind, refType, refId): each source event is recorded once.
 */
export class LedgerEntry extends Model<InferAttributes<LedgerEntry>, InferCreationAttributes<LedgerEntry>> {
	declare id: string;
	declare organizationId: string;
	declare mode: OrganizationMode;
	declare networkId: string;
	declare tokenId: string;
	declare kind: LedgerKind;
	declare amount: string;
	declare refType: string;
	declare refId: string;
	declare createdAt: Date;

	static initModel(sequelize: Sequelize): typeof LedgerEntry {
		const dialect = sequelize.getDialect();
		return (class extends LedgerEntry {}).init(
			{
				id: { type: DataTypes.STRING(36), primaryKey: true },
				organizationId: DataTypes.STRING(36),
				mode: DataTypes.STRING(10),
				networkId: DataTypes.STRING(36),
				tokenId: DataTypes.STRING(36),
				kind: DataTypes.STRING(12),
				amount: moneyAttribute("amount", dialect),
				refType: DataTypes.STRING(32),
				refId: DataTypes.STRING(128),
				createdAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "ledger_entries", timestamps: false },
		);
	}
}

/** The row every check of an account's available balance locks (organization + network + token). */
export class LedgerAccount extends Model<InferAttributes<LedgerAccount>, InferCreationAttributes<LedgerAccount>> {
	declare id: string;
	declare organizationId: string;
	declare networkId: string;
	declare tokenId: string;
	declare createdAt: Date;

	static initModel(sequelize: Sequelize): typeof LedgerAccount {
		return (class extends LedgerAccount {}).init(
			{
				id: { type: DataTypes.STRING(120), primaryKey: true },
				organizationId: DataTypes.STRING(36),
				networkId: DataTypes.STRING(36),
				tokenId: DataTypes.STRING(36),
				createdAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "ledger_accounts", timestamps: false },
		);
	}
}

/** A merchant's request to withdraw; `pending` reserves its amount until it completes or fails. */
export class WithdrawalRequest extends Model<InferAttributes<WithdrawalRequest>, InferCreationAttributes<WithdrawalRequest>> {
	declare id: string;
	declare organizationId: string;
	declare mode: OrganizationMode;
	declare userId: number;
	declare amount: string;
	declare tokenId: string;
	declare sourceNetworkId: string;
	declare destinationNetworkId: string | null;
	declare address: string;
	declare strategy: number;
	declare status: WithdrawalRequestStatus;
	declare reason: string | null;
	declare txHash: string | null;
	declare attempts: CreationOptional<number>;
	declare createdAt: Date;
	declare updatedAt: Date;
	declare completedAt: Date | null;

	static initModel(sequelize: Sequelize): typeof WithdrawalRequest {
		const dialect = sequelize.getDialect();
		return (class extends WithdrawalRequest {}).init(
			{
				id: { type: DataTypes.STRING(36), primaryKey: true },
				organizationId: DataTypes.STRING(36),
				mode: DataTypes.STRING(10),
				userId: DataTypes.INTEGER,
				amount: moneyAttribute("amount", dialect),
				tokenId: DataTypes.STRING(36),
				sourceNetworkId: DataTypes.STRING(36),
				destinationNetworkId: DataTypes.STRING(36),
				address: DataTypes.STRING(200),
				strategy: DataTypes.INTEGER,
				status: DataTypes.STRING(12),
				reason: DataTypes.TEXT,
				txHash: DataTypes.STRING(128),
				attempts: { type: DataTypes.INTEGER, defaultValue: 0 },
				createdAt: DataTypes.DATE(3),
				updatedAt: DataTypes.DATE(3),
				completedAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "withdrawal_requests", timestamps: false },
		);
	}
}

/** Where the ledger feed is in the settled checkouts: the keyset (completedAt, transactionId). */
export class WithdrawalFeedCursor extends Model<InferAttributes<WithdrawalFeedCursor>, InferCreationAttributes<WithdrawalFeedCursor>> {
	declare name: string;
	declare completedAt: Date | null;
	declare transactionId: string | null;
	declare updatedAt: Date;

	static initModel(sequelize: Sequelize): typeof WithdrawalFeedCursor {
		return (class extends WithdrawalFeedCursor {}).init(
			{
				name: { type: DataTypes.STRING(32), primaryKey: true },
				completedAt: DataTypes.DATE(3),
				transactionId: DataTypes.STRING(36),
				updatedAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "withdrawal_feed_cursors", timestamps: false },
		);
	}
}
