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
 * An outage (no broker answers) is logged once when it begins and once when a broker answers
 * again; in between kafkajs' retries, crashes and failed sends are logged at debug level only,
 * and the node's own bookkeeping packets (INFO, HEARTBEAT, DISCOVER, DISCONNECT, PONG) are not
 * sent (as Moleculer does while a transporter is disconnected; peers re-discover the node later).
 *
 * Stopping (docs/deployment.md "Stopping within the grace period"): while the broker stops, each
 * packet it still sends and the closing of the clients wait at most `disconnectTimeout` each, so
 * a node whose brokers are gone does not sit through kafkajs' retries (half a minute per packet).
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
	/** While the broker stops: the longest each packet still sent (empty INFO, DISCONNECT) and the closing of the clients may take. */
	disconnectTimeout?: number;
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
	disconnectTimeout: 5000,
};

/** Packets of Moleculer's own bookkeeping: not sent during an outage (peers re-discover the node). */
const BOOKKEEPING_PACKETS = new Set(["INFO", "HEARTBEAT", "DISCOVER", "DISCONNECT", "PONG"]);

/** kafkajs errors that mean no broker answers (walks the `cause` chain). */
const CONNECTION_ERRORS = new Set([
	"KafkaJSConnectionError",
	"KafkaJSConnectionClosedError",
	"KafkaJSRequestTimeoutError",
	"KafkaJSBrokerNotFound",
	"KafkaJSNumberOfRetriesExceeded",
	"KafkaJSLockTimeout",
]);

/** kafkajs log lines that report a broker not answering. */
const CONNECTION_TEXT = /connection error|connection timeout|closed connection|connection is closed|not connected|seed broker|ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|timed out/i;

export function isKafkaConnectionError(err: unknown): boolean {
	for (let e = err as { name?: string; cause?: unknown; originalError?: unknown } | undefined, depth = 0; e && depth < 5; depth++) {
		if (e.name && CONNECTION_ERRORS.has(e.name)) return true;
		e = (e.cause ?? e.originalError) as typeof e;
	}
	return false;
}

/** What `within` rejects with when the time is up. */
class TimeUp extends Error {}

/** Settles like `p`, or rejects with TimeUp after `ms` (`p` goes on; its outcome is ignored). */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
	let timer: NodeJS.Timeout | undefined;
	const timeout = new Promise<never>((_, reject) => {
		timer = setTimeout(() => reject(new TimeUp(`${what} took longer than ${ms} ms`)), ms);
	});
	return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

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
 * KAFKA_HEARTBEAT_INTERVAL_MS, KAFKA_FETCH_MAX_WAIT_MS, KAFKA_CONNECTION_TIMEOUT_MS,
 * KAFKA_DISCONNECT_TIMEOUT_MS.
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
	const disconnectTimeout = envInt(env, "KAFKA_DISCONNECT_TIMEOUT_MS", 100);
	if (disconnectTimeout !== undefined) opts.disconnectTimeout = disconnectTimeout;

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
	/** When the outage began (ms since epoch); null while the cluster answers. */
	private outageSince: number | null = null;
	/** When a broker last answered a request of this node's clients. */
	private lastAnswerAt = Date.now();
	/** Between `$broker.started` and `$broker.stopped`: `broker.started` false then means a stop is running. */
	private brokerRunning = false;

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

	init(...args: Parameters<Transporters.Base["init"]>): void {
		super.init(...args);
		// broker.stop() clears `started` before it sends its first packet (the empty INFO).
		const bus = (this.broker as unknown as { localBus?: { on(event: string, fn: () => void): void } }).localBus;
		bus?.on("$broker.started", () => (this.brokerRunning = true));
		bus?.on("$broker.stopped", () => (this.brokerRunning = false));
	}

	/** The broker is stopping (or this transporter is disconnecting): packets and closing are bounded. */
	private get stopping(): boolean {
		return this.closing || this.broker.stopping || (this.brokerRunning && !this.broker.started);
	}

	// ---- outage ------------------------------------------------------------------------------

	/**
	 * How long without any answer makes a connection error an outage. A connected node's clients
	 * hear from the cluster at least every heartbeat interval or fetch wait; one broker of several
	 * failing (answers keep coming from the others) is no outage.
	 */
	private get quietMs(): number {
		const c = this.options.consumer;
		return 2 * Math.max(c.heartbeatInterval, c.maxWaitTimeInMs) + 1000;
	}

	/** A broker did not answer: an outage once none has answered for `quietMs`. True while one is on. */
	private trouble(reason: string): boolean {
		if (this.outageSince === null && Date.now() - this.lastAnswerAt >= this.quietMs) this.outage(reason);
		return this.outageSince !== null;
	}

	/** No broker answers: said once (WARN, no stack), then every retry is at debug level until one answers. */
	private outage(reason: string): void {
		if (this.outageSince !== null) return;
		this.outageSince = Date.now();
		if (this.closing) return void this.logger.debug(`Kafka cluster unreachable while disconnecting: ${reason}`);
		this.logger.warn(
			`Kafka cluster unreachable (${this.options.brokers.join(",")}): ${reason}. kafkajs keeps retrying; further errors are logged at debug level until a broker answers.`,
		);
	}

	/** A request was answered: the end of an outage is said once. */
	private reachable(): void {
		this.lastAnswerAt = Date.now();
		if (this.outageSince === null) return;
		const seconds = Math.round((Date.now() - this.outageSince) / 1000);
		this.outageSince = null;
		if (!this.closing) this.logger.info(`Kafka cluster reachable again after ${seconds} s`);
	}

	/** Every answered request of `client` ends an outage. */
	private watchRequests(client: Admin | Producer | Consumer): void {
		// One method per client type in kafkajs' typings; the same event for all of them.
		const on = client.on.bind(client) as (event: string, listener: () => void) => void;
		on(client.events.REQUEST, () => this.reachable());
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
		if (this.outageSince === null) this.lastAnswerAt = Date.now();
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
			this.watchRequests(this.admin);
			this.watchRequests(this.producer);
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
			if (isKafkaConnectionError(err) && this.trouble((err as Error).message)) this.logger.debug("Kafka connection failed:", (err as Error).message);
			else this.logger.error("Kafka connection failed:", (err as Error).message);
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
		// Both are bounded: with the brokers gone, kafkajs would wait out its retries.
		const limit = this.options.disconnectTimeout;
		await within(this.balancedSync, limit, "Kafka: the balanced subscriptions' update").catch(err => this.logger.debug(err.message));
		await within(this.closeClients(), limit, "Kafka: closing the clients").catch(err =>
			// Expected during an outage (kafkajs waits for its retries), a surprise otherwise.
			(this.outageSince === null ? this.logger.warn : this.logger.info).call(this.logger, `${err.message}; left behind (the process's exit ends them)`),
		);
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
		if (entry.level === KafkaLogLevel.ERROR || entry.level === KafkaLogLevel.WARN) {
			// A broker not answering may be an outage (said once by `trouble`). Each such line is one
			// retry, or one broker of several failing while the others answer: a debug line.
			const error = extra.error === undefined ? "" : String(extra.error);
			const connection = CONNECTION_TEXT.test(`${message} ${error}`);
			if (connection) this.trouble(error && !message.includes(error) ? `${message} (${error})` : message);
			// Stopping consumers on disconnect is not an error worth a line, nor is anything during an
			// outage, nor kafkajs' connection-level report of a group rebalancing (the consumer rejoins).
			const routine = this.closing || connection || this.outageSince !== null || (entry.namespace === "Connection" && /rebalanc/i.test(error));
			if (routine) return this.logger.debug(text, detail);
			// The stack trace only at debug level: the line says what failed.
			const { stack, ...rest } = extra;
			if (stack !== undefined) this.logger.debug(text, detail);
			const brief = Object.keys(rest).length ? rest : undefined;
			return entry.level === KafkaLogLevel.ERROR ? this.logger.error(text, brief) : this.logger.warn(text, brief);
		}
		switch (entry.level) {
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
		this.watchRequests(consumer);
		consumer.on(consumer.events.CRASH, ({ payload }) => {
			if (this.closing) return;
			if (isKafkaConnectionError(payload.error)) this.trouble(payload.error.message);
			const line = `Kafka ${kind} consumer crashed${payload.restart ? " (kafkajs restarts it)" : ""}:`;
			// During an outage a crash is one more retry (kafkajs restarts the consumer).
			if (this.outageSince !== null && payload.restart) this.logger.debug(line, payload.error?.message);
			else this.logger.warn(line, payload.error?.message);
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
		const bookkeeping = !!cmd && BOOKKEEPING_PACKETS.has(cmd);
		if (bookkeeping && this.outageSince !== null) {
			// As Moleculer does while disconnected: peers learn of this node again by discovery.
			this.logger.debug(`Kafka unreachable: ${cmd} packet to ${topic} not sent`);
			return;
		}
		const sending = producer.send({
			topic,
			messages: [{ value: data, partition: meta.partition, headers: cmd ? { [CMD_HEADER]: cmd } : undefined }],
		});
		try {
			// A stopping node does not wait out kafkajs' retries (half a minute) for each packet.
			await (this.stopping ? within(sending, this.options.disconnectTimeout, `Kafka: sending ${cmd ?? "a"} packet while stopping`) : sending);
		} catch (err) {
			const message = (err as Error).message;
			const timeUp = err instanceof TimeUp;
			const connection = timeUp || isKafkaConnectionError(err);
			// Not sent within the bound while stopping: taken as unreachable, so DISCONNECT is not tried.
			if (timeUp) this.outage(message);
			const line = `Kafka publish of ${cmd ?? "a packet"} to ${topic} failed:`;
			if ((connection && this.trouble(message)) || this.outageSince !== null) this.logger.debug(line, message);
			else this.logger.error(line, message);
			this.broker.broadcastLocal("$transporter.error", { error: err, module: "transporter", type: ERROR_TYPES.publisher });
			// A bookkeeping packet that did not reach the cluster is dropped, not thrown (transit logs each with its stack).
			if (bookkeeping && connection) return;
			throw err;
		}
	}
}

export default KafkaJsTransporter;
