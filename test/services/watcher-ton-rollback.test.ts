/**
 * A masterchain block the API served and then replaced (an indexer rolled back; here the TON test
 * node returned to a checkpoint) before the payment in it reached the required confirmations
 * (REQUIRED_CONFIRMATIONS_TON=3): shown confirming, then reverted by the runner's chain check
 * (parent root hashes), never credited; a payment after the rollback is credited normally.
 */
import { toNano } from "@ton/core";
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { startTonNode, type TonNode } from "../helpers/ton-node";
import { until } from "../helpers/until";
import { TestNode } from "../helpers/harness";
import { openCheckout, sandboxMerchant, startPaymentsNode, PAYMENTS_SERVICES } from "../e2e/payments.helpers";

const NET = networkIdFor("ton-testnet");
const TON = tokenIdFor("ton-testnet", "TON");

describe("TON watcher: a replaced masterchain block before the required confirmations", () => {
	let ton: TonNode;
	let node: TestNode;
	let key: { key: string; secret: string };

	beforeAll(async () => {
		ton = await startTonNode({ testnet: true });
		await ton.seal();
		node = await startPaymentsNode({
			services: [...PAYMENTS_SERVICES, "watcher-ton"],
			env: { RPC_URL_TON_TESTNET: ton.url, WATCHER_POLL_MS: "50", REQUIRED_CONFIRMATIONS_TON_TESTNET: "3" },
		});
		({ key } = await sandboxMerchant(node));
		await until("cursor", async () => (await node.app.models.ChainCursor.findByPk(NET))?.blockNumber != null, 60_000);
	}, 120_000);

	afterAll(async () => {
		await node?.stop();
		await ton?.stop();
	});

	const getTx = async (id: string) => (await node.http("GET", `/payments/transactions/${id}`)).body;
	const credits = (txId: string) => node.app.models.TransactionCredit.findAll({ where: { transactionId: txId } });

	it("shows the payment confirming 1 of 3, reverts it when its block is replaced, and credits only what the chain keeps", async () => {
		const c = await openCheckout(node, key, { amount: "0.4", currency: "ton", tokenId: TON, networkId: NET });
		const cp = await ton.checkpoint();
		await ton.pay(ton.faucet, c.address, toNano("0.4"));
		await ton.seal();
		const seen = await until("confirming", async () => {
			const tx = await getTx(c.txId);
			return tx.amountConfirming === "0.4" ? tx : null;
		});
		expect(seen).toMatchObject({ status: "pending", amountReceived: "0", confirmations: 1, requiredConfirmations: 3 });
		// The block is replaced: the same seqnos come back without the payment.
		await ton.rollback(cp);
		expect(ton.balance(ton.faucet.address)).toBeGreaterThan(0n);
		const after = [await ton.seal(), await ton.seal(), await ton.seal()];
		await until("reverted", async () => (await getTx(c.txId)).amountConfirming === "0");
		await until("cursor past the replaced blocks", async () => ((await node.app.models.ChainCursor.findByPk(NET))?.blockNumber ?? 0) >= after[2]);
		expect(await getTx(c.txId)).toMatchObject({ amountReceived: "0", status: "pending" });
		expect(await credits(c.txId)).toEqual([]);

		// Paid again on the chain that stays: credited at 3 confirmations.
		await ton.pay(ton.faucet, c.address, toNano("0.4"));
		await ton.seal();
		await until("confirming again", async () => (await getTx(c.txId)).amountConfirming === "0.4");
		expect((await getTx(c.txId)).status).toBe("pending");
		await ton.seal();
		await ton.seal();
		await until("completed", async () => (await getTx(c.txId)).status === "completed");
		expect((await credits(c.txId)).map(r => r.amount)).toEqual(["0.4"]);
	}, 130_000);
});
