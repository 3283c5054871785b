/**
 * A Solana test node for a test file: a JSON-RPC server on a free loopback port over litesvm (a
 * real Solana runtime), which a real `new Connection(node.url)` from @solana/web3.js v1 talks to,
 * plus the controls a test needs (produce / skip slots, finalize, drop a confirmed block, airdrop,
 * mints). The engine and what is real there versus facade: test/helpers/solana-facade.ts.
 *
 * Why a child process: litesvm 0.8's Linux binding leaves the x87 FPU stack dirty after a program
 * makes a cross-program invocation (e.g. the associated-token program creating an account), and the
 * next V8 garbage collection that computes a hash-table size in long double aborts the process with
 * `std::bad_alloc` (LiteSVM/litesvm#171; seen here: x87 tag word not empty at the abort). The child
 * runs with `--no-allocation-site-pretenuring` (the V8 path that meets it during GC), and a crash
 * there can never take a jest worker, or anything else of the test process, with it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { PublicKey, Transaction, type Signer, type TransactionInstruction } from "@solana/web3.js";

// The project root; `npm run bench` (bench/watcher-solana.ts) runs this file compiled, from dist/test/helpers.
const ROOT = ((r: string) => (path.basename(r) === "dist" ? path.dirname(r) : r))(path.resolve(__dirname, "../.."));

export type Commitment = "processed" | "confirmed" | "finalized";
export type TxErrorJson = string | Record<string, unknown>;

export interface SolanaNodeOptions {
	/** The finalized head trails the confirmed head by this many blocks (default 2); `null`: it moves only on `finalize()`. */
	finalizeDistance?: number | null;
	/** Produce a block every this many ms (off by default: tests call `produceBlock()`). */
	autoProduceMs?: number;
}

export interface Head {
	slot: number;
	blockHeight: number;
	blockhash: string;
	/** What getLatestBlockhash answers for this head's blockhash. */
	lastValidBlockHeight: number;
}

export interface SolanaNode {
	url: string;
	/** PubSub on the same port (web3.js would guess port + 1): `new Connection(node.url, { wsEndpoint: node.wsUrl })` for confirmTransaction / sendAndConfirmTransaction / onSlotChange. */
	wsUrl: string;
	/** Funds airdrops; mint authority of the mints `createMint` makes. */
	faucet: PublicKey;
	genesisHash: string;
	/** Seals the pending transactions into the block of the next slot; returns that slot. */
	produceBlock(): Promise<number>;
	/** `n` blocks in `n` consecutive slots; returns the last slot. */
	produceBlocks(n: number): Promise<number>;
	/** Leaves the next `n` slots without a block (skipped). */
	skipSlots(n?: number): Promise<void>;
	/** Moves the finalized head to `slot` (a block on the chain; default the confirmed head). */
	finalize(slot?: number): Promise<void>;
	/** `null`: the finalized head moves only on `finalize()`. */
	setFinalizeDistance(distance: number | null): Promise<void>;
	/**
	 * Drops a confirmed, not finalized block, every block after it (its fork) and the pending
	 * transactions: their effects are undone, their signatures unknown, their blockhashes invalid.
	 * The next block is built on the dropped block's parent, in the next free slot.
	 */
	dropBlock(slot: number): Promise<void>;
	/** Produces blocks until every pending transaction is in a finalized block. */
	settle(): Promise<void>;
	head(commitment?: Commitment): Promise<Head>;
	/** A real SOL transfer from the faucet (a transaction in the next block; `to` needs at least the rent-exempt minimum when new). */
	airdrop(to: PublicKey, lamports: bigint): Promise<string>;
	/** A mint account as if it already existed on the cluster (at `address` when given, e.g. the catalogue's USDC mint); the faucet is its mint authority unless `authority`. */
	createMint(decimals: number, opts?: { address?: PublicKey; authority?: PublicKey }): Promise<PublicKey>;
	/** Creates `owner`'s associated token account when missing and mints `amount` into it (a real transaction in the next block). */
	mintTo(mint: PublicKey, owner: PublicKey, amount: bigint): Promise<{ signature: string; ata: PublicKey }>;
	/** Builds a legacy transaction on the confirmed head's blockhash, signs it (first signer pays) and sends it with preflight skipped. */
	send(instructions: TransactionInstruction[], signers: Signer[]): Promise<string>;
	balance(address: PublicKey, commitment?: Commitment): Promise<bigint>;
	/** A token account's amount (base units), `null` when it is not a token account. */
	tokenBalance(tokenAccount: PublicKey, commitment?: Commitment): Promise<bigint | null>;
	status(signature: string): Promise<{ slot: number; confirmationStatus: Commitment; err: TxErrorJson | null } | null>;
	/** `false`: token balances in blocks leave out `owner` and `programId`, as RPC nodes before those fields did (default true). */
	tokenBalanceOwners(on: boolean): Promise<void>;
	/**
	 * From now on blocks are sealed (their transactions executed on the VM) but held off the chain:
	 * no reader sees them until `release` (the bench pre-builds blocks so the watcher, not the VM, is measured).
	 */
	hold(): Promise<void>;
	/** Puts the held blocks on the chain at `slotsPerSecond` (in the background; `held()` empties); holding ends. Returns how many. */
	release(slotsPerSecond: number): Promise<number>;
	/** The held blocks, oldest first. */
	held(): Promise<Array<{ slot: number; transactions: number }>>;
	/** When each slot's block went on the chain (`visible`, at confirmed) and when its slot was finalized, in ms since the epoch. */
	blockTimes(): Promise<{ visible: Record<string, number>; finalized: Record<string, number> }>;
	/** Produces a block every `ms` (null: stop). */
	autoProduce(ms: number | null): Promise<void>;
	/**
	 * What the node's sendTransaction does: "normal" executes; "withhold" answers the signature and
	 * keeps the transaction out of every block until `releaseWithheld()` (a leader that drops it);
	 * "refuse" answers an RPC error (a node that is behind).
	 */
	sendMode(mode: "normal" | "withhold" | "refuse"): Promise<void>;
	/** Signatures withheld so far (not yet released). */
	withheld(): Promise<string[]>;
	/** Forwards the withheld transactions: each executes if its blockhash is still valid, else it never lands. Answers those that executed. */
	releaseWithheld(): Promise<string[]>;
	/**
	 * Open PubSub connections. web3.js closes its socket about 500 ms after its last subscription is
	 * removed; stop the node only after that (await this at 0), or the client reconnects forever.
	 */
	wsClients(): Promise<number>;
	/** RPC requests answered so far, by method. */
	calls(): Promise<Record<string, number>>;
	/** Any Solana JSON-RPC method, answered as the node answers it (`result` or `error`). */
	rpc(method: string, params?: unknown[]): Promise<{ result?: unknown; error?: { code: number; message: string; data?: unknown } }>;
	child: ChildProcess;
	output(): string;
	stop(): Promise<void>;
}

const live = new Set<ChildProcess>();
process.once("exit", () => {
	for (const c of live) c.kill("SIGKILL");
});

export async function startSolanaNode(opts: SolanaNodeOptions = {}): Promise<SolanaNode> {
	const child = spawn(
		process.execPath,
		["--no-allocation-site-pretenuring", "-r", path.join(ROOT, "test/helpers/ts-register.js"), path.join(ROOT, "test/helpers/solana-facade.ts"), JSON.stringify(opts)],
		{ cwd: ROOT, env: { PATH: process.env.PATH ?? "", NODE_ENV: "test" }, stdio: ["pipe", "pipe", "pipe"] },
	);
	live.add(child);
	let out = "";
	child.stderr?.on("data", d => (out = (out + d).slice(-20_000)));
	const exited = new Promise<void>(resolve => child.once("exit", () => resolve()));
	const url = await new Promise<string>((resolve, reject) => {
		let buf = "";
		const timer = setTimeout(() => reject(new Error(`the Solana test node did not start within 60 s\n${out}`)), 60_000);
		child.stdout?.on("data", d => {
			buf += d;
			out = (out + d).slice(-20_000);
			const m = /SOLANA_NODE_URL=(\S+)/.exec(buf);
			if (m) {
				clearTimeout(timer);
				resolve(m[1]);
			}
		});
		child.once("exit", code => {
			clearTimeout(timer);
			reject(new Error(`the Solana test node exited (${code}) before it started\n${out}`));
		});
	});

	let id = 0;
	const rpc: SolanaNode["rpc"] = async (method, params = []) => {
		const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method, params }) });
		return (await res.json()) as never;
	};
	const control = async <T>(method: string, ...params: unknown[]): Promise<T> => {
		const reply = await rpc(`testNode_${method}`, params);
		if (reply.error) throw new Error(`solana test node ${method}: ${reply.error.message}`);
		return reply.result as T;
	};
	const head = (c: Commitment = "confirmed") => control<Head>("head", c);
	const send = async (instructions: TransactionInstruction[], signers: Signer[]): Promise<string> => {
		const h = await head("confirmed");
		const tx = new Transaction({ feePayer: signers[0].publicKey, blockhash: h.blockhash, lastValidBlockHeight: h.lastValidBlockHeight }).add(...instructions);
		tx.sign(...signers);
		const reply = await rpc("sendTransaction", [tx.serialize().toString("base64"), { encoding: "base64", skipPreflight: true }]);
		if (reply.error) throw new Error(`sendTransaction: ${reply.error.message}`);
		return reply.result as string;
	};

	return {
		url,
		wsUrl: url.replace(/^http/, "ws"),
		faucet: new PublicKey(await control<string>("faucet")),
		genesisHash: await control<string>("genesisHash"),
		produceBlock: () => control<number>("produceBlocks", 1),
		produceBlocks: n => control<number>("produceBlocks", n),
		skipSlots: async (n = 1) => void (await control("skipSlots", n)),
		finalize: async slot => void (await control("finalize", slot ?? null)),
		setFinalizeDistance: async d => void (await control("setFinalizeDistance", d)),
		dropBlock: async slot => void (await control("dropBlock", slot)),
		settle: async () => void (await control("settle")),
		head,
		airdrop: (to, lamports) => control<string>("airdrop", to.toBase58(), lamports.toString()),
		createMint: async (decimals, o = {}) => new PublicKey(await control<string>("createMint", decimals, o.address?.toBase58() ?? null, o.authority?.toBase58() ?? null)),
		mintTo: async (mint, owner, amount) => {
			const r = await control<{ signature: string; ata: string }>("mintTo", mint.toBase58(), owner.toBase58(), amount.toString());
			return { signature: r.signature, ata: new PublicKey(r.ata) };
		},
		send,
		balance: async (a, c = "processed") => BigInt(await control<string>("balance", a.toBase58(), c)),
		tokenBalance: async (a, c = "processed") => {
			const v = await control<string | null>("tokenBalance", a.toBase58(), c);
			return v === null ? null : BigInt(v);
		},
		status: s => control("status", s),
		autoProduce: async ms => void (await control("autoProduce", ms)),
		tokenBalanceOwners: async on => void (await control("tokenBalanceOwners", on)),
		hold: async () => void (await control("hold")),
		release: rate => control<number>("release", rate),
		held: () => control("held"),
		blockTimes: () => control("blockTimes"),
		sendMode: async mode => void (await control("sendMode", mode)),
		withheld: () => control<string[]>("withheld"),
		releaseWithheld: () => control<string[]>("releaseWithheld"),
		calls: () => control("calls"),
		wsClients: () => control<number>("wsClients"),
		rpc,
		child,
		output: () => out,
		stop: async () => {
			if (child.exitCode === null && child.signalCode === null) {
				child.stdin?.end();
				const t = setTimeout(() => child.kill("SIGKILL"), 10_000);
				await exited;
				clearTimeout(t);
			}
			live.delete(child);
		},
	};
}
