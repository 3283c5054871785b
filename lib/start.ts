/** `npm start`: one node with the services of SERVICES (default: all), from the environment. `npm run repl` is lib/repl.ts. */
import { loadConfig, processEnvironment } from "./config";
import { captureError, flushErrorTracking, initErrorTracking, isOutage } from "./error-tracking";
import { createNode } from "./node";

async function main(): Promise<void> {
	// `.env` values reach both the app config and the broker options (NAMESPACE, NODE_ID, TCP_*, KAFKA_*).
	const env = processEnvironment();
	const config = loadConfig(env);
	// Before the node: a failure to start is reported too. Once per process.
	initErrorTracking(config, { env, processHandlers: true });
	const broker = await createNode({ config, env });
	await broker.start();
	const shutdown = async (signal: string) => {
		broker.logger.info(`${signal}: stopping`);
		await broker.stop();
		await flushErrorTracking();
		process.exit(0);
	};
	process.once("SIGTERM", () => void shutdown("SIGTERM"));
	process.once("SIGINT", () => void shutdown("SIGINT"));
}

main().catch(async err => {
	// Configuration and start-up failures: one clear line, no secrets.
	console.error(`Failed to start: ${err instanceof Error ? err.message : String(err)}`);
	// The database or transporter not reachable at start is an outage, not a defect.
	if (!isOutage(err)) captureError(err, { phase: "start" });
	await flushErrorTracking();
	process.exit(1);
});
