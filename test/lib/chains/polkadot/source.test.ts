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

	/** The block's events as (index, section.method, fields) for the assertions below. */
	const eventsOf = async (hash: string) => {
		const records = (await (await dot.api.at(hash)).query.system.events()) as unknown as Array<{ phase: { toString(): string }; event: { section: string; method: string; data: Array<{ toString(): string }> } }>;
		return records.map((r, i) => ({ i, phase: r.phase.toString(), name: `${r.event.section}.${r.event.method}`, data: r.event.data.map(d => d.toString()) }));
	};

	it("credits XCM arrivals from the relay chain: a KSM teleport (Balances.Deposit) and USDT from the relay's account (Assets.Issued), each once", async () => {
		const deposit = dot.pair("//SourceXcmDeposit", "ed25519");
		const depositPolkadot = source.toNetworkForm(deposit.address)!;
		// The relay chain's account here (ParentIsPreset: "Parent" then zeros) holds KSM and USDT it can send on.
		const relayAccount = dot.keyring.encodeAddress(new Uint8Array([..."Parent"].map(c => c.charCodeAt(0)).concat(new Array(26).fill(0))));
		await dot.fund(relayAccount, 10n ** 15n);
		await dot.mintAsset(USDT.id, relayAccount, 50_000_000n);
		const ksm = { Concrete: { parents: 1, interior: "Here" } };
		const usdt = { Concrete: { parents: 0, interior: { X2: [{ PalletInstance: 50 }, { GeneralIndex: USDT.id }] } } };
		const teleport = dot.teleportFromRelay(deposit.address, 10n ** 12n);
		// Assets sorted as XCM requires (parents 0 before parents 1); the fee paid in KSM, the first asset (USDT) deposited, the KSM left trapped.
		const withdrawUsdt = [
			{ WithdrawAsset: [{ id: usdt, fun: { Fungible: 20_000_000n } }, { id: ksm, fun: { Fungible: 10n ** 12n } }] },
			{ ClearOrigin: null },
			{ BuyExecution: { fees: { id: ksm, fun: { Fungible: 10n ** 12n } }, weightLimit: "Unlimited" } },
			{ DepositAsset: { assets: { Wild: { AllCounted: 1 } }, beneficiary: { parents: 0, interior: { X1: { AccountId32: { network: null, id: dot.keyring.decodeAddress(deposit.address) } } } } } },
		];
		const block = await dot.newBlockWithDownward([teleport, withdrawUsdt]);
		const events = await eventsOf(block.hash);
		// Where it ran, as the runtime says: inside the parachainSystem inherent (ApplyExtrinsic 1), each message closed by its outcome.
		const outcomes = events.filter(e => e.name === "dmpQueue.ExecutedDownward");
		expect(outcomes.map(e => [e.phase, JSON.parse(e.data[2])])).toEqual([
			['{"applyExtrinsic":1}', { complete: expect.anything() }],
			['{"applyExtrinsic":1}', { complete: expect.anything() }],
		]);
		expect(events.some(e => e.name === "balances.Minted")).toBe(false);
		const credited = events.filter(e => e.name === "balances.Deposit" && e.data[0] === dot.keyring.encodeAddress(deposit.address));
		const issued = events.filter(e => e.name === "assets.Issued" && e.data[1] === dot.keyring.encodeAddress(deposit.address));
		expect(credited).toHaveLength(1);
		expect(issued).toHaveLength(1);
		expect(BigInt(credited[0].data[1])).toBeLessThan(10n ** 12n);
		expect(BigInt(credited[0].data[1])).toBeGreaterThan(10n ** 12n - 10n ** 9n);

		const found = await source.transfers({ fromBlock: block.number, toBlock: block.number, addresses: new Set([depositPolkadot]), tokens: TOKENS });
		expect(found.map(t => [t.tokenId, t.amount, t.logIndex, t.txHash])).toEqual([
			["dot", credited[0].data[1], credited[0].i, block.hash],
			["usdt", "20000000", issued[0].i, block.hash],
		]);
	});

	it("credits a teleport whose message then fails (Incomplete): its Balances.Deposit stayed in the block and the money in the account", async () => {
		const deposit = dot.pair("//SourceXcmTrapDeposit", "ed25519");
		const depositPolkadot = source.toNetworkForm(deposit.address)!;
		const block = await dot.newBlockWithDownward([dot.teleportFromRelay(deposit.address, 10n ** 12n, [{ Trap: 7 }])]);
		const events = await eventsOf(block.hash);
		const outcome = events.find(e => e.name === "dmpQueue.ExecutedDownward")!;
		expect(JSON.parse(outcome.data[2])).toEqual({ incomplete: [expect.anything(), { trap: 7 }] });
		const credited = events.find(e => e.name === "balances.Deposit" && e.data[0] === dot.keyring.encodeAddress(deposit.address))!;
		const account = (await dot.api.query.system.account(deposit.address)) as unknown as { data: { free: { toString(): string } } };
		expect(account.data.free.toString()).toBe(credited.data[1]);
		const found = await source.transfers({ fromBlock: block.number, toBlock: block.number, addresses: new Set([depositPolkadot]), tokens: TOKENS });
		expect(found.map(t => [t.amount, t.logIndex])).toEqual([[credited.data[1], credited.i]]);
	});

	it("never credits a Balances.Deposit in a signed extrinsic's phase: the fee refund to a deposit that signs, the fee to the collators' pot", async () => {
		const deposit = dot.pair("//SourceRefundDeposit", "ed25519");
		const depositPolkadot = source.toNetworkForm(deposit.address)!;
		await dot.fund(deposit.address, 10n ** 13n);
		const other = dot.pair("//SourceRefundOther");
		// A batch interrupted at its first call (over the balance) is charged for the calls it ran: the rest of the fee is refunded to the signer.
		await dot.api.tx.utility.batch([dot.api.tx.balances.transferKeepAlive(other.address, 10n ** 15n), dot.api.tx.balances.transferKeepAlive(other.address, 10n ** 10n)]).signAndSend(deposit);
		const block = await dot.newBlock();
		const events = await eventsOf(block.hash);
		const refund = events.filter(e => e.name === "balances.Deposit" && e.data[0] === dot.keyring.encodeAddress(deposit.address));
		expect(refund).toHaveLength(1);
		expect(refund[0].phase).toBe('{"applyExtrinsic":2}');
		expect(events.some(e => e.name === "utility.BatchInterrupted")).toBe(true);
		const pot = events.find(e => e.name === "balances.Deposit" && e.data[0] !== dot.keyring.encodeAddress(deposit.address))!;
		expect(pot.phase).toBe('{"applyExtrinsic":2}');
		const watched = new Set([depositPolkadot, source.toNetworkForm(pot.data[0])!]);
		expect(await source.transfers({ fromBlock: block.number, toBlock: block.number, addresses: watched, tokens: TOKENS })).toEqual([]);
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
