import { seedFromMnemonic } from "../../../lib/chains/seed";

/** The public BIP-39 test phrase (entropy 0x00..00): never send funds to its addresses. */
export const ABANDON = "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about";
export const ABANDON_SEED = seedFromMnemonic(ABANDON);

export const MAINNET = { isTestnet: false } as const;
export const TESTNET = { isTestnet: true } as const;
