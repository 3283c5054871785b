/**
 * The set-up the watcher services' payment tests (test/services/watcher-*.test.ts) share: a node
 * running the payments services, webhooks and one watcher against a chain node the test starts,
 * a merchant whose key delivers webhooks to a receiver, and what the tests read back.
 */
import type { TransactionCredit } from "../../models/transaction.model";
import type { HttpResponse, TestNode } from "./harness";
import { startReceiver, type WebhookReceiver } from "./webhook-receiver";
import { PAYMENTS_SERVICES, sandboxMerchant, startPaymentsNode } from "../e2e/payments.helpers";

export interface WatcherServiceTest {
	node: TestNode;
	receiver: WebhookReceiver;
	key: { key: string; secret: string };
}

/** What a test reads back: a checkout's transaction, an intent (as the merchant), the webhook types an intent got, a transaction's credits. */
export interface WatcherServiceReads {
	getTx(id: string): Promise<HttpResponse["body"]>;
	getIntent(id: string): Promise<HttpResponse["body"]>;
	hooksFor(intentId: string): string[];
	credits(txId: string): Promise<TransactionCredit[]>;
}

/**
 * Call in a describe: before its tests, `chainEnv()` (which starts the test's chain node and answers
 * its settings for the node), the webhook receiver, then the node running `service` with those
 * settings (the watcher and the webhooks polling every 50 ms) and the merchant, handed to `set`;
 * after them, the node stopped and the receiver closed (the test stops its chain node after).
 */
export function watcherServiceTest(service: string, chainEnv: () => Promise<Record<string, string>>, set: (t: WatcherServiceTest) => void): WatcherServiceReads {
	let t: WatcherServiceTest | undefined;
	let node: TestNode | undefined;
	let receiver: WebhookReceiver | undefined;
	beforeAll(async () => {
		const env = await chainEnv();
		receiver = await startReceiver();
		node = await startPaymentsNode({ services: [...PAYMENTS_SERVICES, "webhooks", service], env: { ...env, WATCHER_POLL_MS: "50", WEBHOOK_POLL_MS: "50" } });
		const { key } = await sandboxMerchant(node, receiver.url);
		t = { node, receiver, key };
		set(t);
	}, 120_000);
	afterAll(async () => {
		await node?.stop();
		await receiver?.close();
	});
	return {
		getTx: async id => (await t!.node.http("GET", `/payments/transactions/${id}`)).body,
		getIntent: async id => (await t!.node.http("GET", `/payment_intents/${id}`, { key: t!.key })).body,
		hooksFor: intentId => t!.receiver.received.filter(h => h.json?.data?.object?.id === intentId).map(h => h.json.type as string),
		credits: txId => t!.node.app.models.TransactionCredit.findAll({ where: { transactionId: txId } }),
	};
}
