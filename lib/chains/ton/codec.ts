/**
 * TON: SLIP-10 ed25519 at m/44'/607'/index' from the BIP-39 seed (@ton/crypto's
 * deriveEd25519Path and keyPairFromSeed), deposit address = wallet v4R2 for that key on the
 * basechain (@ton/ton's WalletContractV4). TON's own 24-word mnemonics are a different scheme;
 * this path keeps every chain on the one BIP-39 seed. Deposit addresses are printed
 * non-bounceable (UQ.. / 0Q..), as TON recommends for wallets that may not be deployed yet,
 * with the test-only flag set on testnet. Validation (@ton/core Address) accepts raw
 * `wc:<64 hex>` and user-friendly forms; a user-friendly address must carry the test-only flag
 * exactly when the network is a testnet.
 */
import { Address } from "@ton/core";
import { deriveEd25519Path, keyPairFromSeed } from "@ton/crypto";
import { WalletContractV4 } from "@ton/ton";
import { assertIndex, assertSeed, cleanAddressInput, toHex } from "../hd";
import type { ChainCodec } from "../types";

const RAW_RE = /^(0|-1):[0-9a-fA-F]{64}$/;
const BASECHAIN = 0;

function derivationPath(index: number): string {
	assertIndex(index);
	return `m/44'/607'/${index}'`;
}

async function privateKey(seed: Uint8Array, index: number): Promise<Buffer> {
	assertSeed(seed);
	assertIndex(index);
	return deriveEd25519Path(Buffer.from(seed), [44, 607, index]);
}

export const tonCodec: ChainCodec = {
	chainType: "ton",
	derivationPath,
	async deriveAddress(seed, params, index) {
		const { publicKey } = keyPairFromSeed(await privateKey(seed, index));
		const wallet = WalletContractV4.create({ workchain: BASECHAIN, publicKey });
		const address = wallet.address.toString({ urlSafe: true, bounceable: false, testOnly: params.isTestnet });
		return { address, path: derivationPath(index), publicKey: toHex(publicKey) };
	},
	async derivePrivateKey(seed, _params, index) {
		return new Uint8Array(await privateKey(seed, index));
	},
	normalizeAddress(address, params) {
		const s = cleanAddressInput(address, 67);
		if (!s) return null;
		try {
			if (RAW_RE.test(s)) return Address.parseRaw(s).toRawString();
			if (!Address.isFriendly(s)) return null;
			const parsed = Address.parseFriendly(s);
			if (parsed.isTestOnly !== params.isTestnet) return null;
			if (parsed.address.workChain !== 0 && parsed.address.workChain !== -1) return null;
			return parsed.address.toString({ urlSafe: true, bounceable: parsed.isBounceable, testOnly: parsed.isTestOnly });
		} catch {
			return null;
		}
	},
};
