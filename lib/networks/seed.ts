/**
 * Seeds the catalogue into the `networks` and `tokens` tables. Re-runnable and safe when several
 * nodes start at once: missing rows are inserted with INSERT IGNORE semantics on their
 * deterministic ids, then each existing row's catalogue facts are brought up to date. Nothing is
 * ever duplicated or deleted.
 *
 * The catalogue owns the facts (names, chain ids, URLs, confirmations, addresses, decimals). The
 * operator owns `isActive`, `image` and `deletedAt`: set on insert only, so switching a network
 * off in the database survives restarts. Exceptions: local development networks are forced
 * inactive whenever NODE_ENV=production, and a contract token without a contract address (the
 * local chain's test token before TEST_USDC_ADDRESS) is kept inactive, then switched on by the
 * seed that writes its first address.
 */
import { getAddress } from "ethers";
import type { Network } from "../../models/network.model";
import type { Token } from "../../models/token.model";
import { envSlug } from "../watchers/config";
import { CATALOGUE, CatalogueNetwork, networkIdFor, tokenIdFor } from "./catalogue";

export interface SeedOptions {
	/** NODE_ENV=production: development-only networks are inactive. */
	production: boolean;
	/** TEST_USDC_ADDRESS: the local chain's test stablecoin contract. */
	testUsdcAddress?: string | null;
	/** REQUIRED_CONFIRMATIONS_<SLUG>: the operator's confirmation requirement per network (slug in env form), over the catalogue's. */
	requiredConfirmations?: Record<string, number>;
	catalogue?: readonly CatalogueNetwork[];
}

export interface SeedResult {
	networksInserted: number;
	networksUpdated: number;
	tokensInserted: number;
	tokensUpdated: number;
	changed: boolean;
}

/** Catalogue facts of a network row (what the seed keeps up to date). */
export interface NetworkFacts {
	slug: string;
	name: string;
	chainType: CatalogueNetwork["chainType"];
	chainId: number;
	blockExplorerUrl: string;
	publicRpcUrls: string[];
	isTestnet: boolean;
	listenerConfig: Record<string, unknown> | null;
	requiredConfirmations: number;
}

export interface NetworkSeedRow {
	id: string;
	facts: NetworkFacts;
	/** Value on insert. */
	isActive: boolean;
	/** Development-only network in production: kept inactive on every run. */
	forceInactive: boolean;
}

export interface TokenFacts {
	networkId: string;
	symbol: string;
	name: string;
	/** Absent: operator-supplied, never overwritten (see CatalogueToken.contractAddress). */
	contractAddress?: string;
	decimals: number;
	isNative: boolean;
	isStablecoin: boolean;
}

export interface TokenSeedRow {
	id: string;
	facts: TokenFacts;
}

/** The local chain's test stablecoin, as TEST_USDC_ADDRESS gives it (EIP-55 checksummed). */
function localTokenAddress(value: string | null | undefined): string | undefined {
	if (!value) return undefined;
	try {
		return getAddress(value);
	} catch {
		throw new Error(`Configuration: TEST_USDC_ADDRESS is not a valid EVM address (bad checksum?): "${value}"`);
	}
}

/** The rows the catalogue asks for (pure). */
export function catalogueRows(opts: SeedOptions): { networks: NetworkSeedRow[]; tokens: TokenSeedRow[] } {
	const catalogue = opts.catalogue ?? CATALOGUE;
	const networks: NetworkSeedRow[] = [];
	const tokens: TokenSeedRow[] = [];
	const localAddress = localTokenAddress(opts.testUsdcAddress);
	for (const n of catalogue) {
		const networkId = networkIdFor(n.slug);
		const forceInactive = Boolean(n.devOnly) && opts.production;
		networks.push({
			id: networkId,
			isActive: !forceInactive,
			forceInactive,
			facts: {
				slug: n.slug,
				name: n.name,
				chainType: n.chainType,
				chainId: n.chainId,
				blockExplorerUrl: n.blockExplorerUrl,
				publicRpcUrls: [...n.publicRpcUrls],
				isTestnet: n.isTestnet,
				listenerConfig: n.listenerConfig,
				requiredConfirmations: opts.requiredConfirmations?.[envSlug(n.slug)] ?? n.requiredConfirmations,
			},
		});
		for (const t of n.tokens) {
			const address = t.contractAddress === null ? (n.devOnly ? localAddress : undefined) : t.contractAddress;
			const facts: TokenFacts = { networkId, symbol: t.symbol, name: t.name, decimals: t.decimals, isNative: t.isNative, isStablecoin: t.isStablecoin };
			if (address !== undefined) facts.contractAddress = address;
			tokens.push({ id: tokenIdFor(n.slug, t.symbol), facts });
		}
	}
	return { networks, tokens };
}

/** A token the chain can carry: the native coin, or a contract token whose contract is known. */
export function isTokenDeployed(t: { isNative: boolean; contractAddress?: string | null }): boolean {
	return t.isNative || Boolean(t.contractAddress);
}

/**
 * `isActive` changes the seed makes to a token, given what is stored and the catalogue's facts:
 * off while it has no contract; on when this seed gives it its first one. Otherwise none (the
 * operator's switch).
 */
export function tokenActivation(stored: { isActive: boolean; contractAddress: string; isNative: boolean }, facts: TokenFacts): { isActive?: boolean } {
	const address = facts.contractAddress ?? stored.contractAddress;
	if (!isTokenDeployed({ isNative: facts.isNative, contractAddress: address })) return stored.isActive ? { isActive: false } : {};
	if (!facts.isNative && !stored.contractAddress && address) return stored.isActive ? {} : { isActive: true };
	return {};
}

const same = (a: unknown, b: unknown): boolean =>
	a !== null && typeof a === "object" ? JSON.stringify(a) === JSON.stringify(b) : a === b;

/** The facts that differ from what is stored. */
function changesOf(current: Record<string, unknown>, facts: object): Record<string, unknown> {
	const out: Record<string, unknown> = {};
	for (const [key, value] of Object.entries(facts)) {
		if (!same(current[key], value)) out[key] = value;
	}
	return out;
}

export async function seedCatalogue(models: { Network: typeof Network; Token: typeof Token }, opts: SeedOptions): Promise<SeedResult> {
	const { networks, tokens } = catalogueRows(opts);
	const result: SeedResult = { networksInserted: 0, networksUpdated: 0, tokensInserted: 0, tokensUpdated: 0, changed: false };

	const storedNetworks = new Map((await models.Network.findAll({ where: { id: networks.map(n => n.id) }, paranoid: false })).map(n => [n.id, n]));
	const newNetworks = networks.filter(n => !storedNetworks.has(n.id));
	if (newNetworks.length > 0) {
		// ignoreDuplicates: a node starting at the same moment may have inserted some of them.
		await models.Network.bulkCreate(
			newNetworks.map(n => ({ id: n.id, ...n.facts, isActive: n.isActive, image: null })),
			{ ignoreDuplicates: true },
		);
		result.networksInserted = newNetworks.length;
	}
	for (const n of networks) {
		const stored = storedNetworks.get(n.id);
		if (!stored) continue;
		const current = stored.get() as unknown as Record<string, unknown>;
		const changes = changesOf(current, n.forceInactive ? { ...n.facts, isActive: false } : n.facts);
		if (Object.keys(changes).length > 0) {
			await stored.update(changes);
			result.networksUpdated++;
		}
	}

	const storedTokens = new Map((await models.Token.findAll({ where: { id: tokens.map(t => t.id) }, paranoid: false })).map(t => [t.id, t]));
	const newTokens = tokens.filter(t => !storedTokens.has(t.id));
	if (newTokens.length > 0) {
		await models.Token.bulkCreate(
			newTokens.map(t => ({ id: t.id, ...t.facts, contractAddress: t.facts.contractAddress ?? "", isActive: isTokenDeployed(t.facts), image: null })),
			{ ignoreDuplicates: true },
		);
		result.tokensInserted = newTokens.length;
	}
	for (const t of tokens) {
		const stored = storedTokens.get(t.id);
		if (!stored) continue;
		const changes = { ...changesOf(stored.get() as unknown as Record<string, unknown>, t.facts), ...tokenActivation(stored, t.facts) };
		if (Object.keys(changes).length > 0) {
			await stored.update(changes);
			result.tokensUpdated++;
		}
	}

	result.changed = result.networksInserted + result.networksUpdated + result.tokensInserted + result.tokensUpdated > 0;
	return result;
}
