/** What the gateway resolves once per request and puts on `ctx.meta`. */
import type { UserRole } from "../models/user.model";
import type { OrganizationMode } from "../models/organization.model";

export type Lang = "en" | "es";

export interface AuthUser {
	id: number;
	role: UserRole;
	sessionId: string;
}

export interface AuthApiKey {
	id: number;
	organizationId: string;
	mode: OrganizationMode;
}

export interface AuthMeta {
	user?: AuthUser;
	apiKey?: AuthApiKey;
	/** `x-organization-id` of a bearer-token call; checked against memberships by the organizations helper. */
	organizationId?: string;
	lang?: Lang;
	ip?: string;
	/** Frontend origin from Origin/Referer, for redirect URLs. */
	origin?: string;
	userAgent?: string;
	recaptchaToken?: string;
	/** The `Idempotency-Key` header, checked by mixins/idempotency.mixin.ts. */
	idempotencyKey?: string;
	/** The body exactly as received (UTF-8), only on requests that carry `x-webhook-signature`. */
	rawBody?: string;
	/** The `x-webhook-signature` header of an inbound webhook. */
	webhookSignature?: string;
	$statusCode?: number;
	$responseHeaders?: Record<string, string>;
	$responseType?: string;
	$location?: string;
}

/**
 * What an action demands of the caller, declared on the action schema as `auth`:
 * - "public" (default): no credential needed (one may still be resolved)
 * - "jwt": a user's bearer token; "admin": a bearer token of an admin
 * - "key": an API key (Basic); "any": a bearer token or an API key
 * - "refresh": the refresh token (only POST /auth/refresh)
 */
export type AuthRequirement = "public" | "jwt" | "admin" | "key" | "any" | "refresh";
