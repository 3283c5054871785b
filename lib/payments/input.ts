/**
 * Checks of request fields shared by intents and links, beyond what the params schemas express.
 * Each failure is a 400 naming the field, in the caller's spelling (snake_case for
 * /payment_intents, camelCase for /payments/links).
 */
import { isWithdrawalAddressKey, normalizeWithdrawalAddress } from "../chains/withdrawal-keys";
import { badRequest } from "../errors";
import { MAX_DECIMALS, money, toAmountString } from "../money";
import type { OrganizationMode } from "../networks/mode";

/** Serialized size limit of `metadata` (bytes of JSON). */
export const METADATA_MAX_BYTES = 8192;
/** How far ahead an expiry may be set. */
export const MAX_EXPIRY_MS = 366 * 24 * 3600 * 1000;
const ISO_8601 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})$/;

export function checkMetadata(value: unknown, field: string): Record<string, unknown> {
	if (value === undefined || value === null) return {};
	if (typeof value !== "object" || Array.isArray(value)) throw badRequest("metadata must be an object", { [field]: "object" });
	if (Buffer.byteLength(JSON.stringify(value), "utf8") > METADATA_MAX_BYTES) {
		throw badRequest(`metadata must be at most ${METADATA_MAX_BYTES} bytes of JSON`, { [field]: "tooLarge" });
	}
	return value as Record<string, unknown>;
}

/**
 * Per-chain-type withdrawal addresses, each valid for the organization's networks (test networks
 * for sandbox, main networks for live). Empty values mean "the account default" and are dropped;
 * the rest are stored in their canonical form. null when nothing is left.
 */
export function checkWithdrawalAddresses(value: unknown, mode: OrganizationMode, field: string): Record<string, string> | null {
	if (value === undefined || value === null) return null;
	if (typeof value !== "object" || Array.isArray(value)) throw badRequest("withdrawal addresses must be an object keyed by chain type", { [field]: "object" });
	const out: Record<string, string> = {};
	const errors: Record<string, string> = {};
	for (const [chain, address] of Object.entries(value as Record<string, unknown>)) {
		if (!isWithdrawalAddressKey(chain)) {
			errors[`${field}.${chain}`] = "unknownChainType";
			continue;
		}
		if (address === undefined || address === null || address === "") continue;
		if (typeof address !== "string" || address.length > 200) {
			errors[`${field}.${chain}`] = "invalidAddress";
			continue;
		}
		const normalized = normalizeWithdrawalAddress(chain, address, mode);
		if (!normalized) errors[`${field}.${chain}`] = "invalidAddress";
		else out[chain] = normalized;
	}
	if (Object.keys(errors).length) throw badRequest("Invalid withdrawal address", errors);
	return Object.keys(out).length ? out : null;
}

/** An ISO 8601 instant in the future (and within a year). */
export function checkExpiry(value: unknown, now: Date, field: string): Date | null {
	if (value === undefined) return null;
	if (typeof value !== "string" || !ISO_8601.test(value.trim())) throw badRequest("Expiry must be an ISO 8601 date-time", { [field]: "date" });
	const at = new Date(value.trim());
	if (Number.isNaN(at.getTime())) throw badRequest("Expiry must be an ISO 8601 date-time", { [field]: "date" });
	if (at.getTime() <= now.getTime()) throw badRequest("Expiry must be in the future", { [field]: "mustBeFuture" });
	if (at.getTime() - now.getTime() > MAX_EXPIRY_MS) throw badRequest("Expiry must be within a year", { [field]: "tooFar" });
	return at;
}

/** A positive amount with no more decimals than the token has; canonical string. */
export function checkTokenAmount(value: string, decimals: number, field: string): string {
	const d = money(value);
	if (!d.isFinite() || d.lte(0)) throw badRequest("Amount must be greater than zero", { [field]: "mustBePositive" });
	if (d.decimalPlaces() > Math.min(decimals, MAX_DECIMALS)) throw badRequest("Amount has more decimals than the token allows", { [field]: "tooManyDecimals" });
	return toAmountString(d);
}

export function checkPositive(value: string, field: string): string {
	const d = money(value);
	if (!d.isFinite() || d.lte(0)) throw badRequest("Amount must be greater than zero", { [field]: "mustBePositive" });
	return toAmountString(d);
}
