/**
 * Which events of a Polkadot Asset Hub block are payments (docs/watchers.md "Polkadot", the rule
 * and what it rests on in docs/polkadot-design.md "XCM arrivals"; pure, no node): a block's
 * `System.Events` in order, each as its section, method, phase and fields as strings (account ids
 * in any SS58 form, amounts and asset ids as decimal strings).
 *
 * Two ways an event is a payment:
 * - **By an extrinsic**: in phase `ApplyExtrinsic(i)` of an extrinsic `i` that ended with
 *   `System.ExtrinsicSuccess` (a failed extrinsic's transfers are rolled back with its storage),
 *   `Balances.Transfer { from, to, amount }`, `Assets.Transferred { asset_id, from, to, amount }`
 *   or `Assets.Issued { asset_id, owner, amount }`. Never `Balances.Deposit` / `Minted` here: in
 *   an extrinsic's phase `Balances.Deposit` is the fee refund to the signer (the sweeper signs
 *   from deposit addresses) or the fee paid to the collators' pot.
 * - **By an inbound XCM message** (teleports and reserve transfers): the events a message's
 *   execution emits come right before its outcome event (`DmpQueue.ExecutedDownward` on runtimes
 *   with the DMP queue, where the parachainSystem inherent executes downward messages;
 *   `XcmpQueue.Success` / `Fail` for a sibling's (HRMP) messages, executed by the XCMP queue there;
 *   `MessageQueue.Processed` on runtimes with the message queue, which executes them in
 *   Initialization / Finalization). Events of the same phase after the previous outcome event (or
 *   the phase's start) up to an outcome event are that message's: there `Balances.Deposit`,
 *   `Balances.Minted` (the beneficiary's credit), `Balances.Transfer`, `Assets.Issued` and
 *   `Assets.Transferred` are payments, whatever the outcome: an event still in the block is
 *   committed state (a rolled-back instruction drops its events), and an `Incomplete` message
 *   whose `DepositAsset` ran before the error left the money in the account.
 *
 * Assets only for the ids asked for. Everything else is not a payment (events of other hooks in
 * Initialization / Finalization outside a message, e.g. the collator reward `Balances.Transfer`).
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
	/** The extrinsic of its phase; null for an XCM arrival in Initialization / Finalization. */
	extrinsic: number | null;
	/** True when the event is an inbound XCM message's (see the file comment). */
	xcm: boolean;
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

/**
 * Outcome events of an inbound XCM message, emitted after the events of its execution: downward
 * (DMP queue), horizontal from a sibling parachain on runtimes with the XCMP queue executing them
 * (`XcmpQueue.Success` / `Fail`, in the parachainSystem inherent's phase or a `serviceOverweight`
 * extrinsic's), and either on runtimes with the message queue.
 */
const XCM_OUTCOMES = new Set(["dmpQueue.ExecutedDownward", "xcmpQueue.Success", "xcmpQueue.Fail", "messageQueue.Processed"]);

/** Indices of the events that belong to an inbound XCM message's execution (see the file comment). */
export function xcmMessageEvents(events: readonly EventView[]): Set<number> {
	const out = new Set<number>();
	let phase: string | null = null;
	let open: number[] = [];
	for (const e of events) {
		// A phase's events are contiguous in System.Events: a new phase starts a new span.
		// Initialization and Finalization are never adjacent (a parachain block always has its
		// mandatory inherents between them), so null tells them apart.
		const key = e.extrinsic === null ? "hook" : `ext:${e.extrinsic}`;
		if (key !== phase) {
			phase = key;
			open = [];
		}
		if (XCM_OUTCOMES.has(`${e.section}.${e.method}`)) {
			for (const i of open) out.add(i);
			open = [];
		} else {
			open.push(e.index);
		}
	}
	return out;
}

/** One event's credit, before the phase rule; null when it credits no one (or a field is not what the runtime gives). */
function creditOf(e: EventView, xcm: boolean): Omit<PolkadotCredit, "eventIndex" | "extrinsic" | "xcm"> | null {
	const d = e.data;
	let to: string | undefined;
	let asset = "";
	let amount: string | undefined;
	if (xcm && e.section === "balances" && (e.method === "Deposit" || e.method === "Minted") && d.length === 2) {
		[to, amount] = d;
	} else if (e.section === "balances" && e.method === "Transfer" && d.length === 3) {
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
 * The payments of a block: native and `assets` ids' arrivals made by successful extrinsics or by
 * inbound XCM messages; everything else is not a payment. Receivers are not filtered here.
 */
export function blockCredits(events: readonly EventView[], assets: ReadonlySet<string>): PolkadotCredit[] {
	const ok = successfulExtrinsics(events);
	const xcm = xcmMessageEvents(events);
	const out: PolkadotCredit[] = [];
	for (const e of events) {
		// In an extrinsic's phase only a successful one's events (the inherent that executes DMP succeeds).
		if (e.extrinsic !== null && !ok.has(e.extrinsic)) continue;
		const byXcm = xcm.has(e.index);
		if (e.extrinsic === null && !byXcm) continue;
		const c = creditOf(e, byXcm);
		if (!c || (c.asset !== "" && !assets.has(c.asset))) continue;
		out.push({ eventIndex: e.index, extrinsic: e.extrinsic, xcm: byXcm, ...c });
	}
	return out;
}
