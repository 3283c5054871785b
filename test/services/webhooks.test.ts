/**
 * Webhooks over HTTP with a real receiver on loopback: payment events delivered signed, retries
 * with backoff and their logs, durability across a broker restart and an interrupted attempt,
 * two brokers on one database, test sends, logs, inbound events.
 */
import crypto from "node:crypto";
import type { ServiceSchema } from "moleculer";
import { availableServices, loadServiceSchema } from "../../lib/node";
import { claimDue, enqueue, envelopeBody, recordOutcomes } from "../../lib/webhooks/queue";
import { verifyWebhookSignature } from "../../lib/webhooks/signature";
import { intentBody, PAYMENTS_SERVICES } from "../e2e/payments.helpers";
import { BACKEND, startNode, TestNode, StartOptions } from "../helpers/harness";
import { createUserWithToken, UserWithToken } from "../helpers/users";
import { until } from "../helpers/until";
import { startReceiver, WebhookReceiver } from "../helpers/webhook-receiver";

jest.setTimeout(60_000);

const SERVICES = [...PAYMENTS_SERVICES, "webhooks"];

interface HookedMerchant extends UserWithToken {
	key: { key: string; secret: string; id: number };
	liveKey: { key: string; secret: string; id: number };
}

/** The dispatcher runs when told (drain) or woken by an event: deterministic. */
function start(opts: StartOptions = {}): Promise<TestNode> {
	return startNode({ services: SERVICES, ...opts, env: { WEBHOOK_POLL_MS: "0", ...opts.env } });
}

async function merchant(node: TestNode, webhookUrl: string | null): Promise<HookedMerchant> {
	const user = await createUserWithToken(node);
	const keyFor = async (orgId: string) => {
		const res = await node.http("POST", `/organizations/${orgId}/api-keys`, { token: user.token, body: { name: "shop", ...(webhookUrl ? { webhookUrl } : {}) } });
		if (res.status !== 201) throw new Error(`key: ${res.status} ${res.text}`);
		return { key: res.body.key, secret: res.body.secret, id: res.body.apiKey.id };
	};
	return { ...user, key: await keyFor(user.sandbox.id), liveKey: await keyFor(user.live.id) };
}

async function paidIntent(node: TestNode, key: HookedMerchant["key"]): Promise<string> {
	const created = await node.http("POST", "/payment_intents", { key, body: intentBody() });
	expect(created.status).toBe(200);
	const confirmed = await node.http("POST", `/payment_intents/${created.body.id}/confirm`, { key, body: { client_secret: created.body.clientSecret } });
	expect(confirmed.status).toBe(200);
	const simulated = await node.http("POST", `/payment_intents/${created.body.id}/simulate`, { key });
	expect(simulated.status).toBe(200);
	return created.body.id;
}

async function canceledIntent(node: TestNode, key: HookedMerchant["key"]): Promise<string> {
	const created = await node.http("POST", "/payment_intents", { key, body: intentBody() });
	expect(created.status).toBe(200);
	const canceled = await node.http("POST", `/payment_intents/${created.body.id}/cancel`, { key });
	expect(canceled.status).toBe(200);
	return created.body.id;
}

const drain = (node: TestNode) => node.broker.call("webhooks.drain");

describe("webhooks service", () => {
	let receiver: WebhookReceiver;
	beforeEach(async () => {
		receiver = await startReceiver();
	});
	afterEach(async () => {
		await receiver.close();
	});

	describe("outbound delivery", () => {
		let node: TestNode;
		beforeAll(async () => {
			node = await start();
		});
		afterAll(async () => {
			await node.stop();
		});

		it("delivers a paid sandbox intent's payment_intent.completed, signed with the key's secret", async () => {
			const m = await merchant(node, receiver.url);
			const intentId = await paidIntent(node, m.key);
			await drain(node);
			const [hit] = await receiver.waitFor(1);
			expect(receiver.received).toHaveLength(1);
			expect(hit.headers["content-type"]).toBe("application/json");
			// The signature is recomputed over the raw body with the secret the merchant was given.
			expect(verifyWebhookSignature(hit.rawBody, hit.headers["x-webhook-signature"], m.key.secret)).toBe(true);
			expect(verifyWebhookSignature(hit.rawBody, hit.headers["x-webhook-signature"], m.liveKey.secret)).toBe(false);
			expect(Object.keys(hit.json).sort()).toEqual(["created", "data", "id", "livemode", "type"]);
			expect(hit.json).toMatchObject({ type: "payment_intent.completed", livemode: false });
			expect(hit.headers["x-webhook-id"]).toBe(hit.json.id);
			expect(new Date(hit.json.created).toISOString()).toBe(hit.json.created);
			const object = hit.json.data.object;
			expect(object).toMatchObject({ id: intentId, amount: "0.5", currency: "eth", status: "completed", paymentMethodTypes: ["crypto"], metadata: { orderId: "42" } });
			expect(object.latestTransaction).toMatchObject({ status: "completed", currency: "eth" });
			expect(typeof object.latestTransaction.id).toBe("string");

			const logs = await node.http("GET", "/webhooks/logs", { token: m.token, headers: { "x-organization-id": m.sandbox.id } });
			expect(logs.status).toBe(200);
			expect(logs.body.total).toBe(1);
			expect(logs.body.logs[0]).toMatchObject({
				apiKeyId: m.key.id,
				userId: m.user.id,
				event: "payment_intent.completed",
				eventId: hit.json.id,
				url: receiver.url,
				statusCode: 200,
				success: true,
				attemptNumber: 1,
				error: null,
				response: "ok",
			});
		});

		it("sends payment_intent.canceled and nothing for keys without a URL or intents made with a bearer token", async () => {
			const hooked = await merchant(node, receiver.url);
			const silent = await merchant(node, null);
			await canceledIntent(node, hooked.key);
			await canceledIntent(node, silent.key);
			const byToken = await node.http("POST", "/payment_intents", { token: hooked.token, headers: { "x-organization-id": hooked.sandbox.id }, body: intentBody() });
			expect(byToken.status).toBe(200);
			expect((await node.http("POST", `/payment_intents/${byToken.body.id}/cancel`, { key: hooked.key })).status).toBe(200);
			await drain(node);
			await new Promise(r => setTimeout(r, 100));
			expect(receiver.received.map(r => r.json.type)).toEqual(["payment_intent.canceled"]);
			expect(receiver.received[0].json.data.object.status).toBe("canceled");
			expect(await node.app.models.OutboxEvent.count({ where: { publishedAt: null } })).toBe(0);
		});

		it("relays the outbox when asked to while a round runs: the request is kept for the next round", async () => {
			const m = await merchant(node, receiver.url);
			await drain(node);
			// An event whose Moleculer event never came (emitted on a node that went away): only a full round relays it.
			const id = crypto.randomUUID();
			await node.app.models.OutboxEvent.create({ id, type: "payment_intent.canceled", organizationId: m.sandbox.id, apiKeyId: m.key.id, livemode: false, payload: { id: crypto.randomUUID(), status: "canceled" }, createdAt: new Date(), publishedAt: null });
			const dispatcher = node.broker.getLocalService("webhooks") as unknown as { kick(full?: boolean): void; running: Promise<void> | null; relaying: Promise<void> | null; again: boolean };
			dispatcher.kick(false); // a round that only claims (as after an attempt finished)...
			dispatcher.kick(true); // ...during which a new payment event asks for a relay
			await until("dispatcher idle", () => dispatcher.running === null && dispatcher.relaying === null && !dispatcher.again);
			expect((await node.app.models.OutboxEvent.findByPk(id))!.publishedAt).not.toBeNull();
			const [hit] = await receiver.waitFor(1);
			expect(hit.json.id).toBe(id);
		});

		it("goes to the key's current URL", async () => {
			const m = await merchant(node, "http://127.0.0.1:9/old");
			const other = await startReceiver();
			try {
				const patched = await node.http("PATCH", `/api-keys/${m.key.id}`, { token: m.token, body: { webhookUrl: other.url } });
				expect(patched.status).toBe(200);
				await canceledIntent(node, m.key);
				await drain(node);
				await other.waitFor(1);
				expect(other.received[0].json.type).toBe("payment_intent.canceled");
			} finally {
				await other.close();
			}
		});
	});

	describe("retries", () => {
		it("logs three attempts to a 500-ing endpoint, 2 s then 4 s apart, with the same event id", async () => {
			const node = await start();
			try {
				// Only advance() moves time here: "not due yet" must hold however slow the machine is.
				node.clock.freeze();
				receiver.respond(500);
				const m = await merchant(node, receiver.url);
				await canceledIntent(node, m.key);
				await drain(node);
				await receiver.waitFor(1);
				const delivery = await node.app.models.WebhookDelivery.findOne({ where: { apiKeyId: m.key.id } });
				expect(delivery).toMatchObject({ status: "pending", attempts: 1 });
				const firstAt = (await node.app.models.WebhookLog.findOne({ where: { deliveryId: delivery!.id, attemptNumber: 1 } }))!.createdAt;
				expect(delivery!.nextAttemptAt!.getTime() - firstAt.getTime()).toBe(2000);

				// Not due yet: nothing is sent.
				node.clock.advance(1900);
				await drain(node);
				expect(receiver.received).toHaveLength(1);
				node.clock.advance(100);
				await drain(node);
				await receiver.waitFor(2);
				await delivery!.reload();
				const secondAt = (await node.app.models.WebhookLog.findOne({ where: { deliveryId: delivery!.id, attemptNumber: 2 } }))!.createdAt;
				expect(delivery!.nextAttemptAt!.getTime() - secondAt.getTime()).toBe(4000);
				node.clock.advance(3900);
				await drain(node);
				expect(receiver.received).toHaveLength(2);
				node.clock.advance(100);
				await drain(node);
				await receiver.waitFor(3);
				// No fourth attempt, however long we wait.
				node.clock.advance(600_000);
				await drain(node);
				expect(receiver.received).toHaveLength(3);
				await delivery!.reload();
				expect(delivery!.status).toBe("failed");
				expect(new Set(receiver.received.map(r => r.json.id)).size).toBe(1);
				expect(new Set(receiver.received.map(r => r.rawBody)).size).toBe(1);

				const logs = await node.http("GET", "/webhooks/logs", { token: m.token });
				expect(logs.body.total).toBe(3);
				expect(logs.body.logs.map((l: any) => l.attemptNumber)).toEqual([3, 2, 1]);
				for (const log of logs.body.logs) {
					expect(log).toMatchObject({ statusCode: 500, success: false, event: "payment_intent.canceled", response: "failed with 500" });
					expect(log.error).toMatch(/500/);
				}
			} finally {
				await node.stop();
			}
		});

		it("waits the backoff in real time and stops at the first 200", async () => {
			const node = await start({ clock: { now: () => new Date() } as never, env: { WEBHOOK_POLL_MS: "20", WEBHOOK_BACKOFF_MS: "200" } });
			try {
				receiver.respond(n => (n < 3 ? 503 : 200));
				const m = await merchant(node, receiver.url);
				await canceledIntent(node, m.key);
				await receiver.waitFor(3);
				const [a, b, c] = receiver.received.map(r => r.at);
				expect(b - a).toBeGreaterThanOrEqual(200);
				expect(c - b).toBeGreaterThanOrEqual(400);
				await drain(node);
				const logs = await node.http("GET", "/webhooks/logs", { token: m.token });
				expect(logs.body.logs.map((l: any) => [l.attemptNumber, l.statusCode, l.success])).toEqual([
					[3, 200, true],
					[2, 503, false],
					[1, 503, false],
				]);
			} finally {
				await node.stop();
			}
		});

		it("records a timeout as a failed attempt", async () => {
			const node = await start({ env: { WEBHOOK_TIMEOUT_MS: "200" } });
			const silent = await startReceiver();
			try {
				const m = await merchant(node, receiver.url);
				// An endpoint that accepts the connection and never answers.
				const hang = (await import("node:http")).createServer(() => undefined);
				await new Promise<void>(r => hang.listen(0, "127.0.0.1", r));
				const url = `http://127.0.0.1:${(hang.address() as { port: number }).port}/slow`;
				await node.http("PATCH", `/api-keys/${m.key.id}`, { token: m.token, body: { webhookUrl: url } });
				await canceledIntent(node, m.key);
				await drain(node);
				hang.closeAllConnections();
				hang.close();
				const log = await node.app.models.WebhookLog.findOne({ where: { apiKeyId: m.key.id } });
				expect(log).toMatchObject({ success: false, statusCode: null, attemptNumber: 1, error: "Timed out after 200 ms" });
			} finally {
				await silent.close();
				await node.stop();
			}
		});
	});

	describe("isolation", () => {
		it("a hanging endpoint holds at most its per-endpoint slots; other merchants are delivered meanwhile", async () => {
			const node = await start({
				clock: { now: () => new Date() } as never,
				env: { WEBHOOK_POLL_MS: "20", WEBHOOK_CONCURRENCY: "4", WEBHOOK_CONCURRENCY_PER_ENDPOINT: "2", WEBHOOK_TIMEOUT_MS: "3000" },
			});
			// Accepts connections and never answers while `hanging`.
			const open = new Set<import("node:http").ServerResponse>();
			let maxOpen = 0;
			const hang = (await import("node:http")).createServer((_req, res) => {
				open.add(res);
				maxOpen = Math.max(maxOpen, open.size);
				res.on("close", () => open.delete(res));
			});
			await new Promise<void>(r => hang.listen(0, "127.0.0.1", r));
			try {
				const slow = await merchant(node, `http://127.0.0.1:${(hang.address() as { port: number }).port}/hang`);
				const fast = await merchant(node, receiver.url);
				for (let i = 0; i < 6; i++) await canceledIntent(node, slow.key);
				const until = Date.now() + 5000;
				while (open.size < 2 && Date.now() < until) await new Promise(r => setTimeout(r, 10));
				expect(open.size).toBe(2);
				await canceledIntent(node, fast.key);
				await receiver.waitFor(1);
				// Delivered while the slow endpoint's attempts were still hanging.
				expect(open.size).toBe(2);
				expect(receiver.received[0].json.type).toBe("payment_intent.canceled");
				expect(maxOpen).toBe(2);
			} finally {
				for (const res of open) res.destroy();
				hang.closeAllConnections();
				hang.close();
				await node.stop();
			}
		});
	});

	describe("durability", () => {
		it("a due attempt that cannot start while the keys service is away (its node restarting) stays pending, uncounted, and is sent once it is back", async () => {
			const node = await start();
			try {
				const m = await merchant(node, receiver.url);
				const { models } = node.app;
				// The keys service leaves (the core node restarting); the dispatcher knows neither the URL nor the secret yet.
				await node.broker.destroyService(node.broker.getLocalService("keys")!);
				const webhooks = node.broker.getLocalService("webhooks") as unknown as { targets: { clear(): void }; secrets: { clear(): void } };
				webhooks.targets.clear();
				webhooks.secrets.clear();
				const eventId = crypto.randomUUID();
				const target = { id: m.key.id, organizationId: m.sandbox.id, status: "active", webhookUrl: receiver.url } as Parameters<typeof enqueue>[1]["target"];
				const body = envelopeBody({ id: eventId, type: "payment_intent.completed", createdAt: node.clock.now(), livemode: false, payload: { id: "pi_probe" } });
				const delivery = await enqueue(models, { eventId, kind: "event", type: "payment_intent.completed", target, userId: m.user.id, livemode: false, body, now: node.clock.now() });

				// Several rounds while it is away: never sent, never counted, never failed.
				for (let round = 0; round < 4; round++) {
					await drain(node);
					const row = await models.WebhookDelivery.findByPk(delivery.id);
					expect({ status: row!.status, attempts: Number(row!.attempts), leaseToken: row!.leaseToken }).toEqual({ status: "pending", attempts: 0, leaseToken: null });
					expect(row!.nextAttemptAt!.getTime()).toBeGreaterThan(node.clock.now().getTime());
					node.clock.advance(5_000);
				}
				expect(receiver.received).toHaveLength(0);
				expect(await models.WebhookLog.count({ where: { eventId } })).toBe(0);

				node.broker.createService(loadServiceSchema(availableServices().keys));
				await node.broker.waitForServices(["keys"], 5_000);
				await drain(node);
				const [hit] = await receiver.waitFor(1);
				expect(hit.json.id).toBe(eventId);
				expect(verifyWebhookSignature(hit.rawBody, hit.headers["x-webhook-signature"], m.key.secret)).toBe(true);
				await until("the delivery recorded", async () => (await models.WebhookDelivery.findByPk(delivery.id))?.status === "delivered");
				const row = await models.WebhookDelivery.findByPk(delivery.id);
				expect(Number(row!.attempts)).toBe(1);
				const logs = await models.WebhookLog.findAll({ where: { eventId } });
				expect(logs.map(l => [l.attemptNumber, l.success])).toEqual([[1, true]]);
			} finally {
				await node.stop();
			}
		});

		it("delivers the next attempt after the broker is stopped and a new one starts on the same database", async () => {
			const first = await start();
			receiver.respond(500);
			const m = await merchant(first, receiver.url);
			await canceledIntent(first, m.key);
			await drain(first);
			await receiver.waitFor(1);
			await first.broker.stop();

			receiver.respond(200);
			const second = await start({ shareWith: first });
			try {
				second.clock.advance(2000);
				await drain(second);
				await receiver.waitFor(2);
				expect(receiver.received).toHaveLength(2);
				expect(receiver.received[1].json.id).toBe(receiver.received[0].json.id);
				expect(verifyWebhookSignature(receiver.received[1].rawBody, receiver.received[1].headers["x-webhook-signature"], m.key.secret)).toBe(true);
				const logs = await second.http("GET", "/webhooks/logs", { token: m.token });
				expect(logs.body.logs.map((l: any) => [l.attemptNumber, l.success])).toEqual([
					[2, true],
					[1, false],
				]);
			} finally {
				await second.stop();
				await first.stop();
			}
		});

		it("an attempt whose node died mid-send is recorded as interrupted and retried by another node", async () => {
			const node = await start();
			try {
				const m = await merchant(node, receiver.url);
				// Relay the event without sending it, then let a node that never comes back claim the attempt.
				await node.broker.destroyService(node.broker.getLocalService("webhooks")!);
				await canceledIntent(node, m.key);
				const { relayOutbox } = await import("../../lib/webhooks/queue");
				await relayOutbox(node.app, async ids => new Map((await node.broker.call("keys.webhookTargets", { ids }) as any[]).map(t => [t.id, t])), 100);
				const [claimed] = await claimDue(node.app, node.app.config.webhooks, "dead-node", { slots: 1, freeByKey: new Map(), perEndpoint: 1 });
				expect(claimed).toMatchObject({ status: "sending", attempts: 1, leaseOwner: "dead-node" });

				const survivor = await start({ shareWith: node });
				try {
					await drain(survivor);
					expect(receiver.received).toHaveLength(0); // the lease still holds
					survivor.clock.advance(node.app.config.webhooks.leaseMs + 1);
					await drain(survivor);
					survivor.clock.advance(2000);
					await drain(survivor);
					await receiver.waitFor(1);
					const logs = await survivor.http("GET", "/webhooks/logs", { token: m.token });
					expect(logs.body.logs.map((l: any) => [l.attemptNumber, l.success, l.error])).toEqual([
						[2, true, null],
						[1, false, "Attempt interrupted: the node sending it stopped before recording the result"],
					]);
				} finally {
					await survivor.stop();
				}
			} finally {
				await node.stop();
			}
		});

		// Several nodes on one database is a MySQL deployment; SQLite is the single-node embedded default.
		(BACKEND === "mysql" ? it : it.skip)("two brokers on one database send every attempt once", async () => {
			const a = await startNode({ services: SERVICES, env: { WEBHOOK_POLL_MS: "5" }, clock: { now: () => new Date() } as never });
			const b = await startNode({ services: SERVICES, env: { WEBHOOK_POLL_MS: "5" }, clock: { now: () => new Date() } as never, shareWith: a });
			try {
				// Every event's first attempt fails, its second succeeds: two attempts per event, each to be sent once.
				const seen = new Set<string>();
				receiver.respond((_n, hit) => {
					if (seen.has(hit.json.id)) return 200;
					seen.add(hit.json.id);
					return 500;
				});
				const m = await merchant(a, receiver.url);
				const count = 30;
				await Promise.all(Array.from({ length: count }, (_, i) => canceledIntent(i % 2 ? a : b, m.key)));
				const until = Date.now() + 20_000;
				while ((await a.app.models.WebhookDelivery.count({ where: { status: "delivered" } })) < count) {
					if (Date.now() > until) throw new Error(`not all delivered: ${JSON.stringify([await a.broker.call("webhooks.stats"), await b.broker.call("webhooks.stats"), receiver.received.length])}`);
					await new Promise(r => setTimeout(r, 50));
				}
				await drain(a);
				await drain(b);
				const attempts = receiver.received.map(r => r.json.id);
				expect(attempts).toHaveLength(2 * count);
				const logs = await a.app.models.WebhookLog.findAll({ where: { apiKeyId: m.key.id } });
				// One request per logged attempt: nothing sent twice, nothing sent unlogged.
				expect(attempts).toHaveLength(logs.length);
				expect(new Set(logs.map(l => `${l.deliveryId}#${l.attemptNumber}`)).size).toBe(logs.length);
				expect(new Set(attempts).size).toBe(count);
				expect(logs.filter(l => l.success)).toHaveLength(count);
				expect(await a.app.models.WebhookDelivery.count()).toBe(count);
			} finally {
				await b.stop();
				await a.stop();
			}
		});
	});

	describe("batches", () => {
		/** `n` deliveries of the key queued directly (no service woken), due now. */
		async function queued(node: TestNode, m: HookedMerchant, n: number, url = receiver.url) {
			const target = { id: m.key.id, organizationId: m.sandbox.id, status: "active", webhookUrl: url } as Parameters<typeof enqueue>[1]["target"];
			const rows = [];
			for (let i = 0; i < n; i++) {
				const eventId = crypto.randomUUID();
				const body = envelopeBody({ id: eventId, type: "payment_intent.canceled", createdAt: node.clock.now(), livemode: false, payload: { id: `pi_${i}` } });
				rows.push(await enqueue(node.app.models, { eventId, kind: "event", type: "payment_intent.canceled", target, userId: m.user.id, livemode: false, body, now: node.clock.now() }));
			}
			return rows;
		}

		it("two workers claiming batches at once never hold the same attempt; every claim starts attempt 1 under one token per batch", async () => {
			const node = await start();
			try {
				const m = await merchant(node, receiver.url);
				// The node's own dispatcher stays out: only the two workers below claim.
				await node.broker.destroyService(node.broker.getLocalService("webhooks")!);
				const rows = await queued(node, m, 40);
				const cfg = node.app.config.webhooks;
				const claim = (owner: string) => claimDue(node.app, cfg, owner, { slots: 15, freeByKey: new Map(), perEndpoint: 15 });
				// Claims race in pairs until nothing is left; a claim that lost the race for its candidates gets fewer or none.
				const batches: Array<Awaited<ReturnType<typeof claim>>> = [];
				for (let round = 0; round < 20 && batches.flat().length < 40; round++) batches.push(...(await Promise.all([claim("worker-a"), claim("worker-b")])));
				const ids = batches.flat().map(d => d.id);
				expect(new Set(ids).size).toBe(ids.length);
				expect(ids.length).toBe(40);
				expect(new Set(ids)).toEqual(new Set(rows.map(r => r.id)));
				for (const batch of batches) {
					expect(batch.length).toBeLessThanOrEqual(15);
					expect(new Set(batch.map(d => d.leaseToken)).size).toBeLessThanOrEqual(1);
				}
				const db = await node.app.models.WebhookDelivery.findAll({ where: { id: ids } });
				for (const row of db) {
					const mine = batches.flat().find(d => d.id === row.id)!;
					expect({ status: row.status, attempts: Number(row.attempts), leaseToken: row.leaseToken, leaseOwner: row.leaseOwner }).toEqual({ status: "sending", attempts: 1, leaseToken: mine.leaseToken, leaseOwner: mine.leaseOwner });
				}
				// Nothing left to claim while they hold it all.
				expect(await claim("worker-c")).toEqual([]);
			} finally {
				await node.stop();
			}
		});

		it("a batch claimed by a node that died before recording is retried by another node after the lease, each attempt logged once", async () => {
			const node = await start();
			try {
				const m = await merchant(node, receiver.url);
				await node.broker.destroyService(node.broker.getLocalService("webhooks")!);
				await queued(node, m, 6);
				const claimed = await claimDue(node.app, node.app.config.webhooks, "dead-node", { slots: 10, freeByKey: new Map(), perEndpoint: 10 });
				expect(claimed).toHaveLength(6);

				const survivor = await start({ shareWith: node });
				try {
					await drain(survivor);
					expect(receiver.received).toHaveLength(0); // the leases still hold
					survivor.clock.advance(node.app.config.webhooks.leaseMs + 1);
					await drain(survivor);
					expect(receiver.received).toHaveLength(0); // recorded as interrupted, next attempt 2 s later
					survivor.clock.advance(2000);
					await drain(survivor);
					await receiver.waitFor(6);
					await until("all six delivered", async () => (await survivor.app.models.WebhookDelivery.count({ where: { apiKeyId: m.key.id, status: "delivered" } })) === 6);
					const logs = await survivor.app.models.WebhookLog.findAll({ where: { apiKeyId: m.key.id }, order: [["id", "ASC"]] });
					expect(logs).toHaveLength(12);
					expect(new Set(logs.map(l => `${l.deliveryId}#${l.attemptNumber}`)).size).toBe(12);
					expect(logs.filter(l => l.attemptNumber === 1).every(l => !l.success && l.error === "Attempt interrupted: the node sending it stopped before recording the result")).toBe(true);
					expect(logs.filter(l => l.attemptNumber === 2).every(l => l.success)).toBe(true);
					expect(new Set(receiver.received.map(r => r.json.id)).size).toBe(6);
					// GET /webhooks/logs shows both attempts of each, newest first.
					const api = await survivor.http("GET", "/webhooks/logs", { token: m.token });
					expect(api.body.total).toBe(12);
					expect(api.body.logs.slice(0, 6).every((l: any) => l.attemptNumber === 2 && l.success)).toBe(true);
				} finally {
					await survivor.stop();
				}
			} finally {
				await node.stop();
			}
		});

		it("records a batch of mixed outcomes in one go, each row and log right; an attempt whose lease was lost is not recorded", async () => {
			const node = await start();
			try {
				node.clock.freeze();
				const m = await merchant(node, receiver.url);
				await node.broker.destroyService(node.broker.getLocalService("webhooks")!);
				const { models } = node.app;
				const cfg = node.app.config.webhooks;
				const rows = await queued(node, m, 7);
				// The sixth is on its last attempt: its failure ends the delivery.
				await models.WebhookDelivery.update({ attempts: cfg.maxAttempts - 1 }, { where: { id: rows[5].id } });
				const claimed = await claimDue(node.app, cfg, "me", { slots: 10, freeByKey: new Map(), perEndpoint: 10 });
				const byId = new Map(claimed.map(d => [d.id, d]));
				const d = rows.map(r => byId.get(r.id)!);
				// The seventh's lease ran out and another node took it over (a new token).
				await models.WebhookDelivery.update({ leaseToken: crypto.randomUUID(), leaseOwner: "other" }, { where: { id: rows[6].id } });
				const at = (delivery: (typeof d)[number], statusCode: number | null, error: string | null, extra = {}) => ({ delivery, statusCode, response: statusCode === 200 ? "ok" : "no", error, durationMs: 3, url: receiver.url, ...extra });
				const recorded = await recordOutcomes(node.app, cfg, [
					at(d[0], 200, null),
					at(d[1], 500, null),
					at(d[2], null, "Timed out after 10000 ms"),
					at(d[3], 200, null),
					at(d[4], null, "The API key was revoked or its webhook URL removed", { canceled: true }),
					at(d[5], 503, null),
					at(d[6], 200, null),
				]);
				expect(recorded.map(r => r.outcome).sort()).toEqual(["delivered", "delivered", "failed", "retrying", "retrying"]);
				const now = node.clock.now().getTime();
				const state = async (i: number) => {
					const row = (await models.WebhookDelivery.findByPk(rows[i].id))!;
					return { status: row.status, attempts: Number(row.attempts), lastStatusCode: row.lastStatusCode === null ? null : Number(row.lastStatusCode), lastError: row.lastError, next: row.nextAttemptAt ? row.nextAttemptAt.getTime() - now : null };
				};
				expect(await state(0)).toEqual({ status: "delivered", attempts: 1, lastStatusCode: 200, lastError: null, next: null });
				expect(await state(1)).toEqual({ status: "pending", attempts: 1, lastStatusCode: 500, lastError: "HTTP 500", next: cfg.backoffMs });
				expect(await state(2)).toEqual({ status: "pending", attempts: 1, lastStatusCode: null, lastError: "Timed out after 10000 ms", next: cfg.backoffMs });
				expect(await state(3)).toEqual({ status: "delivered", attempts: 1, lastStatusCode: 200, lastError: null, next: null });
				expect(await state(4)).toMatchObject({ status: "canceled", next: null });
				expect(await state(5)).toEqual({ status: "failed", attempts: cfg.maxAttempts, lastStatusCode: 503, lastError: "HTTP 503", next: null });
				expect((await state(6)).status).toBe("sending"); // still the other node's
				const logs = await models.WebhookLog.findAll({ where: { apiKeyId: m.key.id } });
				const log = (i: number) => logs.find(l => l.deliveryId === rows[i].id);
				expect(logs).toHaveLength(5);
				expect(log(0)).toMatchObject({ success: true, statusCode: 200, attemptNumber: 1, error: null, response: "ok" });
				expect(log(1)).toMatchObject({ success: false, statusCode: 500, attemptNumber: 1, error: "Endpoint answered 500; only 200 counts as delivered" });
				expect(log(2)).toMatchObject({ success: false, statusCode: null, attemptNumber: 1, error: "Timed out after 10000 ms" });
				expect(log(3)).toMatchObject({ success: true, attemptNumber: 1 });
				expect(log(4)).toBeUndefined();
				expect(log(5)).toMatchObject({ success: false, statusCode: 503, attemptNumber: cfg.maxAttempts });
				expect(log(6)).toBeUndefined();
			} finally {
				await node.stop();
			}
		});

		it("a claim takes a row only as it read it: one claimed and recorded by another node meanwhile (attempt count moved on) or held by it is left alone", async () => {
			const node = await start();
			const { sequelize } = node.app;
			try {
				node.clock.freeze();
				const m = await merchant(node, receiver.url);
				await node.broker.destroyService(node.broker.getLocalService("webhooks")!);
				const { models } = node.app;
				const rows = await queued(node, m, 3);
				// Between the claim's read of its candidates and its UPDATE, another node claims rows[0], fails
				// and records it (pending again, attempt 1 counted, due now) and claims rows[1] (still sending).
				let raced = false;
				sequelize.addHook("afterQuery", "race", async (_options, query) => {
					if (raced || !/^SELECT id, eventId, type/.test((query as unknown as { sql?: string }).sql ?? "")) return;
					raced = true;
					await models.WebhookDelivery.update({ attempts: 1 }, { where: { id: rows[0].id } });
					await models.WebhookDelivery.update({ status: "sending", attempts: 1, leaseToken: crypto.randomUUID(), leaseOwner: "other" }, { where: { id: rows[1].id } });
				});
				const cfg = node.app.config.webhooks;
				const claim = () => claimDue(node.app, cfg, "me", { slots: 10, freeByKey: new Map(), perEndpoint: 10 });
				const first = await claim();
				sequelize.removeHook("afterQuery", "race");
				expect(raced).toBe(true);
				expect(first.map(d => [d.id, d.attempts])).toEqual([[rows[2].id, 1]]);
				expect(await models.WebhookDelivery.findByPk(rows[0].id)).toMatchObject({ status: "pending", attempts: 1, leaseToken: null });
				expect(await models.WebhookDelivery.findByPk(rows[1].id)).toMatchObject({ status: "sending", leaseOwner: "other" });
				// The next claim takes rows[0] for its second attempt, as stored.
				const second = await claim();
				expect(second.map(d => [d.id, d.attempts])).toEqual([[rows[0].id, 2]]);
				expect(await models.WebhookDelivery.findByPk(rows[0].id)).toMatchObject({ status: "sending", attempts: 2, leaseToken: second[0].leaseToken, leaseOwner: "me" });
			} finally {
				sequelize.removeHook("afterQuery", "race");
				await node.stop();
			}
		});

		it("one batch to an endpoint that fails and one that succeeds: each delivery ends right, the failing ones retried with backoff, the response logged as answered", async () => {
			const node = await start();
			const http = await import("node:http");
			// A failing answer with quotes, a backslash and a NUL byte: logged byte for byte on both backends.
			const answer = `down "for" 'maintenance' \\ \u0000 end`;
			let failing = true;
			const flaky = http.createServer((req, res) => {
				req.resume();
				req.on("end", () => {
					res.writeHead(failing ? 503 : 200, { "content-type": "text/plain" });
					res.end(failing ? answer : "ok");
				});
			});
			await new Promise<void>(r => flaky.listen(0, "127.0.0.1", r));
			try {
				node.clock.freeze();
				const good = await merchant(node, receiver.url);
				const bad = await merchant(node, `http://127.0.0.1:${(flaky.address() as { port: number }).port}/hooks`);
				const { models } = node.app;
				const cfg = node.app.config.webhooks;
				const goodRows = await queued(node, good, 4);
				const badRows = await queued(node, bad, 4, `http://127.0.0.1:${(flaky.address() as { port: number }).port}/hooks`);
				const all = [...goodRows, ...badRows].map(r => r.id);
				await drain(node);
				await until("eight attempts logged", async () => (await models.WebhookLog.count({ where: { deliveryId: all } })) === 8);
				// One claim took both endpoints' rows: one lease token.
				const after = await models.WebhookDelivery.findAll({ where: { id: all } });
				expect(new Set(after.map(r => r.leaseToken)).size).toBe(1);
				const now = node.clock.now().getTime();
				for (const row of after) {
					if (goodRows.some(g => g.id === row.id)) expect(row).toMatchObject({ status: "delivered", attempts: 1, lastStatusCode: 200, lastError: null, leaseUntil: null });
					else {
						expect(row).toMatchObject({ status: "pending", attempts: 1, lastStatusCode: 503, lastError: "HTTP 503", leaseUntil: null });
						expect(row.nextAttemptAt!.getTime() - now).toBe(cfg.backoffMs);
					}
				}
				const badLogs = await models.WebhookLog.findAll({ where: { deliveryId: badRows.map(r => r.id) } });
				expect(badLogs).toHaveLength(4);
				for (const log of badLogs) expect(log).toMatchObject({ success: false, statusCode: 503, attemptNumber: 1, response: answer, error: "Endpoint answered 503; only 200 counts as delivered" });
				expect(receiver.received).toHaveLength(4);
				// The endpoint recovers; after the backoff the four are sent again, as attempt 2, and delivered.
				failing = false;
				node.clock.advance(cfg.backoffMs);
				await drain(node);
				await until("all eight delivered", async () => (await models.WebhookDelivery.count({ where: { id: all, status: "delivered" } })) === 8);
				const logs = await models.WebhookLog.findAll({ where: { deliveryId: all } });
				expect(logs).toHaveLength(12);
				expect(new Set(logs.map(l => `${l.deliveryId}#${l.attemptNumber}`)).size).toBe(12);
				expect(logs.filter(l => l.attemptNumber === 2).map(l => l.deliveryId).sort()).toEqual(badRows.map(r => r.id).sort());
				expect(receiver.received).toHaveLength(4);
			} finally {
				flaky.closeAllConnections();
				flaky.close();
				await node.stop();
			}
		});

		it("a claimed attempt that waited in the node's queue until too little lease was left is released unsent and uncounted", async () => {
			const node = await start({ env: { WEBHOOK_CONCURRENCY_PER_ENDPOINT: "1", WEBHOOK_TIMEOUT_MS: "1000" } });
			const http = await import("node:http");
			const open = new Set<import("node:http").ServerResponse>();
			let requests = 0;
			const hang = http.createServer((_req, res) => {
				requests++;
				open.add(res);
			});
			await new Promise<void>(r => hang.listen(0, "127.0.0.1", r));
			try {
				node.clock.freeze();
				const m = await merchant(node, `http://127.0.0.1:${(hang.address() as { port: number }).port}/hang`);
				const rows = await queued(node, m, 3);
				const dispatcher = node.broker.getLocalService("webhooks") as unknown as { kick(full?: boolean): void };
				dispatcher.kick(true);
				// One attempt in flight (the endpoint's one slot), two claimed and waiting in the node's queue.
				await until("one request open", () => open.size === 1);
				expect(await node.app.models.WebhookDelivery.count({ where: { id: rows.map(r => r.id), status: "sending" } })).toBe(3);
				// Time passes while the endpoint hangs: the waiting claims' leases no longer cover a whole timeout.
				const cfg = node.app.config.webhooks;
				node.clock.advance(cfg.leaseMs - cfg.timeoutMs);
				// The hanging attempt times out (1 s); the two waiting ones are given back, never sent.
				await until("two released", async () => (await node.app.models.WebhookDelivery.count({ where: { id: rows.map(r => r.id), status: "pending", attempts: 0, leaseToken: null } })) === 2);
				await until("the timed-out attempt recorded", async () => (await node.app.models.WebhookLog.count({ where: { apiKeyId: m.key.id } })) === 1);
				expect(requests).toBe(1);
				const log = await node.app.models.WebhookLog.findOne({ where: { apiKeyId: m.key.id } });
				expect(log).toMatchObject({ success: false, attemptNumber: 1, error: "Timed out after 1000 ms" });
			} finally {
				for (const res of open) res.destroy();
				hang.closeAllConnections();
				hang.close();
				await node.stop();
			}
		});

		it("reuses connections per endpoint: the receiver sees fewer connections than requests", async () => {
			const node = await start({ env: { WEBHOOK_CONCURRENCY_PER_ENDPOINT: "4" } });
			const http = await import("node:http");
			let connections = 0;
			let requests = 0;
			const server = http.createServer((req, res) => {
				req.resume();
				req.on("end", () => {
					requests++;
					res.writeHead(200, { "Content-Type": "text/plain" }).end("ok");
				});
			});
			server.on("connection", () => connections++);
			server.keepAliveTimeout = 30_000;
			await new Promise<void>(r => server.listen(0, "127.0.0.1", r));
			try {
				const m = await merchant(node, `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`);
				const n = 40;
				for (let i = 0; i < n; i++) await canceledIntent(node, m.key);
				await drain(node);
				await until("all delivered", async () => (await node.app.models.WebhookDelivery.count({ where: { apiKeyId: m.key.id, status: "delivered" } })) === n);
				expect(requests).toBe(n);
				// At most one connection per slot to the endpoint (4), however many events.
				expect(connections).toBeGreaterThan(0);
				expect(connections).toBeLessThanOrEqual(4);
			} finally {
				server.closeAllConnections();
				server.close();
				await node.stop();
			}
		});
	});

	describe("test sends", () => {
		let node: TestNode;
		beforeAll(async () => {
			node = await start();
		});
		afterAll(async () => {
			await node.stop();
		});

		it("POST /webhooks/test/:apiKeyId sends a signed sample payment_intent.completed", async () => {
			const m = await merchant(node, receiver.url);
			const res = await node.http("POST", `/webhooks/test/${m.key.id}`, { token: m.token });
			expect(res.status).toBe(200);
			expect(res.body).toMatchObject({ success: true, delivered: true, statusCode: 200 });
			const [hit] = receiver.received;
			expect(verifyWebhookSignature(hit.rawBody, hit.headers["x-webhook-signature"], m.key.secret)).toBe(true);
			expect(hit.json).toMatchObject({ id: res.body.eventId, type: "payment_intent.completed", livemode: false, data: { object: { status: "completed" } } });
			expect(hit.json.data.object.latestTransaction).toBeDefined();

			const live = await node.http("POST", `/webhooks/test/${m.liveKey.id}`, { token: m.token });
			expect(live.status).toBe(200);
			expect(receiver.received[1].json.livemode).toBe(true);
			expect(verifyWebhookSignature(receiver.received[1].rawBody, receiver.received[1].headers["x-webhook-signature"], m.liveKey.secret)).toBe(true);
		});

		it("POST /webhooks/test/:apiKeyId/custom sends the caller's payload as the body", async () => {
			const m = await merchant(node, receiver.url);
			const payload = { type: "order.shipped", nested: { a: [1, "2"] } };
			const res = await node.http("POST", `/webhooks/test/${m.key.id}/custom`, { token: m.token, body: { payload } });
			expect(res.status).toBe(200);
			expect(res.body.success).toBe(true);
			expect(receiver.received[0].json).toEqual(payload);
			expect(verifyWebhookSignature(receiver.received[0].rawBody, receiver.received[0].headers["x-webhook-signature"], m.key.secret)).toBe(true);
			const logs = await node.http("GET", "/webhooks/logs", { token: m.token });
			expect(logs.body.logs[0]).toMatchObject({ event: "order.shipped", success: true, userId: m.user.id });

			const bad = await node.http("POST", `/webhooks/test/${m.key.id}/custom`, { token: m.token, body: { payload: "text" } });
			expect(bad.status).toBe(400);
		});

		it("is 404 for an unknown key, another organization's key and a key without URL", async () => {
			const m = await merchant(node, receiver.url);
			const stranger = await merchant(node, receiver.url);
			const bare = await merchant(node, null);
			for (const [token, id] of [
				[m.token, 999_999],
				[m.token, stranger.key.id],
				[bare.token, bare.key.id],
			] as Array<[string, number]>) {
				for (const path of [`/webhooks/test/${id}`, `/webhooks/test/${id}/custom`]) {
					const res = await node.http("POST", path, { token, body: path.endsWith("custom") ? { payload: { a: 1 } } : undefined });
					expect(res.status).toBe(404);
					expect(res.body).toMatchObject({ statusCode: 404, message: "Webhook URL not configured for this API key" });
				}
			}
			expect((await node.http("POST", `/webhooks/test/abc`, { token: m.token })).status).toBe(400);
			expect((await node.http("POST", `/webhooks/test/${m.key.id}`)).status).toBe(401);
			// An API key is not a dashboard user.
			expect((await node.http("POST", `/webhooks/test/${m.key.id}`, { key: m.key })).status).toBe(401);
			expect(receiver.received).toHaveLength(0);
		});
	});

	describe("GET /webhooks/logs", () => {
		let node: TestNode;
		beforeAll(async () => {
			node = await start();
		});
		afterAll(async () => {
			await node.stop();
		});

		it("pages with limit/offset (50/0 by default) and shows only the caller's organization", async () => {
			const m = await merchant(node, receiver.url);
			const other = await merchant(node, receiver.url);
			for (let i = 0; i < 3; i++) expect((await node.http("POST", `/webhooks/test/${m.key.id}`, { token: m.token })).status).toBe(200);
			expect((await node.http("POST", `/webhooks/test/${other.key.id}`, { token: other.token })).status).toBe(200);

			const all = await node.http("GET", "/webhooks/logs", { token: m.token });
			expect(all.body.total).toBe(3);
			expect(all.body.logs).toHaveLength(3);
			const page = await node.http("GET", "/webhooks/logs", { token: m.token, query: { limit: 1, offset: 1 } });
			expect(page.body).toMatchObject({ total: 3 });
			expect(page.body.logs.map((l: any) => l.id)).toEqual([all.body.logs[1].id]);
			expect(Object.keys(all.body.logs[0])).toEqual(
				expect.arrayContaining(["id", "apiKeyId", "userId", "event", "url", "statusCode", "success", "attemptNumber", "error", "response", "createdAt"]),
			);
			// The live organization (same user) has none; another member-less organization is 404.
			const live = await node.http("GET", "/webhooks/logs", { token: m.token, headers: { "x-organization-id": m.live.id } });
			expect(live.body).toEqual({ logs: [], total: 0 });
			const foreign = await node.http("GET", "/webhooks/logs", { token: m.token, headers: { "x-organization-id": other.sandbox.id } });
			expect(foreign.status).toBe(404);
			for (const query of [{ limit: 0 }, { limit: "x" }, { offset: -1 }]) {
				expect((await node.http("GET", "/webhooks/logs", { token: m.token, query: query as never })).status).toBe(400);
			}
			expect((await node.http("GET", "/webhooks/logs")).status).toBe(401);
		});

		it("drops rows older than the retention", async () => {
			const m = await merchant(node, receiver.url);
			expect((await node.http("POST", `/webhooks/test/${m.key.id}`, { token: m.token })).status).toBe(200);
			const { prune } = await import("../../lib/webhooks/queue");
			await prune(node.app, 30);
			expect((await node.http("GET", "/webhooks/logs", { token: m.token })).body.total).toBe(1);
			const count = () => node.app.models.WebhookLog.count({ where: { apiKeyId: m.key.id } });
			node.clock.advance(29 * 86_400_000);
			await prune(node.app, 30);
			expect(await count()).toBe(1);
			node.clock.advance(2 * 86_400_000);
			await prune(node.app, 30);
			expect(await count()).toBe(0);
			expect(await node.app.models.WebhookDelivery.count({ where: { apiKeyId: m.key.id } })).toBe(0);
			node.clock.reset();
		});
	});

	describe("inbound POST /webhooks", () => {
		const probe = (seen: any[]): ServiceSchema => ({
			name: "inbound-probe",
			events: {
				"webhooks.inbound.**"(ctx: any) {
					seen.push({ event: ctx.eventName, params: ctx.params });
				},
			},
		});

		it("stores an event once, dispatches it once and answers received: true", async () => {
			const node = await start();
			const seen: any[] = [];
			node.broker.createService(probe(seen));
			await node.broker.waitForServices(["inbound-probe"]);
			try {
				const body = { id: "evt_ext_1", type: "payment_intent.completed", data: { object: { id: "pi_1" } } };
				for (let i = 0; i < 3; i++) {
					const res = await node.http("POST", "/webhooks", { body });
					expect(res.status).toBe(200);
					expect(res.body).toEqual({ received: true });
				}
				// Without an id, the body's digest identifies the event.
				const anonymous = { type: "chain.transfer", data: { object: { hash: "0xabc" } } };
				expect((await node.http("POST", "/webhooks", { body: anonymous })).status).toBe(200);
				expect((await node.http("POST", "/webhooks", { body: anonymous })).status).toBe(200);
				await new Promise(r => setTimeout(r, 50));
				expect(await node.app.models.InboundEvent.count()).toBe(2);
				expect(seen.map(s => s.event)).toEqual(["webhooks.inbound.payment_intent.completed", "webhooks.inbound.chain.transfer"]);
				expect(seen[0].params).toMatchObject({ eventId: "evt_ext_1", type: "payment_intent.completed", data: { object: { id: "pi_1" } }, signatureVerified: false });

				// With a key, the event belongs to its organization.
				const m = await merchant(node, null);
				expect((await node.http("POST", "/webhooks", { key: m.key, body })).status).toBe(200);
				const owned = await node.app.models.InboundEvent.findOne({ where: { apiKeyId: m.key.id } });
				expect(owned?.organizationId).toBe(m.sandbox.id);
				expect((await node.http("POST", "/webhooks", { key: { key: m.key.key, secret: "sk_test_wrong" }, body })).status).toBe(401);
			} finally {
				await node.stop();
			}
		});

		it("dispatches again, once, an event stored while its dispatch failed", async () => {
			const node = await start();
			const seen: any[] = [];
			node.broker.createService(probe(seen));
			await node.broker.waitForServices(["inbound-probe"]);
			try {
				// As left by a node that stored the event and stopped before emitting it.
				await node.app.models.InboundEvent.create({
					dedupeKey: "k1",
					eventId: "evt_lost",
					type: "chain.transfer",
					organizationId: null,
					apiKeyId: null,
					signatureVerified: false,
					payload: JSON.stringify({ type: "chain.transfer", data: { object: { hash: "0x1" } } }),
					receivedAt: node.clock.now(),
					dispatchedAt: null,
				});
				await drain(node);
				expect(seen).toHaveLength(0); // it may still be on its way
				node.clock.advance(31_000);
				await drain(node);
				await drain(node);
				await new Promise(r => setTimeout(r, 50));
				expect(seen.map(s => [s.event, s.params.eventId, s.params.data])).toEqual([["webhooks.inbound.chain.transfer", "evt_lost", { object: { hash: "0x1" } }]]);
				expect((await node.app.models.InboundEvent.findOne({ where: { eventId: "evt_lost" } }))?.dispatchedAt).not.toBeNull();
			} finally {
				await node.stop();
			}
		});

		it("checks the signature over the raw body when PAYMENTS_WEBHOOK_SECRET is set", async () => {
			const secret = "whsec_inbound_test";
			const node = await start({ env: { PAYMENTS_WEBHOOK_SECRET: secret } });
			try {
				const { signWebhookBody } = await import("../../lib/webhooks/signature");
				// Not canonical JSON on purpose: the check must use the bytes sent.
				const raw = '{ "type": "payment_intent.completed",  "data": {"object": {"id": "pi_2"}} }';
				const post = (headers: Record<string, string>, rawBody = raw) =>
					node.http("POST", "/webhooks", { rawBody, headers: { "Content-Type": "application/json", ...headers } });

				const unsigned = await post({});
				expect(unsigned.status).toBe(400);
				expect(unsigned.body).toMatchObject({ statusCode: 400, message: "Invalid webhook signature", error: "Bad Request" });
				expect((await post({ "x-webhook-signature": signWebhookBody(raw, "other") })).body.message).toBe("Invalid webhook signature");
				expect((await post({ "x-webhook-signature": "nothex" })).status).toBe(400);
				expect((await post({ "x-webhook-signature": signWebhookBody(JSON.stringify(JSON.parse(raw)), secret) })).status).toBe(400);

				const ok = await post({ "x-webhook-signature": signWebhookBody(raw, secret) });
				expect(ok.status).toBe(200);
				expect(ok.body).toEqual({ received: true });
				const stored = await node.app.models.InboundEvent.findOne();
				expect(stored?.signatureVerified).toBe(true);
				expect(await node.app.models.InboundEvent.count()).toBe(1);
			} finally {
				await node.stop();
			}
		});

		it("in production without PAYMENTS_WEBHOOK_SECRET refuses every inbound event with 503, and says so once at start", async () => {
			const secrets = { AUTH_JWT_SECRET: "j".repeat(32), AUTH_REFRESH_SECRET: "r".repeat(32), MASTER_KEY: "m".repeat(32) };
			const warn = jest.spyOn(console, "warn").mockImplementation(() => undefined);
			let node: TestNode | undefined;
			try {
				node = await start({ env: { NODE_ENV: "production", LOG_LEVEL: "warn", ...secrets } });
				const said = warn.mock.calls.map(args => args.join(" ")).filter(line => line.includes("PAYMENTS_WEBHOOK_SECRET"));
				expect(said).toHaveLength(1);
				expect(said[0]).toMatch(/inbound POST \/webhooks .*503/);
				const { signWebhookBody } = await import("../../lib/webhooks/signature");
				const raw = JSON.stringify({ id: "evt_prod", type: "payment_intent.completed", data: { object: { id: "pi_3" } } });
				for (const headers of [{}, { "x-webhook-signature": signWebhookBody(raw, "anything") }] as Array<Record<string, string>>) {
					const res = await node.http("POST", "/webhooks", { rawBody: raw, headers: { "Content-Type": "application/json", ...headers } });
					expect(res.status).toBe(503);
					expect(res.body).toEqual({ statusCode: 503, message: "Service Unavailable", error: "Service Unavailable" });
				}
				expect(await node.app.models.InboundEvent.count()).toBe(0);
				// Nothing more is logged per request.
				expect(warn.mock.calls.map(args => args.join(" ")).filter(line => line.includes("PAYMENTS_WEBHOOK_SECRET"))).toHaveLength(1);
			} finally {
				warn.mockRestore();
				await node?.stop();
			}
		});

		it("refuses non-JSON bodies and malformed events with 400s", async () => {
			const node = await start();
			try {
				const text = await node.http("POST", "/webhooks", { rawBody: "type=x", headers: { "Content-Type": "application/x-www-form-urlencoded" } });
				expect(text.status).toBe(400);
				expect(text.body.message).toBe("Content-Type must be application/json");
				for (const body of [{}, { type: "x" }, { type: "x", data: {} }, { type: "x", data: { object: "s" } }, { type: "bad type!", data: { object: {} } }, { type: 5, data: { object: {} } }]) {
					const res = await node.http("POST", "/webhooks", { body });
					expect(res.status).toBe(400);
				}
				const broken = await node.http("POST", "/webhooks", { rawBody: '{"type":', headers: { "Content-Type": "application/json" } });
				expect(broken.status).toBe(400);
				expect(await node.app.models.InboundEvent.count()).toBe(0);
			} finally {
				await node.stop();
			}
		});
	});
});
