/**
 * Payments settings from the environment (docs/payments.md "Configuration"). Parsed when a
 * payments service is created.
 */
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

function whole(env: Record<string, string | undefined>, name: string, fallback: number, min: number, max: number): number {
	const raw = (env[name] ?? "").trim();
	if (raw === "") return fallback;
	const n = Number(raw);
	if (!Number.isInteger(n) || n < min || n > max) throw new Error(`Configuration: ${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
	return n;
}

export function paymentsConfigFromEnv(env: Record<string, string | undefined>): PaymentsConfig {
	return {
		paymentWindowMs: whole(env, "PAYMENT_WINDOW_MINUTES", 30, 1, 7 * 24 * 60) * 60_000,
		sweepIntervalMs: whole(env, "PAYMENTS_SWEEP_SECONDS", 30, 0, 86_400) * 1000,
		maxOpenCheckouts: whole(env, "PAYMENTS_MAX_OPEN_CHECKOUTS", 20, 1, 1000),
		bridgeFee: bridgeFeeModelFromEnv(env),
	};
}
