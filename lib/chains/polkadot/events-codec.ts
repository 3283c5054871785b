/**
 * A block's `System.Events` decoded from its raw storage value with codecs built from the
 * runtime's metadata (docs/watchers.md "Polkadot", "How events are decoded"): polkadot-api's
 * metadata builder (@polkadot-api/metadata-builders over @polkadot-api/substrate-bindings, scale-ts
 * codecs), about ten times cheaper than @polkadot/types' Codec objects.
 *
 * One departure from the builder's defaults: account ids stay 32 bytes (rendered as 0x-hex only
 * where an event is one the watcher reads). The builder's AccountId codec SS58-encodes every account
 * of every event (a blake2b-512 checksum and a base-58 conversion each), which measured as three
 * quarters of its decode time; the watcher compares account ids, not strings (source.ts). Nor are
 * they decoded as the [u8; 32] the type wraps: the builder gives a byte array as a `Binary`, whose
 * private fields (a WeakMap entry each, as the package is compiled) cost about a fifth of the
 * decode and much of its garbage (docs/benchmarks.md "Polkadot chain watcher"). So the metadata's
 * AccountId32 type is given to the builder as the same 32 bytes read as eight little-endian u32
 * words (`[u32; 8]`, still decoded by scale-ts), turned back into the bytes' hex only for the fields
 * of the events the watcher reads.
 *
 * Every event is decoded (SCALE has no lengths to skip by), but only the events in `WANTED` get
 * their fields as strings; the others are given with their section, method and phase only.
 */
import { getDynamicBuilder } from "@polkadot-api/metadata-builders";
import { Binary, metadata as metadataCodec, type V14, type V15 } from "@polkadot-api/substrate-bindings";
import { stringCamelCase } from "@polkadot/util";
import { xxhashAsHex } from "@polkadot/util-crypto";
import type { EventView } from "./events";

/** The storage key of System.Events: twox128("System") ++ twox128("Events"). */
export const SYSTEM_EVENTS_KEY = xxhashAsHex("System", 128) + xxhashAsHex("Events", 128).slice(2);

/** The events whose fields the watcher reads (lib/chains/polkadot/events.ts creditOf): section -> methods. */
const WANTED = new Map([
	["balances", new Set(["Transfer", "Deposit", "Minted"])],
	["assets", new Set(["Transferred", "Issued"])],
]);

const NO_FIELDS: readonly string[] = Object.freeze([]);

interface DecodedRecord {
	phase: { type: string; value?: number };
	event: { type: string; value: { type: string; value: unknown } };
}

const BYTE_HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, "0"));

/** An account id read as eight little-endian u32 words (see the file comment)? No other field of the events read is one. */
function isAccountWords(v: unknown): v is number[] {
	return Array.isArray(v) && v.length === 8 && typeof v[0] === "number";
}

/** The 0x-hex of the 32 bytes an account id's eight little-endian u32 words were read from. */
function accountHex(words: readonly number[]): string {
	let out = "0x";
	for (const w of words) out += BYTE_HEX[w & 0xff] + BYTE_HEX[(w >>> 8) & 0xff] + BYTE_HEX[(w >>> 16) & 0xff] + BYTE_HEX[w >>> 24];
	return out;
}

/** One field as events.ts reads it: numbers in decimal, account ids (and other bytes) as 0x-hex. */
function fieldText(v: unknown): string {
	if (isAccountWords(v)) return accountHex(v);
	if (v instanceof Binary) return v.asHex();
	if (typeof v === "bigint" || typeof v === "number" || typeof v === "string" || typeof v === "boolean") return String(v);
	// An enum or a nested struct: no field the watcher reads is one; kept visible, never a number.
	return JSON.stringify(v, (_k, x) => (typeof x === "bigint" ? x.toString() : x instanceof Binary ? x.asHex() : isAccountWords(x) ? accountHex(x) : x));
}

/** An event's fields in declaration order (a struct's keys, a tuple's items, a single field). */
function fieldsOf(value: unknown): string[] {
	if (value === undefined) return [];
	if (isAccountWords(value)) return [accountHex(value)];
	if (Array.isArray(value)) return value.map(fieldText);
	if (value !== null && typeof value === "object" && !(value instanceof Binary)) return Object.values(value).map(fieldText);
	return [fieldText(value)];
}

export class EventsDecoder {
	private readonly decodeRecords: (raw: string | Uint8Array) => DecodedRecord[];
	/** Pallet name -> @polkadot/api's section name (camelCase), cached. */
	private readonly sections = new Map<string, string>();

	/** `metadataHex`: a state_getMetadata result (opaque metadata, V14 or V15). */
	constructor(metadataHex: string, readonly specVersion: number) {
		const md = metadataCodec.dec(metadataHex).metadata;
		if (md.tag !== "v14" && md.tag !== "v15") throw new Error(`metadata ${md.tag} is not supported (v14 or v15)`);
		const value = md.value as V14 | V15;
		// Accounts as [u32; 8] (see the file comment); the builder recognises AccountId32 by its path's last segment.
		const u32 = value.lookup.find(entry => entry.def.tag === "primitive" && entry.def.value.tag === "u32");
		if (!u32) throw new Error("the metadata has no u32 type");
		const lookup = value.lookup.map(entry => {
			if (entry.path.at(-1) !== "AccountId32") return entry;
			return { ...entry, path: [...entry.path.slice(0, -1), "AccountId32Words"], def: { tag: "array" as const, value: { len: 8, type: u32.id } } };
		});
		const events = getDynamicBuilder({ ...value, lookup } as V14 | V15).buildStorage("System", "Events");
		this.decodeRecords = raw => events.dec(raw) as DecodedRecord[];
	}

	private section(pallet: string): string {
		let s = this.sections.get(pallet);
		if (s === undefined) this.sections.set(pallet, (s = stringCamelCase(pallet)));
		return s;
	}

	/** The events of a raw System.Events value (null: the block has none). */
	decode(raw: string | null): EventView[] {
		if (raw === null) return [];
		const records = this.decodeRecords(raw);
		const out: EventView[] = new Array(records.length);
		for (let index = 0; index < records.length; index++) {
			const r = records[index];
			const section = this.section(r.event.type);
			const method = r.event.value.type;
			out[index] = {
				index,
				section,
				method,
				extrinsic: r.phase.type === "ApplyExtrinsic" ? (r.phase.value as number) : null,
				data: WANTED.get(section)?.has(method) ? fieldsOf(r.event.value.value) : NO_FIELDS,
			};
		}
		return out;
	}
}
