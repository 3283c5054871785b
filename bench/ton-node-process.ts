/**
 * The TON test node (test/helpers/ton-node.ts: @ton/sandbox + the toncenter-v3 facade) in a child
 * process of its own, for bench/watcher-ton.ts. In the bench's own process the facade's answers
 * (the JSON of every transaction it serves) and the emulator shared the watcher's event loop and
 * core; a deployment reads a toncenter / ton-indexer that runs elsewhere, so the bench keeps the
 * node out of the process it measures. The watcher reads the node over HTTP as before; the bench
 * drives it over Node IPC (fork): build and hold the payment blocks, release them, block times.
 *
 * Run as a script it is the child; imported, `startTonNodeProcess` forks it.
 */
import { fork, type ChildProcess } from "node:child_process";
import path from "node:path";
import { Address, toNano } from "@ton/core";

/** What the bench asks the child (each answered once, by id). */
export interface TonNodeCommands {
	/** Holds sealed blocks off the chain, then pays `amountNano` to each raw address of each block (one block per list) from a funded v5R1 wallet and seals it; answers the blocks' seqnos. */
	prebuild(blocks: string[][], amountNano: string): { seqnos: number[]; held: number };
	lastSeqno(): number;
	/** Puts the held blocks on the chain at `perSecond` blocks a second; answers when all are on it. */
	release(perSecond: number): null;
	/** When each block went on the chain (ms, this machine's clock), by seqno. */
	onChainAt(): Record<string, number>;
}

type Request = { id: number; cmd: keyof TonNodeCommands; args: unknown[] };
type Reply = { id: number; result?: unknown; error?: string };

export interface TonNodeProcess {
	url: string;
	child: ChildProcess;
	call<K extends keyof TonNodeCommands>(cmd: K, ...args: Parameters<TonNodeCommands[K]>): Promise<ReturnType<TonNodeCommands[K]>>;
	stop(): Promise<void>;
}

export async function startTonNodeProcess(opts: { testnet: boolean }): Promise<TonNodeProcess> {
	const ext = path.extname(__filename);
	// Built: dist/bench/ton-node-process.js runs itself; from source, through the tests' TS loader.
	const execArgv = ext === ".ts" ? ["-r", path.resolve(__dirname, "../test/helpers/ts-register.js")] : [];
	const child = fork(__filename, [JSON.stringify(opts)], { execArgv, stdio: ["ignore", "inherit", "inherit", "ipc"] });
	const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
	let exited: Error | null = null;
	const url = await new Promise<string>((resolve, reject) => {
		child.once("message", m => resolve((m as { url: string }).url));
		child.once("exit", code => reject(new Error(`the TON node process exited (${code}) before it started`)));
	});
	child.on("message", m => {
		const r = m as Reply;
		const w = waiting.get(r.id);
		if (!w) return;
		waiting.delete(r.id);
		if (r.error !== undefined) w.reject(new Error(`TON node process: ${r.error}`));
		else w.resolve(r.result);
	});
	child.on("exit", code => {
		exited = new Error(`the TON node process exited (${code})`);
		for (const w of waiting.values()) w.reject(exited);
		waiting.clear();
	});
	let next = 0;
	return {
		url,
		child,
		call: (cmd, ...args) =>
			new Promise((resolve, reject) => {
				if (exited) return reject(exited);
				const id = ++next;
				waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
				child.send({ id, cmd, args } satisfies Request);
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

async function childMain(): Promise<void> {
	// Imported here only: the parent needs none of the emulator.
	const { startTonNode } = await import("../test/helpers/ton-node");
	const opts = JSON.parse(process.argv[2] ?? "{}") as { testnet: boolean };
	const ton = await startTonNode({ testnet: opts.testnet });
	const payer = await ton.wallet({ version: "v5", balance: toNano("1000000") });
	// The watcher starts after the block below the head: the genesis block alone has none below it.
	await ton.seal();
	const commands: { [K in keyof TonNodeCommands]: (...a: Parameters<TonNodeCommands[K]>) => Promise<ReturnType<TonNodeCommands[K]>> } = {
		prebuild: async (blocks: string[][], amountNano: string) => {
			ton.facade.hold();
			const seqnos: number[] = [];
			for (const to of blocks) {
				await ton.payMany(payer, to.map(a => ({ to: Address.parseRaw(a), amount: BigInt(amountNano), bounce: false })), { timeout: 3_600 });
				seqnos.push(await ton.seal());
			}
			return { seqnos, held: ton.facade.heldCount() };
		},
		lastSeqno: async () => ton.lastSeqno(),
		release: async (perSecond: number) => {
			await ton.facade.release(perSecond);
			return null;
		},
		onChainAt: async () => Object.fromEntries(ton.facade.onChainAt),
	};
	process.on("message", async m => {
		const { id, cmd, args } = m as Request;
		try {
			const result = await (commands[cmd] as (...a: unknown[]) => Promise<unknown>)(...args);
			process.send!({ id, result } satisfies Reply);
		} catch (err) {
			process.send!({ id, error: (err as Error)?.stack ?? String(err) } satisfies Reply);
		}
	});
	const stop = () => void ton.stop().finally(() => process.exit(0));
	process.once("SIGTERM", stop);
	process.once("disconnect", stop);
	process.send!({ url: ton.url });
}

if (require.main === module) {
	childMain().catch(err => {
		console.error(err);
		process.exit(1);
	});
}
