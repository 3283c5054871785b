import { Address } from "@ton/core";
import { address as btcAddress } from "bitcoinjs-lib";
import { encodeBase58, getAddress } from "ethers";
import { toBech32 } from "@cosmjs/encoding";
import { encodeAddress } from "@polkadot/util-crypto";
import { codecFor, type ChainNetworkParams } from "../../../lib/chains";
import { seedFromMnemonic } from "../../../lib/chains/seed";
import { ABANDON_SEED, MAINNET, TESTNET } from "./fixtures";

/** Changes the last character to another one of the same alphabet class, breaking the checksum. */
function breakLast(address: string, alphabet: string): string {
	const last = address[address.length - 1];
	const replacement = alphabet[(alphabet.indexOf(last) + 1) % alphabet.length];
	return address.slice(0, -1) + replacement;
}

const BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
const BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l";

async function addressAt(type: Parameters<typeof codecFor>[0], params: ChainNetworkParams, index: number, seed = ABANDON_SEED) {
	return codecFor(type).deriveAddress(seed, params, index);
}

describe("evm addresses", () => {
	const evm = codecFor("evm");

	it("derives the published BIP-44 vectors of the test phrase", async () => {
		expect(await addressAt("evm", MAINNET, 0)).toMatchObject({ address: "0x9858EfFD232B4033E47d90003D41EC34EcaEda94", path: "m/44'/60'/0'/0/0" });
		expect((await addressAt("evm", MAINNET, 1)).address).toBe("0x6Fac4D18c912343BF86fa7049364Dd4E424Ab9C0");
		// Same address on every EVM network.
		expect((await addressAt("evm", TESTNET, 0)).address).toBe("0x9858EfFD232B4033E47d90003D41EC34EcaEda94");
	});

	it("checksums single-case input and keeps a valid checksum", () => {
		const good = "0x9858EfFD232B4033E47d90003D41EC34EcaEda94";
		expect(evm.normalizeAddress(good.toLowerCase(), MAINNET)).toBe(good);
		expect(evm.normalizeAddress("0x" + good.slice(2).toUpperCase(), TESTNET)).toBe(good);
		expect(evm.normalizeAddress(good, MAINNET)).toBe(good);
	});

	it("rejects a mixed-case address whose checksum is wrong", () => {
		const good = "0x9858EfFD232B4033E47d90003D41EC34EcaEda94";
		// Flip the case of one letter: still mixed case, checksum now wrong.
		const i = good.indexOf("E");
		const bad = good.slice(0, i) + "e" + good.slice(i + 1);
		expect(() => getAddress(bad)).toThrow();
		expect(evm.normalizeAddress(bad, MAINNET)).toBeNull();
	});

	it("rejects wrong lengths, missing 0x, non-hex, ICAP and the zero address", () => {
		const hex = "9858effd232b4033e47d90003d41ec34ecaeda94";
		for (const bad of ["0x" + hex.slice(1), "0x" + hex + "0", hex, "0x" + hex.slice(2) + "zz", "XE7338O073KYGTWWZN0F2WZ0R8PX5ZPPZS", "0x" + "0".repeat(40)]) {
			expect(evm.normalizeAddress(bad, MAINNET)).toBeNull();
		}
	});
});

describe("solana addresses", () => {
	const sol = codecFor("solana");

	it("derives the published vector of the test phrase (Phantom / Solflare path)", async () => {
		expect(await addressAt("solana", MAINNET, 0)).toMatchObject({ address: "HAgk14JpMQLgt6rVgv7cBQFJWFto5Dqxi472uT3DKpqk", path: "m/44'/501'/0'/0'" });
		expect((await addressAt("solana", MAINNET, 1)).path).toBe("m/44'/501'/1'/0'");
	});

	it("accepts any 32-byte base58 key and rejects other lengths and alphabets", () => {
		const key32 = encodeBase58(new Uint8Array(32).fill(7));
		expect(sol.normalizeAddress(key32, MAINNET)).toBe(key32);
		expect(sol.normalizeAddress(encodeBase58(new Uint8Array(31).fill(7)), MAINNET)).toBeNull();
		expect(sol.normalizeAddress(encodeBase58(new Uint8Array(33).fill(7)), MAINNET)).toBeNull();
		// 0, O, I and l are not base58.
		expect(sol.normalizeAddress("HAgk14JpMQLgt6rVgv7cBQFJWFto5Dqxi472uT3DKpq0", MAINNET)).toBeNull();
		expect(sol.normalizeAddress("0x9858EfFD232B4033E47d90003D41EC34EcaEda94", MAINNET)).toBeNull();
		expect(sol.normalizeAddress("TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH", MAINNET)).toBeNull();
		// The System Program id (all-zero key).
		expect(sol.normalizeAddress("11111111111111111111111111111111", MAINNET)).toBeNull();
	});
});

describe("bitcoin addresses", () => {
	const btc = codecFor("bitcoin");

	it("derives the BIP-84 vectors of the test phrase on mainnet and testnet", async () => {
		expect(await addressAt("bitcoin", MAINNET, 0)).toMatchObject({ address: "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu", path: "m/84'/0'/0'/0/0" });
		expect((await addressAt("bitcoin", MAINNET, 1)).address).toBe("bc1qnjg0jd8228aq7egyzacy8cys3knf9xvrerkf9g");
		expect(await addressAt("bitcoin", TESTNET, 0)).toMatchObject({ address: "tb1q6rz28mcfaxtmd6v789l9rrlrusdprr9pqcpvkl", path: "m/84'/1'/0'/0/0" });
		expect((await addressAt("bitcoin", TESTNET, 1)).address).toBe("tb1qd7spv5q28348xl4myc8zmh983w5jx32cjhkn97");
		// Signet shares testnet's formats; regtest has its own bech32 prefix.
		expect((await addressAt("bitcoin", { isTestnet: true, bitcoinNetwork: "signet" }, 0)).address).toBe("tb1q6rz28mcfaxtmd6v789l9rrlrusdprr9pqcpvkl");
		expect((await addressAt("bitcoin", { isTestnet: true, bitcoinNetwork: "regtest" }, 0)).address).toMatch(/^bcrt1q/);
	});

	it("accepts every standard address type of its network", () => {
		const mainnet = [
			"1LqBGSKuX5yYUonjxT5qGfpUsXKYYWeabA", // P2PKH, m/44'/0'/0'/0/0 of the test phrase
			"37VucYSaXLCAsxYyAPfbSi9eh4iEcbShgf", // P2SH-P2WPKH, BIP-49 vector
			"bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu", // P2WPKH
			"bc1p5cyxnuxmeuwuvkwfem96lqzszd02n6xdcjrs20cac6yqjjwudpxqkedrcr", // P2TR, BIP-86 vector
			btcAddress.toBech32(Buffer.alloc(32, 9), 0, "bc"), // P2WSH
		];
		for (const a of mainnet) {
			expect(btc.normalizeAddress(a, MAINNET)).toBe(a);
			expect(btc.normalizeAddress(a, TESTNET)).toBeNull();
		}
		const testnet = ["mkpZhYtJu2r87Js3pDiWJDmPte2NRZ8bJV", "2Mww8dCYPUpKHofjgcXcBCEGmniw9CoaiD2", "tb1q6rz28mcfaxtmd6v789l9rrlrusdprr9pqcpvkl"];
		for (const a of testnet) {
			expect(btc.normalizeAddress(a, TESTNET)).toBe(a);
			expect(btc.normalizeAddress(a, { isTestnet: true, bitcoinNetwork: "signet" })).toBe(a);
			expect(btc.normalizeAddress(a, MAINNET)).toBeNull();
		}
	});

	it("lower-cases all-upper-case bech32 and rejects mixed case and bad checksums", () => {
		const a = "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu";
		expect(btc.normalizeAddress(a.toUpperCase(), MAINNET)).toBe(a);
		expect(btc.normalizeAddress("bc1qcR8te4kr609gcawutmrza0j4xv80jy8z306fyu", MAINNET)).toBeNull();
		expect(btc.normalizeAddress(breakLast(a, BECH32), MAINNET)).toBeNull();
		expect(btc.normalizeAddress(breakLast("1LqBGSKuX5yYUonjxT5qGfpUsXKYYWeabA", BASE58), MAINNET)).toBeNull();
		// Truncated.
		expect(btc.normalizeAddress(a.slice(0, -4), MAINNET)).toBeNull();
	});

	it("rejects unassigned segwit versions (anyone-can-spend today)", () => {
		const v2 = btcAddress.toBech32(Buffer.alloc(32, 1), 2, "bc");
		expect(btcAddress.fromBech32(v2).version).toBe(2);
		expect(btc.normalizeAddress(v2, MAINNET)).toBeNull();
	});

	it("refuses network params that contradict each other", () => {
		expect(() => btc.normalizeAddress("bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu", { isTestnet: true, bitcoinNetwork: "mainnet" })).toThrow(TypeError);
		expect(() => btc.derivationPath(0, { isTestnet: false, bitcoinNetwork: "testnet" })).toThrow(TypeError);
	});
});

describe("litecoin addresses (the bitcoin codec with Litecoin's parameters)", () => {
	const btc = codecFor("bitcoin");
	const LTC = { isTestnet: false, bitcoinNetwork: "litecoin" } as const;
	const TLTC = { isTestnet: true, bitcoinNetwork: "litecoin-testnet" } as const;
	const RLTC = { isTestnet: true, bitcoinNetwork: "litecoin-regtest" } as const;

	it("derives BIP-84 addresses at coin type 2 on mainnet and 1 on test networks", async () => {
		// BIP-84 test phrase at m/84'/2'/0'/0/0: the Litecoin vector wallets (Trezor, Electrum-LTC) show.
		expect(await addressAt("bitcoin", LTC, 0)).toMatchObject({ address: "ltc1qjmxnz78nmc8nq77wuxh25n2es7rzm5c2rkk4wh", path: "m/84'/2'/0'/0/0" });
		// Regtest vectors computed by litecoind 0.21 itself: `deriveaddresses "wpkh(<tprv of the test phrase>/84h/1h/0h/0/i)"`.
		expect(await addressAt("bitcoin", RLTC, 0)).toMatchObject({ address: "rltc1q6rz28mcfaxtmd6v789l9rrlrusdprr9puuzgkg", path: "m/84'/1'/0'/0/0" });
		expect((await addressAt("bitcoin", RLTC, 1)).address).toBe("rltc1qd7spv5q28348xl4myc8zmh983w5jx32cwn4h9f");
		// The same key on testnet: same witness program, hrp tltc.
		const t = (await addressAt("bitcoin", TLTC, 0)).address;
		expect(t).toMatch(/^tltc1q/);
		expect(btcAddress.fromBech32(t).data).toEqual(btcAddress.fromBech32("tb1q6rz28mcfaxtmd6v789l9rrlrusdprr9pqcpvkl").data);
	});

	it("accepts Litecoin's address types and refuses Bitcoin's", () => {
		const hash = Buffer.alloc(20, 7);
		const mainnet = [btcAddress.toBase58Check(hash, 0x30), btcAddress.toBase58Check(hash, 0x32), "ltc1qjmxnz78nmc8nq77wuxh25n2es7rzm5c2rkk4wh", btcAddress.toBech32(Buffer.alloc(32, 9), 0, "ltc")];
		expect(mainnet[0]).toMatch(/^L/);
		expect(mainnet[1]).toMatch(/^M/);
		for (const a of mainnet) {
			expect(btc.normalizeAddress(a, LTC)).toBe(a);
			expect(btc.normalizeAddress(a, MAINNET)).toBeNull();
		}
		// Bitcoin mainnet addresses, and Litecoin's legacy "3..." P2SH (version 0x05), are refused.
		for (const a of ["1LqBGSKuX5yYUonjxT5qGfpUsXKYYWeabA", "37VucYSaXLCAsxYyAPfbSi9eh4iEcbShgf", "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"]) expect(btc.normalizeAddress(a, LTC)).toBeNull();
		// litecoind regtest's own P2PKH and P2SH-P2WPKH of the test phrase (m/44'/1'/0'/0/0, m/49'/1'/0'/0/0).
		for (const a of ["mkpZhYtJu2r87Js3pDiWJDmPte2NRZ8bJV", "QRHtkDQdVvNNwrVjEdeCGviCw7Ny3SNNiA", "rltc1q6rz28mcfaxtmd6v789l9rrlrusdprr9puuzgkg"]) {
			expect(btc.normalizeAddress(a, RLTC)).toBe(a);
			expect(btc.normalizeAddress(a, LTC)).toBeNull();
		}
		expect(btc.normalizeAddress("rltc1q6rz28mcfaxtmd6v789l9rrlrusdprr9puuzgkg", TLTC)).toBeNull();
		expect(btc.normalizeAddress(breakLast("ltc1qjmxnz78nmc8nq77wuxh25n2es7rzm5c2rkk4wh", BECH32), LTC)).toBeNull();
	});

	it("refuses litecoin network names that contradict isTestnet", () => {
		expect(() => btc.derivationPath(0, { isTestnet: true, bitcoinNetwork: "litecoin" })).toThrow(TypeError);
		expect(() => btc.derivationPath(0, { isTestnet: false, bitcoinNetwork: "litecoin-regtest" })).toThrow(TypeError);
	});
});

describe("tron addresses", () => {
	const tron = codecFor("tron");

	it("derives the published vectors of the test phrase", async () => {
		expect(await addressAt("tron", MAINNET, 0)).toMatchObject({ address: "TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH", path: "m/44'/195'/0'/0/0" });
		expect((await addressAt("tron", MAINNET, 1)).address).toBe("TSeJkUh4Qv67VNFwY8LaAxERygNdy6NQZK");
		expect((await addressAt("tron", TESTNET, 0)).address).toBe("TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH");
	});

	it("accepts base58check T addresses only", () => {
		const a = "TUEZSdKsoDHQMeZwihtdoBiN46zxhGWYdH";
		expect(tron.normalizeAddress(a, MAINNET)).toBe(a);
		expect(tron.normalizeAddress(a, TESTNET)).toBe(a);
		expect(tron.normalizeAddress("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t", MAINNET)).toBe("TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"); // USDT contract
		for (const bad of [
			breakLast(a, BASE58), // checksum
			a.toLowerCase(), // base58 is case-sensitive
			a.slice(0, -1), // length
			a + "1",
			"41" + "a".repeat(40), // hex form
			"0x9858EfFD232B4033E47d90003D41EC34EcaEda94",
			"1LqBGSKuX5yYUonjxT5qGfpUsXKYYWeabA", // valid base58check, wrong version byte
			"T9yD14Nj9j7xAB4dbGeiX9h8unkKHxuWwb", // the zero (burn) address
		]) {
			expect(tron.normalizeAddress(bad, MAINNET)).toBeNull();
		}
	});
});

describe("cosmos addresses", () => {
	const cosmos = codecFor("cosmos");

	it("derives the published vectors of the test phrase for the hub and other prefixes", async () => {
		expect(await addressAt("cosmos", MAINNET, 0)).toMatchObject({ address: "cosmos19rl4cm2hmr8afy4kldpxz3fka4jguq0auqdal4", path: "m/44'/118'/0'/0/0" });
		expect((await addressAt("cosmos", TESTNET, 0)).address).toBe("cosmos19rl4cm2hmr8afy4kldpxz3fka4jguq0auqdal4");
		expect((await addressAt("cosmos", { isTestnet: false, bech32Prefix: "neutron" }, 0)).address).toBe("neutron19rl4cm2hmr8afy4kldpxz3fka4jguq0aclyl9j");
	});

	it("accepts its own prefix only, 20- or 32-byte accounts", () => {
		const hub = "cosmos19rl4cm2hmr8afy4kldpxz3fka4jguq0auqdal4";
		expect(cosmos.normalizeAddress(hub, MAINNET)).toBe(hub);
		expect(cosmos.normalizeAddress(hub, { isTestnet: false, bech32Prefix: "osmo" })).toBeNull();
		expect(cosmos.normalizeAddress("neutron19rl4cm2hmr8afy4kldpxz3fka4jguq0aclyl9j", MAINNET)).toBeNull();
		expect(cosmos.normalizeAddress("cosmosvaloper19rl4cm2hmr8afy4kldpxz3fka4jguq0ae5egnx", MAINNET)).toBeNull();
		const module32 = toBech32("cosmos", new Uint8Array(32).fill(3));
		expect(cosmos.normalizeAddress(module32, MAINNET)).toBe(module32);
		expect(cosmos.normalizeAddress(toBech32("cosmos", new Uint8Array(19).fill(3)), MAINNET)).toBeNull();
		expect(cosmos.normalizeAddress(toBech32("cosmos", new Uint8Array(33).fill(3)), MAINNET)).toBeNull();
	});

	it("lower-cases all-upper-case input and rejects mixed case and bad checksums", () => {
		const hub = "cosmos19rl4cm2hmr8afy4kldpxz3fka4jguq0auqdal4";
		expect(cosmos.normalizeAddress(hub.toUpperCase(), MAINNET)).toBe(hub);
		expect(cosmos.normalizeAddress("Cosmos19rl4cm2hmr8afy4kldpxz3fka4jguq0auqdal4", MAINNET)).toBeNull();
		expect(cosmos.normalizeAddress(breakLast(hub, BECH32), MAINNET)).toBeNull();
		expect(cosmos.normalizeAddress(hub.slice(0, -1), MAINNET)).toBeNull();
	});

	it("refuses a malformed prefix in the params", () => {
		expect(() => cosmos.normalizeAddress("cosmos19rl4cm2hmr8afy4kldpxz3fka4jguq0auqdal4", { isTestnet: false, bech32Prefix: "Cosmos" })).toThrow(TypeError);
	});
});

describe("polkadot addresses", () => {
	const dot = codecFor("polkadot");
	// The well-known development key "Alice" under three SS58 prefixes.
	const ALICE_GENERIC = "5GrwvaEF5zXb26Fz9rcQpDWS57CtERHpNehXCPcNoHGKutQY";
	const ALICE_POLKADOT = "15oF4uVJwmo4TdGW7VfQxNLavjCXviqxT9S1MgbjMNHr6Sp5";
	const ALICE_KUSAMA = "HNZata7iMYWmk5RvZRTiAsSDhV8366zq2YGb3tLH5Upf74F";

	it("validates SS58 against the network's prefix", () => {
		expect(dot.normalizeAddress(ALICE_POLKADOT, MAINNET)).toBe(ALICE_POLKADOT);
		expect(dot.normalizeAddress(ALICE_GENERIC, MAINNET)).toBeNull();
		expect(dot.normalizeAddress(ALICE_GENERIC, TESTNET)).toBe(ALICE_GENERIC);
		expect(dot.normalizeAddress(ALICE_POLKADOT, TESTNET)).toBeNull();
		expect(dot.normalizeAddress(ALICE_KUSAMA, { isTestnet: false, ss58Prefix: 2 })).toBe(ALICE_KUSAMA);
		expect(dot.normalizeAddress(ALICE_KUSAMA, MAINNET)).toBeNull();
	});

	it("rejects bad checksums, hex public keys and short account ids", () => {
		expect(dot.normalizeAddress(breakLast(ALICE_POLKADOT, BASE58), MAINNET)).toBeNull();
		expect(dot.normalizeAddress("0xd43593c715fdd31c61141abd04a99fd6822c8558854ccde39a5684e7a56da27d", MAINNET)).toBeNull();
		expect(dot.normalizeAddress(encodeAddress(new Uint8Array([1, 2, 3, 4]), 0), MAINNET)).toBeNull();
		expect(dot.normalizeAddress(ALICE_POLKADOT.slice(0, -2), MAINNET)).toBeNull();
	});

	it("derives ed25519 accounts at m/44'/354'/index'/0'/0' encoded for the network", async () => {
		const main = await addressAt("polkadot", MAINNET, 0);
		const test = await addressAt("polkadot", TESTNET, 0);
		expect(main.path).toBe("m/44'/354'/0'/0'/0'");
		// Same key, the network's prefix: 0 -> "1...", 42 -> "5...".
		expect(main.publicKey).toBe(test.publicKey);
		expect(main.address).toMatch(/^1/);
		expect(test.address).toMatch(/^5/);
		expect(dot.normalizeAddress(main.address, TESTNET)).toBeNull();
		expect(dot.normalizeAddress(test.address, MAINNET)).toBeNull();
	});
});

describe("move addresses", () => {
	const move = codecFor("move");
	const SUI = { isTestnet: false, moveVariant: "sui" } as const;

	it("derives the Aptos vector (Trust Wallet Core's test phrase)", async () => {
		const seed = seedFromMnemonic("shoot island position soft burden budget tooth cruel issue economy destroy above");
		expect(await addressAt("move", MAINNET, 0, seed)).toMatchObject({
			address: "0x07968dab936c1bad187c60ce4082f307d030d780e91e694ae03aef16aba73f30",
			path: "m/44'/637'/0'/0'/0'",
		});
	});

	it("derives the Sui vectors (the Sui SDK's test phrases)", async () => {
		const a = seedFromMnemonic("film crazy soon outside stand loop subway crumble thrive popular green nuclear struggle pistol arm wife phrase warfare march wheat nephew ask sunny firm");
		const b = seedFromMnemonic("require decline left thought grid priority false tiny gasp angle royal system attack beef setup reward aunt skill wasp tray vital bounce inflict level");
		expect(await addressAt("move", SUI, 0, a)).toMatchObject({ address: "0xa2d14fad60c56049ecf75246a481934691214ce413e6a8ae2fe6834c173a6133", path: "m/44'/784'/0'/0'/0'" });
		expect((await addressAt("move", SUI, 0, b)).address).toBe("0x1ada6e6f3f3e4055096f606c746690f1108fcc2ca479055cc434a3e1d3f758aa");
	});

	it("gives Aptos and Sui different addresses for the same seed and index", async () => {
		expect((await addressAt("move", MAINNET, 0)).address).not.toBe((await addressAt("move", SUI, 0)).address);
		expect(() => move.derivationPath(0, { isTestnet: false, moveVariant: "starcoin" as "sui" })).toThrow(TypeError);
	});

	it("accepts 0x + 64 hex (lower-cased) and nothing else", () => {
		const a = "0x07968dab936c1bad187c60ce4082f307d030d780e91e694ae03aef16aba73f30";
		expect(move.normalizeAddress(a, MAINNET)).toBe(a);
		expect(move.normalizeAddress(a, TESTNET)).toBe(a);
		expect(move.normalizeAddress("0x" + a.slice(2).toUpperCase(), MAINNET)).toBe(a);
		for (const bad of [a.slice(2), a.slice(0, -1), a + "0", "0x1", "0x" + "0".repeat(64), "0x" + "g".repeat(64), "0X" + a.slice(2)]) {
			expect(move.normalizeAddress(bad, MAINNET)).toBeNull();
		}
	});
});

describe("ton addresses", () => {
	const ton = codecFor("ton");
	// One account in its raw and user-friendly forms (TON documentation's example).
	const RAW = "0:2f0df5851b4a185f5f63c0d0cd0412f5aca353f577da18ff47c936f99dbd849a";
	const BOUNCEABLE = "EQAvDfWFG0oYX19jwNDNBBL1rKNT9XfaGP9HyTb5nb2Eml6y";

	it("reads raw and user-friendly forms of the same account", () => {
		expect(Address.parse(BOUNCEABLE).toRawString()).toBe(RAW);
		expect(ton.normalizeAddress(RAW, MAINNET)).toBe(RAW);
		expect(ton.normalizeAddress(RAW.toUpperCase().replace("0X", "0x"), TESTNET)).toBe(RAW);
		expect(ton.normalizeAddress(BOUNCEABLE, MAINNET)).toBe(BOUNCEABLE);
		const nonBounceable = Address.parse(RAW).toString({ bounceable: false });
		expect(nonBounceable).toMatch(/^UQ/);
		expect(ton.normalizeAddress(nonBounceable, MAINNET)).toBe(nonBounceable);
	});

	it("requires the test-only flag to match the mode", () => {
		const testOnly = Address.parse(RAW).toString({ testOnly: true });
		expect(testOnly).toMatch(/^kQ/);
		expect(ton.normalizeAddress(testOnly, TESTNET)).toBe(testOnly);
		expect(ton.normalizeAddress(testOnly, MAINNET)).toBeNull();
		expect(ton.normalizeAddress(BOUNCEABLE, TESTNET)).toBeNull();
		// From @ton/ton's own tests: a testnet wallet.
		expect(ton.normalizeAddress("kQD6oPnzaaAMRW24R8F0_nlSsJQni0cGHntR027eT9_sgtwt", TESTNET)).toBe("kQD6oPnzaaAMRW24R8F0_nlSsJQni0cGHntR027eT9_sgtwt");
		expect(ton.normalizeAddress("kQD6oPnzaaAMRW24R8F0_nlSsJQni0cGHntR027eT9_sgtwt", MAINNET)).toBeNull();
	});

	it("normalises standard base64 to the url-safe form", () => {
		// A mainnet wallet from @ton/ton's own tests; its url-safe form has a "_".
		const urlSafe = "EQDnBF4JTFKHTYjulEJyNd4dstLGH1m51UrLdu01_tw4z2Au";
		const std = Address.parse(urlSafe).toString({ urlSafe: false });
		expect(std).toBe(urlSafe.replace("_", "/"));
		expect(ton.normalizeAddress(urlSafe, MAINNET)).toBe(urlSafe);
		expect(ton.normalizeAddress(std, MAINNET)).toBe(urlSafe);
	});

	it("rejects bad checksums, wrong lengths and other workchains", () => {
		expect(ton.normalizeAddress(breakLast(BOUNCEABLE, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"), MAINNET)).toBeNull();
		expect(ton.normalizeAddress(BOUNCEABLE.slice(0, -1), MAINNET)).toBeNull();
		expect(ton.normalizeAddress(RAW.slice(0, -1), MAINNET)).toBeNull();
		expect(ton.normalizeAddress("5:" + RAW.slice(2), MAINNET)).toBeNull();
		expect(ton.normalizeAddress("0x" + RAW.slice(2), MAINNET)).toBeNull();
		expect(ton.normalizeAddress("-1:" + RAW.slice(2), MAINNET)).toBe("-1:" + RAW.slice(2));
	});

	it("derives non-bounceable wallet v4R2 addresses flagged for the network", async () => {
		const main = await addressAt("ton", MAINNET, 0);
		const test = await addressAt("ton", TESTNET, 0);
		expect(main.path).toBe("m/44'/607'/0'");
		expect(main.address).toMatch(/^UQ/);
		expect(test.address).toMatch(/^0Q/);
		// Same account, only the flags differ.
		expect(Address.parse(main.address).equals(Address.parse(test.address))).toBe(true);
		expect(ton.normalizeAddress(main.address, TESTNET)).toBeNull();
		expect(ton.normalizeAddress(test.address, MAINNET)).toBeNull();
	});
});
