/**
 * A chain test node in a child process of its own (bench/ton-node-process.ts,
 * bench/polkadot-node-process.ts): the watcher benches keep the node's CPU out of the process they
 * measure. The parent forks the node's module and drives it over Node IPC (one answer per request,
 * by id); the child serves a table of commands and says its URL once it is up.
 */
import { fork, type ChildProcess } from "node:child_process";
import path from "node:path";

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Command = (...args: any[]) => unknown;
/** The commands' interface: each answered once, by id. */
type Commands<C> = { [K in keyof C]: Command };
type Request = { id: number; cmd: string; args: unknown[] };
type Reply = { id: number; result?: unknown; error?: string };

export interface NodeProcess<C extends Commands<C>> {
	url: string;
	child: ChildProcess;
	call<K extends keyof C & string>(cmd: K, ...args: Parameters<C[K]>): Promise<ReturnType<C[K]>>;
	stop(): Promise<void>;
}

/** Forks `file` (a module that calls serveNodeProcess when run as a script) and waits for its URL. */
export async function forkNodeProcess<C extends Commands<C>>(file: string, label: string, args: string[] = []): Promise<NodeProcess<C>> {
	// Built: dist/bench/<file>.js runs itself; from source, through the tests' TS loader.
	const execArgv = path.extname(file) === ".ts" ? ["-r", path.resolve(__dirname, "../test/helpers/ts-register.js")] : [];
	const child = fork(file, args, { execArgv, stdio: ["ignore", "inherit", "inherit", "ipc"] });
	const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
	let exited: Error | null = null;
	const url = await new Promise<string>((resolve, reject) => {
		child.once("message", m => resolve((m as { url: string }).url));
		child.once("exit", code => reject(new Error(`the ${label} process exited (${code}) before it started`)));
	});
	child.on("message", m => {
		const r = m as Reply;
		const w = waiting.get(r.id);
		if (!w) return;
		waiting.delete(r.id);
		if (r.error !== undefined) w.reject(new Error(`${label} process: ${r.error}`));
		else w.resolve(r.result);
	});
	child.on("exit", code => {
		exited = new Error(`the ${label} process exited (${code})`);
		for (const w of waiting.values()) w.reject(exited);
		waiting.clear();
	});
	let next = 0;
	return {
		url,
		child,
		call: (cmd, ...callArgs) =>
			new Promise((resolve, reject) => {
				if (exited) return reject(exited);
				const id = ++next;
				waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
				child.send({ id, cmd, args: callArgs } satisfies Request);
			}),
		stop: async () => {
			if (child.exitCode !== null || child.signalCode !== null) return;
			const gone = new Promise<void>(resolve => child.once("exit", () => resolve()));
			child.kill("SIGTERM");
			const t = setTimeout(() => child.kill("SIGKILL"), 10_000);
			await gone;
			clearTimeout(t);
		},
	};
}

/** The child's side: answers the parent's requests from `commands`, stops the node on SIGTERM or when the parent goes, then says `url`. */
export function serveNodeProcess(url: string, commands: Record<string, (...args: never[]) => Promise<unknown>>, stopNode: () => Promise<unknown>): void {
	process.on("message", async m => {
		const { id, cmd, args } = m as Request;
		try {
			const result = await (commands[cmd] as (...a: unknown[]) => Promise<unknown>)(...args);
			process.send!({ id, result } satisfies Reply);
		} catch (err) {
			process.send!({ id, error: (err as Error)?.stack ?? String(err) } satisfies Reply);
		}
	});
	const stop = () => void stopNode().finally(() => process.exit(0));
	process.once("SIGTERM", stop);
	process.once("disconnect", stop);
	process.send!({ url });
}

/** Runs the child's main when the module is the script node was started with. */
export function runNodeProcessChild(mod: NodeModule, childMain: () => Promise<void>): void {
	if (require.main !== mod) return;
	childMain().catch(err => {
		console.error(err);
		process.exit(1);
	});
}
