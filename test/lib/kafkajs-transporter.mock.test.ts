/**
 * KafkaJsTransporter against a Kafka-protocol broker (librdkafka's mock cluster, run by kcat;
 * see test/helpers/kafka-mock.ts): requests and answers between nodes, packet order per sender,
 * broadcasts, namespaces, the built-in balancer mode (shared consumer groups), recovery after a
 * consumer dies, and a clear failure when no broker answers.
 *
 * Skipped, with a warning, only when kcat is not installed (CI installs it). The transporter does
 * not depend on the database backend, so this file runs in the sqlite project only.
 */
import crypto from "node:crypto";
import { BrokerOptions, Context, Errors, ServiceBroker } from "moleculer";
import { KafkaJsTransporter, KafkaJsTransporterOptions } from "../../lib/kafkajs-transporter";
import { CapturingLogger, LogLine } from "../helpers/harness";
import { KafkaMock, kcatAvailable, startKafkaMock } from "../helpers/kafka-mock";

const HAVE_KCAT = kcatAvailable();
if (!HAVE_KCAT) console.warn("kafkajs-transporter.mock.test.ts skipped: `kcat` is not installed (apt-get install kcat)");
const describeKafka = HAVE_KCAT && process.env.TEST_BACKEND !== "mysql" ? describe : describe.skip;

describeKafka("KafkaJsTransporter over librdkafka's mock cluster", () => {
	let mock: KafkaMock;
	let running: ServiceBroker[] = [];

	beforeAll(async () => {
		mock = await startKafkaMock();
	});
	afterEach(async () => {
		await Promise.all(running.map(b => b.stop().catch(() => undefined)));
		running = [];
	});
	afterAll(async () => {
		await mock?.stop();
	});

	const namespace = () => `kt${crypto.randomBytes(4).toString("hex")}`;

	function node(nodeID: string, ns: string, brokerOpts: BrokerOptions = {}, txOpts: Partial<KafkaJsTransporterOptions> = {}) {
		const transporter = new KafkaJsTransporter({ brokers: [mock.address], consumer: { maxWaitTimeInMs: 20 }, ...txOpts });
		const broker = new ServiceBroker({
			nodeID,
			namespace: ns,
			logLevel: (process.env.TEST_LOG_LEVEL as BrokerOptions["logLevel"]) || "error",
			transporter: transporter as unknown as BrokerOptions["transporter"],
			requestTimeout: 10_000,
			...brokerOpts,
		});
		running.push(broker);
		return { broker, transporter };
	}

	it("calls an action on another node; an event broadcast inside the action arrives before its answer", async () => {
		const ns = namespace();
		const a = node("a", ns).broker;
		const b = node("b", ns).broker;
		const seenOnA: Array<{ id: string; from: string | null }> = [];
		a.createService({
			name: "watch",
			events: {
				"orders.placed"(ctx: Context<{ id: string }>) {
					seenOnA.push({ id: ctx.params.id, from: ctx.nodeID });
				},
			},
		});
		b.createService({
			name: "orders",
			actions: {
				async place(ctx: Context<{ id: string }>) {
					await ctx.broadcast("orders.placed", { id: ctx.params.id });
					return { id: ctx.params.id, servedBy: ctx.broker.nodeID };
				},
			},
		});
		await Promise.all([a.start(), b.start()]);
		// Each side knows the other's services (B only broadcasts to nodes it knows listen).
		await Promise.all([a.waitForServices(["orders"], 20_000, 100), b.waitForServices(["watch"], 20_000, 100)]);

		for (let i = 0; i < 5; i++) {
			const id = `o${i}`;
			const res = await a.call("orders.place", { id });
			expect(res).toEqual({ id, servedBy: "b" });
			// Same sender, one partition per node: the event was handled before the answer came.
			expect(seenOnA[seenOnA.length - 1]).toEqual({ id, from: "b" });
		}
		expect(seenOnA).toHaveLength(5);
	});

	it("delivers a broadcast to every node and a balanced emit to one node of the group", async () => {
		const ns = namespace();
		const nodes = ["a", "b", "c"].map(id => node(id, ns).broker);
		const got: Record<string, string[]> = { a: [], b: [], c: [] };
		for (const broker of nodes.slice(1)) {
			broker.createService({
				name: "listener",
				events: {
					"cluster.hello"(ctx: Context<{ n: number }>) {
						got[ctx.broker.nodeID].push(`hello${ctx.params.n}`);
					},
					"cluster.job"(ctx: Context<{ n: number }>) {
						got[ctx.broker.nodeID].push(`job${ctx.params.n}`);
					},
				},
			});
		}
		await Promise.all(nodes.map(b => b.start()));
		await nodes[0].waitForServices([{ name: "listener" }], 20_000, 100);
		// Both listeners are known before emitting.
		await waitFor(() => nodes[0].registry.getServiceList({ onlyAvailable: true, skipInternal: true }).filter(s => s.name === "listener").length === 2);

		await nodes[0].broadcast("cluster.hello", { n: 1 });
		for (let n = 0; n < 6; n++) await nodes[0].emit("cluster.job", { n });
		await waitFor(() => got.b.includes("hello1") && got.c.includes("hello1") && got.b.length + got.c.length === 8);

		const jobs = [...got.b, ...got.c].filter(s => s.startsWith("job")).sort();
		expect(jobs).toEqual(["job0", "job1", "job2", "job3", "job4", "job5"]); // each exactly once
		expect(got.a).toEqual([]);
	});

	it("keeps namespaces apart on one Kafka cluster", async () => {
		const a = node("a", namespace()).broker;
		const other = node("x", namespace()).broker;
		other.createService({ name: "hidden", actions: { ping: () => "pong" } });
		await Promise.all([a.start(), other.start()]);
		// Give discovery the time it needs elsewhere (heartbeats, INFO) before asserting absence.
		await new Promise(r => setTimeout(r, 1500));
		expect(a.registry.nodes.list({ onlyAvailable: true }).map(n => n.id)).toEqual(["a"]);
		await expect(a.call("hidden.ping")).rejects.toBeInstanceOf(Errors.ServiceNotFoundError);
	});

	it("with disableBalancer, shares each action and event group between nodes through one consumer group", async () => {
		const ns = namespace();
		// Shorter group timeouts: the mock waits (session - 1 s) for members to rejoin a rebalance.
		const tx = { consumer: { maxWaitTimeInMs: 20, sessionTimeout: 3000, rebalanceTimeout: 3000, heartbeatInterval: 500 } };
		// A request waits in the group's topic while the group rebalances: a generous request timeout.
		const opts = { disableBalancer: true, requestTimeout: 60_000 };
		const workers = ["w1", "w2"].map(id => node(id, ns, opts, tx).broker);
		const caller = node("caller", ns, opts, tx).broker;
		const handled: Record<string, number[]> = { w1: [], w2: [] };
		const events: string[] = [];
		for (const w of workers) {
			w.createService({
				name: "work",
				actions: {
					do(ctx: Context<{ n: number }>) {
						handled[ctx.broker.nodeID].push(ctx.params.n);
						return ctx.broker.nodeID;
					},
				},
				events: {
					// Wildcard handlers work: balanced events travel on one topic per group.
					"job.*": {
						group: "workers",
						handler(ctx: Context<{ n: number }>) {
							events.push(`${ctx.broker.nodeID}:${ctx.eventName}:${ctx.params.n}`);
						},
					},
				},
			});
		}
		await Promise.all([...workers, caller].map(b => b.start()));
		// Three consumers join one group at once. On a busy machine the mock can answer a leader's
		// SyncGroup that raced a later join with INVALID_REQUEST; kafkajs then restarts that
		// consumer and the group forms again, which can take tens of seconds: hence the bounds.
		await caller.waitForServices(["work"], 60_000, 100);
		await waitFor(() => caller.registry.getServiceList({ onlyAvailable: true, skipInternal: true }).filter(s => s.name === "work").length === 2, 60_000);

		const answers = await Promise.all(Array.from({ length: 24 }, (_, n) => caller.call("work.do", { n })));
		expect(new Set(answers).size).toBeGreaterThan(0);
		for (const a of answers) expect(["w1", "w2"]).toContain(a);
		const all = [...handled.w1, ...handled.w2].sort((x, y) => x - y);
		expect(all).toEqual(Array.from({ length: 24 }, (_, n) => n)); // every request served exactly once
		expect(handled.w1.length).toBeGreaterThan(0);
		expect(handled.w2.length).toBeGreaterThan(0);

		for (let n = 0; n < 4; n++) await caller.emit("job.done", { n });
		await waitFor(() => events.length >= 4, 60_000);
		await new Promise(r => setTimeout(r, 300)); // no duplicate arrives late
		expect(events.map(e => e.split(":").slice(1).join(":")).sort()).toEqual(["job.done:0", "job.done:1", "job.done:2", "job.done:3"]);
	}, 240_000);

	it("recovers when its consumer stops for good: reconnects, subscribes again and serves calls", async () => {
		const ns = namespace();
		const a = node("a", ns).broker;
		// fatal: the simulated failure is logged as an error, which is expected here.
		const { broker: b, transporter: txB } = node("b", ns, { logLevel: "fatal" });
		const reconnected: boolean[] = [];
		b.createService({
			name: "echo",
			actions: { say: (ctx: Context<{ v: string }>) => ctx.params.v },
			events: {
				"$transporter.connected"(ctx: Context<{ wasReconnect: boolean }>) {
					reconnected.push(ctx.params.wasReconnect);
				},
			},
		});
		await Promise.all([a.start(), b.start()]);
		await a.waitForServices(["echo"], 20_000, 100);
		expect(await a.call("echo.say", { v: "before" })).toBe("before");

		// What kafkajs reports as a crash it will not restart from.
		(txB as unknown as { fail(err: Error): void }).fail(new Error("simulated fatal consumer error"));
		await waitFor(() => reconnected.includes(true), 20_000);
		expect(txB.connected).toBe(true);
		expect(await a.call("echo.say", { v: "after" })).toBe("after");
		expect(await b.call("echo.say", { v: "local" })).toBe("local");
	}, 40_000);

	it("drains at a stop: a request in flight is answered, then the others get its DISCONNECT", async () => {
		const ns = namespace();
		const a = node("a", ns).broker;
		// As the nodes run (moleculer.config.ts): a stop waits for the requests in flight.
		const b = node("b", ns, { tracking: { enabled: true, shutdownTimeout: 10_000 } }).broker;
		let began = false;
		let release: () => void = () => undefined;
		b.createService({
			name: "slow",
			actions: {
				async work() {
					began = true;
					await new Promise<void>(r => (release = r));
					return "done";
				},
			},
		});
		await Promise.all([a.start(), b.start()]);
		await a.waitForServices(["slow"], 20_000, 100);
		const left: boolean[] = [];
		a.localBus.on("$node.disconnected", ({ node, unexpected }: { node: { id: string }; unexpected: boolean }) => {
			if (node.id === "b") left.push(unexpected);
		});

		const answer = a.call("slow.work");
		await waitFor(() => began);
		const stopped = b.stop();
		// The stop has begun (its empty INFO is out: A no longer routes to B) while the request runs.
		await waitFor(() => !a.registry.getServiceList({ onlyAvailable: true, skipInternal: true }).some(s => s.name === "slow"));
		release();
		expect(await answer).toBe("done");
		await stopped;
		await waitFor(() => left.length > 0);
		expect(left).toEqual([false]); // its DISCONNECT, not a missed heartbeat
	}, 40_000);

	it("logs an outage once when no broker answers, once when one answers again, and every retry at debug level only", async () => {
		// A cluster of its own, paused and resumed (the shared one serves the other tests).
		const own = await startKafkaMock();
		const lines: LogLine[] = [];
		const transporter = new KafkaJsTransporter({ brokers: [own.address], consumer: { maxWaitTimeInMs: 20 }, requestTimeout: 1000, connectionTimeout: 500 });
		const broker = new ServiceBroker({
			nodeID: "p",
			namespace: namespace(),
			logger: new CapturingLogger(lines, "debug"),
			transporter: transporter as unknown as BrokerOptions["transporter"],
		});
		const said = (re: RegExp) => lines.filter(l => re.test(l.text));
		try {
			await broker.start();
			own.pause();
			await waitFor(() => said(/Kafka cluster unreachable/).length > 0, 60_000);
			const at = lines.length;
			// kafkajs goes on retrying meanwhile, and says so at debug level.
			await waitFor(() => lines.slice(at).filter(l => l.level === "debug" && /kafkajs/.test(l.text)).length >= 3, 60_000);
			own.resume();
			await waitFor(() => said(/Kafka cluster reachable again/).length > 0, 60_000);

			expect(said(/Kafka cluster unreachable/).map(l => l.level)).toEqual(["warn"]);
			expect(said(/Kafka cluster reachable again/).map(l => l.level)).toEqual(["info"]);
			// Nothing else about it at WARN or ERROR, and no stack trace above debug.
			const loud = lines.filter(l => (l.level === "warn" || l.level === "error") && !/Kafka cluster unreachable/.test(l.text));
			expect(loud).toEqual([]);
			expect(lines.filter(l => l.level !== "debug" && /\n\s+at |stack/.test(l.text))).toEqual([]);
		} finally {
			await broker.stop();
			await own.stop();
		}
	}, 120_000);

	it("fails to connect with a clear error, and reports it, when no broker answers", async () => {
		const broker = new ServiceBroker({ logger: false });
		const tx = new KafkaJsTransporter({ brokers: ["127.0.0.1:1"], connectionTimeout: 300, retry: { retries: 0 } });
		const reported: Array<{ type: string }> = [];
		broker.createService({ name: "spy", events: { "$transporter.error": (ctx: Context<{ type: string }>) => void reported.push(ctx.params) } });
		await broker.start();
		try {
			tx.init({ broker, nodeID: "lonely" } as never, () => undefined, () => Promise.resolve());
			await expect(tx.connect()).rejects.toThrow(/connect|ECONNREFUSED|broker/i);
			expect(tx.connected).toBe(false);
			await waitFor(() => reported.length > 0);
			expect(reported[0].type).toBe("failedConnection");
		} finally {
			await broker.stop();
		}
	});
});

async function waitFor(cond: () => boolean, timeoutMs = 15_000): Promise<void> {
	const until = Date.now() + timeoutMs;
	while (!cond()) {
		if (Date.now() > until) throw new Error("condition not met in time");
		await new Promise(r => setTimeout(r, 25));
	}
}
