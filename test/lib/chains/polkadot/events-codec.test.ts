/**
 * The watcher's System.Events decoding (lib/chains/polkadot/events-codec.ts: the raw storage value
 * decoded with polkadot-api codecs built from the runtime's metadata) against @polkadot/api's full
 * decode of the same blocks, on the chopsticks Asset Hub node (test/helpers/polkadot-node.ts): the
 * same events in the same order and phases, the same fields for the events the watcher reads, and
 * so the same payments, in blocks with native and asset transfers, a failed extrinsic, another
 * asset's transfer, batches and inbound XCM messages.
 */
import { createPolkadotSource, type PolkadotSource } from "../../../../lib/chains/polkadot/source";
import { compareDecodes, norm } from "../../../helpers/polkadot-events";
import { startPolkadotNode, USDC, USDT, type PolkadotNode } from "../../../helpers/polkadot-node";

const ASSETS = new Set([String(USDT.id)]);

describe("System.Events decoded from raw storage with metadata-built codecs, against @polkadot/api's decode", () => {
	let dot: PolkadotNode;
	let source: PolkadotSource;

	beforeAll(async () => {
		dot = await startPolkadotNode({ autoFinalize: true });
		source = createPolkadotSource({ networkId: "net", rpcUrl: dot.url, timeoutMs: 60_000, ss58Prefix: 0 });
	}, 300_000);

	afterAll(async () => {
		await source?.close();
		await dot?.stop();
	});

	const compare = (hash: string) => compareDecodes(source, dot.api, hash, ASSETS);

	it("decodes a block of batched native and USDT payments, a failed extrinsic and a USDC transfer as @polkadot/api does: the same payments", async () => {
		const payer = dot.pair("//CodecPayer");
		const usdcPayer = dot.pair("//CodecUsdcPayer");
		const poor = dot.pair("//CodecPoor");
		await dot.fund(payer.address, 10n ** 18n);
		await dot.fund(usdcPayer.address, 10n ** 15n);
		await dot.fund(poor.address, 10n ** 11n);
		await dot.mintAsset(USDT.id, payer.address, 10n ** 12n);
		await dot.mintAsset(USDC.id, usdcPayer.address, 10n ** 12n);
		const to = Array.from({ length: 30 }, (_, i) => dot.pair(`//CodecDeposit${i}`, "ed25519").address);
		const api = dot.api;
		await api.tx.utility.batchAll([
			...to.slice(0, 20).map(a => api.tx.balances.transferKeepAlive(a, 10n ** 10n + 1n)),
			...to.slice(20).map(a => api.tx.assets.transfer(USDT.id, a, 2_000_000n)),
		]).signAndSend(payer);
		// Over its balance: ExtrinsicFailed, nothing credited.
		await api.tx.balances.transferKeepAlive(to[0], 10n ** 14n).signAndSend(poor);
		// Another asset: not credited.
		await api.tx.assets.transfer(USDC.id, to[1], 5_000_000n).signAndSend(usdcPayer);
		const block = await dot.newBlock();
		const { ours, found } = await compare(block.hash);
		expect(ours.some(e => e.section === "system" && e.method === "ExtrinsicFailed")).toBe(true);
		expect(ours.some(e => e.section === "assets" && e.method === "Transferred" && e.data[0] === String(USDC.id))).toBe(true);
		expect(found.map(c => [c.asset, c.amount, c.to])).toEqual([
			...to.slice(0, 20).map(a => ["", 10n ** 10n + 1n, norm(a)]),
			...to.slice(20).map(a => [String(USDT.id), 2_000_000n, norm(a)]),
		]);
		// The source reports them to the watched addresses as stored (Polkadot's prefix), at the events' indices.
		const watched = new Set(to.map(a => source.toNetworkForm(a)!));
		const transfers = await source.transfers({ fromBlock: block.number, toBlock: block.number, addresses: watched, tokens: [{ tokenId: "dot", contractAddress: "", decimals: 10 }, { tokenId: "usdt", contractAddress: "1984", decimals: 6 }] });
		expect(transfers.map(t => [t.logIndex, t.toAddress, t.amount])).toEqual(found.map(c => [c.eventIndex, source.toNetworkForm(c.to), c.amount.toString()]));
	}, 300_000);

	it("decodes inbound XCM messages as @polkadot/api does: a teleport's Balances.Deposit, USDT issued from the relay's account, a trapped message", async () => {
		const deposit = dot.pair("//CodecXcmDeposit", "ed25519");
		const relayAccount = dot.keyring.encodeAddress(new Uint8Array([..."Parent"].map(c => c.charCodeAt(0)).concat(new Array(26).fill(0))));
		await dot.fund(relayAccount, 10n ** 15n);
		await dot.mintAsset(USDT.id, relayAccount, 50_000_000n);
		const ksm = { Concrete: { parents: 1, interior: "Here" } };
		const usdt = { Concrete: { parents: 0, interior: { X2: [{ PalletInstance: 50 }, { GeneralIndex: USDT.id }] } } };
		const withdrawUsdt = [
			{ WithdrawAsset: [{ id: usdt, fun: { Fungible: 20_000_000n } }, { id: ksm, fun: { Fungible: 10n ** 12n } }] },
			{ ClearOrigin: null },
			{ BuyExecution: { fees: { id: ksm, fun: { Fungible: 10n ** 12n } }, weightLimit: "Unlimited" } },
			{ DepositAsset: { assets: { Wild: { AllCounted: 1 } }, beneficiary: { parents: 0, interior: { X1: { AccountId32: { network: null, id: dot.keyring.decodeAddress(deposit.address) } } } } } },
		];
		const block = await dot.newBlockWithDownward([dot.teleportFromRelay(deposit.address, 10n ** 12n), withdrawUsdt, dot.teleportFromRelay(deposit.address, 10n ** 12n, [{ Trap: 7 }])]);
		const { found } = await compare(block.hash);
		// The execution fees each message pays to the collators' pot are arrivals too (to an account never watched).
		expect(found.filter(c => c.to === norm(deposit.address)).map(c => [c.asset, c.to, c.xcm])).toEqual([
			["", norm(deposit.address), true],
			[String(USDT.id), norm(deposit.address), true],
			["", norm(deposit.address), true],
		]);
	}, 300_000);
});
