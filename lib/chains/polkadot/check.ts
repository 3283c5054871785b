/**
 * `npm run chain:check -- <polkadot-network-slug> [--blocks N] [--address A[,B...]] [--rpc-url URL]`
 * (dispatched by lib/chains/check.ts): reads the last N blocks of a Polkadot / Westend Asset Hub
 * node (RPC_URL_<SLUG>, ws:// or wss://; environment or .env) and prints what the watcher would
 * detect there, with the watcher's own event rules (lib/chains/polkadot/events.ts) and the
 * catalogue's asset ids: per block, its events and the payments found, and the node's finalized
 * head (the watcher credits at finality). Without --address every receiving account is listed.
 * Reads only; no database.
 */
import { parseCliArgs, parseWsUrl } from "../../cli-args";
import type { EnvVars } from "../../env";
import { fromBaseUnits } from "../../money";
import { CATALOGUE, type CatalogueNetwork } from "../../networks/catalogue";
import { envSlug } from "../../watchers/config";
import { addressesOption, blocksOption } from "../check-args";
import { chainParamsFor } from "../params";
import { polkadotCodec, polkadotSs58Of } from "./codec";
import { createPolkadotSource } from "./source";

export const POLKADOT_CHAIN_CHECK_USAGE = [
	"Usage: npm run chain:check -- <network-slug> [--blocks N] [--address A[,B...]] [--rpc-url URL]",
	"  <network-slug>: a Polkadot network of the catalogue (polkadot-asset-hub, westend-asset-hub)",
	"  --blocks: how many of the newest blocks to read (default 10, at most 500)",
	"  --address: deposit address(es) to look for (the network's SS58 form), comma-separated; without it every account is counted",
	"  --rpc-url: the node's WebSocket RPC to read (default RPC_URL_<SLUG>, environment or .env)",
].join("\n");

export interface PolkadotChainCheckRequest {
	network: CatalogueNetwork;
	rpcUrl: string;
	blocks: number;
	/** Addresses in the network's SS58 form; null: every account. */
	addresses: string[] | null;
}

export function parsePolkadotChainCheckArgs(args: readonly string[], env: EnvVars): PolkadotChainCheckRequest {
	const { options, positionals } = parseCliArgs(args, { blocks: "value", address: "value", "rpc-url": "value" }, POLKADOT_CHAIN_CHECK_USAGE);
	if (positionals.length !== 1) throw new Error(`Give one network slug\n${POLKADOT_CHAIN_CHECK_USAGE}`);
	const network = CATALOGUE.find(n => n.slug === positionals[0]);
	if (!network) throw new Error(`"${positionals[0]}" is not a network of the catalogue`);
	if (network.chainType !== "polkadot") throw new Error(`"${network.slug}" is ${network.chainType}, not a Polkadot network`);
	const blocks = blocksOption(options.blocks);
	const addresses = addressesOption(options.address, a => polkadotCodec.normalizeAddress(a, chainParamsFor(network)), `an address of ${network.slug} (SS58 prefix ${polkadotSs58Of(chainParamsFor(network))})`);
	const slug = envSlug(network.slug);
	let rpcUrl: string;
	if (typeof options["rpc-url"] === "string") rpcUrl = parseWsUrl(options["rpc-url"], "--rpc-url");
	else if (env[`RPC_URL_${slug}`]?.trim()) rpcUrl = parseWsUrl(env[`RPC_URL_${slug}`]!, `RPC_URL_${slug}`);
	else throw new Error(`No node to read: set RPC_URL_${slug} or give --rpc-url <url>\n${POLKADOT_CHAIN_CHECK_USAGE}`);
	return { network, rpcUrl, blocks, addresses };
}

export interface PolkadotChainCheckReport {
	head: number;
	finalized: number;
	blocks: Array<{ number: number; hash: string; events: number; payments: number }>;
	payments: Array<{ number: number; blockHash: string; eventIndex: number; account: string; symbol: string; amount: string; finalized: boolean }>;
}

export async function runPolkadotChainCheck(req: PolkadotChainCheckRequest, out: (line: string) => void): Promise<PolkadotChainCheckReport> {
	const ss58Prefix = polkadotSs58Of(chainParamsFor(req.network));
	const source = createPolkadotSource({ networkId: req.network.slug, rpcUrl: req.rpcUrl, timeoutMs: 30_000, ss58Prefix });
	try {
		const tokens = new Map(req.network.tokens.map(t => [t.isNative ? "" : (t.contractAddress ?? ""), t]));
		const assetIds = new Set([...tokens.keys()].filter(k => k !== ""));
		const head = await source.head();
		const finalized = await source.api.finalizedHead();
		const runtime = (await source.api.ready()).runtimeVersion;
		const from = Math.max(0, head.number - req.blocks + 1);
		out(`${req.network.slug}: runtime ${runtime.specName.toString()} ${runtime.specVersion.toString()}; best block ${head.number}, finalized ${finalized.number}; reading ${head.number - from + 1} block(s) ${from}..${head.number}; looking for ${req.addresses ? `${req.addresses.length} address(es)` : "payments to any account"} in ${req.network.tokens.map(t => t.symbol + (t.isNative ? "" : ` (asset ${t.contractAddress})`)).join(", ")}`);
		const report: PolkadotChainCheckReport = { head: head.number, finalized: finalized.number, blocks: [], payments: [] };
		const wanted = req.addresses ? new Set(req.addresses) : null;
		for (let n = from; n <= head.number; ) {
			const refs = await source.blocks(n, head.number);
			if (refs.length === 0) break;
			for (const ref of refs) {
				const events = await source.api.events(ref.hash);
				const found = source.matches(events, wanted, assetIds);
				for (const p of found) {
					const token = tokens.get(p.asset)!;
					report.payments.push({ number: ref.number, blockHash: ref.hash, eventIndex: p.eventIndex, account: p.to, symbol: token.symbol, amount: fromBaseUnits(p.amount, token.decimals), finalized: ref.number <= finalized.number });
				}
				report.blocks.push({ number: ref.number, hash: ref.hash, events: events.length, payments: found.length });
				out(`block ${ref.number} ${ref.hash}: ${events.length} event(s); payments: ${found.length}${ref.number <= finalized.number ? "" : " (not finalized)"}`);
				for (const p of report.payments.slice(report.payments.length - found.length)) out(`  ${p.amount} ${p.symbol} to ${p.account} (event ${p.eventIndex})`);
			}
			n = refs[refs.length - 1].number + 1;
		}
		out(`${report.payments.length} payment(s) in ${report.blocks.length} block(s). The watcher shows such payments as confirming from the best block and credits them once their block is finalized (GRANDPA).`);
		return report;
	} finally {
		await source.close();
	}
}
