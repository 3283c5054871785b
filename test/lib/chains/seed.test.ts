import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { decrypt, encrypt } from "../../../lib/crypto";
import { codecFor } from "../../../lib/chains";
import { SEED_FILE, isValidMnemonic, loadOrCreateSeed, normalizeMnemonic, seedFingerprint, seedFromMnemonic } from "../../../lib/chains/seed";
import { ABANDON } from "./fixtures";

const MASTER = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

describe("lib/chains/seed", () => {
	let dir: string;
	beforeEach(() => {
		dir = fs.mkdtempSync(path.join(os.tmpdir(), "hd-seed-"));
	});
	afterEach(() => {
		fs.rmSync(dir, { recursive: true, force: true });
	});

	it("turns a mnemonic into the BIP-39 seed (published vector) and fingerprint", () => {
		const seed = seedFromMnemonic(ABANDON);
		expect(hex(seed)).toBe("5eb00bbddcf069084889a8ab9155568165f5c453ccb85e70811aaed6f6da5fc19a5ac40b389cd370d086206dec8aa6c43daea6690f20ad3d8d48b2d2ce9e38e4");
		expect(seedFingerprint(seed)).toBe("73c5da0a");
		// Pasted with odd spacing and case: the same phrase.
		expect(hex(seedFromMnemonic(`  ${ABANDON.toUpperCase().replace(/ /g, "   ")}\n`))).toBe(hex(seed));
		expect(normalizeMnemonic(" Abandon\tabout ")).toBe("abandon about");
	});

	it("refuses invalid phrases without echoing them", () => {
		const badChecksum = ABANDON.replace(/about$/, "abandon");
		expect(isValidMnemonic(badChecksum)).toBe(false);
		expect(isValidMnemonic("hello world")).toBe(false);
		expect(isValidMnemonic(ABANDON)).toBe(true);
		for (const bad of [badChecksum, "not a mnemonic at all", ""]) {
			let message = "";
			try {
				seedFromMnemonic(bad);
			} catch (err) {
				message = (err as Error).message;
			}
			expect(message).toMatch(/not a valid BIP-39/);
			if (bad) expect(message).not.toContain(bad);
		}
	});

	it("uses the configured mnemonic and writes nothing", () => {
		const seed = loadOrCreateSeed(dir, MASTER, ABANDON);
		expect(hex(seed)).toBe(hex(seedFromMnemonic(ABANDON)));
		expect(fs.existsSync(path.join(dir, SEED_FILE))).toBe(false);
		expect(() => loadOrCreateSeed(dir, MASTER, "abandon abandon abandon")).toThrow(/not a valid BIP-39/);
	});

	it("generates a 24-word seed once, sealed with the master key, and reuses it", async () => {
		const seed = loadOrCreateSeed(path.join(dir, "nested"), MASTER);
		expect(seed).toHaveLength(64);
		const file = path.join(dir, "nested", SEED_FILE);
		expect(fs.statSync(file).mode & 0o777).toBe(0o600);
		// No stray temporary files.
		expect(fs.readdirSync(path.join(dir, "nested"))).toEqual([SEED_FILE]);

		const sealed = fs.readFileSync(file, "utf8").trim();
		expect(sealed).toMatch(/^v1:/);
		const phrase = decrypt(sealed, MASTER, "hd-seed");
		expect(phrase.split(" ")).toHaveLength(24);
		expect(isValidMnemonic(phrase)).toBe(true);
		expect(sealed).not.toContain(phrase.split(" ")[0] + " ");
		expect(hex(seedFromMnemonic(phrase))).toBe(hex(seed));

		// Restarts read the same seed, so the same deposit addresses.
		const again = loadOrCreateSeed(path.join(dir, "nested"), MASTER);
		expect(hex(again)).toBe(hex(seed));
		const evm = codecFor("evm");
		expect((await evm.deriveAddress(again, { isTestnet: false }, 0)).address).toBe((await evm.deriveAddress(seed, { isTestnet: false }, 0)).address);
		expect(fs.readFileSync(file, "utf8").trim()).toBe(sealed);
	});

	it("gives different installations different seeds", () => {
		const other = fs.mkdtempSync(path.join(os.tmpdir(), "hd-seed-"));
		try {
			expect(hex(loadOrCreateSeed(dir, MASTER))).not.toBe(hex(loadOrCreateSeed(other, MASTER)));
		} finally {
			fs.rmSync(other, { recursive: true, force: true });
		}
	});

	it("never replaces an existing seed file", () => {
		fs.writeFileSync(path.join(dir, SEED_FILE), encrypt(ABANDON, MASTER, "hd-seed"));
		expect(hex(loadOrCreateSeed(dir, MASTER))).toBe(hex(seedFromMnemonic(ABANDON)));
		expect(decrypt(fs.readFileSync(path.join(dir, SEED_FILE), "utf8"), MASTER, "hd-seed")).toBe(ABANDON);
	});

	it("loses a creation race gracefully: the first seed written is the one everybody uses", () => {
		// Another node writes its seed between our existence check and our write.
		fs.writeFileSync(path.join(dir, SEED_FILE), encrypt(ABANDON, MASTER, "hd-seed"));
		const exists = jest.spyOn(fs, "existsSync").mockReturnValueOnce(false);
		try {
			expect(hex(loadOrCreateSeed(dir, MASTER))).toBe(hex(seedFromMnemonic(ABANDON)));
		} finally {
			exists.mockRestore();
		}
		expect(decrypt(fs.readFileSync(path.join(dir, SEED_FILE), "utf8"), MASTER, "hd-seed")).toBe(ABANDON);
		expect(fs.readdirSync(dir)).toEqual([SEED_FILE]);
	});

	it("fails clearly on a wrong master key, a tampered or moved file, and an empty key", () => {
		loadOrCreateSeed(dir, MASTER);
		const file = path.join(dir, SEED_FILE);
		expect(() => loadOrCreateSeed(dir, MASTER + "x")).toThrow(/cannot be decrypted with the configured MASTER_KEY/);
		// A value sealed for another purpose cannot stand in for the seed.
		fs.writeFileSync(file, encrypt(ABANDON, MASTER, "another-row"));
		expect(() => loadOrCreateSeed(dir, MASTER)).toThrow(/cannot be decrypted/);
		// A sealed non-mnemonic is refused too.
		fs.writeFileSync(file, encrypt("not words", MASTER, "hd-seed"));
		expect(() => loadOrCreateSeed(dir, MASTER)).toThrow(/not a valid BIP-39/);
		expect(() => loadOrCreateSeed(path.join(dir, "fresh"), "")).toThrow(/master key is required/);
	});

	it("can be told not to generate", () => {
		expect(() => loadOrCreateSeed(dir, MASTER, undefined, { generate: false })).toThrow(/MASTER_SEED is not set/);
		expect(fs.existsSync(path.join(dir, SEED_FILE))).toBe(false);
		expect(loadOrCreateSeed(dir, MASTER, ABANDON, { generate: false })).toHaveLength(64);
	});
});
