/**
 * The gateway over HTTP: the error shape for every kind of bad request, languages, and how
 * credentials are resolved and enforced. Business services are replaced by a probe service and
 * stand-ins for the `auth`/`keys` contracts, so these tests pin the gateway's own behaviour.
 */
import zlib from "node:zlib";
import type { Context, ServiceSchema } from "moleculer";
import jwt from "jsonwebtoken";
import { startNode, TestNode } from "../helpers/harness";
import { badRequest, httpError, tooManyRequests } from "../../lib/errors";
import { registerTranslations } from "../../lib/i18n";
import type { AuthMeta } from "../../lib/meta";
import { addService, authStub, AuthStub, basic, expectErrorShape, keysStub, KeysStub, rawHttp, signAccess, unsignedToken } from "./api.helpers";

registerTranslations("es", { "Cannot cancel a payment intent in state {state}": "No se puede cancelar un intento de pago en estado {state}" });

const whoami = (ctx: Context<unknown, AuthMeta & { refresh?: unknown }>) => ({
	user: ctx.meta.user || null,
	apiKey: ctx.meta.apiKey || null,
	refresh: ctx.meta.refresh || null,
	lang: ctx.meta.lang,
	ip: ctx.meta.ip,
	organizationId: ctx.meta.organizationId || null,
});

const probe: ServiceSchema = {
	name: "probe",
	settings: { rest: "/" },
	actions: {
		echo: {
			rest: "POST /probe/echo/:id",
			params: {
				id: "string",
				name: "string",
				n: { type: "number", optional: true },
				nested: { type: "object", optional: true, props: { a: "string" } },
			},
			handler: (ctx: Context<Record<string, unknown>>) => ({ params: ctx.params, isPlain: Object.getPrototypeOf(ctx.params) === Object.prototype }),
		},
		optional: {
			rest: "PATCH /probe/optional",
			params: { note: { type: "string", optional: true } },
			handler: (ctx: Context<Record<string, unknown>>) => ctx.params,
		},
		strict: { rest: "POST /probe/strict", params: { $$strict: true, a: "string" }, handler: (ctx: Context) => ctx.params },
		get: {
			rest: "GET /probe/get",
			params: { a: { type: "string", optional: true }, page: { type: "number", convert: true, optional: true } },
			handler: (ctx: Context) => ctx.params,
		},
		item: { rest: "GET /probe/items/:id", params: { id: "uuid" }, handler: (ctx: Context) => ctx.params },
		boom: {
			rest: "GET /probe/boom",
			handler() {
				throw new Error("secret internals at /srv/app/thing.ts:12:3");
			},
		},
		dependent: { rest: "GET /probe/dependent", handler: (ctx: Context) => ctx.call("nowhere.at.all", {}) },
		state: {
			rest: "POST /probe/state",
			handler() {
				throw badRequest("Cannot cancel a payment intent in state succeeded");
			},
		},
		emails: {
			rest: "POST /probe/emails",
			handler() {
				throw tooManyRequests("Too many emails", { email: "tooManyEmails" }, { canRetryAt: "2030-01-01T00:00:00.000Z", stack: "nope", nested: { x: 1 } });
			},
		},
		conflict: {
			rest: "POST /probe/conflict",
			handler() {
				throw httpError(409, "Already exists");
			},
		},
		public: { rest: "GET /probe/public", auth: "public", handler: whoami },
		signed: {
			rest: "POST /probe/signed",
			handler: (ctx: Context<Record<string, unknown>, { rawBody?: string }>) => ({ rawBody: ctx.meta.rawBody ?? null, params: ctx.params }),
		},
		jwt: { rest: "GET /probe/jwt", auth: "jwt", handler: whoami },
		admin: { rest: "GET /probe/admin", auth: "admin", handler: whoami },
		key: { rest: "POST /probe/key", auth: "key", handler: whoami },
		any: { rest: "GET /probe/any", auth: "any", handler: whoami },
		refresh: { rest: "POST /probe/refresh", auth: "refresh", handler: whoami },
		bogus: { rest: "GET /probe/bogus", auth: "everyone", handler: whoami },
		upload: {
			rest: { method: "POST", path: "/probe/upload", type: "multipart", busboyConfig: { limits: { files: 1, fileSize: 1000 } } },
			async handler(ctx: Context<Record<string, unknown>>) {
				let size = 0;
				for await (const chunk of (ctx as unknown as { stream: AsyncIterable<Buffer> }).stream) size += chunk.length;
				return { size, filename: ctx.params.$filename, mimetype: ctx.params.$mimetype };
			},
		},
		made: {
			rest: "POST /probe/made",
			handler(ctx: Context<unknown, AuthMeta>) {
				ctx.meta.$statusCode = 201;
				return { id: "new" };
			},
		},
		created: {
			rest: "POST /probe/created",
			handler(ctx: Context<unknown, AuthMeta>) {
				ctx.meta.$statusCode = 204;
				return null;
			},
		},
	},
} as unknown as ServiceSchema;

describe("api gateway", () => {
	let node: TestNode;
	let auth: AuthStub;
	let keys: KeysStub;

	beforeAll(async () => {
		node = await startNode({ services: ["api"] });
		auth = authStub();
		keys = keysStub();
		node.broker.createService(auth.schema);
		node.broker.createService(keys.schema);
		await addService(node, probe);
	});
	afterAll(async () => node?.stop());

	describe("routes and the error shape", () => {
		it("answers GET /api/v1/ with application info", async () => {
			const res = await node.http("GET", "/");
			expect(res.status).toBe(200);
			expect(res.body).toMatchObject({ name: "Crypto Payment Gateway", apiVersion: "v1", publicUrl: node.config.publicUrl });
			expect(typeof res.body.version).toBe("string");
			expect(new Date(res.body.time).toISOString()).toBe(res.body.time);
			// The node id names the host: not for the public.
			expect(res.body.nodeID).toBeUndefined();
		});

		it("answers unknown routes with 404 in the error shape", async () => {
			for (const path of ["/no/such/route", "/probe/echo", "/probe/echo/1/2"]) {
				const res = await node.http("GET", path);
				expect(res.status).toBe(404);
				expect(res.body).toEqual({ statusCode: 404, message: "Not Found", error: "Not Found" });
			}
			const outside = await fetch(node.baseUrl.replace("/api/v1", "/elsewhere"));
			expect(outside.status).toBe(404);
			expect(await outside.json()).toEqual({ statusCode: 404, message: "Not Found", error: "Not Found" });
		});

		it("does not publish moleculer-web's alias listing", async () => {
			for (const path of ["/list-aliases", "/api/list-aliases", "/api/listAliases"]) {
				const res = await node.http("GET", path);
				expect(res.status).toBe(404);
			}
		});

		it("routes a known path in any case and with a trailing slash to the same action", async () => {
			const res = await node.http("POST", "/PROBE/Echo/7/", { body: { name: "x" } });
			expect(res.status).toBe(200);
			expect(res.body.params).toEqual({ id: "7", name: "x" });
		});

		it("rejects malformed and truncated JSON with 400", async () => {
			for (const raw of ['{"name": "x"', "{name: 'x'}", "{", '{"name":"x"}}', "\u0000"]) {
				const res = await node.http("POST", "/probe/echo/1", { rawBody: raw, headers: { "Content-Type": "application/json" } });
				expect(res.status).toBe(400);
				expect(res.body).toEqual({ statusCode: 400, message: "Invalid JSON body", error: "Bad Request" });
			}
		});

		it("rejects JSON bodies that are not objects, even where every field is optional", async () => {
			for (const raw of ["[1,2]", "[]", "123", '"text"', "null", "true"]) {
				const res = await node.http("PATCH", "/probe/optional", { rawBody: raw, headers: { "Content-Type": "application/json" } });
				expect(res.status).toBe(400);
				expect(res.body).toEqual({ statusCode: 400, message: "Request body must be a JSON object", error: "Bad Request" });
			}
			const ok = await node.http("PATCH", "/probe/optional", { body: { note: "n" } });
			expect(ok.status).toBe(200);
			expect(ok.body).toEqual({ note: "n" });
		});

		it("rejects a body that is not JSON instead of ignoring it", async () => {
			const cases: Array<[string, string]> = [
				["text/plain", '{"note":"n"}'],
				["application/x-www-form-urlencoded", "note=n"],
				["application/xml", "<note>n</note>"],
				["multipart/form-data; boundary=x", "--x--"],
			];
			for (const [type, raw] of cases) {
				const res = await node.http("PATCH", "/probe/optional", { rawBody: raw, headers: { "Content-Type": type } });
				expect(res.status).toBe(400);
				expect(res.body).toEqual({ statusCode: 400, message: "Content-Type must be application/json", error: "Bad Request" });
			}
			const missing = await fetch(`${node.baseUrl}/probe/optional`, { method: "PATCH", body: new Blob(['{"note":"n"}']) });
			expect(missing.status).toBe(400);
			expectErrorShape(await missing.json(), 400);
		});

		it("rejects unsupported charsets and compressed bodies with 400", async () => {
			const latin1 = await node.http("PATCH", "/probe/optional", { rawBody: '{"note":"n"}', headers: { "Content-Type": "application/json; charset=latin1" } });
			expect(latin1.status).toBe(400);
			expect(latin1.body).toEqual({ statusCode: 400, message: "Unsupported charset", error: "Bad Request" });
			const gz = await node.http("PATCH", "/probe/optional", {
				rawBody: zlib.gzipSync(Buffer.from('{"note":"n"}')),
				headers: { "Content-Type": "application/json", "Content-Encoding": "gzip" },
			});
			expect(gz.status).toBe(400);
			expect(gz.body).toEqual({ statusCode: 400, message: "Unsupported Content-Encoding", error: "Bad Request" });
			const garbage = await node.http("PATCH", "/probe/optional", { rawBody: "not brotli", headers: { "Content-Type": "application/json", "Content-Encoding": "br" } });
			expect(garbage.status).toBe(400);
			expectErrorShape(garbage.body, 400);
		});

		it("answers validation failures with 400 naming each bad field", async () => {
			const res = await node.http("POST", "/probe/echo/1", { body: { name: 5, n: "abc", nested: { a: 1 } } });
			expect(res.status).toBe(400);
			expect(res.body).toEqual({
				statusCode: 400,
				message: "Validation failed",
				error: "Bad Request",
				errors: { name: "string", n: "number", "nested.a": "string" },
			});
			const missing = await node.http("POST", "/probe/echo/1", { body: {} });
			expect(missing.body.errors).toEqual({ name: "required" });
		});

		it("names unknown fields of strict schemas", async () => {
			const res = await node.http("POST", "/probe/strict", { body: { a: "x", b: 1, c: true } });
			expect(res.status).toBe(400);
			expect(res.body.errors).toEqual({ b: "unknownField", c: "unknownField" });
		});

		it("treats repeated and nested query keys as wrong types, not as a crash", async () => {
			const repeated = await node.http("GET", "/probe/get?a=1&a=2");
			expect(repeated.status).toBe(400);
			expect(repeated.body.errors).toEqual({ a: "string" });
			const nested = await node.http("GET", "/probe/get?a[b]=1");
			expect(nested.status).toBe(400);
			expect(nested.body.errors).toEqual({ a: "string" });
			const notNumber = await node.http("GET", "/probe/get?page=abc");
			expect(notNumber.status).toBe(400);
			expect(notNumber.body.errors).toEqual({ page: "number" });
			const deep = await node.http("GET", `/probe/get?${"x".repeat(1)}${"[a]".repeat(50)}=1&${Array.from({ length: 500 }, (_, i) => `k${i}=1`).join("&")}`);
			expect(deep.status).toBe(200);
			const ok = await node.http("GET", "/probe/get?a=1&page=2");
			expect(ok.body).toMatchObject({ a: "1", page: 2 });
		});

		it("lets the body win over the query, and the path over both", async () => {
			const res = await node.http("POST", "/probe/echo/path-id?name=from-query&id=query-id", { body: { name: "from-body", id: "body-id" } });
			expect(res.status).toBe(200);
			expect(res.body.params).toEqual({ id: "path-id", name: "from-body" });
		});

		it("drops __proto__ keys of the body", async () => {
			const res = await node.http("POST", "/probe/echo/1", {
				rawBody: '{"name":"x","__proto__":{"n":5,"polluted":true},"nested":{"a":"y","__proto__":{"b":1}}}',
				headers: { "Content-Type": "application/json" },
			});
			expect(res.status).toBe(200);
			expect(res.body).toEqual({ params: { id: "1", name: "x", nested: { a: "y" } }, isPlain: true });
			expect(({} as Record<string, unknown>).polluted).toBeUndefined();
		});

		it("handles odd characters in path parameters", async () => {
			const bad = await node.http("GET", "/probe/items/%E0%A4%A");
			expect(bad.status).toBe(400);
			expect(bad.body).toEqual({ statusCode: 400, message: "Invalid URL encoding", error: "Bad Request" });
			for (const odd of ["a%2Fb", "%00", "..%2F..%2Fetc", "%F0%9F%92%A9", "'%20OR%201=1", "x".repeat(3000)]) {
				const res = await node.http("GET", `/probe/items/${odd}`);
				expect(res.status).toBe(400);
				expect(res.body.errors).toEqual({ id: "uuid" });
			}
			const echoed = await node.http("POST", "/probe/echo/a%2Fb%20c%F0%9F%92%A9", { body: { name: "x" } });
			expect(echoed.body.params.id).toBe("a/b c\u{1F4A9}");
		});

		it("answers a body over the limit with 413", async () => {
			const res = await node.http("POST", "/probe/echo/1", { rawBody: JSON.stringify({ name: "x".repeat(2 * 1024 * 1024) }), headers: { "Content-Type": "application/json" } });
			expect(res.status).toBe(413);
			expect(res.body).toEqual({ statusCode: 413, message: "Payload Too Large", error: "Payload Too Large" });
		});

		it("answers oversized headers and unparsable requests in the error shape", async () => {
			const big = await rawHttp(node, `GET /api/v1/ HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\nConnection: close\r\n\r\n`);
			expect(big.status).toBe(431);
			expect(JSON.parse(big.body)).toEqual({ statusCode: 431, message: "Request Header Fields Too Large", error: "Request Header Fields Too Large" });
			const garbage = await rawHttp(node, "NOT HTTP AT ALL\r\n\r\n");
			expect(garbage.status).toBe(400);
			expect(JSON.parse(garbage.body)).toEqual({ statusCode: 400, message: "Bad Request", error: "Bad Request" });
			const badLength = await rawHttp(node, "POST /api/v1/probe/echo/1 HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\nConnection: close\r\n\r\n{}");
			expect(badLength.status).toBe(400);
		});

		it("answers a request whose body never arrives completely with 400, not 500", async () => {
			const res = await rawHttp(
				node,
				'POST /api/v1/probe/echo/1 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\nConnection: close\r\n\r\n{"name":',
				{ halfClose: true },
			);
			expect(res.status).toBe(400);
			expect(JSON.parse(res.body)).toEqual({ statusCode: 400, message: "Bad Request", error: "Bad Request" });
		});

		it("hides unexpected failures behind a bare 500 and keeps the stack in the server log", async () => {
			const svc = node.broker.getLocalService("api")!;
			const spy = jest.spyOn(svc.logger, "error").mockImplementation(() => undefined);
			try {
				const res = await node.http("GET", "/probe/boom");
				expect(res.status).toBe(500);
				expect(res.body).toEqual({ statusCode: 500, message: "Internal Server Error", error: "Internal Server Error" });
				expect(res.text).not.toContain("secret internals");
				expect(spy).toHaveBeenCalled();
				expect(spy.mock.calls.flat().join(" ")).toContain("secret internals");
			} finally {
				spy.mockRestore();
			}
		});

		it("answers 503 with Retry-After when a service the action needs is not running", async () => {
			const res = await node.http("GET", "/probe/dependent");
			expect(res.status).toBe(503);
			expect(res.headers.get("retry-after")).toBe("5");
			expect(res.body).toEqual({ statusCode: 503, message: "Service Unavailable", error: "Service Unavailable" });
		});

		it("keeps field errors and plain extra fields of client errors, and nothing else", async () => {
			const res = await node.http("POST", "/probe/emails", { body: {} });
			expect(res.status).toBe(429);
			expect(res.body).toEqual({
				statusCode: 429,
				message: "Too many emails",
				error: "Too Many Requests",
				errors: { email: "tooManyEmails" },
				canRetryAt: "2030-01-01T00:00:00.000Z",
			});
			const conflict = await node.http("POST", "/probe/conflict", { body: {} });
			expect(conflict.body).toEqual({ statusCode: 409, message: "Already exists", error: "Conflict" });
		});

		it("answers OPTIONS with 405 and never runs an action for it", async () => {
			const res = await node.http("OPTIONS", "/probe/jwt");
			expect(res.status).toBe(405);
			expect(res.body).toEqual({ statusCode: 405, message: "Method Not Allowed", error: "Method Not Allowed" });
			const preflight = await node.http("OPTIONS", "/probe/jwt", { headers: { Origin: "https://shop.example", "Access-Control-Request-Method": "GET" } });
			expect(preflight.status).toBe(405);
			expect(preflight.headers.get("access-control-allow-origin")).toBeNull();
		});

		it("takes multipart uploads only where the route declares them, and refuses broken forms with 400", async () => {
			const form = new FormData();
			form.append("file", new Blob(["hello upload"], { type: "text/plain" }), "note.txt");
			const ok = await node.http("POST", "/probe/upload", { rawBody: form });
			expect(ok.status).toBe(200);
			expect(ok.body).toEqual({ size: 12, filename: "note.txt", mimetype: "text/plain" });

			const json = await node.http("POST", "/probe/upload", { body: { file: "x" } });
			expect(json.status).toBe(400);
			expect(json.body).toEqual({ statusCode: 400, message: "Content-Type must be multipart/form-data", error: "Bad Request" });
			const noBoundary = await node.http("POST", "/probe/upload", { rawBody: "--x--", headers: { "Content-Type": "multipart/form-data" } });
			expect(noBoundary.status).toBe(400);
			const formElsewhere = await node.http("PATCH", "/probe/optional", { rawBody: form });
			expect(formElsewhere.status).toBe(400);

			const truncated = await node.http("POST", "/probe/upload", {
				rawBody: '--XyZ\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nhello',
				headers: { "Content-Type": "multipart/form-data; boundary=XyZ" },
			});
			expect(truncated.status).toBe(400);
			expect(truncated.body).toEqual({ statusCode: 400, message: "Malformed multipart body", error: "Bad Request" });

			const big = new FormData();
			big.append("file", new Blob(["x".repeat(5000)], { type: "text/plain" }), "big.txt");
			const tooBig = await node.http("POST", "/probe/upload", { rawBody: big });
			expect(tooBig.status).toBe(413);
			expect(tooBig.body).toEqual({ statusCode: 413, message: "Payload Too Large", error: "Payload Too Large" });
		});

		it("hands the exact raw body to the action of a signed request, and only then", async () => {
			const raw = '{ "type":"payment_intent.completed",\n  "data": {"object": {"id": "pi_1", "amount": "1.50"}}}';
			const signed = await node.http("POST", "/probe/signed", { rawBody: raw, headers: { "Content-Type": "application/json", "x-webhook-signature": "abc" } });
			expect(signed.status).toBe(200);
			expect(signed.body.rawBody).toBe(raw);
			expect(signed.body.params).toEqual({ type: "payment_intent.completed", data: { object: { id: "pi_1", amount: "1.50" } } });
			const unsigned = await node.http("POST", "/probe/signed", { rawBody: raw, headers: { "Content-Type": "application/json" } });
			expect(unsigned.body.rawBody).toBeNull();
		});

		it("sends 204 responses without a body", async () => {
			const res = await node.http("POST", "/probe/created", { body: {} });
			expect(res.status).toBe(204);
			expect(res.text).toBe("");
		});

		it("echoes a well-formed X-Request-ID and replaces anything else", async () => {
			const good = await node.http("GET", "/", { headers: { "X-Request-ID": "req-123.abc" } });
			expect(good.headers.get("x-request-id")).toBe("req-123.abc");
			const bad = await node.http("GET", "/", { headers: { "X-Request-ID": `x y ${"z".repeat(300)}` } });
			expect(bad.status).toBe(200);
			expect(bad.headers.get("x-request-id")).not.toContain(" ");
			expect((bad.headers.get("x-request-id") || "").length).toBeLessThanOrEqual(128);
		});
	});

	describe("languages", () => {
		it("translates messages with x-custom-lang and falls back to English", async () => {
			for (const lang of ["es", "es-ES", "ES", "es_MX"]) {
				const res = await node.http("GET", "/nope", { headers: { "x-custom-lang": lang } });
				expect(res.body).toEqual({ statusCode: 404, message: "No encontrado", error: "Not Found" });
			}
			for (const lang of ["xx", "fr", "", "en", "e"]) {
				const res = await node.http("GET", "/nope", { headers: { "x-custom-lang": lang } });
				expect(res.body.message).toBe("Not Found");
			}
		});

		it("translates gateway, validation and service messages but never field codes", async () => {
			const es = { "x-custom-lang": "es" };
			const validation = await node.http("POST", "/probe/echo/1", { body: {}, headers: es });
			expect(validation.body).toEqual({ statusCode: 400, message: "La validación ha fallado", error: "Bad Request", errors: { name: "required" } });
			const json = await node.http("POST", "/probe/echo/1", { rawBody: "{", headers: { ...es, "Content-Type": "application/json" } });
			expect(json.body.message).toBe("Cuerpo JSON no válido");
			const emails = await node.http("POST", "/probe/emails", { body: {}, headers: es });
			expect(emails.body.message).toBe("Demasiados correos electrónicos");
			expect(emails.body.errors).toEqual({ email: "tooManyEmails" });
			const state = await node.http("POST", "/probe/state", { body: {}, headers: es });
			expect(state.body.message).toBe("No se puede cancelar un intento de pago en estado succeeded");
			const stateEn = await node.http("POST", "/probe/state", { body: {} });
			expect(stateEn.body.message).toBe("Cannot cancel a payment intent in state succeeded");
			const auth = await node.http("GET", "/probe/jwt", { headers: es });
			expect(auth.body.message).toBe("No autorizado");
		});

		it("hands the language to the action", async () => {
			const res = await node.http("GET", "/probe/public", { headers: { "x-custom-lang": "es-AR" } });
			expect(res.body.lang).toBe("es");
			const en = await node.http("GET", "/probe/public", { headers: { "x-custom-lang": "de" } });
			expect(en.body.lang).toBe("en");
		});
	});

	describe("authentication", () => {
		const LIVE_KEY = { key: "ak_live_abcdefghijklmnopqrstuvwxyz012345", secret: "sk_live_" + "s".repeat(48) };

		beforeAll(() => {
			auth.active.add("s-user");
			auth.active.add("s-admin");
			keys.keys.set(`${LIVE_KEY.key}:${LIVE_KEY.secret}`, { id: 7, organizationId: "11111111-2222-4333-8444-555555555555", mode: "live" });
		});

		it("resolves a bearer token into ctx.meta.user once", async () => {
			const token = signAccess(node, { userId: 42, sessionId: "s-user" });
			const before = auth.calls;
			const res = await node.http("GET", "/probe/jwt", { token, headers: { "x-organization-id": "org-1" } });
			expect(res.status).toBe(200);
			expect(res.body.user).toEqual({ id: 42, role: "user", sessionId: "s-user" });
			expect(res.body.apiKey).toBeNull();
			expect(res.body.organizationId).toBe("org-1");
			expect(res.body.ip).toMatch(/127\.0\.0\.1/);
			// Cached for the next requests on this node.
			await node.http("GET", "/probe/jwt", { token });
			await node.http("GET", "/probe/any", { token });
			expect(auth.calls - before).toBe(1);
		});

		it("resolves an optional credential on public routes", async () => {
			const anon = await node.http("GET", "/probe/public");
			expect(anon.status).toBe(200);
			expect(anon.body.user).toBeNull();
			const token = signAccess(node, { userId: 42, sessionId: "s-user" });
			const withToken = await node.http("GET", "/probe/public", { token });
			expect(withToken.body.user).toEqual({ id: 42, role: "user", sessionId: "s-user" });
		});

		it("answers an expired token with 401 Token expired, following the app clock", async () => {
			const expired = signAccess(node, { userId: 42, sessionId: "s-user", expiresIn: -5 });
			const res = await node.http("GET", "/probe/jwt", { token: expired });
			expect(res.status).toBe(401);
			expect(res.body).toEqual({ statusCode: 401, message: "Token expired", error: "Unauthorized" });

			const soon = signAccess(node, { userId: 42, sessionId: "s-user", expiresIn: 60 });
			expect((await node.http("GET", "/probe/jwt", { token: soon })).status).toBe(200);
			node.clock.advance(61_000);
			try {
				const later = await node.http("GET", "/probe/jwt", { token: soon });
				expect(later.status).toBe(401);
				expect(later.body.message).toBe("Token expired");
			} finally {
				node.clock.reset();
			}
			const es = await node.http("GET", "/probe/jwt", { token: expired, headers: { "x-custom-lang": "es" } });
			expect(es.body.message).toBe("Token caducado");
		});

		it("refuses forged, unsigned and malformed tokens with 401", async () => {
			const claims = { sub: "42", sid: "s-user", role: "admin", typ: "access", exp: Math.floor(Date.now() / 1000) + 600 };
			const tokens = [
				signAccess(node, { userId: 42, sessionId: "s-user", secret: "another-secret-entirely-0123456789" }),
				unsignedToken(claims),
				signAccess(node, { userId: 42, sessionId: "s-user", algorithm: "HS512" }),
				signAccess(node, { userId: 42, sessionId: "s-user", typ: "refresh" }),
				signAccess(node, { userId: 42, sessionId: "s-user", role: "root" }),
				signAccess(node, { userId: "abc", sessionId: "s-user" }),
				signAccess(node, { userId: 0, sessionId: "s-user" }),
				signAccess(node, { userId: 42, sessionId: "" }),
				signAccess(node, { userId: 42, sessionId: "s-user", secret: node.config.secrets.refresh }),
				"not-a-jwt",
				"a.b.c",
				"x".repeat(5000),
			];
			for (const token of tokens) {
				const res = await node.http("GET", "/probe/jwt", { token });
				expect(res.status).toBe(401);
				expect(res.body).toEqual({ statusCode: 401, message: "Invalid token", error: "Unauthorized" });
			}
		});

		it("refuses an access or refresh token without exp with 401 Invalid token", async () => {
			const iat = Math.floor(node.clock.now().getTime() / 1000);
			const kinds = [
				{ claims: { sub: "42", sid: "s-user", role: "user", typ: "access" }, secret: node.config.secrets.jwt, send: (token: string) => node.http("GET", "/probe/jwt", { token }) },
				{ claims: { sub: "42", sid: "s-user", typ: "refresh", nonce: "n1" }, secret: node.config.secrets.refresh, send: (token: string) => node.http("POST", "/probe/refresh", { token, body: {} }) },
			];
			for (const { claims, secret, send } of kinds) {
				const sign = (extra: object, opts: jwt.SignOptions = {}) => jwt.sign({ ...claims, ...extra }, secret, { algorithm: "HS256", ...opts });
				// The same claims with an exp pass: only the missing expiry is refused.
				expect((await send(sign({ iat, exp: iat + 600 }))).status).toBe(200);
				for (const token of [sign({ iat }), sign({}, { noTimestamp: true })]) {
					const res = await send(token);
					expect([claims.typ, res.status]).toEqual([claims.typ, 401]);
					expect(res.body).toEqual({ statusCode: 401, message: "Invalid token", error: "Unauthorized" });
				}
			}
		});

		it("refuses malformed Authorization headers with 401 on every route", async () => {
			const headers = [
				"Bearer",
				"Bearer ",
				"Bearer a b",
				"Token abc",
				"Digest username=x",
				"Basic",
				`Basic ${Buffer.from("no-colon").toString("base64")}`,
				`Basic ${Buffer.from(":secret-only").toString("base64")}`,
				`Basic ${Buffer.from("key-only:").toString("base64")}`,
				"Basic !!!not-base64!!!",
				`Basic ${Buffer.from("ak_live_x:sk with spaces").toString("base64")}`,
				`Basic ${Buffer.from(`${"k".repeat(300)}:s`).toString("base64")}`,
				"\u00e9\u00e9",
			];
			for (const value of headers) {
				for (const path of ["/probe/public", "/probe/any", "/"]) {
					const res = await node.http("GET", path, { headers: { Authorization: value } });
					expect(res.status).toBe(401);
					expectErrorShape(res.body, 401);
				}
			}
		});

		it("resolves a Basic API key into ctx.meta.apiKey and caches it by digest", async () => {
			const before = keys.calls;
			const res = await node.http("POST", "/probe/key", { key: LIVE_KEY, body: {} });
			expect(res.status).toBe(200);
			expect(res.body.apiKey).toEqual({ id: 7, organizationId: "11111111-2222-4333-8444-555555555555", mode: "live" });
			expect(res.body.user).toBeNull();
			await node.http("POST", "/probe/key", { key: LIVE_KEY, body: {} });
			expect(keys.calls - before).toBe(1);
			// The cache never holds the credential itself.
			const svc = node.broker.getLocalService("api") as unknown as { credentials: { keyCache: { entries: Map<string, unknown> } } };
			const cacheKeys = [...svc.credentials.keyCache.entries.keys()];
			expect(cacheKeys.length).toBeGreaterThan(0);
			for (const k of cacheKeys) {
				expect(k).not.toContain(LIVE_KEY.key);
				expect(k).not.toContain(LIVE_KEY.secret);
			}
			const wrong = await node.http("POST", "/probe/key", { key: { key: LIVE_KEY.key, secret: "sk_live_wrong" }, body: {} });
			expect(wrong.status).toBe(401);
			expect(wrong.body).toEqual({ statusCode: 401, message: "Invalid API key", error: "Unauthorized" });
		});

		it("enforces each action's declared requirement", async () => {
			const user = signAccess(node, { userId: 42, sessionId: "s-user" });
			const admin = signAccess(node, { userId: 1, sessionId: "s-admin", role: "admin" });
			const refresh = signAccess(node, { userId: 42, sessionId: "s-user", typ: "refresh", secret: node.config.secrets.refresh, extra: { nonce: "n1" } });
			const expectations: Array<[string, string, { token?: string; key?: typeof LIVE_KEY }, number, string?]> = [
				["GET", "/probe/jwt", {}, 401, "Unauthorized"],
				["GET", "/probe/jwt", { key: LIVE_KEY }, 401, "Unauthorized"],
				["GET", "/probe/admin", {}, 401],
				["GET", "/probe/admin", { token: user }, 403, "Insufficient role"],
				["GET", "/probe/admin", { token: admin }, 200],
				["POST", "/probe/key", {}, 401, "Unauthorized"],
				["POST", "/probe/key", { token: user }, 401, "This operation requires an API key"],
				["POST", "/probe/key", { key: LIVE_KEY }, 200],
				["GET", "/probe/any", {}, 401],
				["GET", "/probe/any", { token: user }, 200],
				["GET", "/probe/any", { key: LIVE_KEY }, 200],
				["POST", "/probe/refresh", {}, 401],
				["POST", "/probe/refresh", { token: user }, 401, "Invalid token"],
				["POST", "/probe/refresh", { token: refresh }, 200],
				["GET", "/probe/bogus", { token: admin }, 401],
			];
			for (const [method, path, cred, status, message] of expectations) {
				const res = await node.http(method, path, { ...cred, ...(method === "POST" ? { body: {} } : {}) });
				expect({ method, path, status: res.status }).toEqual({ method, path, status });
				if (status >= 400) expectErrorShape(res.body, status);
				if (message) expect(res.body.message).toBe(message);
			}
			const refreshed = await node.http("POST", "/probe/refresh", { token: refresh, body: {} });
			expect(refreshed.body.refresh).toEqual({ sessionId: "s-user", nonce: "n1", userId: 42 });
			expect(refreshed.body.user).toBeNull();
		});

		it("refuses an ended session at once when auth.sessions.ended is broadcast", async () => {
			auth.active.add("s-ending");
			const token = signAccess(node, { userId: 50, sessionId: "s-ending" });
			expect((await node.http("GET", "/probe/jwt", { token })).status).toBe(200);
			auth.active.delete("s-ending");
			// Still cached as active until the event arrives (that is what the event is for).
			expect((await node.http("GET", "/probe/jwt", { token })).status).toBe(200);
			await node.broker.broadcast("auth.sessions.ended", { sessionIds: ["s-ending"] });
			const res = await node.http("GET", "/probe/jwt", { token });
			expect(res.status).toBe(401);
			expect(res.body.message).toBe("Session ended");
			// On a public route the dead token is refused too, not silently ignored.
			expect((await node.http("GET", "/probe/public", { token })).status).toBe(401);
		});

		it("refuses a changed or revoked key at once when keys.changed is broadcast", async () => {
			const cred = { key: "ak_test_revokeme00000000000000000000000", secret: "sk_test_" + "r".repeat(48) };
			keys.keys.set(`${cred.key}:${cred.secret}`, { id: 9, organizationId: "99999999-2222-4333-8444-555555555555", mode: "sandbox" });
			expect((await node.http("POST", "/probe/key", { key: cred, body: {} })).status).toBe(200);
			keys.keys.delete(`${cred.key}:${cred.secret}`);
			await node.broker.broadcast("keys.changed", { id: 9 });
			const res = await node.http("POST", "/probe/key", { key: cred, body: {} });
			expect(res.status).toBe(401);
			expect(res.body.message).toBe("Invalid API key");
		});

		it("does not cache an answer that raced with a revocation", async () => {
			const cred = { key: "ak_test_racing0000000000000000000000000", secret: "sk_test_" + "q".repeat(48) };
			keys.keys.set(`${cred.key}:${cred.secret}`, { id: 10, organizationId: "10101010-2222-4333-8444-555555555555", mode: "sandbox" });
			let release!: () => void;
			keys.gate = new Promise<void>(resolve => (release = resolve));
			const before = keys.calls;
			// The look-up reads "valid", then the key is revoked and the event arrives before the answer.
			const inFlight = node.http("POST", "/probe/key", { key: cred, body: {} });
			while (keys.calls === before) await new Promise(r => setTimeout(r, 5));
			keys.keys.delete(`${cred.key}:${cred.secret}`);
			await node.broker.broadcast("keys.changed", { id: 10 });
			keys.gate = null;
			release();
			expect((await inFlight).status).toBe(200);
			// The stale "valid" was not cached: the next request asks again and is refused.
			const next = await node.http("POST", "/probe/key", { key: cred, body: {} });
			expect(next.status).toBe(401);
			expect(keys.calls - before).toBe(2);
		});

		it("goes on anonymously on public routes when the auth and keys services are down, and answers 503 elsewhere", async () => {
			const token = signAccess(node, { userId: 60, sessionId: "s-uncached" });
			const cred = { key: "ak_live_uncached00000000000000000000000", secret: "sk_live_" + "u".repeat(48) };
			await node.broker.destroyService(node.broker.getLocalService("auth")!);
			await node.broker.destroyService(node.broker.getLocalService("keys")!);
			try {
				const pub = await node.http("GET", "/probe/public", { token });
				expect(pub.status).toBe(200);
				expect(pub.body.user).toBeNull();
				const pubKey = await node.http("GET", "/probe/public", { key: cred });
				expect(pubKey.status).toBe(200);
				expect(pubKey.body.apiKey).toBeNull();
				const info = await node.http("GET", "/", { token });
				expect(info.status).toBe(200);
				const jwtRoute = await node.http("GET", "/probe/jwt", { token });
				expect(jwtRoute.status).toBe(503);
				expect(jwtRoute.body).toEqual({ statusCode: 503, message: "Service Unavailable", error: "Service Unavailable" });
				const keyRoute = await node.http("POST", "/probe/key", { key: cred, body: {} });
				expect(keyRoute.status).toBe(503);
				expect((await node.http("GET", "/probe/any", { key: cred })).status).toBe(503);
				// A credential the route would not take anyway is simply not enough: 401, as with the services up.
				const keyOnTokenRoute = await node.http("GET", "/probe/jwt", { key: cred });
				expect(keyOnTokenRoute.status).toBe(401);
				const tokenOnKeyRoute = await node.http("POST", "/probe/key", { token, body: {} });
				expect(tokenOnKeyRoute.status).toBe(401);
				// A bad signature is still a 401: no service is needed to know that.
				const forged = await node.http("GET", "/probe/public", { token: signAccess(node, { secret: "x".repeat(40) }) });
				expect(forged.status).toBe(401);
			} finally {
				auth = authStub();
				keys = keysStub();
				node.broker.createService(auth.schema);
				node.broker.createService(keys.schema);
				await node.broker.waitForServices(["auth", "keys"]);
			}
		});
	});
});

describe("api gateway request logging", () => {
	const secretToken = "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2VjcmV0LXNpZ25hdHVyZQ";

	async function logsOf(node: TestNode, send: () => Promise<unknown>): Promise<string[]> {
		const svc = node.broker.getLocalService("api")!;
		const lines: string[] = [];
		const spies = (["info", "warn", "error", "debug"] as const).map(level =>
			jest.spyOn(svc.logger, level).mockImplementation((...args: unknown[]) => void lines.push(`${level}: ${args.map(String).join(" ")}`)),
		);
		try {
			await send();
		} finally {
			spies.forEach(s => s.mockRestore());
		}
		return lines;
	}

	const traffic = (node: TestNode) => async () => {
		await node.http("GET", "/?api_secret=sk_live_querysecret", { headers: { Authorization: secretToken } });
		for (let i = 0; i < 3; i++) {
			await node.http("POST", "/probe/echo/1?token=abc", { body: { name: "n", password: "hunter2-password" }, headers: { Authorization: basicHeader } });
		}
		await node.http("GET", "/probe/boom");
		const made = await node.http("POST", "/probe/made", { body: {} });
		expect(made.status).toBe(201);
		expect(made.body).toEqual({ id: "new" });
	};
	const basicHeader = `Basic ${Buffer.from("ak_live_logkey:sk_live_logsecret").toString("base64")}`;

	it("logs method, path and status only when LOG_REQUESTS=true, never credentials, queries or bodies", async () => {
		const node = await startNode({ services: ["api"], env: { LOG_REQUESTS: "true" } });
		try {
			await addService(node, probe);
			const settings = node.broker.getLocalService("api")!.settings as Record<string, unknown>;
			expect(settings.logRequest).toBe("info");
			expect(settings.logResponse).toBe("info");
			const lines = await logsOf(node, traffic(node));
			const all = lines.join("\n");
			expect(all).toContain("=> GET /api/v1/");
			expect(all).toMatch(/<= 401 GET \/api\/v1\/ \[\+[\d.]+ ms\]/);
			expect(all).toMatch(/<= 200 POST \/api\/v1\/probe\/echo\/1 \[\+[\d.]+ ms\]/);
			expect(all).toMatch(/<= 500 GET \/api\/v1\/probe\/boom/);
			for (const secret of ["eyJhbGciOiJIUzI1NiJ9", "sk_live_querysecret", "hunter2-password", "sk_live_logsecret", "ak_live_logkey", basicHeader.slice(6), "token=abc"]) {
				expect(all).not.toContain(secret);
			}
		} finally {
			await node.stop();
		}
	});

	it("logs nothing per request by default, only server errors", async () => {
		const node = await startNode({ services: ["api"] });
		try {
			await addService(node, probe);
			const lines = await logsOf(node, traffic(node));
			expect(lines.filter(l => l.startsWith("info:"))).toEqual([]);
			// The keys service is not running: said once, not per request.
			expect(lines.filter(l => l.startsWith("warn:"))).toEqual([
				"warn: Credential check unavailable (ServiceNotFoundError): routes that need the credential answer 503",
			]);
			const errors = lines.filter(l => l.startsWith("error:"));
			expect(errors).toHaveLength(1);
			expect(errors[0]).toContain("GET /probe/boom");
			expect(errors[0]).toContain("secret internals");
			expect(lines.join("\n")).not.toContain("hunter2-password");
		} finally {
			await node.stop();
		}
	});
});

describe("api gateway with CORS_ORIGINS", () => {
	let node: TestNode;
	const DASH = "https://dash.example.com";
	beforeAll(async () => {
		node = await startNode({ services: ["api"], env: { CORS_ORIGINS: DASH, RATE_LIMIT_SCALE: "1", PUBLIC_URL: "https://pay.example.com" } });
		await addService(node, probe);
	});
	afterAll(async () => node?.stop());

	it("answers preflights of allowed origins without running, authenticating or counting anything", async () => {
		for (let i = 0; i < 12; i++) {
			const res = await node.http("OPTIONS", "/probe/jwt", {
				headers: { Origin: DASH, "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "authorization, x-custom-lang" },
			});
			expect(res.status).toBe(204);
			expect(res.headers.get("access-control-allow-origin")).toBe(DASH);
			expect(res.headers.get("access-control-allow-methods")).toContain("PATCH");
			expect(res.headers.get("access-control-allow-headers")).toMatch(/Authorization.*x-custom-lang.*x-organization-id/);
			expect(res.headers.get("access-control-max-age")).toBe("600");
		}
		const after = await node.http("GET", "/probe/public", { headers: { Origin: DASH } });
		expect(after.status).toBe(200);
		expect(after.headers.get("x-ratelimit-remaining")).toBe("9");
		expect(after.headers.get("access-control-allow-origin")).toBe(DASH);
		expect(after.headers.get("access-control-expose-headers")).toMatch(/X-RateLimit-Limit.*Retry-After.*Idempotent-Replayed/);
	});

	it("allows the public URL's own origin and refuses others in the error shape", async () => {
		const own = await node.http("POST", "/probe/created", { body: {}, headers: { Origin: "https://pay.example.com" } });
		expect(own.status).toBe(204);
		for (const method of ["GET", "OPTIONS"]) {
			const res = await node.http(method, "/probe/public", { headers: { Origin: "https://evil.example", "Access-Control-Request-Method": "GET" } });
			expect(res.status).toBe(403);
			expect(res.body).toEqual({ statusCode: 403, message: "Origin not allowed", error: "Forbidden" });
		}
		// Server-to-server calls send no Origin and are unaffected.
		expect((await node.http("GET", "/probe/public")).status).toBe(200);
	});
});
