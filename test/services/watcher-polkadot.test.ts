/**
 * Real payments on the Polkadot test node (test/helpers/polkadot-node.ts: chopsticks runs a real
 * Asset Hub runtime offline; a loopback proxy holds the finalized head, so best-but-not-finalized
 * blocks and finality are seen apart): a node running the payments services, webhooks and
 * watcher-polkadot on `polkadot-asset-hub` (a live organization: a mainnet network). The runtime
 * is Kusama Asset Hub's (SS58 prefix 2, 12 decimals); the gateway's deposit addresses are
 * Polkadot's (prefix 0) and the watcher compares account ids, so the prefix does not matter;
 * amounts are counted in the catalogue's DOT decimals (10), base units as the chain moves them.
 */
import type { KeyringPair } from "@polkadot/keyring/types";
import { fromBaseUnits } from "../../lib/money";
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { startPolkadotNode, USDT, type PolkadotNode } from "../helpers/polkadot-node";
import { until } from "../helpers/until";
import { TestNode } from "../helpers/harness";
import { startReceiver, WebhookReceiver } from "../helpers/webhook-receiver";
import { openCheckout, startPaymentsNode, PAYMENTS_SERVICES } from "../e2e/payments.helpers";
import { createUserWithToken } from "../helpers/users";

const NET = networkIdFor("polkadot-asset-hub");
const DOT = tokenIdFor("polkadot-asset-hub", "DOT");
const USDT_TOKEN = tokenIdFor("polkadot-asset-hub", "USDT");
/** 1 DOT in planck (the catalogue's 10 decimals). */
const DOT_UNIT = 10_000_000_000n;

describe("Polkadot watcher on the chopsticks Asset Hub node", () => {
	let dot: PolkadotNode;
	let node: TestNode;
	let receiver: WebhookReceiver;
	let key: { key: string; secret: string };
	let payer: KeyringPair;

	beforeAll(async () => {
		dot = await startPolkadotNode({ autoFinalize: false });
		payer = dot.pair("//WatcherPayer");
		await dot.fund(payer.address, 1_000n * 10n ** 12n);
		await dot.mintAsset(USDT.id, payer.address, 1_000_000_000n);
		await dot.finalize();
		receiver = await startReceiver();
		node = await startPaymentsNode({
			services: [...PAYMENTS_SERVICES, "webhooks", "watcher-polkadot"],
			env: { RPC_URL_POLKADOT_ASSET_HUB: dot.url, WATCHER_POLL_MS: "50", WEBHOOK_POLL_MS: "50" },
		});
		// A mainnet network: a live organization's key (sandbox ones may use test networks only).
		const user = await createUserWithToken(node);
		const res = await node.http("POST", `/organizations/${user.live.id}/api-keys`, { token: user.token, body: { name: "shop", webhookUrl: receiver.url } });
		expect(res.status).toBe(201);
		key = { key: res.body.key, secret: res.body.secret };
		await until("cursor", async () => (await node.app.models.ChainCursor.findByPk(NET))?.blockNumber != null, 120_000);
	}, 300_000);

	afterAll(async () => {
		await node?.stop();
		await receiver?.close();
		await dot?.stop();
	});

	const checkout = (amount: string, tokenId = DOT, currency = "dot") => openCheckout(node, key, { amount, currency, tokenId, networkId: NET });
	const getTx = async (id: string) => (await node.http("GET", `/payments/transactions/${id}`)).body;
	const hooksFor = (intentId: string) => receiver.received.filter(h => h.json?.data?.object?.id === intentId).map(h => h.json.type as string);
	const credits = async (txId: string) => (await node.app.models.TransactionCredit.findAll({ where: { transactionId: txId } })).map(r => [r.txHash, r.logIndex, r.amount]);
	const cursorAt = async (n: number) => until(`cursor at ${n}`, async () => ((await node.app.models.ChainCursor.findByPk(NET))?.blockNumber ?? 0) >= n, 120_000);
	const payDot = async (to: string, planck: bigint, from = payer) => { await dot.api.tx.balances.transferKeepAlive(to, planck).signAndSend(from); };
	const payAsset = async (id: number, to: string, units: bigint, from = payer) => { await dot.api.tx.assets.transfer(id, to, units).signAndSend(from); };
	/** The index of the first event of `section.method` in a block whose fields include `to` (and start with `assetId`). */
	const eventIndex = async (hash: string, section: string, method: string, to: string, assetId?: number) => {
		const at = await dot.api.at(hash);
		const records = (await at.query.system.events()) as unknown as Array<{ event: { section: string; method: string; data: Array<{ toString(): string }> } }>;
		const toKey = dot.keyring.encodeAddress(dot.keyring.decodeAddress(to));
		return records.findIndex(r => r.event.section === section && r.event.method === method && r.event.data.some(d => d.toString() === toKey) && (assetId === undefined || r.event.data[0].toString() === String(assetId)));
	};

	it("shows DOT confirming from a best block, and credits it at finality with signed webhooks", async () => {
		const c = await checkout("0.5");
		await payDot(c.address, DOT_UNIT / 2n);
		const block = await dot.newBlock();
		const seen = await until("confirming", async () => {
			const tx = await getTx(c.txId);
			return tx.amountConfirming === "0.5" ? tx : null;
		}, 120_000);
		expect(seen).toMatchObject({ status: "pending", hash: block.hash, amountReceived: "0" });
		// More best blocks do not credit it: only finality does.
		await dot.newBlock(2);
		await cursorAt(block.number + 2);
		expect(await getTx(c.txId)).toMatchObject({ status: "pending", amountReceived: "0" });
		await dot.finalize(block.number);
		const done = await until("completed", async () => {
			const tx = await getTx(c.txId);
			return tx.status === "completed" ? tx : null;
		}, 120_000);
		expect(done).toMatchObject({ amountReceived: "0.5", amountConfirming: "0", hash: block.hash });
		await until("webhooks", async () => hooksFor(c.intentId).includes("payment_intent.completed"), 120_000);
		expect(hooksFor(c.intentId)).toEqual(["payment_intent.processing", "payment_intent.completed"]);
		const hook = receiver.received.find(h => h.json?.data?.object?.id === c.intentId)!;
		expect(hook.headers["x-webhook-signature"]).toMatch(/^[0-9a-f]{64}$/);
		expect(await credits(c.txId)).toEqual([[block.hash, await eventIndex(block.hash, "balances", "Transfer", c.address), "0.5"]]);
		await dot.finalize();
	}, 390_000);

	it("credits USDT (asset 1984) transferred and issued, and never an asset of another id", async () => {
		const other = { ...USDT, id: 7777, name: "Not Tether", symbol: "USDt" };
		await dot.createAsset(other);
		// Its own payer: one extrinsic per payer per block (chopsticks' next nonce does not count the pool).
		const otherPayer = dot.pair("//OtherAssetPayer");
		await dot.fund(otherPayer.address, 10n ** 12n);
		await dot.mintAsset(other.id, otherPayer.address, 50_000_000n);
		const c = await checkout("2", USDT_TOKEN, "usdt");
		// The look-alike first: same decimals, same amount, same symbol.
		await payAsset(other.id, c.address, 2_000_000n, otherPayer);
		await payAsset(USDT.id, c.address, 1_500_000n);
		const block = await dot.newBlock();
		await until("USDT confirming", async () => (await getTx(c.txId)).amountConfirming === "1.5", 120_000);
		// Assets.Issued straight to the deposit: a mint is a payment too.
		const minted = await dot.mintAsset(USDT.id, c.address, 500_000n);
		await until("mint confirming", async () => (await getTx(c.txId)).amountConfirming === "2", 120_000);
		await dot.finalize(minted.number);
		await until("USDT completed", async () => (await getTx(c.txId)).status === "completed", 120_000);
		expect(await getTx(c.txId)).toMatchObject({ amountReceived: "2" });
		expect((await credits(c.txId)).sort((a, b) => String(a[2]).localeCompare(String(b[2])))).toEqual([
			[minted.hash, await eventIndex(minted.hash, "assets", "Issued", c.address, USDT.id), "0.5"],
			[block.hash, await eventIndex(block.hash, "assets", "Transferred", c.address, USDT.id), "1.5"],
		]);
	}, 390_000);

	it("credits a teleport from the relay chain (XCM, Balances.Deposit in the inherent that runs downward messages) once, at finality", async () => {
		const c = await checkout("1");
		// 1.01 of the relay's token sent; BuyExecution keeps the XCM fee, the rest is deposited.
		const block = await dot.newBlockWithDownward([dot.teleportFromRelay(c.address, DOT_UNIT + DOT_UNIT / 100n)]);
		const at = await dot.api.at(block.hash);
		const records = (await at.query.system.events()) as unknown as Array<{ event: { section: string; method: string; data: Array<{ toString(): string }> } }>;
		const index = await eventIndex(block.hash, "balances", "Deposit", c.address);
		expect(index).toBeGreaterThan(0);
		const deposited = fromBaseUnits(records[index].event.data[1].toString(), 10);
		await until("teleport confirming", async () => (await getTx(c.txId)).amountConfirming === deposited, 120_000);
		expect(await credits(c.txId)).toEqual([]);
		await dot.finalize(block.number);
		await until("teleport completed", async () => (await getTx(c.txId)).status === "completed", 120_000);
		// Read again over more finalized blocks: still one credit.
		const later = await dot.newBlock(2);
		await dot.finalize(later.number);
		await cursorAt(later.number);
		expect(await getTx(c.txId)).toMatchObject({ amountReceived: deposited, amountConfirming: "0", hash: block.hash });
		expect(await credits(c.txId)).toEqual([[block.hash, index, deposited]]);
	}, 300_000);

	it("credits a partial payment topped up, and an over-payment", async () => {
		const a = await checkout("0.3");
		await payDot(a.address, DOT_UNIT / 10n);
		await dot.newBlock();
		await dot.finalize();
		await until("partial", async () => (await getTx(a.txId)).amountReceived === "0.1", 120_000);
		expect((await getTx(a.txId)).status).toBe("pending");
		await payDot(a.address, (DOT_UNIT * 2n) / 10n);
		await dot.newBlock();
		await dot.finalize();
		await until("topped up", async () => (await getTx(a.txId)).status === "completed", 120_000);
		expect((await getTx(a.txId)).amountReceived).toBe("0.3");
		expect(await credits(a.txId)).toHaveLength(2);

		const b = await checkout("0.25");
		await payDot(b.address, 3_765_000_000n);
		await dot.newBlock();
		await dot.finalize();
		const over = await until("over", async () => {
			const tx = await getTx(b.txId);
			return tx.status === "completed" ? tx : null;
		}, 120_000);
		expect(over.amountReceived).toBe("0.3765");
	}, 390_000);

	it("credits nothing from a failed extrinsic", async () => {
		const c = await checkout("1", USDT_TOKEN, "usdt");
		const poor = dot.pair("//PoorPayer");
		await dot.fund(poor.address, 10n ** 12n);
		await dot.mintAsset(USDT.id, poor.address, 100_000n);
		// More than it holds: included, its fee charged, System.ExtrinsicFailed (assets.BalanceLow).
		await payAsset(USDT.id, c.address, 1_000_000n, poor);
		const block = await dot.newBlock();
		await dot.finalize();
		const at = await dot.api.at(block.hash);
		const events = (await at.query.system.events()) as unknown as Array<{ event: { section: string; method: string } }>;
		expect(events.some(e => e.event.section === "system" && e.event.method === "ExtrinsicFailed")).toBe(true);
		await cursorAt(block.number);
		// The report pass after the step: give it a moment's worth of passes before looking.
		await dot.newBlock();
		await dot.finalize();
		await cursorAt(block.number + 1);
		expect(await getTx(c.txId)).toMatchObject({ amountConfirming: "0", amountReceived: "0", status: "pending" });
		expect(await credits(c.txId)).toEqual([]);
	});

	it("reverts a sighting whose best block is rolled back (setHead) before finality, and never credits it", async () => {
		const c = await checkout("0.4");
		const base = await dot.head();
		await payDot(c.address, (DOT_UNIT * 4n) / 10n);
		const block = await dot.newBlock();
		await until("confirming", async () => (await getTx(c.txId)).amountConfirming === "0.4", 120_000);
		// The block leaves the canonical chain; the blocks built after it do not carry the payment.
		await dot.setHead(base.number);
		const after = await dot.newBlock(3);
		expect((await dot.api.rpc.chain.getBlockHash(block.number)).toHex()).not.toBe(block.hash);
		await until("reverted", async () => (await getTx(c.txId)).amountConfirming === "0", 120_000);
		await dot.finalize(after.number);
		await cursorAt(after.number);
		expect(await getTx(c.txId)).toMatchObject({ amountReceived: "0", status: "pending" });
		expect(await credits(c.txId)).toEqual([]);
	}, 270_000);
});
