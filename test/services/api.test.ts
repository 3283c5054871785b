import { startNode, TestNode } from "../helpers/harness";

describe("api gateway", () => {
	let node: TestNode;
	beforeAll(async () => {
		node = await startNode({ services: ["api"] });
	});
	afterAll(async () => node?.stop());

	it("answers GET /api/v1/ with application info", async () => {
		const res = await node.http("GET", "/");
		expect(res.status).toBe(200);
		expect(res.body).toMatchObject({ name: "Crypto Payment Gateway", apiVersion: "v1" });
		expect(typeof res.body.version).toBe("string");
	});

	it("answers unknown routes with 404 in the error shape", async () => {
		const res = await node.http("GET", "/no/such/route");
		expect(res.status).toBe(404);
		expect(res.body).toEqual({ statusCode: 404, message: "Not Found", error: "Not Found" });
	});

	it("translates messages with x-custom-lang and falls back to English", async () => {
		const es = await node.http("GET", "/nope", { headers: { "x-custom-lang": "es-ES" } });
		expect(es.body.message).toBe("No encontrado");
		const xx = await node.http("GET", "/nope", { headers: { "x-custom-lang": "xx" } });
		expect(xx.body.message).toBe("Not Found");
	});

	it("rejects malformed authorization headers with 401", async () => {
		const res = await node.http("GET", "/", { headers: { Authorization: "Bearer not-a-jwt" } });
		expect(res.status).toBe(401);
		expect(res.body).toMatchObject({ statusCode: 401, error: "Unauthorized" });
		expect(res.text).not.toMatch(/at .*\.ts:\d+/);
	});
});
