/**
 * A Polkadot Asset Hub test node for a test file: @acala-network/chopsticks running a real Asset
 * Hub runtime (the wasm in test/fixtures/polkadot/, executed by chopsticks' executor) from a raw
 * chain spec, with no network, behind a real WebSocket JSON-RPC on a free loopback port; plus the
 * set-up a payment test needs: funded accounts, assets 1984 (USDT) and 1337 (USDC), blocks on
 * demand, rollbacks, and a finalized head the test moves itself.
 *
 * Finality: chopsticks has no GRANDPA; its chain_getFinalizedHead / chain_subscribeFinalizedHeads
 * answer the best head (every block it builds is "finalized" at once, and dev_setHead moves that
 * "finalized" head backwards). So `url` is a small loopback proxy in front of chopsticks that
 * answers those two calls (and the unsubscribe) from a finalized block the helper holds, and
 * passes every other call through. With autoFinalize on (the default) each newBlock finalizes the
 * new head; with it off, blocks stay best-but-not-finalized until finalize(n). Rolling back below
 * the finalized block is refused, as a real chain never reverts a finalized block.
 * `chopsticksUrl` is chopsticks itself (finalized = best).
 *
 * In-process: chopsticks runs the runtime in a worker thread; its server and the proxy share the
 * test's event loop (tests await, they never block it).
 */
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import WebSocket from "ws";
import { ApiPromise, WsProvider } from "@polkadot/api";
import { Keyring } from "@polkadot/keyring";
import type { KeyringPair } from "@polkadot/keyring/types";
import { u8aToHex } from "@polkadot/util";
import { blake2AsHex, cryptoWaitReady } from "@polkadot/util-crypto";
import { until } from "./until";

/** The raw chain spec (runtime code in `:code`); source, version and licence: its README. */
/** A fixture of test/fixtures/polkadot/; built (dist/test/helpers, the benches) the fixture is not copied, so it is read from the source tree. */
const fixture = (name: string): string => {
	const here = path.join(__dirname, "..", "fixtures", "polkadot", name);
	const source = path.join(__dirname, "..", "..", "..", "test", "fixtures", "polkadot", name);
	return fs.existsSync(here) || !fs.existsSync(source) ? here : source;
};
export const ASSET_HUB_SPEC = fixture("asset-hub-kusama-local.json.gz");
/**
 * An older Asset Hub (`statemine` spec version 900, Rococo Asset Hub's genesis): the chain a
 * runtime-upgrade test starts on before it upgrades to ASSET_HUB_SPEC's runtime. Its README.
 */
export const ASSET_HUB_V900_SPEC = fixture("asset-hub-rococo-v900.json.gz");

export interface AssetDef {
	id: number;
	name: string;
	symbol: string;
	decimals: number;
	/** Smallest balance an account may hold (the asset's existential deposit), in base units. */
	minBalance: bigint;
}

/** Polkadot Asset Hub's USDT and USDC (ids, decimals and min balances as on the live chain). */
export const USDT: AssetDef = { id: 1984, name: "Tether USD", symbol: "USDt", decimals: 6, minBalance: 700n };
export const USDC: AssetDef = { id: 1337, name: "USD Coin", symbol: "USDC", decimals: 6, minBalance: 70_000n };

export interface BlockRef {
	number: number;
	hash: string;
}

export interface PolkadotNodeOptions {
	/** Each newBlock also finalizes the new head (default true). */
	autoFinalize?: boolean;
	/** Create USDT (1984) and USDC (1337) at start, owned by `assetAdmin` (default true). */
	assets?: boolean;
	/** The gzipped raw chain spec to start from (default ASSET_HUB_SPEC). */
	spec?: string;
}

export interface PolkadotNode {
	/** ws:// URL a watcher uses: finalized heads as the helper says (see the file comment). */
	url: string;
	/** ws:// URL of chopsticks itself: its finalized head is always the best head. */
	chopsticksUrl: string;
	/** The helper's own client (through `url`). */
	api: ApiPromise;
	/** sr25519 keyring, SS58 prefix of the runtime (2 for this Kusama Asset Hub runtime). */
	keyring: Keyring;
	ss58Format: number;
	/** Native token decimals and symbol from the spec's properties. */
	decimals: number;
	symbol: string;
	/** Funded account that owns and issues the test assets (signs assets.mint). */
	assetAdmin: KeyringPair;
	/** A pair from a dev-style URI (e.g. "//Payer1"); sr25519 unless `type` (deposits are ed25519). */
	pair(uri: string, type?: "sr25519" | "ed25519"): KeyringPair;
	/** Sets an account's free native balance by storage (no block, no event), TotalIssuance moved by the difference; keeps its nonce. */
	fund(address: string, planck: bigint): Promise<void>;
	/** Writes an asset's details and metadata by storage (sufficient, owner = issuer = assetAdmin, no block). */
	createAsset(asset: AssetDef): Promise<void>;
	/** Mints through a real signed assets.mint by assetAdmin and builds its block (Assets.Issued). */
	mintAsset(assetId: number, to: string, amount: bigint): Promise<BlockRef>;
	/**
	 * Upgrades the runtime as a parachain does: the code's hash authorized by storage (the root
	 * call chopsticks cannot sign), `parachainSystem.enactAuthorizedUpgrade(code)` signed by
	 * assetAdmin (ValidationFunctionStored), then the next block, whose validation data carries the
	 * relay chain's go-ahead (ValidationFunctionApplied: the new code is in that block's state and
	 * runs the blocks after it), then one more (the new code's first, its migrations). Returns the
	 * block that applied it, once the helper's client speaks the new version.
	 */
	upgradeRuntime(code: string): Promise<BlockRef>;
	/** Builds `count` blocks (default 1) from the pool; returns the last. Finalizes it if autoFinalize. */
	newBlock(count?: number): Promise<BlockRef>;
	/**
	 * Builds one block (with the pool's extrinsics) that receives these XCM v3 messages from the
	 * relay chain (downward messages, origin Parent), each a list of instructions as the api's
	 * `XcmV3Instruction` JSON. Finalizes it if autoFinalize.
	 */
	newBlockWithDownward(messages: ReadonlyArray<readonly unknown[]>): Promise<BlockRef>;
	/**
	 * The instructions of a relay-chain teleport of its native token (KSM on this runtime) to
	 * `to`, as `polkadotXcm.limitedTeleportAssets` on the relay sends them: ReceiveTeleportedAsset,
	 * ClearOrigin, BuyExecution (paid from the amount), DepositAsset to the account; `after` appended.
	 */
	teleportFromRelay(to: string, planck: bigint, after?: readonly unknown[]): unknown[];
	/** Moves the best head back to block `number` (its descendants leave the canonical chain). */
	setHead(number: number): Promise<BlockRef>;
	/** Finalizes block `number` of the canonical chain (default: the head). Never moves backwards. */
	finalize(number?: number): Promise<BlockRef>;
	setAutoFinalize(on: boolean): void;
	head(): Promise<BlockRef>;
	finalized(): BlockRef;
	/** JSON-RPC call straight to chopsticks (dev_* and everything else). */
	rpc<T = unknown>(method: string, params?: unknown[]): Promise<T>;
	stop(): Promise<void>;
}

interface RpcMessage {
	jsonrpc?: string;
	id?: number | string | null;
	method?: string;
	params?: unknown;
	result?: unknown;
	error?: unknown;
}

const specCache = new Map<string, unknown>();
/** Nodes alive in this process: chopsticks' wasm executor worker is one per process, shared. */
let liveNodes = 0;
function loadSpec(file: string): unknown {
	if (!specCache.has(file)) specCache.set(file, JSON.parse(zlib.gunzipSync(fs.readFileSync(file)).toString("utf8")));
	return specCache.get(file);
}

/** The runtime code (`:code`, hex) of a gzipped raw chain spec. */
export function runtimeCodeOf(file: string): string {
	const code = (loadSpec(file) as { genesis: { raw: { top: Record<string, string> } } }).genesis.raw.top["0x3a636f6465"];
	if (!code) throw new Error(`${file} has no :code`);
	return code;
}

/** A JSON-RPC client on one WebSocket (the helper's control line to chopsticks). */
async function rpcClient(url: string) {
	const ws = new WebSocket(url);
	await new Promise<void>((resolve, reject) => { ws.once("open", () => resolve()); ws.once("error", reject); });
	let nextId = 1;
	const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
	ws.on("message", data => {
		const msg = JSON.parse(String(data)) as RpcMessage;
		const w = typeof msg.id === "number" ? waiting.get(msg.id) : undefined;
		if (!w) return;
		waiting.delete(msg.id as number);
		if (msg.error) w.reject(new Error(`${JSON.stringify(msg.error)}`));
		else w.resolve(msg.result);
	});
	return {
		call<T>(method: string, params: unknown[] = []): Promise<T> {
			const id = nextId++;
			return new Promise<T>((resolve, reject) => {
				waiting.set(id, { resolve: v => resolve(v as T), reject: e => reject(new Error(`${method}: ${e.message}`)) });
				ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
			});
		},
		close(): void { ws.terminate(); },
	};
}

const FINALIZED_GET = new Set(["chain_getFinalizedHead", "chain_getFinalisedHead"]);
const FINALIZED_SUB = new Set(["chain_subscribeFinalizedHeads", "chain_subscribeFinalisedHeads"]);
const FINALIZED_UNSUB = new Set(["chain_unsubscribeFinalizedHeads", "chain_unsubscribeFinalisedHeads"]);

/**
 * The finality proxy: one upstream WebSocket per client; finalized-head calls answered here from
 * `state`, everything else passed through untouched (ids included: answered calls never reach
 * chopsticks, so ids cannot collide).
 */
async function finalityProxy(upstreamUrl: string, state: { finalized: () => BlockRef; header: (hash: string) => Promise<unknown> }) {
	const server = new WebSocket.Server({ host: "127.0.0.1", port: 0 });
	await new Promise<void>(resolve => server.once("listening", () => resolve()));
	const subs = new Map<string, WebSocket>();
	let nextSub = 1;
	server.on("connection", client => {
		const upstream = new WebSocket(upstreamUrl);
		const queued: string[] = [];
		const mine = new Set<string>();
		upstream.on("open", () => { for (const m of queued.splice(0)) upstream.send(m); });
		upstream.on("message", data => { if (client.readyState === WebSocket.OPEN) client.send(String(data)); });
		upstream.on("close", () => client.close());
		upstream.on("error", () => client.close());
		const reply = (msg: RpcMessage) => { if (client.readyState === WebSocket.OPEN) client.send(JSON.stringify({ jsonrpc: "2.0", ...msg })); };
		client.on("message", data => {
			const text = String(data);
			let msg: RpcMessage | undefined;
			try { msg = JSON.parse(text) as RpcMessage; } catch { msg = undefined; }
			const method = msg && !Array.isArray(msg) ? msg.method ?? "" : "";
			if (msg && FINALIZED_GET.has(method)) {
				reply({ id: msg.id, result: state.finalized().hash });
			} else if (msg && FINALIZED_SUB.has(method)) {
				const subId = `fin${nextSub++}`;
				subs.set(subId, client);
				mine.add(subId);
				reply({ id: msg.id, result: subId });
				// A node sends the current finalized header right after subscribing.
				void notify(subId);
			} else if (msg && FINALIZED_UNSUB.has(method)) {
				const subId = String((msg.params as unknown[] | undefined)?.[0]);
				reply({ id: msg.id, result: subs.delete(subId) });
			} else if (upstream.readyState === WebSocket.OPEN) {
				upstream.send(text);
			} else {
				queued.push(text);
			}
		});
		client.on("close", () => { for (const s of mine) subs.delete(s); upstream.terminate(); });
	});
	async function notify(subId: string): Promise<void> {
		const client = subs.get(subId);
		if (!client) return;
		const header = await state.header(state.finalized().hash);
		if (client.readyState === WebSocket.OPEN && subs.has(subId)) {
			client.send(JSON.stringify({ jsonrpc: "2.0", method: "chain_finalizedHead", params: { subscription: subId, result: header } }));
		}
	}
	const port = (server.address() as { port: number }).port;
	return {
		url: `ws://127.0.0.1:${port}`,
		async notifyAll(): Promise<void> { await Promise.all([...subs.keys()].map(notify)); },
		async close(): Promise<void> {
			for (const c of server.clients) c.terminate();
			await new Promise<void>(resolve => server.close(() => resolve()));
		},
	};
}

export async function startPolkadotNode(opts: PolkadotNodeOptions = {}): Promise<PolkadotNode> {
	// chopsticks reads these once, when first loaded: quiet logs, no plugin scan.
	process.env.LOG_LEVEL ??= "error";
	process.env.DISABLE_PLUGINS ??= "true";
	// Loaded here (not at the top) so the environment above is set before chopsticks reads it.
	const { setupWithServer, BuildBlockMode, destroyWorker } = await import("@acala-network/chopsticks");
	const spec = loadSpec(opts.spec ?? ASSET_HUB_SPEC) as { properties: { ss58Format?: number; tokenDecimals: number; tokenSymbol: string } };
	// A genesis spec means GenesisProvider: no endpoint, nothing fetched; blocks only on dev_newBlock.
	liveNodes++;
	const chopsticks = await setupWithServer({
		genesis: spec as never,
		host: "127.0.0.1",
		port: 0,
		"build-block-mode": BuildBlockMode.Manual,
		// Blocks beyond this fall out of memory and cannot be read back (no db is configured).
		"max-memory-block-count": 100_000,
	} as never);
	const chopsticksUrl = `ws://${chopsticks.addr}`;
	const control = await rpcClient(chopsticksUrl);
	const rpc = <T>(method: string, params: unknown[] = []) => control.call<T>(method, params);

	const headRef = async (): Promise<BlockRef> => {
		const header = await rpc<{ number: string }>("chain_getHeader");
		const number = Number(header.number);
		return { number, hash: await rpc<string>("chain_getBlockHash", [number]) };
	};
	// chopsticks names the genesis block 0x4545..45 (System.BlockHash(0) in the spec), which is not
	// the hash of its header; a signer taking block #0 as its era's birth (@polkadot/api signs at
	// the best head's parent when it cannot use the finalized one) makes a signature the runtime
	// refuses (1010 badProof). One more block puts a real block under the head.
	await rpc("dev_newBlock", [{ count: 1 }]);
	let autoFinalize = opts.autoFinalize ?? true;
	let finalized = await headRef();
	const proxy = await finalityProxy(chopsticksUrl, { finalized: () => finalized, header: hash => rpc("chain_getHeader", [hash]) });

	await cryptoWaitReady();
	// A spec without ss58Format speaks Substrate's generic prefix.
	const ss58Format = spec.properties.ss58Format ?? 42;
	const keyring = new Keyring({ type: "sr25519", ss58Format });
	const api = await ApiPromise.create({ provider: new WsProvider(proxy.url), noInitWarn: true });

	const finalize = async (number?: number): Promise<BlockRef> => {
		const head = await headRef();
		const n = number ?? head.number;
		if (n > head.number) throw new Error(`cannot finalize #${n}: the head is #${head.number}`);
		if (n < finalized.number) throw new Error(`cannot finalize #${n}: #${finalized.number} is already finalized`);
		finalized = { number: n, hash: await rpc<string>("chain_getBlockHash", [n]) };
		await proxy.notifyAll();
		return finalized;
	};
	const newBlock = async (count = 1): Promise<BlockRef> => {
		await rpc("dev_newBlock", [{ count }]);
		const head = await headRef();
		if (autoFinalize) await finalize(head.number);
		return head;
	};
	const newBlockWithDownward = async (messages: ReadonlyArray<readonly unknown[]>): Promise<BlockRef> => {
		const sentAt = (await headRef()).number;
		// chopsticks' dev_newBlock `dmp`: SCALE VersionedXcm bytes, fed to the parachainSystem inherent.
		const dmp = messages.map(instructions => ({ sentAt, msg: api.createType("XcmVersionedXcm", { V3: instructions }).toHex() }));
		await rpc("dev_newBlock", [{ count: 1, dmp }]);
		const head = await headRef();
		if (autoFinalize) await finalize(head.number);
		return head;
	};
	const relayToken = { Concrete: { parents: 1, interior: "Here" } };
	const teleportFromRelay = (to: string, planck: bigint, after: readonly unknown[] = []): unknown[] => [
		{ ReceiveTeleportedAsset: [{ id: relayToken, fun: { Fungible: planck } }] },
		{ ClearOrigin: null },
		{ BuyExecution: { fees: { id: relayToken, fun: { Fungible: planck } }, weightLimit: "Unlimited" } },
		{ DepositAsset: { assets: { Wild: { AllCounted: 1 } }, beneficiary: { parents: 0, interior: { X1: { AccountId32: { network: null, id: u8aToHex(keyring.decodeAddress(to)) } } } } } },
		...after,
	];
	const fund = async (address: string, planck: bigint): Promise<void> => {
		const current = (await api.query.system.account(address)) as unknown as { nonce: { toNumber(): number }; providers: { toNumber(): number }; consumers: { toNumber(): number }; sufficients: { toNumber(): number }; data: { free: { toBigInt(): bigint } } };
		const issuance = ((await api.query.balances.totalIssuance()) as unknown as { toBigInt(): bigint }).toBigInt();
		// TotalIssuance follows the written balance, as a mint would move it: the balances pallet's
		// fungible withdraw refuses any amount above the total issuance (`Arithmetic::Underflow`).
		const totalIssuance = issuance - current.data.free.toBigInt() + planck;
		await rpc("dev_setStorage", [{ Balances: { TotalIssuance: totalIssuance.toString() }, System: { Account: [[[address], {
			nonce: current.nonce.toNumber(),
			consumers: current.consumers.toNumber(),
			// An account with a free balance has at least one provider (as the runtime would count it).
			providers: Math.max(1, current.providers.toNumber()),
			sufficients: current.sufficients.toNumber(),
			data: { free: planck.toString(), reserved: 0, frozen: 0, flags: "0x80000000000000000000000000000000" },
		}]] } }]);
	};

	const assetAdmin = keyring.addFromUri("//AssetAdmin");
	await fund(assetAdmin.address, 1_000_000_000_000_000n);
	const createAsset = async (asset: AssetDef): Promise<void> => {
		await rpc("dev_setStorage", [{ Assets: {
			Asset: [[[asset.id], {
				owner: assetAdmin.address, issuer: assetAdmin.address, admin: assetAdmin.address, freezer: assetAdmin.address,
				supply: 0, deposit: 0, minBalance: asset.minBalance.toString(), isSufficient: true,
				accounts: 0, sufficients: 0, approvals: 0, status: "Live",
			}]],
			Metadata: [[[asset.id], { deposit: 0, name: asset.name, symbol: asset.symbol, decimals: asset.decimals, isFrozen: false }]],
		} }]);
	};
	const mintAsset = async (assetId: number, to: string, amount: bigint): Promise<BlockRef> => {
		await api.tx.assets.mint(assetId, to, amount).signAndSend(assetAdmin);
		return newBlock();
	};
	const upgradeRuntime = async (code: string): Promise<BlockRef> => {
		const codeHash = blake2AsHex(code, 256);
		// A Hash in older runtimes, CodeUpgradeAuthorization { codeHash, checkVersion } later.
		const type = api.query.parachainSystem.authorizedUpgrade.creator.meta.type.asPlain;
		const def = api.registry.lookup.getSiType(type).def;
		const isStruct = def.isComposite && def.asComposite.fields.some(f => f.name.unwrapOr("").toString() === "code_hash");
		await rpc("dev_setStorage", [{ ParachainSystem: { AuthorizedUpgrade: isStruct ? { codeHash, checkVersion: true } : codeHash } }]);
		await api.tx.parachainSystem.enactAuthorizedUpgrade(code).signAndSend(assetAdmin);
		const before = await rpc<{ specVersion: number }>("state_getRuntimeVersion", [(await headRef()).hash]);
		const stored = await newBlock();
		// Checked by storage, not by decoding the blocks' events with `api.at`: @polkadot/api turns its
		// default registry into the new runtime's in place when it sees the upgrade, so a decode of
		// these two blocks racing that switch (or made after it) used the new types (seen, both ways).
		if (!(await pendingCode(stored.hash))) throw new Error(`no ParachainSystem.PendingValidationCode after enactAuthorizedUpgrade (${stored.hash})`);
		const applied = await newBlock();
		if (await pendingCode(applied.hash)) throw new Error(`the code is still pending at ${applied.hash}: not applied`);
		// The first block the new code runs: its on_runtime_upgrade weight fills it, and chopsticks
		// drops a transaction that does not fit, so it is built empty here.
		await newBlock();
		const version = await rpc<{ specVersion: number }>("state_getRuntimeVersion", [applied.hash]);
		if (version.specVersion === before.specVersion) throw new Error(`the runtime at ${applied.hash} is still spec ${before.specVersion}`);
		// The client re-reads the metadata on the version change; transactions signed before that use the old one.
		await until("the client on the new runtime", () => api.runtimeVersion.specVersion.toNumber() === version.specVersion, 120_000);
		return applied;
	};
	const pendingCode = async (hash: string): Promise<boolean> => {
		const raw = await rpc<string | null>("state_getStorage", [api.query.parachainSystem.pendingValidationCode.key(), hash]);
		// A Vec<u8> value: absent, or an empty vector (0x00), means no code pending.
		return raw !== null && raw !== "0x00";
	};
	if (opts.assets ?? true) {
		await createAsset(USDT);
		await createAsset(USDC);
	}

	return {
		url: proxy.url,
		chopsticksUrl,
		api,
		keyring,
		ss58Format,
		decimals: spec.properties.tokenDecimals,
		symbol: spec.properties.tokenSymbol,
		assetAdmin,
		pair: (uri, type = "sr25519") => keyring.addFromUri(uri, {}, type),
		fund,
		createAsset,
		mintAsset,
		upgradeRuntime,
		newBlock,
		newBlockWithDownward,
		teleportFromRelay,
		async setHead(number: number): Promise<BlockRef> {
			if (number < finalized.number) throw new Error(`cannot roll back to #${number}: #${finalized.number} is finalized`);
			await rpc("dev_setHead", [number]);
			return headRef();
		},
		finalize,
		setAutoFinalize(on: boolean) { autoFinalize = on; },
		head: headRef,
		finalized: () => finalized,
		rpc,
		async stop(): Promise<void> {
			await api.disconnect();
			await proxy.close();
			control.close();
			await chopsticks.close();
			// The executor worker would keep the process (jest) alive after the last node.
			if (--liveNodes === 0) await destroyWorker();
		},
	};
}
