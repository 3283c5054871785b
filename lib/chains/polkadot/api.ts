/**
 * The Polkadot node connection of the watcher and the chain check (docs/watchers.md "Polkadot"):
 * one @polkadot/api ApiPromise on a WebSocket RPC (RPC_URL_<SLUG>, ws:// or wss://), opened on
 * first use and reconnected by the provider itself; and the reads the source makes: a block's
 * hash and header, its timestamp, and its System.Events decoded with the metadata of the runtime
 * that emitted them (events-codec.ts: read raw, decoded with codecs built from the metadata).
 */
import { ApiPromise, WsProvider } from "@polkadot/api";
import type { EventView } from "./events";
import { EventsDecoder, SYSTEM_EVENTS_KEY } from "./events-codec";

/** Runtimes' decoders kept (by spec version): a range across an upgrade needs two. */
const DECODERS_KEPT = 4;
const ZERO_HASH = /^0x0{64}$/;

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
	/** "specName/specVersion" -> that runtime's events decoder (built once from its metadata). */
	private readonly decoders = new Map<string, Promise<EventsDecoder>>();

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
	 * The block's System.Events, decoded with the metadata of the runtime that emitted them: the
	 * parent block's (a block that applies an upgrade has the new code in its own state, but its
	 * events are the old code's; genesis has no parent and its own). `parentHash` saves a header
	 * read when the caller has it. A range across a runtime upgrade decodes both sides.
	 */
	async events(hash: string, parentHash?: string): Promise<EventView[]> {
		await this.ready();
		const parent = parentHash ?? (await this.header(hash)).parentHash;
		const [decoder, raw] = await Promise.all([this.decoderAt(ZERO_HASH.test(parent) ? hash : parent), this.provider!.send("state_getStorage", [SYSTEM_EVENTS_KEY, hash])]);
		if (raw !== null && typeof raw !== "string") throw new PolkadotBlockUnavailableError(`System.Events of ${hash} is not hex`);
		return decoder.decode(raw);
	}

	/** The events decoder of the runtime in the state of block `hash`: built when its spec version is new. */
	private async decoderAt(hash: string): Promise<EventsDecoder> {
		const provider = this.provider!;
		const rv = (await provider.send("state_getRuntimeVersion", [hash])) as { specName?: unknown; specVersion?: unknown } | null;
		if (!rv || typeof rv.specVersion !== "number") throw new PolkadotBlockUnavailableError(`no runtime version at ${hash}`);
		const key = `${String(rv.specName)}/${rv.specVersion}`;
		let decoder = this.decoders.get(key);
		if (!decoder) {
			const specVersion = rv.specVersion;
			decoder = (async () => new EventsDecoder((await provider.send("state_getMetadata", [hash])) as string, specVersion))();
			// A failed read is not kept: the next block asks again.
			const built = decoder;
			built.catch(() => {
				if (this.decoders.get(key) === built) this.decoders.delete(key);
			});
			if (this.decoders.size >= DECODERS_KEPT) this.decoders.delete(this.decoders.keys().next().value!);
			this.decoders.set(key, decoder);
		}
		return decoder;
	}

	async close(): Promise<void> {
		const api = this.api;
		this.api = null;
		this.provider = null;
		if (api) await (await api.catch(() => null))?.disconnect().catch(() => undefined);
	}
}
