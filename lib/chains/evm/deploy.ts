/**
 * `npm run sweep:deploy -- --network <slug> [--rpc-url <url>] [--confirmations <n>] [--force]`:
 * deploys the sweep contracts of an EVM network (SweepBatcher owned by the sweeper wallet, then
 * SweepDelegate bound to it; docs/withdrawals.md "The contracts") from the sweeper wallet
 * (SWEEPER_PRIVATE_KEY, environment or .env: never an argument, so it stays out of shell history
 * and process lists), waits for the confirmations, checks the code at both addresses, and prints
 * the `SWEEP_CONTRACTS_<SLUG>=<batcher>,<delegate>` line for the nodes running sweeper-evm.
 *
 * Before it spends anything it checks the node (answers, is the network's chain) and the wallet
 * (holds enough for both deployments at the current fees). When SWEEP_CONTRACTS_<SLUG> is
 * already set and both contracts there are this wallet's, it deploys nothing (--force deploys
 * new ones). Progress goes to stderr, the variable's line alone to stdout. Needs a checkout of
 * the repository with its dev dependencies (solc compiles the contracts), not the runtime image.
 */
import { ContractFactory, Wallet, formatEther, formatUnits, getCreateAddress, type JsonRpcProvider, type TransactionReceipt } from "ethers";
import { parseCliArgs, parseHttpUrl } from "../../cli-args";
import { readDotEnv } from "../../config";
import { contractArtifacts, type ContractName } from "./contracts";
import { createEvmProvider } from "./rpc";
import { CATALOGUE, type CatalogueNetwork } from "../../networks/catalogue";
import type { EnvVars } from "../../env";
import { envSlug, redactUrl, redactUrlsIn } from "../../watchers/config";
import { sweeperKeyFromEnv } from "../../sweeps/config";

export const SWEEP_DEPLOY_USAGE = [
	"Usage: npm run sweep:deploy -- --network <slug> [--rpc-url <url>] [--confirmations <n>] [--force]",
	"  --network: the catalogue's EVM network (ethereum, base, base-sepolia, anvil-local, ...); optional with --rpc-url (found by the node's chain id)",
	"  --rpc-url: the node to deploy through (default RPC_URL_<SLUG>, environment or .env)",
	"  --confirmations: blocks to wait for on each deployment (default the network's required confirmations in the catalogue)",
	"  --force: deploy new contracts even when SWEEP_CONTRACTS_<SLUG> already holds this wallet's",
	"  The contracts are deployed and paid for by the sweeper wallet: SWEEPER_PRIVATE_KEY (environment or .env).",
].join("\n");

/** Where the printed variable goes (docs/deployment.md). */
export const SWEEP_CONTRACTS_PLACE = "the nodes running sweeper-evm (the `sweeper` group: chains.env with Docker Compose, the sweeper Deployment's environment on Kubernetes); restart them after setting it";

export interface SweepDeployRequest {
	/** null: found from the node's chain id. */
	network: CatalogueNetwork | null;
	rpcUrl: string;
	/** null: the network's required confirmations. */
	confirmations: number | null;
	force: boolean;
	privateKey: string;
	/** SWEEP_CONTRACTS_<SLUG> as configured now, by env slug. */
	configured: Record<string, string>;
}

const EVM_NETWORKS = CATALOGUE.filter(n => n.chainType === "evm");

/** Reads and checks the arguments and the environment (pure); throws an Error for the person at the terminal. */
export function parseSweepDeployArgs(args: readonly string[], env: EnvVars): SweepDeployRequest {
	const { options, positionals } = parseCliArgs(args, { network: "value", "rpc-url": "value", confirmations: "value", force: "flag" }, SWEEP_DEPLOY_USAGE);
	if (positionals.length > 0) throw new Error(`Unexpected argument "${positionals[0]}"\n${SWEEP_DEPLOY_USAGE}`);
	let network: CatalogueNetwork | null = null;
	if (typeof options.network === "string") {
		network = EVM_NETWORKS.find(n => n.slug === options.network) ?? null;
		if (!network) throw new Error(`--network: "${options.network}" is not an EVM network of the catalogue; one of: ${EVM_NETWORKS.map(n => n.slug).join(", ")}`);
	}
	let rpcUrl: string;
	if (typeof options["rpc-url"] === "string") rpcUrl = parseHttpUrl(options["rpc-url"], "--rpc-url");
	else if (network && env[`RPC_URL_${envSlug(network.slug)}`]?.trim()) rpcUrl = parseHttpUrl(env[`RPC_URL_${envSlug(network.slug)}`]!, `RPC_URL_${envSlug(network.slug)}`);
	else throw new Error(network ? `No node to deploy through: give --rpc-url <url> or set RPC_URL_${envSlug(network.slug)}\n${SWEEP_DEPLOY_USAGE}` : `Give --network <slug>, --rpc-url <url>, or both\n${SWEEP_DEPLOY_USAGE}`);
	let confirmations: number | null = null;
	if (typeof options.confirmations === "string") {
		confirmations = /^\d{1,4}$/.test(options.confirmations) ? Number(options.confirmations) : NaN;
		if (!(confirmations >= 1 && confirmations <= 1000)) throw new Error(`--confirmations must be a whole number from 1 to 1000, got "${options.confirmations}"`);
	}
	const privateKey = sweeperKeyFromEnv(env);
	if (!privateKey) throw new Error("SWEEPER_PRIVATE_KEY is not set (environment or .env): the contracts are deployed by the sweeper wallet, which SweepBatcher then obeys alone");
	const configured: Record<string, string> = {};
	for (const [name, value] of Object.entries(env)) if (name.startsWith("SWEEP_CONTRACTS_") && value?.trim()) configured[name.slice("SWEEP_CONTRACTS_".length)] = value.trim();
	return { network, rpcUrl, confirmations, force: options.force === true, privateKey, configured };
}

export interface SweepDeployIo {
	/** Progress, for stderr. */
	log(line: string): void;
	/** The variable's line, for stdout. */
	out(line: string): void;
}

export interface SweepDeployResult {
	network: string;
	batcher: string;
	delegate: string;
	/** `SWEEP_CONTRACTS_<SLUG>=<batcher>,<delegate>` */
	line: string;
	/** false: the configured contracts were this wallet's already (nothing sent). */
	deployed: boolean;
	/** The deployment transactions (none when nothing was deployed). */
	hashes: string[];
}

export interface SweepDeployOptions {
	/** Per RPC call. */
	rpcTimeoutMs?: number;
	/** Receipt and head polls while waiting. */
	pollMs?: number;
	/** How long each deployment may take to reach its confirmations. */
	confirmTimeoutMs?: number;
}

const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms));
const errorMessage = (err: unknown) => redactUrlsIn(err instanceof Error ? ((err as { shortMessage?: string }).shortMessage ?? err.message) : String(err));

/** The chain id the node answers, or an error that says the node is not reachable. */
async function nodeChainId(rpcUrl: string, timeoutMs: number): Promise<bigint> {
	const probe = createEvmProvider(rpcUrl, { chainId: 1, timeoutMs });
	try {
		return BigInt((await probe.send("eth_chainId", [])) as string);
	} catch (err) {
		throw new Error(`No node answers at ${redactUrl(rpcUrl)}: ${errorMessage(err)}. Check --rpc-url (or RPC_URL_<SLUG>).`);
	} finally {
		probe.destroy();
	}
}

/**
 * What the contracts of `batcher`/`delegate` must be for this owner: the code at each address
 * equals the code its creation code makes (eth_call of the creation code returns the runtime
 * code, immutables included: SweepBatcher's owner, SweepDelegate's batcher). Null when both match.
 */
async function contractsMismatch(provider: JsonRpcProvider, owner: string, batcher: string, delegate: string): Promise<string | null> {
	const artifacts = contractArtifacts();
	const expected = async (name: ContractName, arg: string) => {
		const { data } = await new ContractFactory(artifacts[name].abi, artifacts[name].bytecode).getDeployTransaction(arg);
		return (await provider.call({ data, from: owner })).toLowerCase();
	};
	const [batcherCode, delegateCode, wantBatcher, wantDelegate] = await Promise.all([provider.getCode(batcher), provider.getCode(delegate), expected("SweepBatcher", owner), expected("SweepDelegate", batcher)]);
	if (batcherCode === "0x") return `no contract at ${batcher}`;
	if (delegateCode === "0x") return `no contract at ${delegate}`;
	if (batcherCode.toLowerCase() !== wantBatcher) return `the code at ${batcher} is not SweepBatcher owned by ${owner}`;
	if (delegateCode.toLowerCase() !== wantDelegate) return `the code at ${delegate} is not SweepDelegate bound to ${batcher}`;
	return null;
}

async function waitConfirmed(provider: JsonRpcProvider, name: string, hash: string, confirmations: number, pollMs: number, timeoutMs: number, io: SweepDeployIo): Promise<TransactionReceipt> {
	const deadline = Date.now() + timeoutMs;
	let shown = -1;
	for (;;) {
		const receipt = await provider.getTransactionReceipt(hash);
		if (receipt) {
			if (receipt.status !== 1) throw new Error(`The ${name} deployment ${hash} reverted in block ${receipt.blockNumber}`);
			const have = (await provider.getBlockNumber()) - receipt.blockNumber + 1;
			if (have >= confirmations) return receipt;
			if (have !== shown) io.log(`  ${name}: mined in block ${receipt.blockNumber}, ${have} of ${confirmations} confirmations`);
			shown = have;
		}
		if (Date.now() > deadline) throw new Error(`The ${name} deployment ${hash} has not reached ${confirmations} confirmations within ${Math.round(timeoutMs / 1000)} s. It may still be mined: look it up, then run again (contracts already deployed for this wallet and set in SWEEP_CONTRACTS_<SLUG> are kept)`);
		await sleep(pollMs);
	}
}

/** The whole run; every failure is an Error whose message is for the operator (no key, no URL secret in it). */
export async function runSweepDeploy(request: SweepDeployRequest, io: SweepDeployIo, opts: SweepDeployOptions = {}): Promise<SweepDeployResult> {
	const rpcTimeoutMs = opts.rpcTimeoutMs ?? 30_000;
	const shownUrl = redactUrl(request.rpcUrl);
	const chainId = await nodeChainId(request.rpcUrl, rpcTimeoutMs);
	let network = request.network;
	if (network && BigInt(network.chainId) !== chainId) throw new Error(`The node at ${shownUrl} is chain ${chainId}, not ${network.slug} (chain ${network.chainId}): wrong --rpc-url or --network? Nothing was sent.`);
	network ??= EVM_NETWORKS.find(n => BigInt(n.chainId) === chainId) ?? null;
	if (!network) throw new Error(`The node at ${shownUrl} is chain ${chainId}, which is no EVM network of the catalogue (docs/networks.md): the gateway would not sweep there. Nothing was sent.`);
	const slug = envSlug(network.slug);
	const variable = `SWEEP_CONTRACTS_${slug}`;
	const symbol = network.tokens.find(t => t.isNative)?.symbol ?? "native coin";
	const confirmations = request.confirmations ?? Math.max(1, network.requiredConfirmations);

	const provider = createEvmProvider(request.rpcUrl, { chainId, networkName: network.slug, timeoutMs: rpcTimeoutMs });
	try {
		const wallet = new Wallet(request.privateKey, provider);
		const owner = wallet.address;
		io.log(`Network ${network.slug} (chain ${chainId}) at ${shownUrl}; sweeper wallet ${owner}`);

		const configured = request.configured[slug];
		if (configured && !request.force) {
			const [batcher, delegate] = configured.split(",").map(s => s.trim());
			const ok = /^0x[0-9a-fA-F]{40}$/.test(batcher ?? "") && /^0x[0-9a-fA-F]{40}$/.test(delegate ?? "");
			const mismatch = ok ? await contractsMismatch(provider, owner, batcher, delegate) : `"${configured}" is not "<batcher>,<delegate>"`;
			if (!mismatch) {
				io.log(`${variable} is set and both contracts there are this wallet's: nothing deployed (--force deploys new ones).`);
				const line = `${variable}=${batcher},${delegate}`;
				io.log(`Set on ${SWEEP_CONTRACTS_PLACE}:`);
				io.out(line);
				return { network: network.slug, batcher, delegate, line, deployed: false, hashes: [] };
			}
			io.log(`${variable} is set, but ${mismatch}: deploying new contracts (the line below replaces it).`);
		}

		// What both deployments can cost at most, before anything is sent.
		const artifacts = contractArtifacts();
		const batcherFactory = new ContractFactory(artifacts.SweepBatcher.abi, artifacts.SweepBatcher.bytecode, wallet);
		const delegateFactory = new ContractFactory(artifacts.SweepDelegate.abi, artifacts.SweepDelegate.bytecode, wallet);
		const nonce = await provider.getTransactionCount(owner, "pending");
		const predictedBatcher = getCreateAddress({ from: owner, nonce });
		const [balance, fees, batcherGas, delegateGas] = await Promise.all([
			provider.getBalance(owner),
			provider.getFeeData(),
			provider.estimateGas({ ...(await batcherFactory.getDeployTransaction(owner)), from: owner }),
			provider.estimateGas({ ...(await delegateFactory.getDeployTransaction(predictedBatcher)), from: owner }),
		]);
		const feePerGas = fees.maxFeePerGas ?? fees.gasPrice;
		if (feePerGas === null) throw new Error(`The node at ${shownUrl} gives no gas price: cannot price the deployment. Nothing was sent.`);
		const gas = ((batcherGas + delegateGas) * 12n) / 10n;
		const cost = gas * feePerGas;
		if (balance < cost) {
			throw new Error(`The sweeper wallet ${owner} holds ${formatEther(balance)} ${symbol} on ${network.slug}; deploying both contracts needs up to ${formatEther(cost)} ${symbol} (${gas} gas at up to ${formatUnits(feePerGas, "gwei")} gwei). Fund it first (it also pays the gas of token sweeps). Nothing was sent.`);
		}
		io.log(`Balance ${formatEther(balance)} ${symbol}; the deployments cost up to ${formatEther(cost)} ${symbol}. Waiting for ${confirmations} confirmation(s) each.`);

		const pollMs = opts.pollMs ?? 2_000;
		const confirmTimeoutMs = opts.confirmTimeoutMs ?? 15 * 60_000;
		// The batcher first: the delegate's constructor takes its address.
		const batcherTx = await batcherFactory.getDeployTransaction(owner);
		const sentBatcher = await wallet.sendTransaction({ ...batcherTx, nonce, gasLimit: (batcherGas * 12n) / 10n });
		io.log(`SweepBatcher: sent ${sentBatcher.hash}`);
		const batcherReceipt = await waitConfirmed(provider, "SweepBatcher", sentBatcher.hash, confirmations, pollMs, confirmTimeoutMs, io);
		const batcher = batcherReceipt.contractAddress ?? predictedBatcher;
		io.log(`SweepBatcher: ${batcher} (block ${batcherReceipt.blockNumber})`);
		const delegateTx = await delegateFactory.getDeployTransaction(batcher);
		const sentDelegate = await wallet.sendTransaction({ ...delegateTx, nonce: nonce + 1, gasLimit: (delegateGas * 12n) / 10n });
		io.log(`SweepDelegate: sent ${sentDelegate.hash}`);
		const delegateReceipt = await waitConfirmed(provider, "SweepDelegate", sentDelegate.hash, confirmations, pollMs, confirmTimeoutMs, io);
		const delegate = delegateReceipt.contractAddress ?? getCreateAddress({ from: owner, nonce: nonce + 1 });
		io.log(`SweepDelegate: ${delegate} (block ${delegateReceipt.blockNumber})`);

		const mismatch = await contractsMismatch(provider, owner, batcher, delegate);
		if (mismatch) throw new Error(`Deployed, but the check of the code failed: ${mismatch}. Do not configure these addresses.`);
		io.log(`Checked: the code at both addresses is SweepBatcher owned by ${owner} and SweepDelegate bound to it.`);
		const line = `${variable}=${batcher},${delegate}`;
		io.log(`Set on ${SWEEP_CONTRACTS_PLACE}:`);
		io.out(line);
		return { network: network.slug, batcher, delegate, line, deployed: true, hashes: [sentBatcher.hash, sentDelegate.hash] };
	} finally {
		provider.destroy();
	}
}

if (require.main === module) {
	const io: SweepDeployIo = { log: line => console.error(line), out: line => console.log(line) };
	Promise.resolve()
		.then(() => runSweepDeploy(parseSweepDeployArgs(process.argv.slice(2), { ...readDotEnv(), ...process.env }), io))
		.then(
			() => process.exit(0),
			err => {
				console.error(`sweep:deploy: ${errorMessage(err)}`);
				process.exit(1);
			},
		);
}
