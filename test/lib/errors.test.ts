import { Errors } from "moleculer";
import { AccessDeniedError, ConnectionAcquireTimeoutError, ConnectionError, ConnectionRefusedError, DatabaseError, HostNotReachableError } from "sequelize";
import { badRequest, forbidden, httpError, invalidField, notFound, serviceUnavailable, STATUS_PHRASES, tooManyRequests, unauthorized, unprocessable } from "../../lib/errors";
import { toErrorBody } from "../../lib/error-body";

/** What moleculer-web hands the error handler for a body-parser failure (it rewraps as MoleculerError). */
const bodyParserError = (status: number, type: string, message = "raw parser text") => new Errors.MoleculerError(message, status, type);

describe("errors", () => {
	it("builds client errors whose code is the HTTP status", () => {
		const cases: Array<[Errors.MoleculerClientError, number, string]> = [
			[badRequest(), 400, "Bad Request"],
			[unauthorized(), 401, "Unauthorized"],
			[forbidden("No"), 403, "No"],
			[notFound(), 404, "Not Found"],
			[unprocessable("Invalid or expired link", { hash: "invalidHash" }), 422, "Invalid or expired link"],
			[tooManyRequests("Too many emails", { email: "tooManyEmails" }, { canRetryAt: "2030-01-01T00:00:00.000Z" }), 429, "Too many emails"],
			[serviceUnavailable(), 503, "Service Unavailable"],
			[httpError(409, "Already exists"), 409, "Already exists"],
		];
		for (const [err, code, message] of cases) {
			expect(err).toBeInstanceOf(Errors.MoleculerClientError);
			expect({ code: err.code, message: err.message }).toEqual({ code, message });
		}
		expect(invalidField("hash", "invalidHash").data).toEqual({ errors: { hash: "invalidHash" } });
		expect(httpError(418, "Teapot").type).toBe("ERROR");
	});

	describe("toErrorBody", () => {
		it("shapes our client errors with field errors and plain extras only", () => {
			expect(toErrorBody(badRequest("Invalid webhook signature"))).toEqual({ statusCode: 400, message: "Invalid webhook signature", error: "Bad Request" });
			expect(toErrorBody(unprocessable("Invalid or expired link", { hash: "invalidHash" }))).toEqual({
				statusCode: 422,
				message: "Invalid or expired link",
				error: "Unprocessable Entity",
				errors: { hash: "invalidHash" },
			});
			const rich = tooManyRequests("Too many login attempts", { email: "tooManyLoginAttempts" }, {
				canRetryAt: "2030-01-01T00:00:00.000Z",
				remaining: 0,
				flag: true,
				none: null,
				nested: { a: 1 },
				list: [1],
				stack: "at x.ts:1:1",
				statusCode: 200,
				message: "override",
			});
			expect(toErrorBody(rich)).toEqual({
				statusCode: 429,
				message: "Too many login attempts",
				error: "Too Many Requests",
				errors: { email: "tooManyLoginAttempts" },
				canRetryAt: "2030-01-01T00:00:00.000Z",
				remaining: 0,
				flag: true,
				none: null,
			});
			expect(toErrorBody(forbidden("Simulation is for sandbox organizations only", { code: "SIMULATION_SANDBOX_ONLY" }))).toEqual({
				statusCode: 403,
				message: "Simulation is for sandbox organizations only",
				error: "Forbidden",
				code: "SIMULATION_SANDBOX_ONLY",
			});
			// Non-string field codes are dropped rather than sent as objects.
			expect(toErrorBody(httpError(400, "Bad", { errors: { a: "x", b: { deep: 1 } } as never })).errors).toEqual({ a: "x" });
		});

		it("maps validator failures to 400 with a code per field", () => {
			const err = new Errors.ValidationError("Parameters validation error!", "VALIDATION_ERROR", [
				{ type: "required", field: "email", message: "The 'email' field is required." },
				{ type: "string", field: "name", actual: 5 },
				{ type: "stringMin", field: "name" },
				{ type: "uuid", field: "items[0].tokenId" },
				{ type: "objectStrict", field: "", actual: "extra, other" },
				{ type: "objectStrict", field: "metadata", actual: "x" },
				{ type: "object", actual: "abc" },
			]);
			expect(toErrorBody(err)).toEqual({
				statusCode: 400,
				message: "Validation failed",
				error: "Bad Request",
				errors: {
					email: "required",
					name: "string",
					"items[0].tokenId": "uuid",
					extra: "unknownField",
					other: "unknownField",
					"metadata.x": "unknownField",
					body: "object",
				},
			});
		});

		it("maps body-parser failures without echoing the parser's text", () => {
			const cases: Array<[Error, number, string]> = [
				[bodyParserError(400, "entity.parse.failed", "Unexpected token } in JSON at position 3"), 400, "Invalid JSON body"],
				[bodyParserError(413, "entity.too.large"), 413, "Payload Too Large"],
				[bodyParserError(415, "charset.unsupported", 'unsupported charset "LATIN1"'), 400, "Unsupported charset"],
				[bodyParserError(415, "encoding.unsupported"), 400, "Unsupported Content-Encoding"],
				[bodyParserError(400, "request.aborted"), 400, "Bad Request"],
				[bodyParserError(400, "request.size.invalid"), 400, "Bad Request"],
			];
			for (const [err, status, message] of cases) {
				expect(toErrorBody(err)).toEqual({ statusCode: status, message, error: STATUS_PHRASES[status] });
			}
		});

		it("rewords moleculer-web's own errors and drops their data", () => {
			class NamedError extends Errors.MoleculerError {
				constructor(name: string, message: string, code: number, type: string, data?: unknown) {
					super(message, code, type, data);
					this.name = name;
				}
			}
			const cases: Array<[Error, object]> = [
				[new NamedError("NotFoundError", "Not found", 404, "NOT_FOUND"), { statusCode: 404, message: "Not Found", error: "Not Found" }],
				[new NamedError("UnAuthorizedError", "Unauthorized", 401, "INVALID_TOKEN"), { statusCode: 401, message: "Unauthorized", error: "Unauthorized" }],
				[new NamedError("BadRequestError", "Bad request", 400, "UNABLE_DECODE_PARAM", { param: "%E0" }), { statusCode: 400, message: "Invalid URL encoding", error: "Bad Request" }],
				[
					new NamedError("PayloadTooLarge", "Payload too large", 413, "PAYLOAD_TOO_LARGE", { fieldname: "file", filename: "../../etc/passwd" }),
					{ statusCode: 413, message: "Payload Too Large", error: "Payload Too Large" },
				],
				[new NamedError("ForbiddenError", "Forbidden", 403, "ORIGIN_NOT_ALLOWED"), { statusCode: 403, message: "Origin not allowed", error: "Forbidden" }],
				[new NamedError("ServiceUnavailableError", "Service unavailable", 503, "SERVICE_UNAVAILABLE"), { statusCode: 503, message: "Service Unavailable", error: "Service Unavailable" }],
			];
			for (const [err, body] of cases) expect(toErrorBody(err)).toEqual(body);
			// Another library's client error keeps its status and message but not its data.
			const foreign = new Errors.MoleculerError("Rejected", 400, "X", { internal: "detail" });
			expect(toErrorBody(foreign)).toEqual({ statusCode: 400, message: "Rejected", error: "Bad Request" });
		});

		it("answers 503 when a service is missing or does not answer", () => {
			const unavailable = [
				new Errors.ServiceNotFoundError({ action: "keys.authenticate" }),
				new Errors.ServiceNotAvailableError({ action: "auth.sessionActive", nodeID: "n1" }),
				new Errors.RequestTimeoutError({ action: "payments.create", nodeID: "n1" }),
				new Errors.MoleculerRetryableError("Down", 503),
			];
			for (const err of unavailable) expect(toErrorBody(err)).toEqual({ statusCode: 503, message: "Service Unavailable", error: "Service Unavailable" });
		});

		it("answers 503 when the database cannot be reached, and only then", () => {
			const lost = Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
			const unreachable: unknown[] = [
				new ConnectionRefusedError(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:3306"), { code: "ECONNREFUSED" })),
				new ConnectionError(new Error("connect ETIMEDOUT")),
				new HostNotReachableError(Object.assign(new Error("connect EHOSTUNREACH"), { code: "EHOSTUNREACH" })),
				new ConnectionAcquireTimeoutError(new Error("Operation timeout")),
				// A connection lost under a query.
				new DatabaseError(lost as never),
				// Restored by Moleculer from another node: the name is all that is left.
				Object.assign(new Errors.MoleculerError("connect ECONNREFUSED", 500), { name: "SequelizeConnectionRefusedError" }),
			];
			for (const err of unreachable) expect(toErrorBody(err)).toEqual({ statusCode: 503, message: "Service Unavailable", error: "Service Unavailable" });
			const broken: unknown[] = [
				new AccessDeniedError(new Error("Access denied for user")),
				new DatabaseError(Object.assign(new Error("Table 'x' doesn't exist"), { code: "ER_NO_SUCH_TABLE" }) as never),
			];
			for (const err of broken) expect(toErrorBody(err).statusCode).toBe(500);
		});

		it("hides every other failure behind a bare 500", () => {
			const failures: unknown[] = [
				new Error("connect ECONNREFUSED 10.0.0.5:3306"),
				new TypeError("Cannot read properties of undefined (reading 'id')"),
				new Errors.MoleculerServerError("Database exploded", 500, "DB", { sql: "SELECT secret" }),
				Object.assign(new Error("Duplicate entry"), { code: "ER_DUP_ENTRY" }),
				{ code: 200, message: "odd" },
				"a string",
				null,
				undefined,
				42,
			];
			for (const err of failures) expect(toErrorBody(err)).toEqual({ statusCode: 500, message: "Internal Server Error", error: "Internal Server Error" });
		});

		it("treats multipart parser failures of an upload as the client's", () => {
			const err = new Error("Unexpected end of multipart data");
			expect(toErrorBody(err, { multipart: true })).toEqual({ statusCode: 400, message: "Malformed multipart body", error: "Bad Request" });
			expect(toErrorBody(new Error("Multipart: Boundary not found"), { multipart: true }).statusCode).toBe(400);
			expect(toErrorBody(err).statusCode).toBe(500);
			expect(toErrorBody(new Error("something else"), { multipart: true }).statusCode).toBe(500);
		});
	});
});
