/**
 * The client's types from the generated document types: checked by `npm run typecheck` (the
 * `@ts-expect-error` lines must be errors); at run time only a client that sends nothing.
 */
import { CryptoPayClient, type PaymentIntentCreated, type WebhookEvent } from "../../sdk/src";

const never = (): Promise<Response> => Promise.reject(new Error("not sent"));

describe("sdk/src/types", () => {
	it("types paths, parameters, bodies and answers from the document", async () => {
		const client = new CryptoPayClient({ baseUrl: "http://127.0.0.1:1/api/v1", fetch: never, retry: { retries: 0 } });
		const calls: Array<Promise<unknown>> = [];
		const created: Promise<PaymentIntentCreated> = client.post("/payment_intents", {
			body: { amount: "1", currency: "usdc", payment_method_types: ["crypto"], tokenId: "t", networkId: "n", return_url: "https://shop.example/r", metadata: { orderId: "1" } },
		});
		calls.push(created);
		calls.push(client.get("/payment_intents/{id}", { path: { id: "x" } }));
		calls.push(client.get("/payments/transactions", { query: { status: "completed", limit: 5 } }));
		// @ts-expect-error: no such path
		calls.push(client.get("/payment_intent/{id}", { path: { id: "x" } }));
		// @ts-expect-error: the path parameter is required
		calls.push(client.get("/payment_intents/{id}"));
		// @ts-expect-error: the body is required
		calls.push(client.post("/payment_intents", {}));
		// @ts-expect-error: amount is a decimal string, never a number
		calls.push(client.paymentIntents.create({ amount: 1, currency: "usdc", payment_method_types: ["crypto"], tokenId: "t", networkId: "n", return_url: "https://x" }));
		// @ts-expect-error: not a status of transactions
		calls.push(client.get("/payments/transactions", { query: { status: "paid" } }));
		const results = await Promise.allSettled(calls);
		expect(results.every(r => r.status === "rejected")).toBe(true);

		const event = { type: "payment_intent.completed" } as WebhookEvent;
		if (event.type === "payment_intent.completed") expect(event.type).toBe("payment_intent.completed");
	});
});
