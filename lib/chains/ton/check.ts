/**
 * `npm run chain:check -- <ton-network-slug> [--blocks N] [--address A[,B...]] [--rpc-url URL]`
 * (dispatched by lib/chains/check.ts): reads the last N masterchain blocks of a TON network from
 * its v3 API (RPC_URL_<SLUG>, key RPC_API_KEY_<SLUG>; environment or .env) and prints what the
 * watcher would detect there, with the watcher's own parser (lib/chains/ton/transactions.ts) and
 * the catalogue's jetton masters: per block, its transactions and the payments found. With
 * --address, jettons are found as the watcher finds them: at each address's jetton wallet under the
 * catalogue's master (an accepted internal_transfer; lib/chains/ton/jetton-wallets.ts), a
 * notification from that wallet not counted again, one from any other source only its TON; without
 * it every account counts, no jetton wallet is known, and notifications are listed unverified (a
 * jetton transfer sent without a notification is then not listed).
 * Reads only; no database.
 */
import { Address } from "@ton/core";
import { parseCliArgs, parseHttpUrl } from "../../cli-args";
import { addressesOption, blocksOption } from "../check-args";
import type { EnvVars } from "../../env";
import { fromBaseUnits } from "../../money";
import { CATALOGUE, type CatalogueNetwork } from "../../networks/catalogue";
import { envSlug } from "../../watchers/config";
import { chainParamsFor } from "../params";
import { tonCodec } from "./codec";
import { createTonSource } from "./source";
import { candidates } from "./transactions";

export const TON_CHAIN_CHECK_USAGE = [
	"Usage: npm run chain:check -- <network-slug> [--blocks N] [--address A[,B...]] [--rpc-url URL]",
	"  <network-slug>: a TON network of the catalogue (ton, ton-testnet)",
	"  --blocks: how many of the newest masterchain blocks to read (default 10, at most 500)",
	"  --address: deposit address(es) to look for, comma-separated; without it every account is counted",
	"  --rpc-url: the toncenter v3 API to read (default RPC_URL_<SLUG>, environment or .env; key: RPC_API_KEY_<SLUG>)",
].join("\n");

export interface TonChainCheckRequest {
	network: CatalogueNetwork;
	apiUrl: string;
	apiKey: string | null;
	blocks: number;
	/** Canonical deposit addresses; null: every account. */
	addresses: string[] | null;
}

export function parseTonChainCheckArgs(args: readonly string[], env: EnvVars): TonChainCheckRequest {
	const { options, positionals } = parseCliArgs(args, { blocks: "value", address: "value", "rpc-url": "value" }, TON_CHAIN_CHECK_USAGE);
	if (positionals.length !== 1) throw new Error(`Give one network slug\n${TON_CHAIN_CHECK_USAGE}`);
	const network = CATALOGUE.find(n => n.slug === positionals[0]);
	if (!network) throw new Error(`"${positionals[0]}" is not a network of the catalogue`);
	if (network.chainType !== "ton") throw new Error(`"${network.slug}" is ${network.chainType}, not a TON network`);
	const blocks = blocksOption(options.blocks);
	const addresses = addressesOption(options.address, a => tonCodec.normalizeAddress(a, chainParamsFor(network)), `a TON address of ${network.slug}`);
	const slug = envSlug(network.slug);
	let apiUrl: string;
	if (typeof options["rpc-url"] === "string") apiUrl = parseHttpUrl(options["rpc-url"], "--rpc-url");
	else if (env[`RPC_URL_${slug}`]?.trim()) apiUrl = parseHttpUrl(env[`RPC_URL_${slug}`]!, `RPC_URL_${slug}`);
	else throw new Error(`No API to read: set RPC_URL_${slug} or give --rpc-url <url>\n${TON_CHAIN_CHECK_USAGE}`);
	return { network, apiUrl, apiKey: env[`RPC_API_KEY_${slug}`]?.trim() || null, blocks, addresses };
}

export interface TonChainCheckReport {
	lastSeqno: number;
	blocks: Array<{ seqno: number; hash: string; transactions: number; payments: number }>;
	payments: Array<{ seqno: number; txHash: string; account: string; symbol: string; amount: string; verified: boolean }>;
}

export async function runTonChainCheck(req: TonChainCheckRequest, out: (line: string) => void): Promise<TonChainCheckReport> {
	const source = createTonSource({ networkId: req.network.slug, apiUrl: req.apiUrl, apiKey: req.apiKey, timeoutMs: 15_000, isTestnet: req.network.isTestnet });
	const native = req.network.tokens.find(t => t.isNative)!;
	const jettons = req.network.tokens.filter(t => !t.isNative && t.contractAddress).map(t => ({ token: t, raw: Address.parse(t.contractAddress!).toRawString() }));
	const wanted = req.addresses ? new Map(req.addresses.map(a => [Address.parse(a).toRawString(), a])) : null;
	const head = await source.head();
	const from = Math.max(0, head.number - req.blocks + 1);
	out(`${req.network.slug}: last masterchain block ${head.number}; reading ${head.number - from + 1} block(s) ${from}..${head.number}; looking for ${wanted ? `${wanted.size} address(es)` : "payments to any account"} in ${req.network.tokens.map(t => t.symbol + (t.isNative ? "" : ` (${t.contractAddress})`)).join(", ")}`);
	const report: TonChainCheckReport = { lastSeqno: head.number, blocks: [], payments: [] };
	// With --address, each address's jetton wallet under each catalogue master, found as the watcher finds it.
	const wallets = new Map<string, { owner: string; token: (typeof jettons)[number]["token"] }>();
	if (wanted) {
		for (const j of jettons) {
			for (const [owner, address] of wanted) {
				try {
					wallets.set(await source.jettonWallet(j.raw, owner), { owner, token: j.token });
				} catch (err) {
					// A check, not the watcher: say what cannot be listed and go on with the rest.
					out(`${j.token.symbol}: the jetton wallet of ${address} under ${j.token.contractAddress} is unknown (${(err as Error).message}); its ${j.token.symbol} payments are not listed`);
				}
			}
		}
	}
	for (const ref of await source.blocks(from, head.number)) {
		const txs = await source.blockTransactions(ref.number);
		const found = candidates(txs, wanted ? raw => wanted.has(raw) : () => true, jettons.length > 0, wanted ? raw => wallets.has(raw) : undefined);
		const before = report.payments.length;
		for (const c of found) {
			const at = { seqno: ref.number, txHash: c.txHash };
			if (c.kind === "jetton") {
				// Only with --address: an internal_transfer the deposit's trusted jetton wallet accepted.
				const w = wallets.get(c.account)!;
				report.payments.push({ ...at, account: wanted!.get(w.owner)!, symbol: w.token.symbol, amount: fromBaseUnits(c.amount.toString(), w.token.decimals), verified: true });
				continue;
			}
			const account = wanted?.get(c.account) ?? c.account;
			if (c.kind === "ton") {
				report.payments.push({ ...at, account, symbol: native.symbol, amount: fromBaseUnits(c.amount.toString(), native.decimals), verified: true });
				continue;
			}
			if (wanted) {
				// The trusted wallet's notification: that payment is counted at the wallet (above). Any other: its TON only.
				if (wallets.get(c.jettonWallet)?.owner === c.account) continue;
				if (c.tonValue > 0n) report.payments.push({ ...at, account, symbol: native.symbol, amount: fromBaseUnits(c.tonValue.toString(), native.decimals), verified: true });
				continue;
			}
			report.payments.push({ ...at, account, symbol: `jetton from ${c.jettonWallet}`, amount: `${c.amount} base units`, verified: false });
		}
		const mine = report.payments.slice(before);
		report.blocks.push({ seqno: ref.number, hash: ref.hash, transactions: txs.length, payments: mine.length });
		out(`block ${ref.number} ${ref.hash}: ${txs.length} transaction(s); payments: ${mine.length}`);
		if (wanted) for (const p of mine) out(`  ${p.amount} ${p.symbol} to ${p.account} in ${p.txHash}`);
	}
	out(`${report.payments.length} payment(s) in ${report.blocks.length} masterchain block(s). The watcher credits such payments once their masterchain block is read (${req.network.requiredConfirmations} confirmation(s) required).`);
	await source.close();
	return report;
}
