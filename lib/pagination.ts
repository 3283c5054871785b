/**
 * Paginated lists (decisions.md): `page` 1-based (default 1), `limit` default 10, max 100, and the
 * envelope `{ data, hasNextPage }`. A list asks the database for `limit + 1` rows; the extra row
 * only says whether there is a next page. `filters` and `sort` arrive as JSON strings in the query.
 */
import { badRequest } from "./errors";

export const DEFAULT_PAGE = 1;
export const DEFAULT_LIMIT = 10;
export const MAX_LIMIT = 100;
/** Beyond this a page number is abuse (offset scans), not navigation. */
export const MAX_PAGE = 100_000;

export interface Page<T> {
	data: T[];
	hasNextPage: boolean;
}

export interface PageWindow {
	page: number;
	limit: number;
	offset: number;
	/** Rows to fetch: one more than shown. */
	fetch: number;
}

/** Params schema fragment for `page` and `limit` (query strings, so converted). */
export const PAGE_PARAMS = {
	page: { type: "number", integer: true, min: 1, max: MAX_PAGE, convert: true, optional: true },
	limit: { type: "number", integer: true, min: 1, max: MAX_LIMIT, convert: true, optional: true },
} as const;

/**
 * Text filters of list routes (search, e-mail, ids...): any text without a NUL byte. The ORM
 * writes WHERE values into the statement's text, which SQLite's driver ends at a NUL (a 500), and
 * no stored value is looked for by one; such a filter is 400 `stringPattern`.
 */
export const FILTER_TEXT = /^[^\u0000]*$/;

export function pageWindow(page: number | undefined, limit: number | undefined): PageWindow {
	const p = page ?? DEFAULT_PAGE;
	const l = Math.min(limit ?? DEFAULT_LIMIT, MAX_LIMIT);
	return { page: p, limit: l, offset: (p - 1) * l, fetch: l + 1 };
}

/** The envelope from `limit + 1` fetched rows. */
export function toPage<R, T = R>(rows: R[], limit: number, map?: (row: R) => T): Page<T> {
	const shown = rows.slice(0, limit);
	return { data: map ? shown.map(map) : (shown as unknown as T[]), hasNextPage: rows.length > limit };
}

/** A JSON query parameter; malformed JSON is 400 with `errors[field] = "invalidJson"`. */
export function parseJsonParam(raw: string | undefined, field: string): unknown {
	if (raw === undefined || raw === "") return undefined;
	try {
		return JSON.parse(raw);
	} catch {
		throw badRequest("Validation failed", { [field]: "invalidJson" });
	}
}

export type SortOrder = "ASC" | "DESC";
export type SortSpec<C extends string> = Array<[C, SortOrder]>;

/**
 * `sort` as `[{ "orderBy": "createdAt", "order": "desc" }, ...]` (a single object is accepted
 * too), restricted to `columns`. Anything else is 400 with `errors.sort`.
 */
export function parseSort<C extends string>(raw: string | undefined, columns: readonly C[], fallback: SortSpec<C>): SortSpec<C> {
	const value = parseJsonParam(raw, "sort");
	if (value === undefined || value === null) return fallback;
	const items = Array.isArray(value) ? value : [value];
	if (items.length === 0) return fallback;
	if (items.length > columns.length) throw badRequest("Validation failed", { sort: "invalidSort" });
	const out: SortSpec<C> = [];
	for (const item of items) {
		if (!item || typeof item !== "object" || Array.isArray(item)) throw badRequest("Validation failed", { sort: "invalidSort" });
		const { orderBy, order } = item as { orderBy?: unknown; order?: unknown };
		if (typeof orderBy !== "string" || !(columns as readonly string[]).includes(orderBy)) {
			throw badRequest("Validation failed", { sort: "invalidSortColumn" });
		}
		const dir = order === undefined ? "asc" : typeof order === "string" ? order.toLowerCase() : "";
		if (dir !== "asc" && dir !== "desc") throw badRequest("Validation failed", { sort: "invalidSortOrder" });
		if (out.some(([c]) => c === orderBy)) throw badRequest("Validation failed", { sort: "invalidSort" });
		out.push([orderBy as C, dir === "asc" ? "ASC" : "DESC"]);
	}
	return out;
}

/** `filters` as a JSON object (or absent); its fields are checked by the list's own rules. */
export function parseFilterObject(raw: string | undefined): Record<string, unknown> {
	const value = parseJsonParam(raw, "filters");
	if (value === undefined || value === null) return {};
	if (typeof value !== "object" || Array.isArray(value)) throw badRequest("Validation failed", { filters: "invalidFilters" });
	return value as Record<string, unknown>;
}
