import { DataTypes, Model, Sequelize, CreationOptional, InferAttributes, InferCreationAttributes } from "sequelize";
import { moneyAttribute } from "../lib/money";
import { jsonTextAttribute } from "../lib/payments/columns";

/** BIGINT block numbers read back as JS numbers (mysql2 returns BIGINT as strings; block numbers stay far below 2^53). */
function blockNumberAttribute(field: string, allowNull: boolean) {
	return {
		type: DataTypes.BIGINT,
		allowNull,
		get(this: Model) {
			const raw = this.getDataValue(field) as unknown;
			return raw === null || raw === undefined ? null : Number(raw);
		},
	};
}

/**
 * A watcher's place on one network: the last processed block (number + hash), the hashes of the
 * blocks before it (reorg checks), and the lease that makes one watcher the writer. `leaseToken`
 * grows with every new holder: it is the fencing token every cursor write checks.
 */
export class ChainCursor extends Model<InferAttributes<ChainCursor>, InferCreationAttributes<ChainCursor>> {
	declare networkId: string;
	declare chainType: string;
	declare blockNumber: number | null;
	declare blockHash: string | null;
	/** [number, hash] pairs, oldest first, up to the configured reorg depth. */
	declare recentBlocks: Array<[number, string]>;
	declare leaseOwner: string | null;
	declare leaseToken: CreationOptional<number>;
	declare leaseUntil: Date | null;
	declare reconciledAt: Date | null;
	declare updatedAt: Date;

	static initModel(sequelize: Sequelize): typeof ChainCursor {
		return (class extends ChainCursor {}).init(
			{
				networkId: { type: DataTypes.STRING(36), primaryKey: true },
				chainType: DataTypes.STRING(16),
				blockNumber: blockNumberAttribute("blockNumber", true),
				blockHash: DataTypes.STRING(100),
				recentBlocks: jsonTextAttribute("recentBlocks", []),
				leaseOwner: DataTypes.STRING(100),
				leaseToken: { type: DataTypes.INTEGER, defaultValue: 0 },
				leaseUntil: DataTypes.DATE(3),
				reconciledAt: DataTypes.DATE(3),
				updatedAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "chain_cursors", timestamps: false },
		);
	}
}

/** superseded: an unconfirmed (mempool) sighting whose transaction was then seen in a block. */
export const CHAIN_TRANSFER_STATUSES = ["active", "reverted", "superseded"] as const;
export type ChainTransferStatus = (typeof CHAIN_TRANSFER_STATUSES)[number];
/** What the payments side has acknowledged about a transfer. */
export type ChainTransferReported = "none" | "detected" | "credited" | "reverted" | "ignored";

/**
 * A transfer to a deposit address as a watcher saw it in one block. Kept when a reorg orphans
 * its block (status reverted). `pending` is true while the payments side still has to hear
 * something about it (a new confirmation count, the credit, the revert).
 */
export class ChainTransfer extends Model<InferAttributes<ChainTransfer>, InferCreationAttributes<ChainTransfer>> {
	declare id: CreationOptional<number>;
	declare networkId: string;
	declare txHash: string;
	declare logIndex: number;
	declare blockNumber: number;
	declare blockHash: string;
	declare toAddress: string;
	declare tokenId: string;
	/** Token units (decimal string). */
	declare amount: string;
	declare status: ChainTransferStatus;
	declare reported: ChainTransferReported;
	declare reportedConfirmations: number | null;
	declare pending: boolean;
	declare createdAt: Date;
	declare updatedAt: Date;

	static initModel(sequelize: Sequelize): typeof ChainTransfer {
		const dialect = sequelize.getDialect();
		return (class extends ChainTransfer {}).init(
			{
				id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
				networkId: DataTypes.STRING(36),
				txHash: DataTypes.STRING(128),
				logIndex: DataTypes.INTEGER,
				blockNumber: blockNumberAttribute("blockNumber", false),
				blockHash: DataTypes.STRING(100),
				toAddress: DataTypes.STRING(128),
				tokenId: DataTypes.STRING(36),
				amount: moneyAttribute("amount", dialect),
				status: DataTypes.STRING(12),
				reported: DataTypes.STRING(12),
				reportedConfirmations: DataTypes.INTEGER,
				pending: DataTypes.BOOLEAN,
				createdAt: DataTypes.DATE(3),
				updatedAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "chain_transfers", timestamps: false },
		);
	}
}
