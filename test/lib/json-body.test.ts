/**
 * lib/json-body.ts: its short path answers what body-parser's json (the gateway's parser before,
 * and still its fallback) answers for the same request: the same body or the same error status
 * and type, over plain, BOM, invalid UTF-8, malformed, non-object, `__proto__` and empty bodies.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import ApiGateway from "moleculer-web";
import { dropProtoKeys, jsonBodyCounts, jsonBodyParser } from "../../lib/json-body";

type Mw = (req: http.IncomingMessage & { body?: unknown }, res: http.ServerResponse, next: (err?: unknown) => void) => void;

const LIMIT = 1024;
const verified: Buffer[] = [];
const verify = (req: http.IncomingMessage, _res: http.ServerResponse, buf: Buffer) => {
	if (req.headers["x-verify"] !== undefined) verified.push(Buffer.from(buf));
};
const parsers: Record<string, Mw> = {
	short: jsonBodyParser({ limit: LIMIT, verify }),
	bodyParser: ApiGateway.bodyParser.json({ strict: false, limit: LIMIT, inflate: false, reviver: dropProtoKeys, verify }) as Mw,
};

let server: http.Server;
let port = 0;

beforeAll(async () => {
	server = http.createServer((req, res) => {
		const parse = parsers[(req.url || "/").slice(1)];
		parse(req, res, err => {
			const e = err as { status?: number; type?: string } | undefined;
			const body = (req as { body?: unknown }).body;
			const out = e
				? { error: { status: e.status, type: e.type } }
				: { body, protoKey: body !== null && typeof body === "object" && Object.prototype.hasOwnProperty.call(body, "__proto__") };
			res.writeHead(200, { "content-type": "application/json" });
			res.end(JSON.stringify(out));
		});
	});
	await new Promise<void>(resolve => server.listen(0, "127.0.0.1", resolve));
	port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
	await new Promise(resolve => server.close(resolve));
});

function send(path: string, body: Buffer, headers: Record<string, string>): Promise<unknown> {
	return new Promise((resolve, reject) => {
		const req = http.request({ host: "127.0.0.1", port, path, method: "POST", headers: { "content-length": String(body.length), ...headers } }, res => {
			const chunks: Buffer[] = [];
			res.on("data", c => chunks.push(c));
			res.on("end", () => resolve(JSON.parse(Buffer.concat(chunks).toString("utf8"))));
		});
		req.on("error", reject);
		req.end(body);
	});
}

const JSON_TYPE = { "content-type": "application/json" };
const cases: Array<[string, Buffer, Record<string, string>, unknown]> = [
	["an object", Buffer.from('{"amount":"12.50","metadata":{"orderId":"1234"}}'), JSON_TYPE, { body: { amount: "12.50", metadata: { orderId: "1234" } }, protoKey: false }],
	["charset=utf-8", Buffer.from('{"a":"é"}'), { "content-type": "application/json; charset=utf-8" }, { body: { a: "é" }, protoKey: false }],
	["a leading BOM", Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"a":1}')]), JSON_TYPE, { body: { a: 1 }, protoKey: false }],
	["invalid UTF-8 in a string", Buffer.concat([Buffer.from('{"a":"'), Buffer.from([0xff, 0xc3, 0x28, 0xe2, 0x82]), Buffer.from('"}')]), JSON_TYPE, { body: { a: "\ufffd\ufffd(\ufffd" }, protoKey: false }],
	["malformed JSON", Buffer.from('{"a":'), JSON_TYPE, { error: { status: 400, type: "entity.parse.failed" } }],
	["whitespace only", Buffer.from("   "), JSON_TYPE, { error: { status: 400, type: "entity.parse.failed" } }],
	["a string", Buffer.from('"text"'), JSON_TYPE, { body: "text", protoKey: false }],
	["an array", Buffer.from("[1,2]"), JSON_TYPE, { body: [1, 2], protoKey: false }],
	["a __proto__ key", Buffer.from('{"__proto__":{"admin":true},"b":{"__proto__":1,"c":2}}'), JSON_TYPE, { body: { b: { c: 2 } }, protoKey: false }],
	["an escaped __proto__ key", Buffer.from('{"\\u005f_proto__":{"admin":true},"d":"\\u0041"}'), JSON_TYPE, { body: { d: "A" }, protoKey: false }],
];

describe("jsonBodyParser", () => {
	it.each(cases)("answers what body-parser answers for %s, on the short path", async (_name, body, headers, expected) => {
		const before = jsonBodyCounts.short;
		const short = await send("/short", body, headers);
		expect(jsonBodyCounts.short).toBe(before + 1);
		const reference = await send("/bodyParser", body, headers);
		expect(short).toEqual(reference);
		expect(short).toEqual(expected);
	});

	it("passes other requests to body-parser: a body over the limit, an empty body, compressed, another charset, another type", async () => {
		const other: Array<[Buffer, Record<string, string>, unknown]> = [
			[Buffer.from(`{"a":"${"x".repeat(LIMIT)}"}`), JSON_TYPE, { error: { status: 413, type: "entity.too.large" } }],
			[Buffer.alloc(0), JSON_TYPE, { body: {}, protoKey: false }],
			[Buffer.from('{"a":1}'), { ...JSON_TYPE, "content-encoding": "gzip" }, { error: { status: 415, type: "encoding.unsupported" } }],
			[Buffer.from('{"a":1}'), { "content-type": "application/json; charset=latin1" }, { error: { status: 415, type: "charset.unsupported" } }],
			[Buffer.from('{"a":1}'), { "content-type": "application/vnd.api+json" }, { protoKey: false }],
		];
		for (const [body, headers, expected] of other) {
			const before = jsonBodyCounts.short;
			const short = await send("/short", body, headers);
			expect(jsonBodyCounts.short).toBe(before);
			expect(short).toEqual(await send("/bodyParser", body, headers));
			expect(short).toEqual(expected);
		}
	});

	it("gives verify the exact bytes received", async () => {
		verified.length = 0;
		const body = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"a": 1}')]);
		await send("/short", body, { ...JSON_TYPE, "x-verify": "1" });
		await send("/bodyParser", body, { ...JSON_TYPE, "x-verify": "1" });
		expect(verified).toEqual([body, body]);
	});
});
