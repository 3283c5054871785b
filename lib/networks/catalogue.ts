/**
 * The catalogue of networks and tokens the gateway supports: plain data, seeded into the
 * `networks` and `tokens` tables at service start (lib/networks/seed.ts). Ids are UUID v5 of a
 * stable slug, so every node, database and test computes the same id for the same row.
 *
 * Addresses and chain facts are the issuers' and chains' published values; docs/networks.md says
 * how each was checked and where a value could not be verified. Every value here is public:
 * never put an RPC URL carrying an API key into this file (the table is served publicly).
 */
import { v5 as uuidv5 } from "uuid";

export const CHAIN_TYPES = ["evm", "solana", "bitcoin", "tron", "cosmos", "polkadot", "move", "ton"] as const;
export type ChainType = (typeof CHAIN_TYPES)[number];

/** Fixed namespace of the catalogue's UUID v5 ids. Never change it: every seeded id derives from it. */
export const CATALOGUE_NAMESPACE = "c73f867d-7ba4-4284-aa2c-64eb2953103a";

export function networkIdFor(networkSlug: string): string {
	return uuidv5(`network:${networkSlug}`, CATALOGUE_NAMESPACE);
}

export function tokenIdFor(networkSlug: string, symbol: string): string {
	return uuidv5(`token:${networkSlug}:${symbol}`, CATALOGUE_NAMESPACE);
}

export interface CatalogueToken {
	symbol: string;
	name: string;
	/**
	 * Where the token lives on its chain: EVM/Tron contract, Solana mint, Aptos fungible-asset
	 * metadata address, TON jetton master, Polkadot Asset Hub asset id, Cosmos IBC denom.
	 * "" for the chain's native coin. `null`: supplied by the operator (TEST_USDC_ADDRESS for the
	 * local chain); the seed inserts "" and never overwrites what is stored.
	 */
	contractAddress: string | null;
	decimals: number;
	isNative: boolean;
	isStablecoin: boolean;
}

/**
 * The payment URI a network's wallets read from a QR code (docs/pay-page.md "Paying"): EIP-681
 * (`ethereum:`), BIP-21 with the coin's own scheme (`bitcoin:`, `litecoin:`), Solana Pay
 * (`solana:`), TON's transfer link (`ton://transfer/`). `null`: its wallets share no payment URI
 * in wide use, so the QR code holds the bare address and the page shows amount and asset beside it.
 */
export const URI_SCHEMES = ["ethereum", "bitcoin", "litecoin", "solana", "ton"] as const;
export type UriScheme = (typeof URI_SCHEMES)[number];

export interface CatalogueNetwork {
	slug: string;
	name: string;
	chainType: ChainType;
	/** The network's payment URI scheme, a fact of the network (Litecoin is the bitcoin chain type with `litecoin:`), not of its chain type. */
	uriScheme: UriScheme | null;
	/** EIP-155 id on EVM; the chain's own numeric id where it has one; else SLIP-44 (see docs/networks.md). */
	chainId: number;
	isTestnet: boolean;
	blockExplorerUrl: string;
	publicRpcUrls: string[];
	requiredConfirmations: number;
	/** Hints for the chain watchers; `chainKey` is the chain's own string identifier. Public data only. */
	listenerConfig: Record<string, unknown>;
	/** Local development chain: never active when NODE_ENV=production. */
	devOnly?: boolean;
	tokens: CatalogueToken[];
}

const native = (symbol: string, name: string, decimals: number): CatalogueToken => ({ symbol, name, contractAddress: "", decimals, isNative: true, isStablecoin: false });
const usdc = (contractAddress: string | null, decimals = 6, name = "USD Coin"): CatalogueToken => ({ symbol: "USDC", name, contractAddress, decimals, isNative: false, isStablecoin: true });
const usdt = (contractAddress: string, decimals = 6): CatalogueToken => ({ symbol: "USDT", name: "Tether USD", contractAddress, decimals, isNative: false, isStablecoin: true });

const ETH = native("ETH", "Ether", 18);

/** EVM networks: confirmations are block counts; watchers poll at about the block time. */
function evm(slug: string, name: string, chainId: number, isTestnet: boolean, blockExplorerUrl: string, publicRpcUrls: string[], requiredConfirmations: number, blockTimeMs: number, tokens: CatalogueToken[]): CatalogueNetwork {
	return {
		slug,
		name,
		chainType: "evm",
		uriScheme: "ethereum",
		chainId,
		isTestnet,
		blockExplorerUrl,
		publicRpcUrls,
		requiredConfirmations,
		listenerConfig: { chainKey: `eip155:${chainId}`, finality: "confirmations", blockTimeMs },
		tokens,
	};
}

export const CATALOGUE: readonly CatalogueNetwork[] = [
	// --- EVM ---
	evm("ethereum", "Ethereum", 1, false, "https://etherscan.io", ["https://ethereum-rpc.publicnode.com", "https://eth.llamarpc.com"], 12, 12_000, [
		ETH,
		usdc("0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48"),
		usdt("0xdAC17F958D2ee523a2206206994597C13D831ec7"),
	]),
	evm("ethereum-sepolia", "Ethereum Sepolia", 11155111, true, "https://sepolia.etherscan.io", ["https://ethereum-sepolia-rpc.publicnode.com", "https://rpc.sepolia.org"], 3, 12_000, [
		ETH,
		usdc("0x1c7D4B196Cb0C7B01d743Fbc6116a902379C7238"),
	]),
	evm("polygon", "Polygon", 137, false, "https://polygonscan.com", ["https://polygon-rpc.com", "https://polygon-bor-rpc.publicnode.com"], 128, 2_000, [
		native("POL", "Polygon Ecosystem Token", 18),
		usdc("0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359"),
		usdt("0xc2132D05D31c914a87C6611C10748AEb04B58e8F"),
	]),
	evm("polygon-amoy", "Polygon Amoy", 80002, true, "https://amoy.polygonscan.com", ["https://rpc-amoy.polygon.technology", "https://polygon-amoy-bor-rpc.publicnode.com"], 10, 2_000, [
		native("POL", "Polygon Ecosystem Token", 18),
		usdc("0x41E94Eb019C0762f9Bfcf9Fb1E58725BfB0e7582"),
	]),
	evm("bnb", "BNB Chain", 56, false, "https://bscscan.com", ["https://bsc-dataseed.bnbchain.org", "https://bsc-rpc.publicnode.com"], 15, 3_000, [
		native("BNB", "BNB", 18),
		// Binance-Peg tokens on BNB Chain have 18 decimals, unlike USDC/USDT elsewhere.
		usdc("0x8AC76a51cc950d9822D68b83fE1Ad97B32Cd580d", 18, "Binance-Peg USD Coin"),
		usdt("0x55d398326f99059fF775485246999027B3197955", 18),
	]),
	evm("bnb-testnet", "BNB Chain Testnet", 97, true, "https://testnet.bscscan.com", ["https://data-seed-prebsc-1-s1.bnbchain.org:8545", "https://bsc-testnet-rpc.publicnode.com"], 3, 3_000, [
		native("BNB", "BNB", 18),
	]),
	evm("arbitrum", "Arbitrum One", 42161, false, "https://arbiscan.io", ["https://arb1.arbitrum.io/rpc", "https://arbitrum-one-rpc.publicnode.com"], 20, 250, [
		ETH,
		usdc("0xaf88d065e77c8cC2239327C5EDb3A432268e5831"),
		usdt("0xFd086bC7CD5C481DCC9C85ebE478A1C0b69FCbb9"),
	]),
	evm("arbitrum-sepolia", "Arbitrum Sepolia", 421614, true, "https://sepolia.arbiscan.io", ["https://sepolia-rollup.arbitrum.io/rpc"], 3, 250, [
		ETH,
		usdc("0x75faf114eafb1BDbe2F0316DF893fd58CE46AA4d"),
	]),
	evm("base", "Base", 8453, false, "https://basescan.org", ["https://mainnet.base.org", "https://base-rpc.publicnode.com"], 10, 2_000, [
		ETH,
		usdc("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"),
	]),
	evm("base-sepolia", "Base Sepolia", 84532, true, "https://sepolia.basescan.org", ["https://sepolia.base.org"], 3, 2_000, [
		ETH,
		usdc("0x036CbD53842c5426634e7929541eC2318f3dCF7e"),
	]),
	evm("optimism", "OP Mainnet", 10, false, "https://optimistic.etherscan.io", ["https://mainnet.optimism.io", "https://optimism-rpc.publicnode.com"], 10, 2_000, [
		ETH,
		usdc("0x0b2C639c533813f4Aa9D7837CAf62653d097Ff85"),
		usdt("0x94b008aA00579c1307B0EF2c499aD98a8ce58e58"),
	]),
	evm("optimism-sepolia", "OP Sepolia", 11155420, true, "https://sepolia-optimism.etherscan.io", ["https://sepolia.optimism.io"], 3, 2_000, [
		ETH,
		usdc("0x5fd84259d66Cd46123540766Be93DFE6D43130D7"),
	]),
	{
		...evm("anvil-local", "Anvil (local)", 31337, true, "", ["http://127.0.0.1:8545"], 1, 1_000, [
			ETH,
			usdc(null, 6, "Test USD Coin"),
		]),
		devOnly: true,
	},

	// --- Solana: SLIP-44 coin type 501 (mainnet) / 1 (testnet); chainKey is the genesis hash ---
	{
		slug: "solana",
		name: "Solana",
		chainType: "solana",
		uriScheme: "solana",
		chainId: 501,
		isTestnet: false,
		blockExplorerUrl: "https://explorer.solana.com",
		publicRpcUrls: ["https://api.mainnet-beta.solana.com"],
		requiredConfirmations: 32,
		listenerConfig: { chainKey: "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d", cluster: "mainnet-beta", commitment: "finalized", finality: "finalized", blockTimeMs: 400 },
		tokens: [
			native("SOL", "Solana", 9),
			usdc("EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"),
			usdt("Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB"),
		],
	},
	{
		slug: "solana-devnet",
		name: "Solana Devnet",
		chainType: "solana",
		uriScheme: "solana",
		chainId: 1,
		isTestnet: true,
		blockExplorerUrl: "https://explorer.solana.com/?cluster=devnet",
		publicRpcUrls: ["https://api.devnet.solana.com"],
		requiredConfirmations: 32,
		listenerConfig: { chainKey: "EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG", cluster: "devnet", commitment: "finalized", finality: "finalized", blockTimeMs: 400 },
		tokens: [native("SOL", "Solana", 9), usdc("4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU")],
	},

	// --- Bitcoin: SLIP-44 0 / 1; Esplora-compatible HTTP APIs ---
	{
		slug: "bitcoin",
		name: "Bitcoin",
		chainType: "bitcoin",
		uriScheme: "bitcoin",
		chainId: 0,
		isTestnet: false,
		blockExplorerUrl: "https://mempool.space",
		publicRpcUrls: ["https://mempool.space/api", "https://blockstream.info/api"],
		requiredConfirmations: 3,
		listenerConfig: { chainKey: "mainnet", bitcoinNetwork: "bitcoin", api: "esplora", finality: "confirmations", blockTimeMs: 600_000 },
		tokens: [native("BTC", "Bitcoin", 8)],
	},
	{
		slug: "bitcoin-testnet4",
		name: "Bitcoin Testnet4",
		chainType: "bitcoin",
		uriScheme: "bitcoin",
		chainId: 1,
		isTestnet: true,
		blockExplorerUrl: "https://mempool.space/testnet4",
		publicRpcUrls: ["https://mempool.space/testnet4/api"],
		requiredConfirmations: 2,
		listenerConfig: { chainKey: "testnet4", bitcoinNetwork: "testnet", api: "esplora", finality: "confirmations", blockTimeMs: 600_000 },
		tokens: [native("BTC", "Bitcoin", 8)],
	},

	{
		slug: "bitcoin-regtest",
		name: "Bitcoin (local regtest)",
		chainType: "bitcoin",
		uriScheme: "bitcoin",
		chainId: 18444,
		isTestnet: true,
		blockExplorerUrl: "",
		publicRpcUrls: ["http://127.0.0.1:18443"],
		requiredConfirmations: 1,
		listenerConfig: { chainKey: "regtest", bitcoinNetwork: "regtest", api: "bitcoind", finality: "confirmations", blockTimeMs: 1_000 },
		devOnly: true,
		tokens: [native("BTC", "Bitcoin", 8)],
	},

	// --- Litecoin: SLIP-44 2 / 1; the bitcoin chain type with Litecoin's address parameters ---
	{
		slug: "litecoin",
		name: "Litecoin",
		chainType: "bitcoin",
		uriScheme: "litecoin",
		chainId: 2,
		isTestnet: false,
		blockExplorerUrl: "https://litecoinspace.org",
		publicRpcUrls: ["https://litecoinspace.org/api"],
		requiredConfirmations: 6,
		listenerConfig: { chainKey: "mainnet", bitcoinNetwork: "litecoin", api: "bitcoind", finality: "confirmations", blockTimeMs: 150_000 },
		tokens: [native("LTC", "Litecoin", 8)],
	},
	{
		slug: "litecoin-testnet",
		name: "Litecoin Testnet",
		chainType: "bitcoin",
		uriScheme: "litecoin",
		chainId: 19335,
		isTestnet: true,
		blockExplorerUrl: "https://litecoinspace.org/testnet",
		publicRpcUrls: ["https://litecoinspace.org/testnet/api"],
		requiredConfirmations: 3,
		listenerConfig: { chainKey: "testnet4", bitcoinNetwork: "litecoin-testnet", api: "bitcoind", finality: "confirmations", blockTimeMs: 150_000 },
		tokens: [native("LTC", "Litecoin", 8)],
	},
	{
		slug: "litecoin-regtest",
		name: "Litecoin (local regtest)",
		chainType: "bitcoin",
		uriScheme: "litecoin",
		chainId: 19444,
		isTestnet: true,
		blockExplorerUrl: "",
		publicRpcUrls: ["http://127.0.0.1:19443"],
		requiredConfirmations: 2,
		listenerConfig: { chainKey: "regtest", bitcoinNetwork: "litecoin-regtest", api: "bitcoind", finality: "confirmations", blockTimeMs: 1_000 },
		devOnly: true,
		tokens: [native("LTC", "Litecoin", 8)],
	},

	// --- Tron: the chain's own id (last 4 bytes of the genesis block id, as eth_chainId returns it) ---
	{
		slug: "tron",
		name: "Tron",
		chainType: "tron",
		uriScheme: null,
		chainId: 728126428, // 0x2b6653dc
		isTestnet: false,
		blockExplorerUrl: "https://tronscan.org",
		publicRpcUrls: ["https://api.trongrid.io"],
		requiredConfirmations: 19,
		listenerConfig: { chainKey: "mainnet", finality: "solidified", blockTimeMs: 3_000 },
		tokens: [native("TRX", "TRON", 6), usdt("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t")],
	},
	{
		slug: "tron-nile",
		name: "Tron Nile",
		chainType: "tron",
		uriScheme: null,
		chainId: 3448148188, // 0xcd8690dc
		isTestnet: true,
		blockExplorerUrl: "https://nile.tronscan.org",
		publicRpcUrls: ["https://nile.trongrid.io"],
		requiredConfirmations: 19,
		listenerConfig: { chainKey: "nile", finality: "solidified", blockTimeMs: 3_000 },
		tokens: [native("TRX", "TRON", 6), usdt("TXYZopYRdj2D9XRtbG411XZZ3kM5VkAeBf")],
	},

	// --- Cosmos: SLIP-44 118 / 1; instant finality ---
	{
		slug: "cosmoshub",
		name: "Cosmos Hub",
		chainType: "cosmos",
		uriScheme: null,
		chainId: 118,
		isTestnet: false,
		blockExplorerUrl: "https://www.mintscan.io/cosmos",
		publicRpcUrls: ["https://cosmos-rpc.publicnode.com:443", "https://rpc.cosmos.directory/cosmoshub"],
		requiredConfirmations: 1,
		listenerConfig: {
			chainKey: "cosmoshub-4",
			bech32Prefix: "cosmos",
			nativeDenom: "uatom",
			finality: "instant",
			blockTimeMs: 6_000,
			// The Hub's IBC denom of Noble's native USDC: sha256("transfer/channel-536/uusdc").
			ibcDenoms: { "ibc/F663521BF1836B00F5F177680F74BFB9A8B5654A694D0D2BC249E03CF2509013": "transfer/channel-536/uusdc" },
		},
		tokens: [
			native("ATOM", "Cosmos Hub Atom", 6),
			usdc("ibc/F663521BF1836B00F5F177680F74BFB9A8B5654A694D0D2BC249E03CF2509013", 6, "USD Coin (Noble)"),
		],
	},
	{
		slug: "cosmoshub-testnet",
		name: "Cosmos Hub Testnet",
		chainType: "cosmos",
		uriScheme: null,
		chainId: 1,
		isTestnet: true,
		blockExplorerUrl: "https://explorer.polypore.xyz/provider",
		publicRpcUrls: ["https://rpc.provider-sentry-01.rs-testnet.polypore.xyz", "https://cosmos-testnet-rpc.polkachu.com"],
		requiredConfirmations: 1,
		listenerConfig: { chainKey: "provider", bech32Prefix: "cosmos", nativeDenom: "uatom", finality: "instant", blockTimeMs: 6_000 },
		tokens: [native("ATOM", "Cosmos Hub Atom", 6)],
	},

	// --- Polkadot Asset Hub: SLIP-44 354 / 1; wait for the finalized head ---
	{
		slug: "polkadot-asset-hub",
		name: "Polkadot Asset Hub",
		chainType: "polkadot",
		uriScheme: null,
		chainId: 354,
		isTestnet: false,
		blockExplorerUrl: "https://assethub-polkadot.subscan.io",
		publicRpcUrls: ["wss://polkadot-asset-hub-rpc.polkadot.io", "wss://statemint-rpc.dwellir.com"],
		requiredConfirmations: 1,
		listenerConfig: { chainKey: "asset-hub-polkadot", ss58Prefix: 0, paraId: 1000, finality: "finalized", blockTimeMs: 12_000 },
		tokens: [
			native("DOT", "Polkadot", 10),
			// Assets pallet ids, not contracts.
			usdt("1984"),
			usdc("1337"),
		],
	},
	{
		slug: "westend-asset-hub",
		name: "Westend Asset Hub",
		chainType: "polkadot",
		uriScheme: null,
		chainId: 1,
		isTestnet: true,
		blockExplorerUrl: "https://assethub-westend.subscan.io",
		publicRpcUrls: ["wss://westend-asset-hub-rpc.polkadot.io", "wss://westmint-rpc.dwellir.com"],
		requiredConfirmations: 1,
		listenerConfig: { chainKey: "asset-hub-westend", ss58Prefix: 42, paraId: 1000, finality: "finalized", blockTimeMs: 12_000 },
		tokens: [native("WND", "Westend", 12)],
	},

	// --- Move (Aptos): the chain's own ids 1 / 2; BFT finality ---
	{
		slug: "aptos",
		name: "Aptos",
		chainType: "move",
		uriScheme: null,
		chainId: 1,
		isTestnet: false,
		blockExplorerUrl: "https://explorer.aptoslabs.com",
		publicRpcUrls: ["https://fullnode.mainnet.aptoslabs.com/v1"],
		requiredConfirmations: 1,
		listenerConfig: { chainKey: "mainnet", chain: "aptos", nativeAsset: "0x1::aptos_coin::AptosCoin", finality: "instant", blockTimeMs: 1_000 },
		tokens: [native("APT", "Aptos Coin", 8), usdc("0xbae207659db88bea0cbead6da0ed00aac12edcdda169e591cd41c94180b46f3b")],
	},
	{
		slug: "aptos-testnet",
		name: "Aptos Testnet",
		chainType: "move",
		uriScheme: null,
		chainId: 2,
		isTestnet: true,
		blockExplorerUrl: "https://explorer.aptoslabs.com/?network=testnet",
		publicRpcUrls: ["https://fullnode.testnet.aptoslabs.com/v1"],
		requiredConfirmations: 1,
		listenerConfig: { chainKey: "testnet", chain: "aptos", nativeAsset: "0x1::aptos_coin::AptosCoin", finality: "instant", blockTimeMs: 1_000 },
		tokens: [native("APT", "Aptos Coin", 8), usdc("0x69091fbab5f7d635ee7ac5098cf0c1efbe31d68fec0f2cd565e8d168daf52832")],
	},

	// --- TON: global ids -239 / -3; masterchain finality ---
	{
		slug: "ton",
		name: "TON",
		chainType: "ton",
		uriScheme: "ton",
		chainId: -239,
		isTestnet: false,
		blockExplorerUrl: "https://tonscan.org",
		publicRpcUrls: ["https://toncenter.com/api/v2/jsonRPC"],
		requiredConfirmations: 1,
		listenerConfig: { chainKey: "mainnet", workchain: 0, finality: "masterchain", blockTimeMs: 5_000 },
		tokens: [native("TON", "Toncoin", 9), usdt("EQCxE6mUtQJKFnGfaROTKOt1lZbDiiX1kCixRv7Nw2Id_sDs")],
	},
	{
		slug: "ton-testnet",
		name: "TON Testnet",
		chainType: "ton",
		uriScheme: "ton",
		chainId: -3,
		isTestnet: true,
		blockExplorerUrl: "https://testnet.tonscan.org",
		publicRpcUrls: ["https://testnet.toncenter.com/api/v2/jsonRPC"],
		requiredConfirmations: 1,
		listenerConfig: { chainKey: "testnet", workchain: 0, finality: "masterchain", blockTimeMs: 5_000 },
		tokens: [native("TON", "Toncoin", 9)],
	},
];

let byId: Map<string, CatalogueNetwork> | null = null;

/** The catalogue entry of a network row (ids are UUID v5 of the slug). */
export function catalogueNetworkById(id: string): CatalogueNetwork | undefined {
	byId ??= new Map(CATALOGUE.map(n => [networkIdFor(n.slug), n]));
	return byId.get(id);
}

export function catalogueNetwork(slug: string): CatalogueNetwork | undefined {
	return CATALOGUE.find(n => n.slug === slug);
}

let slugsById: Map<string, string> | null = null;

/** The catalogue slug of a network id (ids are UUID v5 of the slug); undefined for an id the catalogue does not make. */
export function catalogueSlugOf(networkId: string): string | undefined {
	slugsById ??= new Map(CATALOGUE.map(n => [networkIdFor(n.slug), n.slug]));
	return slugsById.get(networkId);
}
