/** `npm start`: one node with the services of SERVICES (default: all), from the environment. */
import { loadConfig, processEnvironment } from "./config";
import { createNode } from "./node";

async function main(): Promise<void> {
	// `.env` values reach both the app config and the broker options (NAMESPACE, NODE_ID, TCP_*, KAFKA_*).
	const env = processEnvironment();
	const config = loadConfig(env);
	const broker = await createNode({ config, env });
	await broker.start();
	const shutdown = async (signal: string) => {
		broker.logger.info(`${signal}: stopping`);
		await broker.stop();
		process.exit(0);
	};
	process.once("SIGTERM", () => void shutdown("SIGTERM"));
	process.once("SIGINT", () => void shutdown("SIGINT"));
	if (process.argv.includes("--repl")) await broker.repl();
}

main().catch(err => {
	// Configuration and start-up failures: one clear line, no secrets.
	console.error(`Failed to start: ${err instanceof Error ? err.message : String(err)}`);
	process.exit(1);
});
