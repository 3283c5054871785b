/**
 * The Polkadot node connection of the watcher and the chain check (docs/watchers.md "Polkadot"):
 * one @polkadot/api ApiPromise on a WebSocket RPC (RPC_URL_<SLUG>, ws:// or wss://), opened on
 * first use and reconnected by the provider itself; and the reads the source makes: a block's
 * hash and header, its timestamp, and its System.Events decoded with that block's own metadata.
 */
import { ApiPromise, WsProvider } from "@polkadot/api";
import type { EventView } from "./events";

/** The node is not connected (yet, or any more): the runner retries at its next step. */
export class PolkadotRpcUnavailableError extends Error {
	constructor(detail: string) {
		super(`Polkadot RPC unavailable: ${detail}`);
		// The runner's name for "the RPC is down" (lib/watchers/runner.ts onError).
		this.name = "RpcUnavailableError";
	}
}

/** A block the node should have and does not give (a lagging node): retried, never read as "nothing". */
export class PolkadotBlockUnavailableError extends Error {
	constructor(detail: string) {
		super(`Polkadot block unavailable: ${detail}`);
		this.name = "BlockUnavailableError";
	}
}

export interface PolkadotHeader {
	number: number;
	hash: string;
	parentHash: string;
}

interface RawEventRecord {
	phase: { isApplyExtrinsic: boolean; asApplyExtrinsic: { toNumber(): number } };
	event: { section: string; method: string; data: ReadonlyArray<{ toString(): string }> };
}

/**
 * A `chain_getHeader` JSON-RPC result as a header: `number` is hex (a SCALE-compact number
 * rendered as 0x...), `parentHash` 32 bytes hex. Null (a hash the node does not know) is an error.
 */
export function headerFromRpc(hash: string, result: unknown): PolkadotHeader {
	const h = result as { number?: unknown; parentHash?: unknown } | null;
	if (!h) throw new PolkadotBlockUnavailableError(`no header for ${hash}`);
	if (typeof h.number !== "string" || !/^0x[0-9a-f]+$/i.test(h.number) || typeof h.parentHash !== "string" || !/^0x[0-9a-f]{64}$/i.test(h.parentHash)) {
		throw new PolkadotBlockUnavailableError(`malformed header for ${hash}`);
	}
	return { number: Number(BigInt(h.number)), hash, parentHash: h.parentHash };
}

export class PolkadotApi {
	private api: Promise<ApiPromise> | null = null;
	private provider: WsProvider | null = null;

	constructor(private readonly url: string, private readonly timeoutMs: number) {}

	/** The connected API; the first call connects (a node down at start is retried by the provider). */
	async ready(): Promise<ApiPromise> {
		if (!this.api) {
			// Reconnects every 2.5 s on its own; every request times out after timeoutMs.
			this.provider = new WsProvider(this.url, 2_500, {}, this.timeoutMs);
			const provider = this.provider;
			this.api = ApiPromise.create({ provider, noInitWarn: true, throwOnConnect: true }).catch(err => {
				this.api = null;
				this.provider = null;
				void provider.disconnect().catch(() => undefined);
				throw new PolkadotRpcUnavailableError((err as Error).message ?? String(err));
			});
		}
		const api = await this.api;
		if (!api.isConnected) throw new PolkadotRpcUnavailableError("disconnected, reconnecting");
		return api;
	}

	/** The best block's header. */
	async bestHeader(): Promise<PolkadotHeader> {
		const api = await this.ready();
		const h = await api.rpc.chain.getHeader();
		return { number: h.number.toNumber(), hash: h.hash.toHex(), parentHash: h.parentHash.toHex() };
	}

	/** The canonical chain's block hash at `number`; null above the node's head. */
	async hashAt(number: number): Promise<string | null> {
		const api = await this.ready();
		const hash = await api.rpc.chain.getBlockHash(number);
		// The node answers null above its head, which the codec decodes as the zero hash.
		return hash.isEmpty ? null : hash.toHex();
	}

	/** The header of a block by hash; an unknown hash is an error. */
	async header(hash: string): Promise<PolkadotHeader> {
		await this.ready();
		// Read raw: the node answers null for a hash it does not know, which the typed call would
		// decode as an empty header (and chopsticks' headers carry an empty state root).
		return headerFromRpc(hash, await this.provider!.send("chain_getHeader", [hash]));
	}

	/** The finalized head's number and hash (GRANDPA's, as the node says). */
	async finalizedHead(): Promise<{ number: number; hash: string }> {
		const api = await this.ready();
		const hash = await api.rpc.chain.getFinalizedHead();
		const h = await api.rpc.chain.getHeader(hash);
		return { number: h.number.toNumber(), hash: hash.toHex() };
	}

	/** Timestamp.Now at a block, in seconds (0 where the pallet has none: genesis). */
	async timestamp(hash: string): Promise<number> {
		const api = await this.ready();
		const raw = await api.rpc.state.getStorage(api.query.timestamp.now.key(), hash);
		const bytes = (raw as unknown as { isSome?: boolean; unwrap?(): { toU8a(bare: boolean): Uint8Array } });
		if (!bytes?.isSome) return 0;
		const ms = api.createType("u64", bytes.unwrap!().toU8a(true)).toBigInt();
		return Number(ms / 1000n);
	}

	/**
	 * The block's System.Events with the metadata of that block's runtime (api.at loads the
	 * registry of the block's spec version, so a range across a runtime upgrade decodes both sides).
	 */
	async events(hash: string): Promise<EventView[]> {
		const api = await this.ready();
		const at = await api.at(hash);
		const records = (await at.query.system.events()) as unknown as RawEventRecord[];
		return records.map((r, index) => ({
			index,
			section: r.event.section,
			method: r.event.method,
			extrinsic: r.phase.isApplyExtrinsic ? r.phase.asApplyExtrinsic.toNumber() : null,
			data: r.event.data.map(d => d.toString()),
		}));
	}

	async close(): Promise<void> {
		const api = this.api;
		this.api = null;
		this.provider = null;
		if (api) await (await api.catch(() => null))?.disconnect().catch(() => undefined);
	}
}
