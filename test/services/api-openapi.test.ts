/**
 * The OpenAPI document against the running gateway: every alias of every route the gateway has
 * built (a node with all services) is in the document and the document names no route the gateway
 * lacks; GET /api/v1/openapi.json serves it; the response validation of node.http
 * (test/helpers/openapi-validate.ts) accepts what the document says and rejects what it does not.
 */
import fs from "node:fs";
import { startNode, TestNode } from "../helpers/harness";
import { DOCUMENT_FILE } from "../../lib/openapi/generate";
import { OpenApiMismatch, validateResponse } from "../helpers/openapi-validate";

const doc = JSON.parse(fs.readFileSync(DOCUMENT_FILE, "utf8"));

/** moleculer-web's `/api/v1/x/:id` → the document's `/api/v1/x/{id}`; `/api/v1/` → `/api/v1`. */
const documentPath = (p: string) => (p.replace(/\/+$/, "") || "/").replace(/:([A-Za-z0-9_]+)/g, "{$1}");

describe("the OpenAPI document and the running gateway", () => {
	let node: TestNode;
	beforeAll(async () => {
		node = await startNode();
	});
	afterAll(async () => node?.stop());

	it("covers 100% of the gateway's routes, and names none the gateway lacks", () => {
		const api = node.broker.getLocalService("api") as unknown as { aliases: Array<{ method: string; fullPath: string }> };
		const gateway = [...new Set(api.aliases.map(a => `${a.method} ${documentPath(a.fullPath)}`))].sort();
		const documented = Object.entries(doc.paths as Record<string, Record<string, unknown>>)
			.flatMap(([p, ops]) => Object.keys(ops).map(m => `${m.toUpperCase()} ${p}`))
			.sort();
		expect(gateway.length).toBeGreaterThan(80);
		expect({ missingFromDocument: gateway.filter(r => !documented.includes(r)), notInGateway: documented.filter(r => !gateway.includes(r)) }).toEqual({
			missingFromDocument: [],
			notInGateway: [],
		});
	});

	it("serves the document at GET /api/v1/openapi.json", async () => {
		const res = await node.http("GET", "/openapi.json");
		expect(res.status).toBe(200);
		expect(res.headers.get("content-type")).toMatch(/^application\/json/);
		expect(res.body).toEqual(doc);
		expect(res.body.openapi).toBe("3.1.0");
	});

	it("node.http validates responses: a documented body passes, a field added, retyped or missing fails, an undocumented status fails", async () => {
		const info = await node.http("GET", "/");
		expect(info.status).toBe(200);
		const check = (status: number, body: unknown, url = "/api/v1") => () => validateResponse("GET", url, status, "application/json", JSON.stringify(body), body);
		expect(check(200, info.body)).not.toThrow();
		expect(check(200, { ...info.body, extra: 1 })).toThrow(OpenApiMismatch);
		expect(check(200, { ...info.body, version: 1 })).toThrow(/version must be string/);
		const { time: _t, ...noTime } = info.body;
		expect(check(200, noTime)).toThrow(/must have required property 'time'/);
		expect(check(418, info.body)).toThrow(/status 418 is not documented/);
		expect(check(404, { statusCode: 404, message: "Not Found" }, "/api/v1/nowhere")).toThrow(/required property 'error'/);
		expect(check(404, { statusCode: 404, message: "Not Found", error: "Not Found" }, "/api/v1/nowhere")).not.toThrow();
		// Routes a test added itself (not the document's): their errors are checked, their successes not.
		expect(check(200, {}, "/api/v1/nowhere")).not.toThrow();
		expect(check(400, { statusCode: 400 }, "/api/v1/nowhere")).toThrow(OpenApiMismatch);
	});
});
