import { DEFAULT_LIMIT, MAX_LIMIT, pageWindow, parseFilterObject, parseJsonParam, parseSort, toPage } from "../../lib/pagination";

const COLUMNS = ["id", "email", "createdAt"] as const;

function errorsOf(fn: () => unknown): unknown {
	try {
		fn();
	} catch (err: any) {
		return { code: err.code, errors: err.data?.errors };
	}
	throw new Error("expected a throw");
}

describe("lib/pagination", () => {
	it("computes the window: 1-based page, default and maximum limit, one extra row", () => {
		expect(pageWindow(undefined, undefined)).toEqual({ page: 1, limit: DEFAULT_LIMIT, offset: 0, fetch: DEFAULT_LIMIT + 1 });
		expect(pageWindow(3, 20)).toEqual({ page: 3, limit: 20, offset: 40, fetch: 21 });
		expect(pageWindow(1, 1000).limit).toBe(MAX_LIMIT);
	});

	it("builds the envelope from limit + 1 rows", () => {
		expect(toPage([1, 2, 3], 2)).toEqual({ data: [1, 2], hasNextPage: true });
		expect(toPage([1, 2], 2)).toEqual({ data: [1, 2], hasNextPage: false });
		expect(toPage([], 2)).toEqual({ data: [], hasNextPage: false });
		expect(toPage([1, 2, 3], 2, n => `#${n}`)).toEqual({ data: ["#1", "#2"], hasNextPage: true });
	});

	it("parses JSON parameters and refuses malformed ones with 400", () => {
		expect(parseJsonParam(undefined, "x")).toBeUndefined();
		expect(parseJsonParam('{"a":1}', "x")).toEqual({ a: 1 });
		expect(errorsOf(() => parseJsonParam("{nope", "filters"))).toEqual({ code: 400, errors: { filters: "invalidJson" } });
	});

	it("parses sort against a whitelist of columns", () => {
		const fallback: Array<[(typeof COLUMNS)[number], "ASC" | "DESC"]> = [["id", "ASC"]];
		expect(parseSort(undefined, COLUMNS, fallback)).toBe(fallback);
		expect(parseSort("[]", COLUMNS, fallback)).toBe(fallback);
		expect(parseSort('[{"orderBy":"createdAt","order":"desc"},{"orderBy":"email"}]', COLUMNS, fallback)).toEqual([
			["createdAt", "DESC"],
			["email", "ASC"],
		]);
		expect(parseSort('{"orderBy":"email","order":"ASC"}', COLUMNS, fallback)).toEqual([["email", "ASC"]]);
		expect(errorsOf(() => parseSort('[{"orderBy":"passwordHash"}]', COLUMNS, fallback))).toEqual({ code: 400, errors: { sort: "invalidSortColumn" } });
		expect(errorsOf(() => parseSort('[{"orderBy":"email","order":"sideways"}]', COLUMNS, fallback))).toEqual({ code: 400, errors: { sort: "invalidSortOrder" } });
		expect(errorsOf(() => parseSort('["email"]', COLUMNS, fallback))).toEqual({ code: 400, errors: { sort: "invalidSort" } });
		expect(errorsOf(() => parseSort('[{"orderBy":"email"},{"orderBy":"email"}]', COLUMNS, fallback))).toEqual({ code: 400, errors: { sort: "invalidSort" } });
		expect(errorsOf(() => parseSort("[{", COLUMNS, fallback))).toEqual({ code: 400, errors: { sort: "invalidJson" } });
	});

	it("parses filters as an object only", () => {
		expect(parseFilterObject(undefined)).toEqual({});
		expect(parseFilterObject("null")).toEqual({});
		expect(parseFilterObject('{"role":"admin"}')).toEqual({ role: "admin" });
		for (const raw of ["[1]", '"x"', "5"]) expect(errorsOf(() => parseFilterObject(raw))).toEqual({ code: 400, errors: { filters: "invalidFilters" } });
	});
});
