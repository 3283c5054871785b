/**
 * A nats-server of the test's own (Debian's `nats-server`), on a free loopback port, with the
 * authentication and TLS options the test asks for (`--user/--pass`, `--auth`, `--tls ...`; the
 * certificates from test/helpers/certificates.ts). Stopped by the test.
 */
import { ChildProcess, spawn, spawnSync } from "node:child_process";
import { freePort } from "../../lib/dev/anvil";
import { until } from "./until";

export interface NatsServer {
	port: number;
	/** `nats://127.0.0.1:<port>` (no credentials). */
	url: string;
	output(): string;
	stop(): Promise<void>;
}

export function natsServerAvailable(): boolean {
	return spawnSync("nats-server", ["--version"], { stdio: "ignore" }).status === 0;
}

/**
 * Starts `nats-server -a 127.0.0.1 -p <free port> <args>` and waits until it says it is ready. The
 * free port can be taken by another test (jest runs files in parallel) before nats-server binds it:
 * then it is started again on another port.
 */
export async function startNatsServer(args: string[]): Promise<NatsServer> {
	for (let attempt = 1; ; attempt++) {
		try {
			return await startOnce(await freePort(), args);
		} catch (err) {
			if (!(err as { addressInUse?: boolean }).addressInUse || attempt >= 3) throw err;
		}
	}
}

async function startOnce(port: number, args: string[]): Promise<NatsServer> {
	const child: ChildProcess = spawn("nats-server", ["-a", "127.0.0.1", "-p", String(port), ...args], { stdio: ["ignore", "pipe", "pipe"] });
	let out = "";
	child.stdout!.on("data", d => (out = (out + d).slice(-20_000)));
	child.stderr!.on("data", d => (out = (out + d).slice(-20_000)));
	const exited = new Promise<void>(resolve => child.once("exit", () => resolve()));
	const stop = async () => {
		if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
		await exited;
	};
	try {
		await until("nats-server ready", () => {
			if (child.exitCode !== null) {
				const error = new Error(`nats-server exited (${child.exitCode}): ${out}`) as Error & { addressInUse?: boolean };
				error.addressInUse = /address already in use/i.test(out);
				throw error;
			}
			return /Server is ready/.test(out);
		}, 20_000, () => out);
	} catch (err) {
		await stop();
		throw err;
	}
	return { port, url: `nats://127.0.0.1:${port}`, output: () => out, stop };
}
