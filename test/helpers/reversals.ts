/**
 * What the reorg-reversal tests share (test/services/reorg-reversal*.test.ts): a node with the
 * payments services, webhooks, the withdrawals ledger, metrics and one chain's watcher polling
 * fast; reads of an organization's ledger account; the webhooks one intent received; the counters.
 */
import { freePort } from "./anvil";
import type { Env } from "../../lib/config";
import type { TestNode } from "./harness";
import type { WebhookReceiver } from "./webhook-receiver";
import { PAYMENTS_SERVICES, startPaymentsNode } from "../e2e/payments.helpers";

export async function startReversalNode(watcher: "watcher-evm" | "watcher-bitcoin", env: Env): Promise<TestNode> {
	return startPaymentsNode({
		services: [...PAYMENTS_SERVICES, "webhooks", "withdrawals", watcher],
		env: { WATCHER_POLL_MS: "50", WEBHOOK_POLL_MS: "50", WITHDRAWALS_FEED_POLL_MS: "200", METRICS: "true", METRICS_PORT: String(await freePort()), ...env },
	});
}

/** One token's ledger account of an organization: its balance and its entries ([kind, amount], oldest first). */
export function ledgerOf(node: TestNode, networkId: string, tokenId: string) {
	return {
		balance: (organizationId: string) => node.broker.call("withdrawals.balance", { organizationId, networkId, tokenId }) as Promise<{ balance: string; available: string }>,
		entries: async (organizationId: string) =>
			(await node.app.models.LedgerEntry.findAll({ where: { organizationId, networkId, tokenId }, order: [["createdAt", "ASC"]] })).map(e => [e.kind, e.amount]),
	};
}

/** The webhooks of one type a receiver got for one intent. */
export const hooksOf = (receiver: WebhookReceiver) => (intentId: string, type: string) => receiver.received.filter(h => h.json?.data?.object?.id === intentId && h.json?.type === type);

/** A payments counter's value for a network on this node's registry (0 before its first event). */
export function counterOf(node: TestNode, name: "payments.credits.reversed" | "payments.credits.recredited", network: string): number {
	return (node.broker.metrics.getMetric(name)?.get({ network })?.value as number | undefined) ?? 0;
}
