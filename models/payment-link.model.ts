import { DataTypes, Model, Sequelize, CreationOptional, InferAttributes, InferCreationAttributes } from "sequelize";
import { moneyAttribute } from "../lib/money";
import { jsonTextAttribute } from "../lib/payments/columns";
import type { LinkStatus } from "../lib/payments/link-state";
import type { OrganizationMode } from "./organization.model";

/** A payment link (hosted pay page). Soft-deleted (deletedAt); timestamps from the app clock. */
export class PaymentLink extends Model<InferAttributes<PaymentLink>, InferCreationAttributes<PaymentLink>> {
	declare id: string;
	declare organizationId: string;
	declare mode: OrganizationMode;
	/** The intent the link belongs to (created with it), or the one the pay page opened for it. */
	declare intentId: string | null;
	/** true when the link was made by POST /payment_intents and is managed through the intent. */
	declare ownedByIntent: boolean;
	declare slug: string;
	declare title: string;
	declare amount: string;
	declare tokenId: string;
	declare networkId: string;
	declare status: LinkStatus;
	declare expiresAt: Date | null;
	declare metadata: Record<string, unknown>;
	declare withdrawalAddresses: Record<string, string> | null;
	declare singleUse: boolean;
	/** Lower-cased; from the payer at checkout (filters). */
	declare payerEmail: string | null;
	declare payerAddress: string | null;
	declare createdByUserId: number | null;
	declare createdAt: Date;
	declare updatedAt: Date;
	declare deletedAt: CreationOptional<Date | null>;

	static initModel(sequelize: Sequelize): typeof PaymentLink {
		const dialect = sequelize.getDialect();
		// A subclass per Sequelize instance, so two brokers in one process never share model state.
		return (class extends PaymentLink {}).init(
			{
				id: { type: DataTypes.STRING(36), primaryKey: true },
				organizationId: DataTypes.STRING(36),
				mode: DataTypes.STRING(10),
				intentId: DataTypes.STRING(36),
				ownedByIntent: DataTypes.BOOLEAN,
				slug: DataTypes.STRING(40),
				title: DataTypes.STRING(200),
				amount: moneyAttribute("amount", dialect),
				tokenId: DataTypes.STRING(36),
				networkId: DataTypes.STRING(36),
				status: DataTypes.STRING(20),
				expiresAt: DataTypes.DATE(3),
				metadata: jsonTextAttribute("metadata", {}),
				withdrawalAddresses: jsonTextAttribute("withdrawalAddresses", null),
				singleUse: DataTypes.BOOLEAN,
				payerEmail: DataTypes.STRING(254),
				payerAddress: DataTypes.STRING(128),
				createdByUserId: DataTypes.INTEGER,
				createdAt: DataTypes.DATE(3),
				updatedAt: DataTypes.DATE(3),
				deletedAt: DataTypes.DATE(3),
			},
			// Soft delete by hand (deletedAt): Sequelize's paranoid mode would stamp times from the
			// system clock, not the app clock. Every read filters `deletedAt: null`.
			{ sequelize, tableName: "payment_links", timestamps: false },
		);
	}
}
