/**
 * A new payment link's row, as POST /payments/links and POST /payment_intents (the intent's own
 * link) write it: active, single use, no payer yet, a fresh public slug.
 */
import type { Attributes } from "sequelize";
import { randomBase62 } from "../crypto";
import { uuid } from "../ids";
import type { PaymentLink } from "../../models/payment-link.model";
import type { OrganizationMode } from "../../models/organization.model";

/** A link's public slug (its pay page's address). */
const slugFor = () => `pl_${randomBase62(24)}`;

export function newLinkRow(p: {
	organization: { id: string; mode: OrganizationMode };
	/** The intent that owns the link (made with it), or null for a merchant's own link. */
	intentId: string | null;
	title: string;
	amount: string;
	pair: { token: { id: string }; network: { id: string } };
	expiresAt: Date | null;
	metadata: Record<string, unknown>;
	withdrawalAddresses: Record<string, string> | null;
	createdByUserId: number | null;
	now: Date;
}): Attributes<PaymentLink> {
	return {
		id: uuid(),
		organizationId: p.organization.id,
		mode: p.organization.mode,
		intentId: p.intentId,
		ownedByIntent: p.intentId !== null,
		slug: slugFor(),
		title: p.title,
		amount: p.amount,
		tokenId: p.pair.token.id,
		networkId: p.pair.network.id,
		status: "active",
		expiresAt: p.expiresAt,
		metadata: p.metadata,
		withdrawalAddresses: p.withdrawalAddresses,
		singleUse: true,
		payerEmail: null,
		payerAddress: null,
		createdByUserId: p.createdByUserId,
		createdAt: p.now,
		updatedAt: p.now,
		deletedAt: null,
	};
}
