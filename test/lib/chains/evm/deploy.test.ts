/**
 * `npm run sweep:deploy` (lib/chains/evm/deploy.ts): the arguments, then real anvil nodes: deploys
 * both contracts from the sweeper wallet and checks them, waits for the confirmations asked,
 * deploys nothing when the configured ones are this wallet's, and refuses before sending
 * anything on an unreachable node, the wrong chain, a chain the catalogue lacks, or an empty
 * wallet. Secrets (the key, an RPC URL's credentials) appear in no output. One run is a real
 * process, as an operator starts it.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Contract, Wallet, parseEther } from "ethers";
import { contractArtifacts } from "../../../../lib/chains/evm/contracts";
import { SWEEP_DEPLOY_USAGE, parseSweepDeployArgs, runSweepDeploy, type SweepDeployRequest } from "../../../../lib/chains/evm/deploy";
import { Anvil, freePort, startAnvil } from "../../../helpers/anvil";

const ROOT = path.resolve(__dirname, "../../../..");
const KEY = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";

describe("parseSweepDeployArgs", () => {
	const env = { SWEEPER_PRIVATE_KEY: KEY };

	it("takes the network, the RPC URL (option, else RPC_URL_<SLUG>), the confirmations and --force", () => {
		expect(parseSweepDeployArgs(["--network", "base", "--rpc-url", "https://base.example/v2/k"], env)).toMatchObject({ network: { slug: "base", chainId: 8453 }, rpcUrl: "https://base.example/v2/k", confirmations: null, force: false, privateKey: KEY });
		expect(parseSweepDeployArgs(["--network=base-sepolia"], { ...env, RPC_URL_BASE_SEPOLIA: "http://10.0.0.1:8545", SWEEP_CONTRACTS_BASE_SEPOLIA: "0xa,0xb" })).toMatchObject({
			network: { slug: "base-sepolia" }, rpcUrl: "http://10.0.0.1:8545", configured: { BASE_SEPOLIA: "0xa,0xb" },
		});
		// The option wins over the environment; no network: found later from the node's chain id.
		expect(parseSweepDeployArgs(["--rpc-url", "http://127.0.0.1:9545", "--confirmations", "12", "--force"], { ...env, RPC_URL_ETHEREUM: "http://other" })).toMatchObject({ network: null, rpcUrl: "http://127.0.0.1:9545", confirmations: 12, force: true });
	});

	it("refuses bad input with a message, never quoting the key or the URL", () => {
		expect(() => parseSweepDeployArgs([], env)).toThrow(/Give --network <slug>, --rpc-url <url>, or both/);
		expect(() => parseSweepDeployArgs(["--network", "base"], env)).toThrow(/give --rpc-url <url> or set RPC_URL_BASE/);
		expect(() => parseSweepDeployArgs(["--network", "bitcoin", "--rpc-url", "http://x"], env)).toThrow(/"bitcoin" is not an EVM network of the catalogue; one of: ethereum, /);
		expect(() => parseSweepDeployArgs(["--network", "nope", "--rpc-url", "http://x"], env)).toThrow(/not an EVM network/);
		expect(() => parseSweepDeployArgs(["--rpc-url", "ftp://x"], env)).toThrow(/--rpc-url must be an http\(s\) URL/);
		expect(() => parseSweepDeployArgs(["--rpc-url", "not a url ?apikey=hidden-value"], env)).toThrow(/--rpc-url must be an http\(s\) URL/);
		expect(() => parseSweepDeployArgs(["--rpc-url", "not a url ?apikey=hidden-value"], env)).not.toThrow(/hidden-value/);
		expect(() => parseSweepDeployArgs(["--rpc-url"], env)).toThrow(/--rpc-url needs a value/);
		expect(() => parseSweepDeployArgs(["--rpc-url", "http://x", "--confirmations", "0"], env)).toThrow(/--confirmations must be a whole number from 1 to 1000/);
		expect(() => parseSweepDeployArgs(["--rpc-url", "http://x", "--confirmations", "1.5"], env)).toThrow(/--confirmations/);
		expect(() => parseSweepDeployArgs(["--rpc-url", "http://x", "--key", KEY], env)).toThrow(/Unknown option --key/);
		expect(() => parseSweepDeployArgs(["--rpc-url", "http://x", "extra"], env)).toThrow(/Unexpected argument "extra"/);
		expect(() => parseSweepDeployArgs(["--rpc-url", "http://x"], {})).toThrow(/SWEEPER_PRIVATE_KEY is not set/);
		const bad = "0x1234secretish";
		let message = "";
		try {
			parseSweepDeployArgs(["--rpc-url", "http://x"], { SWEEPER_PRIVATE_KEY: bad });
		} catch (e) {
			message = (e as Error).message;
		}
		expect(message).toMatch(/SWEEPER_PRIVATE_KEY must be a 32-byte hex private key/);
		expect(message).not.toContain(bad);
		expect(SWEEP_DEPLOY_USAGE).toMatch(/SWEEPER_PRIVATE_KEY/);
	});
});

describe("runSweepDeploy on anvil", () => {
	let anvil: Anvil;
	let other: Anvil;
	const artifacts = contractArtifacts();

	beforeAll(async () => {
		[anvil, other] = await Promise.all([startAnvil(), startAnvil({ chainId: 424242 })]);
	});
	afterAll(async () => {
		await Promise.all([anvil?.stop(), other?.stop()]);
	});

	/** A sweeper wallet of its own, funded from anvil's first account (0: nothing). */
	async function sweeper(eth: string): Promise<Wallet> {
		const wallet = Wallet.createRandom().connect(anvil.provider) as unknown as Wallet;
		if (eth !== "0") await (await anvil.accounts[0].sendTransaction({ to: wallet.address, value: parseEther(eth) })).wait();
		return wallet;
	}
	const request = (wallet: Wallet, over: Partial<SweepDeployRequest> = {}): SweepDeployRequest => ({
		...parseSweepDeployArgs(["--network", "anvil-local", "--rpc-url", anvil.url], { SWEEPER_PRIVATE_KEY: wallet.privateKey }),
		...over,
	});
	function recorder() {
		const lines: string[] = [];
		const out: string[] = [];
		return { io: { log: (l: string) => lines.push(l), out: (l: string) => out.push(l) }, lines, out, all: () => [...lines, ...out].join("\n") };
	}
	const fast = { pollMs: 50 };

	it("deploys both contracts from the sweeper wallet, checks them and prints the variable; again: nothing sent; --force: new ones", async () => {
		const wallet = await sweeper("1");
		const rec = recorder();
		const result = await runSweepDeploy(request(wallet), rec.io, fast);
		expect(result).toMatchObject({ network: "anvil-local", deployed: true });
		expect(rec.out).toEqual([`SWEEP_CONTRACTS_ANVIL_LOCAL=${result.batcher},${result.delegate}`]);
		expect(result.line).toBe(rec.out[0]);
		// What the sweeper relies on: the batcher obeys this wallet, the delegate obeys the batcher.
		expect(await new Contract(result.batcher, artifacts.SweepBatcher.abi, anvil.provider).owner()).toBe(wallet.address);
		expect(await new Contract(result.delegate, artifacts.SweepDelegate.abi, anvil.provider).batcher()).toBe(result.batcher);
		for (const hash of result.hashes) expect((await anvil.provider.getTransactionReceipt(hash))?.from).toBe(wallet.address);
		expect(rec.lines.join("\n")).toMatch(/Checked: the code at both addresses/);
		expect(rec.lines.join("\n")).toMatch(/sweeper-evm/);
		expect(rec.all()).not.toContain(wallet.privateKey.slice(2));

		// Run again with the line configured: nothing is sent, the same line comes out.
		const nonce = await anvil.provider.getTransactionCount(wallet.address);
		const again = recorder();
		const same = await runSweepDeploy(request(wallet, { configured: { ANVIL_LOCAL: `${result.batcher},${result.delegate}` } }), again.io, fast);
		expect(same).toMatchObject({ deployed: false, batcher: result.batcher, delegate: result.delegate, hashes: [] });
		expect(again.out).toEqual([result.line]);
		expect(await anvil.provider.getTransactionCount(wallet.address)).toBe(nonce);

		// Configured contracts that are not this wallet's (another wallet's batcher): new ones are deployed.
		const stranger = await sweeper("1");
		const theirs = recorder();
		const mine = await runSweepDeploy(request(stranger, { configured: { ANVIL_LOCAL: `${result.batcher},${result.delegate}` } }), theirs.io, fast);
		expect(mine.deployed).toBe(true);
		expect(mine.batcher).not.toBe(result.batcher);
		expect(theirs.lines.join("\n")).toMatch(/is not SweepBatcher owned by/);

		const forced = await runSweepDeploy(request(wallet, { configured: { ANVIL_LOCAL: `${result.batcher},${result.delegate}` }, force: true }), recorder().io, fast);
		expect(forced.deployed).toBe(true);
		expect(forced.batcher).not.toBe(result.batcher);
	});

	it("waits for the confirmations asked before the next step and before printing", async () => {
		const wallet = await sweeper("1");
		const rec = recorder();
		let done = false;
		const run = runSweepDeploy(request(wallet, { confirmations: 3 }), rec.io, fast).finally(() => (done = true));
		// Automine mines each deployment alone; more blocks come only from here.
		while (!done) {
			await anvil.mine(1);
			await new Promise(resolve => setTimeout(resolve, 100));
		}
		const result = await run;
		const [batcherTx, delegateTx] = await Promise.all(result.hashes.map(h => anvil.provider.getTransactionReceipt(h)));
		// The delegate was sent once the batcher had 3 confirmations (its block and 2 more).
		expect(delegateTx!.blockNumber).toBeGreaterThanOrEqual(batcherTx!.blockNumber + 3);
		expect(rec.out).toEqual([result.line]);
	});

	it("refuses, sending nothing: unreachable node, wrong chain, a chain the catalogue lacks, an empty wallet; no secret in a message", async () => {
		const funded = await sweeper("1");
		const failure = async (req: SweepDeployRequest) => {
			const rec = recorder();
			const error = await runSweepDeploy(req, rec.io, { ...fast, rpcTimeoutMs: 5_000 }).then(
				() => null,
				(e: Error) => e,
			);
			expect(error).toBeInstanceOf(Error);
			expect(rec.out).toEqual([]);
			return `${error!.message}\n${rec.all()}`;
		};

		const port = await freePort();
		const unreachable = await failure(request(funded, { rpcUrl: `http://rpcuser:pw-secret-1@127.0.0.1:${port}/v2/path-secret-2?apikey=query-secret-3` }));
		expect(unreachable).toMatch(new RegExp(`No node answers at http://127\\.0\\.0\\.1:${port}/…: .*Check --rpc-url`));
		for (const secret of ["pw-secret-1", "path-secret-2", "query-secret-3", "rpcuser"]) expect(unreachable).not.toContain(secret);

		const wrongChain = await failure(request(funded, { network: parseSweepDeployArgs(["--network", "ethereum", "--rpc-url", anvil.url], { SWEEPER_PRIVATE_KEY: KEY }).network }));
		expect(wrongChain).toMatch(/The node at http:\/\/127\.0\.0\.1:\d+ is chain 31337, not ethereum \(chain 1\): wrong --rpc-url or --network\? Nothing was sent/);

		const unknownChain = await failure(request(funded, { network: null, rpcUrl: other.url }));
		expect(unknownChain).toMatch(/is chain 424242, which is no EVM network of the catalogue/);

		const empty = await sweeper("0");
		const broke = await failure(request(empty));
		expect(broke).toMatch(new RegExp(`The sweeper wallet ${empty.address} holds 0\\.0 ETH on anvil-local; deploying both contracts needs up to [0-9.]+ ETH .*Fund it first`));
		expect(broke).not.toContain(empty.privateKey.slice(2));
		expect(await anvil.provider.getTransactionCount(empty.address)).toBe(0);
		expect(await anvil.provider.getTransactionCount(funded.address)).toBe(0);

		// Credentials in a URL that works: used (Basic auth), never shown.
		const rec = recorder();
		const withAuth = await runSweepDeploy(request(funded, { rpcUrl: anvil.url.replace("http://", "http://ops:pw-secret-4@") }), rec.io, fast);
		expect(withAuth.deployed).toBe(true);
		expect(rec.all()).not.toContain("pw-secret-4");
		expect(rec.all()).toContain(`at ${anvil.url};`);
	});

	it("runs as the operator starts it: a process that prints the variable's line alone on stdout; bad input exits 1 with the reason", async () => {
		const wallet = await sweeper("1");
		const cwd = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-sweep-deploy-"));
		const run = (args: string[], env: Record<string, string>) =>
			new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
				const child = spawn(process.execPath, ["-r", path.join(ROOT, "test/helpers/ts-register.js"), path.join(ROOT, "lib/chains/evm/deploy.ts"), ...args], {
					cwd,
					env: { PATH: process.env.PATH ?? "", ...env },
					stdio: ["ignore", "pipe", "pipe"],
				});
				let stdout = "";
				let stderr = "";
				child.stdout.on("data", d => (stdout += d));
				child.stderr.on("data", d => (stderr += d));
				child.once("error", reject);
				child.once("exit", code => resolve({ code, stdout, stderr }));
			});
		// The key from .env, as the other scripts read it.
		fs.writeFileSync(path.join(cwd, ".env"), `SWEEPER_PRIVATE_KEY=${wallet.privateKey}\n`);
		const ok = await run(["--rpc-url", anvil.url], {});
		expect({ code: ok.code, stderr: ok.stderr }).toMatchObject({ code: 0 });
		expect(ok.stdout).toMatch(/^SWEEP_CONTRACTS_ANVIL_LOCAL=0x[0-9a-fA-F]{40},0x[0-9a-fA-F]{40}\n$/);
		expect(ok.stderr).toMatch(/Set on the nodes running sweeper-evm/);
		expect(ok.stdout + ok.stderr).not.toContain(wallet.privateKey.slice(2));

		fs.rmSync(path.join(cwd, ".env"));
		const noKey = await run(["--network", "anvil-local", "--rpc-url", anvil.url], {});
		expect(noKey).toMatchObject({ code: 1, stdout: "" });
		expect(noKey.stderr).toMatch(/^sweep:deploy: SWEEPER_PRIVATE_KEY is not set/);
		fs.rmSync(cwd, { recursive: true, force: true });
	});
});
