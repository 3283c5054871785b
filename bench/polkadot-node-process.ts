/**
 * The Polkadot test node (test/helpers/polkadot-node.ts: chopsticks running the real Asset Hub
 * runtime, behind the finality proxy) in a child process of its own, for bench/watcher-polkadot.ts:
 * chopsticks' server, its executor worker and the proxy would otherwise share the watcher's
 * process and cores' accounting; a deployment reads a node that runs elsewhere. The watcher reads
 * the node over WebSocket as before; the bench drives it over Node IPC (fork), as
 * bench/ton-node-process.ts does for TON.
 *
 * Held blocks: `prebuild` builds the payment blocks on top of the head, then moves the head back
 * (dev_setHead) to where it was, so no reader sees them; `release` puts them back on the chain
 * one at a time (dev_setHead to each block's hash, then finalizes it) at a set rate.
 *
 * Run as a script it is the child; imported, `startPolkadotNodeProcess` forks it.
 */
import { forkNodeProcess, runNodeProcessChild, serveNodeProcess, type NodeProcess } from "./node-process";

/** One block's payments: native (planck) and USDT 1984 (base units), each to a distinct address. */
export interface HeldBlockPlan {
	native: string[];
	usdt: string[];
}

/** What the bench asks the child (each answered once, by id). */
export interface PolkadotNodeCommands {
	/** Builds one block per plan (a utility.batchAll of balances.transferKeepAlive, one of assets.transfer), then holds them off the chain. */
	prebuild(blocks: HeldBlockPlan[], nativeAmount: string, usdtAmount: string): { numbers: number[]; hashes: string[]; events: number[] };
	head(): number;
	/** Puts the held blocks on the chain at `perSecond` blocks a second, each finalized as it goes on; answers when all are on it. */
	release(perSecond: number): null;
	/** When each block went on the chain (ms, this machine's clock), by number. */
	onChainAt(): Record<string, number>;
}

export type PolkadotNodeProcess = NodeProcess<PolkadotNodeCommands>;

export function startPolkadotNodeProcess(): Promise<PolkadotNodeProcess> {
	return forkNodeProcess<PolkadotNodeCommands>(__filename, "Polkadot node");
}

async function childMain(): Promise<void> {
	// Imported here only: the parent needs none of chopsticks.
	const { startPolkadotNode, USDT } = await import("../test/helpers/polkadot-node");
	const node = await startPolkadotNode({ autoFinalize: false });
	const payer = node.pair("//BenchPayer");
	await node.fund(payer.address, 10n ** 24n);
	await node.mintAsset(USDT.id, payer.address, 10n ** 15n);
	await node.finalize();
	let held: Array<{ number: number; hash: string }> = [];
	const onChainAt = new Map<number, number>();
	const commands: { [K in keyof PolkadotNodeCommands]: (...a: Parameters<PolkadotNodeCommands[K]>) => Promise<ReturnType<PolkadotNodeCommands[K]>> } = {
		prebuild: async (blocks, nativeAmount, usdtAmount) => {
			const base = await node.head();
			let nonce = (await node.api.rpc.system.accountNextIndex(payer.address)).toNumber();
			const events: number[] = [];
			for (const plan of blocks) {
				const api = node.api;
				if (plan.native.length) await api.tx.utility.batchAll(plan.native.map(to => api.tx.balances.transferKeepAlive(to, BigInt(nativeAmount)))).signAndSend(payer, { nonce: nonce++ });
				if (plan.usdt.length) await api.tx.utility.batchAll(plan.usdt.map(to => api.tx.assets.transfer(USDT.id, to, BigInt(usdtAmount)))).signAndSend(payer, { nonce: nonce++ });
				const block = await node.newBlock();
				// Both batches must be in the block and have succeeded (batchAll: all or nothing).
				const records = (await (await api.at(block.hash)).query.system.events()) as unknown as Array<{ event: { section: string; method: string } }>;
				const failed = records.filter(r => r.event.section === "system" && r.event.method === "ExtrinsicFailed").length;
				const completed = records.filter(r => r.event.section === "utility" && r.event.method === "BatchCompleted").length;
				const expected = (plan.native.length ? 1 : 0) + (plan.usdt.length ? 1 : 0);
				if (failed || completed !== expected) throw new Error(`block #${block.number}: ${completed} batches completed, ${failed} extrinsics failed (expected ${expected} batches)`);
				held.push(block);
				events.push(records.length);
			}
			// Off the chain until released: the head back where it was (the built blocks stay in chopsticks' memory, by hash).
			await node.rpc("dev_setHead", [base.hash]);
			return { numbers: held.map(b => b.number), hashes: held.map(b => b.hash), events };
		},
		head: async () => (await node.head()).number,
		release: async perSecond => {
			const start = Date.now();
			for (let i = 0; i < held.length; i++) {
				const wait = start + (i * 1000) / perSecond - Date.now();
				if (wait > 0) await new Promise(r => setTimeout(r, wait));
				await node.rpc("dev_setHead", [held[i].hash]);
				onChainAt.set(held[i].number, Date.now());
				await node.finalize(held[i].number);
			}
			held = [];
			return null;
		},
		onChainAt: async () => Object.fromEntries(onChainAt),
	};
	serveNodeProcess(node.url, commands, () => node.stop());
}

runNodeProcessChild(module, childMain);
