/**
 * Payment link status rules (decisions.md "Payment links, checkout and transactions"). Pure.
 * Statuses: active, paused, expired, completed, canceled. `inactive` is accepted as an update
 * value and stored as `paused`. completed and canceled are final. A link is payable only while
 * active. Settlement is accepted from active, paused and expired (a checkout that was opened
 * while the link was active runs to the end of its payment window), never from final states.
 */
import { badRequest } from "../errors";

export const LINK_STATUSES = ["active", "paused", "expired", "completed", "canceled"] as const;
export type LinkStatus = (typeof LINK_STATUSES)[number];
/** Values a merchant may send in PATCH. */
export const LINK_UPDATE_STATUSES = ["active", "inactive", "paused", "canceled"] as const;
export type LinkUpdateStatus = (typeof LINK_UPDATE_STATUSES)[number];

export const FINAL_LINK_STATUSES: readonly LinkStatus[] = ["completed", "canceled"];

export function isFinalLinkStatus(status: LinkStatus): boolean {
	return FINAL_LINK_STATUSES.includes(status);
}

export function isExpiredAt(expiresAt: Date | null | undefined, now: Date): boolean {
	return !!expiresAt && expiresAt.getTime() <= now.getTime();
}

/** The status a read should show: active/paused past expiresAt is expired. */
export function effectiveLinkStatus(status: LinkStatus, expiresAt: Date | null | undefined, now: Date): LinkStatus {
	if ((status === "active" || status === "paused") && isExpiredAt(expiresAt, now)) return "expired";
	return status;
}

/** 400 unless a payer can pay (quote, checkout, pay-page confirm) a link in this status. */
export function assertLinkPayable(status: LinkStatus): void {
	if (status !== "active") throw badRequest(`Cannot pay a payment link in state ${status}`);
}

export function canSettleLink(status: LinkStatus): boolean {
	return status === "active" || status === "paused" || status === "expired";
}

/** Cancel: from any state but completed; canceling a canceled link answers it unchanged. */
export function cancelLinkStatus(status: LinkStatus): LinkStatus {
	if (status === "completed") throw badRequest(`Cannot cancel a payment link in state ${status}`);
	return "canceled";
}

export interface LinkPatch {
	status?: LinkUpdateStatus;
	/** undefined: unchanged; null: no expiry. */
	expiresAt?: Date | null;
}

/**
 * The status after a PATCH. Final links refuse every update. A past expiresAt leaves the link
 * expired, and asking for active/paused then is refused; giving an expired link a future
 * expiresAt (or none) reopens it as active unless another status is asked for.
 */
export function patchedLinkStatus(current: { status: LinkStatus; expiresAt: Date | null }, patch: LinkPatch, now: Date): LinkStatus {
	if (isFinalLinkStatus(current.status)) throw badRequest(`Cannot update a payment link in state ${current.status}`);
	const requested: LinkStatus | undefined = patch.status === undefined ? undefined : patch.status === "inactive" ? "paused" : patch.status;
	if (requested === "canceled") return "canceled";
	const expiresAt = patch.expiresAt === undefined ? current.expiresAt : patch.expiresAt;
	const from = effectiveLinkStatus(current.status, current.expiresAt, now);
	if (isExpiredAt(expiresAt, now)) {
		if (requested !== undefined) throw badRequest(`Cannot ${requested === "active" ? "activate" : "pause"} a payment link in state expired`);
		return "expired";
	}
	if (requested !== undefined) return requested;
	return from === "expired" ? "active" : from;
}
