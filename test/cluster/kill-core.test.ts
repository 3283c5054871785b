/**
 * A payment through a cluster of real node processes (lib/start.ts) while its core node is killed
 * with SIGKILL: a gateway node (`api`), a core node (the deployed core group without webhooks), a
 * webhooks node and an EVM watcher node against anvil, on one MySQL database, over the
 * Kafka-protocol mock broker (kcat) and over NATS, each run in its own NAMESPACE.
 *
 * The payment is detected (1 of 3 confirmations: the intent is processing), then the core node is
 * killed, the remaining confirmations are mined while no core node runs (the watcher's credit
 * goes to the dead node, then finds no node), and a second core node is started, which finishes
 * the flow. The intent must end succeeded with exactly one credit, and each webhook event must
 * reach the merchant's endpoint exactly once, signed with the key's secret. Before that, each
 * node type's health endpoint (lib/health.ts) answers, ready with the checks of its kind.
 *
 * MySQL only: several processes on one SQLite file is not a supported deployment.
 */
import { Contract, parseUnits } from "ethers";
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { verifyWebhookSignature } from "../../lib/webhooks/signature";
import { deployTestUsdc, freePort, startAnvil, Anvil } from "../helpers/anvil";
import { BACKEND, TestNode } from "../helpers/harness";
import { KafkaMock, kcatAvailable, startKafkaMock } from "../helpers/kafka-mock";
import { until } from "../helpers/until";
import { startReceiver, ReceivedWebhook, WebhookReceiver } from "../helpers/webhook-receiver";
import { openCheckout, sandboxMerchant } from "../e2e/payments.helpers";
import { DEPLOYED_CORE_SERVICES, ProcessCluster, uniqueId } from "./cluster.helpers";

const NET = networkIdFor("anvil-local");
const USDC = tokenIdFor("anvil-local", "USDC");
const NATS_URL = process.env.TEST_NATS_URL || "nats://127.0.0.1:4222";
const CORE_SERVICES = DEPLOYED_CORE_SERVICES.filter(s => s !== "webhooks");
const REQUIRED_CONFIRMATIONS = 3;

type Env = Record<string, string>;

interface Transport {
	/** TRANSPORTER and its settings, for a run in `namespace`. */
	env(namespace: string): Promise<Env>;
	stop(): Promise<void>;
}

function describeKillCore(title: string, transport: Transport | null, skipReason: string | null): void {
	if (!transport) {
		console.warn(`${title}: skipped (${skipReason})`);
		describe.skip(title, () => it("needs its transport and MySQL", () => undefined));
		return;
	}

	describe(title, () => {
		let anvil: Anvil;
		let token: Contract;
		let observer: TestNode;
		let gateway: TestNode;
		let receiver: WebhookReceiver;
		/** Everything the watcher node logged (node-process keeps only the tail). */
		let watcherLog = "";
		const cluster = new ProcessCluster();
		const { procs, output } = cluster;
		const node = cluster.node.bind(cluster);
		const nodesOffering = cluster.nodesOffering.bind(cluster);
		/** HEALTH_PORT of the first node of each type (lib/health.ts). */
		const healthPorts = new Map<string, number>();

		beforeAll(async () => {
			const namespace = uniqueId("kill");
			const transportEnv = await transport.env(namespace);
			anvil = await startAnvil();
			token = await deployTestUsdc(anvil, [1]);
			observer = await cluster.start(namespace, transportEnv, { TEST_USDC_ADDRESS: await token.getAddress(), REQUIRED_CONFIRMATIONS_ANVIL_LOCAL: String(REQUIRED_CONFIRMATIONS) });
			receiver = await startReceiver();
			const port = await freePort();
			for (const name of ["core-1", "gateway", "webhooks", "watcher"]) healthPorts.set(name, await freePort());
			const health = (name: string) => ({ HEALTH_PORT: String(healthPorts.get(name)) });
			node("core-1", CORE_SERVICES, health("core-1"));
			await nodesOffering("transactions", 1);
			node("gateway", ["api"], { PORT: String(port), ...health("gateway") });
			node("webhooks", ["webhooks"], { WEBHOOK_POLL_MS: "200", ...health("webhooks") });
			const watcher = node("watcher", ["watcher-evm"], { RPC_URL_ANVIL_LOCAL: anvil.url, WATCHER_POLL_MS: "100", WATCHER_RECONCILE_MS: "0", ...health("watcher") });
			watcher.child.stdout?.on("data", d => (watcherLog += d));
			watcher.child.stderr?.on("data", d => (watcherLog += d));
			await nodesOffering("api", 1);
			await nodesOffering("webhooks", 1);
			await nodesOffering("watcher-evm", 1);
			gateway = await cluster.gatewayOn(port);
			// The watcher leads the network and has its cursor.
			await until("the watcher's cursor", async () => (await observer.app.models.ChainCursor.findByPk(NET))?.blockNumber != null, 60_000, output);
		}, 240_000);

		afterAll(async () => {
			await cluster.stop();
			await receiver?.close();
			await anvil?.stop();
			await transport.stop();
		});

		let cores = 1;
		/** The core node running now: killed with SIGKILL by `killCore`, which starts none. */
		const killCore = () => procs.get(`core-${cores}`)!.kill();
		const startCore = async () => {
			const name = `core-${++cores}`;
			healthPorts.set(name, await freePort());
			return node(name, CORE_SERVICES, { HEALTH_PORT: String(healthPorts.get(name)) });
		};
		/** Until /readyz of the node answers 200. */
		const readyNode = (name: string) =>
			until(`${name} ready`, async () => (await fetch(`http://127.0.0.1:${healthPorts.get(name)}/readyz`).catch(() => null))?.status === 200, 90_000, output);

		interface Payment {
			key: { key: string; secret: string };
			intentId: string;
			txId: string;
			address: string;
			status(): Promise<string | undefined>;
			hooks(type?: string): ReceivedWebhook[];
		}

		/** A new merchant (webhooks to the receiver), an intent for 1 USDC and its checkout, made through the gateway. */
		async function newPayment(): Promise<Payment> {
			const { key } = await sandboxMerchant(gateway, receiver.url);
			const { intentId, txId, address } = await openCheckout(gateway, key, { amount: "1", currency: "usdc", tokenId: USDC, networkId: NET });
			return {
				key,
				intentId,
				txId,
				address,
				status: async () => (await gateway.http("GET", `/payment_intents/${intentId}`, { key })).body?.status,
				hooks: type => receiver.received.filter(h => h.json?.data?.object?.id === intentId && (!type || h.json?.type === type)),
			};
		}

		/** Pays on anvil and waits until the watcher reported the first confirmation: the intent is processing. */
		async function payAndDetect(pay: Payment): Promise<void> {
			await (token.connect(anvil.accounts[1]) as Contract).transfer(pay.address, parseUnits("1", 6));
			await anvil.mine(1);
			await until("the intent processing", async () => (await pay.status()) === "processing", 60_000, output);
			await until("the processing webhook", () => pay.hooks("payment_intent.processing").length > 0, 30_000, output);
			expect(await observer.app.models.Transaction.findByPk(pay.txId)).toMatchObject({ status: "pending", confirmations: 1, requiredConfirmations: REQUIRED_CONFIRMATIONS });
		}

		/** The intent succeeded with one credit; each of its events reached the endpoint once, signed; nothing left unsent. */
		async function expectSettledOnce(pay: Payment): Promise<void> {
			await until("the intent succeeded", async () => (await pay.status()) === "succeeded", 120_000, output);
			await until("the completed webhook", () => pay.hooks("payment_intent.completed").length > 0, 60_000, output);
			// Late duplicates would arrive within a few polls and retries.
			await new Promise(r => setTimeout(r, 5_000));

			const credits = await observer.app.models.TransactionCredit.findAll({ where: { transactionId: pay.txId } });
			expect(credits).toHaveLength(1);
			expect(credits[0]).toMatchObject({ amount: expect.stringMatching(/^1(\.0*)?$/), counted: true });
			const settled = await observer.app.models.Transaction.findByPk(pay.txId);
			expect(settled?.status).toBe("completed");
			const transfers = await observer.app.models.ChainTransfer.findAll({ where: { networkId: NET } });
			expect(transfers.filter(t => t.toAddress.toLowerCase() === pay.address.toLowerCase())).toHaveLength(1);

			// Duplicates count by event id: each event once.
			const hits = pay.hooks();
			const perEvent = new Map<string, number>();
			for (const hit of hits) perEvent.set(hit.json.id, (perEvent.get(hit.json.id) ?? 0) + 1);
			expect([...perEvent.values()]).toEqual([1, 1]);
			expect(hits.map(h => h.json.type).sort()).toEqual(["payment_intent.completed", "payment_intent.processing"]);
			for (const hit of hits) {
				expect(hit.headers["x-webhook-id"]).toBe(hit.json.id);
				expect(verifyWebhookSignature(hit.rawBody, hit.headers["x-webhook-signature"], pay.key.secret)).toBe(true);
			}
			// The merchant is new: its organization has this intent's events only.
			const outbox = await observer.app.models.OutboxEvent.findAll({ where: { organizationId: settled!.organizationId } });
			expect(outbox.map(e => e.type).sort()).toEqual(["payment_intent.completed", "payment_intent.processing"]);
			expect(outbox.every(e => e.publishedAt !== null)).toBe(true);
			const deliveries = await observer.app.models.WebhookDelivery.findAll({ where: { eventId: outbox.map(e => e.id) } });
			expect(deliveries.map(d => [d.type, d.status, d.attempts]).sort()).toEqual([
				["payment_intent.completed", "delivered", 1],
				["payment_intent.processing", "delivered", 1],
			]);
		}

		it("every node type answers /healthz and is ready on /readyz with the checks of its kind", async () => {
			const get = async (name: string, path: string) => {
				const res = await fetch(`http://127.0.0.1:${healthPorts.get(name)}${path}`);
				return { status: res.status, body: (await res.json()) as { status: string; checks?: Record<string, { ok: boolean }> } };
			};
			const expected: Record<string, string[]> = {
				gateway: ["redis", "services", "transporter"],
				"core-1": ["database", "gateways", "redis", "transporter"],
				webhooks: ["database", "gateways", "redis", "transporter"],
				watcher: ["database", "gateways", "redis", "transporter", "watchers"],
			};
			for (const [name, checks] of Object.entries(expected)) {
				expect(await get(name, "/healthz")).toMatchObject({ status: 200, body: { status: "ok" } });
				const ready = await until(`${name} ready`, async () => {
					const r = await get(name, "/readyz");
					return r.status === 200 ? r : null;
				}, 30_000, output);
				expect(Object.keys(ready.body.checks!).sort()).toEqual(checks);
				expect(Object.values(ready.body.checks!).every(c => c.ok)).toBe(true);
			}
		});

		it("finishes a payment on a second core node after the first was killed mid-payment: one credit, each webhook once and signed", async () => {
			const pay = await newPayment();
			await payAndDetect(pay);
			const watcherLogFrom = watcherLog.length;

			// SIGKILL: no graceful stop, no goodbye to the other nodes; they find out by the missed heartbeats.
			await killCore();
			await anvil.mine(REQUIRED_CONFIRMATIONS - 1);
			// Until the other nodes miss the dead node's heartbeats, their calls go to it and are lost;
			// then they find no node. The watcher keeps its reports pending meanwhile.
			await nodesOffering("transactions", 0);
			// The gateway answers that the service is away (503, the API's error shape), not 404.
			const away = await gateway.http("GET", `/payment_intents/${pay.intentId}`, { key: pay.key });
			expect([away.status, away.headers.get("retry-after"), away.body?.statusCode]).toEqual([503, "5", 503]);
			expect(await observer.app.models.TransactionCredit.count({ where: { transactionId: pay.txId } })).toBe(0);
			expect(await observer.app.models.PaymentIntent.findByPk(pay.intentId)).toMatchObject({ status: "processing" });
			expect(pay.hooks("payment_intent.completed")).toHaveLength(0);

			await startCore();
			// Ready means reachable: once the new core node says ready, the gateway routes to it (no 503 in between).
			await readyNode(`core-${cores}`);
			const back = await gateway.http("GET", `/payment_intents/${pay.intentId}`, { key: pay.key });
			expect([back.status, back.body?.id]).toEqual([200, pay.intentId]);
			await expectSettledOnce(pay);
			// The watcher said once that the payments services were away, and logged no failed step.
			const outage = watcherLog.slice(watcherLogFrom);
			expect(outage.match(/payments services unreachable/g)).toHaveLength(1);
			expect(outage).not.toMatch(/Watcher step failed/);
		}, 300_000);

		it("credits once when the core node is killed while the credit is being reported", async () => {
			const pay = await newPayment();
			await payAndDetect(pay);
			// The watcher reports the credit as soon as it has stored the block that completes the
			// confirmations; the core node dies right then: before, during or after that call.
			await anvil.mine(REQUIRED_CONFIRMATIONS - 1);
			const head = await anvil.blockNumber();
			await until("the watcher to store the confirming block", async () => ((await observer.app.models.ChainCursor.findByPk(NET))?.blockNumber ?? 0) >= head, 30_000, output);
			await killCore();
			await startCore();
			await expectSettledOnce(pay);
		}, 300_000);
	});
}

const mysqlOnly = BACKEND === "mysql" ? null : "MySQL project only: several processes share one database (SQLite is one process per file)";

let kafka: KafkaMock | null = null;
describeKillCore(
	"kill -9 of the core node mid-payment, over Kafka (kafkajs, mock broker)",
	mysqlOnly || !kcatAvailable()
		? null
		: {
				async env() {
					kafka = await startKafkaMock();
					// The mock answers an idle fetch only when its wait is over (real Kafka answers when data comes).
					return { TRANSPORTER: kafka.url, KAFKA_FETCH_MAX_WAIT_MS: "20" };
				},
				async stop() {
					await kafka?.stop();
				},
			},
	mysqlOnly ?? "`kcat` is not installed (apt-get install kcat); CI installs it",
);

describeKillCore(
	"kill -9 of the core node mid-payment, over NATS",
	mysqlOnly ? null : { env: async () => ({ TRANSPORTER: NATS_URL }), stop: async () => undefined },
	mysqlOnly,
);
