import { DataTypes, Model, Sequelize, CreationOptional, InferAttributes, InferCreationAttributes } from "sequelize";
import { moneyAttribute } from "../lib/money";
import { jsonTextAttribute } from "../lib/payments/columns";

/** A sending wallet's next nonce on a network, taken under this row's lock (one nonce, one sweep). */
export class SweepWallet extends Model<InferAttributes<SweepWallet>, InferCreationAttributes<SweepWallet>> {
	declare networkId: string;
	declare address: string;
	declare nextNonce: number;
	declare updatedAt: Date;

	static initModel(sequelize: Sequelize): typeof SweepWallet {
		return (class extends SweepWallet {}).init(
			{
				networkId: { type: DataTypes.STRING(36), primaryKey: true },
				address: { type: DataTypes.STRING(128), primaryKey: true },
				nextNonce: DataTypes.INTEGER,
				updatedAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "sweep_wallets", timestamps: false },
		);
	}
}

/**
 * `stalled`: the sending nonce was used by a transaction we do not know and none of the sweep's
 * own transactions could be found after bounded re-checks over several polls. Not a failure: its
 * items (and its request) stay open until an operator resolves it (docs/operations.md).
 */
export const SWEEP_STATUSES = ["planned", "signed", "broadcast", "confirmed", "failed", "stalled"] as const;
export type SweepStatus = (typeof SWEEP_STATUSES)[number];
/** A sweep not ended: its items (and request) are open, its funds held (a stalled one until an operator resolves it). */
export const OPEN_SWEEP_STATUSES: readonly SweepStatus[] = ["planned", "signed", "broadcast", "stalled"];
/**
 * native: a deposit's coin, sent by the deposit key (it pays its own gas); batch7702: token
 * deposits swept through their EIP-7702 delegation, gas paid by the sweeper wallet; topup: gas
 * sent by the sweeper wallet to a token deposit on a network without EIP-7702; token: that
 * deposit's token transfer, signed by its key, once the top-up is there; utxo: a Bitcoin-family
 * consolidation of one merchant's deposit outputs into one output; sol: Solana deposits' SOL in one
 * transaction (the deposits pay its fee); spl: Solana deposits' SPL tokens in one transaction (the
 * sweeper wallet pays its fee and rent, the closed token accounts' rent returns to it).
 */
export type SweepKind = "native" | "batch7702" | "topup" | "token" | "utxo" | "sol" | "spl";
/** The kinds that move a merchant's funds (a top-up only moves the operator's gas). */
export const FUNDS_SWEEP_KINDS: readonly SweepKind[] = ["native", "batch7702", "token", "utxo", "sol", "spl"];

/**
 * One on-chain send that moves deposit funds to a merchant's address. Its signed bytes and hash
 * are recorded before it is broadcast, so a restart re-broadcasts the same transaction (same
 * nonce) instead of signing new funds movements. `hashes` keeps every fee-bumped replacement.
 */
export class Sweep extends Model<InferAttributes<Sweep>, InferCreationAttributes<Sweep>> {
	declare id: string;
	declare networkId: string;
	declare kind: SweepKind;
	declare status: SweepStatus;
	declare tokenId: string;
	declare fromAddress: string;
	declare toAddress: string;
	declare nonce: number;
	declare rawTx: string | null;
	declare txHash: string | null;
	declare hashes: string[];
	declare feeStep: number;
	declare gasUsed: string | null;
	declare feePaid: string | null;
	declare reason: string | null;
	/** Set when the sweep pays a merchant's withdrawal request (an exact amount to the request's address). */
	declare requestId: CreationOptional<string | null>;
	/** Strategy 2: the sweep sent the funds to a bridge provider's deposit address for this quote. */
	declare bridgeProvider: CreationOptional<string | null>;
	declare bridgeQuoteId: CreationOptional<string | null>;
	/** pending until the provider reports completed, failed or refunded. */
	declare bridgeState: CreationOptional<string | null>;
	declare bridgeTxHash: CreationOptional<string | null>;
	/** The request id while the sweep paying it is in flight or stalled (UNIQUE: one sweep per request at a time). */
	declare openRequestKey: CreationOptional<string | null>;
	/** Consecutive polls that found the nonce used and none of the sweep's transactions, since when. */
	declare unseenPolls: CreationOptional<number>;
	declare unseenSince: CreationOptional<Date | null>;
	/** UTXO sweeps: the block the sweep's transaction was found in (its confirmations are read there). */
	declare minedBlock: CreationOptional<string | null>;
	/** Solana sweeps: the last block height the recorded transaction may land in (its blockhash's expiry). */
	declare lastValidBlockHeight: CreationOptional<string | number | null>;
	declare broadcastAt: Date | null;
	declare createdAt: Date;
	declare updatedAt: Date;

	static initModel(sequelize: Sequelize): typeof Sweep {
		return (class extends Sweep {}).init(
			{
				id: { type: DataTypes.STRING(36), primaryKey: true },
				networkId: DataTypes.STRING(36),
				kind: DataTypes.STRING(16),
				status: DataTypes.STRING(12),
				tokenId: DataTypes.STRING(36),
				fromAddress: DataTypes.STRING(128),
				toAddress: DataTypes.STRING(128),
				nonce: DataTypes.INTEGER,
				rawTx: DataTypes.TEXT,
				txHash: DataTypes.STRING(100),
				hashes: jsonTextAttribute("hashes", []),
				feeStep: DataTypes.INTEGER,
				gasUsed: DataTypes.STRING(40),
				feePaid: DataTypes.STRING(80),
				reason: DataTypes.TEXT,
				requestId: DataTypes.STRING(36),
				bridgeProvider: DataTypes.STRING(64),
				bridgeQuoteId: DataTypes.STRING(200),
				bridgeState: DataTypes.STRING(12),
				bridgeTxHash: DataTypes.STRING(200),
				openRequestKey: DataTypes.STRING(36),
				unseenPolls: { type: DataTypes.INTEGER, defaultValue: 0 },
				unseenSince: DataTypes.DATE(3),
				minedBlock: DataTypes.STRING(100),
				lastValidBlockHeight: DataTypes.BIGINT,
				broadcastAt: DataTypes.DATE(3),
				createdAt: DataTypes.DATE(3),
				updatedAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "sweeps", timestamps: false },
		);
	}
}

/**
 * A deposit's funds in a sweep. `openKey` (deposit address + token) is UNIQUE while the sweep is
 * in flight and cleared when it ends: the same funds are never in two sweeps at once.
 */
export class SweepItem extends Model<InferAttributes<SweepItem>, InferCreationAttributes<SweepItem>> {
	declare id: CreationOptional<number>;
	declare sweepId: string;
	declare transactionId: string;
	declare organizationId: string;
	declare mode: string;
	declare depositAddress: string;
	declare derivationIndex: number;
	declare tokenId: string;
	/** Token units (decimal string) moved to the merchant. */
	declare amount: string;
	declare openKey: string | null;
	declare createdAt: Date;

	static initModel(sequelize: Sequelize): typeof SweepItem {
		const dialect = sequelize.getDialect();
		return (class extends SweepItem {}).init(
			{
				id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
				sweepId: DataTypes.STRING(36),
				transactionId: DataTypes.STRING(36),
				organizationId: DataTypes.STRING(36),
				mode: DataTypes.STRING(10),
				depositAddress: DataTypes.STRING(128),
				derivationIndex: DataTypes.INTEGER,
				tokenId: DataTypes.STRING(36),
				amount: moneyAttribute("amount", dialect),
				openKey: DataTypes.STRING(200),
				createdAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "sweep_items", timestamps: false },
		);
	}
}

/** What a hold keeps the sweeper away from: a destination (native sends, or a token to it) or one token deposit. */
export type SweepHoldScope = "destination" | "deposit";

/**
 * A destination or deposit whose sends reverted, or whose gas estimate said they would
 * (lib/sweeps/holds.ts): nothing is sent there before `nextAttemptAt`, and nothing at all once
 * `blockedAt` is set (after SWEEP_MAX_FAILURES), until support clears it or the merchant changes
 * the address. A success there deletes the row.
 */
export class SweepHold extends Model<InferAttributes<SweepHold>, InferCreationAttributes<SweepHold>> {
	declare id: CreationOptional<number>;
	declare networkId: string;
	declare scope: SweepHoldScope;
	declare address: string;
	/** The token of a deposit hold, or of a token destination ("" for native sends). */
	declare tokenId: string;
	declare failures: number;
	declare reason: string;
	declare nextAttemptAt: Date;
	declare blockedAt: Date | null;
	declare createdAt: Date;
	declare updatedAt: Date;

	static initModel(sequelize: Sequelize): typeof SweepHold {
		return (class extends SweepHold {}).init(
			{
				id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
				networkId: DataTypes.STRING(36),
				scope: DataTypes.STRING(16),
				address: DataTypes.STRING(128),
				tokenId: DataTypes.STRING(36),
				failures: DataTypes.INTEGER,
				reason: DataTypes.TEXT,
				nextAttemptAt: DataTypes.DATE(3),
				blockedAt: DataTypes.DATE(3),
				createdAt: DataTypes.DATE(3),
				updatedAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "sweep_holds", timestamps: false },
		);
	}
}
