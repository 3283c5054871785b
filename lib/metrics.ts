/**
 * The gateway's own metrics (docs/deployment.md "Metrics") on Moleculer's metric registry, which
 * the Prometheus reporter serves when METRICS=true (moleculer.config.ts). The names are fixed:
 * dashboards and alert rules use them. Labels take values from small fixed sets (organization
 * mode, network slug, outcome), never ids, addresses, URLs or secrets.
 *
 * Every helper is a no-op when metrics are off, and never throws: a metric that cannot be
 * written must not fail a payment that has committed.
 */
import type { MetricRegistry, ServiceBroker } from "moleculer";
import type { OrganizationMode } from "../models/organization.model";

export const METRIC = {
	intentsCreated: "payments.intents.created",
	intentsSettled: "payments.intents.settled",
	transactionsCredited: "payments.transactions.credited",
	creditsReversed: "payments.credits.reversed",
	creditsRecredited: "payments.credits.recredited",
	webhookDeliveries: "webhooks.deliveries",
	webhookLatency: "webhooks.delivery.latency",
	outboxBacklog: "webhooks.outbox.backlog",
	watcherHead: "watcher.head",
	watcherCursor: "watcher.cursor",
	watcherLag: "watcher.lag",
	watcherLagMax: "watcher.lag.max",
	networksLed: "watcher.networks.led",
	networksShare: "watcher.networks.share",
	sweepOutcomes: "sweeps.outcomes",
	sweepsBlocked: "sweeps.blocked",
} as const;

/** What became of one webhook attempt: delivered (a 200), retrying (failed, another attempt is scheduled), failed (the last attempt failed). */
export const WEBHOOK_OUTCOMES = ["delivered", "retrying", "failed"] as const;
export type WebhookOutcome = (typeof WEBHOOK_OUTCOMES)[number];

/**
 * A sweep transaction's steps: broadcast, confirmed, failed (proven: reverted on chain), replaced
 * (fee bump), skipped (not worth its fee, ended unsent), stalled (its nonce or inputs were taken by a
 * transaction we do not know: an operator alert, funds kept locked).
 */
export const SWEEP_OUTCOMES = ["broadcast", "confirmed", "failed", "replaced", "skipped", "stalled"] as const;
export type SweepOutcome = (typeof SWEEP_OUTCOMES)[number];

/** Where a sweeper stopped sending after repeated failures (lib/sweeps/holds.ts): a destination, or a token deposit. */
export const SWEEP_HOLD_SCOPES = ["destination", "deposit"] as const;

/** The labels of each metric (the only ones it accepts). */
interface MetricLabels {
	"payments.intents.created": { mode: OrganizationMode };
	"payments.intents.settled": { network: string };
	"payments.transactions.credited": { network: string };
	"payments.credits.reversed": { network: string };
	"payments.credits.recredited": { network: string };
	"webhooks.deliveries": { outcome: WebhookOutcome };
	"webhooks.delivery.latency": Record<string, never>;
	"webhooks.outbox.backlog": Record<string, never>;
	"watcher.head": { network: string };
	"watcher.cursor": { network: string };
	"watcher.lag": { network: string };
	"watcher.lag.max": { service: string };
	"watcher.networks.led": { service: string };
	"watcher.networks.share": { service: string };
	"sweeps.outcomes": { network: string; outcome: SweepOutcome };
	"sweeps.blocked": { network: string; scope: (typeof SWEEP_HOLD_SCOPES)[number] };
}

type CounterName =
	| typeof METRIC.intentsCreated
	| typeof METRIC.intentsSettled
	| typeof METRIC.transactionsCredited
	| typeof METRIC.creditsReversed
	| typeof METRIC.creditsRecredited
	| typeof METRIC.webhookDeliveries
	| typeof METRIC.sweepOutcomes
	| typeof METRIC.sweepsBlocked;
type GaugeName =
	| typeof METRIC.outboxBacklog
	| typeof METRIC.watcherHead
	| typeof METRIC.watcherCursor
	| typeof METRIC.watcherLag
	| typeof METRIC.watcherLagMax
	| typeof METRIC.networksLed
	| typeof METRIC.networksShare;
type HistogramName = typeof METRIC.webhookLatency;

/** Histograms' `buckets: true` are Moleculer's default buckets, in milliseconds (1 ms to 10 s). */
type Definition = (MetricRegistry.CounterMetricOptions | MetricRegistry.GaugeMetricOptions | MetricRegistry.HistogramMetricOptions) & { name: keyof MetricLabels };

const DEFINITIONS: Definition[] = [
	{ type: "counter", name: METRIC.intentsCreated, labelNames: ["mode"], description: "Payment intents created (API and pay page)" },
	{ type: "counter", name: METRIC.intentsSettled, labelNames: ["network"], description: "Payment intents that reached succeeded" },
	{ type: "counter", name: METRIC.transactionsCredited, labelNames: ["network"], description: "Transfers credited to checkouts (each transfer once)" },
	{ type: "counter", name: METRIC.creditsReversed, labelNames: ["network"], description: "Credited transfers a reorg deeper than the required confirmations orphaned (reversed in the books)" },
	{ type: "counter", name: METRIC.creditsRecredited, labelNames: ["network"], description: "Reversed transfers mined again and credited again" },
	{ type: "counter", name: METRIC.webhookDeliveries, labelNames: ["outcome"], description: "Webhook attempts by outcome" },
	{ type: "histogram", name: METRIC.webhookLatency, labelNames: [], unit: "millisecond", buckets: true, description: "Webhook attempt duration, request to answer (ms)" },
	{ type: "gauge", name: METRIC.outboxBacklog, labelNames: [], description: "Payment events not yet relayed to the webhook queue" },
	{ type: "gauge", name: METRIC.watcherHead, labelNames: ["network"], description: "Chain watcher head (block)" },
	{ type: "gauge", name: METRIC.watcherCursor, labelNames: ["network"], description: "Chain watcher cursor (block)" },
	{ type: "gauge", name: METRIC.watcherLag, labelNames: ["network"], description: "Chain watcher lag (blocks)" },
	// Per replica (the service: watcher-evm, sweeper-evm, ...): what the HPA's lag option scales on (docs/deployment.md "Autoscaling on lag").
	{ type: "gauge", name: METRIC.watcherLagMax, labelNames: ["service"], description: "Highest lag (blocks) among the networks this replica leads (0: none led)" },
	{ type: "gauge", name: METRIC.networksLed, labelNames: ["service"], description: "Networks this replica leads (watchers and sweepers)" },
	{ type: "gauge", name: METRIC.networksShare, labelNames: ["service"], description: "This replica's fair share: ceil(networks / live replicas of its service)" },
	{ type: "counter", name: METRIC.sweepOutcomes, labelNames: ["network", "outcome"], description: "Sweep transactions by outcome" },
	{ type: "counter", name: METRIC.sweepsBlocked, labelNames: ["network", "scope"], description: "Destinations or deposits the sweeper stopped sending to after repeated failures" },
];

const registered = new WeakSet<ServiceBroker>();

/** The broker's registry with the gateway's metrics in it (registered once per broker); null when metrics are off. */
function registryOf(broker: ServiceBroker): ServiceBroker["metrics"] | null {
	if (!broker.isMetricsEnabled()) return null;
	const registry = broker.metrics;
	if (!registered.has(broker)) {
		// Registering a name again would replace the metric and lose its values.
		for (const def of DEFINITIONS) {
			if (!registry.hasMetric(def.name)) registry.register({ ...def } as Parameters<typeof registry.register>[0]);
		}
		registered.add(broker);
	}
	return registry;
}

function safely(broker: ServiceBroker, name: string, write: (registry: ServiceBroker["metrics"]) => void): void {
	try {
		const registry = registryOf(broker);
		if (registry) write(registry);
	} catch (err) {
		broker.logger.warn(`Metric ${name} could not be written: ${(err as Error).message}`);
	}
}

/** Registers the gateway's metrics on a broker (lib/node.ts, once per broker); a no-op when metrics are off. */
export function registerAppMetrics(broker: ServiceBroker): void {
	safely(broker, "registration", () => undefined);
}

export function countMetric<N extends CounterName>(broker: ServiceBroker, name: N, labels: MetricLabels[N], by = 1): void {
	safely(broker, name, registry => registry.increment(name, labels, by));
}

/**
 * Shows counters at 0 before their first event: Prometheus' `increase()` needs a sample before
 * the first increment, or an alert on the first failure never fires.
 */
export function startCounters<N extends CounterName>(broker: ServiceBroker, name: N, labelSets: Array<MetricLabels[N]>): void {
	safely(broker, name, registry => {
		for (const labels of labelSets) registry.increment(name, labels, 0);
	});
}

export function setGauge<N extends GaugeName>(broker: ServiceBroker, name: N, value: number, labels: MetricLabels[N]): void {
	safely(broker, name, registry => registry.set(name, value, labels));
}

export function observeMetric<N extends HistogramName>(broker: ServiceBroker, name: N, value: number, labels: MetricLabels[N]): void {
	safely(broker, name, registry => registry.observe(name, value, labels));
}

/** Removes one labelled series of a gauge from this node's export (a watcher that no longer leads a network). */
export function dropSeries<N extends GaugeName>(broker: ServiceBroker, name: N, labels: MetricLabels[N]): void {
	safely(broker, name, registry => {
		const metric = registry.getMetric(name);
		if (metric && metric.values.delete(metric.hashingLabels(labels))) metric.setDirty();
	});
}
