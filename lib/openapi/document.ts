/**
 * The OpenAPI 3.1 document of the gateway, built from what the gateway itself uses: the route
 * table (the actions' `rest` declarations that moleculer-web turns into aliases, and the gateway's
 * own routes in services/api.service.ts), each action's fastest-validator `params` (converted by
 * lib/openapi/fv-json-schema.ts), its `auth` requirement, and the response schemas of
 * lib/openapi/schemas.ts. `npm run openapi` writes it to docs/openapi.json, which the gateway
 * serves at GET /api/v1/openapi.json; test/lib/openapi/document.test.ts keeps the two in step.
 * See docs/openapi.md.
 */
import type { ServiceSchema } from "moleculer";
import { paramsToJsonSchema, ruleToJsonSchema, isOptional, type JsonSchema } from "./fv-json-schema";
import { INTENT_EVENT_TYPES, RESPONSE_SCHEMAS, SUCCESS_RESPONSES, webhookEventSchema } from "./schemas";
import type { AuthRequirement } from "../meta";

export const API_PREFIX = "/api/v1";

/** One route of the gateway: method, full path in moleculer-web's form (`/api/v1/payment_intents/:id`), and what serves it. */
export interface GatewayRoute {
	method: string;
	path: string;
	/** The action called (REST routes); absent for the gateway's own handlers (pay page, /docs). */
	action?: string;
	/** moleculer-web's alias type: `multipart` for uploads. */
	type?: string;
	auth?: AuthRequirement;
	params?: Record<string, unknown>;
}

type ActionLike = { rest?: unknown; auth?: AuthRequirement; params?: Record<string, unknown>; visibility?: string } | false | ((...a: unknown[]) => unknown);

/** `"POST /x"` or `{ method, path, type }` of an action's `rest` declaration. */
function restOf(rest: unknown): Array<{ method: string; path: string; type?: string }> {
	if (!rest) return [];
	if (Array.isArray(rest)) return rest.flatMap(restOf);
	if (typeof rest === "string") {
		const [method, path] = rest.trim().split(/\s+/);
		return path ? [{ method: method.toUpperCase(), path }] : [{ method: "*", path: method }];
	}
	const r = rest as { method?: string; path?: string; type?: string };
	return [{ method: (r.method || "*").toUpperCase(), path: r.path || "", type: r.type }];
}

function joinPath(...parts: string[]): string {
	return ("/" + parts.map(p => p.replace(/^\/+|\/+$/g, "")).filter(Boolean).join("/")).replace(/\/+$/, "") || "/";
}

/** The REST routes that autoAliases publishes for these services (settings.rest is the base path below /api/v1). */
export function serviceRoutes(services: ServiceSchema[]): GatewayRoute[] {
	const routes: GatewayRoute[] = [];
	for (const svc of services) {
		const base = typeof svc.settings?.rest === "string" ? svc.settings.rest : svc.name;
		for (const [name, action] of Object.entries((svc.actions || {}) as Record<string, ActionLike>)) {
			if (!action || typeof action === "function") continue;
			for (const r of restOf(action.rest)) {
				routes.push({ method: r.method, path: joinPath(API_PREFIX, base, r.path), action: `${svc.name}.${name}`, type: r.type, auth: action.auth || "public", params: action.params });
			}
		}
	}
	return routes;
}

/** `:id` → `{id}`. */
export function openApiPath(path: string): string {
	return path.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
}

function pathKeys(path: string): string[] {
	return [...path.matchAll(/:([A-Za-z0-9_]+)/g)].map(m => m[1]);
}

const SECURITY: Record<AuthRequirement, Array<Record<string, string[]>>> = {
	public: [],
	jwt: [{ bearerAuth: [] }],
	admin: [{ bearerAuth: [] }],
	key: [{ apiKeyAuth: [] }],
	any: [{ bearerAuth: [] }, { apiKeyAuth: [] }],
	refresh: [{ refreshToken: [] }],
};

/** Creates that take an `Idempotency-Key` (mixins/idempotency.mixin.ts). */
export const IDEMPOTENT_ACTIONS = new Set(["intents.create", "links.create", "links.checkout"]);

const errorResponse = (description: string, headers?: Record<string, unknown>) => ({
	description,
	...(headers ? { headers } : {}),
	content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
});

const RATE_LIMIT_HEADERS = {
	"X-RateLimit-Limit": { $ref: "#/components/headers/X-RateLimit-Limit" },
	"X-RateLimit-Remaining": { $ref: "#/components/headers/X-RateLimit-Remaining" },
	"X-RateLimit-Reset": { $ref: "#/components/headers/X-RateLimit-Reset" },
};

/** Errors any API route can answer (docs/gateway.md "Errors"): the spec's error shape for every one. */
const ERROR_RESPONSES = {
	"400": { $ref: "#/components/responses/BadRequest" },
	"401": { $ref: "#/components/responses/Unauthorized" },
	"403": { $ref: "#/components/responses/Forbidden" },
	"404": { $ref: "#/components/responses/NotFound" },
	"409": { $ref: "#/components/responses/Conflict" },
	"413": { $ref: "#/components/responses/PayloadTooLarge" },
	"422": { $ref: "#/components/responses/Unprocessable" },
	"429": { $ref: "#/components/responses/TooManyRequests" },
	"500": { $ref: "#/components/responses/InternalError" },
	"503": { $ref: "#/components/responses/ServiceUnavailable" },
};

/** Query parameters: each field of the params schema; objects in qs's bracket form (`filter[status]=...`). */
function queryParameters(schema: JsonSchema, skip: string[]): unknown[] {
	const props = (schema.properties || {}) as Record<string, JsonSchema>;
	const required = new Set((schema.required as string[]) || []);
	return Object.entries(props)
		.filter(([name]) => !skip.includes(name))
		.map(([name, s]) => ({
			name,
			in: "query",
			required: required.has(name),
			schema: s,
			...(s.type === "object" ? { style: "deepObject", explode: true } : {}),
		}));
}

function operationFor(route: GatewayRoute): Record<string, unknown> {
	const keys = pathKeys(route.path);
	const fv = route.params || {};
	const schema = paramsToJsonSchema(fv as Record<string, never>);
	const props = (schema.properties || {}) as Record<string, JsonSchema>;
	const parameters: unknown[] = keys.map(name => ({
		name,
		in: "path",
		required: true,
		schema: props[name] || { type: "string" },
	}));
	parameters.push({ $ref: "#/components/parameters/Lang" });
	const auth = route.auth || "public";
	if (auth === "jwt" || auth === "any" || auth === "admin") parameters.push({ $ref: "#/components/parameters/OrganizationId" });
	if (route.action && IDEMPOTENT_ACTIONS.has(route.action)) parameters.push({ $ref: "#/components/parameters/IdempotencyKey" });
	let requestBody: unknown;
	const hasBody = ["POST", "PUT", "PATCH"].includes(route.method);
	if (route.type === "multipart") {
		requestBody = {
			required: true,
			content: { "multipart/form-data": { schema: { type: "object", properties: { file: { type: "string", contentMediaType: "application/octet-stream" } }, required: ["file"] } } },
		};
	} else if (hasBody) {
		const bodyProps = Object.fromEntries(Object.entries(props).filter(([k]) => !keys.includes(k)));
		const bodyRequired = ((schema.required as string[]) || []).filter(k => !keys.includes(k));
		const body: JsonSchema = { type: "object", properties: bodyProps };
		if (bodyRequired.length) body.required = bodyRequired;
		if (schema.additionalProperties === false) body.additionalProperties = false;
		requestBody = { required: bodyRequired.length > 0, content: { "application/json": { schema: body } } };
		// A body field may also come in the query (moleculer-web merges both; the body wins).
	} else {
		parameters.push(...queryParameters(schema, keys));
	}
	// Every action's answer is described: a new route without its schema fails the document's build (and its test).
	const success = route.action ? SUCCESS_RESPONSES[route.action] : undefined;
	if (!success) throw new Error(`${route.method} ${route.path} (${route.action}): no success response in SUCCESS_RESPONSES (lib/openapi/schemas.ts)`);
	const successBody =
		success.status === 204 || success.noBody
			? {}
			: {
					content: { "application/json": { schema: success.schema } },
				};
	const operation: Record<string, unknown> = {
		operationId: route.action,
		tags: [route.action!.split(".")[0]],
		summary: `${route.method} ${openApiPath(route.path.slice(API_PREFIX.length) || "/")}`,
		security: SECURITY[auth],
		parameters,
		...(requestBody ? { requestBody } : {}),
		responses: {
			[String(success.status)]: { description: success.description, headers: RATE_LIMIT_HEADERS, ...successBody },
			...ERROR_RESPONSES,
		},
		"x-auth": auth,
	};
	return operation;
}

/** An HTML document of the hosted pay page (docs/pay-page.md). */
function payPageOperation(operationId: string, summary: string): Record<string, unknown> {
	return {
		operationId,
		tags: ["pay page"],
		summary,
		security: [],
		parameters: [{ name: "slug", in: "path", required: true, schema: { type: "string" } }, { name: "lang", in: "query", required: false, schema: { enum: ["en", "es"] } }],
		responses: {
			"200": { description: "The page", content: { "text/html": { schema: { type: "string" } } } },
			"404": { description: "Unknown link: the pay page's 404 document", content: { "text/html": { schema: { type: "string" } } } },
			"429": { $ref: "#/components/responses/TooManyRequests" },
		},
	};
}

/** The gateway's own routes outside the REST actions (services/api.service.ts). */
export const OWN_OPERATIONS: Record<string, Record<string, unknown>> = {
	"GET /api/v1/openapi.json": {
		operationId: "api.openapi",
		tags: ["api"],
		summary: "This document",
		security: [],
		responses: { "200": { description: "The OpenAPI 3.1 document of the gateway", content: { "application/json": { schema: { type: "object", required: ["openapi", "paths"] } } } } },
	},
	"GET /pay/assets/:file": {
		operationId: "payPage.asset",
		tags: ["pay page"],
		summary: "A hashed script or stylesheet of the hosted pay page",
		security: [],
		parameters: [{ name: "file", in: "path", required: true, schema: { type: "string", pattern: "^[A-Za-z0-9_-]{1,64}\\.(js|css)$" } }],
		responses: {
			"200": { description: "The asset (immutable)", content: { "text/javascript": { schema: { type: "string" } }, "text/css": { schema: { type: "string" } } } },
			"404": { description: "No such asset: the pay page's 404 document", content: { "text/html": { schema: { type: "string" } } } },
		},
	},
	"GET /pay/:slug": payPageOperation("payPage.document", "The hosted pay page of a link (HTML)"),
	"GET /pay/:slug/checkout": payPageOperation("payPage.checkout", "The hosted pay page's checkout view (HTML)"),
	"GET /pay/:slug/status": {
		operationId: "payPage.status",
		tags: ["pay page"],
		summary: "The pay status of one checkout",
		security: [],
		parameters: [{ name: "slug", in: "path", required: true, schema: { type: "string" } }, { name: "transaction", in: "query", required: true, schema: { type: "string" } }],
		responses: {
			"200": { description: "The checkout's pay status", content: { "application/json": { schema: { type: "object" } } } },
			"400": { $ref: "#/components/responses/BadRequest" },
			"404": { $ref: "#/components/responses/NotFound" },
			"429": { $ref: "#/components/responses/TooManyRequests" },
			"503": { $ref: "#/components/responses/ServiceUnavailable" },
		},
	},
	"GET /pay/:slug/events": {
		operationId: "payPage.events",
		tags: ["pay page"],
		summary: "Server-sent events of one checkout's pay status",
		security: [],
		parameters: [{ name: "slug", in: "path", required: true, schema: { type: "string" } }, { name: "transaction", in: "query", required: true, schema: { type: "string" } }],
		responses: {
			"200": { description: "`event: status` with the pay status on every change; ends after a final state", content: { "text/event-stream": { schema: { type: "string" } } } },
			"400": { $ref: "#/components/responses/BadRequest" },
			"404": { $ref: "#/components/responses/NotFound" },
			"429": { $ref: "#/components/responses/TooManyRequests" },
			"503": { $ref: "#/components/responses/ServiceUnavailable" },
		},
	},
	"GET /api/debug-sentry": {
		operationId: "debugSentry",
		tags: ["operations"],
		summary: "Throws on purpose to check error tracking (404 where it is not configured)",
		security: [],
		responses: {
			"404": { $ref: "#/components/responses/NotFound" },
			"429": { $ref: "#/components/responses/TooManyRequests" },
			"500": { $ref: "#/components/responses/InternalError" },
		},
	},
	"GET /docs": {
		operationId: "docs.page",
		tags: ["docs"],
		summary: "The API reference page (renders this document)",
		security: [],
		responses: { "200": { description: "The reference page", content: { "text/html": { schema: { type: "string" } } } } },
	},
	"GET /docs/assets/:file": {
		operationId: "docs.asset",
		tags: ["docs"],
		summary: "A script or stylesheet of the reference page",
		security: [],
		parameters: [{ name: "file", in: "path", required: true, schema: { type: "string" } }],
		responses: {
			"200": { description: "The asset", content: { "text/javascript": { schema: { type: "string" } }, "text/css": { schema: { type: "string" } } } },
			"404": { $ref: "#/components/responses/NotFound" },
		},
	},
};

const COMPONENTS = {
	securitySchemes: {
		bearerAuth: { type: "http", scheme: "bearer", bearerFormat: "JWT", description: "A user's access token (POST /auth/email/login)" },
		apiKeyAuth: { type: "http", scheme: "basic", description: "An organization's API key: the key as user name, its secret as password" },
		refreshToken: { type: "http", scheme: "bearer", bearerFormat: "JWT", description: "The refresh token, only for POST /auth/refresh" },
	},
	parameters: {
		Lang: { name: "x-custom-lang", in: "header", required: false, description: "Language of messages (en, es); others fall back to en", schema: { type: "string", maxLength: 2048 } },
		IdempotencyKey: {
			name: "Idempotency-Key",
			in: "header",
			required: false,
			description: "Retries with the same key return the first answer (header Idempotent-Replayed: true) instead of creating again",
			schema: { type: "string", minLength: 1, maxLength: 255 },
		},
		OrganizationId: { name: "x-organization-id", in: "header", required: false, description: "With a bearer token: the organization acted on", schema: { type: "string", maxLength: 64 } },
	},
	headers: {
		"X-RateLimit-Limit": { description: "Requests allowed in the window of the tightest limit applied", schema: { type: "integer" } },
		"X-RateLimit-Remaining": { description: "Requests left in that window", schema: { type: "integer" } },
		"X-RateLimit-Reset": { description: "Seconds until that window resets", schema: { type: "integer" } },
		"Retry-After": { description: "Seconds to wait before trying again", schema: { type: "integer" } },
	},
	responses: {
		BadRequest: errorResponse("Invalid request: `errors` names each invalid field"),
		Unauthorized: errorResponse("Missing, invalid or expired credentials"),
		Forbidden: errorResponse("Not allowed for this caller"),
		NotFound: errorResponse("No such resource"),
		Conflict: errorResponse("The resource's state does not allow this"),
		PayloadTooLarge: errorResponse("The body is too large"),
		Unprocessable: errorResponse("Understood but refused (e.g. a used password reset link)"),
		TooManyRequests: errorResponse("A rate limit was exceeded", { "Retry-After": { $ref: "#/components/headers/Retry-After" }, ...RATE_LIMIT_HEADERS }),
		InternalError: errorResponse("Internal server error"),
		ServiceUnavailable: errorResponse("A service or the database is unavailable: try again", { "Retry-After": { $ref: "#/components/headers/Retry-After" } }),
	},
	schemas: RESPONSE_SCHEMAS,
};

function webhooks(): Record<string, unknown> {
	return Object.fromEntries(
		INTENT_EVENT_TYPES.map(type => [
			type,
			{
				post: {
					operationId: `webhook.${type}`,
					summary: `The ${type} event, POSTed to the API key's webhook URL`,
					parameters: [
						{ name: "x-webhook-signature", in: "header", required: true, description: "Hex HMAC-SHA256 of the exact body bytes under the API key's secret", schema: { type: "string", pattern: "^[0-9a-f]{64}$" } },
						{ name: "x-webhook-id", in: "header", required: true, description: "The event id (deduplicate on it)", schema: { type: "string" } },
					],
					requestBody: { required: true, content: { "application/json": { schema: webhookEventSchema(type) } } },
					responses: { "200": { description: "Received; any other answer (or none) is retried, 3 attempts in all" } },
				},
			},
		]),
	);
}

export interface BuildInput {
	/** The gateway's own route table (services/api.service.ts `settings.routes`) and the pages' routes it mounts (services/pages.service.ts). */
	gatewayRoutes: Array<{ name?: string; path: string; aliases?: Record<string, unknown> }>;
	/** The services whose actions publish REST routes. */
	services: ServiceSchema[];
	/** The gateway service's own actions (reached through its aliases, e.g. `GET /` → api.info). */
	apiActions?: Record<string, unknown>;
	version: string;
}

/** Every route the gateway serves: the aliases of its own routes (action names or handlers) and the services' `rest` routes. */
export function gatewayRouteTable(input: BuildInput): GatewayRoute[] {
	const actions = new Map<string, { auth?: AuthRequirement; params?: Record<string, unknown> }>();
	for (const svc of input.services) {
		for (const [name, a] of Object.entries((svc.actions || {}) as Record<string, ActionLike>)) if (a && typeof a === "object") actions.set(`${svc.name}.${name}`, a);
	}
	for (const [name, a] of Object.entries((input.apiActions || {}) as Record<string, ActionLike>)) if (a && typeof a === "object") actions.set(`api.${name}`, a);
	const routes: GatewayRoute[] = [];
	for (const r of input.gatewayRoutes) {
		for (const [key, target] of Object.entries(r.aliases || {})) {
			const [method, path] = key.trim().split(/\s+/);
			const full = joinPath(r.path, path);
			if (typeof target === "string") {
				const a = actions.get(target) || {};
				routes.push({ method: method.toUpperCase(), path: full, action: target, auth: a.auth || "public", params: a.params });
			} else routes.push({ method: method.toUpperCase(), path: full });
		}
	}
	routes.push(...serviceRoutes(input.services));
	return routes;
}

export function buildOpenApiDocument(input: BuildInput): Record<string, unknown> {
	const paths: Record<string, Record<string, unknown>> = {};
	const routes = gatewayRouteTable(input).sort((a, b) => (a.path === b.path ? a.method.localeCompare(b.method) : a.path < b.path ? -1 : 1));
	for (const route of routes) {
		const key = `${route.method} ${route.path}`;
		const operation = OWN_OPERATIONS[key] ?? (route.action ? operationFor(route) : undefined);
		if (!operation) throw new Error(`No description of the gateway's own route ${key} in lib/openapi/document.ts OWN_OPERATIONS`);
		const p = openApiPath(route.path);
		paths[p] ??= {};
		paths[p][route.method.toLowerCase()] = operation;
	}
	return {
		openapi: "3.1.0",
		jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
		info: {
			title: "Crypto Payment Gateway API",
			version: input.version,
			description:
				"The REST API of the gateway (below /api/v1), the hosted pay page and the webhook events it sends. " +
				"Errors always have the shape `{ statusCode, message, error, errors? }`. Generated from the gateway's route table, " +
				"the actions' parameter schemas and lib/openapi/schemas.ts (npm run openapi).",
			license: { name: "MIT", identifier: "MIT" },
		},
		servers: [{ url: "/", description: "This gateway" }],
		security: [],
		paths,
		webhooks: webhooks(),
		components: COMPONENTS,
	};
}

export { ruleToJsonSchema, isOptional };
