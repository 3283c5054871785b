/**
 * Every response the HTTP-level tests receive (node.http, test/helpers/harness.ts) is checked
 * against the OpenAPI document (docs/openapi.json) with ajv in the 2020-12 dialect: the route and
 * method must be documented, the status must be one of the operation's responses, and a JSON body
 * must match that response's schema. A mismatch throws, so the test fails. Validated responses are
 * counted; test/helpers/openapi-count.js prints the run's total (docs/openapi.md).
 */
import fs from "node:fs";
import path from "node:path";
import crypto from "node:crypto";
import Ajv2020, { type ValidateFunction } from "ajv/dist/2020";
import addFormats from "ajv-formats";

type Doc = { paths: Record<string, Record<string, { responses: Record<string, unknown> }>>; components: Record<string, Record<string, unknown>> };

const DOCUMENT_PATH = path.join(__dirname, "..", "..", "docs", "openapi.json");
const DOC_ID = "openapi.json";
const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

let state: { doc: Doc; ajv: Ajv2020; templates: Array<{ path: string; regex: RegExp; params: number }>; validators: Map<string, ValidateFunction> } | null = null;

function load() {
	if (state) return state;
	const doc = JSON.parse(fs.readFileSync(DOCUMENT_PATH, "utf8")) as Doc;
	const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
	addFormats(ajv);
	ajv.addSchema(doc as unknown as object, DOC_ID);
	const templates = Object.keys(doc.paths)
		.map(p => ({
			path: p,
			// moleculer-web matches paths in any case and with a trailing slash.
			regex: new RegExp(`^${p.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{[^}]+\}/g, "[^/]+")}/?$`, "i"),
			params: (p.match(/\{/g) || []).length,
		}))
		// Literal segments win over parameters (`/api-keys/me` before `/api-keys/{id}`), as in moleculer-web.
		.sort((a, b) => a.params - b.params);
	state = { doc, ajv, templates, validators: new Map() };
	return state;
}

const pointerPart = (s: string) => s.replace(/~/g, "~0").replace(/\//g, "~1");

/** Follows a `$ref` into the document (`#/components/responses/NotFound`). */
function resolve(doc: Doc, obj: unknown): { value: any; pointer?: string } {
	const ref = (obj as { $ref?: string })?.$ref;
	if (!ref) return { value: obj };
	const pointer = ref.slice(1);
	let value: any = doc;
	for (const part of pointer.split("/").slice(1)) value = value?.[part.replace(/~1/g, "/").replace(/~0/g, "~")];
	return { value, pointer };
}

let validated = 0;
let skipped = 0;

export function validatedCount(): number {
	return validated;
}

export class OpenApiMismatch extends Error {
	name = "OpenApiMismatch";
}

/**
 * Checks one response. `urlPath` is the request's path (no query); `contentType` the response's;
 * `servedBy` the action the node's gateway routes the request to (null: one of its own handlers),
 * when known. Paths the document does not name are answered by the gateway's 404 in the error shape.
 */
export function validateResponse(method: string, urlPath: string, status: number, contentType: string | null, text: string, body: unknown, servedBy?: string | null): void {
	const { doc, ajv, templates, validators } = load();
	const m = method.toLowerCase();
	let template = templates.find(t => t.regex.test(urlPath) && doc.paths[t.path][m]);
	// A test's stand-in service on a documented path (e.g. test/services/api-rate-limit.test.ts): not the documented action.
	const operationId = template ? (doc.paths[template.path][m] as { operationId?: string }).operationId : undefined;
	if (template && typeof servedBy === "string" && operationId !== servedBy) template = undefined;
	let responsePointer: string;
	let response: any;
	const where = `${method.toUpperCase()} ${urlPath} → ${status}`;
	if (!template) {
		// Not a route of the document: a route a test added with a service of its own (test/services/api.test.ts's
		// probes), or none (the gateway's 404/405). Its errors still have the error shape; its successes are
		// not the document's to describe (skipped, and counted apart). Routes of the real services are all in
		// the document: test/services/api-openapi.test.ts.
		if (status < 400) {
			skipped++;
			return;
		}
		responsePointer = "/components/responses/NotFound";
		response = doc.components.responses.NotFound;
	} else {
		const op = doc.paths[template.path][m];
		const key = [String(status), `${String(status)[0]}XX`, "default"].find(k => k in op.responses);
		if (!key) throw new OpenApiMismatch(`${where}: status ${status} is not documented for ${m.toUpperCase()} ${template.path}`);
		const resolved = resolve(doc, op.responses[key]);
		response = resolved.value;
		responsePointer = resolved.pointer ?? `/paths/${pointerPart(template.path)}/${m}/responses/${key}`;
	}
	const content = (response?.content || {}) as Record<string, { schema?: unknown }>;
	const mediaTypes = Object.keys(content);
	const type = (contentType || "").split(";")[0].trim().toLowerCase();
	if (mediaTypes.length === 0) {
		if (text.length > 0) throw new OpenApiMismatch(`${where}: documented without a body, answered ${JSON.stringify(text.slice(0, 200))}`);
		validated++;
		return;
	}
	if (!mediaTypes.includes(type)) throw new OpenApiMismatch(`${where}: answered ${type || "no content type"}, documented ${mediaTypes.join(", ")}`);
	if (type === "application/json" && content[type].schema !== undefined) {
		const pointer = `${DOC_ID}#${responsePointer}/content/${pointerPart(type)}/schema`;
		let validate = validators.get(pointer);
		if (!validate) {
			validate = ajv.compile({ $ref: pointer });
			validators.set(pointer, validate);
		}
		if (!validate(body)) {
			const errors = (validate.errors || []).slice(0, 8).map(e => `${e.instancePath || "(body)"} ${e.message}${e.params && "additionalProperty" in e.params ? ` (${(e.params as { additionalProperty: string }).additionalProperty})` : ""}`);
			throw new OpenApiMismatch(`${where}: body does not match docs/openapi.json (${pointer}): ${errors.join("; ")}\nbody: ${text.slice(0, 1500)}`);
		}
	}
	validated++;
}

/** Writes this test file's count where the run's global teardown sums them (OPENAPI_COUNT_DIR, set by its global setup). */
export function recordValidatedCount(testPath: string | undefined, backend: string): void {
	const dir = process.env.OPENAPI_COUNT_DIR;
	if (!dir || validated + skipped === 0) return;
	fs.mkdirSync(dir, { recursive: true });
	const file = path.join(dir, `${crypto.randomBytes(6).toString("hex")}.json`);
	fs.writeFileSync(file, JSON.stringify({ testPath: testPath ?? null, backend, validated, skipped }));
}
