/**
 * EVM: BIP-44 m/44'/60'/0'/0/index (the path MetaMask and Ledger Live use), keys and EIP-55
 * checksums from ethers v6. Addresses do not encode the network: the same rules on every chain.
 */
import { HDNodeWallet, ZeroAddress } from "ethers";
import { assertIndex, assertSeed, cleanAddressInput } from "../hd";
import type { ChainCodec } from "../types";
import { checksumAddress } from "./checksum";

const HEX_ADDRESS = /^0x[0-9a-fA-F]{40}$/;

function derivationPath(index: number): string {
	assertIndex(index);
	return `m/44'/60'/0'/0/${index}`;
}

function node(seed: Uint8Array, index: number): HDNodeWallet {
	assertSeed(seed);
	return HDNodeWallet.fromSeed(seed).derivePath(derivationPath(index));
}

export const evmCodec: ChainCodec = {
	chainType: "evm",
	derivationPath,
	async deriveAddress(seed, _params, index) {
		const wallet = node(seed, index);
		return { address: wallet.address, path: derivationPath(index), publicKey: wallet.publicKey.slice(2) };
	},
	async derivePrivateKey(seed, _params, index) {
		return Buffer.from(node(seed, index).privateKey.slice(2), "hex");
	},
	normalizeAddress(address) {
		const s = cleanAddressInput(address);
		// The regex keeps out what getAddress would also accept: ICAP (XE...) and a missing 0x.
		if (!s || !HEX_ADDRESS.test(s)) return null;
		// Single-case input has no checksum to check; mixed case must be a valid EIP-55 checksum.
		const checksummed = checksumAddress(s);
		// The zero address burns whatever is sent to it.
		return checksummed === ZeroAddress ? null : checksummed;
	},
};
