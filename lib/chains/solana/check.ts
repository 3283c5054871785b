/**
 * `npm run chain:check -- <network-slug> [--blocks N] [--address A[,B...]] [--rpc-url URL]`: reads
 * the last N finalized blocks of a Solana network from its RPC endpoint (RPC_URL_<SLUG>,
 * environment or .env) and prints what the watcher would detect there, with the watcher's own
 * parser (lib/chains/solana/block.ts) and the catalogue's mints: per block, its transactions and
 * the payments found; with --address, each payment to those addresses. Reads only; no database.
 * docs/watchers.md "Before going live" tells operators to run it against devnet.
 */
import { Connection } from "@solana/web3.js";
import { parseCliArgs, parseHttpUrl } from "../../cli-args";
import { addressesOption, blocksOption } from "../check-args";
import { readDotEnv } from "../../config";
import type { EnvVars } from "../../env";
import { fromBaseUnits } from "../../money";
import { CATALOGUE, type CatalogueNetwork } from "../../networks/catalogue";
import { envSlug, redactUrlsIn } from "../../watchers/config";
import { blockCredits } from "./block";
import { chainParamsFor } from "../params";
import { solanaCodec } from "./codec";

export const CHAIN_CHECK_USAGE = [
	"Usage: npm run chain:check -- <network-slug> [--blocks N] [--address A[,B...]] [--rpc-url URL]",
	"  <network-slug>: a Solana network of the catalogue (solana, solana-devnet)",
	"  --blocks: how many of the newest finalized blocks to read (default 10, at most 500)",
	"  --address: deposit address(es) to look for, comma-separated; without it every payment is counted",
	"  --rpc-url: the node to read (default RPC_URL_<SLUG>, environment or .env)",
].join("\n");

const SOLANA_NETWORKS = CATALOGUE.filter(n => n.chainType === "solana");

export interface ChainCheckRequest {
	network: CatalogueNetwork;
	rpcUrl: string;
	blocks: number;
	/** Null: every account (a count of what the parser finds). */
	addresses: string[] | null;
}

/** Reads and checks the arguments and the environment (pure); throws an Error for the person at the terminal. */
export function parseChainCheckArgs(args: readonly string[], env: EnvVars): ChainCheckRequest {
	const { options, positionals } = parseCliArgs(args, { blocks: "value", address: "value", "rpc-url": "value" }, CHAIN_CHECK_USAGE);
	if (positionals.length !== 1) throw new Error(`Give one network slug\n${CHAIN_CHECK_USAGE}`);
	const slug = positionals[0];
	const network = CATALOGUE.find(n => n.slug === slug);
	if (!network) throw new Error(`"${slug}" is not a network of the catalogue`);
	if (network.chainType !== "solana") throw new Error(`chain:check reads Solana networks so far (${SOLANA_NETWORKS.map(n => n.slug).join(", ")}); "${slug}" is ${network.chainType}`);
	const blocks = blocksOption(options.blocks);
	const addresses = addressesOption(options.address, a => solanaCodec.normalizeAddress(a, chainParamsFor(network)), "a Solana address");
	const variable = `RPC_URL_${envSlug(slug)}`;
	let rpcUrl: string;
	if (typeof options["rpc-url"] === "string") rpcUrl = parseHttpUrl(options["rpc-url"], "--rpc-url");
	else if (env[variable]?.trim()) rpcUrl = parseHttpUrl(env[variable]!, variable);
	else throw new Error(`No node to read: set ${variable} or give --rpc-url <url>\n${CHAIN_CHECK_USAGE}`);
	return { network, rpcUrl, blocks, addresses };
}

export interface ChainCheckReport {
	finalizedSlot: number;
	blocks: Array<{ slot: number; blockhash: string; parentSlot: number; transactions: number; failed: number; payments: number }>;
	/** Payments found, in block order. */
	payments: Array<{ slot: number; signature: string; index: number; account: string; symbol: string; amount: string }>;
}

/** Produced slots at most this far below the finalized one are looked at (skipped slots are a few percent). */
const SLOT_WINDOW_FACTOR = 2;

export async function runChainCheck(req: ChainCheckRequest, out: (line: string) => void): Promise<ChainCheckReport> {
	const connection = new Connection(req.rpcUrl, { commitment: "finalized", disableRetryOnRateLimit: true });
	const tokens = req.network.tokens.filter(t => t.isNative || t.contractAddress);
	const bySource = new Map(tokens.map(t => [t.isNative ? "" : t.contractAddress!, t]));
	const mints = new Set([...bySource.keys()].filter(m => m !== ""));
	const wanted = req.addresses ? new Set(req.addresses) : null;
	const finalizedSlot = await connection.getSlot("finalized");
	const from = Math.max(0, finalizedSlot - req.blocks * SLOT_WINDOW_FACTOR - 50);
	const slots = (await connection.getBlocks(from, finalizedSlot, "finalized")).slice(-req.blocks);
	out(`${req.network.slug}: finalized slot ${finalizedSlot}; reading ${slots.length} finalized block(s) ${slots[0] ?? "-"}..${slots[slots.length - 1] ?? "-"}; looking for ${wanted ? `${wanted.size} address(es)` : "payments to any account"} in ${tokens.map(t => t.symbol + (t.isNative ? "" : ` (${t.contractAddress})`)).join(", ")}`);
	const report: ChainCheckReport = { finalizedSlot, blocks: [], payments: [] };
	for (const slot of slots) {
		const block = await connection.getBlock(slot, { commitment: "finalized", transactionDetails: "full", maxSupportedTransactionVersion: 0, rewards: false });
		if (!block) {
			out(`slot ${slot}: no block (skipped)`);
			continue;
		}
		const credits = blockCredits(block, wanted ? a => wanted.has(a) : () => true, mints);
		const failed = block.transactions.filter(t => t.meta?.err).length;
		report.blocks.push({ slot, blockhash: block.blockhash, parentSlot: block.parentSlot, transactions: block.transactions.length, failed, payments: credits.length });
		const counts = new Map<string, number>();
		for (const c of credits) {
			const token = bySource.get(c.mint)!;
			counts.set(token.symbol, (counts.get(token.symbol) ?? 0) + 1);
			report.payments.push({ slot, signature: c.signature, index: c.index, account: c.account, symbol: token.symbol, amount: fromBaseUnits(c.amount, token.decimals) });
		}
		const summary = [...counts].map(([s, n]) => `${n} ${s}`).join(", ") || "none";
		out(`slot ${slot} (parent ${block.parentSlot}) ${block.blockhash}: ${block.transactions.length} transaction(s), ${failed} failed; payments: ${summary}`);
		if (wanted) for (const p of report.payments.filter(p => p.slot === slot)) out(`  ${p.amount} ${p.symbol} to ${p.account} in ${p.signature} #${p.index}`);
	}
	out(`${report.payments.length} payment(s) in ${report.blocks.length} block(s). The watcher shows such payments as confirming from the confirmed commitment and credits them once finalized, as these blocks are.`);
	return report;
}

if (require.main === module) {
	Promise.resolve()
		.then(() => runChainCheck(parseChainCheckArgs(process.argv.slice(2), { ...readDotEnv(), ...process.env }), line => console.log(line)))
		.then(
			() => process.exit(0),
			err => {
				console.error(`chain:check: ${redactUrlsIn(err instanceof Error ? err.message : String(err))}`);
				process.exit(1);
			},
		);
}
