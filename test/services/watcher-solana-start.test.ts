/**
 * Where the Solana watcher starts on the test node (test/helpers/solana-node.ts) when the slot
 * before its start was skipped: a slot without a block has nothing to sit a cursor on
 * (docs/watchers.md "Slots, finality and what the payer sees"). The cursor sits on the newest
 * block below the start, and a payment after the start is credited. Each case starts its own
 * payments node (a fresh database: no cursor yet) on one Solana node.
 */
import { Keypair, LAMPORTS_PER_SOL, PublicKey, SystemProgram } from "@solana/web3.js";
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { startSolanaNode, type SolanaNode } from "../helpers/solana-node";
import { until } from "../helpers/until";
import { openCheckout, sandboxMerchant, startPaymentsNode, PAYMENTS_SERVICES } from "../e2e/payments.helpers";

const NET = networkIdFor("solana-devnet");
const SOL = tokenIdFor("solana-devnet", "SOL");

describe("Solana watcher start when the slot before it was skipped", () => {
	let sol: SolanaNode;
	let payer: Keypair;

	beforeAll(async () => {
		sol = await startSolanaNode({ finalizeDistance: null });
		payer = Keypair.generate();
		await sol.airdrop(payer.publicKey, 10n * BigInt(LAMPORTS_PER_SOL));
		await sol.settle();
	}, 120_000);

	afterAll(async () => {
		await sol?.stop();
	});

	/** A payments node with watcher-solana: its cursor starts on `base`, then a payment is credited. */
	const startsOnAndCredits = async (base: number, head: number, env: Record<string, string> = {}) => {
		const node = await startPaymentsNode({ services: [...PAYMENTS_SERVICES, "watcher-solana"], env: { RPC_URL_SOLANA_DEVNET: sol.url, WATCHER_POLL_MS: "50", ...env } });
		try {
			const cursor = await until("cursor started", async () => (await node.app.models.ChainCursor.findByPk(NET))?.blockNumber ?? null, 60_000);
			// On `base`, or already past it: a first step can read the head before this poll sees the cursor.
			expect([base, head]).toContain(Number(cursor));
			const { key } = await sandboxMerchant(node);
			const c = await openCheckout(node, key, { amount: "0.25", currency: "sol", tokenId: SOL, networkId: NET });
			const sig = await sol.send([SystemProgram.transfer({ fromPubkey: payer.publicKey, toPubkey: new PublicKey(c.address), lamports: 250_000_000n })], [payer]);
			await sol.produceBlock();
			await sol.finalize();
			const done = await until("credited", async () => {
				const tx = (await node.http("GET", `/payments/transactions/${c.txId}`)).body;
				return tx.status === "completed" ? tx : null;
			});
			expect(done).toMatchObject({ amountReceived: "0.25", hash: sig });
		} finally {
			await node.stop();
		}
	};

	it("starts at WATCHER_START_BLOCK whose previous slot was skipped, on the newest block below it", async () => {
		const base = await sol.produceBlock();
		await sol.skipSlots(2);
		const start = await sol.produceBlock();
		expect(start).toBe(base + 3);
		await sol.produceBlocks(2);
		// Rooted: the skipped slots answer "skipped" (-32007) at getBlock, not "not available".
		await sol.finalize();
		await startsOnAndCredits(base, start + 2, { WATCHER_START_BLOCK_SOLANA_DEVNET: String(start) });
	}, 180_000);

	it("starts at the head when the slot before the head was skipped (not rooted yet)", async () => {
		await sol.finalize();
		const base = await sol.produceBlock();
		await sol.skipSlots(1);
		const head = await sol.produceBlock();
		expect(head).toBe(base + 2);
		// Not finalized: the skipped slot answers "not available" (-32004) at getBlock, as agave's above the root.
		await startsOnAndCredits(base, head);
	}, 180_000);
});
