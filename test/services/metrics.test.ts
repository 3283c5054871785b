/**
 * The gateway's metrics as Prometheus reads them: nodes started with METRICS=true, `/metrics`
 * scraped over HTTP. Intents created (API, pay page; replays and refusals count nothing), credits
 * and settled intents once per transfer, webhook attempts by outcome with their latency, the
 * outbox backlog, and on a real anvil node the watcher gauges and the sweep outcomes.
 */
import { parseEther, Wallet } from "ethers";
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { createMerchant, IDS, intentBody, Merchant, openCheckout, PAYMENTS_SERVICES, sandboxMerchant, startPaymentsNode } from "../e2e/payments.helpers";
import { Anvil, freePort, startAnvil } from "../helpers/anvil";
import { startNode, TestNode } from "../helpers/harness";
import { watchNetworks } from "../helpers/watched";
import { until } from "../helpers/until";
import { startReceiver, WebhookReceiver } from "../helpers/webhook-receiver";

jest.setTimeout(120_000);

interface Sample {
	name: string;
	labels: Record<string, string>;
	value: number;
}

/** One scrape of a node's `/metrics`, in Prometheus' text format. */
class Scrape {
	readonly samples: Sample[] = [];
	readonly types = new Map<string, string>();

	constructor(readonly text: string) {
		for (const line of text.split("\n")) {
			const type = /^# TYPE (\S+) (\S+)$/.exec(line);
			if (type) this.types.set(type[1], type[2]);
			const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
			if (!m) continue;
			const labels = Object.fromEntries([...(m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map(l => [l[1], l[2]]));
			this.samples.push({ name: m[1], labels, value: Number(m[3]) });
		}
	}

	/** The series of `name` whose labels include `labels`. */
	series(name: string, labels: Record<string, string> = {}): Sample[] {
		return this.samples.filter(s => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
	}

	/** The value of the one matching series; undefined when the node exports none. */
	value(name: string, labels: Record<string, string> = {}): number | undefined {
		const found = this.series(name, labels);
		if (found.length > 1) throw new Error(`${found.length} series of ${name} match ${JSON.stringify(labels)}`);
		return found[0]?.value;
	}
}

async function scrape(port: number): Promise<Scrape> {
	const res = await fetch(`http://127.0.0.1:${port}/metrics`);
	expect(res.status).toBe(200);
	return new Scrape(await res.text());
}

/** Labels the gateway's own metrics may carry (besides the reporter's namespace and nodeID): bounded sets only. */
const ALLOWED_LABELS = new Set(["namespace", "nodeID", "mode", "network", "outcome", "scope", "le", "service"]);
const OWN_PREFIXES = ["payments_", "webhooks_", "watcher_", "sweeps_"];

function expectBoundedLabels(s: Scrape): void {
	for (const sample of s.samples.filter(x => OWN_PREFIXES.some(p => x.name.startsWith(p)))) {
		for (const [key, v] of Object.entries(sample.labels)) {
			expect(ALLOWED_LABELS.has(key)).toBe(true);
			// No id, address or URL in a value.
			expect(v).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}|0x[0-9a-fA-F]{6,}|:\/\//);
		}
	}
}

const drain = (node: TestNode) => node.broker.call("webhooks.drain");

describe("metrics of a payments and webhooks node", () => {
	let node: TestNode;
	let port: number;
	let alice: Merchant;
	let receiver: WebhookReceiver;
	let hooked: { key: { key: string; secret: string } };

	beforeAll(async () => {
		port = await freePort();
		receiver = await startReceiver();
		node = await startNode({
			services: [...PAYMENTS_SERVICES, "webhooks"],
			// The dispatcher runs when the test drains it; a failed delivery gets a second and last attempt 10 ms later.
			env: { METRICS: "true", METRICS_PORT: String(port), WEBHOOK_POLL_MS: "0", WEBHOOK_MAX_ATTEMPTS: "2", WEBHOOK_BACKOFF_MS: "10" },
		});
		alice = await createMerchant(node);
		hooked = await sandboxMerchant(node, receiver.url);
		// The live intent below pays on Ethereum: a live payment needs a watcher following its network (test/helpers/watched.ts).
		await watchNetworks(node, ["ethereum"]);
	});
	afterAll(async () => {
		await node?.stop();
		await receiver?.close();
	});

	it("exports nothing when METRICS is off", async () => {
		const offPort = await freePort();
		const off = await startNode({ services: ["networks"], env: { METRICS_PORT: String(offPort) } });
		try {
			await expect(fetch(`http://127.0.0.1:${offPort}/metrics`)).rejects.toThrow();
		} finally {
			await off.stop();
		}
	});

	it("counts intents created by mode, once per committed intent: a replay and a refused request count nothing", async () => {
		const before = await scrape(port);
		// Shown at 0 from the start, typed as counters.
		expect(before.value("payments_intents_created", { mode: "sandbox" })).toBe(0);
		expect(before.value("payments_intents_created", { mode: "live" })).toBe(0);
		expect(before.types.get("payments_intents_created")).toBe("counter");

		for (let i = 0; i < 2; i++) expect((await node.http("POST", "/payment_intents", { key: alice.sandboxKey, body: intentBody() })).status).toBe(200);
		const live = await node.http("POST", "/payment_intents", { key: alice.liveKey, body: intentBody({ tokenId: IDS.ethereumEth, networkId: IDS.ethereum }) });
		expect(live.status).toBe(200);
		// The same Idempotency-Key twice: one intent, the second answer is the stored one.
		const headers = { "Idempotency-Key": "metrics-once" };
		const first = await node.http("POST", "/payment_intents", { key: alice.sandboxKey, body: intentBody(), headers });
		const replay = await node.http("POST", "/payment_intents", { key: alice.sandboxKey, body: intentBody(), headers });
		expect(replay.headers.get("idempotent-replayed")).toBe("true");
		expect(replay.body.id).toBe(first.body.id);
		expect((await node.http("POST", "/payment_intents", { key: alice.sandboxKey, body: intentBody({ payment_method_types: ["card"] }) })).status).toBe(400);

		const after = await scrape(port);
		expect(after.value("payments_intents_created", { mode: "sandbox" })).toBe(3);
		expect(after.value("payments_intents_created", { mode: "live" })).toBe(1);
		expect(after.value("payments_intents_created", { mode: "sandbox", nodeID: node.broker.nodeID })).toBe(3);
		expectBoundedLabels(after);
	});

	it("counts the intent the pay page opens for a link, once", async () => {
		const link = await node.http("POST", "/payments/links", { token: alice.token, body: { title: "T-shirt", amount: "25", tokenId: IDS.sepoliaEth, networkId: IDS.sepolia } });
		expect(link.status).toBe(201);
		const before = (await scrape(port)).value("payments_intents_created", { mode: "sandbox" })!;
		expect((await node.http("POST", `/pay/${link.body.slug}/confirm`)).status).toBe(200);
		// Confirming again confirms the same intent.
		expect((await node.http("POST", `/pay/${link.body.slug}/confirm`)).status).toBe(200);
		expect((await scrape(port)).value("payments_intents_created", { mode: "sandbox" })).toBe(before + 1);
	});

	it("counts a credited transfer and the intent it settles once, however often the same transfer is reported", async () => {
		const network = { network: "ethereum-sepolia" };
		const counts = async () => {
			const s = await scrape(port);
			return { credited: s.value("payments_transactions_credited", network) ?? 0, settled: s.value("payments_intents_settled", network) ?? 0 };
		};
		const start = await counts();
		const checkout = await openCheckout(node, alice.sandboxKey, { amount: "0.5", currency: "eth", tokenId: IDS.sepoliaEth, networkId: IDS.sepolia });
		const credit = (txHash: string, amount: string, extra: Record<string, unknown> = {}) =>
			node.broker.call("transactions.credit", { networkId: IDS.sepolia, txHash, logIndex: 0, toAddress: checkout.address, tokenId: IDS.sepoliaEth, amount, ...extra }) as Promise<{ credited: boolean; duplicate: boolean }>;

		expect(await credit("0xpart", "0.2")).toMatchObject({ credited: true });
		expect(await credit("0xpart", "0.2")).toMatchObject({ credited: false, duplicate: true });
		expect(await counts()).toEqual({ credited: start.credited + 1, settled: start.settled });

		expect(await credit("0xrest", "0.3")).toMatchObject({ credited: true });
		expect((await node.http("GET", `/payment_intents/${checkout.intentId}`, { key: alice.sandboxKey })).body.status).toBe("succeeded");
		expect(await credit("0xrest", "0.3")).toMatchObject({ duplicate: true });
		await Promise.all([credit("0xrest", "0.3"), credit("0xrest", "0.3")]);
		expect(await counts()).toEqual({ credited: start.credited + 2, settled: start.settled + 1 });

		// Refused inside the DB transaction (a simulation on a settled payment): rolled back, not counted.
		await expect(credit("0xsim", "0.1", { simulated: true })).rejects.toMatchObject({ code: 400 });
		expect(await counts()).toEqual({ credited: start.credited + 2, settled: start.settled + 1 });
		expect((await scrape(port)).types.get("payments_intents_settled")).toBe("counter");
	});

	it("counts webhook attempts by outcome, delivered, retrying and failed, with their latency", async () => {
		const read = async () => {
			const s = await scrape(port);
			const latency = (le: string) => s.value("webhooks_delivery_latency_bucket", { le }) ?? 0;
			return {
				delivered: s.value("webhooks_deliveries", { outcome: "delivered" })!,
				retrying: s.value("webhooks_deliveries", { outcome: "retrying" })!,
				failed: s.value("webhooks_deliveries", { outcome: "failed" })!,
				latencyAll: latency("+Inf"),
				latencyUnder10s: latency("10000"),
				buckets: s.series("webhooks_delivery_latency_bucket").map(b => b.value),
				scrape: s,
			};
		};
		const start = await read();
		expect([start.delivered, start.retrying, start.failed]).toEqual([0, 0, 0]);

		const paid = async () => {
			const created = await node.http("POST", "/payment_intents", { key: hooked.key, body: intentBody() });
			expect((await node.http("POST", `/payment_intents/${created.body.id}/simulate`, { key: hooked.key })).status).toBe(200);
		};
		await paid();
		await drain(node);
		await receiver.waitFor(1);
		const delivered = await until("delivered counted", async () => {
			const r = await read();
			return r.delivered === 1 ? r : null;
		});
		expect(delivered).toMatchObject({ retrying: 0, failed: 0, latencyAll: 1, latencyUnder10s: 1 });
		expect(delivered.scrape.types.get("webhooks_delivery_latency")).toBe("histogram");

		receiver.respond(500);
		await paid();
		await drain(node);
		await receiver.waitFor(2);
		await until("retrying counted", async () => (await read()).retrying === 1);
		// The second and last attempt is due 10 ms later.
		const failed = await until("failed counted", async () => {
			await drain(node);
			const r = await read();
			return r.failed === 1 ? r : null;
		});
		expect(receiver.received).toHaveLength(3);
		expect(failed).toMatchObject({ delivered: 1, retrying: 1, failed: 1, latencyAll: 3, latencyUnder10s: 3 });
		// Buckets are cumulative, one series per bound.
		expect(failed.buckets).toEqual([...failed.buckets].sort((a, b) => a - b));
		expect(failed.scrape.series("webhooks_delivery_latency_bucket").length).toBeGreaterThan(5);
		expectBoundedLabels(failed.scrape);
	});

	it("shows the outbox backlog: events written while no webhooks node relays them, then relayed", async () => {
		// A second node on the same database writes events; without a transporter this node does not hear of them.
		const writer = await startPaymentsNode({ shareWith: node });
		try {
			await drain(node);
			await until("backlog at 0", async () => (await scrape(port)).value("webhooks_outbox_backlog") === 0, 15_000);
			for (let i = 0; i < 3; i++) {
				const created = await writer.http("POST", "/payment_intents", { key: alice.sandboxKey, body: intentBody() });
				expect((await writer.http("POST", `/payment_intents/${created.body.id}/cancel`, { key: alice.sandboxKey })).status).toBe(200);
			}
			expect(await node.app.models.OutboxEvent.count({ where: { publishedAt: null } })).toBe(3);
			const grown = await until("backlog of 3", async () => {
				const s = await scrape(port);
				return s.value("webhooks_outbox_backlog") === 3 ? s : null;
			}, 15_000);
			expect(grown.types.get("webhooks_outbox_backlog")).toBe("gauge");
			await drain(node);
			await until("backlog back to 0", async () => (await scrape(port)).value("webhooks_outbox_backlog") === 0, 15_000);
		} finally {
			await writer.stop();
		}
	});
});

describe("watcher and sweeper metrics on a real anvil node", () => {
	const NET = networkIdFor("anvil-local");
	const ETH = tokenIdFor("anvil-local", "ETH");
	let anvil: Anvil;
	let node: TestNode;
	let port: number;

	beforeAll(async () => {
		anvil = await startAnvil();
		await anvil.setAutomine(true);
		port = await freePort();
		node = await startNode({
			services: [...PAYMENTS_SERVICES, "watcher-evm", "withdrawals", "sweeper-evm"],
			env: {
				METRICS: "true",
				METRICS_PORT: String(port),
				RPC_URL_ANVIL_LOCAL: anvil.url,
				WATCHER_POLL_MS: "100",
				WATCHER_RECONCILE_MS: "0",
				SWEEPER_PRIVATE_KEY: (anvil.accounts[5].signer as Wallet).privateKey,
				SWEEP_POLL_MS: "200",
				SWEEP_LEASE_MS: "2000",
				SWEEP_MIN_VALUE_MULTIPLE: "2",
			},
		});
	}, 120_000);
	afterAll(async () => {
		await node?.stop();
		await anvil?.stop();
	});

	it("exports head, cursor and lag per network, a credit seen by the watcher, and a sweep's broadcast and confirmation", async () => {
		const labels = { network: "anvil-local" };
		const watched = await until("watcher gauges", async () => {
			const s = await scrape(port);
			return s.value("watcher_head", labels) !== undefined ? s : null;
		});
		for (const name of ["watcher_head", "watcher_cursor", "watcher_lag"]) expect(watched.types.get(name)).toBe("gauge");
		// Sweep outcomes of a swept network are shown at 0 from the start.
		expect(watched.value("sweeps_outcomes", { ...labels, outcome: "failed" })).toBe(0);
		// Exported at 0 from the start, so an alert on the first hold fires.
		expect(watched.value("sweeps_blocked", { network: labels.network, scope: "destination" })).toBe(0);

		const { user, key } = await sandboxMerchant(node);
		const destination = Wallet.createRandom().address;
		expect((await node.http("PUT", "/withdrawals/settings", { token: user.token, body: { addresses: { evm: destination }, strategy: 1 } })).status).toBe(200);
		const checkout = await openCheckout(node, key, { amount: "0.5", currency: "eth", tokenId: ETH, networkId: NET });
		await (await anvil.accounts[2].sendTransaction({ to: checkout.address, value: parseEther("0.5") })).wait();
		await until("settled", async () => (await node.http("GET", `/payments/transactions/${checkout.txId}`)).body.status === "completed", 30_000);
		await until("native sweep confirmed", () => node.app.models.Sweep.findOne({ where: { kind: "native", status: "confirmed" } }), 60_000);

		const s = await until("sweep outcomes counted", async () => {
			const got = await scrape(port);
			return got.value("sweeps_outcomes", { ...labels, outcome: "confirmed" }) === 1 ? got : null;
		});
		expect(s.value("sweeps_outcomes", { ...labels, outcome: "broadcast" })).toBe(1);
		expect(s.value("sweeps_outcomes", { ...labels, outcome: "failed" })).toBe(0);
		expect(s.types.get("sweeps_outcomes")).toBe("counter");
		expect(s.value("payments_transactions_credited", labels)).toBe(1);
		expect(s.value("payments_intents_settled", labels)).toBe(1);

		// The gauges follow the chain: the head is anvil's, the cursor at most the head, lag their difference.
		const head = await anvil.blockNumber();
		const now = await until("watcher at the head", async () => {
			const got = await scrape(port);
			return got.value("watcher_head", labels)! >= head ? got : null;
		});
		const [h, c, l] = ["watcher_head", "watcher_cursor", "watcher_lag"].map(n => now.value(n, labels)!);
		expect(c).toBeLessThanOrEqual(h);
		expect(l).toBe(h - c);
		expectBoundedLabels(now);

		// Per replica: networks led, the fair share, the highest lag among them (what the HPA's lag option scales on).
		const watcher = { service: "watcher-evm" };
		const shared = await until("replica gauges", async () => {
			const got = await scrape(port);
			return got.value("watcher_networks_led", watcher) === 1 && got.value("watcher_networks_led", { service: "sweeper-evm" }) === 1 ? got : null;
		});
		expect(shared.value("watcher_networks_share", watcher)).toBe(1);
		expect(shared.value("watcher_lag_max", watcher)).toEqual(expect.any(Number));
		expect(shared.types.get("watcher_networks_led")).toBe("gauge");
		expectBoundedLabels(shared);

		// A node that stops following a network (stopped, or its lease lost) stops exporting its gauges.
		await node.broker.destroyService(node.broker.getLocalService("watcher-evm")!);
		const after = await scrape(port);
		expect(after.series("watcher_head", labels)).toHaveLength(0);
		expect(after.series("watcher_lag", labels)).toHaveLength(0);
	}, 200_000);
});
