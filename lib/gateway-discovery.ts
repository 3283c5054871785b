/**
 * Readiness that means reachable (docs/deployment.md "Health checks"): the `gateways` check of a
 * node offering services and the `services` check of a gateway (`api`) node.
 *
 * `gateways`: a node offering services is ready only once every gateway node it sees lists this
 * node (this very instance) and all its services as available, so a rolling restart never removes
 * the old core before the gateways route to the new one. Each gateway is asked over the
 * transporter with Moleculer's own `$node.list` and `$node.services` (on every node of every
 * version: no action of ours an older gateway would lack). A gateway's answer is kept by its
 * instance: once it listed this node, probes ask it nothing more; a gateway seen later (a new pod,
 * one restarted) is asked until it lists this node too. No gateway seen: ready, with the note
 * "no gateway seen" (a cluster being set up, or gateways started after the core as Compose does).
 * But not during the first heartbeat round after connecting (the transporter's heartbeat interval
 * and a second): a gateway whose INFO packet came late or was lost is known by its heartbeat by
 * then, so "no gateway seen" right after a start cannot mean "not discovered yet". A reconnect
 * starts the round again and forgets the answers (gateways may have dropped this node meanwhile).
 *
 * `services`: on a gateway node, the services it reaches now (with their nodes) and those its
 * routes lead to that no node offers. Advisory: a gateway whose services are away answers 503
 * with Retry-After itself, which serves clients better than a load balancer with no pod.
 */
import type { ServiceBroker } from "moleculer";

/** The gateway's service name (services/api.service.ts). */
export const GATEWAY_SERVICE = "api";

/** A failed check with what it found (shown in /readyz next to the error). */
export class CheckFailed extends Error {
	constructor(
		message: string,
		readonly detail: Record<string, unknown>,
	) {
		super(message);
	}
}

interface ListedService {
	name: string;
	fullName?: string;
	nodeID?: string;
}

interface ListedNode {
	id: string;
	instanceID?: string | null;
	available?: boolean;
}

const fullNameOf = (s: ListedService) => s.fullName || s.name;

/** The services this node offers to the gateways: its own, but the gateway and Moleculer's internal ones. */
export function offeredServices(broker: ServiceBroker): string[] {
	const names = broker.registry
		.getServiceList({ onlyLocal: true, skipInternal: true, grouping: false } as never)
		.map(s => s as ListedService)
		.filter(s => s.name !== GATEWAY_SERVICE)
		.map(fullNameOf);
	return [...new Set(names)].sort();
}

/** The other gateway nodes this node sees as available, with the instance each runs now. */
function gatewaysSeen(broker: ServiceBroker): Array<{ id: string; instanceID: string }> {
	const ids = new Set(
		broker.registry
			.getServiceList({ onlyAvailable: true, skipInternal: true, grouping: false } as never)
			.map(s => s as ListedService)
			.filter(s => s.name === GATEWAY_SERVICE && s.nodeID && s.nodeID !== broker.nodeID)
			.map(s => s.nodeID!),
	);
	return [...ids].sort().map(id => ({ id, instanceID: String((broker.registry.nodes.get(id) as ListedNode | undefined)?.instanceID ?? "") }));
}

/** Whether the gateway `nodeID` knows this node's running instance, available, with each of `services`. */
async function gatewayLists(broker: ServiceBroker, nodeID: string, services: readonly string[], timeoutMs: number): Promise<string[]> {
	const opts = { nodeID, timeout: timeoutMs, retries: 0 };
	const [nodes, listed] = await Promise.all([
		broker.call("$node.list", { onlyAvailable: true }, opts) as Promise<ListedNode[]>,
		broker.call("$node.services", { onlyAvailable: true, skipInternal: true, grouping: false }, opts) as Promise<ListedService[]>,
	]);
	// The same node id from an earlier run (a restart with a fixed NODE_ID) is not this node.
	const me = nodes.find(n => n.id === broker.nodeID);
	if (!me || me.instanceID !== broker.instanceID) return [...services];
	const mine = new Set(listed.filter(s => s.nodeID === broker.nodeID).map(fullNameOf));
	return services.filter(s => !mine.has(s));
}

interface DiscoveryState {
	/** Gateway node id -> the gateway instance and our services it was seen listing. */
	confirmed: Map<string, string>;
	/** When the transporter last connected (null: not connected). */
	connectedAt: number | null;
}

const states = new WeakMap<ServiceBroker, DiscoveryState>();

/**
 * This node's discovery state, followed from the transporter's connects and disconnects once
 * asked for (startHealthServer asks before the broker starts). Asked for later, on a node
 * connected already, its round counts from then: later than the connect, never earlier.
 */
export function discoveryOf(broker: ServiceBroker): DiscoveryState {
	let state = states.get(broker);
	if (state) return state;
	const s: DiscoveryState = { confirmed: new Map(), connectedAt: broker.transit?.connected ? Date.now() : null };
	const bus = (broker as unknown as { localBus: { on(event: string, fn: () => void): void } }).localBus;
	bus.on("$transporter.connected", () => {
		s.connectedAt = Date.now();
		s.confirmed.clear();
	});
	bus.on("$transporter.disconnected", () => {
		s.connectedAt = null;
	});
	states.set(broker, (state = s));
	return state;
}

/** One heartbeat round (Moleculer sends one each interval, give or take 0.5 s) and a second to get the INFO it asks for. */
export function discoveryRoundMs(broker: ServiceBroker): number {
	const interval = Number((broker.options as { heartbeatInterval?: number }).heartbeatInterval);
	return (Number.isFinite(interval) && interval > 0 ? interval : 5) * 1000 + 1000;
}

/**
 * The `gateways` check (null on a node offering no service but the gateway): resolves with the
 * gateways that route here, throws CheckFailed naming those that do not yet. Asks only gateways
 * not confirmed before, in parallel.
 */
export function gatewaysProbe(broker: ServiceBroker, timeoutMs: number): (() => Promise<Record<string, unknown>>) | null {
	if (offeredServices(broker).length === 0) return null;
	return async () => {
		const services = offeredServices(broker);
		const state = discoveryOf(broker);
		const { confirmed } = state;
		const seen = gatewaysSeen(broker);
		// A gateway on this node routes to its local services at once.
		const local = broker.getLocalService(GATEWAY_SERVICE) ? [broker.nodeID] : [];
		const waiting: string[] = [];
		const problems: string[] = [];
		await Promise.all(
			seen.map(async gw => {
				const key = `${gw.instanceID}|${services.join(",")}`;
				if (confirmed.get(gw.id) === key) return;
				try {
					const missing = await gatewayLists(broker, gw.id, services, timeoutMs);
					if (missing.length === 0) {
						confirmed.set(gw.id, key);
						return;
					}
					problems.push(`gateway ${gw.id} has not discovered ${missing.length === services.length ? "this node" : missing.join(", ")} yet`);
				} catch (err) {
					problems.push(`gateway ${gw.id} did not answer (${(err as Error).message || String(err)})`);
				}
				waiting.push(gw.id);
			}),
		);
		// Gateways gone from the registry need not be remembered.
		const ids = new Set(seen.map(g => g.id));
		for (const id of confirmed.keys()) if (!ids.has(id)) confirmed.delete(id);
		const gateways = [...local, ...seen.map(g => g.id).filter(id => !waiting.includes(id))];
		if (problems.length) throw new CheckFailed(problems.sort().join("; "), { gateways, waiting: waiting.sort() });
		const sinceConnect = state.connectedAt === null ? null : Date.now() - state.connectedAt;
		if (sinceConnect === null) throw new CheckFailed("the transporter is not connected", { gateways });
		const round = discoveryRoundMs(broker);
		if (sinceConnect < round) throw new CheckFailed(`discovering the cluster (one heartbeat round after connecting, ${Math.ceil((round - sinceConnect) / 1000)} s more)`, { gateways });
		return gateways.length ? { gateways } : { gateways, note: "no gateway seen" };
	};
}

/** The services whose actions the local gateway's routes lead to (moleculer-web's aliases). */
function routedServices(broker: ServiceBroker): string[] {
	const gateway = broker.getLocalService(GATEWAY_SERVICE) as unknown as { aliases?: Array<{ action?: string | null }> } | undefined;
	const out = new Set<string>();
	for (const alias of gateway?.aliases ?? []) {
		if (typeof alias.action === "string" && alias.action.includes(".")) out.add(alias.action.slice(0, alias.action.lastIndexOf(".")));
	}
	out.delete(GATEWAY_SERVICE);
	return [...out];
}

/**
 * The `services` check of a gateway node (null elsewhere): each service it reaches with the nodes
 * offering it; fails (advisory) while none is reached or a service its routes lead to is away.
 */
export function servicesProbe(broker: ServiceBroker): (() => Record<string, unknown>) | null {
	if (!broker.getLocalService(GATEWAY_SERVICE)) return null;
	return () => {
		const reached: Record<string, string[]> = {};
		for (const s of broker.registry.getServiceList({ onlyAvailable: true, skipInternal: true, grouping: false } as never) as ListedService[]) {
			const name = fullNameOf(s);
			if (s.name === GATEWAY_SERVICE || !s.nodeID) continue;
			(reached[name] ??= []).push(s.nodeID);
		}
		const services = Object.fromEntries(Object.entries(reached).sort(([a], [b]) => a.localeCompare(b)).map(([name, nodes]) => [name, nodes.sort()]));
		const away = routedServices(broker).filter(s => !(s in reached)).sort();
		if (away.length) throw new CheckFailed(`no node offers ${away.join(", ")}`, { services, away });
		if (Object.keys(services).length === 0) throw new CheckFailed("no service reached yet", { services });
		return { services };
	};
}
