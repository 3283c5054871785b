/**
 * Verifying a webhook the gateway sent (spec "Events", docs/webhooks.md): the header
 * `x-webhook-signature` is the hex HMAC-SHA256 of the exact body bytes under the API key's secret.
 * `verifyWebhook` checks it in constant time over the raw body and parses the event. With
 * `toleranceSeconds` it also refuses an event whose `created` (inside the signed body) is further
 * from now. That is off by default: `created` is when the event happened, not when it was sent, so
 * a delivery held back by an outage or a backlog would be refused and, after its attempts, lost
 * to the merchant. Deliveries are at least once; handling each event id once is what stops a replay.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import type { WebhookEvent } from "./types";

export const SIGNATURE_HEADER = "x-webhook-signature";

export type WebhookVerificationCode = "missing_secret" | "missing_signature" | "malformed_signature" | "signature_mismatch" | "invalid_body" | "timestamp_outside_tolerance";

/** Why a webhook was refused; answer it with a 400 and do not act on the body. */
export class WebhookVerificationError extends Error {
	readonly name = "WebhookVerificationError";
	constructor(
		readonly code: WebhookVerificationCode,
		message: string,
	) {
		super(message);
	}
}

export interface VerifyOptions {
	/** Largest distance between the event's `created` and now, in seconds, either way; not given (or `Infinity`): no check. */
	toleranceSeconds?: number;
	/** Now, for the tolerance (default the current time). */
	now?: Date | number;
}

/** The header value for `rawBody` under `secret` (hex HMAC-SHA256): what the gateway sends. */
export function signWebhook(rawBody: string | Uint8Array, secret: string): string {
	return createHmac("sha256", secret).update(rawBody).digest("hex");
}

/**
 * The event, when `signatureHeader` is the signature of `rawBody` under `secret` (and, with
 * `toleranceSeconds`, the event is that recent); otherwise a WebhookVerificationError saying why. Pass the bytes exactly as received
 * (`express.raw()`, the request's chunks), never re-serialised JSON.
 */
export function verifyWebhook(rawBody: string | Uint8Array, signatureHeader: string | string[] | null | undefined, secret: string, options: VerifyOptions = {}): WebhookEvent {
	if (typeof secret !== "string" || secret === "") throw new WebhookVerificationError("missing_secret", "No webhook secret given (the API key's secret, sk_...)");
	if (typeof rawBody !== "string" && !(rawBody instanceof Uint8Array)) throw new WebhookVerificationError("invalid_body", "The raw body must be a string or bytes, as received");
	if (Array.isArray(signatureHeader) && signatureHeader.length > 1) throw new WebhookVerificationError("malformed_signature", `More than one ${SIGNATURE_HEADER} header`);
	const header = Array.isArray(signatureHeader) ? signatureHeader[0] : signatureHeader;
	if (header === undefined || header === null || header === "") throw new WebhookVerificationError("missing_signature", `No ${SIGNATURE_HEADER} header`);
	const given = String(header).trim().toLowerCase();
	if (!/^[0-9a-f]{64}$/.test(given)) throw new WebhookVerificationError("malformed_signature", `${SIGNATURE_HEADER} must be 64 hex characters (HMAC-SHA256)`);
	const expected = Buffer.from(signWebhook(rawBody, secret), "hex");
	if (!timingSafeEqual(expected, Buffer.from(given, "hex"))) throw new WebhookVerificationError("signature_mismatch", "The signature does not match the body under this secret");

	let event: WebhookEvent;
	try {
		event = JSON.parse(typeof rawBody === "string" ? rawBody : Buffer.from(rawBody).toString("utf8")) as WebhookEvent;
	} catch {
		throw new WebhookVerificationError("invalid_body", "The body is not JSON");
	}
	if (!event || typeof event !== "object" || typeof event.id !== "string" || typeof event.type !== "string") {
		throw new WebhookVerificationError("invalid_body", "The body is not a webhook event ({ id, type, created, livemode, data })");
	}
	const tolerance = options.toleranceSeconds ?? Infinity;
	if (tolerance !== Infinity) {
		const created = typeof event.created === "string" ? Date.parse(event.created) : NaN;
		if (Number.isNaN(created)) throw new WebhookVerificationError("invalid_body", "The event has no valid created time");
		const now = options.now === undefined ? Date.now() : new Date(options.now).getTime();
		if (Math.abs(now - created) > tolerance * 1000) {
			throw new WebhookVerificationError("timestamp_outside_tolerance", `The event was created at ${event.created}, more than ${tolerance} s from now`);
		}
	}
	return event;
}
