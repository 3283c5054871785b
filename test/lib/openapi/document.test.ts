/**
 * docs/openapi.json is the document generated from the gateway's definitions (npm run openapi
 * regenerates it), it is a valid OpenAPI 3.1 document (@seriousme/openapi-schema-validator), and
 * its parts are complete: every operation documents its errors and credentials.
 */
import fs from "node:fs";
import path from "node:path";
import { execFile } from "node:child_process";
import { DOCUMENT_FILE, generateDocument, routeTable, serializeDocument } from "../../../lib/openapi/generate";
import { buildOpenApiDocument, openApiPath } from "../../../lib/openapi/document";

const ROOT = path.join(__dirname, "..", "..", "..");

function lint(file: string): Promise<{ valid: boolean; version: string; errors: unknown }> {
	return new Promise((resolve, reject) => {
		execFile(process.execPath, [path.join(ROOT, "test/helpers/openapi-lint.mjs"), file], { cwd: ROOT, timeout: 60_000 }, (err, stdout, stderr) => {
			if (err) reject(new Error(`openapi-lint.mjs failed: ${stderr || err.message}`));
			else resolve(JSON.parse(stdout));
		});
	});
}

describe("docs/openapi.json", () => {
	const committed = fs.readFileSync(DOCUMENT_FILE, "utf8");
	const doc = JSON.parse(committed);

	it("is the document generated from the gateway's definitions (run `npm run openapi` after changing a route, params or a response schema)", () => {
		expect(committed).toBe(serializeDocument(generateDocument()));
	});

	it("is a valid OpenAPI 3.1 document, every $ref resolved", async () => {
		const result = await lint(DOCUMENT_FILE);
		expect(result).toEqual({ valid: true, version: "3.1", errors: null });
	});

	it("the linter does catch a broken document (an unresolved reference, an unknown field)", async () => {
		const broken = JSON.parse(committed);
		broken.paths["/api/v1"].get.responses["200"].content["application/json"].schema = { $ref: "#/components/schemas/Missing" };
		broken.paths["/api/v1/payment_intents"].post.responses.bogus = 1;
		const file = path.join(fs.mkdtempSync(path.join(require("node:os").tmpdir(), "cpg-oa-")), "broken.json");
		fs.writeFileSync(file, JSON.stringify(broken));
		expect((await lint(file)).valid).toBe(false);
	});

	it("names every route of the route table once, with the same method", () => {
		const routes = routeTable().map(r => `${r.method} ${openApiPath(r.path)}`);
		expect(new Set(routes).size).toBe(routes.length);
		const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([p, ops]) => Object.keys(ops).map(m => `${m.toUpperCase()} ${p}`));
		expect(documented.sort()).toEqual(routes.sort());
	});

	it("every REST operation: credentials, the error shape for its errors, x-custom-lang, rate-limit headers on success", () => {
		for (const [p, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
			if (!p.startsWith("/api/v1/") || p === "/api/v1/openapi.json") continue;
			for (const [m, op] of Object.entries(ops)) {
				const where = `${m.toUpperCase()} ${p}`;
				expect([where, Array.isArray(op.security)]).toEqual([where, true]);
				for (const status of ["400", "401", "404", "429", "500", "503"]) expect([where, status, op.responses[status]?.$ref]).toEqual([where, status, expect.stringMatching(/^#\/components\/responses\//)]);
				expect([where, op.parameters.some((x: { $ref?: string }) => x.$ref === "#/components/parameters/Lang")]).toEqual([where, true]);
				const success = Object.keys(op.responses).find(s => s.startsWith("2"))!;
				expect([where, Object.keys(op.responses[success].headers || {})]).toEqual([where, ["X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"]]);
			}
		}
		expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: "http", scheme: "bearer", bearerFormat: "JWT" });
		expect(doc.components.securitySchemes.apiKeyAuth).toMatchObject({ type: "http", scheme: "basic" });
		expect(doc.paths["/api/v1/payment_intents"].post.security).toEqual([{ bearerAuth: [] }, { apiKeyAuth: [] }]);
		expect(doc.paths["/api/v1/payment_intents"].post.parameters).toContainEqual({ $ref: "#/components/parameters/IdempotencyKey" });
		expect(doc.paths["/api/v1/payments/networks"].get.security).toEqual([]);
	});

	it("every JSON success body has a schema; an action without one fails the build", () => {
		for (const [p, ops] of Object.entries(doc.paths as Record<string, Record<string, any>>)) {
			if (!p.startsWith("/api/v1/")) continue;
			for (const [m, op] of Object.entries(ops)) {
				for (const [status, response] of Object.entries(op.responses as Record<string, any>)) {
					if (!status.startsWith("2") || !response.content) continue;
					const schema = response.content["application/json"]?.schema;
					expect([m.toUpperCase(), p, status, Boolean(schema && (schema.$ref || schema.type || schema.anyOf || schema.const))]).toEqual([m.toUpperCase(), p, status, true]);
				}
			}
		}
		const undescribed = { name: "probe", settings: { rest: "/" }, actions: { shape: { rest: "GET /probe", auth: "public", params: {}, handler: () => ({}) } } };
		expect(() => buildOpenApiDocument({ gatewayRoutes: [], services: [undescribed as never], version: "0.0.0" })).toThrow("GET /api/v1/probe (probe.shape): no success response in SUCCESS_RESPONSES");
	});

	it("params become the request body (POST/PUT/PATCH) or query parameters (GET), path keys path parameters", () => {
		const create = doc.paths["/api/v1/payment_intents"].post.requestBody.content["application/json"].schema;
		expect(create.required).toEqual(expect.arrayContaining(["amount", "currency", "payment_method_types", "tokenId", "networkId", "return_url"]));
		expect(create.properties.return_url).toEqual({ type: "string", format: "uri", maxLength: 2048 });
		const get = doc.paths["/api/v1/payment_intents/{id}"].get;
		expect(get.parameters[0]).toEqual({ name: "id", in: "path", required: true, schema: { type: "string", maxLength: 100 } });
		expect(get.requestBody).toBeUndefined();
	});

	it("webhooks: every event type, signed, with the intent event object", () => {
		expect(Object.keys(doc.webhooks).sort()).toEqual(
			["payment_intent.canceled", "payment_intent.completed", "payment_intent.processing", "payment_intent.recredited", "payment_intent.requires_payment_method", "payment_intent.reversed"].sort(),
		);
		const completed = doc.webhooks["payment_intent.completed"].post;
		expect(completed.parameters.map((x: { name: string }) => x.name)).toEqual(["x-webhook-signature", "x-webhook-id"]);
		expect(completed.requestBody.content["application/json"].schema.properties.data.properties.object).toEqual({ $ref: "#/components/schemas/PaymentIntentEventObject" });
	});
});
