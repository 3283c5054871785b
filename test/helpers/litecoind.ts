/**
 * A real `litecoind -regtest` for a test file (Litecoin Core 0.21 = Bitcoin Core 0.21 RPC): free
 * loopback ports, its own datadir in a temp folder, user/password RPC auth, no peers, and a wallet
 * ("funded") holding mature coinbase coins. The process is killed on `stop()` and, failing that,
 * when the test process exits. Nothing but 127.0.0.1 is ever contacted (`-connect=0 -dnsseed=0`).
 *
 * Amounts: `rpc` parses replies with JSON.parse (numbers become floats: fine for test set-up, never
 * for assertions on money); pass amounts to the node as decimal strings ("0.1"), which Core accepts.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { spawn, type ChildProcess } from "node:child_process";
import { freePort } from "../../lib/dev/anvil";

export interface LitecoindOptions {
	/** Blocks mined to the funded wallet at start (≥ 101 so a coinbase is spendable); default 200. */
	premine?: number;
	args?: string[];
}

export type Rpc = <T = unknown>(method: string, params?: unknown[]) => Promise<T>;

export interface Litecoind {
	/** http://user:password@127.0.0.1:port — the node-level endpoint, credentials in the URL. */
	rpcUrl: string;
	/** The same endpoint without credentials, plus the credentials. */
	rpcEndpoint: string;
	rpcUser: string;
	rpcPassword: string;
	rpcPort: number;
	datadir: string;
	/** Node-level RPC (no wallet). Throws an Error with `code` (the RPC error code) on an RPC error. */
	rpc: Rpc;
	/** The raw reply body of a node-level call (for exact decimal handling in assertions). */
	rpcRaw(method: string, params?: unknown[]): Promise<string>;
	/** RPC of the funded wallet ("funded"). */
	wallet: Rpc;
	walletName: string;
	/** An address of the funded wallet (coinbase rewards go there by default). */
	fundedAddress: string;
	/** Creates (or loads) another wallet and returns its RPC. */
	createWallet(name: string): Promise<Rpc>;
	/** Mines `n` blocks to `address` (default: the funded wallet); returns the block hashes. */
	mine(n?: number, address?: string): Promise<string[]>;
	blockCount(): Promise<number>;
	stop(): Promise<void>;
}

const running = new Set<ChildProcess>();
process.once("exit", () => {
	for (const child of running) child.kill("SIGKILL");
});

export class RpcError extends Error {
	constructor(
		message: string,
		readonly code: number,
	) {
		super(message);
	}
}

function rpcClient(endpoint: string, auth: string) {
	let id = 0;
	const raw = async (method: string, params: unknown[] = []): Promise<string> => {
		const res = await fetch(endpoint, {
			method: "POST",
			headers: { "content-type": "application/json", authorization: `Basic ${auth}` },
			body: JSON.stringify({ jsonrpc: "1.0", id: ++id, method, params }),
		});
		const text = await res.text();
		if (!res.ok && !text.startsWith("{")) throw new Error(`litecoind ${method}: HTTP ${res.status} ${text.slice(0, 200)}`);
		return text;
	};
	const call: Rpc = async <T>(method: string, params: unknown[] = []) => {
		const body = JSON.parse(await raw(method, params)) as { result: T; error: { code: number; message: string } | null };
		if (body.error) throw new RpcError(`litecoind ${method}: ${body.error.message}`, body.error.code);
		return body.result;
	};
	return { raw, call };
}

export function litecoindBinary(): string {
	return process.env.LITECOIND ?? "litecoind";
}

async function spawnOnce(datadir: string, rpcPort: number, p2pPort: number, user: string, password: string, args: string[]): Promise<ChildProcess> {
	const child = spawn(
		litecoindBinary(),
		[
			"-regtest",
			`-datadir=${datadir}`,
			`-rpcport=${rpcPort}`,
			`-port=${p2pPort}`,
			"-listen=0",
			"-connect=0",
			"-dnsseed=0",
			"-upnp=0",
			"-rpcbind=127.0.0.1",
			"-rpcallowip=127.0.0.1",
			`-rpcuser=${user}`,
			`-rpcpassword=${password}`,
			"-server=1",
			"-fallbackfee=0.0001",
			"-txindex=0",
			"-walletrbf=1",
			"-printtoconsole=0",
			"-vbparams=mweb:0:0",
			...args,
		],
		{ stdio: ["ignore", "ignore", "pipe"] },
	);
	let stderr = "";
	child.stderr?.on("data", d => (stderr += String(d)));
	const exited = new Promise<never>((_, reject) =>
		child.once("exit", code => reject(new Error(`litecoind exited (${code}) at start: ${stderr.slice(0, 500)}`))),
	);
	exited.catch(() => undefined);
	const auth = Buffer.from(`${user}:${password}`).toString("base64");
	const { call } = rpcClient(`http://127.0.0.1:${rpcPort}/`, auth);
	const deadline = Date.now() + 30_000;
	for (;;) {
		try {
			await Promise.race([call("getblockchaininfo"), exited]);
			return child;
		} catch (e) {
			if (child.exitCode !== null || child.signalCode !== null) throw e;
			// -28: warming up; ECONNREFUSED: not listening yet.
			if (Date.now() > deadline) {
				child.kill("SIGKILL");
				throw new Error(`litecoind did not answer RPC in 30 s: ${(e as Error).message}`);
			}
			await new Promise(r => setTimeout(r, 100));
		}
	}
}

export async function startLitecoind(opts: LitecoindOptions = {}): Promise<Litecoind> {
	const datadir = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-litecoind-"));
	const rpcUser = "cpgtest";
	const rpcPassword = `pw${Math.random().toString(36).slice(2)}`;
	let child: ChildProcess | null = null;
	let rpcPort = 0;
	for (let attempt = 1; !child; attempt++) {
		rpcPort = await freePort();
		const p2pPort = await freePort();
		try {
			child = await spawnOnce(datadir, rpcPort, p2pPort, rpcUser, rpcPassword, opts.args ?? []);
		} catch (e) {
			if (attempt >= 3) throw e;
		}
	}
	running.add(child);
	const proc = child;
	const rpcEndpoint = `http://127.0.0.1:${rpcPort}/`;
	const auth = Buffer.from(`${rpcUser}:${rpcPassword}`).toString("base64");
	const node = rpcClient(rpcEndpoint, auth);
	const walletRpc = (name: string): Rpc => rpcClient(`${rpcEndpoint}wallet/${encodeURIComponent(name)}`, auth).call;

	const walletName = "funded";
	await node.call("createwallet", [walletName]);
	const wallet = walletRpc(walletName);
	const fundedAddress = await wallet<string>("getnewaddress", ["", "bech32"]);
	const mine = (n = 1, address = fundedAddress) => node.call<string[]>("generatetoaddress", [n, address]);
	await mine(opts.premine ?? 200);

	return {
		rpcUrl: `http://${rpcUser}:${rpcPassword}@127.0.0.1:${rpcPort}/`,
		rpcEndpoint,
		rpcUser,
		rpcPassword,
		rpcPort,
		datadir,
		rpc: node.call,
		rpcRaw: node.raw,
		wallet,
		walletName,
		fundedAddress,
		async createWallet(name) {
			try {
				await node.call("createwallet", [name]);
			} catch (e) {
				if ((e as RpcError).code !== -4) throw e; // -4: already exists → load it
				await node.call("loadwallet", [name]).catch(() => undefined);
			}
			return walletRpc(name);
		},
		mine,
		blockCount: () => node.call<number>("getblockcount"),
		async stop() {
			if (proc.exitCode === null && proc.signalCode === null) {
				const exited = new Promise(resolve => proc.once("exit", resolve));
				await node.call("stop").catch(() => proc.kill("SIGTERM"));
				const timer = setTimeout(() => proc.kill("SIGKILL"), 10_000);
				await exited;
				clearTimeout(timer);
			}
			running.delete(proc);
			fs.rmSync(datadir, { recursive: true, force: true });
		},
	};
}
