/**
 * The spec's paginated lists: `page` (1-based) and `limit` in the query, `{ data, hasNextPage }`
 * in the answer. `paginate` walks the pages as an async iterator, one request per page, only as far
 * as the caller reads (a `break` stops it).
 */
import type { Page } from "./types";

export async function* paginate<T>(fetchPage: (page: number) => Promise<Page<T>>, opts: { firstPage?: number } = {}): AsyncGenerator<T> {
	let page = opts.firstPage ?? 1;
	for (;;) {
		const answer = await fetchPage(page);
		if (!answer || !Array.isArray(answer.data) || typeof answer.hasNextPage !== "boolean") {
			throw new TypeError(`Page ${page} is not a paginated list ({ data, hasNextPage })`);
		}
		yield* answer.data;
		if (!answer.hasNextPage || answer.data.length === 0) return;
		page++;
	}
}

/** Every item of a paginated list in one array (for small lists; prefer iterating). */
export async function collect<T>(items: AsyncIterable<T>, max = Infinity): Promise<T[]> {
	const out: T[] = [];
	for await (const item of items) {
		out.push(item);
		if (out.length >= max) break;
	}
	return out;
}
