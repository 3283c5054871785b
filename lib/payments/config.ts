/**
 * Payments settings from the environment (docs/payments.md "Configuration"): the `payments`
 * section of lib/config.ts, parsed once per node by loadConfig.
 */
import { EnvVars, int } from "../env";
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

export function paymentsConfigFromEnv(env: EnvVars): PaymentsConfig {
	return {
		paymentWindowMs: int("PAYMENT_WINDOW_MINUTES", env.PAYMENT_WINDOW_MINUTES, 30, 1, 7 * 24 * 60) * 60_000,
		sweepIntervalMs: int("PAYMENTS_SWEEP_SECONDS", env.PAYMENTS_SWEEP_SECONDS, 30, 0, 86_400) * 1000,
		maxOpenCheckouts: int("PAYMENTS_MAX_OPEN_CHECKOUTS", env.PAYMENTS_MAX_OPEN_CHECKOUTS, 20, 1, 1000),
		bridgeFee: bridgeFeeModelFromEnv(env),
	};
}
