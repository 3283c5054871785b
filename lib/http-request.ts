/** Small facts of an incoming HTTP request shared by the gateway and the pages it serves. */
import type { IncomingMessage } from "node:http";

/** A request header's first value when it is present and at most `maxLength` characters; else undefined. */
export function requestHeader(req: IncomingMessage, name: string, maxLength = 2048): string | undefined {
	const value = req.headers[name];
	const first = Array.isArray(value) ? value[0] : value;
	return typeof first === "string" && first && first.length <= maxLength ? first : undefined;
}

/** The status of an error (`code`), 500 when it has none. */
export function statusOf(err: unknown): number {
	const code = Number((err as { code?: unknown })?.code);
	return Number.isInteger(code) ? code : 500;
}
