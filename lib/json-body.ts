/**
 * The JSON body parser of the API routes: body-parser's `json` (what moleculer-web uses), with a
 * short path for the request nearly every client sends (POST /payment_intents on the hot path):
 * `Content-Type: application/json` (optionally `; charset=utf-8`), a Content-Length within the
 * limit, no Content-Encoding, no Transfer-Encoding. That request is read and parsed here; any
 * other goes to body-parser untouched, with the same options. The short path answers exactly what
 * body-parser does for the same request (test/lib/json-body.test.ts compares them): the same
 * `req.body`, `{}` for an empty body, a leading BOM dropped, invalid UTF-8 replaced, `__proto__`
 * keys dropped, errors with body-parser's `type` and status (lib/error-body.ts maps them).
 * What it saves is body-parser's per-request machinery (type-is and content-type parsing,
 * raw-body's async-hooks wrapper and stream bookkeeping, iconv-lite's decoder): about 7 % of
 * create-intent's profile (docs/benchmarks.md).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import ApiGateway from "moleculer-web";

type Next = (err?: unknown) => void;
type Middleware = (req: IncomingMessage & { body?: unknown }, res: ServerResponse, next: Next) => void;
export type Verify<R extends IncomingMessage = IncomingMessage> = (req: R, res: ServerResponse, buf: Buffer, encoding: string) => void;

export interface JsonBodyOptions<R extends IncomingMessage = IncomingMessage> {
	/** Largest body in bytes (body-parser's `limit`). */
	limit: number;
	/** Called with the raw bytes before parsing (body-parser's `verify`). */
	verify?: Verify<R>;
}

/** `__proto__` keys are dropped so a body can never swap the params' prototype. */
export function dropProtoKeys(key: string, value: unknown): unknown {
	return key === "__proto__" ? undefined : value;
}

/** The content types the short path takes, as clients write them; anything else is body-parser's. */
const PLAIN_JSON = new Set(["application/json", "application/json; charset=utf-8", "application/json;charset=utf-8", "application/json; charset=UTF-8", "application/json;charset=UTF-8"]);
const DIGITS = /^[1-9][0-9]{0,8}$/;

/** Requests parsed on the short path since the process started (tests). */
export const jsonBodyCounts = { short: 0 };

/** An error as body-parser passes it on: its status and `type` are what the error body is built from. */
function bodyError(status: number, message: string, type: string): Error {
	return Object.assign(new Error(message), { status, statusCode: status, expose: true, type });
}

/**
 * JSON.parse dropping `__proto__` keys. A reviver makes JSON.parse call back for every value;
 * without `__proto__` in the text, written plainly or with \u escapes (the only JSON escape that
 * yields letters or `_`), it would return every value unchanged, so it is left out.
 */
function parseJson(text: string): unknown {
	if (text.includes("__proto__") || text.includes("\\u")) return JSON.parse(text, dropProtoKeys);
	return JSON.parse(text);
}

export function jsonBodyParser<R extends IncomingMessage>(opts: JsonBodyOptions<R>): Middleware {
	const fallback = ApiGateway.bodyParser.json({ strict: false, limit: opts.limit, inflate: false, reviver: dropProtoKeys, verify: opts.verify }) as Middleware;
	return function jsonBody(req, res, next) {
		const h = req.headers;
		const type = h["content-type"];
		const length = h["content-length"];
		if (
			type === undefined ||
			!PLAIN_JSON.has(type) ||
			length === undefined ||
			!DIGITS.test(length) ||
			h["transfer-encoding"] !== undefined ||
			h["content-encoding"] !== undefined ||
			// Already read (body-parser's on-finished check) or nothing left to read.
			(req.complete && !req.readable) ||
			!req.socket?.readable
		) {
			fallback(req, res, next);
			return;
		}
		const expected = Number(length);
		if (expected > opts.limit) {
			fallback(req, res, next);
			return;
		}
		jsonBodyCounts.short++;
		const chunks: Buffer[] = [];
		let received = 0;
		let done = false;
		const finish = (err?: Error) => {
			if (done) return;
			done = true;
			req.removeListener("data", onData);
			req.removeListener("end", onEnd);
			req.removeListener("aborted", onAborted);
			req.removeListener("error", onError);
			if (err) {
				// Read off the rest, as body-parser does, before answering.
				req.resume();
				next(err);
				return;
			}
			const buf = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, received);
			if (opts.verify) {
				try {
					opts.verify(req as R, res, buf, "utf-8");
				} catch (e) {
					next(bodyError(403, (e as Error)?.message ?? String(e), (e as { type?: string })?.type || "entity.verify.failed"));
					return;
				}
			}
			// iconv-lite's UTF-8 decoding (body-parser's) drops a leading BOM.
			let text = buf.toString("utf8");
			if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
			try {
				req.body = text.length === 0 ? {} : parseJson(text);
			} catch (e) {
				next(bodyError(400, (e as Error).message, "entity.parse.failed"));
				return;
			}
			next();
		};
		const onData = (chunk: Buffer) => {
			received += chunk.length;
			if (received > expected) finish(bodyError(400, "request size did not match content length", "request.size.invalid"));
			else chunks.push(chunk);
		};
		const onEnd = () => finish(received === expected ? undefined : bodyError(400, "request size did not match content length", "request.size.invalid"));
		const onAborted = () => finish(bodyError(400, "request aborted", "request.aborted"));
		const onError = (err: Error) => finish(Object.assign(err, { status: 400, statusCode: 400 }));
		req.on("data", onData);
		req.on("end", onEnd);
		req.on("aborted", onAborted);
		req.on("error", onError);
	};
}
