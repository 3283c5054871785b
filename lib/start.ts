/** `npm start`: one node with the services of SERVICES (default: all), from the environment. */
import { loadConfig } from "./config";
import { createNode } from "./node";

async function main(): Promise<void> {
	const config = loadConfig();
	const broker = await createNode({ config });
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
