/**
 * The Solana sweeper's test setup (test/services/sweeper-solana*.test.ts): a litesvm-backed Solana
 * node (a payer with 1,000 SOL and 1,000 devnet USDC, a sweeper wallet with 1 SOL, a block every
 * 100 ms, finalized 2 blocks behind) and a payments node running watcher-solana, withdrawals and
 * sweeper-solana on `solana-devnet` against it.
 */
import { Keypair, LAMPORTS_PER_SOL, PublicKey } from "@solana/web3.js";
import { encodeBase58 } from "ethers";
import { startSolanaNode, type SolanaNode } from "./solana-node";
import type { TestNode } from "./harness";
import { startPaymentsNode, PAYMENTS_SERVICES } from "../e2e/payments.helpers";

/** The catalogue's devnet USDC mint, created on the test node. */
export const DEVNET_USDC_MINT = new PublicKey("4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU");

export interface SolanaSweeperNodes {
	sol: SolanaNode;
	node: TestNode;
	payer: Keypair;
	sweeper: Keypair;
}

/** The sweeper's test settings on `sol` (`env` added or overriding): what a node or a sweeper process needs. */
export function solanaSweeperEnv(sol: SolanaNode, sweeper: Keypair, env: Record<string, string> = {}): Record<string, string> {
	return {
		RPC_URL_SOLANA_DEVNET: sol.url,
		WATCHER_POLL_MS: "50",
		SWEEP_POLL_MS: "200",
		SWEEP_LEASE_MS: "3000",
		SWEEP_MAX_AGE_MINUTES: "0",
		SWEEP_PROOF_POLLS: "2",
		SWEEP_PROOF_MS: "0",
		// As Phantom exports it: base58 of the 64-byte secret key.
		SWEEPER_PRIVATE_KEY_SOLANA: encodeBase58(sweeper.secretKey),
		...env,
	};
}

/** `env` is added to (or overrides) the sweeper's test settings; `sweeper: false`: the node runs no sweeper (a test runs it elsewhere). */
export async function startSolanaSweeperNodes(env: Record<string, string> = {}, opts: { sweeper?: boolean } = {}): Promise<SolanaSweeperNodes> {
	const sol = await startSolanaNode({ finalizeDistance: 2 });
	const payer = Keypair.generate();
	const sweeper = Keypair.generate();
	await sol.airdrop(payer.publicKey, 1000n * BigInt(LAMPORTS_PER_SOL));
	await sol.airdrop(sweeper.publicKey, BigInt(LAMPORTS_PER_SOL));
	await sol.createMint(6, { address: DEVNET_USDC_MINT });
	await sol.mintTo(DEVNET_USDC_MINT, payer.publicKey, 1_000_000_000n);
	await sol.settle();
	// A block every 100 ms; the finalized head 2 blocks behind (unless a test holds it).
	await sol.autoProduce(100);
	const node = await startPaymentsNode({
		services: [...PAYMENTS_SERVICES, "watcher-solana", "withdrawals", ...(opts.sweeper === false ? [] : ["sweeper-solana"])],
		env: solanaSweeperEnv(sol, sweeper, env),
	});
	return { sol, node, payer, sweeper };
}

export async function stopSolanaSweeperNodes(nodes: Partial<SolanaSweeperNodes>): Promise<void> {
	await nodes.node?.stop();
	await nodes.sol?.autoProduce(null).catch(() => undefined);
	await nodes.sol?.stop();
}
