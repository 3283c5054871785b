/**
 * Input rules of the support staff's commands and of the internal `*.support.*` actions behind
 * them (fastest-validator rules and the same checks as plain functions, so the REPL refuses bad
 * input with a sentence before any call).
 */
import { isUuid } from "../ids";

/** Our ids (intents, links, checkouts, organizations, webhook deliveries): UUIDs. */
export const SUPPORT_ID = { type: "uuid" } as const;

/**
 * A chain transaction hash as chains write them: hex with or without 0x (EVM, Bitcoin, Tron,
 * Cosmos, Polkadot), base58 (Solana), base64 (TON); also the watcher's `reconcile:<address>:<block>` keys.
 */
export const HASH_PATTERN = /^[0-9A-Za-z][0-9A-Za-z+/=_:.-]{15,127}$/;
export const SUPPORT_HASH = { type: "string", pattern: HASH_PATTERN } as const;

/** Pay-page slugs (`pl_` and base62), also taken from a whole pay-page URL. */
export const SLUG_PATTERN = /^pl_[0-9A-Za-z]{1,64}$/;

/** Block numbers a rewind takes. */
export const BLOCK_NUMBER = { type: "number", integer: true, min: 0, max: Number.MAX_SAFE_INTEGER, convert: true } as const;

export { isUuid };

export function isHash(value: string): boolean {
	return HASH_PATTERN.test(value);
}

/** The slug of a pay-page reference: `pl_…`, or a URL whose path ends in `/pay/pl_…` (checkout pages too). */
export function slugOf(ref: string): string | null {
	if (SLUG_PATTERN.test(ref)) return ref;
	let path: string;
	try {
		path = new URL(ref).pathname;
	} catch {
		return null;
	}
	const m = /\/pay\/(pl_[0-9A-Za-z]{1,64})(?:\/|$)/.exec(path);
	return m ? m[1] : null;
}

/** The checkout id in a pay-page checkout URL (`/pay/pl_…/checkout?transaction=<id>`), if any. */
export function checkoutIdOf(ref: string): string | null {
	let url: URL;
	try {
		url = new URL(ref);
	} catch {
		return null;
	}
	const id = url.searchParams.get("transaction");
	return id && isUuid(id) ? id : null;
}
