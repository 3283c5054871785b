/**
 * The SDK against a real gateway started by the test (payments services and the webhook
 * dispatcher on a port): an API key made through the SDK with a user's token, an intent created
 * (the same Idempotency-Key gives the same intent), paid by simulation, its webhook received on a
 * local HTTP server and verified with verifyWebhook, errors in the spec's shape, and a paginated list.
 */
import { CryptoPayApiError, CryptoPayClient, collect, verifyWebhook, WebhookVerificationError } from "../../sdk/src";
import { TestNode } from "../helpers/harness";
import { createUserWithToken, UserWithToken } from "../helpers/users";
import { startReceiver, WebhookReceiver } from "../helpers/webhook-receiver";
import { until } from "../helpers/until";
import { IDS, intentBody, PAYMENTS_SERVICES, startPaymentsNode } from "../e2e/payments.helpers";

describe("sdk/src/client against a real gateway", () => {
	let node: TestNode;
	let receiver: WebhookReceiver;
	let user: UserWithToken;
	let merchant: CryptoPayClient;
	let secret: string;
	let liveKey: { key: string; secret: string };

	beforeAll(async () => {
		node = await startPaymentsNode({ services: [...PAYMENTS_SERVICES, "webhooks"] });
		receiver = await startReceiver();
		user = await createUserWithToken(node);
		const dashboard = new CryptoPayClient({ baseUrl: node.baseUrl, token: user.token });
		const created = await dashboard.post("/organizations/{organizationId}/api-keys", { path: { organizationId: user.sandbox.id }, body: { name: "sdk", webhookUrl: receiver.url } });
		const { key, secret: keySecret } = created as { key: string; secret: string };
		expect(key).toMatch(/^ak_test_/);
		secret = keySecret;
		merchant = new CryptoPayClient({ baseUrl: node.baseUrl, apiKey: { key, secret } });
		liveKey = (await dashboard.post("/organizations/{organizationId}/api-keys", { path: { organizationId: user.live.id }, body: { name: "live" } })) as { key: string; secret: string };
	});
	afterAll(async () => {
		await receiver?.close();
		await node?.stop();
	});

	it("creates an intent, pays it by simulation, and receives and verifies its webhook", async () => {
		const intent = await merchant.paymentIntents.create(intentBody({ metadata: { orderId: "sdk-1" } }) as never, { idempotencyKey: "order-sdk-1" });
		expect(intent).toMatchObject({ amount: "0.5", currency: "eth", status: "requires_payment_method", clientSecret: expect.stringContaining("_secret_") });
		// The same key is the same intent; a call without one gets a generated key, so a new intent.
		const again = await merchant.paymentIntents.create(intentBody({ metadata: { orderId: "sdk-1" } }) as never, { idempotencyKey: "order-sdk-1" });
		expect(again.id).toBe(intent.id);
		const other = await merchant.paymentIntents.create(intentBody() as never);
		expect(other.id).not.toBe(intent.id);

		const confirmed = await merchant.paymentIntents.confirm(intent.id, { client_secret: intent.clientSecret });
		expect(confirmed).toMatchObject({ id: intent.id, status: "requires_confirmation" });
		await merchant.paymentIntents.simulate(intent.id);
		const paid = await merchant.paymentIntents.retrieve(intent.id);
		expect(paid).toMatchObject({ id: intent.id, status: "succeeded", latestTransaction: expect.objectContaining({ status: "completed" }) });

		const hit = await until(
			"the completed webhook",
			() => receiver.received.find(h => h.json?.type === "payment_intent.completed" && h.json?.data?.object?.id === intent.id),
			60_000,
		);
		const event = verifyWebhook(hit.rawBody, hit.headers["x-webhook-signature"], secret);
		expect(event).toMatchObject({ type: "payment_intent.completed", livemode: false, data: { object: { id: intent.id, amount: "0.5", metadata: { orderId: "sdk-1" } } } });
		expect(event.id).toBe(hit.headers["x-webhook-id"]);

		const refusal = (f: () => unknown) => {
			try {
				f();
			} catch (e) {
				return e instanceof WebhookVerificationError ? e.code : e;
			}
			return "accepted";
		};
		expect(refusal(() => verifyWebhook(hit.rawBody.replace('"0.5"', '"0.05"'), hit.headers["x-webhook-signature"], secret))).toBe("signature_mismatch");
		expect(refusal(() => verifyWebhook(hit.rawBody, hit.headers["x-webhook-signature"], `${secret}x`))).toBe("signature_mismatch");
		expect(refusal(() => verifyWebhook(hit.rawBody, hit.headers["x-webhook-signature"], secret, { now: Date.parse(event.created) + 301_000, toleranceSeconds: 300 }))).toBe("timestamp_outside_tolerance");
		expect(refusal(() => verifyWebhook(hit.rawBody, undefined, secret))).toBe("missing_signature");
	});

	it("throws the gateway's errors as CryptoPayApiError in the spec's shape", async () => {
		const invalid = await merchant.paymentIntents.create(intentBody({ amount: "-1" }) as never).catch(e => e);
		expect(invalid).toBeInstanceOf(CryptoPayApiError);
		expect(invalid).toMatchObject({ status: 400, errors: { amount: "stringPattern" }, body: { statusCode: 400, error: "Bad Request" } });

		const live = new CryptoPayClient({ baseUrl: node.baseUrl, apiKey: liveKey });
		const intent = await merchant.paymentIntents.create(intentBody() as never);
		const missing = await live.paymentIntents.simulate(intent.id).catch(e => e);
		expect(missing).toMatchObject({ status: 404 }); // another organization's intent

		const unauthorized = await new CryptoPayClient({ baseUrl: node.baseUrl, apiKey: { key: liveKey.key, secret: "sk_wrong" } }).paymentIntents.retrieve(intent.id).catch(e => e);
		expect(unauthorized).toBeInstanceOf(CryptoPayApiError);
		expect(unauthorized.status).toBe(401);
	});

	it("walks a paginated list with the async iterator, page after page", async () => {
		for (let i = 0; i < 3; i++) {
			const intent = await merchant.paymentIntents.create(intentBody({ tokenId: IDS.sepoliaEth }) as never);
			await merchant.paymentIntents.simulate(intent.id);
		}
		const dashboard = new CryptoPayClient({ baseUrl: node.baseUrl, token: user.token, organizationId: user.sandbox.id });
		const pages: number[] = [];
		const counting = new CryptoPayClient({
			baseUrl: node.baseUrl,
			token: user.token,
			organizationId: user.sandbox.id,
			fetch: (input, init) => {
				pages.push(Number(new URL(String(input)).searchParams.get("page")));
				return fetch(input, init);
			},
		});
		const all = await collect(counting.paginate("/payments/transactions", { query: { limit: 2 } }));
		const direct = (await dashboard.get("/payments/transactions", { query: { limit: 100 } })) as { data: Array<{ id: string }>; hasNextPage: boolean };
		expect(direct.data.length).toBeGreaterThanOrEqual(4);
		expect((all as Array<{ id: string }>).map(t => t.id).sort()).toEqual(direct.data.map(t => t.id).sort());
		// hasNextPage is exact (the gateway reads one row more), so no empty last page is asked for.
		expect(pages).toEqual(Array.from({ length: Math.ceil(direct.data.length / 2) }, (_, i) => i + 1));
		// Stopping early sends no further request.
		pages.length = 0;
		for await (const tx of counting.paginate("/payments/transactions", { query: { limit: 2 } })) {
			expect(tx).toBeTruthy();
			break;
		}
		expect(pages).toEqual([1]);
	});
});
