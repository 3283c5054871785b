/**
 * Webhook signatures (spec "Events"): the header `x-webhook-signature` carries the hex
 * HMAC-SHA256 of the exact request body under the secret. Used by our sender, by the inbound
 * receiver, and by merchants (README "Verifying webhooks"): this module depends on node:crypto
 * only, so it can be copied into a receiver as is.
 */
import crypto from "node:crypto";

export const SIGNATURE_HEADER = "x-webhook-signature";

/** Hex HMAC-SHA256 of the raw body. */
export function signWebhookBody(rawBody: string | Buffer, secret: string): string {
	return crypto.createHmac("sha256", secret).update(rawBody).digest("hex");
}

/**
 * True when `header` is the signature of `rawBody` under `secret`. Compare over the bytes you
 * received, before any JSON parsing. Constant time: both sides are fixed-length digests.
 * A missing, non-hex or wrong-length header is simply false.
 */
export function verifyWebhookSignature(rawBody: string | Buffer, header: string | string[] | undefined | null, secret: string): boolean {
	const value = Array.isArray(header) ? header[0] : header;
	if (typeof value !== "string" || !secret) return false;
	const given = value.trim().toLowerCase();
	if (!/^[0-9a-f]{64}$/.test(given)) return false;
	const expected = Buffer.from(signWebhookBody(rawBody, secret), "hex");
	return crypto.timingSafeEqual(expected, Buffer.from(given, "hex"));
}
