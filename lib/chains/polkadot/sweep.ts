/**
 * The chain-facing half of the Polkadot sweeper (docs/withdrawals.md "Polkadot sweeps"): the
 * sweeper wallet's key, mortal eras, signing an extrinsic with every input given (nonce, birth
 * block, period: nothing read behind the caller's back, so the caller records exactly what it
 * signed), the verdict on an extrinsic that was sent, and what a block's events say it did.
 *
 * - Native: the deposit signs `balances.transferAll(dest, keepAlive = false)`: its fee is taken
 *   first, everything left moves, and the account is reaped (0, no existential deposit kept: a
 *   deposit is never used again for a payment after it is swept whole, and an account kept alive
 *   at the ED would strand the ED at every deposit).
 * - Assets (USDT 1984, USDC 1337): the deposit has no native for the fee, so the sweeper wallet
 *   tops it up first (`utility.batchAll` of `balances.transferKeepAlive`, one extrinsic for many
 *   deposits) with ED + 2 × the transfer's fee; the deposit then sends its whole asset balance with
 *   `assets.transfer`. The native left (≥ ED + one fee) stays at the deposit for its next sweep:
 *   never dust below the ED (it is never reaped silently). Paying the fee in the asset itself
 *   (`ChargeAssetTxPayment` with an asset id) needs an asset-conversion pool for that asset,
 *   which the live chain has and the test genesis does not: not used.
 * - Every extrinsic is mortal: valid only in blocks [birth, birth + period). Once the FINALIZED
 *   head is past that window, an extrinsic not in any finalized block of it can never land
 *   (`sendVerdict`), and only then are its funds signed for again.
 */
import type { ApiPromise } from "@polkadot/api";
import { Keyring } from "@polkadot/keyring";
import type { KeyringPair } from "@polkadot/keyring/types";
import type { SubmittableExtrinsic } from "@polkadot/api/types";
import { u8aToHex } from "@polkadot/util";
import { cryptoWaitReady, decodeAddress, mnemonicValidate } from "@polkadot/util-crypto";

/** The smallest and largest mortal era a runtime accepts (powers of two). */
export const MIN_ERA_PERIOD = 4;
export const MAX_ERA_PERIOD = 65_536;

/** The public key of an SS58 address (any prefix), hex: how two spellings of one account compare. */
export const accountKey = (address: string): string => u8aToHex(decodeAddress(address));
export const sameAccount = (a: string, b: string): boolean => accountKey(a) === accountKey(b);

/**
 * The sweeper wallet from SWEEPER_PRIVATE_KEY_POLKADOT, sr25519 (the polkadot.js / Talisman /
 * SubWallet default, so the operator can open the same account in a wallet app): a BIP-39
 * mnemonic (optionally with a derivation path, "words//hard/soft"), or a 32-byte hex mini-secret
 * (`0x` + 64 hex digits, `subkey inspect`'s "Secret seed"). The error never quotes the key.
 */
export async function polkadotSweeperPair(form: string, ss58Format: number): Promise<KeyringPair> {
	await cryptoWaitReady();
	const keyring = new Keyring({ type: "sr25519", ss58Format });
	const value = form.trim();
	const hex = value.replace(/^0x/, "");
	if (/^[0-9a-fA-F]{64}$/.test(hex)) return keyring.addFromSeed(Buffer.from(hex, "hex"));
	const [phrase] = value.split("//");
	const words = phrase.trim().split(/\s+/);
	if (![12, 15, 18, 21, 24].includes(words.length) || !mnemonicValidate(words.join(" "))) throw new Error("Configuration: SWEEPER_PRIVATE_KEY_POLKADOT must be a BIP-39 mnemonic (optionally with a //derivation) or a 32-byte hex seed");
	return keyring.addFromUri(value.replace(/\s+/g, " "));
}

/** A deposit's ed25519 pair from the codec's 32-byte seed. */
export function depositPair(seed: Uint8Array, ss58Format: number): KeyringPair {
	return new Keyring({ type: "ed25519", ss58Format }).addFromSeed(seed);
}

/** Where a mortal extrinsic may land: blocks birth .. death - 1. */
export interface EraWindow {
	birth: number;
	period: number;
	death: number;
}

/**
 * The mortal era for an extrinsic signed with block `current` as its checkpoint. The runtime
 * checks the hash of block `birth` (`era.birth(current)`), so the caller signs with that block's
 * hash. `period` is rounded up to a power of two in [4, 65536] as the runtime requires.
 */
export function eraWindow(api: ApiPromise, current: number, period: number): EraWindow & { era: unknown } {
	const era = api.registry.createType("ExtrinsicEra", { current, period });
	const mortal = (era as unknown as { asMortalEra: { period: { toNumber(): number }; birth(c: number): number; death(c: number): number } }).asMortalEra;
	return { era, birth: Number(mortal.birth(current)), death: Number(mortal.death(current)), period: mortal.period.toNumber() };
}

export interface SignedExtrinsic {
	/** The signed extrinsic's bytes, hex: what is submitted, as often as needed until its era ends. */
	hex: string;
	/** blake2 hash of those bytes: how it is found in a block. */
	hash: string;
}

/**
 * Signs `tx` as `pair` with the nonce and era checkpoint given (no RPC: the genesis hash, runtime
 * version and signed extensions are the api's, read when it connected). The fee is paid in
 * native (no asset id). The caller records the result before submitting it.
 */
export function signExtrinsic(api: ApiPromise, tx: SubmittableExtrinsic<"promise">, pair: KeyringPair, p: { nonce: number; current: number; birthHash: string; period: number }): SignedExtrinsic & EraWindow {
	const w = eraWindow(api, p.current, p.period);
	tx.sign(pair, {
		blockHash: p.birthHash,
		era: w.era as never,
		genesisHash: api.genesisHash,
		nonce: p.nonce,
		runtimeVersion: api.runtimeVersion,
		signedExtensions: api.registry.signedExtensions,
		version: api.extrinsicVersion,
	} as never);
	return { hex: tx.toHex(), hash: tx.hash.toHex(), birth: w.birth, period: w.period, death: w.death };
}

export type SendVerdict = "landed" | "dead" | "superseded" | "pending";

/**
 * The fate of a sent extrinsic, from the finalized chain only:
 * - landed: found in a finalized block of its window;
 * - dead: the finalized head is at or past its era's death (it can no longer be included
 *   anywhere), it is in no finalized block of its window, and the signer's nonce did not pass
 *   its own: it never ran, its funds may be signed for again;
 * - superseded: the same, but the nonce passed it: another extrinsic of this signer used it
 *   (an operator looks; its funds stay locked);
 * - pending: its era is still open (or not all of it is finalized): the same bytes again.
 * A reaped account reads nonce 0 again, so "dead" for a native sweep rests on the block scan of
 * the whole window, which the caller makes before asking.
 */
export function sendVerdict(p: { found: boolean; finalized: number; death: number; finalizedNonce: number; nonce: number }): SendVerdict {
	if (p.found) return "landed";
	if (p.finalized < p.death) return "pending";
	return p.finalizedNonce > p.nonce ? "superseded" : "dead";
}

/** One event of a block, as the runner reads them. */
export interface EventView {
	section: string;
	method: string;
	/** The event's fields by name (accounts as SS58, numbers as decimal strings). */
	data: Record<string, string>;
	extrinsicIndex: number | null;
}

/** The events of a block (state at `hash`). */
export async function eventsAt(api: ApiPromise, hash: string): Promise<EventView[]> {
	const at = await api.at(hash);
	const records = (await at.query.system.events()) as unknown as Array<{
		event: { section: string; method: string; data: Array<{ toString(): string }> & { names?: string[] | null } };
		phase: { isApplyExtrinsic: boolean; asApplyExtrinsic: { toNumber(): number } };
	}>;
	return records.map(r => {
		const names = r.event.data.names ?? [];
		const data: Record<string, string> = {};
		r.event.data.forEach((d, i) => (data[names[i] ?? String(i)] = d.toString()));
		return { section: r.event.section, method: r.event.method, data, extrinsicIndex: r.phase.isApplyExtrinsic ? r.phase.asApplyExtrinsic.toNumber() : null };
	});
}

/** What one extrinsic did, from its block's events. */
export interface ExtrinsicOutcome {
	success: boolean;
	/** The fee (and tip) its signer paid, planck. */
	fee: bigint;
	/** Native moved from `from` by Balances.Transfer. */
	nativeOut: bigint;
	/** Native `from` lost as dust when reaped (Balances.DustLost). */
	dust: bigint;
	/** Asset units moved from `from`, by asset id (Assets.Transferred). */
	assetsOut: Map<string, bigint>;
	/** Native each account received from `from` (top-ups), by account key. */
	nativeTo: Map<string, bigint>;
	error?: string;
}

const FEE_EVENTS = new Set(["TransactionFeePaid", "AssetTxFeePaid", "AssetConversionTxFeePaid"]);

export function outcomeOf(events: EventView[], index: number, from: string): ExtrinsicOutcome {
	const mine = events.filter(e => e.extrinsicIndex === index);
	const who = accountKey(from);
	const out: ExtrinsicOutcome = { success: false, fee: 0n, nativeOut: 0n, dust: 0n, assetsOut: new Map(), nativeTo: new Map() };
	for (const e of mine) {
		if (e.section === "system" && e.method === "ExtrinsicSuccess") out.success = true;
		if (e.section === "system" && e.method === "ExtrinsicFailed") out.error = e.data.dispatchError ?? e.data["0"];
		if (FEE_EVENTS.has(e.method) && e.data.who && accountKey(e.data.who) === who) out.fee += BigInt(e.data.actualFee ?? "0") + BigInt(e.data.tip ?? "0");
		if (e.section === "balances" && e.method === "Transfer" && accountKey(e.data.from) === who) {
			out.nativeOut += BigInt(e.data.amount);
			const to = accountKey(e.data.to);
			out.nativeTo.set(to, (out.nativeTo.get(to) ?? 0n) + BigInt(e.data.amount));
		}
		if (e.section === "balances" && e.method === "DustLost" && accountKey(e.data.account) === who) out.dust += BigInt(e.data.amount);
		if (e.section === "assets" && e.method === "Transferred" && accountKey(e.data.from) === who) {
			out.assetsOut.set(e.data.assetId, (out.assetsOut.get(e.data.assetId) ?? 0n) + BigInt(e.data.amount));
		}
	}
	return out;
}
