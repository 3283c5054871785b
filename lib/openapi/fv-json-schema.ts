/**
 * fastest-validator rules as JSON Schema (2020-12, the dialect of OpenAPI 3.1), for the rule types
 * and options the actions' `params` use. No maintained converter exists on npm; this one covers
 * what the project's schemas declare and refuses the rest (a new rule type must be added here,
 * never silently documented as "anything").
 *
 * The document says what the gateway accepts on the wire: `convert: true` numbers and booleans
 * also arrive as strings (query parameters), so they are documented as either.
 */

export type JsonSchema = Record<string, unknown>;
type Rule = Record<string, unknown> | string | Rule[];

/** Keys of a params object that are fastest-validator options, not fields. */
const META_KEYS = new Set(["$$strict", "$$async", "$$root"]);

function regexSource(pattern: unknown): string | undefined {
	if (pattern instanceof RegExp) return pattern.source;
	return typeof pattern === "string" ? pattern : undefined;
}

function bounded(schema: JsonSchema, rule: Record<string, unknown>, minKey: string, maxKey: string): JsonSchema {
	if (typeof rule.min === "number") schema[minKey] = rule.min;
	if (typeof rule.max === "number") schema[maxKey] = rule.max;
	return schema;
}

/** `"string|optional|max:20"` shorthand into the object form. */
function expandShorthand(rule: string): Record<string, unknown> {
	const [type, ...opts] = rule.split("|");
	const out: Record<string, unknown> = { type };
	for (const opt of opts) {
		const [k, v] = opt.split(":");
		out[k] = v === undefined ? true : Number.isFinite(Number(v)) ? Number(v) : v === "true" ? true : v === "false" ? false : v;
	}
	return out;
}

export function isOptional(rule: Rule): boolean {
	if (typeof rule === "string") return expandShorthand(rule).optional === true;
	if (Array.isArray(rule)) return rule.some(isOptional);
	return rule.optional === true || rule.default !== undefined;
}

/** One rule as a JSON Schema. Throws on a rule type it does not know. */
export function ruleToJsonSchema(input: Rule): JsonSchema {
	if (Array.isArray(input)) return { anyOf: input.map(ruleToJsonSchema) };
	const rule = typeof input === "string" ? expandShorthand(input) : input;
	const type = rule.type;
	let schema: JsonSchema;
	switch (type) {
		case "string": {
			schema = bounded({ type: "string" }, rule, "minLength", "maxLength");
			if (rule.empty === false && schema.minLength === undefined) schema.minLength = 1;
			const pattern = regexSource(rule.pattern);
			if (pattern) schema.pattern = pattern;
			if (Array.isArray(rule.enum)) schema.enum = rule.enum;
			break;
		}
		case "number": {
			const num: JsonSchema = bounded({ type: rule.integer ? "integer" : "number" }, rule, "minimum", "maximum");
			if (rule.positive) num.exclusiveMinimum = 0;
			// Converted numbers also arrive as strings (query strings, form fields).
			schema = rule.convert ? { anyOf: [num, { type: "string", pattern: rule.integer ? "^-?[0-9]+$" : "^-?[0-9]+(\\.[0-9]+)?$" }] } : num;
			break;
		}
		case "boolean":
			schema = rule.convert ? { anyOf: [{ type: "boolean" }, { type: "string", enum: ["true", "false", "1", "0", "on", "off"] }, { type: "integer", enum: [0, 1] }] } : { type: "boolean" };
			break;
		case "uuid":
			schema = { type: "string", format: "uuid" };
			break;
		case "email":
			schema = bounded({ type: "string", format: "email" }, rule, "minLength", "maxLength");
			break;
		case "url":
			schema = bounded({ type: "string", format: "uri" }, rule, "minLength", "maxLength");
			break;
		case "enum":
			schema = { enum: [...(rule.values as unknown[])] };
			break;
		case "equal":
			schema = { const: rule.value };
			break;
		case "any":
			schema = {};
			break;
		case "array": {
			schema = bounded({ type: "array" }, rule, "minItems", "maxItems");
			if (rule.items !== undefined) schema.items = ruleToJsonSchema(rule.items as Rule);
			if (rule.unique) schema.uniqueItems = true;
			break;
		}
		case "object": {
			schema = { type: "object" };
			if (rule.props && typeof rule.props === "object") {
				Object.assign(schema, paramsToJsonSchema(rule.props as Record<string, Rule>));
				if (rule.strict === true) schema.additionalProperties = false;
			}
			break;
		}
		case "record": {
			schema = { type: "object" };
			if (rule.value) schema.additionalProperties = ruleToJsonSchema(rule.value as Rule);
			if (rule.key && typeof rule.key === "object") schema.propertyNames = ruleToJsonSchema(rule.key as Rule);
			break;
		}
		case "multi":
			schema = { anyOf: (rule.rules as Rule[]).map(ruleToJsonSchema) };
			break;
		default:
			throw new Error(`No JSON Schema for the fastest-validator rule type ${JSON.stringify(type)}`);
	}
	if (rule.nullable === true) schema = schema.type && !schema.anyOf ? { ...schema, type: [schema.type as string, "null"] } : { anyOf: [schema, { type: "null" }] };
	if (rule.default !== undefined && typeof rule.default !== "function") schema.default = rule.default;
	return schema;
}

/**
 * A whole `params` object as an object schema. `$$strict: true` refuses unknown fields;
 * `$$strict: "remove"` drops them (accepted, so not refused by the document either).
 */
export function paramsToJsonSchema(params: Record<string, Rule>): JsonSchema {
	const properties: Record<string, JsonSchema> = {};
	const required: string[] = [];
	for (const [name, rule] of Object.entries(params)) {
		if (META_KEYS.has(name)) continue;
		properties[name] = ruleToJsonSchema(rule);
		if (!isOptional(rule)) required.push(name);
	}
	const schema: JsonSchema = { type: "object", properties };
	if (required.length) schema.required = required;
	if ((params as Record<string, unknown>).$$strict === true) schema.additionalProperties = false;
	return schema;
}
