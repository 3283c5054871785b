/**
 * Where a setting acts (docs/deployment.md "Where each variable goes"). Most variables act on
 * whichever node reads them; two kinds act only on some node groups, and a node given one it does
 * not act on says so once at start (lib/node.ts), instead of silently ignoring it:
 *
 * - Catalogue settings (`REQUIRED_CONFIRMATIONS_<SLUG>`, `TEST_USDC_ADDRESS`): the networks service
 *   (core group) writes them into the `networks` and `tokens` tables when it starts
 *   (lib/networks/seed.ts), and every node reads the catalogue from there (`networks.watchable`,
 *   `getNetwork`, ...). The database is the one source of truth; on a node without the networks
 *   service these variables do nothing, so the warning names the value in effect.
 * - Chain settings (`RPC_URL_<SLUG>`, `WATCHER_*`, `SWEEP_*`, ...): read only by the watcher and
 *   sweeper services (compose's chains.env and k8s' Secret gateway-rpc reach both groups, so they
 *   are one scope here; docs/configuration.md says which of the two uses each).
 *
 * It also names per-network variables whose slug is no catalogue network (a typo would be ignored).
 */
import type { Models } from "../models";
import type { EnvVars } from "./env";
import { CATALOGUE, CatalogueNetwork, networkIdFor, tokenIdFor } from "./networks/catalogue";
import { envSlug } from "./watchers/config";

export interface SettingScope {
	kind: "catalogue" | "chain";
	/** Variables read under exactly these names. */
	names: readonly string[];
	/** Variables read under these prefixes (`RPC_URL_` + a network slug). */
	prefixes: readonly string[];
	/** A node running any of these services acts on the scope's variables. */
	services: readonly string[];
	/** Where they act, for the start-up warning. */
	where: string;
}

export const CATALOGUE_SCOPE: SettingScope = {
	kind: "catalogue",
	names: ["TEST_USDC_ADDRESS"],
	prefixes: ["REQUIRED_CONFIRMATIONS_"],
	services: ["networks"],
	where: "the node running the networks service (the core group)",
};

export const CHAIN_SCOPE: SettingScope = {
	kind: "chain",
	names: [
		"WATCHER_LEASE_MS",
		"WATCHER_REBALANCE_MS",
		"WATCHER_TAKE_DEFER_MS",
		"WATCHER_HANDOVER_MS",
		"WATCHER_POLL_MS",
		"WATCHER_MAX_RANGE",
		"WATCHER_REORG_DEPTH",
		"WATCHER_RECONCILE_MS",
		"WATCHER_RECONCILE_PAGE",
		"WATCHER_LAG_WARN_BLOCKS",
		"WATCHER_READY_MAX_LAG",
		"WATCHER_WATCH_HOURS",
		"WATCHER_RPC_TIMEOUT_MS",
		"SWEEPER_PRIVATE_KEY",
		"SWEEPER_PRIVATE_KEY_SOLANA",
		"SWEEP_POLL_MS",
		"SWEEP_BATCH_SIZE",
		"SWEEP_STUCK_MS",
		"SWEEP_MIN_VALUE_MULTIPLE",
		"SWEEP_MAX_AGE_MINUTES",
		"SWEEP_LEASE_MS",
		"SWEEP_MAX_FAILURES",
		"SWEEP_FAILURE_BACKOFF_MS",
		"SWEEP_RPC_TIMEOUT_MS",
		"SWEEP_PROOF_POLLS",
		"SWEEP_PROOF_MS",
		"SWEEP_UTXO_FEE_FLOOR",
		"SWEEP_UTXO_FEE_CAP",
		"SWEEPER_PRIVATE_KEY_TON",
		"SWEEP_TON_VALID_SEC",
		"SWEEPER_PRIVATE_KEY_POLKADOT",
		"SWEEP_POLKADOT_ERA_PERIOD",
	],
	prefixes: ["RPC_URL_", "RPC_COOKIE_FILE_", "RPC_API_KEY_", "WATCHER_START_BLOCK_", "SWEEP_CONTRACTS_", "EIP7702_"],
	services: ["watcher-evm", "watcher-bitcoin", "watcher-solana", "watcher-ton", "watcher-polkadot", "sweeper-evm", "sweeper-bitcoin", "sweeper-ton", "sweeper-solana", "sweeper-polkadot"],
	where: "the watcher and sweeper nodes (services watcher-evm, watcher-bitcoin, watcher-solana, watcher-ton, watcher-polkadot, sweeper-evm, sweeper-bitcoin, sweeper-ton, sweeper-solana, sweeper-polkadot)",
};

export const SETTING_SCOPES: readonly SettingScope[] = [CATALOGUE_SCOPE, CHAIN_SCOPE];

/** The scope a variable belongs to; null: it acts on whichever node reads it. */
export function scopeOf(name: string): SettingScope | null {
	return SETTING_SCOPES.find(s => s.names.includes(name) || s.prefixes.some(p => name.startsWith(p) && name.length > p.length)) ?? null;
}

/** Whether a node running `services` acts on `name`. */
export function actsOn(name: string, services: readonly string[]): boolean {
	const scope = scopeOf(name);
	return !scope || scope.services.some(s => services.includes(s));
}

/** Per scope, the variables set (non-empty: the configuration ignores empty ones) that a node running `services` does not act on. */
export function misplacedSettings(env: EnvVars, services: readonly string[]): Array<{ scope: SettingScope; names: string[] }> {
	const set = Object.keys(env).filter(name => (env[name] ?? "").trim() !== "").sort();
	return SETTING_SCOPES.flatMap(scope => {
		if (scope.services.some(s => services.includes(s))) return [];
		const names = set.filter(name => scopeOf(name) === scope);
		return names.length ? [{ scope, names }] : [];
	});
}

/**
 * Set per-network variables (`<PREFIX><SLUG>`) this node acts on whose slug names no network of the
 * catalogue: a typo (REQUIRED_CONFIRMATIONS_ETH) would otherwise be ignored without a word.
 */
export function unknownNetworkSettings(env: EnvVars, services: readonly string[], catalogue: readonly CatalogueNetwork[] = CATALOGUE): string[] {
	const slugs = new Set(catalogue.map(n => envSlug(n.slug)));
	const prefixes = SETTING_SCOPES.flatMap(scope => (scope.services.some(s => services.includes(s)) ? scope.prefixes : []));
	return Object.keys(env)
		.filter(name => (env[name] ?? "").trim() !== "" && prefixes.some(p => name.startsWith(p) && name.length > p.length && !slugs.has(name.slice(p.length))))
		.sort();
}

/** The network of a REQUIRED_CONFIRMATIONS_<SLUG> variable. */
function networkOf(name: string, catalogue: readonly CatalogueNetwork[]): CatalogueNetwork | undefined {
	return catalogue.find(n => `REQUIRED_CONFIRMATIONS_${envSlug(n.slug)}` === name);
}

/** What the database holds for a catalogue variable: the value every node applies. */
async function valueInEffect(models: Pick<Models, "Network" | "Token">, name: string, catalogue: readonly CatalogueNetwork[]): Promise<string> {
	if (name === "TEST_USDC_ADDRESS") {
		// The tokens the seed gives that address to (catalogueRows in lib/networks/seed.ts).
		const ids = catalogue.flatMap(n => (n.devOnly ? n.tokens.filter(t => t.contractAddress === null).map(t => tokenIdFor(n.slug, t.symbol)) : []));
		const rows = await models.Token.findAll({ where: { id: ids }, paranoid: false });
		const addresses = [...new Set(rows.map(r => r.contractAddress).filter(a => !!a))];
		return addresses.length ? addresses.join(", ") : "none (the test token has no address: it is inactive)";
	}
	const network = networkOf(name, catalogue);
	if (!network) return "nothing: it names no network of the catalogue";
	const row = await models.Network.findByPk(networkIdFor(network.slug), { paranoid: false });
	return row ? String(row.requiredConfirmations) : `not in the database yet (the core has not seeded it; the catalogue's is ${network.requiredConfirmations})`;
}

/**
 * The start-up warnings of a node given variables it does not act on, one line per scope. The
 * catalogue line names the value in effect (read from the database); the chain line names the
 * variables only (their values may be credentials or a private key).
 */
export async function misplacedSettingWarnings(
	env: EnvVars,
	services: readonly string[],
	models: Pick<Models, "Network" | "Token">,
	catalogue: readonly CatalogueNetwork[] = CATALOGUE,
): Promise<string[]> {
	const out: string[] = [];
	for (const { scope, names } of misplacedSettings(env, services)) {
		const them = names.length === 1 ? "it" : "them";
		const list = names.join(", ");
		const verb = names.length === 1 ? "is" : "are";
		if (scope.kind === "catalogue") {
			const effects = await Promise.all(
				names.map(async name => {
					const inEffect = await valueInEffect(models, name, catalogue).catch(err => `unknown (the database could not be read: ${(err as Error).message})`);
					return `${name} ${inEffect} (this node's: ${env[name]!.trim()})`;
				}),
			);
			out.push(
				`${list} ${verb} set on this node, but only ${scope.where} applies ${them}: it writes ${them} into the database, which every node reads the catalogue from. This node runs no networks service and ignores ${them}. ` +
					`In effect: ${effects.join("; ")}. Set ${them} on the core nodes (docs/deployment.md "Where each variable goes").`,
			);
		} else {
			out.push(`${list} ${verb} set on this node, but only ${scope.where} use ${them}. This node runs none of those services and ignores ${them}. Remove ${them} here (docs/deployment.md "Where each variable goes").`);
		}
	}
	const unknown = unknownNetworkSettings(env, services, catalogue);
	if (unknown.length) {
		out.push(`${unknown.join(", ")} ${unknown.length === 1 ? "names" : "name"} no network of the catalogue and ${unknown.length === 1 ? "does" : "do"} nothing: the part after the prefix must be a network's slug in upper case with _ for - (ETHEREUM, BASE_SEPOLIA; docs/networks.md).`);
	}
	return out;
}
