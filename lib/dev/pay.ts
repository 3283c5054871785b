/**
 * `npm run pay -- [--rpc-url <url>] <deposit address> <amount> [ETH|USDC]`: pays a deposit address
 * on the local dev chain (`npm run dev:chain`) from anvil's first funded account, and prints the
 * transaction. The token defaults to USDC when TEST_USDC_ADDRESS is set (environment or .env),
 * else ETH; the node is --rpc-url, else RPC_URL_ANVIL_LOCAL (environment or .env), else
 * http://127.0.0.1:8545. Refuses any node that is not on chain 31337, so a mistyped RPC URL
 * never sends real funds.
 */
import { Contract, JsonRpcProvider, Network, Wallet } from "ethers";
import { readDotEnv } from "../config";
import { redactUrl, redactUrlsIn } from "../watchers/config";
import { anvilPrivateKeys } from "./anvil";
import { baseUnits, parsePayArgs } from "./pay-request";

const LOCAL_CHAIN_ID = 31337n;
const ERC20 = ["function transfer(address to, uint256 amount) returns (bool)", "function decimals() view returns (uint8)", "function symbol() view returns (string)"];

let rpcUrl = "";

async function main(): Promise<void> {
	const request = parsePayArgs(process.argv.slice(2), { ...readDotEnv(), ...process.env });
	rpcUrl = request.rpcUrl;
	const provider = new JsonRpcProvider(request.rpcUrl, undefined, { staticNetwork: Network.from(LOCAL_CHAIN_ID), cacheTimeout: -1, pollingInterval: 250 });
	try {
		const chainId = BigInt(await provider.send("eth_chainId", []));
		if (chainId !== LOCAL_CHAIN_ID) throw new Error(`${redactUrl(request.rpcUrl)} is chain ${chainId}, not the local chain ${LOCAL_CHAIN_ID}: refusing to pay`);
		const payer = new Wallet(anvilPrivateKeys(1)[0], provider);
		let hash: string;
		let shown: string;
		if (request.token === "ETH") {
			const value = baseUnits(request.amount, 18);
			const tx = await payer.sendTransaction({ to: request.to, value });
			hash = tx.hash;
			shown = `${request.amount} ETH (${value} wei)`;
		} else {
			const token = new Contract(request.usdcAddress!, ERC20, payer);
			if ((await provider.getCode(request.usdcAddress!)) === "0x") throw new Error(`No contract at TEST_USDC_ADDRESS ${request.usdcAddress}: is \`npm run dev:chain\` running?`);
			const decimals = Number(await token.decimals());
			const units = baseUnits(request.amount, decimals);
			const tx = await token.transfer(request.to, units);
			hash = tx.hash;
			shown = `${request.amount} USDC (${units} base units, contract ${request.usdcAddress})`;
		}
		console.log(`Sent ${shown} from ${payer.address} to ${request.to}`);
		console.log(`Transaction: ${hash}`);
		const receipt = await provider.waitForTransaction(hash, 1, 30_000);
		if (!receipt) console.log("Not mined within 30 s (is the chain mining?)");
		else console.log(`Mined in block ${receipt.blockNumber} (${receipt.status === 1 ? "success" : "FAILED"})`);
	} finally {
		provider.destroy();
	}
}

main().catch(err => {
	const message = redactUrlsIn(err instanceof Error ? err.message : String(err));
	console.error(/ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|fetch failed/.test(message) ? `No node answers at ${redactUrl(rpcUrl)} (${message}): is \`npm run dev:chain\` running there? (another node: --rpc-url <url>)` : message);
	process.exit(1);
});
