/**
 * The pay page's open event streams on one gateway node (docs/pay-page.md "Live status"). A stream
 * re-reads its checkout (links.payStatus) only when woken: by `payments.checkouts.changed` naming
 * its checkout or its link (one listener for the node, a map look-up per id) and at its checkout's
 * expiry. For an event that was lost, one safety-net poll per node (every pollMs, each delay drawn
 * from [pollMs/2, pollMs]) reads the statuses of all its open checkouts in a few batched calls
 * (links.payStatuses, 1,000 checkouts a call), not one read per stream. A stream writes
 * `event: status` only when the payload changed and ends after a final state.
 */
import type { ServerResponse } from "node:http";
import { isFinal, payState, type StatusPayload } from "../../web/pay/state";

export interface PayStreamOptions {
	/** Safety-net poll (PAY_EVENTS_POLL_MS). */
	pollMs: number;
	/** The statuses of many checkouts in one call (links.payStatuses); one left out is read alone. */
	readMany: (transactionIds: string[]) => Promise<StatusPayload[]>;
	heartbeatMs: number;
	/** A stream's life; the browser reconnects. */
	maxMs: number;
	/** A read failed (database, a service restarting): the next wake tries again. */
	onReadError?: (err: unknown) => void;
	random?: () => number;
}

/** The facts a stream is found by: its checkout and its link (from the first payload). */
type StreamPayload = StatusPayload & { transaction: StatusPayload["transaction"] & { paymentLinkId?: string } };

/** After a pending checkout's window: the read then finds it expired (the scoped expiry runs on read). */
const EXPIRY_MARGIN_MS = 1_000;
/** Checkouts per links.payStatuses call: an answer well under a transporter's 1 MB. */
const POLL_CHUNK = 1_000;

class PayStream {
	private last = "";
	private busy = false;
	private again = false;
	closed = false;
	/** The hub's read sequence when this stream's latest own read started. */
	readSeq = 0;
	private expiry: NodeJS.Timeout | null = null;
	private readonly lifetime: NodeJS.Timeout;

	constructor(
		private readonly hub: PayStreamHub,
		readonly res: ServerResponse,
		readonly transactionId: string,
		readonly linkId: string | null,
		private readonly read: () => Promise<StatusPayload>,
	) {
		this.lifetime = setTimeout(() => this.close(), hub.opts.maxMs);
	}

	send(s: StatusPayload): void {
		if (this.closed) return;
		const json = JSON.stringify(s);
		if (json !== this.last) {
			this.last = json;
			this.res.write(`event: status\ndata: ${json}\n\n`);
		}
		if (isFinal(payState(s))) return this.close();
		this.armExpiry(s);
	}

	/** A payload of the safety-net poll whose read began at `seq`: stale if a read of our own began since. */
	offer(s: StatusPayload, seq: number): void {
		if (this.busy || this.readSeq > seq) return;
		this.send(s);
	}

	/** Re-reads now, or once more right after the read in flight (a change during it is not missed). */
	async refresh(): Promise<void> {
		if (this.closed) return;
		if (this.busy) {
			this.again = true;
			return;
		}
		this.busy = true;
		try {
			do {
				this.again = false;
				this.readSeq = this.hub.nextSeq();
				try {
					this.send(await this.read());
				} catch (err) {
					// The next wake or the safety-net poll tries again.
					this.hub.opts.onReadError?.(err);
				}
			} while (this.again && !this.closed);
		} finally {
			this.busy = false;
		}
	}

	private armExpiry(s: StatusPayload): void {
		if (this.expiry) clearTimeout(this.expiry);
		this.expiry = null;
		if (s.transaction.status !== "pending") return;
		const due = Date.parse(s.transaction.expiresAt) - Date.now() + EXPIRY_MARGIN_MS;
		if (Number.isFinite(due) && due < this.hub.opts.maxMs) this.expiry = setTimeout(() => void this.refresh(), Math.max(0, due));
	}

	close(): void {
		if (this.closed) return;
		this.closed = true;
		if (this.expiry) clearTimeout(this.expiry);
		clearTimeout(this.lifetime);
		this.hub.forget(this);
		if (!this.res.writableEnded) this.res.end();
	}
}

export class PayStreamHub {
	private readonly byTransaction = new Map<string, Set<PayStream>>();
	private readonly byLink = new Map<string, Set<PayStream>>();
	private readonly all = new Set<PayStream>();
	private heartbeat: NodeJS.Timeout | null = null;
	private poll: NodeJS.Timeout | null = null;
	private seq = 0;

	constructor(readonly opts: PayStreamOptions) {}

	nextSeq(): number {
		return ++this.seq;
	}

	get size(): number {
		return this.all.size;
	}

	/** Registers an open response with its first payload (written at once) and how to read it again; answers its close. */
	open(res: ServerResponse, first: StatusPayload, read: () => Promise<StatusPayload>): () => void {
		const tx = (first as StreamPayload).transaction;
		const stream = new PayStream(this, res, tx.id, tx.paymentLinkId ?? null, read);
		this.all.add(stream);
		add(this.byTransaction, stream.transactionId, stream);
		if (stream.linkId) add(this.byLink, stream.linkId, stream);
		if (!this.heartbeat) this.heartbeat = setInterval(() => this.ping(), this.opts.heartbeatMs);
		if (!this.poll) this.armPoll();
		res.write("retry: 2000\n\n");
		stream.send(first);
		return () => stream.close();
	}

	/** `payments.checkouts.changed`: re-reads the streams of the checkouts and links named; how many were woken. */
	wake(change: { transactionIds?: unknown; linkIds?: unknown }): number {
		const woken = new Set<PayStream>();
		for (const [ids, index] of [
			[change.transactionIds, this.byTransaction],
			[change.linkIds, this.byLink],
		] as const) {
			if (!Array.isArray(ids)) continue;
			for (const id of ids) {
				const streams = typeof id === "string" ? index.get(id) : undefined;
				if (streams) for (const s of streams) woken.add(s);
			}
		}
		for (const s of woken) void s.refresh();
		return woken.size;
	}

	closeAll(): void {
		for (const s of [...this.all]) s.close();
	}

	forget(stream: PayStream): void {
		this.all.delete(stream);
		remove(this.byTransaction, stream.transactionId, stream);
		if (stream.linkId) remove(this.byLink, stream.linkId, stream);
		if (this.all.size > 0) return;
		if (this.heartbeat) clearInterval(this.heartbeat);
		if (this.poll) clearTimeout(this.poll);
		this.heartbeat = this.poll = null;
	}

	private armPoll(): void {
		const { pollMs, random = Math.random } = this.opts;
		this.poll = setTimeout(() => void this.pollAll(), Math.round(pollMs * (0.5 + 0.5 * random())));
	}

	/** The safety net: every open checkout's status in batched reads; a changed one is written. */
	private async pollAll(): Promise<void> {
		// Cleared first: a stream opened during the poll arms the next one, and the end does not arm a second.
		this.poll = null;
		const seq = this.seq;
		const ids = [...this.byTransaction.keys()];
		try {
			for (let i = 0; i < ids.length; i += POLL_CHUNK) {
				const chunk = ids.slice(i, i + POLL_CHUNK);
				let got: StatusPayload[];
				try {
					got = await this.opts.readMany(chunk);
				} catch (err) {
					this.opts.onReadError?.(err);
					continue;
				}
				const answered = new Set<string>();
				for (const p of got) {
					answered.add(p.transaction.id);
					for (const s of [...(this.byTransaction.get(p.transaction.id) ?? [])]) s.offer(p, seq);
				}
				// Left out (its expiry is due, its link is gone): read alone, as a stream opens.
				for (const id of chunk) if (!answered.has(id)) for (const s of [...(this.byTransaction.get(id) ?? [])]) void s.refresh();
			}
		} finally {
			if (this.all.size > 0 && !this.poll) this.armPoll();
		}
	}

	/** One timer for every stream's heartbeat comment (proxies close silent connections). */
	private ping(): void {
		for (const s of this.all) if (!s.res.writableEnded) s.res.write(": ping\n\n");
	}
}

function add(index: Map<string, Set<PayStream>>, key: string, s: PayStream): void {
	let set = index.get(key);
	if (!set) index.set(key, (set = new Set()));
	set.add(s);
}

function remove(index: Map<string, Set<PayStream>>, key: string, s: PayStream): void {
	const set = index.get(key);
	if (!set) return;
	set.delete(s);
	if (set.size === 0) index.delete(key);
}
