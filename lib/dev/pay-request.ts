/** The arguments of `npm run pay -- [--rpc-url <url>] <deposit address> <amount> [ETH|USDC]`, checked (pure). */
import { getAddress, parseUnits } from "ethers";
import { evmCodec } from "../chains/evm/codec";
import type { EnvVars } from "../env";
import { parseCliArgs, parseHttpUrl } from "../cli-args";

export type PayToken = "ETH" | "USDC";

export interface PayRequest {
	to: string;
	token: PayToken;
	/** The amount as typed, a decimal string. */
	amount: string;
	/** The local chain's test USDC contract when token is USDC. */
	usdcAddress: string | null;
	rpcUrl: string;
}

export const DEFAULT_RPC_URL = "http://127.0.0.1:8545";
const DECIMAL = /^\d+(\.\d+)?$/;

export const PAY_USAGE = [
	"Usage: npm run pay -- [--rpc-url <url>] <deposit address> <amount> [ETH|USDC]",
	"  token: default USDC when TEST_USDC_ADDRESS is set (environment or .env), else ETH",
	`  --rpc-url: the local chain's node; default RPC_URL_ANVIL_LOCAL (environment or .env), else ${DEFAULT_RPC_URL}`,
].join("\n");

/** Reads and checks the arguments; throws an Error with a message for the person at the terminal. */
export function parsePayArgs(args: readonly string[], env: EnvVars): PayRequest {
	const { options, positionals } = parseCliArgs(args, { "rpc-url": "value" }, PAY_USAGE);
	// The option wins over the environment (where `npm run dev:chain` wrote its URL).
	const rpcUrl = typeof options["rpc-url"] === "string" ? parseHttpUrl(options["rpc-url"], "--rpc-url") : env.RPC_URL_ANVIL_LOCAL?.trim() ? parseHttpUrl(env.RPC_URL_ANVIL_LOCAL, "RPC_URL_ANVIL_LOCAL") : DEFAULT_RPC_URL;
	if (positionals.length < 2 || positionals.length > 3) throw new Error(PAY_USAGE);
	const [rawTo, amount, rawToken] = positionals;
	const to = evmCodec.normalizeAddress(rawTo, { isTestnet: true });
	if (!to) throw new Error(`Not an EVM address (or a bad checksum): ${rawTo}`);
	if (!DECIMAL.test(amount) || /^0+(\.0+)?$/.test(amount)) throw new Error(`The amount must be a positive decimal number like 12.5, got "${amount}"`);
	const usdcAddress = env.TEST_USDC_ADDRESS?.trim() ? getAddress(env.TEST_USDC_ADDRESS.trim().toLowerCase()) : null;
	const token = (rawToken?.toUpperCase() ?? (usdcAddress ? "USDC" : "ETH")) as PayToken;
	if (token !== "ETH" && token !== "USDC") throw new Error(`The token must be ETH or USDC, got "${rawToken}"`);
	if (token === "USDC" && !usdcAddress) throw new Error("USDC needs TEST_USDC_ADDRESS (in the environment or .env): run `npm run dev:chain` first");
	return { to, token, amount, usdcAddress: token === "USDC" ? usdcAddress : null, rpcUrl };
}

/** Base units of the amount (ethers parseUnits: exact decimal arithmetic, never a JS number); too many decimals throws. */
export function baseUnits(amount: string, decimals: number): bigint {
	if (!DECIMAL.test(amount)) throw new Error(`Not a decimal amount: "${amount}"`);
	const [whole, fraction = ""] = amount.split(".");
	const significant = fraction.replace(/0+$/, "");
	if (significant.length > decimals) throw new Error(`At most ${decimals} decimals for this token, got "${amount}"`);
	return parseUnits(significant ? `${whole}.${significant}` : whole, decimals);
}
