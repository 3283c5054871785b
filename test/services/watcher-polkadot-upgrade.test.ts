/**
 * A runtime upgrade inside the range the Polkadot watcher reads (issue 20): chopsticks starts an
 * older Asset Hub runtime (`statemine` 900, test/fixtures/polkadot/README.md), payments are made,
 * the runtime is upgraded the parachain way (authorized code, enactAuthorizedUpgrade, the relay's
 * go-ahead) to `statemine` 1,000,000 (the runtime of the other watcher tests), more payments are
 * made; only then does a watcher read the whole range, in one step. The two runtimes' metadata
 * differ (the events' weight layout, among others), so every block's events must be decoded with
 * the metadata of the runtime that wrote them.
 *
 * Two nodes on one database: the core node (payments services) and a watcher node (networks,
 * transactions, watcher-polkadot), stopped while the blocks are made and started again after.
 */
import { ApiPromise, WsProvider } from "@polkadot/api";
import type { KeyringPair } from "@polkadot/keyring/types";
import { u8aToHex } from "@polkadot/util";
import { decodeAddress } from "@polkadot/util-crypto";
import { createPolkadotSource, MAX_BLOCKS_PER_READ } from "../../lib/chains/polkadot/source";
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { compareDecodes } from "../helpers/polkadot-events";
import { ASSET_HUB_SPEC, ASSET_HUB_V900_SPEC, runtimeCodeOf, startPolkadotNode, USDT, type PolkadotNode } from "../helpers/polkadot-node";
import { until } from "../helpers/until";
import { startNode, type LogLine, type TestNode } from "../helpers/harness";
import { openCheckout, startPaymentsNode } from "../e2e/payments.helpers";
import { createUserWithToken } from "../helpers/users";

const NET = networkIdFor("polkadot-asset-hub");
const DOT = tokenIdFor("polkadot-asset-hub", "DOT");
const USDT_TOKEN = tokenIdFor("polkadot-asset-hub", "USDT");
/** 1 DOT in planck (the catalogue's 10 decimals; the chain moves base units). */
const DOT_UNIT = 10_000_000_000n;

interface EventRecord {
	event: { section: string; method: string; data: Array<{ toString(): string; toHex(): string; toJSON(): unknown }> };
}

describe("Polkadot watcher across a runtime upgrade (chopsticks, statemine 900 to 1,000,000)", () => {
	let dot: PolkadotNode;
	let core: TestNode;
	let watcher: TestNode | null = null;
	let key: { key: string; secret: string };
	let dotPayer: KeyringPair;
	let usdtPayer: KeyringPair;
	/** The watcher nodes' log lines (info and above), shown when a wait times out. */
	const logs: LogLine[] = [];

	const startWatcher = () => startNode({
		shareWith: core,
		services: ["networks", "transactions", "watcher-polkadot"],
		env: { RPC_URL_POLKADOT_ASSET_HUB: dot.url, WATCHER_POLL_MS: "50" },
		logs,
	});
	const lastLogs = () => logs.filter(l => l.mod.startsWith("watcher") || l.level !== "info").slice(-30).map(l => `${l.level} ${l.mod} ${l.text}`).join("\n");
	const cursor = async () => (await core.app.models.ChainCursor.findByPk(NET))?.blockNumber ?? null;

	beforeAll(async () => {
		dot = await startPolkadotNode({ spec: ASSET_HUB_V900_SPEC });
		dotPayer = dot.pair("//UpgradeDotPayer");
		usdtPayer = dot.pair("//UpgradeUsdtPayer");
		await dot.fund(dotPayer.address, 1_000n * 10n ** 12n);
		await dot.fund(usdtPayer.address, 1_000n * 10n ** 12n);
		await dot.mintAsset(USDT.id, usdtPayer.address, 1_000_000_000n);
		core = await startPaymentsNode();
		watcher = await startWatcher();
		// A mainnet network: a live organization's key; its checkouts need a watcher following the network.
		const user = await createUserWithToken(core);
		const res = await core.http("POST", `/organizations/${user.live.id}/api-keys`, { token: user.token, body: { name: "shop" } });
		expect(res.status).toBe(201);
		key = { key: res.body.key, secret: res.body.secret };
		await until("cursor", async () => (await cursor()) != null, 120_000);
	}, 300_000);

	afterAll(async () => {
		await watcher?.stop();
		await core?.stop();
		await dot?.stop();
	});

	const checkout = (amount: string, tokenId = DOT, currency = "dot") => openCheckout(core, key, { amount, currency, tokenId, networkId: NET });
	const getTx = async (id: string) => (await core.http("GET", `/payments/transactions/${id}`)).body;
	const credits = async (txId: string) => (await core.app.models.TransactionCredit.findAll({ where: { transactionId: txId } }))
		.map(r => [r.txHash, r.logIndex, r.amount])
		.sort((a, b) => String(a[2]).localeCompare(String(b[2])));
	const records = async (hash: string) => (await (await dot.api.at(hash)).query.system.events()) as unknown as EventRecord[];
	/** The index of the event `section.method` in a block whose fields include `to` (and, for assets, start with `assetId`). */
	const eventIndex = async (hash: string, section: string, method: string, to: string, assetId?: number) => {
		// By account id: the upgraded runtime declares its own SS58 prefix, so the text form changes.
		const toId = u8aToHex(decodeAddress(to));
		const index = (await records(hash)).findIndex(r => r.event.section === section && r.event.method === method
			&& r.event.data.some(d => d.toHex() === toId) && (assetId === undefined || r.event.data[0].toString() === String(assetId)));
		expect(index).toBeGreaterThanOrEqual(0);
		return index;
	};
	/** The dispatch weight of a block's first System.ExtrinsicSuccess, as its runtime's metadata decodes it. */
	const successWeight = async (hash: string) => ((await records(hash)).find(r => r.event.section === "system" && r.event.method === "ExtrinsicSuccess")!.event.data[0].toJSON() as { weight: unknown }).weight;
	const payDot = async (to: string, planck: bigint) => { await dot.api.tx.balances.transferKeepAlive(to, planck).signAndSend(dotPayer); return dot.newBlock(); };
	const payUsdt = async (to: string, units: bigint) => { await dot.api.tx.assets.transfer(USDT.id, to, units).signAndSend(usdtPayer); return dot.newBlock(); };
	const version = (hash: string) => dot.rpc<{ specName: string; specVersion: number; transactionVersion: number }>("state_getRuntimeVersion", [hash]);

	it("credits every payment of a range that spans the upgrade exactly once, with its amount, in one read", async () => {
		const a = await checkout("0.5");
		const b = await checkout("1.5", USDT_TOKEN, "usdt");
		const c = await checkout("2", USDT_TOKEN, "usdt");
		const d = await checkout("0.25", USDT_TOKEN, "usdt");
		const e = await checkout("0.5", USDT_TOKEN, "usdt");
		const f = await checkout("1.25");
		// The watcher has read up to the head; stopped, it reads nothing more until it starts again.
		const head = await dot.head();
		await until("cursor at the head", async () => ((await cursor()) ?? -1) >= head.number, 120_000);
		await watcher!.stop();
		watcher = null;
		const from = (await cursor())!;

		// Before the upgrade (statemine 900): DOT and USDT.
		const a1 = await payDot(a.address, DOT_UNIT / 2n);
		const b1 = await payUsdt(b.address, 1_500_000n);
		const c1 = await payUsdt(c.address, 500_000n);
		const upgraded = await dot.upgradeRuntime(runtimeCodeOf(ASSET_HUB_SPEC));
		// After it (statemine 1,000,000): DOT transferred, USDT transferred and issued.
		const f1 = await payDot(f.address, DOT_UNIT + DOT_UNIT / 4n);
		const c2 = await payUsdt(c.address, 1_500_000n);
		const d1 = await payUsdt(d.address, 250_000n);
		const e2 = await dot.mintAsset(USDT.id, e.address, 500_000n);

		// The runtime really changed inside the range: spec version, transaction version, metadata.
		expect(await version(a1.hash)).toMatchObject({ specName: "statemine", specVersion: 900, transactionVersion: 6 });
		expect(await version(e2.hash)).toMatchObject({ specName: "statemine", specVersion: 1_000_000, transactionVersion: 13 });
		expect(await version(upgraded.hash)).toMatchObject({ specVersion: 1_000_000 });
		// The block that applied it ran the old code, but its state holds the new one (what a node
		// reports at it); the block before still holds the old code.
		expect(await version(await dot.rpc<string>("chain_getBlockHash", [upgraded.number - 1]))).toMatchObject({ specVersion: 900 });
		const [metaBefore, metaAfter] = await Promise.all([dot.rpc<string>("state_getMetadata", [a1.hash]), dot.rpc<string>("state_getMetadata", [e2.hash])]);
		expect(metaBefore).not.toBe(metaAfter);
		// The same event's layout differs: a u64 weight before, Weight { refTime, proofSize } after.
		expect(typeof await successWeight(a1.hash)).toBe("number");
		expect(await successWeight(e2.hash)).toEqual({ refTime: expect.any(Number), proofSize: expect.any(Number) });

		// The watcher's decoder (events-codec.ts, chosen by the spec version at the parent) gives what
		// @polkadot/api gives, on both sides: the old code's blocks, the block that applied the upgrade
		// (the old code ran it), the new code's first (its migrations), and the payments after it.
		// The reference is a client started after the upgrade: the node's own client, which lived
		// through it, decoded the two upgrade blocks with the new runtime's types (seen: @polkadot/api
		// finds a block's registry first by the last block hash a registry served).
		const source = createPolkadotSource({ networkId: NET, rpcUrl: dot.url, timeoutMs: 60_000, ss58Prefix: 0 });
		const reference = await ApiPromise.create({ provider: new WsProvider(dot.url), noInitWarn: true });
		try {
			const firstNew = await dot.rpc<string>("chain_getBlockHash", [upgraded.number + 1]);
			const paid = new Map<string, string[]>();
			const names = new Map<string, string[]>();
			for (const hash of [a1.hash, b1.hash, c1.hash, upgraded.number - 1, upgraded.hash, firstNew, f1.hash, c2.hash, d1.hash, e2.hash]) {
				const at = typeof hash === "number" ? await dot.rpc<string>("chain_getBlockHash", [hash]) : hash;
				const { ours, found } = await compareDecodes(source, reference, at, new Set([String(USDT.id)]));
				paid.set(at, found.map(p => `${p.asset}:${p.to}:${p.amount}`));
				names.set(at, ours.map(e => `${e.section}.${e.method}`));
			}
			// The upgrade's own events, decoded with the old runtime's metadata (the code that ran those blocks).
			expect(names.get(await dot.rpc<string>("chain_getBlockHash", [upgraded.number - 1]))).toContain("parachainSystem.ValidationFunctionStored");
			expect(names.get(upgraded.hash)).toContain("parachainSystem.ValidationFunctionApplied");
			const id = (address: string) => u8aToHex(decodeAddress(address));
			expect(paid.get(a1.hash)).toContain(`:${id(a.address)}:${DOT_UNIT / 2n}`);
			expect(paid.get(b1.hash)).toContain(`${USDT.id}:${id(b.address)}:1500000`);
			expect(paid.get(f1.hash)).toContain(`:${id(f.address)}:${DOT_UNIT + DOT_UNIT / 4n}`);
			expect(paid.get(d1.hash)).toContain(`${USDT.id}:${id(d.address)}:250000`);
		} finally {
			await source.close();
			await reference.disconnect();
		}

		// One read: the whole range fits in one step of the source.
		expect(e2.number - from).toBeLessThanOrEqual(MAX_BLOCKS_PER_READ);
		watcher = await startWatcher();
		for (const t of [a, b, c, d, e, f]) await until(`${t.txId} completed`, async () => (await getTx(t.txId)).status === "completed", 180_000, lastLogs);
		expect(await getTx(a.txId)).toMatchObject({ amountReceived: "0.5" });
		expect(await getTx(b.txId)).toMatchObject({ amountReceived: "1.5" });
		expect(await getTx(c.txId)).toMatchObject({ amountReceived: "2" });
		expect(await getTx(d.txId)).toMatchObject({ amountReceived: "0.25" });
		expect(await getTx(e.txId)).toMatchObject({ amountReceived: "0.5" });
		expect(await getTx(f.txId)).toMatchObject({ amountReceived: "1.25" });

		const expected = async () => ({
			a: [[a1.hash, await eventIndex(a1.hash, "balances", "Transfer", a.address), "0.5"]],
			b: [[b1.hash, await eventIndex(b1.hash, "assets", "Transferred", b.address, USDT.id), "1.5"]],
			c: [[c1.hash, await eventIndex(c1.hash, "assets", "Transferred", c.address, USDT.id), "0.5"], [c2.hash, await eventIndex(c2.hash, "assets", "Transferred", c.address, USDT.id), "1.5"]],
			d: [[d1.hash, await eventIndex(d1.hash, "assets", "Transferred", d.address, USDT.id), "0.25"]],
			e: [[e2.hash, await eventIndex(e2.hash, "assets", "Issued", e.address, USDT.id), "0.5"]],
			f: [[f1.hash, await eventIndex(f1.hash, "balances", "Transfer", f.address), "1.25"]],
		});
		const actual = async () => ({ a: await credits(a.txId), b: await credits(b.txId), c: await credits(c.txId), d: await credits(d.txId), e: await credits(e.txId), f: await credits(f.txId) });
		const want = await expected();
		expect(await actual()).toEqual(want);

		// Later steps read past the range and credit nothing twice.
		const more = await dot.newBlock(2);
		await until("cursor past the range", async () => ((await cursor()) ?? -1) >= more.number, 120_000);
		expect(await actual()).toEqual(want);
	}, 600_000);
});
