/**
 * `npm run dev:chain`: a local EVM chain for development. Starts anvil on 127.0.0.1:8545 (a block
 * a second, chain id 31337, state kept in DATA_DIR/anvil so the chain survives restarts like the
 * gateway's database does), deploys the test USDC (TestToken, 6 decimals) unless the one in
 * TEST_USDC_ADDRESS is already there, mints 1,000,000 USDC to each funded account, and writes
 * TEST_USDC_ADDRESS and RPC_URL_ANVIL_LOCAL into `.env`. Runs until Ctrl-C.
 * `npm run dev:chain -- --fresh` starts from an empty chain; `--port <port>` listens on another
 * port than 8545: a chain of its own (state in DATA_DIR/anvil-<port>), whose URL is the one
 * written to `.env`, so `npm run pay` finds it.
 */
import fs from "node:fs";
import path from "node:path";
import { Contract, JsonRpcProvider, Network, NonceManager, Wallet, formatUnits, parseUnits } from "ethers";
import { readDotEnv } from "../config";
import { contractArtifacts, deployContract } from "../chains/evm/contracts";
import { anvilPrivateKeys, portIsFree, spawnAnvil } from "./anvil";
import { parseCliArgs, parsePort } from "../cli-args";
import { updateEnvFile } from "./env-file";

const HOST = "127.0.0.1";
const DEFAULT_PORT = 8545;
export const DEV_CHAIN_USAGE = `Usage: npm run dev:chain -- [--port <port>] [--fresh]\n  --port: where anvil listens on ${HOST} (default ${DEFAULT_PORT})\n  --fresh: start from an empty chain (the kept state is deleted)`;
const CHAIN_ID = 31337;
const ACCOUNTS = 10;
const MINT_PER_ACCOUNT = "1000000";

let anvil: Awaited<ReturnType<typeof spawnAnvil>> | null = null;
let stopping = false;

async function main(): Promise<void> {
	const { options, positionals } = parseCliArgs(process.argv.slice(2), { port: "value", fresh: "flag" }, DEV_CHAIN_USAGE);
	if (positionals.length > 0) throw new Error(`Unexpected argument "${positionals[0]}"\n${DEV_CHAIN_USAGE}`);
	const port = typeof options.port === "string" ? parsePort(options.port, "--port") : DEFAULT_PORT;
	const fresh = options.fresh === true;
	const env = { ...readDotEnv(), ...process.env };
	const dataDir = path.resolve(env.DATA_DIR || "./data");
	// Each port is a chain of its own: its state apart (8545 keeps the folder it always had).
	const anvilDir = path.join(dataDir, port === DEFAULT_PORT ? "anvil" : `anvil-${port}`);
	const stateFile = path.join(anvilDir, "state.json");
	if (fresh) fs.rmSync(anvilDir, { recursive: true, force: true });
	fs.mkdirSync(anvilDir, { recursive: true });
	contractArtifacts(); // compile (or read the cache) before the chain starts

	const url = `http://${HOST}:${port}`;
	const taken = (detail: string) => new Error(`Port ${port} is taken: is another dev chain (or node) running? Stop it, or pick another port with --port. (${detail})`);
	if (!(await portIsFree(port, HOST))) throw taken(`something listens on ${url}`);
	const started = (anvil = await spawnAnvil({
		host: HOST,
		port,
		cachePath: path.join(anvilDir, "cache"),
		blockTime: 1,
		chainId: CHAIN_ID,
		args: ["--state", stateFile, "--accounts", String(ACCOUNTS)],
	}).catch((e: Error & { addressInUse?: boolean }) => {
		throw e.addressInUse ? taken(e.message) : e;
	}));
	process.once("SIGINT", () => stopAnvil(0));
	process.once("SIGTERM", () => stopAnvil(0));
	started.child.once("exit", code => {
		if (stopping) return;
		console.error(`anvil exited (${code}): ${started.stderr().trim()}`);
		process.exit(1);
	});

	const provider = new JsonRpcProvider(url, undefined, { staticNetwork: Network.from(CHAIN_ID), cacheTimeout: -1, pollingInterval: 200 });
	const keys = anvilPrivateKeys(ACCOUNTS);
	const owner = new NonceManager(new Wallet(keys[0], provider));
	const holders = keys.map(k => new Wallet(k).address);

	const known = env.TEST_USDC_ADDRESS?.trim();
	let usdcAddress: string;
	if (known && (await provider.getCode(known)) !== "0x") {
		usdcAddress = known;
		console.log(`Test USDC already deployed at ${usdcAddress} (chain state from ${stateFile})`);
	} else {
		const token = await deployContract(owner, "TestToken", ["Test USD Coin", "USDC"]);
		usdcAddress = await token.getAddress();
		const amount = parseUnits(MINT_PER_ACCOUNT, 6);
		const txs = [];
		for (const holder of holders) txs.push(await token.mint(holder, amount));
		await Promise.all(txs.map(tx => tx.wait()));
		console.log(`Deployed test USDC (TestToken, 6 decimals) at ${usdcAddress}`);
		console.log(`Minted ${MINT_PER_ACCOUNT} USDC to each of the ${holders.length} funded accounts`);
	}
	const usdc = new Contract(usdcAddress, contractArtifacts().TestToken.abi, provider);
	const envFile = path.resolve(process.cwd(), ".env");
	updateEnvFile(envFile, { TEST_USDC_ADDRESS: usdcAddress, RPC_URL_ANVIL_LOCAL: url });

	console.log(`Wrote TEST_USDC_ADDRESS=${usdcAddress} and RPC_URL_ANVIL_LOCAL=${url} to ${envFile}`);
	console.log("");
	console.log(`Anvil (chain id ${CHAIN_ID}) on ${url}, a block a second. Funded accounts (10,000 ETH each; anvil's public test keys, never use them elsewhere):`);
	for (const [i, holder] of holders.slice(0, 3).entries()) {
		console.log(`  ${i}: ${holder}  ${formatUnits(await usdc.balanceOf(holder), 6)} USDC`);
	}
	console.log(`  ... ${holders.length} accounts in all`);
	console.log("");
	console.log("Restart the gateway so it reads .env (the USDC token becomes active), then pay a deposit address:");
	console.log(`  npm run pay -- ${port === DEFAULT_PORT ? "" : `--rpc-url ${url} `}<deposit address> 12.50 USDC`);
	console.log("Ctrl-C stops the chain (its state is kept; --fresh starts over).");
}

/** SIGTERM lets anvil write its state file before it exits; then this process exits. */
function stopAnvil(code: number): void {
	stopping = true;
	const child = anvil?.child;
	if (!child || child.exitCode !== null || child.signalCode !== null) process.exit(code);
	child.once("exit", () => process.exit(code));
	child.kill("SIGTERM");
}

main().catch(err => {
	console.error(`dev:chain: ${err instanceof Error ? err.message : String(err)}`);
	stopAnvil(1);
});
