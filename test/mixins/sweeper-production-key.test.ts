/**
 * The sweeper mixin's production check: a sweeper whose wallet pays token sweeps' fees never
 * starts in production without its key (the EVM case is in test/services/sweeper-evm.test.ts).
 */
import { startNode } from "../helpers/harness";

const secrets = { AUTH_JWT_SECRET: "j".repeat(40), AUTH_REFRESH_SECRET: "r".repeat(40), MASTER_KEY: "m".repeat(40) };

describe.each([
	["sweeper-solana", "SWEEPER_PRIVATE_KEY_SOLANA"],
	["sweeper-ton", "SWEEPER_PRIVATE_KEY_TON"],
	["sweeper-polkadot", "SWEEPER_PRIVATE_KEY_POLKADOT"],
])("%s in production", (service, variable) => {
	it(`refuses to start without ${variable}`, async () => {
		await expect(startNode({ services: ["networks", "transactions", "withdrawals", service], env: { NODE_ENV: "production", ...secrets } })).rejects.toThrow(new RegExp(`${variable} is required in production on nodes running ${service}`));
	});
});
