/** Two nodes over NATS (nats://127.0.0.1:4222): the gateway on one, the core services on the other. */
import { describeCluster } from "./cluster.helpers";

const NATS_URL = process.env.TEST_NATS_URL || "nats://127.0.0.1:4222";

describeCluster("cluster over NATS", {
	env: (_ids, namespace) => {
		const env = { TRANSPORTER: NATS_URL, NAMESPACE: namespace };
		return { a: env, b: env };
	},
});
