import { DataTypes, Model, Sequelize, InferAttributes, InferCreationAttributes } from "sequelize";
import { moneyAttribute } from "../lib/money";
import type { IntentState } from "../lib/payments/intent-state";
import type { OrganizationMode } from "./organization.model";
import { jsonTextAttribute } from "../lib/payments/columns";
import type { IntentReversal } from "../lib/payments/views";

/**
 * A payment intent (docs/payments.md). Timestamps come from the app clock (timestamps: false),
 * so expiry and the dashboard follow the injectable clock. `clientSecretDigest` is a keyed
 * digest of the client secret: the secret itself is shown once, at creation.
 */
export class PaymentIntent extends Model<InferAttributes<PaymentIntent>, InferCreationAttributes<PaymentIntent>> {
	declare id: string;
	declare organizationId: string;
	/** The API key that created it: its webhook URL receives the events. Null for bearer-token callers and pay-page intents. */
	declare apiKeyId: number | null;
	declare mode: OrganizationMode;
	declare amount: string;
	/** Lower case: the token's symbol or a fiat code. */
	declare currency: string;
	declare tokenId: string;
	declare networkId: string;
	/** `amount` in token units (equal to it when `currency` is the token). */
	declare tokenAmount: string;
	/** Fiat quote kept with the intent (null when `currency` is the token). */
	declare currencyRateId: string | null;
	declare amountUsd: string | null;
	/** Token units per unit of `currency`, 18 places (informational; tokenAmount is authoritative). */
	declare rate: string | null;
	declare status: IntentState;
	declare paymentMethodTypes: string[];
	declare clientSecretDigest: string;
	declare returnUrl: string;
	declare cancelUrl: string | null;
	declare description: string | null;
	declare metadata: Record<string, unknown>;
	declare expiresAt: Date | null;
	declare withdrawalAddresses: Record<string, string> | null;
	declare paymentLinkId: string;
	declare latestTransactionId: string | null;
	declare cancellationReason: string | null;
	declare canceledAt: Date | null;
	declare succeededAt: Date | null;
	/** The latest reversal of a credit of its checkouts (docs/payments.md "Reversals"); null when none stands. */
	declare reversal: IntentReversal | null;
	declare createdAt: Date;
	declare updatedAt: Date;

	static initModel(sequelize: Sequelize): typeof PaymentIntent {
		const dialect = sequelize.getDialect();
		// A subclass per Sequelize instance, so two brokers in one process never share model state.
		return (class extends PaymentIntent {}).init(
			{
				id: { type: DataTypes.STRING(36), primaryKey: true },
				organizationId: DataTypes.STRING(36),
				apiKeyId: DataTypes.INTEGER,
				mode: DataTypes.STRING(10),
				amount: moneyAttribute("amount", dialect),
				currency: DataTypes.STRING(20),
				tokenId: DataTypes.STRING(36),
				networkId: DataTypes.STRING(36),
				tokenAmount: moneyAttribute("tokenAmount", dialect),
				currencyRateId: DataTypes.STRING(36),
				amountUsd: moneyAttribute("amountUsd", dialect, true),
				rate: moneyAttribute("rate", dialect, true),
				status: DataTypes.STRING(30),
				paymentMethodTypes: jsonTextAttribute("paymentMethodTypes", ["crypto"]),
				clientSecretDigest: DataTypes.STRING(64),
				returnUrl: DataTypes.STRING(2048),
				cancelUrl: DataTypes.STRING(2048),
				description: DataTypes.TEXT,
				metadata: jsonTextAttribute("metadata", {}),
				expiresAt: DataTypes.DATE(3),
				withdrawalAddresses: jsonTextAttribute("withdrawalAddresses", null),
				paymentLinkId: DataTypes.STRING(36),
				latestTransactionId: DataTypes.STRING(36),
				cancellationReason: DataTypes.STRING(40),
				canceledAt: DataTypes.DATE(3),
				succeededAt: DataTypes.DATE(3),
				reversal: jsonTextAttribute("reversal", null),
				createdAt: DataTypes.DATE(3),
				updatedAt: DataTypes.DATE(3),
			},
			{ sequelize, tableName: "payment_intents", timestamps: false },
		);
	}
}
