/**
 * Two nodes over Kafka (KafkaJsTransporter on kafkajs) against librdkafka's mock cluster, run by
 * kcat (test/helpers/kafka-mock.ts). Skipped, with a warning, only when kcat is not installed.
 */
import { describeCluster } from "./cluster.helpers";
import { KafkaMock, kcatAvailable, startKafkaMock } from "../helpers/kafka-mock";

let mock: KafkaMock | null = null;
afterAll(async () => {
	await mock?.stop();
});

describeCluster(
	"cluster over Kafka (kafkajs)",
	kcatAvailable()
		? {
				env: async (_ids, namespace) => {
					mock = await startKafkaMock();
					// The mock answers an idle fetch only when its wait is over (real Kafka answers when data comes).
					const env = { TRANSPORTER: mock.url, NAMESPACE: namespace, KAFKA_FETCH_MAX_WAIT_MS: "20" };
					return { a: env, b: env };
				},
			}
		: null,
	"`kcat` is not installed (apt-get install kcat); CI installs it",
);
