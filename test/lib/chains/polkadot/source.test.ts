/**
 * The Polkadot chain source (lib/chains/polkadot/source.ts) against the chopsticks Asset Hub node
 * (test/helpers/polkadot-node.ts), finality held by the helper: blocks and their links, payments
 * of a block read with the block's own metadata, receivers in the network's SS58 form, and the
 * finalized hash per number.
 */
import { createPolkadotSource, MAX_BLOCKS_PER_READ, type PolkadotSource } from "../../../../lib/chains/polkadot/source";
import { startPolkadotNode, USDT, type PolkadotNode } from "../../../helpers/polkadot-node";

const TOKENS = [
	{ tokenId: "dot", contractAddress: "", decimals: 10 },
	{ tokenId: "usdt", contractAddress: "1984", decimals: 6 },
];

describe("Polkadot chain source on the chopsticks Asset Hub node", () => {
	let dot: PolkadotNode;
	let source: PolkadotSource;

	beforeAll(async () => {
		dot = await startPolkadotNode({ autoFinalize: false });
		// The gateway's form: Polkadot's prefix 0 (the runtime speaks prefix 2).
		source = createPolkadotSource({ networkId: "net", rpcUrl: dot.url, timeoutMs: 30_000, ss58Prefix: 0 });
	}, 300_000);

	afterAll(async () => {
		await source?.close();
		await dot?.stop();
	});

	it("reads blocks linked by parent hash, the head, and nothing above it", async () => {
		const last = await dot.newBlock(2);
		const head = await source.head();
		expect(head).toMatchObject({ number: last.number, hash: last.hash });
		expect(head.timestamp).toBeGreaterThan(1_600_000_000);
		const blocks = await source.blocks(last.number - 1, last.number + 5);
		expect(blocks.map(b => b.number)).toEqual([last.number - 1, last.number]);
		expect(blocks[1].parentHash).toBe(blocks[0].hash);
		expect(await source.block(last.number + 1)).toBeNull();
	});

	it("reads a long range in bounded steps: at most MAX_BLOCKS_PER_READ blocks, each linked to the one before", async () => {
		const start = await dot.head();
		const end = await dot.newBlock(MAX_BLOCKS_PER_READ + 5);
		const first = await source.blocks(start.number + 1, end.number);
		expect(first.map(b => b.number)).toEqual(Array.from({ length: MAX_BLOCKS_PER_READ }, (_, i) => start.number + 1 + i));
		const rest = await source.blocks(first[first.length - 1].number + 1, end.number);
		expect(rest[rest.length - 1]).toMatchObject({ number: end.number, hash: end.hash });
		const all = [...first, ...rest];
		expect(all).toHaveLength(end.number - start.number);
		for (let i = 1; i < all.length; i++) expect(all[i].parentHash).toBe(all[i - 1].hash);
		expect(all[0].parentHash).toBe(start.hash);
	}, 300_000);

	it("finds a native transfer and a USDT transfer to a deposit, in the network's SS58 form, keyed by block hash and event index", async () => {
		// Two payers: one extrinsic each in the same block (the pool's next nonce is not counted by chopsticks).
		const payer = dot.pair("//SourcePayer");
		const usdtPayer = dot.pair("//SourceUsdtPayer");
		await dot.fund(payer.address, 10n ** 15n);
		await dot.fund(usdtPayer.address, 10n ** 15n);
		await dot.mintAsset(USDT.id, usdtPayer.address, 10_000_000n);
		const deposit = dot.pair("//SourceDeposit", "ed25519");
		const depositPolkadot = source.toNetworkForm(deposit.address)!;
		expect(depositPolkadot).toMatch(/^1/);
		await dot.api.tx.balances.transferKeepAlive(deposit.address, 20_000_000_000n).signAndSend(payer);
		await dot.api.tx.assets.transfer(USDT.id, depositPolkadot, 3_000_000n).signAndSend(usdtPayer);
		const block = await dot.newBlock();
		const found = await source.transfers({ fromBlock: block.number, toBlock: block.number, addresses: new Set([depositPolkadot]), tokens: TOKENS });
		expect(found.map(t => [t.tokenId, t.amount, t.toAddress, t.txHash, t.blockHash])).toEqual([
			["dot", "20000000000", depositPolkadot, block.hash, block.hash],
			["usdt", "3000000", depositPolkadot, block.hash, block.hash],
		]);
		expect(found[0].logIndex).not.toBe(found[1].logIndex);
		// Not watched: nothing.
		expect(await source.transfers({ fromBlock: block.number, toBlock: block.number, addresses: new Set(), tokens: TOKENS })).toEqual([]);
	});

	it("says which block is finalized at a number, and null above the finalized head", async () => {
		const block = await dot.newBlock();
		expect(await source.finalizedHash(block.number)).toBeNull();
		await dot.finalize(block.number);
		// The finalized head is read again after a short while (cached for a report pass).
		await new Promise(r => setTimeout(r, 300));
		expect(await source.finalizedHash(block.number)).toBe(block.hash);
		expect(await source.finalizedHash(block.number + 1)).toBeNull();
	});
});
