/**
 * Keys of withdrawal addresses (settings, per-intent and per-link `withdrawal_addresses`): the
 * spec's chain types, plus "litecoin": Litecoin networks are of the `bitcoin` chain type (same
 * code, other parameters), and a merchant needs a separate address for LTC (docs/withdrawals.md).
 * An address is checked with the chain's codec for the organization's mode: sandbox accepts the
 * test-network formats, live the main network's.
 */
import { codecFor, isChainType, CHAIN_TYPES } from "./index";
import type { BitcoinNetworkName, ChainType } from "./types";
import type { NetworkLike } from "./params";
import { chainParamsFor } from "./params";

export const WITHDRAWAL_ADDRESS_KEYS = [...CHAIN_TYPES, "litecoin"] as const;
export type WithdrawalAddressKey = (typeof WITHDRAWAL_ADDRESS_KEYS)[number];

export function isWithdrawalAddressKey(value: unknown): value is WithdrawalAddressKey {
	return typeof value === "string" && (WITHDRAWAL_ADDRESS_KEYS as readonly string[]).includes(value);
}

/** The canonical address for a key and mode, or null when it is not valid there. */
export function normalizeWithdrawalAddress(key: WithdrawalAddressKey, address: string, mode: "sandbox" | "live"): string | null {
	const isTestnet = mode === "sandbox";
	if (key === "litecoin") {
		const names: BitcoinNetworkName[] = isTestnet ? ["litecoin-testnet", "litecoin-regtest"] : ["litecoin"];
		for (const bitcoinNetwork of names) {
			const normalized = codecFor("bitcoin").normalizeAddress(address, { isTestnet, bitcoinNetwork });
			if (normalized) return normalized;
		}
		return null;
	}
	return isChainType(key) ? codecFor(key as ChainType).normalizeAddress(address, { isTestnet }) : null;
}

/** Which key a network's proceeds are sent to: its chain type, or "litecoin" for Litecoin networks. */
export function withdrawalKeyFor(network: NetworkLike): WithdrawalAddressKey {
	if (network.chainType === "bitcoin" && chainParamsFor(network).bitcoinNetwork?.startsWith("litecoin")) return "litecoin";
	return network.chainType;
}
