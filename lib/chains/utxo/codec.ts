/**
 * Bitcoin: BIP-84 native segwit (P2WPKH, bc1q/tb1q) at m/84'/0'/0'/0/index on mainnet and
 * m/84'/1'/0'/0/index on test networks, via bitcoinjs-lib v6 + bip32 + tiny-secp256k1.
 * Validation accepts every standard output type of the network (P2PKH, P2SH, P2WPKH, P2WSH,
 * P2TR) and rejects the other network's addresses and unassigned segwit versions.
 *
 * Litecoin uses the same code with its own parameters (`bitcoinNetwork` "litecoin",
 * "litecoin-testnet", "litecoin-regtest"): bech32 hrp ltc / tltc / rltc, P2PKH version 0x30 (L...)
 * / 0x6f, P2SH 0x32 (M...) / 0x3a, BIP-44 coin type 2 on mainnet (m/84'/2'/0'/0/index) and 1 on
 * test networks. Litecoin's legacy P2SH version 0x05 ("3..." addresses, before 2017) is refused:
 * bitcoinjs knows one P2SH version a network, and "3..." is also Bitcoin's, a classic mix-up.
 * Parameters from Litecoin Core's chainparams.cpp (base58Prefixes, bech32_hrp).
 */
import { address as btcAddress, initEccLib, networks, payments, type Network } from "bitcoinjs-lib";
import * as ecc from "tiny-secp256k1";
import { assertIndex, assertSeed, cleanAddressInput, secp256k1PrivateKey, toHex, bip32 } from "../hd";
import type { BitcoinNetworkName, ChainCodec, ChainNetworkParams } from "../types";

// Taproot (P2TR) encoding/decoding needs an ECC library; bitcoinjs keeps it globally.
initEccLib(ecc);

const NETWORKS: Record<BitcoinNetworkName, Network> = {
	mainnet: networks.bitcoin,
	bitcoin: networks.bitcoin,
	testnet: networks.testnet,
	testnet4: networks.testnet, // same address formats as testnet3
	signet: networks.testnet,
	regtest: networks.regtest,
	litecoin: {
		messagePrefix: "\x19Litecoin Signed Message:\n",
		bech32: "ltc",
		bip32: { public: 0x019da462, private: 0x019d9cfe },
		pubKeyHash: 0x30,
		scriptHash: 0x32,
		wif: 0xb0,
	},
	"litecoin-testnet": {
		messagePrefix: "\x19Litecoin Signed Message:\n",
		bech32: "tltc",
		bip32: { public: 0x043587cf, private: 0x04358394 },
		pubKeyHash: 0x6f,
		scriptHash: 0x3a,
		wif: 0xef,
	},
	"litecoin-regtest": {
		messagePrefix: "\x19Litecoin Signed Message:\n",
		bech32: "rltc",
		bip32: { public: 0x043587cf, private: 0x04358394 },
		pubKeyHash: 0x6f,
		scriptHash: 0x3a,
		wif: 0xef,
	},
};
const MAINNETS: readonly BitcoinNetworkName[] = ["mainnet", "bitcoin", "litecoin"];

/** The bitcoinjs network parameters of a network row's params (Bitcoin or Litecoin). */
export function bitcoinjsNetwork(params?: ChainNetworkParams): Network {
	return NETWORKS[bitcoinNetworkName(params)];
}

export function bitcoinNetworkName(params?: ChainNetworkParams): BitcoinNetworkName {
	const isTestnet = params?.isTestnet ?? false;
	const name = params?.bitcoinNetwork ?? (isTestnet ? "testnet" : "mainnet");
	if (!Object.prototype.hasOwnProperty.call(NETWORKS, name)) throw new TypeError(`Unknown bitcoin network: ${name}`);
	if (MAINNETS.includes(name) === isTestnet) {
		throw new TypeError(`bitcoinNetwork ${name} contradicts isTestnet=${isTestnet}`);
	}
	return name;
}

function isBase58Check(s: string): boolean {
	try {
		btcAddress.fromBase58Check(s);
		return true;
	} catch {
		return false;
	}
}

function derivationPath(index: number, params?: ChainNetworkParams): string {
	assertIndex(index);
	const name = bitcoinNetworkName(params);
	// SLIP-44: Bitcoin 0, Litecoin 2, every test network 1.
	const coin = name === "litecoin" ? 2 : MAINNETS.includes(name) ? 0 : 1;
	return `m/84'/${coin}'/0'/0/${index}`;
}

export const bitcoinCodec: ChainCodec = {
	chainType: "bitcoin",
	derivationPath,
	async deriveAddress(seed, params, index) {
		assertSeed(seed);
		const network = NETWORKS[bitcoinNetworkName(params)];
		const path = derivationPath(index, params);
		const pubkey = bip32().fromSeed(Buffer.from(seed)).derivePath(path).publicKey;
		const { address } = payments.p2wpkh({ pubkey, network });
		if (!address) throw new Error("P2WPKH address could not be encoded");
		return { address, path, publicKey: toHex(pubkey) };
	},
	async derivePrivateKey(seed, params, index) {
		assertSeed(seed);
		return secp256k1PrivateKey(seed, derivationPath(index, params));
	},
	normalizeAddress(address, params) {
		const s = cleanAddressInput(address, 90);
		if (!s) return null;
		const network = NETWORKS[bitcoinNetworkName(params)];
		try {
			// Segwit v2+ is unassigned (anyone-can-spend today): never a withdrawal target.
			if (!isBase58Check(s) && btcAddress.fromBech32(s).version > 1) return null;
			const script = btcAddress.toOutputScript(s, network);
			// Re-encoding gives the canonical form (lower-case bech32) and proves the type is standard.
			return btcAddress.fromOutputScript(script, network);
		} catch {
			return null;
		}
	},
};
