/**
 * Integrity of the network catalogue: unique slugs and ids, both kinds of network per chain type,
 * real chain ids, natives and stablecoins with the right decimals, and every address valid for its
 * chain (checked with the chains' own libraries).
 */
import crypto from "node:crypto";
import { getAddress } from "ethers";
import { PublicKey } from "@solana/web3.js";
import { TronWeb } from "tronweb";
import { Address } from "@ton/core";
import { CATALOGUE, CHAIN_TYPES, CATALOGUE_NAMESPACE, catalogueNetwork, catalogueSlugOf, networkIdFor, tokenIdFor } from "../../../lib/networks/catalogue";
import { catalogueRows, isTokenDeployed, tokenActivation } from "../../../lib/networks/seed";
import { MAX_DECIMALS } from "../../../lib/money";
import { NETWORK_COLUMNS } from "../../../models/network.model";
import { TOKEN_COLUMNS } from "../../../models/token.model";

const UUID_V5 = /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const allTokens = CATALOGUE.flatMap(n => n.tokens.map(t => ({ network: n, token: t })));

function token(slug: string, symbol: string) {
	const t = catalogueNetwork(slug)?.tokens.find(x => x.symbol === symbol);
	if (!t) throw new Error(`no ${symbol} on ${slug}`);
	return t;
}

describe("network catalogue", () => {
	it("has unique slugs, and UUID v5 ids that are unique and stable", () => {
		const slugs = CATALOGUE.map(n => n.slug);
		expect(new Set(slugs).size).toBe(slugs.length);
		const ids = [...CATALOGUE.map(n => networkIdFor(n.slug)), ...allTokens.map(({ network, token: t }) => tokenIdFor(network.slug, t.symbol))];
		expect(new Set(ids).size).toBe(ids.length);
		for (const id of ids) expect(id).toMatch(UUID_V5);
		expect(networkIdFor("ethereum")).toBe(networkIdFor("ethereum"));
		expect(networkIdFor("ethereum")).not.toBe(networkIdFor("ethereum-sepolia"));
		expect(tokenIdFor("ethereum", "USDC")).not.toBe(tokenIdFor("ethereum-sepolia", "USDC"));
		expect(CATALOGUE_NAMESPACE).toMatch(/^[0-9a-f-]{36}$/);
	});

	it("gives back the slug of each network id, and nothing for an id it does not make", () => {
		for (const n of CATALOGUE) expect(catalogueSlugOf(networkIdFor(n.slug))).toBe(n.slug);
		expect(catalogueSlugOf(tokenIdFor("ethereum", "ETH"))).toBeUndefined();
		expect(catalogueSlugOf(crypto.randomUUID())).toBeUndefined();
	});

	it("has a main and a test network for every chain type, and nothing else", () => {
		for (const type of CHAIN_TYPES) {
			const of = CATALOGUE.filter(n => n.chainType === type);
			expect(of.some(n => !n.isTestnet)).toBe(true);
			expect(of.some(n => n.isTestnet)).toBe(true);
		}
		for (const n of CATALOGUE) expect(CHAIN_TYPES).toContain(n.chainType);
	});

	it("uses the real EIP-155 chain ids and a chain id unique within each chain type", () => {
		const evm: Record<string, number> = {
			ethereum: 1, "ethereum-sepolia": 11155111, polygon: 137, "polygon-amoy": 80002, bnb: 56, "bnb-testnet": 97,
			arbitrum: 42161, "arbitrum-sepolia": 421614, base: 8453, "base-sepolia": 84532, optimism: 10, "optimism-sepolia": 11155420, "anvil-local": 31337,
		};
		for (const [slug, id] of Object.entries(evm)) expect(catalogueNetwork(slug)).toMatchObject({ chainType: "evm", chainId: id });
		expect(CATALOGUE.filter(n => n.chainType === "evm").map(n => n.slug).sort()).toEqual(Object.keys(evm).sort());
		expect(catalogueNetwork("aptos")?.chainId).toBe(1);
		expect(catalogueNetwork("aptos-testnet")?.chainId).toBe(2);
		expect(catalogueNetwork("ton")?.chainId).toBe(-239);
		expect(catalogueNetwork("ton-testnet")?.chainId).toBe(-3);
		expect(catalogueNetwork("tron")?.chainId).toBe(0x2b6653dc);
		expect(catalogueNetwork("tron-nile")?.chainId).toBe(0xcd8690dc);
		const keys = CATALOGUE.map(n => `${n.chainType}:${n.chainId}`);
		expect(new Set(keys).size).toBe(keys.length);
		for (const n of CATALOGUE) expect(Number.isSafeInteger(n.chainId)).toBe(true);
	});

	it("gives every network exactly one native token with the chain's decimals", () => {
		const decimals: Record<string, number> = { ETH: 18, POL: 18, BNB: 18, SOL: 9, BTC: 8, LTC: 8, TRX: 6, ATOM: 6, DOT: 10, WND: 12, APT: 8, TON: 9 };
		for (const n of CATALOGUE) {
			const natives = n.tokens.filter(t => t.isNative);
			expect(natives).toHaveLength(1);
			expect(natives[0].contractAddress).toBe("");
			expect(natives[0].isStablecoin).toBe(false);
			expect(decimals[natives[0].symbol]).toBe(natives[0].decimals);
		}
	});

	it("has sane tokens: unique symbol per network, decimals the money module can hold, stablecoins flagged", () => {
		for (const n of CATALOGUE) {
			const symbols = n.tokens.map(t => t.symbol);
			expect(new Set(symbols).size).toBe(symbols.length);
		}
		for (const { network, token: t } of allTokens) {
			expect(Number.isInteger(t.decimals)).toBe(true);
			expect(t.decimals).toBeGreaterThanOrEqual(0);
			expect(t.decimals).toBeLessThanOrEqual(MAX_DECIMALS);
			if (t.symbol === "USDC" || t.symbol === "USDT") {
				expect(t.isStablecoin).toBe(true);
				expect(t.decimals).toBe(network.slug === "bnb" ? 18 : 6);
			} else {
				expect(t.isStablecoin).toBe(false);
			}
			if (!t.isNative) {
				// Only the local chain's test token may wait for its address (TEST_USDC_ADDRESS).
				if (t.contractAddress === null) expect(network.devOnly).toBe(true);
				else expect(t.contractAddress.length).toBeGreaterThan(0);
			}
		}
	});

	it("carries the issuers' published stablecoin addresses", () => {
		const expected: Array<[string, string, string, number]> = [
			["ethereum", "USDC", "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48", 6],
			["ethereum", "USDT", "0xdAC17F958D2ee523a2206206994597C13D831ec7", 6],
			["polygon", "USDC", "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359", 6],
			["polygon", "USDT", "0xc2132D05D31c914a87C6611C10748AEb04B58e8F", 6],
			["arbitrum", "USDC", "0xaf88d065e77c8cC2239327C5EDb3A432268e5831", 6],
			["base", "USDC", "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", 6],
			["optimism", "USDC", "0x0b2C639c533813f4Aa9D7837CAf62653d097Ff85", 6],
			["bnb", "USDC", "0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d", 18],
			["bnb", "USDT", "0x55d398326f99059fF775485246999027B3197955", 18],
			["solana", "USDC", "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v", 6],
			["tron", "USDT", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", 6],
			["ethereum-sepolia", "USDC", "0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238", 6],
			["base-sepolia", "USDC", "0x036CbD53842c5426634e7929541eC2318f3dCF7e", 6],
			["arbitrum-sepolia", "USDC", "0x75faf114eafb1BDbe2F0316DF893fd58CE46AA4d", 6],
			["optimism-sepolia", "USDC", "0x5fd84259d66Cd46123540766Be93DFE6D43130D7", 6],
			["polygon-amoy", "USDC", "0x41E94Eb019C0762f9Bfcf9Fb1E58725BfB0e7582", 6],
			["solana-devnet", "USDC", "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU", 6],
			["polkadot-asset-hub", "USDT", "1984", 6],
			["polkadot-asset-hub", "USDC", "1337", 6],
			["aptos", "USDC", "0xbae207659db88bea0cbead6da0ed00aac12edcdda169e591cd41c94180b46f3b", 6],
			["ton", "USDT", "EQCxE6mUtQJKFnGfaROTKOt1lZbDiiX1kCixRv7Nw2Id_sDs", 6],
		];
		for (const [slug, symbol, address, decimals] of expected) expect(token(slug, symbol)).toMatchObject({ contractAddress: address, decimals, isStablecoin: true, isNative: false });
	});

	it("has every address valid for its chain", () => {
		for (const { network, token: t } of allTokens) {
			const a = t.contractAddress;
			if (t.isNative || a === null) continue;
			switch (network.chainType) {
				case "evm":
					expect(getAddress(a)).toBe(a); // EIP-55 checksum as published
					break;
				case "solana":
					expect(new PublicKey(a).toBytes()).toHaveLength(32);
					expect(new PublicKey(a).toBase58()).toBe(a);
					break;
				case "tron":
					expect(TronWeb.isAddress(a)).toBe(true);
					expect(a.startsWith("T")).toBe(true);
					break;
				case "ton": {
					const parsed = Address.parseFriendly(a);
					expect(parsed.isTestOnly).toBe(network.isTestnet);
					expect(parsed.address.workChain).toBe(0);
					break;
				}
				case "move":
					expect(a).toMatch(/^0x[0-9a-f]{64}$/);
					break;
				case "polkadot":
					expect(a).toMatch(/^[1-9]\d*$/);
					break;
				case "cosmos": {
					expect(a).toMatch(/^ibc\/[0-9A-F]{64}$/);
					// An IBC denom is sha256 of its path: the catalogue records the path it stands for.
					const path = (network.listenerConfig.ibcDenoms as Record<string, string>)[a];
					expect(`ibc/${crypto.createHash("sha256").update(path).digest("hex").toUpperCase()}`).toBe(a);
					break;
				}
				default:
					throw new Error(`unexpected token on ${network.chainType}`);
			}
		}
	});

	it("fits the columns and carries usable public URLs and watcher hints", () => {
		for (const n of CATALOGUE) {
			expect(n.slug).toMatch(/^[a-z0-9-]+$/);
			expect(n.slug.length).toBeLessThanOrEqual(NETWORK_COLUMNS.slug);
			expect(n.name.length).toBeLessThanOrEqual(NETWORK_COLUMNS.name);
			expect(n.blockExplorerUrl.length).toBeLessThanOrEqual(NETWORK_COLUMNS.blockExplorerUrl);
			expect(Number.isInteger(n.requiredConfirmations) && n.requiredConfirmations >= 1).toBe(true);
			if (n.devOnly) {
				expect(n.isTestnet).toBe(true);
				expect(n.blockExplorerUrl).toBe("");
				for (const url of n.publicRpcUrls) expect(new URL(url).hostname).toBe("127.0.0.1");
			} else {
				expect(new URL(n.blockExplorerUrl).protocol).toBe("https:");
				// Public endpoints only: no credentials or API keys in a publicly served table.
				for (const url of n.publicRpcUrls) {
					const u = new URL(url);
					expect(["https:", "wss:"]).toContain(u.protocol);
					expect(u.username + u.password + u.search).toBe("");
				}
			}
			expect(n.publicRpcUrls.length).toBeGreaterThan(0);
			expect(typeof n.listenerConfig.chainKey).toBe("string");
			expect(JSON.parse(JSON.stringify(n.listenerConfig))).toEqual(n.listenerConfig);
			for (const t of n.tokens) {
				expect(t.symbol).toMatch(/^[A-Z0-9]+$/);
				expect(t.symbol.length).toBeLessThanOrEqual(TOKEN_COLUMNS.symbol);
				expect(t.name.length).toBeLessThanOrEqual(TOKEN_COLUMNS.name);
				expect((t.contractAddress ?? "").length).toBeLessThanOrEqual(TOKEN_COLUMNS.contractAddress);
			}
		}
	});
});

describe("catalogueRows", () => {
	const anvilUsdc = (rows: ReturnType<typeof catalogueRows>) => rows.tokens.find(t => t.id === tokenIdFor("anvil-local", "USDC"))!;
	const anvil = (rows: ReturnType<typeof catalogueRows>) => rows.networks.find(n => n.id === networkIdFor("anvil-local"))!;

	it("keeps the local network active outside production and forces it off in production", () => {
		expect(anvil(catalogueRows({ production: false }))).toMatchObject({ isActive: true, forceInactive: false });
		expect(anvil(catalogueRows({ production: true }))).toMatchObject({ isActive: false, forceInactive: true });
		const devOnly = new Set(CATALOGUE.filter(n => n.devOnly).map(n => networkIdFor(n.slug)));
		expect(devOnly).toEqual(new Set(["anvil-local", "bitcoin-regtest", "litecoin-regtest"].map(networkIdFor)));
		const main = catalogueRows({ production: true }).networks.filter(n => !devOnly.has(n.id));
		expect(main.every(n => n.isActive && !n.forceInactive)).toBe(true);
	});

	it("leaves the test token's address to the operator unless TEST_USDC_ADDRESS gives it (checksummed)", () => {
		expect(anvilUsdc(catalogueRows({ production: false })).facts).not.toHaveProperty("contractAddress");
		const lower = "0x5fbdb2315678afecb367f032d93f642f64180aa3";
		expect(anvilUsdc(catalogueRows({ production: false, testUsdcAddress: lower })).facts.contractAddress).toBe(getAddress(lower));
		// A mixed-case address whose EIP-55 checksum is wrong is refused.
		expect(() => catalogueRows({ production: false, testUsdcAddress: "0x5FBDB2315678afecb367f032d93F642f64180aa3" })).toThrow(/TEST_USDC_ADDRESS/);
	});

	it("inserts a contract token without a contract inactive, and switches it on with its first address only", () => {
		const rows = catalogueRows({ production: false });
		expect(rows.tokens.filter(t => !isTokenDeployed(t.facts)).map(t => t.id)).toEqual([tokenIdFor("anvil-local", "USDC")]);
		const facts = anvilUsdc(rows).facts;
		const withAddress = { ...facts, contractAddress: "0x5FbDB2315678afecb367f032d93F642f64180aa3" };
		const stored = (isActive: boolean, contractAddress = "") => ({ isActive, contractAddress, isNative: false });
		expect(tokenActivation(stored(true), facts)).toEqual({ isActive: false });
		expect(tokenActivation(stored(false), facts)).toEqual({});
		expect(tokenActivation(stored(false), withAddress)).toEqual({ isActive: true });
		// An address already stored: the operator's switch, whatever the seed writes.
		expect(tokenActivation(stored(false, withAddress.contractAddress), withAddress)).toEqual({});
		expect(tokenActivation(stored(false, withAddress.contractAddress), facts)).toEqual({});
		expect(tokenActivation({ isActive: false, contractAddress: "", isNative: true }, { ...facts, isNative: true, contractAddress: "" })).toEqual({});
	});

	it("gives one row per catalogue network and token", () => {
		const rows = catalogueRows({ production: false });
		expect(rows.networks).toHaveLength(CATALOGUE.length);
		expect(rows.tokens).toHaveLength(allTokens.length);
		for (const t of rows.tokens) expect(rows.networks.some(n => n.id === t.facts.networkId)).toBe(true);
	});
});
