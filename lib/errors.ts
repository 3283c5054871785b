/**
 * One place for error construction. Every client error is a MoleculerClientError whose `code`
 * is the HTTP status and whose `data` may carry `errors` (per field codes) and extra body fields
 * (e.g. `canRetryAt`, `code`). The gateway turns them into `{ statusCode, message, error, ... }`.
 */
import { Errors } from "moleculer";

export type FieldErrors = Record<string, string>;

export interface ErrorData {
	errors?: FieldErrors;
	[extra: string]: unknown;
}

export const STATUS_PHRASES: Record<number, string> = {
	400: "Bad Request",
	401: "Unauthorized",
	403: "Forbidden",
	404: "Not Found",
	405: "Method Not Allowed",
	408: "Request Timeout",
	409: "Conflict",
	413: "Payload Too Large",
	415: "Unsupported Media Type",
	422: "Unprocessable Entity",
	429: "Too Many Requests",
	431: "Request Header Fields Too Large",
	500: "Internal Server Error",
	502: "Bad Gateway",
	503: "Service Unavailable",
	504: "Gateway Timeout",
};

export function httpError(status: number, message: string, data?: ErrorData): Errors.MoleculerClientError {
	const type = (STATUS_PHRASES[status] || "Error").toUpperCase().replace(/ /g, "_");
	return new Errors.MoleculerClientError(message, status, type, data);
}

export const badRequest = (message = "Bad Request", errors?: FieldErrors, extra?: Record<string, unknown>) =>
	httpError(400, message, { ...(errors ? { errors } : {}), ...extra });
export const unauthorized = (message = "Unauthorized") => httpError(401, message);
export const forbidden = (message = "Forbidden", extra?: Record<string, unknown>) => httpError(403, message, extra);
export const notFound = (message = "Not Found") => httpError(404, message);
export const unprocessable = (message: string, errors?: FieldErrors) => httpError(422, message, errors ? { errors } : undefined);
export const serviceUnavailable = (message = "Service Unavailable") => httpError(503, message);
export const tooManyRequests = (message: string, errors?: FieldErrors, extra?: Record<string, unknown>) =>
	httpError(429, message, { ...(errors ? { errors } : {}), ...extra });

/** A field-level validation failure, shaped like the validator's own. */
export const invalidField = (field: string, code: string, message = "Bad Request") => badRequest(message, { [field]: code });

/**
 * Moleculer's errors for a call no node served: no node offers the service (now), or the node it
 * went to never answered (timeout) or left with the call pending. Transient: the service comes back.
 */
export const UNAVAILABLE_ERRORS: ReadonlySet<string> = new Set(["ServiceNotFoundError", "ServiceNotAvailableError", "RequestTimeoutError", "RequestRejectedError"]);

export function isServiceUnavailable(err: unknown): boolean {
	return UNAVAILABLE_ERRORS.has((err as { name?: string } | null)?.name ?? "");
}
