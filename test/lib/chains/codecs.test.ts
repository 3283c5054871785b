import { Secp256k1Wallet } from "@cosmjs/amino";
import { Slip10, Slip10Curve, stringToPath } from "@cosmjs/crypto";
import { Keyring } from "@polkadot/keyring";
import { Keypair } from "@solana/web3.js";
import { keyPairFromSeed } from "@ton/crypto";
import { WalletContractV4 } from "@ton/ton";
import { payments, networks } from "bitcoinjs-lib";
import { Wallet } from "ethers";
import * as ecc from "tiny-secp256k1";
import { utils as tronUtils } from "tronweb";
import { CHAIN_TYPES, chainParamsFor, codecFor, isChainType, type ChainNetworkParams, type ChainType } from "../../../lib/chains";
import { CATALOGUE } from "../../../lib/networks/catalogue";
import { moveAddressOf } from "../../../lib/chains/move/codec";
import { seedFromMnemonic } from "../../../lib/chains/seed";
import { ABANDON_SEED, MAINNET, TESTNET } from "./fixtures";

const ED25519_CHAINS: ChainType[] = ["solana", "polkadot", "move", "ton"];

describe("lib/chains registry", () => {
	it("has one codec per chain type, named after it", () => {
		expect([...CHAIN_TYPES].sort()).toEqual(["bitcoin", "cosmos", "evm", "move", "polkadot", "solana", "ton", "tron"]);
		for (const type of CHAIN_TYPES) {
			expect(isChainType(type)).toBe(true);
			expect(codecFor(type).chainType).toBe(type);
			expect(codecFor(type)).toBe(codecFor(type));
		}
	});

	it("rejects unknown chain types", () => {
		for (const bad of ["ethereum", "EVM", "", "sui", "__proto__", "toString"]) {
			expect(isChainType(bad)).toBe(false);
			expect(() => codecFor(bad as ChainType)).toThrow(/Unknown chain type/);
		}
		expect(isChainType(undefined)).toBe(false);
		expect(isChainType(1)).toBe(false);
	});
});

describe.each(CHAIN_TYPES.map(t => [t]))("%s codec", (type: ChainType) => {
	const codec = codecFor(type);
	const other = seedFromMnemonic("legal winner thank year wave sausage worth useful legal winner thank yellow");

	it.each([
		["mainnet", MAINNET],
		["testnet", TESTNET],
	])("derives deterministic, distinct, valid addresses on %s", async (_name, params: ChainNetworkParams) => {
		const first = await codec.deriveAddress(ABANDON_SEED, params, 0);
		expect(await codec.deriveAddress(ABANDON_SEED, params, 0)).toEqual(first);
		expect(first.path).toBe(codec.derivationPath(0, params));

		const addresses = new Set<string>();
		const keys = new Set<string>();
		for (const index of [0, 1, 2, 7, 2 ** 31 - 1]) {
			const derived = await codec.deriveAddress(ABANDON_SEED, params, index);
			expect(derived.path).toBe(codec.derivationPath(index, params));
			expect(derived.path).toContain(String(index));
			// The derived form is already canonical for its own network.
			expect(codec.normalizeAddress(derived.address, params)).toBe(derived.address);
			addresses.add(derived.address);
			keys.add(derived.publicKey);
		}
		expect(addresses.size).toBe(5);
		expect(keys.size).toBe(5);
		// Another seed, another address.
		expect((await codec.deriveAddress(other, params, 0)).address).not.toBe(first.address);
	});

	it("refuses indices outside 0..2^31-1 and seeds of the wrong size", async () => {
		for (const index of [-1, 1.5, 2 ** 31, Number.NaN, Number.POSITIVE_INFINITY]) {
			expect(() => codec.derivationPath(index, MAINNET)).toThrow(RangeError);
			await expect(codec.deriveAddress(ABANDON_SEED, MAINNET, index)).rejects.toThrow(RangeError);
			await expect(codec.derivePrivateKey(ABANDON_SEED, MAINNET, index)).rejects.toThrow(RangeError);
		}
		for (const seed of [new Uint8Array(0), new Uint8Array(15), new Uint8Array(65)]) {
			await expect(codec.deriveAddress(seed, MAINNET, 0)).rejects.toThrow(TypeError);
		}
	});

	it("gives a 32-byte private key that differs per index", async () => {
		const k0 = await codec.derivePrivateKey(ABANDON_SEED, MAINNET, 0);
		const k1 = await codec.derivePrivateKey(ABANDON_SEED, MAINNET, 1);
		expect(k0).toHaveLength(32);
		expect(Buffer.from(k0).equals(Buffer.from(k1))).toBe(false);
		expect(Buffer.from(await codec.derivePrivateKey(ABANDON_SEED, MAINNET, 0)).equals(Buffer.from(k0))).toBe(true);
	});

	it("rejects garbage", () => {
		for (const params of [MAINNET, TESTNET]) {
			for (const bad of ["", "   ", "not an address", "0x", "0:", "T", "1", "bc1", "cosmos1", "💸", "a".repeat(5000)]) {
				expect(codec.normalizeAddress(bad, params)).toBeNull();
			}
			for (const bad of [null, undefined, 42, {}, ["x"]]) {
				expect(codec.normalizeAddress(bad as unknown as string, params)).toBeNull();
			}
		}
	});

	it("takes surrounding whitespace off but nothing inside", async () => {
		const { address } = await codec.deriveAddress(ABANDON_SEED, MAINNET, 3);
		expect(codec.normalizeAddress(`  ${address}\n`, MAINNET)).toBe(address);
		const mid = Math.floor(address.length / 2);
		expect(codec.normalizeAddress(`${address.slice(0, mid)} ${address.slice(mid)}`, MAINNET)).toBeNull();
	});

	if (ED25519_CHAINS.includes(type)) {
		it("derives ed25519 keys by SLIP-10 (checked against @cosmjs/crypto's implementation)", async () => {
			for (const params of [MAINNET, TESTNET, { isTestnet: false, moveVariant: "sui" } as ChainNetworkParams]) {
				for (const index of [0, 5]) {
					const expected = Slip10.derivePath(Slip10Curve.Ed25519, ABANDON_SEED, stringToPath(codec.derivationPath(index, params))).privkey;
					const actual = await codec.derivePrivateKey(ABANDON_SEED, params, index);
					expect(Buffer.from(actual).toString("hex")).toBe(Buffer.from(expected).toString("hex"));
				}
			}
		});
	} else {
		it("derives secp256k1 keys by BIP-32 (checked against @cosmjs/crypto's implementation)", async () => {
			for (const params of [MAINNET, TESTNET]) {
				for (const index of [0, 5]) {
					const expected = Slip10.derivePath(Slip10Curve.Secp256k1, ABANDON_SEED, stringToPath(codec.derivationPath(index, params))).privkey;
					const actual = await codec.derivePrivateKey(ABANDON_SEED, params, index);
					expect(Buffer.from(actual).toString("hex")).toBe(Buffer.from(expected).toString("hex"));
				}
			}
		});
	}
});

/** The private key must control the deposit address, or funds could never be swept. */
describe("derivePrivateKey controls the derived address", () => {
	const index = 4;

	it("evm", async () => {
		const codec = codecFor("evm");
		const key = await codec.derivePrivateKey(ABANDON_SEED, MAINNET, index);
		expect(new Wallet(Buffer.from(key).toString("hex")).address).toBe((await codec.deriveAddress(ABANDON_SEED, MAINNET, index)).address);
	});

	it("solana", async () => {
		const codec = codecFor("solana");
		const key = await codec.derivePrivateKey(ABANDON_SEED, MAINNET, index);
		expect(Keypair.fromSeed(key).publicKey.toBase58()).toBe((await codec.deriveAddress(ABANDON_SEED, MAINNET, index)).address);
	});

	it("bitcoin", async () => {
		const codec = codecFor("bitcoin");
		for (const [params, network] of [
			[MAINNET, networks.bitcoin],
			[TESTNET, networks.testnet],
		] as const) {
			const key = await codec.derivePrivateKey(ABANDON_SEED, params, index);
			const pubkey = Buffer.from(ecc.pointFromScalar(key, true)!);
			expect(payments.p2wpkh({ pubkey, network }).address).toBe((await codec.deriveAddress(ABANDON_SEED, params, index)).address);
		}
	});

	it("tron", async () => {
		const codec = codecFor("tron");
		const key = await codec.derivePrivateKey(ABANDON_SEED, MAINNET, index);
		expect(tronUtils.address.fromPrivateKey(Buffer.from(key).toString("hex"))).toBe((await codec.deriveAddress(ABANDON_SEED, MAINNET, index)).address);
	});

	it("cosmos", async () => {
		const codec = codecFor("cosmos");
		const params = { isTestnet: false, bech32Prefix: "osmo" };
		const key = await codec.derivePrivateKey(ABANDON_SEED, params, index);
		const [account] = await (await Secp256k1Wallet.fromKey(key, "osmo")).getAccounts();
		expect(account.address).toBe((await codec.deriveAddress(ABANDON_SEED, params, index)).address);
	});

	it("polkadot", async () => {
		const codec = codecFor("polkadot");
		const key = await codec.derivePrivateKey(ABANDON_SEED, TESTNET, index);
		const pair = new Keyring({ type: "ed25519", ss58Format: 42 }).addFromSeed(key);
		expect(pair.address).toBe((await codec.deriveAddress(ABANDON_SEED, TESTNET, index)).address);
	});

	it("move (aptos and sui)", async () => {
		const codec = codecFor("move");
		for (const variant of ["aptos", "sui"] as const) {
			const params = { isTestnet: false, moveVariant: variant };
			const key = await codec.derivePrivateKey(ABANDON_SEED, params, index);
			const publicKey = Keypair.fromSeed(key).publicKey.toBytes(); // plain ed25519 from the seed
			expect(moveAddressOf(publicKey, variant)).toBe((await codec.deriveAddress(ABANDON_SEED, params, index)).address);
		}
	});

	it("ton", async () => {
		const codec = codecFor("ton");
		const key = await codec.derivePrivateKey(ABANDON_SEED, MAINNET, index);
		const wallet = WalletContractV4.create({ workchain: 0, publicKey: keyPairFromSeed(Buffer.from(key)).publicKey });
		const derived = await codec.deriveAddress(ABANDON_SEED, MAINNET, index);
		expect(wallet.address.toString({ bounceable: false, urlSafe: true })).toBe(derived.address);
	});
});

describe("chainParamsFor", () => {
	it("maps a network row's chain facts to codec params", () => {
		expect(chainParamsFor({ chainType: "evm", isTestnet: false, listenerConfig: { chainKey: "eip155:1" } })).toEqual({ isTestnet: false });
		expect(chainParamsFor({ chainType: "cosmos", isTestnet: true, listenerConfig: { bech32Prefix: "osmo" } })).toEqual({ isTestnet: true, bech32Prefix: "osmo" });
		expect(chainParamsFor({ chainType: "polkadot", isTestnet: false, listenerConfig: { ss58Prefix: 2 } })).toEqual({ isTestnet: false, ss58Prefix: 2 });
		expect(chainParamsFor({ chainType: "bitcoin", isTestnet: false, listenerConfig: { bitcoinNetwork: "bitcoin" } })).toEqual({ isTestnet: false, bitcoinNetwork: "bitcoin" });
		expect(chainParamsFor({ chainType: "move", isTestnet: true, listenerConfig: { chain: "sui" } })).toEqual({ isTestnet: true, moveVariant: "sui" });
		expect(chainParamsFor({ chainType: "ton", isTestnet: true, listenerConfig: null })).toEqual({ isTestnet: true });
	});

	it("refuses chain facts of the wrong type", () => {
		expect(() => chainParamsFor({ chainType: "polkadot", isTestnet: false, listenerConfig: { ss58Prefix: "0" } })).toThrow(TypeError);
		expect(() => chainParamsFor({ chainType: "move", isTestnet: false, listenerConfig: { chain: "starcoin" } })).toThrow(TypeError);
		expect(() => chainParamsFor({ chainType: "cosmos", isTestnet: false, listenerConfig: { bech32Prefix: 5 } })).toThrow(TypeError);
	});

	it("works for every network of the catalogue: derived deposit addresses validate for their network", async () => {
		for (const network of CATALOGUE) {
			const params = chainParamsFor(network);
			const codec = codecFor(network.chainType);
			const { address } = await codec.deriveAddress(ABANDON_SEED, params, 0);
			expect([network.slug, codec.normalizeAddress(address, params)]).toEqual([network.slug, address]);
		}
	});

	it("accepts bitcoinjs' and testnet4's network names", async () => {
		const codec = codecFor("bitcoin");
		expect((await codec.deriveAddress(ABANDON_SEED, { isTestnet: false, bitcoinNetwork: "bitcoin" }, 0)).address).toBe("bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu");
		expect((await codec.deriveAddress(ABANDON_SEED, { isTestnet: true, bitcoinNetwork: "testnet4" }, 0)).address).toBe("tb1q6rz28mcfaxtmd6v789l9rrlrusdprr9pqcpvkl");
		expect(() => codec.derivationPath(0, { isTestnet: true, bitcoinNetwork: "bitcoin" })).toThrow(TypeError);
		expect(() => codec.derivationPath(0, { isTestnet: true, bitcoinNetwork: "toString" as "testnet" })).toThrow(TypeError);
	});
});
