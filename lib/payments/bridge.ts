/**
 * Bridge fees for checkouts paid on another network than the link's (requiresBridge). The
 * quote asks an adapter for the fee in USD of bridging a USD amount; the one adapter here is a
 * configurable fee model: a flat USD part plus basis points of the bridged value
 *   feeUsd = flatUsd + amountUsd * bps / 10000
 * (exact; the quote rounds the result up to 6 decimals, USDC precision). A provider-backed adapter
 * (a bridge API's live quote) implements the same interface.
 */
import { EnvVars, int } from "../env";
import { fraction, Fraction, mul } from "../pricing/fraction";

export interface BridgeFeeModel {
	/** Decimal string, USD. */
	flatUsd: string;
	/** Basis points of the bridged USD value (0..10000, integer). */
	bps: number;
}

export interface BridgeQuoteRequest {
	/** Exact USD value to be bridged. */
	amountUsd: Fraction;
	fromNetworkId: string;
	toNetworkId: string;
}

export interface BridgeQuoteAdapter {
	/** Exact fee in USD. */
	feeUsd(req: BridgeQuoteRequest): Fraction;
}

export const DEFAULT_BRIDGE_FEE: BridgeFeeModel = { flatUsd: "0.5", bps: 10 };

export function feeModelAdapter(model: BridgeFeeModel): BridgeQuoteAdapter {
	const flat = fraction(model.flatUsd);
	if (!Number.isInteger(model.bps) || model.bps < 0 || model.bps > 10_000) throw new RangeError("bps must be an integer from 0 to 10000");
	const rate: Fraction = { num: BigInt(model.bps), den: 10_000n };
	return {
		feeUsd({ amountUsd }) {
			const variable = mul(amountUsd, rate);
			return { num: flat.num * variable.den + variable.num * flat.den, den: flat.den * variable.den };
		},
	};
}

/** BRIDGE_FEE_FLAT_USD (decimal, default 0.5) and BRIDGE_FEE_BPS (integer, default 10) from the environment. */
export function bridgeFeeModelFromEnv(env: EnvVars): BridgeFeeModel {
	const flat = (env.BRIDGE_FEE_FLAT_USD ?? "").trim() || DEFAULT_BRIDGE_FEE.flatUsd;
	if (!/^\d{1,12}(\.\d{1,6})?$/.test(flat)) throw new Error(`Configuration: BRIDGE_FEE_FLAT_USD must be a decimal USD amount, got "${flat}"`);
	return { flatUsd: flat, bps: int("BRIDGE_FEE_BPS", env.BRIDGE_FEE_BPS, DEFAULT_BRIDGE_FEE.bps, 0, 10_000) };
}
