/**
 * Telling every gateway that API keys changed (revoked, renamed, new webhook URL). Each gateway
 * caches key look-ups for 30 s. The `keys.changed` event tells every node (and any other
 * listener), but events are not acknowledged: a request reaching another node right after our
 * answer could still be served from its cache. So each gateway node is also asked directly
 * (`api.keysChanged`) and we wait for the answers. A node that does not answer within the timeout
 * holds the old answer for at most the cache's 30 s (logged).
 */
import type { Context, Logger, ServiceBroker } from "moleculer";

/** How long a change waits for each gateway node to drop its cached key look-ups. */
export const GATEWAY_ACK_TIMEOUT_MS = 2_000;

export async function announceKeysChanged(ctx: Context, broker: ServiceBroker, ids: number[], logger: Logger): Promise<void> {
	if (ids.length === 0) return;
	for (const id of ids) await ctx.broadcast("keys.changed", { id });
	const gateways = broker.registry
		.getServiceList({ onlyAvailable: true })
		.filter(s => s.name === "api")
		.map(s => s.nodeID ?? broker.nodeID);
	// One call per node: a gateway drops its whole key cache (it is keyed by credential digest).
	const params = ids.length === 1 ? { id: ids[0] } : {};
	const results = await Promise.allSettled([...new Set(gateways)].map(nodeID => ctx.call("api.keysChanged", params, { nodeID, timeout: GATEWAY_ACK_TIMEOUT_MS })));
	const failed = results.filter(r => r.status === "rejected").length;
	if (failed > 0) logger.warn(`keys.changed for key(s) ${ids.join(", ")}: ${failed} gateway node(s) did not acknowledge; their cache expires within 30 s`);
}
