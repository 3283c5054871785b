/**
 * A real anvil node for a test file: a free loopback port, its own cache folder, funded wallets,
 * and the dev-chain RPC methods tests need (mine, reorg, snapshot/revert, automine). The process is
 * killed on `stop()` and, failing that, when the test process exits.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { ChildProcess } from "node:child_process";
import { Contract, JsonRpcProvider, Network, NonceManager, Wallet, parseUnits, type Subscriber, type Subscription } from "ethers";
import { deployContract } from "../../lib/chains/evm/contracts";
import { anvilPrivateKeys, freePort, spawnAnvil } from "../../lib/dev/anvil";

export { freePort };

export interface AnvilOptions {
	/** Interval mining in seconds; unset: a block per transaction (automine). */
	blockTime?: number;
	chainId?: number;
	args?: string[];
}

export interface Anvil {
	url: string;
	port: number;
	chainId: number;
	/** No caching, static network: every call reaches the node. */
	provider: JsonRpcProvider;
	/** anvil's funded accounts, each behind a NonceManager (reset by revert/reorg; call `reset()` after a send that failed before reaching the node). */
	accounts: NonceManager[];
	/** The same accounts' addresses, in order. */
	addresses: string[];
	rpc<T = unknown>(method: string, params?: unknown[]): Promise<T>;
	mine(blocks?: number): Promise<void>;
	blockNumber(): Promise<number>;
	setAutomine(on: boolean): Promise<void>;
	/** `anvil_reorg`: replaces the last `depth` blocks; `txs` are [transaction request, block offset] pairs to put in them. */
	reorg(depth: number, txs?: Array<[Record<string, unknown>, number]>): Promise<void>;
	snapshot(): Promise<string>;
	revert(id: string): Promise<void>;
	stop(): Promise<void>;
}

/**
 * ethers' block poller starts at the head it first sees and emits only the blocks after it. With
 * automine, a transaction mined between a waiter's receipt check and that first poll sits in a
 * block that is never emitted, and `tx.wait()` / `waitForTransaction` wait forever (seen on a
 * loaded machine). This poller also emits the head it starts at (and the head again after a
 * revert or reorg lowered it): a listener then re-checks its receipt, which is all it does.
 */
class HeadBlockSubscriber implements Subscriber {
	private last = -2;
	private timer: NodeJS.Timeout | null = null;
	private polling = false;

	constructor(
		private readonly provider: JsonRpcProvider,
		readonly pollingInterval: number,
	) {}

	start(): void {
		if (this.timer) return;
		this.timer = setInterval(() => void this.poll(), this.pollingInterval);
		void this.poll();
	}

	stop(): void {
		if (this.timer) clearInterval(this.timer);
		this.timer = null;
	}

	pause(): void {
		this.stop();
	}

	resume(): void {
		this.start();
	}

	private async poll(): Promise<void> {
		if (this.polling) return;
		this.polling = true;
		try {
			const head = await this.provider.getBlockNumber();
			if (this.last === -2 || head < this.last) this.last = head - 1;
			for (let b = this.last + 1; b <= head && this.timer; b++) await this.provider.emit("block", b);
			this.last = Math.max(this.last, head);
		} catch {
			// The node is away (stopped by the test): the next poll asks again.
		} finally {
			this.polling = false;
		}
	}
}

/** A JsonRpcProvider whose block events cannot miss the block a transaction was mined in. */
class AnvilProvider extends JsonRpcProvider {
	override _getSubscriber(sub: Subscription): Subscriber {
		return sub.type === "block" ? new HeadBlockSubscriber(this, this.pollingInterval) : super._getSubscriber(sub);
	}
}

const running = new Set<ChildProcess>();
process.once("exit", () => {
	for (const child of running) child.kill("SIGKILL");
});

export async function startAnvil(opts: AnvilOptions = {}): Promise<Anvil> {
	const chainId = opts.chainId ?? 31337;
	const cachePath = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-anvil-"));
	let started: Awaited<ReturnType<typeof spawnAnvil>> | null = null;
	let port = 0;
	for (let attempt = 1; !started; attempt++) {
		port = await freePort();
		try {
			started = await spawnAnvil({ port, cachePath, blockTime: opts.blockTime, chainId, args: opts.args });
		} catch (e) {
			if (!(e as { addressInUse?: boolean }).addressInUse || attempt >= 5) throw e;
		}
	}
	const { child, url } = started;
	running.add(child);

	const provider = new AnvilProvider(url, Network.from(chainId), { staticNetwork: true, cacheTimeout: -1, pollingInterval: 50 });
	const accounts = anvilPrivateKeys(10).map(key => new NonceManager(new Wallet(key, provider)));
	const addresses = anvilPrivateKeys(10).map(key => new Wallet(key).address);
	const rpc = <T>(method: string, params: unknown[] = []) => provider.send(method, params) as Promise<T>;
	const resetNonces = () => accounts.forEach(a => a.reset());

	return {
		url,
		port,
		chainId,
		provider,
		accounts,
		addresses,
		rpc,
		async mine(blocks = 1) {
			await rpc("anvil_mine", [`0x${blocks.toString(16)}`]);
		},
		async blockNumber() {
			return Number(await rpc<string>("eth_blockNumber"));
		},
		async setAutomine(on) {
			await rpc("evm_setAutomine", [on]);
		},
		async reorg(depth, txs = []) {
			await rpc("anvil_reorg", [depth, txs]);
			resetNonces();
		},
		async snapshot() {
			return rpc<string>("evm_snapshot");
		},
		async revert(id) {
			await rpc("evm_revert", [id]);
			resetNonces();
		},
		async stop() {
			provider.destroy();
			if (child.exitCode === null && child.signalCode === null) {
				const exited = new Promise(resolve => child.once("exit", resolve));
				child.kill("SIGTERM");
				const timer = setTimeout(() => child.kill("SIGKILL"), 3_000);
				await exited;
				clearTimeout(timer);
			}
			running.delete(child);
			fs.rmSync(cachePath, { recursive: true, force: true });
		},
	};
}

/**
 * The test stablecoin (TestToken, 6 decimals) deployed on a started anvil and minted to the given
 * accounts (by index); automine is switched off afterwards, so tests mine blocks themselves.
 */
export async function deployTestUsdc(anvil: Anvil, holders: number[], amount = "1000000"): Promise<Contract> {
	await anvil.setAutomine(true);
	const token = await deployContract(anvil.accounts[0], "TestToken", ["Test USD Coin", "USDC"]);
	for (const i of holders) await (await (token.connect(anvil.accounts[0]) as Contract).mint(anvil.addresses[i], parseUnits(amount, 6))).wait();
	await anvil.setAutomine(false);
	return token;
}
