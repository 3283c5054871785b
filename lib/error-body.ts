/**
 * The error shape of every HTTP answer that is not a success (docs/gateway.md "Errors"):
 * `{ statusCode, message, error, errors?, ...extra }`, mapped from whatever failed (validation,
 * body parsing, moleculer-web, our own client errors, an unavailable service or database).
 */
import { isDatabaseUnreachable } from "./db";
import { STATUS_PHRASES, isServiceUnavailable } from "./errors";

/** body-parser / raw-body failure types and what the client gets. */
const BODY_ERRORS: Record<string, { status: number; message: string }> = {
	"entity.parse.failed": { status: 400, message: "Invalid JSON body" },
	"entity.verify.failed": { status: 400, message: "Invalid JSON body" },
	"entity.too.large": { status: 413, message: "Payload Too Large" },
	"encoding.unsupported": { status: 400, message: "Unsupported Content-Encoding" },
	"charset.unsupported": { status: 400, message: "Unsupported charset" },
	"request.aborted": { status: 400, message: "Bad Request" },
	"request.size.invalid": { status: 400, message: "Bad Request" },
	"stream.encoding.set": { status: 400, message: "Bad Request" },
	"stream.not.readable": { status: 400, message: "Bad Request" },
	"parameters.too.many": { status: 400, message: "Bad Request" },
};

/** moleculer-web's own errors whose wording (and data) we replace. */
const GATEWAY_ERRORS: Record<string, { status: number; message: string }> = {
	NotFoundError: { status: 404, message: "Not Found" },
	UnAuthorizedError: { status: 401, message: "Unauthorized" },
	PayloadTooLarge: { status: 413, message: "Payload Too Large" },
	InvalidRequestBodyError: { status: 400, message: "Invalid JSON body" },
	RateLimitExceeded: { status: 429, message: "ThrottlerException: Too Many Requests" },
};

export type ErrorBody = { statusCode: number; message: string; error: string; errors?: Record<string, string>; [k: string]: unknown };

function shaped(status: number, message: string, errors?: Record<string, string>): ErrorBody {
	return { statusCode: status, message, error: STATUS_PHRASES[status] || "Error", ...(errors ? { errors } : {}) };
}

/** fastest-validator's list of `{ type, field, actual }` as `{ field: code }`; unknown fields (strict schemas) as `unknownField`. */
function validationErrors(items: Array<{ field?: string; type?: string; actual?: unknown }>): Record<string, string> {
	const errors: Record<string, string> = {};
	for (const item of items) {
		if (!item || typeof item !== "object") continue;
		if (item.type === "objectStrict" && typeof item.actual === "string") {
			for (const extra of item.actual.split(", ").filter(Boolean)) {
				const field = item.field ? `${item.field}.${extra}` : extra;
				errors[field] ??= "unknownField";
			}
			continue;
		}
		// A failure of the whole body (e.g. not an object) has no field.
		const field = typeof item.field === "string" && item.field ? item.field : "body";
		errors[field] ??= typeof item.type === "string" ? item.type : "invalid";
	}
	return errors;
}

/**
 * Maps any error to the spec's body. Validation errors become 400 with `errors` per field;
 * client errors keep their status, `errors` and plain extra fields (e.g. `canRetryAt`, `code`);
 * a missing or unreachable service is 503; anything else is a bare 500.
 * `multipart`: the request was an upload, so parser failures from busboy are the client's.
 */
export function toErrorBody(err: any, opts: { multipart?: boolean } = {}): ErrorBody {
	if (!err || typeof err !== "object") return shaped(500, "Internal Server Error");
	const name = typeof err.name === "string" ? err.name : "";
	// Validation: fastest-validator's list of { field, type }.
	if (name === "ValidationError" && Array.isArray(err.data)) {
		return shaped(400, "Validation failed", validationErrors(err.data));
	}
	// Body parser errors (moleculer-web rewraps them as MoleculerError keeping `type`).
	if (typeof err.type === "string" && BODY_ERRORS[err.type]) {
		const { status, message } = BODY_ERRORS[err.type];
		return shaped(status, message);
	}
	// A path parameter that is not valid percent-encoding.
	if (name === "BadRequestError" && err.type === "UNABLE_DECODE_PARAM") return shaped(400, "Invalid URL encoding");
	if (name === "ForbiddenError" && err.type === "ORIGIN_NOT_ALLOWED") return shaped(403, "Origin not allowed");
	if (GATEWAY_ERRORS[name]) return shaped(GATEWAY_ERRORS[name].status, GATEWAY_ERRORS[name].message);
	// moleculer-web's answer to an upload form without any file part.
	if (opts.multipart && err.message === "File missing in the request") return shaped(400, "A file is required", { file: "required" });
	// With autoAliases every route's service exists when the route does; a missing service here is
	// one that an action depends on, or one that just left: unavailable, not "no such resource".
	// The database down (or restarting) is the same for a client: try again shortly.
	if (isServiceUnavailable(err) || name === "ServiceUnavailableError" || isDatabaseUnreachable(err)) return shaped(503, "Service Unavailable");
	const code = Number(err.code);
	if (Number.isInteger(code) && code >= 400 && code < 500) {
		const data = err.data && typeof err.data === "object" && !Array.isArray(err.data) ? err.data : {};
		const { errors, ...extra } = data as { errors?: unknown };
		const message = typeof err.message === "string" && err.message ? err.message : STATUS_PHRASES[code] || "Error";
		const fieldErrors = flatStringMap(errors);
		return {
			...shaped(code, message, fieldErrors),
			// Only our own client errors carry extra body fields; other libraries' data stays out of the body.
			...(name === "MoleculerClientError" ? sanitizeExtra(extra) : {}),
		};
	}
	if (code === 503) return shaped(503, "Service Unavailable");
	// busboy (multipart parser) throws plain errors for malformed forms.
	if (opts.multipart && !("code" in err) && /multipart|boundary|unexpected end of/i.test(String(err.message))) {
		return shaped(400, "Malformed multipart body");
	}
	return shaped(500, "Internal Server Error");
}

function flatStringMap(value: unknown): Record<string, string> | undefined {
	if (!value || typeof value !== "object" || Array.isArray(value)) return undefined;
	const out: Record<string, string> = {};
	for (const [k, v] of Object.entries(value)) if (typeof v === "string") out[k] = v;
	return Object.keys(out).length ? out : undefined;
}

/** Only plain values of the error's data reach the body (never stacks or nested errors), and never the shape's own fields. */
function sanitizeExtra(extra: Record<string, unknown>): Record<string, unknown> {
	const out: Record<string, unknown> = {};
	for (const [k, v] of Object.entries(extra)) {
		if (k === "statusCode" || k === "message" || k === "error" || k === "stack") continue;
		if (["string", "number", "boolean"].includes(typeof v) || v === null) out[k] = v;
	}
	return out;
}
