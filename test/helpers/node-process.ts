/**
 * A real node process (lib/start.ts) for tests that kill -9 it: its own environment, its output
 * kept for the test's failure message, and `kill()` / `stop()`.
 */
import { ChildProcess, spawn } from "node:child_process";
import path from "node:path";
import type { TestNode } from "./harness";

const ROOT = path.resolve(__dirname, "../..");

export interface NodeProcess {
	child: ChildProcess;
	output(): string;
	/** SIGKILL: no graceful stop, no lease release. */
	kill(): Promise<void>;
	/** SIGTERM: graceful stop. */
	stop(): Promise<void>;
}

export function startNodeProcess(env: Record<string, string>): NodeProcess {
	const child = spawn(process.execPath, ["-r", path.join(ROOT, "test/helpers/ts-register.js"), path.join(ROOT, "lib/start.ts")], {
		cwd: ROOT,
		// HEALTH_PORT 0: processes of parallel tests never meet on the default port.
		env: { PATH: process.env.PATH ?? "", NODE_ENV: "test", LOG_LEVEL: "warn", HEALTH_PORT: "0", ...env },
		stdio: ["ignore", "pipe", "pipe"],
	});
	let out = "";
	child.stdout?.on("data", d => (out = (out + d).slice(-20_000)));
	child.stderr?.on("data", d => (out = (out + d).slice(-20_000)));
	const exited = new Promise<void>(resolve => child.once("exit", () => resolve()));
	const end = async (signal: NodeJS.Signals) => {
		if (child.exitCode === null && child.signalCode === null) child.kill(signal);
		await exited;
	};
	return { child, output: () => out, kill: () => end("SIGKILL"), stop: () => end("SIGTERM") };
}

/** A process of `node`'s cluster: the same database and data directory (its HD seed), running `services` as `name`. */
export function startClusterProcess(node: Pick<TestNode, "config" | "dataDir">, name: string, services: string[], env: Record<string, string>): NodeProcess {
	return startNodeProcess({ DATABASE_URL: node.config.databaseUrl, DATA_DIR: node.dataDir, SERVICES: services.join(","), NODE_ID: name, ...env });
}
