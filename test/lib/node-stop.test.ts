/**
 * The node's broker (lib/node.ts NodeBroker): stops asked at the same time (Moleculer's own
 * SIGTERM handler and lib/start.ts's, the REPL's `quit` and Ctrl+D) stop every service once.
 */
import { LogLine, startNode } from "../helpers/harness";

describe("NodeBroker", () => {
	it("stops every service once when several stops are asked at once", async () => {
		const logs: LogLine[] = [];
		const node = await startNode({ services: ["networks", "keys"], logs });
		const stopped = () => logs.filter(l => /^Service '(networks|keys)' stopped\.$/.test(l.text)).map(l => l.text).sort();
		try {
			await Promise.all([node.broker.stop(), node.broker.stop(), node.broker.stop()]);
			expect(stopped()).toEqual(["Service 'keys' stopped.", "Service 'networks' stopped."]);
			expect(logs.filter(l => l.text.includes("ServiceBroker is stopped")).length).toBe(1);
		} finally {
			await node.stop();
		}
	});
});
