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
import { Address, toNano } from "@ton/core";
import { forkNodeProcess, runNodeProcessChild, serveNodeProcess, type NodeProcess } from "./node-process";

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

export type TonNodeProcess = NodeProcess<TonNodeCommands>;

export function startTonNodeProcess(opts: { testnet: boolean }): Promise<TonNodeProcess> {
	return forkNodeProcess<TonNodeCommands>(__filename, "TON node", [JSON.stringify(opts)]);
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
	serveNodeProcess(ton.url, commands, () => ton.stop());
}

runNodeProcessChild(module, childMain);
