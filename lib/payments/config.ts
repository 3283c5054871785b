/**
 * Payments settings from the environment (docs/payments.md "Configuration"). Parsed when a
 * payments service is created.
 */
import { wholeNumber } from "../env";
import { BridgeFeeModel, bridgeFeeModelFromEnv } from "./bridge";

export interface PaymentsConfig {
	/** How long a checkout transaction waits for its funds. */
	paymentWindowMs: number;
	/** Period of the expiry sweep; 0 turns the timer off (reads still evaluate expiry). */
	sweepIntervalMs: number;
	/** Open (pending, in-window) checkouts a link may have at once: bounds address derivation per link. */
	maxOpenCheckouts: number;
	bridgeFee: BridgeFeeModel;
}


export function paymentsConfigFromEnv(env: Record<string, string | undefined>): PaymentsConfig {
	return {
		paymentWindowMs: wholeNumber(env, "PAYMENT_WINDOW_MINUTES", 30, 1, 7 * 24 * 60) * 60_000,
		sweepIntervalMs: wholeNumber(env, "PAYMENTS_SWEEP_SECONDS", 30, 0, 86_400) * 1000,
		maxOpenCheckouts: wholeNumber(env, "PAYMENTS_MAX_OPEN_CHECKOUTS", 20, 1, 1000),
		bridgeFee: bridgeFeeModelFromEnv(env),
	};
}
