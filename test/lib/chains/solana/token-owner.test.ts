/**
 * Token balances without `owner` (RPC nodes before the field was added): the source reads the
 * token account's owner from the account (lib/chains/solana/source.ts readTokenOwners) and
 * credits only a token account of a catalogue mint owned by a deposit. On the litesvm-backed test
 * node (test/helpers/solana-node.ts), told to leave `owner` and `programId` out of its blocks.
 */
import crypto from "node:crypto";
import { Keypair, LAMPORTS_PER_SOL, PublicKey } from "@solana/web3.js";
import { createAssociatedTokenAccountIdempotentInstruction, createTransferCheckedInstruction, getAssociatedTokenAddressSync } from "@solana/spl-token";
import { TOKEN_INDEX_OFFSET } from "../../../../lib/chains/solana/block";
import { createSolanaSource } from "../../../../lib/chains/solana/source";
import { startSolanaNode, type SolanaNode } from "../../../helpers/solana-node";

describe("Solana source: token balances without owner", () => {
	let sol: SolanaNode;
	let payer: Keypair;
	let usdc: PublicKey;
	let fake: PublicKey;

	beforeAll(async () => {
		sol = await startSolanaNode({ finalizeDistance: 2 });
		payer = Keypair.generate();
		await sol.airdrop(payer.publicKey, 10n * BigInt(LAMPORTS_PER_SOL));
		usdc = await sol.createMint(6);
		fake = await sol.createMint(6);
		await sol.mintTo(usdc, payer.publicKey, 100_000_000n);
		await sol.mintTo(fake, payer.publicKey, 100_000_000n);
		await sol.settle();
	}, 120_000);

	afterAll(async () => {
		await sol?.tokenBalanceOwners(true);
		await sol?.stop();
	});

	const pay = (mint: PublicKey, owner: PublicKey, units: bigint) => {
		const ata = getAssociatedTokenAddressSync(mint, owner);
		return [createAssociatedTokenAccountIdempotentInstruction(payer.publicKey, ata, owner, mint), createTransferCheckedInstruction(getAssociatedTokenAddressSync(mint, payer.publicKey), mint, ata, payer.publicKey, units, 6)];
	};

	it("credits the deposit that owns the token account, never another owner's account or another mint", async () => {
		const deposit = Keypair.generate().publicKey;
		const other = Keypair.generate().publicKey;
		// One transaction pays USDC to the deposit's and to another owner's token account; another pays the deposit a fake mint.
		const both = await sol.send([...pay(usdc, deposit, 2_000_000n), ...pay(usdc, other, 3_000_000n)], [payer]);
		await sol.send(pay(fake, deposit, 5_000_000n), [payer]);
		const slot = await sol.produceBlock();
		await sol.tokenBalanceOwners(false);

		// The node really leaves the owners out of the block.
		const raw = await sol.rpc("getBlock", [slot, { commitment: "confirmed", maxSupportedTransactionVersion: 0, rewards: false }]);
		const txs = (raw.result as { transactions: Array<{ transaction: { signatures: string[]; message: { accountKeys: string[] } }; meta: { postTokenBalances: Array<Record<string, unknown>> } }> }).transactions;
		const balances = txs.flatMap(t => t.meta.postTokenBalances);
		expect(balances.length).toBeGreaterThanOrEqual(4);
		for (const b of balances) expect(b.owner).toBeUndefined();
		const keys = txs.find(t => t.transaction.signatures[0] === both)!.transaction.message.accountKeys;
		const depositIndex = keys.indexOf(getAssociatedTokenAddressSync(usdc, deposit).toBase58());
		const otherIndex = keys.indexOf(getAssociatedTokenAddressSync(usdc, other).toBase58());

		const source = createSolanaSource({ networkId: "net", rpcUrl: sol.url, timeoutMs: 10_000 });
		try {
			const noise = Array.from({ length: 1_000 }, () => new PublicKey(crypto.randomBytes(32)).toBase58());
			const tokens = [{ tokenId: "usdc", contractAddress: usdc.toBase58(), decimals: 6 }];
			const scan = async (addresses: string[]) => {
				const [ref] = await source.blocks(slot, slot);
				return { hash: ref.hash, found: await source.transfers({ fromBlock: slot, toBlock: slot, addresses: new Set([...noise, ...addresses]), tokens }) };
			};
			const one = await scan([deposit.toBase58()]);
			expect(one.found).toEqual([{ networkId: "net", txHash: both, logIndex: TOKEN_INDEX_OFFSET + depositIndex, toAddress: deposit.toBase58(), tokenId: "usdc", amount: "2000000", blockNumber: slot, blockHash: one.hash }]);
			// The other owner's account is its owner's, not the deposit's: found only when that owner is a deposit.
			const two = await scan([other.toBase58()]);
			expect(two.found).toEqual([{ networkId: "net", txHash: both, logIndex: TOKEN_INDEX_OFFSET + otherIndex, toAddress: other.toBase58(), tokenId: "usdc", amount: "3000000", blockNumber: slot, blockHash: two.hash }]);
			expect(await scan([])).toEqual({ hash: one.hash, found: [] });

			// With the owners in the block (a current node): the very same payments, the same keys.
			await sol.tokenBalanceOwners(true);
			expect(await scan([deposit.toBase58()])).toEqual(one);
		} finally {
			await source.close();
		}
	}, 120_000);
});
