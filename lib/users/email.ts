/**
 * The fastest-validator rule for an e-mail address (sign-up, sign-in, admin users, mail).
 * fastest-validator's "precise" pattern lets control characters through in the local part
 * (`x\u0000b@example.com` passes); no real address has one, and a NUL byte cuts the statement
 * short in SQLite's driver, so they are refused here as an invalid address (`errors.email = email`).
 */
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;

function noControlCharacters(value: unknown, errors: Array<{ type: string; actual: unknown }>): unknown {
	if (typeof value === "string" && CONTROL_CHARACTER.test(value)) errors.push({ type: "email", actual: value });
	return value;
}

/** Trimmed and lower-cased (`normalize`), at most 254 characters (RFC 5321 path length). */
export const EMAIL_RULE = { type: "email", normalize: true, mode: "precise", max: 254, custom: noControlCharacters } as const;
