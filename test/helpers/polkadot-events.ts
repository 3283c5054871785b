/**
 * The watcher's System.Events decode (lib/chains/polkadot/events-codec.ts, through the source's
 * api) checked against @polkadot/api's full decode of the same block (api.at: the registry of the
 * runtime that wrote the block's events), on a chopsticks node (test/helpers/polkadot-node.ts).
 */
import type { ApiPromise } from "@polkadot/api";
import { u8aToHex } from "@polkadot/util";
import { decodeAddress } from "@polkadot/util-crypto";
import { blockCredits, type EventView } from "../../lib/chains/polkadot/events";
import type { PolkadotSource } from "../../lib/chains/polkadot/source";

/** An account as 0x-hex, whatever its form (SS58 from @polkadot/api, hex from the watcher's decoder); anything else as it is. */
export function norm(s: string): string {
	if (/^0x[0-9a-f]{64}$/.test(s) || /^\d+$/.test(s)) return s;
	try {
		const id = decodeAddress(s);
		return id.length === 32 ? u8aToHex(id) : s;
	} catch {
		return s;
	}
}

/** @polkadot/api's decode of the block's events (api.at: the block's registry), as the watcher's views. */
export async function eventsByPolkadotApi(api: ApiPromise, hash: string): Promise<EventView[]> {
	const records = (await (await api.at(hash)).query.system.events()) as unknown as Array<{
		phase: { isApplyExtrinsic: boolean; asApplyExtrinsic: { toNumber(): number } };
		event: { section: string; method: string; data: Array<{ toString(): string }> };
	}>;
	return records.map((r, index) => ({
		index,
		section: r.event.section,
		method: r.event.method,
		extrinsic: r.phase.isApplyExtrinsic ? r.phase.asApplyExtrinsic.toNumber() : null,
		data: r.event.data.map(d => d.toString()),
	}));
}

/**
 * Both decodes agree on every event (index, section, method, phase) and, for the events the
 * watcher reads, on their fields (accounts compared as ids), and so on the block's payments to
 * any account; returns the watcher's events and payments.
 */
export async function compareDecodes(source: PolkadotSource, api: ApiPromise, hash: string, assets: ReadonlySet<string>) {
	const [ours, theirs] = await Promise.all([source.api.events(hash), eventsByPolkadotApi(api, hash)]);
	expect(ours.length).toBeGreaterThan(0);
	expect(ours.map(e => [e.index, e.section, e.method, e.extrinsic])).toEqual(theirs.map(e => [e.index, e.section, e.method, e.extrinsic]));
	for (const [i, e] of ours.entries()) {
		if (e.data.length === 0) continue;
		expect({ i, name: `${e.section}.${e.method}`, data: e.data.map(norm) }).toEqual({ i, name: `${e.section}.${e.method}`, data: theirs[i].data.map(norm) });
	}
	const credits = (events: EventView[]) => blockCredits(events, assets).map(c => ({ ...c, to: norm(c.to) }));
	const found = credits(ours);
	expect(found).toEqual(credits(theirs));
	return { ours, found };
}
