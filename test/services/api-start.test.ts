/**
 * Start-up (docs/gateway.md "Start-up"): the gateway answers only once the node is ready. While a
 * local service is still starting, a real route is never 404 "Not Found" (which a client reads as
 * "no such thing" and a script waiting for GET /api/v1/ took as "up"): the port stays closed, and
 * the first answer is the real one.
 */
import type { ServiceBroker } from "moleculer";
import { availableServices, loadServiceSchema } from "../../lib/node";
import { startNode, TestNode } from "../helpers/harness";
import { until } from "../helpers/until";
import { freePort } from "../cluster/cluster.helpers";
import { PAYMENTS_SERVICES } from "../e2e/payments.helpers";

interface Probe {
	method: string;
	path: string;
	/** What the route answers once the node is up (this request carries no credential). */
	real: number;
	body?: string;
}

interface Answer {
	request: string;
	status: number;
	retryAfter: string | null;
}

/** A GET the start-up scripts wait for, a route of the slow service, and a DELETE with a JSON body (issue 17, item 15). */
const PROBES: Probe[] = [
	{ method: "GET", path: "/api/v1/", real: 200 },
	{ method: "GET", path: "/api/v1/payments/networks", real: 200 },
	{ method: "DELETE", path: "/api/v1/payments/links/00000000-0000-4000-8000-000000000000", real: 401, body: "{}" },
];

describe("gateway start-up", () => {
	it("answers no real route with 404 while a local service is still starting", async () => {
		const port = await freePort();
		let release!: () => void;
		const gate = new Promise<void>(resolve => (release = resolve));
		let networksStarting = false;
		// The networks service of this node takes its time to start (a slow database, a migration).
		const slowNetworks = (broker: ServiceBroker) => {
			broker.createService({
				name: "networks",
				mixins: [loadServiceSchema(availableServices().networks)],
				async started() {
					networksStarting = true;
					await gate;
				},
			});
		};
		const starting = startNode({ env: { PORT: String(port) }, services: PAYMENTS_SERVICES.filter(s => s !== "networks"), beforeStart: slowNetworks });
		starting.catch(() => undefined);

		const answers: Answer[] = [];
		async function poll(p: Probe): Promise<number> {
			try {
				const res = await fetch(`http://127.0.0.1:${port}${p.path}`, { method: p.method, ...(p.body ? { body: p.body, headers: { "Content-Type": "application/json" } } : {}) });
				await res.text();
				const ok = res.status === p.real || (res.status === 503 && res.headers.get("retry-after") !== null);
				if (!ok) answers.push({ request: `${p.method} ${p.path}`, status: res.status, retryAfter: res.headers.get("retry-after") });
				return res.status;
			} catch {
				return 0; // not listening yet
			}
		}

		let node: TestNode | null = null;
		try {
			await until("the networks service starting", () => networksStarting, 60_000);
			let polls = 0;
			await until("40 rounds of requests while networks is starting", async () => {
				for (const p of PROBES) await poll(p);
				return ++polls >= 40;
			}, 60_000);
			release();
			node = await starting;
			for (const p of PROBES) await until(`${p.method} ${p.path} answering`, async () => (await poll(p)) === p.real, 30_000);
			// Only the real answer, or 503 with Retry-After; never 404 for a route that exists.
			expect(answers).toEqual([]);
		} finally {
			release();
			await (node ?? (await starting.catch(() => null)))?.stop();
		}
	}, 180_000);
});
