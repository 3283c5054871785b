/**
 * The spec's reads that find nothing answer JSON `null` (200, `application/json`). moleculer-web
 * sends an action's `null` as an empty body, so such an action answers the text `null` with the
 * JSON content type instead: the gateway sends a string as it is. Only for actions the gateway
 * calls (an internal caller would get the string).
 */
import type { Context } from "moleculer";

export function jsonNull(ctx: Context<unknown, object>): string {
	(ctx.meta as { $responseType?: string }).$responseType = "application/json; charset=utf-8";
	return "null";
}
