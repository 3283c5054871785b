/**
 * Which events of a Polkadot Asset Hub block are payments (docs/watchers.md "Polkadot"; pure, no
 * node): a block's `System.Events` in order, each as its section, method, phase and fields as
 * strings (account ids in any SS58 form, amounts and asset ids as decimal strings).
 *
 * - Only events in phase `ApplyExtrinsic(i)` whose extrinsic `i` ended with
 *   `System.ExtrinsicSuccess` count: a failed extrinsic's transfer events are rolled back with its
 *   storage, and events in Initialization / Finalization are not an extrinsic's outcome (every
 *   block's collator reward is a Balances.Transfer in Initialization).
 * - Native: `Balances.Transfer { from, to, amount }`. Assets: `Assets.Transferred { asset_id,
 *   from, to, amount }` and `Assets.Issued { asset_id, owner, amount }` for the asset ids asked
 *   for only.
 * - Not credited: `Balances.Minted` / `Balances.Deposit` and every other event, XCM arrivals
 *   included (teleports and reserve transfers deposit in the message queue's phases); untested
 *   here, so never counted (docs/watchers.md "Polkadot", what is not credited).
 */

export interface EventView {
	/** Position in the block's System.Events (the payment's logIndex). */
	index: number;
	section: string;
	method: string;
	/** The extrinsic index of phase ApplyExtrinsic(i); null for Initialization / Finalization. */
	extrinsic: number | null;
	/** The event's fields in order, as strings (toString of the decoded codec). */
	data: readonly string[];
}

export interface PolkadotCredit {
	eventIndex: number;
	extrinsic: number;
	/** The receiving account as the event names it (SS58 of the runtime's prefix). */
	to: string;
	/** "" for the native token, else the asset id (decimal string). */
	asset: string;
	/** Base units. */
	amount: bigint;
}

const UINT = /^\d+$/;

/** Extrinsic indices of the block that ended with System.ExtrinsicSuccess. */
export function successfulExtrinsics(events: readonly EventView[]): Set<number> {
	const ok = new Set<number>();
	for (const e of events) if (e.section === "system" && e.method === "ExtrinsicSuccess" && e.extrinsic !== null) ok.add(e.extrinsic);
	return ok;
}

/** One event's credit, before the phase rule; null when it credits no one (or a field is not what the runtime gives). */
function creditOf(e: EventView): Omit<PolkadotCredit, "eventIndex" | "extrinsic"> | null {
	const d = e.data;
	let to: string | undefined;
	let asset = "";
	let amount: string | undefined;
	if (e.section === "balances" && e.method === "Transfer" && d.length === 3) {
		[, to, amount] = d;
	} else if (e.section === "assets" && e.method === "Transferred" && d.length === 4) {
		[asset, , to, amount] = d;
	} else if (e.section === "assets" && e.method === "Issued" && d.length === 3) {
		[asset, to, amount] = d;
	} else {
		return null;
	}
	if (!to || amount === undefined || !UINT.test(amount) || (asset !== "" && !UINT.test(asset))) return null;
	const value = BigInt(amount);
	if (value <= 0n) return null;
	return { to, asset, amount: value };
}

/**
 * The payments of a block: native transfers and transfers / issues of the `assets` ids, made by
 * successful extrinsics; everything else is not a payment. Receivers are not filtered here.
 */
export function blockCredits(events: readonly EventView[], assets: ReadonlySet<string>): PolkadotCredit[] {
	const ok = successfulExtrinsics(events);
	const out: PolkadotCredit[] = [];
	for (const e of events) {
		if (e.extrinsic === null || !ok.has(e.extrinsic)) continue;
		const c = creditOf(e);
		if (!c || (c.asset !== "" && !assets.has(c.asset))) continue;
		out.push({ eventIndex: e.index, extrinsic: e.extrinsic, ...c });
	}
	return out;
}
