import { DataTypes, Model, Sequelize, CreationOptional, InferAttributes, InferCreationAttributes } from "sequelize";
import { moneyAttribute } from "../lib/money";
import { jsonTextAttribute } from "../lib/payments/columns";
import type { TransactionStatus } from "../lib/payments/settlement";
import type { OrganizationMode } from "./organization.model";

/** A payer's checkout of a payment link: what is due, where to send it, what arrived. */
export class Transaction extends Model<InferAttributes<Transaction>, InferCreationAttributes<Transaction>> {
	declare id: string;
	declare organizationId: string;
	declare mode: OrganizationMode;
	declare paymentLinkId: string;
	declare intentId: string | null;
	declare payerTokenId: string;
	declare payerNetworkId: string;
	/** Decimal string, 0..10 (0.1 = 0.1 %). */
	declare supportPercent: string;
	/** The link's amount in the payer token (originalAmountInPayerToken). */
	declare amount: string;
	/** Everything due in the payer token: amount + support + bridge fee. */
	declare totalAmount: string;
	declare amountReceived: string;
	declare overpaidAmount: string;
	/** Seen on chain, not yet credited (below the network's required confirmations). */
	declare amountConfirming: CreationOptional<string>;
	/** Confirmations of the least confirmed transfer still confirming (null: none). */
	declare confirmations: CreationOptional<number | null>;
	/** The network's required confirmations, set when a transfer is first seen. */
	declare requiredConfirmations: CreationOptional<number | null>;
	/** Credited, then orphaned by a reorg deeper than the required confirmations (docs/payments.md "Reversals"); no longer in amountReceived. */
	declare amountReversed: CreationOptional<string>;
	/** The latest reversal while an amount stays reversed; null when none stands. */
	declare reversedAt: CreationOptional<Date | null>;
	/** The quote the amounts came from (lib/payments/quote.ts), for the record. */
	declare quote: Record<string, unknown> | null;
	declare depositAddressId: string;
	declare depositAddress: string;
	declare status: TransactionStatus;
	/** true once any credit was simulated: such money is never withdrawable. */
	declare simulated: boolean;
	/** Hash of the latest on-chain transfer credited. */
	declare hash: string | null;
	declare payerEmail: string | null;
	declare payerAddress: string | null;
	declare expiresAt: Date;
	declare confirmedAt: Date | null;
	declare completedAt: Date | null;
	declare createdAt: Date;
	declare updatedAt: Date;

	static initModel(sequelize: Sequelize): typeof Transaction {
		const dialect = sequelize.getDialect();
		// A subclass per Sequelize instance, so two brokers in one process never share model state.
		return (class extends Transaction {}).init(
			{
				id: { type: DataTypes.STRING(36), primaryKey: true },
				organizationId: DataTypes.STRING(36),
				mode: DataTypes.STRING(10),
				paymentLinkId: DataTypes.STRING(36),
				intentId: DataTypes.STRING(36),
				payerTokenId: DataTypes.STRING(36),
				payerNetworkId: DataTypes.STRING(36),
				supportPercent: moneyAttribute("supportPercent", dialect),
				amount: moneyAttribute("amount", dialect),
				totalAmount: moneyAttribute("totalAmount", dialect),
				amountReceived: moneyAttribute("amountReceived", dialect),
				overpaidAmount: moneyAttribute("overpaidAmount", dialect),
				amountConfirming: { ...moneyAttribute("amountConfirming", dialect), defaultValue: "0" },
				confirmations: DataTypes.INTEGER,
				requiredConfirmations: DataTypes.INTEGER,
				amountReversed: { ...moneyAttribute("amountReversed", dialect), defaultValue: "0" },
				reversedAt: DataTypes.DATE(3),
				quote: jsonTextAttribute("quote", null),
				depositAddressId: DataTypes.STRING(36),
				depositAddress: DataTypes.STRING(128),
				status: DataTypes.STRING(20),
				simulated: DataTypes.BOOLEAN,
				hash: DataTypes.STRING(128),
				payerEmail: DataTypes.STRING(254),
				payerAddress: DataTypes.STRING(128),
				expiresAt: DataTypes.DATE(3),
				confirmedAt: DataTypes.DATE(3),
				completedAt: DataTypes.DATE(3),
				createdAt: DataTypes.DATE(3),
				updatedAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "transactions", timestamps: false },
		);
	}
}

/**
 * One on-chain transfer credited to a transaction. UNIQUE (networkId, txHash, logIndex) makes
 * crediting idempotent: the same transfer reported twice counts once.
 */
export class TransactionCredit extends Model<InferAttributes<TransactionCredit>, InferCreationAttributes<TransactionCredit>> {
	declare id: CreationOptional<number>;
	declare networkId: string;
	declare txHash: string;
	/** EVM log index, UTXO output index, or the chain's equivalent position in the transaction. */
	declare logIndex: number;
	declare transactionId: string;
	declare tokenId: string;
	declare amount: string;
	/** false: a transfer of another token to the deposit address (kept, not counted). */
	declare counted: boolean;
	declare confirmations: number | null;
	declare simulated: boolean;
	/** The block it was credited from (null: a simulation, or credited before blocks were kept): a reorg reverses it only from that block. */
	declare blockHash: CreationOptional<string | null>;
	/** Set while a reorg deeper than the required confirmations has it reversed; cleared when the transfer is mined again. */
	declare reversedAt: CreationOptional<Date | null>;
	/** How many times a reorg reversed it: the generation in its ledger references. */
	declare reversals: CreationOptional<number>;
	declare createdAt: Date;

	static initModel(sequelize: Sequelize): typeof TransactionCredit {
		const dialect = sequelize.getDialect();
		return (class extends TransactionCredit {}).init(
			{
				id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
				networkId: DataTypes.STRING(36),
				txHash: DataTypes.STRING(128),
				logIndex: DataTypes.INTEGER,
				transactionId: DataTypes.STRING(36),
				tokenId: DataTypes.STRING(36),
				amount: moneyAttribute("amount", dialect),
				counted: DataTypes.BOOLEAN,
				confirmations: DataTypes.INTEGER,
				simulated: DataTypes.BOOLEAN,
				blockHash: DataTypes.STRING(100),
				reversedAt: DataTypes.DATE(3),
				reversals: { type: DataTypes.INTEGER, defaultValue: 0 },
				createdAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "transaction_credits", timestamps: false },
		);
	}
}

export const DETECTION_STATUSES = ["confirming", "credited", "reverted"] as const;
export type DetectionStatus = (typeof DETECTION_STATUSES)[number];

/**
 * A transfer to a checkout's deposit address reported by a chain watcher before (and until) it
 * is credited: what the payer sees as "confirming n of m". UNIQUE (networkId, txHash, logIndex,
 * blockHash): the same transfer re-included in another block after a reorg is another row.
 */
export class PaymentDetection extends Model<InferAttributes<PaymentDetection>, InferCreationAttributes<PaymentDetection>> {
	declare id: CreationOptional<number>;
	declare networkId: string;
	declare txHash: string;
	declare logIndex: number;
	declare blockHash: string;
	declare blockNumber: number;
	declare transactionId: string;
	declare tokenId: string;
	declare amount: string;
	declare counted: boolean;
	declare confirmations: number;
	declare status: DetectionStatus;
	declare createdAt: Date;
	declare updatedAt: Date;

	static initModel(sequelize: Sequelize): typeof PaymentDetection {
		const dialect = sequelize.getDialect();
		return (class extends PaymentDetection {}).init(
			{
				id: { type: DataTypes.INTEGER, autoIncrement: true, primaryKey: true },
				networkId: DataTypes.STRING(36),
				txHash: DataTypes.STRING(128),
				logIndex: DataTypes.INTEGER,
				blockHash: DataTypes.STRING(100),
				blockNumber: {
					type: DataTypes.BIGINT,
					get(this: Model) {
						return Number(this.getDataValue("blockNumber" as never));
					},
				},
				transactionId: DataTypes.STRING(36),
				tokenId: DataTypes.STRING(36),
				amount: moneyAttribute("amount", dialect),
				counted: DataTypes.BOOLEAN,
				confirmations: DataTypes.INTEGER,
				status: DataTypes.STRING(12),
				createdAt: DataTypes.DATE(3),
				updatedAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "payment_detections", timestamps: false },
		);
	}
}
