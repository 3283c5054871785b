/**
 * `npm run chain:check -- <network-slug> ...`: one command for every chain that has a check; the
 * network's chain type in the catalogue says which (Solana: lib/chains/solana/check.ts, TON:
 * lib/chains/ton/check.ts, Polkadot: lib/chains/polkadot/check.ts). Reads only; no database.
 */
import { readDotEnv } from "../config";
import type { EnvVars } from "../env";
import { CATALOGUE } from "../networks/catalogue";
import { redactUrlsIn } from "../watchers/config";
import { parsePolkadotChainCheckArgs, runPolkadotChainCheck } from "./polkadot/check";
import { parseChainCheckArgs, runChainCheck } from "./solana/check";
import { parseTonChainCheckArgs, runTonChainCheck } from "./ton/check";

/** The chain types chain:check reads. */
export const CHECKED_CHAIN_TYPES = ["solana", "ton", "polkadot"] as const;

/** Runs the check of the network named among `args` (its first word not an option or an option's value). */
export async function chainCheck(args: readonly string[], env: EnvVars, out: (line: string) => void): Promise<void> {
	const slug = args.find((a, i) => !a.startsWith("--") && (i === 0 || !["--blocks", "--address", "--rpc-url"].includes(args[i - 1])));
	const network = CATALOGUE.find(n => n.slug === slug);
	if (network?.chainType === "ton") {
		await runTonChainCheck(parseTonChainCheckArgs(args, env), out);
		return;
	}
	if (network?.chainType === "polkadot") {
		await runPolkadotChainCheck(parsePolkadotChainCheckArgs(args, env), out);
		return;
	}
	if (network && network.chainType !== "solana") throw new Error(`chain:check reads ${CHECKED_CHAIN_TYPES.join(", ")} networks so far; "${network.slug}" is ${network.chainType}`);
	// Solana, and every argument error (no slug, an unknown one) in Solana's words.
	await runChainCheck(parseChainCheckArgs(args, env), out);
}

if (require.main === module) {
	chainCheck(process.argv.slice(2), { ...readDotEnv(), ...process.env }, line => console.log(line)).then(
		() => process.exit(0),
		err => {
			console.error(`chain:check: ${redactUrlsIn(err instanceof Error ? err.message : String(err))}`);
			process.exit(1);
		},
	);
}
