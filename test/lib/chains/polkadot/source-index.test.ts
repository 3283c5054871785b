/**
 * The source's index of watched addresses by account id (lib/chains/polkadot/source.ts matches):
 * no node, events in the decoder's form (account ids as 0x-hex). The runner's set grows between
 * reloads and a reload is a new set: payments are reported to the address as the set holds it,
 * new addresses are found after they are added, and an address a reload dropped is not.
 */
import { decodeAddress, encodeAddress } from "@polkadot/util-crypto";
import { u8aToHex } from "@polkadot/util";
import type { EventView } from "../../../../lib/chains/polkadot/events";
import { createPolkadotSource } from "../../../../lib/chains/polkadot/source";

// Published SS58 examples (Polkadot's prefix 0): the well-known dev accounts Alice, Bob and Charlie.
const ALICE = "15oF4uVJwmo4TdGW7VfQxNLavjCXviqxT9S1MgbjMNHr6Sp5";
const BOB = "14E5nqKAp3oAJcmzgZhUD2RcptBeUBScxKHgJKU4HPNcKVf3";
const CHARLIE = "14Gjs1TD93gnwEBfDMHoCgsuf1s2TVKUP6Z1qKmAZnZ8cW5q";
const hex = (address: string) => u8aToHex(decodeAddress(address));

/** A block whose one successful extrinsic transfers to each of `to` (accounts as the decoder gives them). */
function block(to: string[]): EventView[] {
	const events: EventView[] = to.map((a, index) => ({ index, section: "balances", method: "Transfer", extrinsic: 1, data: [hex(ALICE), hex(a), "100"] }));
	events.push({ index: events.length, section: "system", method: "ExtrinsicSuccess", extrinsic: 1, data: [] });
	return events;
}

describe("Polkadot source: watched addresses matched by account id", () => {
	const source = createPolkadotSource({ networkId: "net", rpcUrl: "ws://127.0.0.1:1", timeoutMs: 1_000, ss58Prefix: 0 });
	afterAll(() => source.close());
	const paidTo = (addresses: ReadonlySet<string>) => source.matches(block([ALICE, BOB, CHARLIE]), addresses, new Set()).map(m => [m.eventIndex, m.to, m.amount]);

	it("reports payments to the address as the set holds it, finds addresses added to the set, and follows a reload", () => {
		const watched = new Set([BOB]);
		expect(paidTo(watched)).toEqual([[1, BOB, "100"]]);
		watched.add(CHARLIE);
		expect(paidTo(watched)).toEqual([[1, BOB, "100"], [2, CHARLIE, "100"]]);
		// A reload: a new set, Bob dropped, Alice new; Charlie known from the index before.
		const reloaded = new Set([CHARLIE, ALICE]);
		expect(paidTo(reloaded)).toEqual([[0, ALICE, "100"], [2, CHARLIE, "100"]]);
		// The same account in another SS58 form is the same receiver, reported as the set holds it.
		expect(source.matches(block([encodeAddress(decodeAddress(BOB), 42)]), new Set([BOB]), new Set()).map(m => m.to)).toEqual([BOB]);
		// With no set (the chain check): every receiver, in the network's form.
		expect(source.matches(block([CHARLIE]), null, new Set()).map(m => m.to)).toEqual([CHARLIE]);
	});
});
