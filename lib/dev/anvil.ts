/**
 * Starting a local anvil node (Foundry's dev chain, the @foundry-rs/anvil-linux-amd64 optional dependency: the platform package itself, since the wrapper @foundry-rs/anvil lists platform packages the registry here does not serve and `npm ci` then refuses the lock) for the
 * dev chain script and the tests. The platform binary is run directly rather than through the
 * package's node wrapper, so killing the child kills the node and no orphan keeps the port.
 */
import { spawn, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { HDNodeWallet, Mnemonic } from "ethers";

/** anvil's default mnemonic: its first accounts are funded with 10,000 ETH each. Public; local chains only. */
export const ANVIL_MNEMONIC = "test test test test test test test test test test test junk";

/** Private keys of anvil's default funded accounts (m/44'/60'/0'/0/i of ANVIL_MNEMONIC). */
export function anvilPrivateKeys(count = 10): string[] {
	const mnemonic = Mnemonic.fromPhrase(ANVIL_MNEMONIC);
	return Array.from({ length: count }, (_, i) => HDNodeWallet.fromMnemonic(mnemonic, `m/44'/60'/0'/0/${i}`).privateKey);
}

/** A port nobody listens on right now (the OS picks it; another process may still take it before anvil does). */
export function freePort(host = "127.0.0.1"): Promise<number> {
	return new Promise((resolve, reject) => {
		const server = net.createServer();
		server.once("error", reject);
		server.listen(0, host, () => {
			const { port } = server.address() as net.AddressInfo;
			server.close(() => resolve(port));
		});
	});
}

/**
 * Whether nothing listens on `port` now (the OS lets us bind it). Checked before starting anvil
 * on a fixed port: anvil failing to bind would otherwise look ready, its readiness probe
 * answered by the node already there.
 */
export function portIsFree(port: number, host = "127.0.0.1"): Promise<boolean> {
	return new Promise((resolve, reject) => {
		const server = net.createServer();
		server.once("error", (e: NodeJS.ErrnoException) => (e.code === "EADDRINUSE" || e.code === "EACCES" ? resolve(false) : reject(e)));
		server.listen(port, host, () => server.close(() => resolve(true)));
	});
}

/** The anvil executable: the platform package's binary, else the package's bin wrapper. */
export function anvilBinary(): string {
	const platformPackage = `@foundry-rs/anvil-${process.platform === "win32" ? "win32" : process.platform}-${process.arch === "x64" ? "amd64" : process.arch}`;
	try {
		const dir = path.dirname(require.resolve(`${platformPackage}/package.json`));
		const bin = path.join(dir, "bin", process.platform === "win32" ? "anvil.exe" : "anvil");
		if (fs.existsSync(bin)) return bin;
	} catch {
		// fall through to the wrapper
	}
	const wrapper = path.resolve(__dirname, "../../node_modules/.bin/anvil");
	if (fs.existsSync(wrapper)) return wrapper;
	const fromDist = path.resolve(__dirname, "../../../node_modules/.bin/anvil");
	if (fs.existsSync(fromDist)) return fromDist;
	throw new Error("anvil not found: `npm install` brings it on Linux x64 (the optional dependency @foundry-rs/anvil-linux-amd64); elsewhere install Foundry's anvil and put it on PATH");
}

export interface SpawnAnvilOptions {
	host?: string;
	port: number;
	/** Where anvil keeps persisted states; without it anvil writes under ~/.foundry. */
	cachePath: string;
	blockTime?: number;
	chainId?: number;
	silent?: boolean;
	args?: string[];
}

export function anvilArgs(opts: SpawnAnvilOptions): string[] {
	const args = ["--host", opts.host ?? "127.0.0.1", "--port", String(opts.port), "--cache-path", opts.cachePath, "--chain-id", String(opts.chainId ?? 31337)];
	if (opts.blockTime !== undefined) args.push("--block-time", String(opts.blockTime));
	if (opts.silent !== false) args.push("--silent");
	return [...args, ...(opts.args ?? [])];
}

export interface StartedAnvil {
	child: ChildProcess;
	url: string;
	/** What the process wrote to stderr (why it failed to start, mostly). */
	stderr(): string;
}

/**
 * Spawns anvil and waits until it answers `eth_chainId`. Rejects when the process exits first
 * (`addressInUse` tells a taken port, so a caller can pick another) or after `readyTimeoutMs`.
 */
export async function spawnAnvil(opts: SpawnAnvilOptions, readyTimeoutMs = 15_000): Promise<StartedAnvil> {
	const child = spawn(anvilBinary(), anvilArgs(opts), { stdio: ["ignore", opts.silent === false ? "inherit" : "ignore", "pipe"] });
	let stderr = "";
	child.stderr?.on("data", (chunk: Buffer) => {
		stderr += chunk.toString();
		if (opts.silent === false) process.stderr.write(chunk);
	});
	const url = `http://${opts.host ?? "127.0.0.1"}:${opts.port}`;
	let exited: number | string | null = null;
	child.once("exit", (code, signal) => {
		exited = code ?? signal ?? "exit";
	});
	const deadline = Date.now() + readyTimeoutMs;
	while (Date.now() < deadline) {
		if (exited !== null) {
			const error = new Error(`anvil exited (${exited}) before answering: ${stderr.trim() || "(no output)"}`) as Error & { addressInUse?: boolean };
			error.addressInUse = /address already in use|os error 98|EADDRINUSE/i.test(stderr);
			throw error;
		}
		try {
			const res = await fetch(url, {
				method: "POST",
				headers: { "content-type": "application/json" },
				body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
				signal: AbortSignal.timeout(1_000),
			});
			if (res.ok && typeof ((await res.json()) as { result?: unknown }).result === "string") return { child, url, stderr: () => stderr };
		} catch {
			// not listening yet
		}
		await new Promise(resolve => setTimeout(resolve, 50));
	}
	child.kill("SIGKILL");
	throw new Error(`anvil did not answer on ${url} within ${readyTimeoutMs} ms: ${stderr.trim()}`);
}
