/**
 * Builds codec params from a network row: its isTestnet flag plus the chain facts kept in
 * `listenerConfig` (lib/networks/catalogue.ts: bech32Prefix, ss58Prefix, bitcoinNetwork, and
 * `chain` "aptos" / "sui" on Move networks). Keys of the wrong type are refused rather than
 * silently defaulted: a wrong prefix or variant would derive an address nobody controls.
 */
import type { BitcoinNetworkName, ChainNetworkParams, ChainType, MoveVariant } from "./types";

export interface NetworkLike {
	chainType: ChainType;
	isTestnet: boolean;
	listenerConfig?: Record<string, unknown> | null;
}

export function chainParamsFor(network: NetworkLike): ChainNetworkParams {
	const config = network.listenerConfig ?? {};
	const params: ChainNetworkParams = { isTestnet: Boolean(network.isTestnet) };
	const pick = <T>(key: string, check: (v: unknown) => boolean): T | undefined => {
		const value = config[key];
		if (value === undefined || value === null) return undefined;
		if (!check(value)) throw new TypeError(`Network ${network.chainType}: listenerConfig.${key} is invalid`);
		return value as T;
	};
	switch (network.chainType) {
		case "cosmos":
			params.bech32Prefix = pick<string>("bech32Prefix", v => typeof v === "string");
			break;
		case "polkadot":
			params.ss58Prefix = pick<number>("ss58Prefix", v => Number.isInteger(v));
			break;
		case "bitcoin":
			params.bitcoinNetwork = pick<BitcoinNetworkName>("bitcoinNetwork", v => typeof v === "string");
			break;
		case "move":
			params.moveVariant = pick<MoveVariant>("chain", v => v === "aptos" || v === "sui");
			break;
		default:
			break;
	}
	for (const key of Object.keys(params) as Array<keyof ChainNetworkParams>) if (params[key] === undefined) delete params[key];
	return params;
}
