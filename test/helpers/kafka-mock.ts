/**
 * A Kafka-protocol broker for tests: librdkafka's mock cluster, run by Debian's `kcat`
 * (`apt-get install kcat`). kcat consumes a throw-away topic so the process (and the mock
 * cluster inside it) stays up; the mock's notice line names its bootstrap address on stderr.
 *
 * What the mock does not do (librdkafka 2.0): CreateTopics, DeleteTopics, DescribeGroups,
 * ListGroups; its controller id (0) names no broker. Topics are created by the mock on any
 * Metadata request that names them (4 partitions), which is what KafkaJsTransporter falls back to.
 * The first JoinGroup of a group waits 3 s (the broker's initial rebalance delay), as real Kafka does.
 */
import { spawn, spawnSync, ChildProcess } from "node:child_process";

export interface KafkaMock {
	/** `127.0.0.1:<port>` */
	address: string;
	/** `kafka://127.0.0.1:<port>`, for TRANSPORTER. */
	url: string;
	/** SIGSTOP: the brokers stop answering (connections stay open, requests time out). */
	pause(): void;
	/** SIGCONT: they answer again, on the same address. */
	resume(): void;
	stop(): Promise<void>;
}

let kcatFound: boolean | null = null;

/** True when `kcat` can be run on this machine. */
export function kcatAvailable(): boolean {
	if (kcatFound === null) kcatFound = spawnSync("kcat", ["-V"], { stdio: "ignore" }).status === 0;
	return kcatFound;
}

const ADDRESS = /Mock cluster enabled: .*replaced with (127\.0\.0\.1:\d+)/;

export async function startKafkaMock(timeoutMs = 10_000): Promise<KafkaMock> {
	// -q: no per-message or end-of-partition chatter; the mock's notice (log level 5) still shows.
	const child: ChildProcess = spawn("kcat", ["-q", "-b", "127.0.0.1:1", "-X", "test.mock.num.brokers=1", "-C", "-t", "cpg-mock-keepalive"], {
		stdio: ["ignore", "ignore", "pipe"],
	});
	const exited = new Promise<void>(resolve => child.once("exit", () => resolve()));
	let onEarlyExit: ((code: number | null) => void) | undefined;
	const address = await new Promise<string>((resolve, reject) => {
		let seen = "";
		const timer = setTimeout(() => fail(new Error(`kcat did not report a mock cluster address within ${timeoutMs} ms: ${seen.slice(0, 500)}`)), timeoutMs);
		const onData = (chunk: Buffer) => {
			seen += chunk.toString();
			const m = ADDRESS.exec(seen);
			if (m) {
				clearTimeout(timer);
				resolve(m[1]);
			}
		};
		const fail = (err: Error) => {
			clearTimeout(timer);
			child.kill("SIGKILL");
			reject(err);
		};
		child.stderr!.on("data", onData);
		child.once("error", fail);
		onEarlyExit = code => fail(new Error(`kcat exited (${code}) before reporting an address: ${seen.slice(0, 500)}`));
		child.once("exit", onEarlyExit);
	});
	// If this test process dies without teardown (killed worker), take kcat with it.
	const watchdog = spawn("sh", ["-c", `while kill -0 ${process.pid} 2>/dev/null && kill -0 ${child.pid} 2>/dev/null; do sleep 2; done; kill ${child.pid} 2>/dev/null`], {
		stdio: "ignore",
		detached: true,
	});
	watchdog.unref();
	// Keep draining stderr so kcat never blocks on a full pipe.
	child.stderr!.removeAllListeners("data");
	child.stderr!.resume();
	child.removeListener("exit", onEarlyExit!);

	return {
		address,
		url: `kafka://${address}`,
		pause: () => void child.kill("SIGSTOP"),
		resume: () => void child.kill("SIGCONT"),
		async stop() {
			if (child.exitCode !== null || child.signalCode !== null) return;
			child.kill("SIGCONT"); // a paused kcat would not act on SIGTERM
			child.kill("SIGTERM");
			const killed = await Promise.race([exited.then(() => true), new Promise<boolean>(r => setTimeout(() => r(false), 3000).unref())]);
			if (!killed) {
				child.kill("SIGKILL");
				await exited;
			}
		},
	};
}
