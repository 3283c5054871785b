/**
 * The Polkadot Asset Hub chain source (docs/watchers.md "Polkadot", docs/polkadot-design.md): a
 * Substrate WebSocket RPC node (RPC_URL_<SLUG>) read through @polkadot/api.
 *
 * - Blocks have consecutive numbers linked by parent hash: `head()` is the best block, `block(n)`
 *   the canonical chain's block at n (chain_getBlockHash then its header, timestamp from
 *   Timestamp.Now at that block).
 * - Payments (lib/chains/polkadot/events.ts): each block's System.Events, decoded with that
 *   block's metadata; native Balances.Transfer and Assets.Transferred / Issued of the catalogue's
 *   asset ids made by successful extrinsics, and the arrivals of inbound XCM messages (also
 *   Balances.Deposit / Minted, only inside a message's execution). Payment key: txHash = the block hash, logIndex =
 *   the event's index in the block (an extrinsic can carry several transfers, and an extrinsic
 *   hash is not unique on a Substrate chain).
 * - Credit at GRANDPA finality (`finalizedHash`): a transfer read from a best block is shown as
 *   confirming and credited iff the finalized block at its number is the block it was read in; a
 *   best block replaced before finality is reverted by the runner's reorg check.
 * - Catch-up in bounded ranges: at most MAX_BLOCKS_PER_READ blocks per step.
 * - Receivers are compared as 32-byte account ids: the events give account ids (events-codec.ts);
 *   the watched addresses (SS58 in the network's prefix) are indexed by account id once each, so a
 *   payment costs a map lookup, not an SS58 encoding (a blake2b checksum and a base-58 conversion).
 */
import { u8aToHex } from "@polkadot/util";
import { decodeAddress, encodeAddress } from "@polkadot/util-crypto";
import { mapLimit } from "../map-limit";
import type { BlockRef, ChainSource, ChainTransfer, TransferQuery } from "../source";
import { PolkadotApi, PolkadotBlockUnavailableError } from "./api";
import { blockCredits, type EventView } from "./events";

/** Blocks read per step at most (one header, one timestamp and one events read each). */
export const MAX_BLOCKS_PER_READ = 50;
/** Reads in flight at once while a range is read. */
const READ_CONCURRENCY = 4;
/** Finalized hashes kept (immutable once finalized): one per block a payment was seen in. */
const FINALIZED_CACHE = 4_096;
/** Parent hashes kept from the headers read (the events of a block are decoded with its parent's runtime). */
const PARENTS_KEPT = 1_024;
const ACCOUNT_HEX = /^0x[0-9a-f]{64}$/;
/** The finalized head is read again at most this often (a report pass asks for every confirming payment). */
const FINALIZED_HEAD_TTL_MS = 200;

export interface PolkadotSourceOptions {
	networkId: string;
	rpcUrl: string;
	timeoutMs: number;
	/** The network's SS58 prefix: receivers are reported in this form (the deposit addresses' form). */
	ss58Prefix: number;
}

export class PolkadotSource implements ChainSource {
	readonly api: PolkadotApi;
	private finalizedNumber = -1;
	private finalizedReadAt = 0;
	private readonly finalized = new Map<number, string>();
	private readonly parents = new Map<string, string>();
	/**
	 * Watched address sets indexed by account id (0x-hex -> the address as stored). The runner
	 * only adds to its set (a reload makes a new set), so each call indexes the entries past the
	 * ones seen; a set that shrank is indexed again.
	 */
	private readonly indexes = new WeakMap<ReadonlySet<string>, { seen: number; byAccount: Map<string, string> }>();
	/** The index built last: a new set (the runner's reload) takes the account ids of the addresses it knew from it. */
	private lastIndex: Map<string, string> | null = null;

	constructor(private readonly opts: PolkadotSourceOptions) {
		this.api = new PolkadotApi(opts.rpcUrl, opts.timeoutMs);
	}

	private async ref(number: number, hash: string): Promise<BlockRef> {
		const [header, timestamp] = await Promise.all([this.api.header(hash), this.api.timestamp(hash)]);
		if (header.number !== number) throw new PolkadotBlockUnavailableError(`block ${hash} is #${header.number}, asked for #${number}`);
		if (this.parents.size >= PARENTS_KEPT) this.parents.delete(this.parents.keys().next().value!);
		this.parents.set(hash, header.parentHash);
		return { number, hash, parentHash: header.parentHash, timestamp };
	}

	async head(): Promise<BlockRef> {
		const h = await this.api.bestHeader();
		return { ...h, timestamp: await this.api.timestamp(h.hash) };
	}

	async block(number: number): Promise<BlockRef | null> {
		const hash = await this.api.hashAt(number);
		return hash ? this.ref(number, hash) : null;
	}

	/** Blocks fromBlock..toBlock (at most MAX_BLOCKS_PER_READ), stopping before the first the node does not have. */
	async blocks(fromBlock: number, toBlock: number): Promise<BlockRef[]> {
		const numbers: number[] = [];
		for (let n = fromBlock; n <= toBlock && numbers.length < MAX_BLOCKS_PER_READ; n++) numbers.push(n);
		const hashes = await mapLimit(numbers, READ_CONCURRENCY, n => this.api.hashAt(n));
		const end = hashes.indexOf(null);
		const have = end === -1 ? numbers.length : end;
		return mapLimit(numbers.slice(0, have), READ_CONCURRENCY, n => this.ref(n, hashes[n - fromBlock]!));
	}

	/** Payments to the addresses in the range, read at the hashes the runner holds (else the canonical ones now). */
	async transfers(query: TransferQuery): Promise<ChainTransfer[]> {
		const native = query.tokens.find(t => t.contractAddress === "")?.tokenId;
		const assets = new Map(query.tokens.filter(t => t.contractAddress !== "").map(t => [t.contractAddress, t.tokenId]));
		const numbers: number[] = [];
		for (let n = query.fromBlock; n <= query.toBlock; n++) numbers.push(n);
		const read = await mapLimit(numbers, READ_CONCURRENCY, async n => {
			const hash = query.blockHashes?.get(n) ?? (await this.api.hashAt(n));
			if (!hash) throw new PolkadotBlockUnavailableError(`no block #${n}`);
			return { n, hash, events: await this.api.events(hash, this.parents.get(hash)) };
		});
		const assetIds = new Set(assets.keys());
		const out: ChainTransfer[] = [];
		for (const { n, hash, events } of read) {
			for (const t of this.matches(events, query.addresses, assetIds)) {
				const tokenId = t.asset === "" ? native : assets.get(t.asset);
				if (tokenId === undefined) continue;
				out.push({ networkId: this.opts.networkId, txHash: hash, logIndex: t.eventIndex, toAddress: t.to, tokenId, amount: t.amount, blockNumber: n, blockHash: hash });
			}
		}
		return out;
	}

	/**
	 * The block's payments to watched addresses, receivers as the addresses are stored (the
	 * network's SS58 form); `null`: to any account (the chain check), encoded in the network's form.
	 */
	matches(events: readonly EventView[], addresses: ReadonlySet<string> | null, assets: ReadonlySet<string>): Array<{ eventIndex: number; to: string; asset: string; amount: string }> {
		const byAccount = addresses && this.indexOf(addresses);
		const out: Array<{ eventIndex: number; to: string; asset: string; amount: string }> = [];
		for (const c of blockCredits(events, assets)) {
			const account = accountHex(c.to);
			const to = account && (byAccount ? byAccount.get(account) : this.toNetworkForm(account));
			if (to) out.push({ eventIndex: c.eventIndex, to, asset: c.asset, amount: c.amount.toString() });
		}
		return out;
	}

	/** The account-id index of a watched address set, brought up to date (see `indexes`). */
	private indexOf(addresses: ReadonlySet<string>): Map<string, string> {
		let index = this.indexes.get(addresses);
		let known: Map<string, string> | null = null;
		if (!index || index.seen > addresses.size) {
			// Decoding SS58 is the cost (100,000 addresses: seconds); a reload mostly brings the same addresses back.
			if (this.lastIndex) known = new Map(Array.from(this.lastIndex, ([account, address]) => [address, account]));
			this.indexes.set(addresses, (index = { seen: 0, byAccount: new Map() }));
		}
		if (index.seen < addresses.size) {
			let i = 0;
			for (const address of addresses) {
				if (i++ < index.seen) continue;
				const account = known?.get(address) ?? accountHex(address);
				if (account) index.byAccount.set(account, address);
			}
			index.seen = addresses.size;
		}
		this.lastIndex = index.byAccount;
		return index.byAccount;
	}

	/** An account of an event in the network's SS58 form; null when it is no 32-byte account id. */
	toNetworkForm(account: string): string | null {
		try {
			const id = decodeAddress(account);
			return id.length === 32 ? encodeAddress(id, this.opts.ss58Prefix) : null;
		} catch {
			return null;
		}
	}

	/** The finalized block's hash at `number`; null while `number` is above the finalized head. */
	async finalizedHash(number: number): Promise<string | null> {
		const known = this.finalized.get(number);
		if (known !== undefined) return known;
		if (number > this.finalizedNumber && Date.now() - this.finalizedReadAt >= FINALIZED_HEAD_TTL_MS) {
			const head = await this.api.finalizedHead();
			this.finalizedNumber = Math.max(this.finalizedNumber, head.number);
			this.finalizedReadAt = Date.now();
		}
		if (number > this.finalizedNumber) return null;
		// At or below the finalized head the canonical chain is the finalized one.
		const hash = await this.api.hashAt(number);
		if (!hash) throw new PolkadotBlockUnavailableError(`no finalized block #${number}`);
		if (this.finalized.size >= FINALIZED_CACHE) this.finalized.delete(this.finalized.keys().next().value!);
		this.finalized.set(number, hash);
		return hash;
	}

	async close(): Promise<void> {
		await this.api.close();
	}
}

/** A 32-byte account id as lowercase 0x-hex, from 0x-hex or SS58 of any prefix; null for anything else. */
function accountHex(account: string): string | null {
	if (ACCOUNT_HEX.test(account)) return account;
	try {
		// The checksum is not checked: deposit addresses were checked when stored, and the
		// events' SS58 (published examples in tests) come from the runtime.
		const id = decodeAddress(account, true);
		return id.length === 32 ? u8aToHex(id) : null;
	} catch {
		return null;
	}
}

export function createPolkadotSource(opts: PolkadotSourceOptions): PolkadotSource {
	return new PolkadotSource(opts);
}
