/**
 * `npm run dev:chain -- --port <port>` and `npm run pay -- --rpc-url <url> ...` as a developer runs
 * them (real processes, a real anvil): the chain listens on the port asked, keeps its state apart
 * and writes its URL to `.env`; pay sends to the node --rpc-url names (over RPC_URL_ANVIL_LOCAL),
 * or, without it, to the one in `.env`; bad ports, a taken port and a node that does not answer
 * end with a message and exit code 1.
 */
import { ChildProcess, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Contract, JsonRpcProvider, Network, parseEther, parseUnits } from "ethers";
import { freePort } from "../../helpers/anvil";
import { until } from "../../helpers/until";

const ROOT = path.resolve(__dirname, "../../..");
const DEPOSIT = "0x9858EfFD232B4033E47d90003D41EC34EcaEda94";

interface Run {
	child: ChildProcess;
	output(): string;
	exited: Promise<number | null>;
}

function script(file: string, args: string[], cwd: string, env: Record<string, string> = {}): Run {
	const child = spawn(process.execPath, ["-r", path.join(ROOT, "test/helpers/ts-register.js"), path.join(ROOT, "lib/dev", file), ...args], {
		cwd,
		env: { PATH: process.env.PATH ?? "", DATA_DIR: path.join(cwd, "data"), ...env },
		stdio: ["ignore", "pipe", "pipe"],
	});
	let out = "";
	child.stdout?.on("data", d => (out += d));
	child.stderr?.on("data", d => (out += d));
	const exited = new Promise<number | null>(resolve => child.once("exit", code => resolve(code)));
	return { child, output: () => out, exited };
}

describe("dev:chain --port and pay --rpc-url", () => {
	let cwd: string;
	let chain: Run | null = null;

	beforeAll(() => {
		cwd = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-dev-chain-"));
	});
	afterAll(async () => {
		if (chain && chain.child.exitCode === null && chain.child.signalCode === null) {
			chain.child.kill("SIGTERM");
			await chain.exited;
		}
		fs.rmSync(cwd, { recursive: true, force: true });
	});

	it("runs the chain on the port asked, and pays through --rpc-url or the URL it wrote to .env", async () => {
		const port = await freePort();
		const url = `http://127.0.0.1:${port}`;
		const started = (chain = script("dev-chain.ts", ["--port", String(port), "--fresh"], cwd));
		await until("the dev chain ready", () => started.output().includes("Ctrl-C stops the chain") || started.child.exitCode !== null, 120_000, started.output);
		expect(started.child.exitCode).toBeNull();
		expect(started.output()).toContain(`Anvil (chain id 31337) on ${url}`);
		expect(started.output()).toContain(`npm run pay -- --rpc-url ${url} <deposit address>`);
		const env = fs.readFileSync(path.join(cwd, ".env"), "utf8");
		expect(env).toContain(`RPC_URL_ANVIL_LOCAL=${url}\n`);
		const usdc = /TEST_USDC_ADDRESS=(0x[0-9a-fA-F]{40})/.exec(env)![1];
		// A chain of its own: its state apart from the default port's.
		expect(fs.existsSync(path.join(cwd, "data", `anvil-${port}`))).toBe(true);
		expect(fs.existsSync(path.join(cwd, "data", "anvil"))).toBe(false);

		// --rpc-url wins over RPC_URL_ANVIL_LOCAL (here a port nobody listens on), from a folder without .env.
		const elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-pay-"));
		const dead = await freePort();
		const paid = script("pay.ts", ["--rpc-url", url, DEPOSIT, "0.25", "ETH"], elsewhere, { RPC_URL_ANVIL_LOCAL: `http://127.0.0.1:${dead}` });
		expect(await paid.exited).toBe(0);
		expect(paid.output()).toMatch(/Sent 0\.25 ETH \(250000000000000000 wei\).*\nTransaction: 0x[0-9a-f]{64}\nMined in block \d+ \(success\)/);

		// No option: the URL and the token from .env.
		const fromEnv = script("pay.ts", [DEPOSIT, "3.5"], cwd);
		expect(await fromEnv.exited).toBe(0);
		expect(fromEnv.output()).toMatch(/Sent 3\.5 USDC/);

		const provider = new JsonRpcProvider(url, undefined, { staticNetwork: Network.from(31337), cacheTimeout: -1 });
		try {
			expect(await provider.getBalance(DEPOSIT)).toBe(parseEther("0.25"));
			const token = new Contract(usdc, ["function balanceOf(address) view returns (uint256)"], provider);
			expect(await token.balanceOf(DEPOSIT)).toBe(parseUnits("3.5", 6));
		} finally {
			provider.destroy();
		}

		// Without the option the dead RPC_URL_ANVIL_LOCAL is used: a clear message naming it.
		const noNode = script("pay.ts", [DEPOSIT, "1", "ETH"], elsewhere, { RPC_URL_ANVIL_LOCAL: `http://127.0.0.1:${dead}` });
		expect(await noNode.exited).toBe(1);
		expect(noNode.output()).toMatch(new RegExp(`No node answers at http://127\\.0\\.0\\.1:${dead} \\(.*ECONNREFUSED.*\\): is \`npm run dev:chain\` running there\\? \\(another node: --rpc-url <url>\\)`));
		fs.rmSync(elsewhere, { recursive: true, force: true });

		// The port taken (by the chain above): a message that says so and how to pick another.
		const second = script("dev-chain.ts", ["--port", String(port)], cwd);
		expect(await second.exited).toBe(1);
		expect(second.output()).toMatch(new RegExp(`Port ${port} is taken: is another dev chain \\(or node\\) running\\? Stop it, or pick another port with --port`));

		started.child.kill("SIGTERM");
		expect(await started.exited).toBe(0);
	}, 150_000);

	it("refuses bad arguments with the usage", async () => {
		for (const [args, message] of [
			[["--port", "0"], /--port must be a port number from 1 to 65535, got "0"/],
			[["--port", "65536"], /--port must be a port number/],
			[["--port"], /--port needs a value\nUsage: npm run dev:chain -- \[--port <port>\] \[--fresh\]/],
			[["--prot", "8546"], /Unknown option --prot/],
			[["8546"], /Unexpected argument "8546"/],
		] as const) {
			const run = script("dev-chain.ts", [...args], cwd);
			expect(await run.exited).toBe(1);
			expect(run.output()).toMatch(message);
		}
		const pay = script("pay.ts", ["--rpc-url", "ws://127.0.0.1:8545", DEPOSIT, "1"], cwd);
		expect(await pay.exited).toBe(1);
		expect(pay.output()).toMatch(/--rpc-url must be an http\(s\) URL/);
	});
});
