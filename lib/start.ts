/**
 * `npm start`: one node with the services of SERVICES (default: all), from the environment, and
 * its health endpoint (lib/health.ts). First the preflight (lib/preflight.ts): a Node too old or
 * native modules built for another Node stop it with a message naming the fix, before anything
 * that could crash the process is loaded. `npm run repl` is lib/repl.ts.
 */
import { nodeVersionNotice, preflightProblem } from "./preflight";

type ErrorTracking = typeof import("./error-tracking");
let errorTracking: ErrorTracking | null = null;

async function main(): Promise<void> {
	const problem = preflightProblem();
	if (problem) {
		console.error(problem);
		process.exit(1);
	}
	const notice = nodeVersionNotice(process.version);
	if (notice) console.warn(notice);
	// Loaded only now: the node's modules load sqlite3 and bcrypt.
	const { loadConfig, processEnvironment } = await import("./config");
	errorTracking = await import("./error-tracking");
	const { createNode } = await import("./node");
	const { startHealthServer } = await import("./health");
	// `.env` values reach both the app config and the broker options (NAMESPACE, NODE_ID, TCP_*, KAFKA_*).
	const env = processEnvironment();
	const config = loadConfig(env);
	// Before the node: a failure to start is reported too. Once per process.
	errorTracking.initErrorTracking(config, { env, processHandlers: true });
	const broker = await createNode({ config, env });
	// Before the services start, so liveness answers during a slow start; /readyz waits for it.
	const { port, host } = config.health;
	const health =
		port === null
			? null
			: await startHealthServer(broker, { port, host }).catch(async err => {
					await broker.stop();
					throw err;
				});
	await broker.start();
	const shutdown = async (signal: string) => {
		broker.logger.info(`${signal}: stopping`);
		// The pod's grace period ends in a SIGKILL: a stop that hangs (a dependency gone, a handler
		// that never returns) ends here first, with a line saying so (docs/deployment.md "Stopping").
		const limit = config.stopTimeoutMs;
		setTimeout(() => {
			broker.logger.error(`${signal}: the stop did not finish within STOP_TIMEOUT_MS (${limit} ms); exiting without it`);
			process.exit(1);
		}, limit);
		await broker.stop();
		await health?.close();
		await errorTracking?.flushErrorTracking();
		process.exit(0);
	};
	process.once("SIGTERM", () => void shutdown("SIGTERM"));
	process.once("SIGINT", () => void shutdown("SIGINT"));
}

main().catch(async err => {
	// Configuration and start-up failures: one clear line, no secrets.
	console.error(`Failed to start: ${err instanceof Error ? err.message : String(err)}`);
	// The database or transporter not reachable at start is an outage, not a defect.
	if (errorTracking && !errorTracking.isOutage(err)) errorTracking.captureError(err, { phase: "start" });
	await errorTracking?.flushErrorTracking();
	process.exit(1);
});
