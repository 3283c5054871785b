/**
 * The Solidity contracts (sources in `contracts/` beside this module): for the local development chain and the EVM
 * tests, TestToken (an ERC-20 with 6 decimals, `mint`, `batchTransfer`) and Forwarder (sends ETH by
 * internal calls, so a payment arrives with no log and no top-level transaction); for the EVM
 * sweeper (lib/chains/evm/sweep.ts), SweepDelegate (the EIP-7702 delegate of deposit addresses) and
 * SweepBatcher (the sweeper wallet's batch entry point); for the sweeper's tests, StoringReceiver (a
 * destination whose receive() needs more than 21,000 gas, like a Safe), RevertingReceiver (one that
 * refuses every payment) and RestrictedToken (TestToken with a blacklist, like USDC's).
 *
 * All compile with evmVersion "prague" (EIP-7702's hard fork; anvil's default).
 *
 * They are compiled with solc-js (a devDependency, loaded only when compiling) and the artifacts
 * are cached in the temp folder under the hash of the sources and the compiler version, so the
 * ~2 s compile runs once per change, not once per test file or script run.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Contract, ContractFactory, type ContractRunner, type InterfaceAbi } from "ethers";

export const CONTRACT_NAMES = ["TestToken", "Forwarder", "SweepDelegate", "SweepBatcher", "StoringReceiver", "RevertingReceiver", "RestrictedToken"] as const;
export type ContractName = (typeof CONTRACT_NAMES)[number];

export interface ContractArtifact {
	abi: InterfaceAbi;
	/** Creation bytecode, 0x-prefixed. */
	bytecode: string;
}

export type ContractArtifacts = Record<ContractName, ContractArtifact>;

/** The sources sit beside this module in the repository; `dist/` builds read them from there too. */
export function contractsDir(): string {
	for (const dir of [path.join(__dirname, "contracts"), path.resolve(__dirname, "../../../../lib/chains/evm/contracts")]) {
		if (fs.existsSync(path.join(dir, "TestToken.sol"))) return dir;
	}
	throw new Error("evm contracts: Solidity sources not found in lib/chains/evm/contracts/");
}

function readSources(): Record<string, string> {
	const dir = contractsDir();
	return Object.fromEntries(CONTRACT_NAMES.map(name => [`${name}.sol`, fs.readFileSync(path.join(dir, `${name}.sol`), "utf8")]));
}

interface SolcOutput {
	errors?: Array<{ severity: string; formattedMessage: string }>;
	contracts: Record<string, Record<string, { abi: InterfaceAbi; evm: { bytecode: { object: string } } }>>;
}

const COMPILER_SETTINGS = { evmVersion: "prague", optimizer: { enabled: true, runs: 200 } };

/** solc's standard JSON interface (https://docs.soliditylang.org/en/latest/using-the-compiler.html). */
function compile(sources: Record<string, string>): ContractArtifacts {
	// A devDependency: loaded here only, so production code never needs it.
	const solc = require("solc") as { compile(input: string): string };
	const input = {
		language: "Solidity",
		sources: Object.fromEntries(Object.entries(sources).map(([file, content]) => [file, { content }])),
		settings: {
			...COMPILER_SETTINGS,
			outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
		},
	};
	const output = JSON.parse(solc.compile(JSON.stringify(input))) as SolcOutput;
	const errors = (output.errors ?? []).filter(e => e.severity === "error");
	if (errors.length > 0) throw new Error(`solc: ${errors.map(e => e.formattedMessage).join("\n")}`);
	const artifacts = {} as ContractArtifacts;
	for (const name of CONTRACT_NAMES) {
		const contract = output.contracts[`${name}.sol`]?.[name];
		if (!contract) throw new Error(`solc: no output for ${name}`);
		artifacts[name] = { abi: contract.abi, bytecode: `0x${contract.evm.bytecode.object}` };
	}
	return artifacts;
}

function solcVersion(): string {
	return (require("solc/package.json") as { version: string }).version;
}

let memo: { key: string; artifacts: ContractArtifacts } | null = null;

/**
 * The compiled contracts: from memory, else from `<cacheDir>/cpg-solc-<hash>.json`, else compiled
 * now and written there (atomically, so parallel test workers never read half a file).
 */
export function contractArtifacts(cacheDir = os.tmpdir()): ContractArtifacts {
	const sources = readSources();
	const key = crypto.createHash("sha256").update(JSON.stringify({ solc: solcVersion(), settings: COMPILER_SETTINGS, sources })).digest("hex").slice(0, 16);
	if (memo?.key === key) return memo.artifacts;
	const file = path.join(cacheDir, `cpg-solc-${key}.json`);
	let artifacts: ContractArtifacts | null = null;
	try {
		artifacts = JSON.parse(fs.readFileSync(file, "utf8")) as ContractArtifacts;
		if (!CONTRACT_NAMES.every(n => typeof artifacts?.[n]?.bytecode === "string")) artifacts = null;
	} catch {
		artifacts = null;
	}
	if (!artifacts) {
		artifacts = compile(sources);
		const tmp = `${file}.${process.pid}.${crypto.randomBytes(4).toString("hex")}`;
		fs.writeFileSync(tmp, JSON.stringify(artifacts));
		fs.renameSync(tmp, file);
	}
	memo = { key, artifacts };
	return artifacts;
}

/** Deploys one of the contracts and waits until its deployment is mined. */
export async function deployContract(runner: ContractRunner, name: ContractName, args: unknown[] = []): Promise<Contract> {
	const { abi, bytecode } = contractArtifacts()[name];
	const contract = await new ContractFactory(abi, bytecode, runner).deploy(...args);
	await contract.waitForDeployment();
	return new Contract(await contract.getAddress(), abi, runner);
}
