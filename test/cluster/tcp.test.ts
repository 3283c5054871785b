/**
 * Two nodes over Moleculer's TCP transporter (`TRANSPORTER=tcp`): no UDP discovery, peers from
 * a static TCP_URLS list, each node on its TCP_PORT.
 */
import { describeCluster, freePort } from "./cluster.helpers";

describeCluster("cluster over TCP (static peers)", {
	env: async (ids, namespace) => {
		const [portA, portB] = [await freePort(), await freePort()];
		const urls = `127.0.0.1:${portA}/${ids.a},127.0.0.1:${portB}/${ids.b}`;
		return {
			a: { TRANSPORTER: "tcp", TCP_PORT: String(portA), TCP_URLS: urls, NAMESPACE: namespace },
			b: { TRANSPORTER: "tcp", TCP_PORT: String(portB), TCP_URLS: urls, NAMESPACE: namespace },
		};
	},
});
