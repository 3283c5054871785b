/**
 * Moleculer transporter on kafkajs (Moleculer 0.15's own Kafka transporter needs
 * @platformatic/kafka; this stack is on kafkajs). `TRANSPORTER=kafka://host:9092[,host2:9092]`
 * selects it (moleculer.config.ts); the KAFKA_* variables of `kafkaOptionsFromEnv` tune it.
 *
 * Topics (`<prefix>` is `MOL` or `MOL-<namespace>`):
 * - `<prefix>.NODE.<nodeID>`: every packet addressed to one node (REQ, RES, EVENT, INFO, ...),
 *   the packet type in the `mol-cmd` header. One partition, so packets from one sender reach the
 *   node in the order they were sent (an event broadcast inside an action arrives before the
 *   action's response, as on NATS or TCP).
 * - `<prefix>.BCAST`: broadcast packets (DISCOVER, INFO, HEARTBEAT, PING, DISCONNECT). One partition.
 * - `<prefix>.REQB.<action>`, `<prefix>.EVENTB.<group>`: balanced requests and grouped events,
 *   only used when the broker runs with `disableBalancer: true`.
 *
 * Consumer groups: each node instance reads NODE and BCAST in a group of its own (named with the
 * process's instance id, so a restarted node never resumes old requests); it starts from the end
 * offsets read before it joined, so nothing sent after start-up is missed while the group forms.
 * Balanced topics: one group per namespace (`<prefix>.BALANCED`) in which each node has one
 * consumer reading the balanced topics of the services it runs; a subscription-aware assigner
 * gives each topic's partitions only to nodes that read it, so Kafka hands each message to one
 * node serving it. Topic names are cleaned to Kafka's alphabet. Topics are created with the admin
 * client (short retention: packets are worthless after the request timeout, and they carry
 * request parameters); on a cluster that refuses CreateTopics, the broker's auto-creation is
 * relied on and checked through metadata.
 *
 * Connection failures: kafkajs retries every request with its own backoff (`retry`); a consumer
 * that crashes for good makes the transporter drop everything and hand the error to Moleculer's
 * transit, which reconnects (and this class re-creates its consumers, then reports a reconnect).
 */
import crypto from "node:crypto";
import fs from "node:fs";
import { Transporters } from "moleculer";
import {
	Admin,
	AssignerProtocol,
	Consumer,
	ITopicConfig,
	Kafka,
	KafkaConfig,
	LogEntry,
	PartitionAssigner,
	Partitioners,
	Producer,
	RetryOptions,
	SASLOptions,
	logLevel as KafkaLogLevel,
} from "kafkajs";
import { EnvVars, bool, int } from "./env";

/** Moleculer's internal event types for `$transporter.error` (src/constants.js). */
const ERROR_TYPES = {
	connection: "failedConnection",
	publisher: "publisherError",
	consumer: "consumerError",
	topic: "failedTopicCreation",
} as const;

const CMD_HEADER = "mol-cmd";
const TOPIC_MAX_LENGTH = 249;

export interface KafkaJsTransporterOptions {
	brokers: string[];
	clientId?: string;
	ssl?: KafkaConfig["ssl"];
	sasl?: SASLOptions;
	/** ms to open a TCP connection to a broker. */
	connectionTimeout?: number;
	/** ms a broker has to answer a request. */
	requestTimeout?: number;
	/** kafkajs' backoff for every client (and the consumers' automatic restarts). */
	retry?: RetryOptions;
	topics?: {
		/** -1: the cluster's default.replication.factor (Kafka 2.4+). */
		replicationFactor?: number;
		/** Partitions of balanced topics (the most nodes that share one action's load). */
		balancedPartitions?: number;
		/** retention.ms (and segment.ms) of every topic this transporter creates. */
		retentionMs?: number;
	};
	consumer?: {
		sessionTimeout?: number;
		rebalanceTimeout?: number;
		heartbeatInterval?: number;
		/** Longest a fetch waits on the broker when there is nothing to read (real Kafka answers at once when data comes). */
		maxWaitTimeInMs?: number;
	};
	/** Start-up waits this long for the node's consumer to join its group, then goes on (nothing is lost: it reads from the recorded offsets). */
	joinTimeout?: number;
}

type ResolvedOptions = Required<Omit<KafkaJsTransporterOptions, "ssl" | "sasl" | "topics" | "consumer">> &
	Pick<KafkaJsTransporterOptions, "ssl" | "sasl"> & {
		topics: Required<NonNullable<KafkaJsTransporterOptions["topics"]>>;
		consumer: Required<NonNullable<KafkaJsTransporterOptions["consumer"]>>;
	};

const DEFAULTS = {
	clientId: "cryptopay-gateway",
	connectionTimeout: 3000,
	requestTimeout: 30_000,
	retry: { initialRetryTime: 200, maxRetryTime: 10_000, retries: 8 },
	topics: { replicationFactor: -1, balancedPartitions: 4, retentionMs: 3_600_000 },
	consumer: { sessionTimeout: 10_000, rebalanceTimeout: 10_000, heartbeatInterval: 1000, maxWaitTimeInMs: 500 },
	joinTimeout: 30_000,
};

/** Kafka topic names: `[A-Za-z0-9._-]`, at most 249 characters. Other characters become `-xx-` (hex). */
export function kafkaTopicName(name: string): string {
	let topic = name.replace(/[^A-Za-z0-9._-]/g, c => `-${c.codePointAt(0)!.toString(16)}-`);
	if (topic.length > TOPIC_MAX_LENGTH) {
		topic = `${topic.slice(0, 200)}-${crypto.createHash("sha256").update(name).digest("hex").slice(0, 40)}`;
	}
	return topic;
}

type Env = EnvVars;

/** A whole-number KAFKA_* setting, or undefined when unset (kafkajs' default applies). */
function envInt(env: Env, name: string, min: number): number | undefined {
	return (env[name] ?? "").trim() === "" ? undefined : int(name, env[name], 0, min);
}

/** `kafka://h1:9092,h2:9092` (each entry may repeat `kafka://`) -> ["h1:9092", "h2:9092"]. */
export function parseKafkaBrokers(url: string): string[] {
	const brokers = url
		.split(",")
		.map(s => s.trim().replace(/^kafka:\/\//, "").replace(/\/+$/, ""))
		.filter(Boolean);
	if (brokers.length === 0) throw new Error(`Configuration: TRANSPORTER ${url} names no Kafka broker`);
	for (const b of brokers) {
		const m = /^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(b);
		if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535) {
			throw new Error(`Configuration: TRANSPORTER must be kafka://host:port[,host:port...], got "${b}"`);
		}
	}
	return brokers;
}

/**
 * Options from TRANSPORTER and the KAFKA_* variables (docs/deployment.md):
 * KAFKA_CLIENT_ID, KAFKA_SSL, KAFKA_SSL_CA_FILE, KAFKA_SASL_MECHANISM (plain, scram-sha-256,
 * scram-sha-512) with KAFKA_SASL_USERNAME / KAFKA_SASL_PASSWORD, KAFKA_REPLICATION_FACTOR,
 * KAFKA_BALANCED_PARTITIONS, KAFKA_TOPIC_RETENTION_MS, KAFKA_SESSION_TIMEOUT_MS,
 * KAFKA_HEARTBEAT_INTERVAL_MS, KAFKA_FETCH_MAX_WAIT_MS, KAFKA_CONNECTION_TIMEOUT_MS.
 */
export function kafkaOptionsFromEnv(url: string, env: Env): KafkaJsTransporterOptions {
	const opts: KafkaJsTransporterOptions = { brokers: parseKafkaBrokers(url), topics: {}, consumer: {} };
	if (env.KAFKA_CLIENT_ID) opts.clientId = env.KAFKA_CLIENT_ID;

	// TLS: the brokers' CA (KAFKA_SSL_CA_FILE), a client certificate for brokers that verify clients
	// (KAFKA_SSL_CERT_FILE + KAFKA_SSL_KEY_FILE), or system CAs (KAFKA_SSL). Any of them turns TLS on.
	const readPem = (name: string, file: string): Buffer => {
		try {
			return fs.readFileSync(file);
		} catch {
			throw new Error(`Configuration: ${name} ${file} cannot be read`);
		}
	};
	if (!!env.KAFKA_SSL_CERT_FILE !== !!env.KAFKA_SSL_KEY_FILE) throw new Error("Configuration: KAFKA_SSL_CERT_FILE and KAFKA_SSL_KEY_FILE go together");
	const tls: { ca?: Buffer[]; cert?: Buffer; key?: Buffer } = {};
	if (env.KAFKA_SSL_CA_FILE) tls.ca = [readPem("KAFKA_SSL_CA_FILE", env.KAFKA_SSL_CA_FILE)];
	if (env.KAFKA_SSL_CERT_FILE && env.KAFKA_SSL_KEY_FILE) {
		tls.cert = readPem("KAFKA_SSL_CERT_FILE", env.KAFKA_SSL_CERT_FILE);
		tls.key = readPem("KAFKA_SSL_KEY_FILE", env.KAFKA_SSL_KEY_FILE);
	}
	if (Object.keys(tls).length) opts.ssl = tls;
	else if (bool("KAFKA_SSL", env.KAFKA_SSL, false)) opts.ssl = true;

	const mechanism = (env.KAFKA_SASL_MECHANISM || "").toLowerCase();
	if (mechanism) {
		if (mechanism !== "plain" && mechanism !== "scram-sha-256" && mechanism !== "scram-sha-512") {
			throw new Error(`Configuration: KAFKA_SASL_MECHANISM must be plain, scram-sha-256 or scram-sha-512, got "${env.KAFKA_SASL_MECHANISM}"`);
		}
		if (!env.KAFKA_SASL_USERNAME || !env.KAFKA_SASL_PASSWORD) {
			throw new Error("Configuration: KAFKA_SASL_MECHANISM needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD");
		}
		opts.sasl = { mechanism, username: env.KAFKA_SASL_USERNAME, password: env.KAFKA_SASL_PASSWORD };
	}

	const replicationFactor = envInt(env, "KAFKA_REPLICATION_FACTOR", -1);
	if (replicationFactor === 0) throw new Error("Configuration: KAFKA_REPLICATION_FACTOR must be -1 (cluster default) or at least 1");
	if (replicationFactor !== undefined) opts.topics!.replicationFactor = replicationFactor;
	const balancedPartitions = envInt(env, "KAFKA_BALANCED_PARTITIONS", 1);
	if (balancedPartitions !== undefined) opts.topics!.balancedPartitions = balancedPartitions;
	const retentionMs = envInt(env, "KAFKA_TOPIC_RETENTION_MS", 60_000);
	if (retentionMs !== undefined) opts.topics!.retentionMs = retentionMs;

	const sessionTimeout = envInt(env, "KAFKA_SESSION_TIMEOUT_MS", 1000);
	if (sessionTimeout !== undefined) {
		opts.consumer!.sessionTimeout = sessionTimeout;
		opts.consumer!.rebalanceTimeout = sessionTimeout;
	}
	const heartbeat = envInt(env, "KAFKA_HEARTBEAT_INTERVAL_MS", 100);
	if (heartbeat !== undefined) opts.consumer!.heartbeatInterval = heartbeat;
	const maxWait = envInt(env, "KAFKA_FETCH_MAX_WAIT_MS", 1);
	if (maxWait !== undefined) opts.consumer!.maxWaitTimeInMs = maxWait;
	const connectionTimeout = envInt(env, "KAFKA_CONNECTION_TIMEOUT_MS", 100);
	if (connectionTimeout !== undefined) opts.connectionTimeout = connectionTimeout;

	const hb = opts.consumer!.heartbeatInterval ?? DEFAULTS.consumer.heartbeatInterval;
	const session = opts.consumer!.sessionTimeout ?? DEFAULTS.consumer.sessionTimeout;
	if (hb * 3 > session) throw new Error("Configuration: KAFKA_HEARTBEAT_INTERVAL_MS must be at most a third of KAFKA_SESSION_TIMEOUT_MS");
	return opts;
}

interface NodeSubscription {
	topic: string;
	cmds: Set<string>;
}

/**
 * Round robin per topic among the members that subscribed to it. kafkajs' own assigner spreads
 * every partition over every member, which is only right when all members read the same topics;
 * in the shared balanced group each node reads the topics of the services it runs.
 */
export const subscriptionRoundRobin: PartitionAssigner = ({ cluster }) => ({
	name: "MoleculerSubscriptionRoundRobin",
	version: 0,
	async assign({ members }) {
		const subs = members.map(m => ({ id: m.memberId, topics: AssignerProtocol.MemberMetadata.decode(m.memberMetadata)?.topics || [] }));
		const topics = [...new Set(subs.flatMap(m => m.topics))].sort();
		// The leader's metadata must also cover topics only other members read.
		await cluster.addMultipleTargetTopics(topics);
		const assignment: Record<string, Record<string, number[]>> = {};
		let turn = 0;
		for (const topic of topics) {
			const takers = subs.filter(m => m.topics.includes(topic)).map(m => m.id).sort();
			for (const { partitionId } of cluster.findTopicPartitionMetadata(topic)) {
				const id = takers[turn++ % takers.length];
				((assignment[id] ||= {})[topic] ||= []).push(partitionId);
			}
		}
		return subs.map(m => ({
			memberId: m.id,
			memberAssignment: AssignerProtocol.MemberAssignment.encode({ version: 0, assignment: assignment[m.id] || {}, userData: Buffer.alloc(0) }),
		}));
	},
	protocol({ topics }) {
		return { name: "MoleculerSubscriptionRoundRobin", metadata: AssignerProtocol.MemberMetadata.encode({ version: 0, topics, userData: Buffer.alloc(0) }) };
	},
});

function isPromiseLike(v: unknown): v is Promise<unknown> {
	return !!v && typeof (v as Promise<unknown>).then === "function";
}

export class KafkaJsTransporter extends Transporters.Base {
	private readonly options: ResolvedOptions;
	private kafka: Kafka | null = null;
	private admin: Admin | null = null;
	private producer: Producer | null = null;
	private nodeConsumer: Consumer | null = null;
	/** NODE and BCAST topics with the packet types this node subscribed to on each. */
	private nodeSubscriptions: NodeSubscription[] | null = null;
	/** Balanced topics wanted (by makeBalancedSubscriptions) -> packet type. */
	private readonly wantedBalanced = new Map<string, string>();
	/** One consumer, in one group shared by all nodes, reads every balanced topic this node serves. */
	private balancedConsumer: Consumer | null = null;
	private balancedTopics: string[] = [];
	private balancedSync: Promise<void> = Promise.resolve();
	private balancedSyncScheduled: Promise<void> | null = null;
	private errorHandler: ((err: Error) => void) | null = null;
	private everConnected = false;
	private closing = false;
	private failing = false;

	constructor(opts: KafkaJsTransporterOptions) {
		super(opts as unknown as Record<string, any>);
		if (!opts || !Array.isArray(opts.brokers) || opts.brokers.length === 0) throw new Error("KafkaJsTransporter needs at least one broker");
		this.options = {
			...DEFAULTS,
			...opts,
			retry: { ...DEFAULTS.retry, ...opts.retry },
			topics: { ...DEFAULTS.topics, ...opts.topics },
			consumer: { ...DEFAULTS.consumer, ...opts.consumer },
		};
		this.hasBuiltInBalancer = true;
	}

	// ---- topics ------------------------------------------------------------------------------

	private nodeTopic(nodeID: string): string {
		return kafkaTopicName(`${this.prefix}.NODE.${nodeID}`);
	}

	private broadcastTopic(): string {
		return kafkaTopicName(`${this.prefix}.BCAST`);
	}

	getTopicName(cmd: string, nodeID?: string): string {
		return nodeID ? this.nodeTopic(nodeID) : this.broadcastTopic();
	}

	private balancedRequestTopic(action: string): string {
		return kafkaTopicName(`${this.prefix}.REQB.${action}`);
	}

	/** One topic per group (not per event): wildcard handlers work, and one consumer serves a group. */
	private balancedEventTopic(group: string): string {
		return kafkaTopicName(`${this.prefix}.EVENTB.${group}`);
	}

	private topicConfig(topic: string, numPartitions: number): ITopicConfig {
		const retention = String(this.options.topics.retentionMs);
		return {
			topic,
			numPartitions,
			replicationFactor: this.options.topics.replicationFactor,
			configEntries: [
				{ name: "retention.ms", value: retention },
				// Retention only drops closed segments: roll them as often.
				{ name: "segment.ms", value: retention },
				{ name: "cleanup.policy", value: "delete" },
			],
		};
	}

	/** Creates the topics that do not exist yet; throws when they cannot be made to exist. */
	private async ensureTopics(topics: string[], numPartitions: number): Promise<void> {
		const admin = this.admin!;
		const existing = new Set(await admin.listTopics());
		const missing = topics.filter(t => !existing.has(t));
		if (missing.length === 0) return;
		try {
			await admin.createTopics({ topics: missing.map(t => this.topicConfig(t, numPartitions)), waitForLeaders: true });
		} catch (err) {
			// Clusters without CreateTopics (librdkafka's mock) or without the ACL for it: the
			// broker's auto-creation (auto.create.topics.enable) may still have made them.
			if (await this.topicsReady(missing)) {
				this.logger.debug(`Kafka CreateTopics failed (${(err as Error).message}); topics exist through auto-creation`);
				return;
			}
			this.logger.error("Kafka topics could not be created", missing, (err as Error).message);
			this.broker.broadcastLocal("$transporter.error", { error: err, module: "transporter", type: ERROR_TYPES.topic });
			throw err;
		}
	}

	private async topicsReady(topics: string[]): Promise<boolean> {
		try {
			const { topics: found } = await this.admin!.fetchTopicMetadata({ topics });
			const ready = new Set(found.filter(t => t.partitions.length > 0 && t.partitions.every(p => p.leader >= 0)).map(t => t.name));
			return topics.every(t => ready.has(t));
		} catch {
			return false;
		}
	}

	/** Offsets at the end of each partition now: a new group starts there. */
	private async endOffsets(topics: string[]): Promise<Array<{ topic: string; partition: number; offset: string }>> {
		const admin = this.admin!;
		const per = await Promise.all(topics.map(async topic => (await admin.fetchTopicOffsets(topic)).map(p => ({ topic, partition: p.partition, offset: p.high }))));
		return per.flat();
	}

	// ---- connection --------------------------------------------------------------------------

	async connect(errorHandler?: Function): Promise<void> {
		// Transit's reconnect timer can fire after the broker was stopped: stay down then.
		if (this.broker.stopping) return;
		this.errorHandler = (errorHandler as ((err: Error) => void) | undefined) || null;
		this.closing = false;
		this.failing = false;
		try {
			this.kafka = new Kafka({
				clientId: this.options.clientId,
				brokers: this.options.brokers,
				ssl: this.options.ssl,
				sasl: this.options.sasl,
				connectionTimeout: this.options.connectionTimeout,
				requestTimeout: this.options.requestTimeout,
				retry: this.options.retry,
				logLevel: KafkaLogLevel.INFO,
				logCreator: () => entry => this.kafkaLog(entry),
			});
			this.admin = this.kafka.admin();
			this.producer = this.kafka.producer({
				createPartitioner: Partitioners.DefaultPartitioner,
				// Topics are created by the nodes that read them; writing must not invent one with broker defaults.
				allowAutoTopicCreation: false,
			});
			await this.admin.connect();
			await this.producer.connect();
			this.logger.info(`Kafka (kafkajs) connected to ${this.options.brokers.join(",")}`);
			// A reconnect is reported only once the node was fully connected before (transit then
			// re-sends INFO instead of subscribing): its consumers must come back here.
			const wasReconnect = this.everConnected;
			if (wasReconnect) {
				if (this.nodeSubscriptions) await this.startNodeConsumer(this.nodeSubscriptions);
				await this.scheduleBalancedSync();
			}
			await this.onConnected(wasReconnect);
			this.everConnected = true;
		} catch (err) {
			this.logger.error("Kafka connection failed:", (err as Error).message);
			this.broker.broadcastLocal("$transporter.error", { error: err, module: "transporter", type: ERROR_TYPES.connection });
			await this.closeClients();
			throw err;
		}
	}

	/** A round trip to the cluster (the node's /readyz): fails while no broker answers. */
	async probe(): Promise<void> {
		if (!this.admin) throw new Error("not connected");
		await this.admin.describeCluster();
	}

	async disconnect(): Promise<void> {
		this.closing = true;
		// A balanced sync in progress must not start a consumer after the clients are closed.
		await this.balancedSync.catch(() => undefined);
		await this.closeClients();
	}

	private async closeClients(): Promise<void> {
		this.connected = false;
		const consumers = [this.nodeConsumer, this.balancedConsumer].filter((c): c is Consumer => !!c);
		this.nodeConsumer = null;
		this.balancedConsumer = null;
		this.balancedTopics = [];
		await Promise.all(consumers.map(c => c.disconnect().catch(() => undefined)));
		const { producer, admin } = this;
		this.producer = null;
		this.admin = null;
		this.kafka = null;
		await Promise.all([producer?.disconnect().catch(() => undefined), admin?.disconnect().catch(() => undefined)]);
	}

	/** A consumer is gone for good: drop everything and let transit reconnect (connect() rebuilds it). */
	private fail(err: Error): void {
		if (this.closing || this.failing) return;
		this.failing = true;
		this.logger.error("Kafka consumer stopped for good; reconnecting:", err.message);
		this.connected = false;
		void this.balancedSync
			.catch(() => undefined)
			.then(() => this.closeClients())
			.then(() => {
				if (!this.closing && this.errorHandler) this.errorHandler(err);
			});
	}

	private kafkaLog(entry: LogEntry): void {
		const { message, timestamp: _t, logger: _l, ...extra } = entry.log as { message: string; timestamp: string; logger?: string; [k: string]: unknown };
		const text = `kafkajs ${entry.namespace}: ${message}`;
		const detail = Object.keys(extra).length ? extra : undefined;
		switch (entry.level) {
			case KafkaLogLevel.ERROR:
				// Stopping consumers on disconnect is not an error worth a line, nor is kafkajs'
				// connection-level report of a group rebalancing (routine: the consumer rejoins).
				if (this.closing || (entry.namespace === "Connection" && /rebalanc/i.test(String(extra.error)))) return this.logger.debug(text, detail);
				return this.logger.error(text, detail);
			case KafkaLogLevel.WARN:
				return this.logger.warn(text, detail);
			case KafkaLogLevel.INFO:
				return this.logger.debug(text, detail);
			default:
				return this.logger.trace(text, detail);
		}
	}

	// ---- consuming ---------------------------------------------------------------------------

	/** Hands a packet to transit without waiting for its handling: a slow action must not hold the partition. */
	private dispatch(cmd: string, value: Buffer | null): void {
		if (!value) return;
		try {
			const result = this.receive(cmd, value);
			if (isPromiseLike(result)) result.catch(err => this.logger.error(`Kafka: handling a ${cmd} packet failed:`, err));
		} catch (err) {
			this.logger.error(`Kafka: handling a ${cmd} packet failed:`, err);
		}
	}

	private newConsumer(groupId: string, kind: string, partitionAssigners?: PartitionAssigner[]): Consumer {
		const c = this.options.consumer;
		const consumer = this.kafka!.consumer({
			groupId,
			partitionAssigners,
			sessionTimeout: c.sessionTimeout,
			rebalanceTimeout: c.rebalanceTimeout,
			heartbeatInterval: c.heartbeatInterval,
			maxWaitTimeInMs: c.maxWaitTimeInMs,
			allowAutoTopicCreation: false,
			retry: this.options.retry,
		});
		consumer.on(consumer.events.CRASH, ({ payload }) => {
			if (this.closing) return;
			this.logger.warn(`Kafka ${kind} consumer crashed${payload.restart ? " (kafkajs restarts it)" : ""}:`, payload.error?.message);
			this.broker.broadcastLocal("$transporter.error", { error: payload.error, module: "transporter", type: ERROR_TYPES.consumer });
			if (!payload.restart) this.fail(payload.error);
		});
		return consumer;
	}

	/**
	 * Runs `consumer` on `topics`. Partitions the group has no committed offset for start at the
	 * offsets read before joining (`starts`), so packets sent while the group forms are read.
	 */
	private async runConsumer(
		consumer: Consumer,
		topics: string[],
		starts: Array<{ topic: string; partition: number; offset: string }>,
		onMessage: (topic: string, cmd: string | undefined, value: Buffer | null) => void,
	): Promise<void> {
		const joined = new Promise<boolean>(resolve => {
			const timer = setTimeout(() => resolve(false), this.options.joinTimeout);
			const remove = consumer.on(consumer.events.GROUP_JOIN, () => {
				clearTimeout(timer);
				remove();
				resolve(true);
			});
		});
		await consumer.connect();
		await consumer.subscribe({ topics, fromBeginning: false });
		await consumer.run({
			// Committed every second: a consumer kafkajs restarts resumes where it was.
			autoCommit: true,
			autoCommitInterval: 1000,
			eachMessage: async ({ topic, message }) => {
				const header = message.headers?.[CMD_HEADER];
				const cmd = header === undefined ? undefined : Array.isArray(header) ? String(header[0]) : String(header);
				onMessage(topic, cmd, message.value);
			},
		});
		try {
			for (const s of starts) consumer.seek(s);
		} catch (err) {
			// The consumer crashed before its first fetch; kafkajs restarts it from the committed offsets.
			this.logger.debug("Kafka seek skipped:", (err as Error).message);
		}
		if (!(await joined)) this.logger.warn(`Kafka consumer has not joined its group after ${this.options.joinTimeout} ms; going on (it reads from the recorded offsets once it joins)`);
	}

	async makeSubscriptions(topics: Array<{ cmd: string; nodeID?: string }>): Promise<void> {
		const byTopic = new Map<string, NodeSubscription>();
		for (const { cmd, nodeID } of topics) {
			const topic = this.getTopicName(cmd, nodeID);
			if (!byTopic.has(topic)) byTopic.set(topic, { topic, cmds: new Set() });
			byTopic.get(topic)!.cmds.add(cmd);
		}
		this.nodeSubscriptions = [...byTopic.values()];
		await this.startNodeConsumer(this.nodeSubscriptions);
	}

	private async startNodeConsumer(subs: NodeSubscription[]): Promise<void> {
		const topics = subs.map(s => s.topic);
		await this.ensureTopics(topics, 1);
		const starts = await this.endOffsets(topics);
		const cmdsOf = new Map(subs.map(s => [s.topic, s.cmds]));
		const consumer = this.newConsumer(kafkaTopicName(`${this.prefix}.NODE.${this.nodeID}.${this.broker.instanceID}`), "node");
		this.nodeConsumer = consumer;
		await this.runConsumer(consumer, topics, starts, (topic, cmd, value) => {
			// Only packet types this node subscribed to on that topic (as subject-based transporters do).
			if (cmd && cmdsOf.get(topic)?.has(cmd)) this.dispatch(cmd, value);
		});
	}

	subscribe(): Promise<void> {
		// Subscriptions are made all at once by makeSubscriptions (one consumer for them all).
		return Promise.resolve();
	}

	subscribeBalancedRequest(action: string): Promise<void> {
		this.wantedBalanced.set(this.balancedRequestTopic(action), "REQ");
		return this.scheduleBalancedSync();
	}

	subscribeBalancedEvent(event: string, group: string): Promise<void> {
		this.wantedBalanced.set(this.balancedEventTopic(group), "EVENT");
		return this.scheduleBalancedSync();
	}

	unsubscribeFromBalancedCommands(): Promise<void> {
		// makeBalancedSubscriptions clears then re-adds everything in the same tick: the next sync
		// only stops consumers that are really no longer wanted.
		this.wantedBalanced.clear();
		void this.scheduleBalancedSync();
		return Promise.resolve();
	}

	/** Batches the subscription changes of one tick into one (serialized) sync. */
	private scheduleBalancedSync(): Promise<void> {
		if (!this.balancedSyncScheduled) {
			this.balancedSyncScheduled = new Promise<void>(resolve => setImmediate(resolve)).then(() => {
				this.balancedSyncScheduled = null;
				this.balancedSync = this.balancedSync.then(() => this.syncBalanced()).catch(err => {
					if (this.closing) return;
					this.logger.error("Kafka balanced subscriptions failed:", (err as Error).message);
					this.broker.broadcastLocal("$transporter.error", { error: err, module: "transporter", type: ERROR_TYPES.consumer });
				});
				return this.balancedSync;
			});
		}
		return this.balancedSyncScheduled;
	}

	/** Restarts the balanced consumer when the wanted topics differ from the ones it reads. */
	private async syncBalanced(): Promise<void> {
		if (!this.kafka || this.closing || this.failing) return;
		const wanted = [...this.wantedBalanced.keys()].sort();
		if (this.balancedConsumer && wanted.join("\n") === this.balancedTopics.join("\n")) return;
		const previous = this.balancedConsumer;
		this.balancedConsumer = null;
		this.balancedTopics = [];
		// kafkajs cannot change a running consumer's topics: leave the group, join again.
		await previous?.disconnect().catch(() => undefined);
		if (wanted.length === 0) return;
		await this.ensureTopics(wanted, this.options.topics.balancedPartitions);
		const groupId = kafkaTopicName(`${this.prefix}.BALANCED`);
		// The group is shared: resume where it is; only partitions it never committed start at the end.
		const [ends, committed] = await Promise.all([this.endOffsets(wanted), this.admin!.fetchOffsets({ groupId, topics: wanted })]);
		const done = new Set(committed.flatMap(t => t.partitions.filter(p => Number(p.offset) >= 0).map(p => `${t.topic}:${p.partition}`)));
		if (this.closing || this.failing) return;
		const consumer = this.newConsumer(groupId, "balanced", [subscriptionRoundRobin]);
		this.balancedConsumer = consumer;
		this.balancedTopics = wanted;
		const cmdOf = new Map(this.wantedBalanced);
		try {
			await this.runConsumer(
				consumer,
				wanted,
				ends.filter(e => !done.has(`${e.topic}:${e.partition}`)),
				(topic, header, value) => {
					const cmd = header || cmdOf.get(topic);
					if (cmd) this.dispatch(cmd, value);
				},
			);
		} catch (err) {
			if (this.balancedConsumer === consumer) {
				this.balancedConsumer = null;
				this.balancedTopics = [];
			}
			await consumer.disconnect().catch(() => undefined);
			throw err;
		}
	}

	// ---- publishing --------------------------------------------------------------------------

	publish(packet: any): Promise<void> {
		const topic = this.getTopicName(packet.type, packet.target);
		const data = this.serialize(packet);
		return this.send(topic, data, { packet, cmd: packet.type, partition: 0 });
	}

	publishBalancedRequest(packet: any): Promise<void> {
		const topic = this.balancedRequestTopic(packet.payload.action);
		return this.send(topic, this.serialize(packet), { packet, cmd: "REQ", balanced: true });
	}

	publishBalancedEvent(packet: any, group: string): Promise<void> {
		const topic = this.balancedEventTopic(group);
		return this.send(topic, this.serialize(packet), { packet, cmd: "EVENT", balanced: true });
	}

	async send(topic: string, data: Buffer, meta: { cmd?: string; partition?: number; balanced?: boolean; packet?: { type?: string } } = {}): Promise<void> {
		const producer = this.producer;
		if (!producer) return;
		const cmd = meta.cmd || meta.packet?.type;
		try {
			await producer.send({
				topic,
				messages: [{ value: data, partition: meta.partition, headers: cmd ? { [CMD_HEADER]: cmd } : undefined }],
			});
		} catch (err) {
			this.logger.error(`Kafka publish to ${topic} failed:`, (err as Error).message);
			this.broker.broadcastLocal("$transporter.error", { error: err, module: "transporter", type: ERROR_TYPES.publisher });
			throw err;
		}
	}
}

export default KafkaJsTransporter;
