import type { AuthRequirement } from "../lib/meta";

// Adds the gateway's per-action declarations to Moleculer's ActionSchema (moleculer-web adds `rest` the same way).
declare module "moleculer" {
	interface ActionSchema {
		/** Credential the gateway demands before calling the action (see lib/meta.ts). */
		auth?: AuthRequirement;
		/** Operations the spec protects with the bot check when reCAPTCHA is configured. */
		recaptcha?: boolean;
	}
}
