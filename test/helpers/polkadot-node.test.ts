/**
 * The Polkadot test node (test/helpers/polkadot-node.ts): a real Asset Hub runtime under
 * chopsticks, started offline, driven with @polkadot/api as a watcher and a sweeper will.
 */
import net from "node:net";
import type { ApiPromise } from "@polkadot/api";
import { startPolkadotNode, USDT, USDC, type PolkadotNode } from "./polkadot-node";

interface EventView { section: string; method: string; data: string[]; extrinsicIndex: number | null }

async function eventsAt(api: ApiPromise, hash: string): Promise<EventView[]> {
	const at = await api.at(hash);
	const records = (await at.query.system.events()) as unknown as Array<{ event: { section: string; method: string; data: Array<{ toString(): string }> }; phase: { isApplyExtrinsic: boolean; asApplyExtrinsic: { toNumber(): number } } }>;
	return records.map(r => ({
		section: r.event.section,
		method: r.event.method,
		data: r.event.data.map(d => d.toString()),
		extrinsicIndex: r.phase.isApplyExtrinsic ? r.phase.asApplyExtrinsic.toNumber() : null,
	}));
}

/** Signs and submits; resolves with the extrinsic hash once the pool took it. */
async function submit(tx: { signAndSend(pair: unknown): Promise<{ toHex(): string }> }, signer: unknown): Promise<string> {
	return (await tx.signAndSend(signer)).toHex();
}

async function freeOf(api: ApiPromise, address: string, at?: string): Promise<bigint> {
	const q = at ? await api.at(at) : api;
	const acct = (await q.query.system.account(address)) as unknown as { data: { free: { toString(): string } } };
	return BigInt(acct.data.free.toString());
}

async function assetBalanceOf(api: ApiPromise, id: number, address: string): Promise<bigint> {
	const acct = (await api.query.assets.account(id, address)) as unknown as { isSome: boolean; unwrap(): { balance: { toString(): string } } };
	return acct.isSome ? BigInt(acct.unwrap().balance.toString()) : 0n;
}

describe("Polkadot test node (chopsticks, Asset Hub runtime)", () => {
	let node: PolkadotNode;
	const outbound: string[] = [];
	const realConnect = net.Socket.prototype.connect;
	let startMs = 0;

	beforeAll(async () => {
		// Every socket this process opens is recorded: the node must reach nothing but loopback.
		net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
			const a = args[0] as { host?: string; port?: number; path?: string } | number | string;
			const host = typeof a === "object" ? (a.path ?? a.host ?? "localhost") : typeof a === "number" ? String(args[1] ?? "localhost") : a;
			outbound.push(String(host));
			return (realConnect as (...x: unknown[]) => net.Socket).apply(this, args);
		} as typeof realConnect;
		const t0 = Date.now();
		node = await startPolkadotNode();
		startMs = Date.now() - t0;
	}, 180_000);

	afterAll(async () => {
		net.Socket.prototype.connect = realConnect;
		await node?.stop();
	});

	it("runs the Asset Hub runtime offline: only loopback sockets, manual blocks, real runtime version", async () => {
		// Reported, not asserted (the machine is shared): startup includes gunzip, genesis state root and block #1.
		console.log(`polkadot test node started in ${startMs} ms`);
		const version = node.api.runtimeVersion;
		expect(version.specName.toString()).toBe("statemine");
		expect(version.specVersion.toNumber()).toBe(1_000_000);
		expect(node.api.tx.assets && node.api.tx.balances.transferKeepAlive).toBeTruthy();
		expect(outbound.length).toBeGreaterThan(0);
		for (const host of outbound) expect(["127.0.0.1", "localhost", "::1"]).toContain(host);
		// Manual build mode: nothing appears without newBlock.
		const before = await node.head();
		await new Promise(r => setTimeout(r, 1500));
		expect((await node.head()).number).toBe(before.number);
	});

	it("has USDT 1984 and USDC 1337 with metadata, and mints through a signed assets.mint", async () => {
		for (const asset of [USDT, USDC]) {
			const meta = (await node.api.query.assets.metadata(asset.id)) as unknown as { symbol: { toUtf8(): string }; decimals: { toNumber(): number } };
			expect(meta.symbol.toUtf8()).toBe(asset.symbol);
			expect(meta.decimals.toNumber()).toBe(6);
			const details = (await node.api.query.assets.asset(asset.id)) as unknown as { unwrap(): { isSufficient: { isTrue: boolean }; minBalance: { toString(): string } } };
			expect(details.unwrap().isSufficient.isTrue).toBe(true);
			expect(details.unwrap().minBalance.toString()).toBe(asset.minBalance.toString());
		}
		const holder = node.pair("//UsdcHolder");
		const block = await node.mintAsset(USDC.id, holder.address, 5_000_000n);
		const events = await eventsAt(node.api, block.hash);
		const issued = events.find(e => e.section === "assets" && e.method === "Issued");
		expect(issued?.data).toEqual([String(USDC.id), holder.address, "5000000"]);
		expect(await assetBalanceOf(node.api, USDC.id, holder.address)).toBe(5_000_000n);
	});

	it("a signed balances.transferKeepAlive lands with Balances.Transfer and ExtrinsicSuccess", async () => {
		const alice = node.pair("//PayerAlice");
		const bob = node.pair("//PayeeBob");
		await node.fund(alice.address, 10_000_000_000_000n); // 10 KSM (12 decimals)
		expect(await freeOf(node.api, alice.address)).toBe(10_000_000_000_000n);
		await submit(node.api.tx.balances.transferKeepAlive(bob.address, 1_234_567_890n), alice);
		const block = await node.newBlock();
		const events = await eventsAt(node.api, block.hash);
		// Not the block's only Transfer: collator-selection pays the block author from its pot in
		// on_initialize (phase Initialization, no extrinsic), so a watcher must look at the phase.
		const transfer = events.find(e => e.section === "balances" && e.method === "Transfer" && e.data[0] === alice.address);
		expect(transfer?.data).toEqual([alice.address, bob.address, "1234567890"]);
		expect(transfer?.extrinsicIndex).not.toBeNull();
		expect(events.some(e => e.section === "balances" && e.method === "Transfer" && e.extrinsicIndex === null)).toBe(true);
		const success = events.find(e => e.section === "system" && e.method === "ExtrinsicSuccess" && e.extrinsicIndex === transfer?.extrinsicIndex);
		expect(success).toBeTruthy();
		expect(await freeOf(node.api, bob.address)).toBe(1_234_567_890n);
		// The fee was really charged by the runtime: alice paid more than the amount.
		expect(await freeOf(node.api, alice.address)).toBeLessThan(10_000_000_000_000n - 1_234_567_890n);

		// The gateway's deposit keys are ed25519: one signs as well (the sweeper's case).
		const deposit = node.pair("//EdDeposit", "ed25519");
		await node.fund(deposit.address, 2_000_000_000n);
		await submit(node.api.tx.balances.transferKeepAlive(bob.address, 500_000_000n), deposit);
		const fromEd = await node.newBlock();
		const edEvents = await eventsAt(node.api, fromEd.hash);
		expect(edEvents.find(e => e.method === "Transfer" && e.data[0] === deposit.address)?.data).toEqual([deposit.address, bob.address, "500000000"]);
		expect(await freeOf(node.api, bob.address)).toBe(1_734_567_890n);
	});

	it("assets.transfer of 1984 emits Assets.Transferred; an over-balance transfer gives ExtrinsicFailed", async () => {
		const payer = node.pair("//UsdtPayer");
		const deposit = node.pair("//UsdtDeposit");
		await node.fund(payer.address, 1_000_000_000_000n);
		await node.mintAsset(USDT.id, payer.address, 100_000_000n); // 100 USDT
		await submit(node.api.tx.assets.transfer(USDT.id, deposit.address, 25_000_000n), payer);
		const ok = await node.newBlock();
		const okEvents = await eventsAt(node.api, ok.hash);
		const transferred = okEvents.find(e => e.section === "assets" && e.method === "Transferred");
		expect(transferred?.data).toEqual([String(USDT.id), payer.address, deposit.address, "25000000"]);
		expect(okEvents.some(e => e.method === "ExtrinsicSuccess" && e.extrinsicIndex === transferred?.extrinsicIndex)).toBe(true);
		expect(await assetBalanceOf(node.api, USDT.id, deposit.address)).toBe(25_000_000n);

		// More than the payer holds: the extrinsic is included (fee charged) but fails, no transfer.
		await submit(node.api.tx.assets.transfer(USDT.id, deposit.address, 1_000_000_000n), payer);
		const bad = await node.newBlock();
		const badEvents = await eventsAt(node.api, bad.hash);
		const failed = badEvents.find(e => e.section === "system" && e.method === "ExtrinsicFailed");
		expect(failed).toBeTruthy();
		expect(failed?.extrinsicIndex).not.toBeNull();
		expect(badEvents.some(e => e.section === "assets" && e.method === "Transferred")).toBe(false);
		const err = node.api.registry.findMetaError((node.api.createType("DispatchError", JSON.parse(failed!.data[0])) as unknown as { asModule: never }).asModule);
		expect(`${err.section}.${err.name}`).toBe("assets.BalanceLow");
		expect(await assetBalanceOf(node.api, USDT.id, deposit.address)).toBe(25_000_000n);
	});

	it("best-but-not-finalized blocks, finalized-head subscription, and a setHead rollback that removes a block's events", async () => {
		const payer = node.pair("//ReorgPayer");
		const payee = node.pair("//ReorgPayee");
		await node.fund(payer.address, 5_000_000_000_000n);
		const base = await node.newBlock();
		node.setAutoFinalize(false);

		const seen: number[] = [];
		const unsub = await node.api.rpc.chain.subscribeFinalizedHeads(h => { seen.push(h.number.toNumber()); });
		await submit(node.api.tx.balances.transferKeepAlive(payee.address, 777_000_000n), payer);
		const best = await node.newBlock();
		expect(best.number).toBe(base.number + 1);
		// The watcher's view: best head moved, finalized did not.
		expect((await node.api.rpc.chain.getFinalizedHead()).toHex()).toBe(base.hash);
		expect((await node.api.rpc.chain.getHeader()).number.toNumber()).toBe(best.number);
		expect((await eventsAt(node.api, best.hash)).some(e => e.method === "Transfer" && e.data[1] === payee.address)).toBe(true);

		// Roll back the unfinalized block: the head returns to base and the transfer is gone.
		await expect(node.setHead(base.number - 1)).rejects.toThrow(/finalized/);
		const back = await node.setHead(base.number);
		expect(back.hash).toBe(base.hash);
		expect(await freeOf(node.api, payee.address)).toBe(0n);
		// Build the replacement block (empty: the rolled-back extrinsic is not in the pool any more).
		const replacement = await node.newBlock();
		expect(replacement.number).toBe(best.number);
		expect(replacement.hash).not.toBe(best.hash);
		expect((await node.api.rpc.chain.getBlockHash(best.number)).toHex()).toBe(replacement.hash);
		expect((await eventsAt(node.api, replacement.hash)).some(e => e.method === "Transfer" && e.data[1] === payee.address)).toBe(false);
		expect(await freeOf(node.api, payee.address)).toBe(0n);

		await node.finalize();
		expect((await node.api.rpc.chain.getFinalizedHead()).toHex()).toBe(replacement.hash);
		const deadline = Date.now() + 30_000;
		while (!seen.includes(replacement.number) && Date.now() < deadline) await new Promise(r => setTimeout(r, 50));
		expect(seen).toContain(base.number);
		expect(seen).toContain(replacement.number);
		unsub();
		node.setAutoFinalize(true);
	});
});
