/**
 * `npm run chain:check`: its arguments, and a run against an HTTP JSON-RPC server answering with
 * Solana's documented getSlot example (the finalized slot) and blocks derived from the documented
 * getBlock example (test/fixtures/solana-rpc, sources in its README.md): it reads the newest finalized
 * blocks and prints the payments the watcher's parser finds.
 */
import fs from "node:fs";
import path from "node:path";
import { Keypair } from "@solana/web3.js";
import { parseChainCheckArgs, runChainCheck } from "../../../../lib/chains/solana/check";
import { jsonRpcServer } from "../../../helpers/json-rpc-server";

const FIXTURES = path.join(__dirname, "../../../fixtures/solana-rpc");
const fixture = (name: string) => JSON.parse(fs.readFileSync(path.join(FIXTURES, name), "utf8"));
const BLOCK_430 = fixture("getBlock.json");
const GET_SLOT = fixture("getSlot.json"); // 1234
const DEVNET_USDC = "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU";
const VOTE_ACCOUNT = "AjozzgE83A3x1sHNUR64hfH7zaEBWeMaFuAN9kQgujrc";

describe("chain:check arguments", () => {
	const env = { RPC_URL_SOLANA_DEVNET: "http://127.0.0.1:8899" };

	it("reads a Solana network's RPC URL, the block count and the addresses", () => {
		const req = parseChainCheckArgs(["solana-devnet", "--blocks", "5", "--address", `${VOTE_ACCOUNT}`], env);
		expect(req).toMatchObject({ rpcUrl: "http://127.0.0.1:8899", blocks: 5, addresses: [VOTE_ACCOUNT] });
		expect(req.network.slug).toBe("solana-devnet");
		expect(parseChainCheckArgs(["solana-devnet"], env)).toMatchObject({ blocks: 10, addresses: null });
	});

	it("refuses what it cannot check, saying why", () => {
		expect(() => parseChainCheckArgs([], env)).toThrow(/Give one network slug/);
		expect(() => parseChainCheckArgs(["nowhere"], env)).toThrow(/not a network of the catalogue/);
		expect(() => parseChainCheckArgs(["ethereum"], env)).toThrow(/reads Solana networks so far/);
		expect(() => parseChainCheckArgs(["solana-devnet", "--blocks", "0"], env)).toThrow(/--blocks must be a whole number from 1 to 500/);
		expect(() => parseChainCheckArgs(["solana-devnet", "--address", "0x52908400098527886E0F7030069857D2E4169EE7"], env)).toThrow(/is not a Solana address/);
		expect(() => parseChainCheckArgs(["solana"], env)).toThrow(/set RPC_URL_SOLANA or give --rpc-url/);
	});
});

describe("chain:check against a JSON-RPC node", () => {
	it("reads the newest finalized blocks and prints the payments to the addresses, catalogue mints only", async () => {
		const owner = Keypair.generate().publicKey.toBase58();
		const fake = Keypair.generate().publicKey.toBase58();
		const balance = (accountIndex: number, mint: string, amount: string) => ({ accountIndex, mint, owner, uiTokenAmount: { amount, decimals: 6, uiAmount: null, uiAmountString: "" } });
		const server = await jsonRpcServer((method, params) => {
			if (method === "getSlot") return GET_SLOT;
			// Produced slots up to the finalized one, 1232 skipped.
			if (method === "getBlocks") return { jsonrpc: "2.0", result: [1229, 1230, 1231, 1233, 1234], id: 1 };
			const slot = params[0] as number;
			const block = JSON.parse(JSON.stringify(BLOCK_430));
			block.result.parentSlot = slot === 1233 ? 1231 : slot - 1;
			// Derived: in slot 1233 the vote account gains 0.25 SOL and the owner 2 devnet USDC and 9 of a fake "USDC".
			if (slot === 1233) {
				block.result.transactions[0].meta.postBalances[1] += 250_000_000;
				block.result.transactions[0].meta.preTokenBalances = [];
				block.result.transactions[0].meta.postTokenBalances = [balance(2, DEVNET_USDC, "2000000"), balance(3, fake, "9000000")];
			}
			return block;
		});
		const lines: string[] = [];
		try {
			const req = parseChainCheckArgs(["solana-devnet", "--blocks", "3", "--address", `${VOTE_ACCOUNT},${owner}`, "--rpc-url", server.url], {});
			const report = await runChainCheck(req, l => lines.push(l));
			expect(report.finalizedSlot).toBe(1234);
			expect(report.blocks.map(b => [b.slot, b.parentSlot, b.payments])).toEqual([
				[1231, 1230, 0],
				[1233, 1231, 2],
				[1234, 1233, 0],
			]);
			expect(report.payments.map(p => [p.symbol, p.amount, p.account, p.index])).toEqual([
				["SOL", "0.25", VOTE_ACCOUNT, 1],
				["USDC", "2", owner, 256 + 2],
			]);
			// Read at finalized.
			expect(server.calls.find(c => c.method === "getBlock")?.params[1]).toMatchObject({ commitment: "finalized", transactionDetails: "full", maxSupportedTransactionVersion: 0, rewards: false });
		} finally {
			await server.close();
		}
		expect(lines.join("\n")).toContain(`0.25 SOL to ${VOTE_ACCOUNT}`);
		expect(lines.join("\n")).toContain(`2 USDC to ${owner}`);
		expect(lines.join("\n")).not.toContain("9 USDC");
	});
});
