/**
 * `npm start`: one node with the services of SERVICES (default: all), from the environment, and
 * its health endpoint (lib/health.ts). First the preflight (lib/preflight.ts): a Node too old or
 * native modules built for another Node stop it with a message naming the fix, before anything
 * that could crash the process is loaded.
 */
import { preflightProblem } from "./preflight";

async function main(): Promise<void> {
	const problem = preflightProblem();
	if (problem) {
		console.error(problem);
		process.exit(1);
	}
	// Loaded only now: the node's modules load sqlite3 and bcrypt.
	const { loadConfig, readDotEnv } = await import("./config");
	const { createNode } = await import("./node");
	const { startHealthServer } = await import("./health");
	// `.env` values reach both the app config and the broker options (NAMESPACE, NODE_ID, TCP_*, KAFKA_*).
	const env = { ...readDotEnv(), ...process.env };
	const config = loadConfig(env);
	const repl = process.argv.includes("--repl");
	const broker = await createNode({ config, env });
	// Before the services start, so liveness answers during a slow start; /readyz waits for it.
	const { port, host } = config.health;
	const health = repl || port === null ? null : await startHealthServer(broker, { port, host }).catch(async err => {
		await broker.stop();
		throw err;
	});
	await broker.start();
	const shutdown = async (signal: string) => {
		broker.logger.info(`${signal}: stopping`);
		await broker.stop();
		await health?.close();
		process.exit(0);
	};
	process.once("SIGTERM", () => void shutdown("SIGTERM"));
	process.once("SIGINT", () => void shutdown("SIGINT"));
	if (repl) await broker.repl();
}

main().catch(err => {
	// Configuration and start-up failures: one clear line, no secrets.
	console.error(`Failed to start: ${err instanceof Error ? err.message : String(err)}`);
	process.exit(1);
});
