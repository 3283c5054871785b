/**
 * The metric helpers on a bare broker: registered once per broker (a second registration would
 * wipe the values), no-ops with metrics off, never throwing into the caller, counters shown at 0,
 * and a gauge series removed. The values as Prometheus scrapes them: test/services/metrics.test.ts.
 */
import { ServiceBroker } from "moleculer";
import { countMetric, dropSeries, METRIC, observeMetric, registerAppMetrics, setGauge, startCounters, SWEEP_OUTCOMES } from "../../lib/metrics";

const value = (broker: ServiceBroker, name: string, labels: Record<string, string> = {}) => broker.metrics.getMetric(name)?.get(labels)?.value;

describe("metric helpers", () => {
	let broker: ServiceBroker;
	beforeEach(() => {
		broker = new ServiceBroker({ logger: false, metrics: { enabled: true } });
	});

	it("registers every metric once per broker: registering again keeps the values", () => {
		registerAppMetrics(broker);
		for (const name of Object.values(METRIC)) expect(broker.metrics.hasMetric(name)).toBe(true);
		countMetric(broker, METRIC.intentsCreated, { mode: "live" }, 2);
		registerAppMetrics(broker);
		countMetric(broker, METRIC.intentsCreated, { mode: "live" });
		expect(value(broker, METRIC.intentsCreated, { mode: "live" })).toBe(3);
		expect(broker.metrics.getMetric(METRIC.webhookLatency)?.type).toBe("histogram");
		expect(broker.metrics.getMetric(METRIC.outboxBacklog)?.type).toBe("gauge");
	});

	it("registers on first use when the broker was not made by lib/node.ts", () => {
		setGauge(broker, METRIC.watcherLag, 7, { network: "ethereum" });
		expect(value(broker, METRIC.watcherLag, { network: "ethereum" })).toBe(7);
	});

	it("does nothing when metrics are off", () => {
		const off = new ServiceBroker({ logger: false, metrics: { enabled: false } });
		registerAppMetrics(off);
		countMetric(off, METRIC.transactionsCredited, { network: "ethereum" });
		observeMetric(off, METRIC.webhookLatency, 12, {});
		setGauge(off, METRIC.outboxBacklog, 3, {});
		expect(off.metrics.hasMetric(METRIC.transactionsCredited)).toBe(false);
	});

	it("never throws into the caller: a failed write is logged", () => {
		const warn = jest.fn();
		const logged = new ServiceBroker({ logger: { type: "Console", options: { level: "warn" } }, metrics: { enabled: true } });
		jest.spyOn(logged.logger, "warn").mockImplementation(warn);
		// Someone else took the name with another type: the registry refuses `set` on a histogram.
		logged.metrics.register({ type: "histogram", name: METRIC.outboxBacklog, labelNames: [] });
		expect(() => setGauge(logged, METRIC.outboxBacklog, 1, {})).not.toThrow();
		expect(warn).toHaveBeenCalledWith(expect.stringContaining(`Metric ${METRIC.outboxBacklog} could not be written`));
	});

	it("shows counters at 0 before their first event, without resetting counted ones", () => {
		countMetric(broker, METRIC.sweepOutcomes, { network: "ethereum", outcome: "failed" });
		startCounters(broker, METRIC.sweepOutcomes, SWEEP_OUTCOMES.map(outcome => ({ network: "ethereum", outcome })));
		expect(value(broker, METRIC.sweepOutcomes, { network: "ethereum", outcome: "broadcast" })).toBe(0);
		expect(value(broker, METRIC.sweepOutcomes, { network: "ethereum", outcome: "failed" })).toBe(1);
		expect(broker.metrics.getMetric(METRIC.sweepOutcomes)?.snapshot()).toHaveLength(SWEEP_OUTCOMES.length);
	});

	it("drops one series of a gauge and leaves the others", () => {
		setGauge(broker, METRIC.watcherHead, 100, { network: "ethereum" });
		setGauge(broker, METRIC.watcherHead, 200, { network: "base" });
		broker.metrics.getMetric(METRIC.watcherHead)?.snapshot();
		dropSeries(broker, METRIC.watcherHead, { network: "ethereum" });
		// The snapshot is cached until the metric is marked dirty: the drop must mark it.
		expect(broker.metrics.getMetric(METRIC.watcherHead)?.snapshot().map(s => s.labels)).toEqual([{ network: "base" }]);
		dropSeries(broker, METRIC.watcherHead, { network: "ethereum" });
	});
});
