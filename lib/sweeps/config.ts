/**
 * Sweeper settings from the environment (docs/withdrawals.md "Sweeper configuration"). The RPC URL
 * of a network is the watchers' `RPC_URL_<SLUG>`.
 */
import { Keypair } from "@solana/web3.js";
import type { ChainType } from "../chains/types";
import { EnvVars, bool, int } from "../env";
import { envSlug } from "../watchers/config";

export interface SweeperConfig {
	/** The wallet that pays for token sweeps (hex private key; a secret: never logged). Required in production when a network is swept. */
	privateKey: string | null;
	/**
	 * SWEEPER_PRIVATE_KEY_TON: the TON sweeper wallet's key (wallet v5R1, pays jetton top-ups and
	 * gets the excesses back): 64 hex digits (the 32-byte ed25519 seed), 128 hex digits (a 64-byte
	 * secret key, seed || public key) or a 24-word TON mnemonic (tonSweeperKey). A secret: never logged.
	 */
	tonPrivateKey: string | null;
	/** SWEEP_TON_VALID_SEC: how long a signed TON message stays acceptable (its validUntil). */
	tonValidForSec: number;
	/**
	 * SWEEPER_PRIVATE_KEY_SOLANA: the Solana sweeper wallet (pays token sweeps' fees and rent, gets
	 * closed token accounts' rent back), as written in the environment (a secret: never logged);
	 * `solanaKeyBytes` turns it into the 64-byte secret key.
	 */
	solanaPrivateKey: string | null;
	/**
	 * SWEEPER_PRIVATE_KEY_POLKADOT: the Polkadot sweeper wallet (sr25519; pays asset deposits'
	 * native top-ups): a BIP-39 mnemonic (optionally "//derivation") or a 32-byte hex seed
	 * (polkadotSweeperPair). A secret: never logged.
	 */
	polkadotPrivateKey: string | null;
	/** SWEEP_POLKADOT_ERA_PERIOD: blocks a signed Polkadot extrinsic stays valid (its mortal era). */
	polkadotEraPeriod: number;
	/** SWEEP_CONTRACTS_<SLUG>=<batcher>,<delegate>: the deployed sweep contracts of a network. */
	contracts: Record<string, { batcher: string; delegate: string }>;
	/** EIP7702_<SLUG>=false: the network has no EIP-7702 (token sweeps fall back to a gas top-up). */
	eip7702Off: Set<string>;
	pollMs: number;
	batchSize: number;
	stuckMs: number;
	minValueMultiple: number;
	maxAgeMs: number;
	leaseMs: number;
	/** Failures in a row (reverted sends, estimates that revert) after which a destination or deposit is held for good (lib/sweeps/holds.ts). */
	maxFailures: number;
	/** The pause after a destination's or deposit's first failure; it doubles with each further one (at most 64×). */
	failureBackoffMs: number;
	/** Every sweeper RPC call ends (fails) after this long, so a stalled node never holds a step past its lease. */
	rpcTimeoutMs: number;
	/** A sweep whose nonce is used and none of its transactions found is stalled (operator alert) only after this many polls and this long. */
	proofPolls: number;
	proofMs: number;
	/** UTXO sweeps: the fee rate from estimatesmartfee, never below the floor nor above the cap (sat/vB). */
	utxoFeeFloorSatPerVb: number;
	utxoFeeCapSatPerVb: number;
}

/** SWEEPER_PRIVATE_KEY, checked (the message never quotes it), or null when unset. */
export function sweeperKeyFromEnv(env: EnvVars): string | null {
	const key = env.SWEEPER_PRIVATE_KEY?.trim() || null;
	if (key && !/^(0x)?[0-9a-fA-F]{64}$/.test(key)) throw new Error("Configuration: SWEEPER_PRIVATE_KEY must be a 32-byte hex private key");
	return key;
}

/** SWEEPER_PRIVATE_KEY_TON, checked for its form (the message never quotes it), or null when unset. */
export function tonSweeperKeyFromEnv(env: EnvVars): string | null {
	const key = env.SWEEPER_PRIVATE_KEY_TON?.trim().replace(/\s+/g, " ") || null;
	if (!key) return null;
	if (/^(0x)?([0-9a-fA-F]{64}|[0-9a-fA-F]{128})$/.test(key) || /^([a-z]+ ){23}[a-z]+$/.test(key)) return key;
	throw new Error("Configuration: SWEEPER_PRIVATE_KEY_TON must be a 32-byte seed or 64-byte secret key in hex, or a 24-word TON mnemonic");
}

/** SWEEPER_PRIVATE_KEY_POLKADOT, checked for its form (the message never quotes it), or null when unset. */
export function polkadotSweeperKeyFromEnv(env: EnvVars): string | null {
	const key = env.SWEEPER_PRIVATE_KEY_POLKADOT?.trim().replace(/[ \t\n]+/g, " ") || null;
	if (!key) return null;
	if (/^(0x)?[0-9a-fA-F]{64}$/.test(key) || /^([a-z]+ ){11,23}[a-z]+(\/\/?[^\s/]+)*$/.test(key)) return key;
	throw new Error("Configuration: SWEEPER_PRIVATE_KEY_POLKADOT must be a BIP-39 mnemonic (optionally with a //derivation) or a 32-byte hex seed");
}

/**
 * The 64-byte ed25519 secret key of a Solana wallet from its usual exports: base58 (Phantom's and
 * Solflare's "export private key") or the JSON array of 64 numbers a Solana CLI keypair file holds
 * (`solana-keygen new -o sweeper.json`). Its public half is checked against the secret. Throws a
 * message that never quotes the key.
 */
export function solanaKeyBytes(text: string): Uint8Array {
	const bad = () => new Error("Configuration: SWEEPER_PRIVATE_KEY_SOLANA must be a Solana secret key: base58 of 64 bytes, or the JSON array of 64 numbers of a solana-keygen keypair file");
	const value = text.trim();
	let bytes: Uint8Array;
	if (value.startsWith("[")) {
		let list: unknown;
		try {
			list = JSON.parse(value);
		} catch {
			throw bad();
		}
		if (!Array.isArray(list) || list.length !== 64 || !list.every(n => Number.isInteger(n) && n >= 0 && n <= 255)) throw bad();
		bytes = Uint8Array.from(list as number[]);
	} else {
		if (!/^[1-9A-HJ-NP-Za-km-z]{80,90}$/.test(value)) throw bad();
		let n = 0n;
		for (const ch of value) n = n * 58n + BigInt(BASE58.indexOf(ch));
		const hex = n.toString(16);
		if (hex.length > 128) throw bad();
		bytes = Uint8Array.from(Buffer.from(hex.padStart(128, "0"), "hex"));
	}
	try {
		Keypair.fromSecretKey(bytes);
	} catch {
		throw bad();
	}
	return bytes;
}

const BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/** SWEEPER_PRIVATE_KEY_SOLANA, checked (the message never quotes it), or null when unset. */
export function solanaSweeperKeyFromEnv(env: EnvVars): string | null {
	const key = env.SWEEPER_PRIVATE_KEY_SOLANA?.trim() || null;
	if (key) solanaKeyBytes(key);
	return key;
}

export function sweeperConfigFromEnv(env: EnvVars): SweeperConfig {
	const contracts: SweeperConfig["contracts"] = {};
	const eip7702Off = new Set<string>();
	for (const [name, value] of Object.entries(env)) {
		if (!value) continue;
		if (name.startsWith("SWEEP_CONTRACTS_")) {
			const [batcher, delegate] = value.split(",").map(s => s.trim());
			if (!/^0x[0-9a-fA-F]{40}$/.test(batcher ?? "") || !/^0x[0-9a-fA-F]{40}$/.test(delegate ?? "")) throw new Error(`Configuration: ${name} must be "<batcher address>,<delegate address>"`);
			contracts[name.slice("SWEEP_CONTRACTS_".length)] = { batcher, delegate };
		} else if (name.startsWith("EIP7702_") && !bool(name, value, true)) {
			eip7702Off.add(name.slice("EIP7702_".length));
		}
	}
	return {
		privateKey: sweeperKeyFromEnv(env),
		tonPrivateKey: tonSweeperKeyFromEnv(env),
		tonValidForSec: int("SWEEP_TON_VALID_SEC", env.SWEEP_TON_VALID_SEC, 60, 10, 600),
		solanaPrivateKey: solanaSweeperKeyFromEnv(env),
		polkadotPrivateKey: polkadotSweeperKeyFromEnv(env),
		polkadotEraPeriod: int("SWEEP_POLKADOT_ERA_PERIOD", env.SWEEP_POLKADOT_ERA_PERIOD, 64, 4, 65_536),
		contracts,
		eip7702Off,
		pollMs: int("SWEEP_POLL_MS", env.SWEEP_POLL_MS, 15_000, 50, 3_600_000),
		batchSize: int("SWEEP_BATCH_SIZE", env.SWEEP_BATCH_SIZE, 20, 1, 100),
		stuckMs: int("SWEEP_STUCK_MS", env.SWEEP_STUCK_MS, 120_000, 100, 86_400_000),
		minValueMultiple: int("SWEEP_MIN_VALUE_MULTIPLE", env.SWEEP_MIN_VALUE_MULTIPLE, 10, 1, 1_000_000),
		maxAgeMs: int("SWEEP_MAX_AGE_MINUTES", env.SWEEP_MAX_AGE_MINUTES, 24 * 60, 0, 525_600) * 60_000,
		leaseMs: int("SWEEP_LEASE_MS", env.SWEEP_LEASE_MS, 30_000, 1_000, 600_000),
		maxFailures: int("SWEEP_MAX_FAILURES", env.SWEEP_MAX_FAILURES, 3, 1, 100),
		failureBackoffMs: int("SWEEP_FAILURE_BACKOFF_MS", env.SWEEP_FAILURE_BACKOFF_MS, 300_000, 50, 86_400_000),
		rpcTimeoutMs: int("SWEEP_RPC_TIMEOUT_MS", env.SWEEP_RPC_TIMEOUT_MS, 10_000, 100, 120_000),
		proofPolls: int("SWEEP_PROOF_POLLS", env.SWEEP_PROOF_POLLS, 3, 2, 1_000),
		proofMs: int("SWEEP_PROOF_MS", env.SWEEP_PROOF_MS, 120_000, 0, 86_400_000),
		utxoFeeFloorSatPerVb: int("SWEEP_UTXO_FEE_FLOOR", env.SWEEP_UTXO_FEE_FLOOR, 2, 1, 10_000),
		utxoFeeCapSatPerVb: int("SWEEP_UTXO_FEE_CAP", env.SWEEP_UTXO_FEE_CAP, 200, 1, 100_000),
	};
}

/** The settings every chain's sweep runner takes (batching, holds, proof), from the sweeper configuration. */
export function runnerSettings(config: SweeperConfig) {
	return {
		batchSize: config.batchSize,
		minValueMultiple: config.minValueMultiple,
		maxAgeMs: config.maxAgeMs,
		maxFailures: config.maxFailures,
		failureBackoffMs: config.failureBackoffMs,
		proofPolls: config.proofPolls,
		proofMs: config.proofMs,
	};
}

export const sweepContractsFor = (config: SweeperConfig, slug: string) => config.contracts[envSlug(slug)] ?? null;
export const eip7702For = (config: SweeperConfig, slug: string) => !config.eip7702Off.has(envSlug(slug));

/**
 * The chain types a sweeper service serves (services/sweeper-<type>.service.ts): a withdrawal
 * request is accepted only on their networks, so every accepted request has someone to pay it.
 */
export const SWEEPER_CHAIN_TYPES: readonly ChainType[] = ["evm", "bitcoin", "ton", "solana", "polkadot"];
export const hasSweeper = (chainType: string) => (SWEEPER_CHAIN_TYPES as readonly string[]).includes(chainType);
