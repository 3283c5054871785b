import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import Validator from "fastest-validator";
import { paramsToJsonSchema, ruleToJsonSchema } from "../../../lib/openapi/fv-json-schema";

const ajv = new Ajv2020({ strict: false });
addFormats(ajv);
const fv = new Validator();

/** The converted schema and fastest-validator agree on what is valid. */
function agree(params: Record<string, unknown>, samples: unknown[]) {
	const check = fv.compile(params as never);
	const validate = ajv.compile(paramsToJsonSchema(params as never));
	for (const sample of samples) {
		const copy = JSON.parse(JSON.stringify(sample));
		expect([JSON.stringify(sample), validate(sample)]).toEqual([JSON.stringify(sample), check(copy) === true]);
	}
}

describe("fastest-validator rules as JSON Schema", () => {
	it("strings: bounds, pattern, enum", () => {
		expect(ruleToJsonSchema({ type: "string", min: 1, max: 20, pattern: /^[A-Z]+$/ })).toEqual({ type: "string", minLength: 1, maxLength: 20, pattern: "^[A-Z]+$" });
		agree({ code: { type: "string", min: 2, max: 4, pattern: /^[A-Z]+$/ } }, [{ code: "AB" }, { code: "A" }, { code: "ABCDE" }, { code: "ab" }, { code: 12 }, {}]);
	});

	it("numbers: integer, bounds, positive, convert (strings accepted as well)", () => {
		expect(ruleToJsonSchema({ type: "number", integer: true, min: 1, max: 100 })).toEqual({ type: "integer", minimum: 1, maximum: 100 });
		expect(ruleToJsonSchema({ type: "number", positive: true })).toEqual({ type: "number", exclusiveMinimum: 0 });
		const converted = ajv.compile(ruleToJsonSchema({ type: "number", integer: true, convert: true }));
		expect([converted(5), converted("5"), converted("5.5"), converted("x")]).toEqual([true, true, false, false]);
		agree({ n: { type: "number", integer: true, min: 1, max: 100 } }, [{ n: 1 }, { n: 0 }, { n: 101 }, { n: 1.5 }, { n: "1" }]);
	});

	it("enum, uuid, email, url, boolean", () => {
		agree({ s: { type: "enum", values: ["a", "b"] } }, [{ s: "a" }, { s: "c" }]);
		agree({ id: { type: "uuid" } }, [{ id: "6f1c6c2e-4a4b-4d55-9b9e-1b2f3c4d5e6f" }, { id: "nope" }]);
		agree({ e: { type: "email" } }, [{ e: "a@example.com" }, { e: "not-an-email" }]);
		agree({ u: { type: "url" } }, [{ u: "https://shop.example.com/x" }, { u: "nope" }]);
		agree({ b: { type: "boolean" } }, [{ b: true }, { b: "true" }]);
		const converted = ajv.compile(ruleToJsonSchema({ type: "boolean", convert: true }));
		expect([converted(true), converted("true"), converted("maybe")]).toEqual([true, true, false]);
	});

	it("optional and required fields, nullable, defaults", () => {
		const schema = paramsToJsonSchema({ a: { type: "string" }, b: { type: "string", optional: true }, c: { type: "number", default: 10 } });
		expect(schema.required).toEqual(["a"]);
		expect((schema.properties as Record<string, unknown>).c).toEqual({ type: "number", default: 10 });
		expect(ruleToJsonSchema({ type: "string", nullable: true })).toEqual({ type: ["string", "null"] });
		agree({ a: { type: "string", nullable: true } }, [{ a: null }, { a: "x" }, { a: 1 }]);
	});

	it("arrays, objects with props, strict objects, records, multi", () => {
		agree({ list: { type: "array", min: 1, max: 2, items: { type: "string", max: 3 } } }, [{ list: ["a"] }, { list: [] }, { list: ["a", "b", "c"] }, { list: ["abcd"] }]);
		agree({ o: { type: "object", props: { x: { type: "number" } } } }, [{ o: { x: 1 } }, { o: {} }, { o: { x: "1" } }]);
		agree({ o: { type: "object", strict: true, props: { x: { type: "number" } } } }, [{ o: { x: 1 } }, { o: { x: 1, y: 2 } }]);
		agree({ r: { type: "record", key: { type: "string", max: 5 }, value: { type: "string" } } }, [{ r: { a: "x" } }, { r: { a: 1 } }]);
		agree({ m: { type: "multi", rules: [{ type: "number" }, { type: "string", max: 3 }] } }, [{ m: 1 }, { m: "abc" }, { m: "abcd" }, { m: true }]);
	});

	it("$$strict: true closes the object; $$strict: \"remove\" accepts (and drops) unknown fields", () => {
		expect(paramsToJsonSchema({ $$strict: true, a: { type: "string" } } as never).additionalProperties).toBe(false);
		expect(paramsToJsonSchema({ $$strict: "remove", a: { type: "string" } } as never).additionalProperties).toBeUndefined();
		agree({ $$strict: true, a: { type: "string" } }, [{ a: "x" }, { a: "x", b: 1 }]);
	});

	it("shorthand strings", () => {
		expect(paramsToJsonSchema({ a: "string|optional|max:5" } as never)).toEqual({ type: "object", properties: { a: { type: "string", maxLength: 5 } } });
	});

	it("refuses a rule type it does not know instead of documenting it as anything", () => {
		expect(() => ruleToJsonSchema({ type: "luhn" })).toThrow(/luhn/);
	});
});
