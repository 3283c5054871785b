/**
 * The services' side of a sweep runner test (sweepable checkouts, destinations, the ledger,
 * withdrawal requests) as a small in-memory stand-in for the SweeperPorts, shared by the chain
 * sweep-runner tests (TON, Polkadot). Its ledger writes are fenced as withdrawals.record's are:
 * the lease is checked in the entry's own DB transaction; a completed request is written to the
 * requests' table too (lib/sweeps/reservations.ts reads it).
 */
import { inTransaction } from "../../lib/db";
import { money } from "../../lib/money";
import type { SweepableCheckout, SweeperPorts, WithdrawalRequestView } from "../../lib/sweeps/ports";
import { assertFence } from "../../lib/sweeps/store";
import type { TestNode } from "./harness";

export interface LedgerEntry {
	tokenId: string;
	kind: string;
	amount: string;
	refType: string;
	refId: string;
}

export type StandInRequest = WithdrawalRequestView & { status: string; txHash?: string };

export interface StandInServices {
	ports: SweeperPorts;
	checkouts: SweepableCheckout[];
	ledger: LedgerEntry[];
	requests: StandInRequest[];
	/** A token's ledger balance. */
	ledgerSum(tokenId: string): ReturnType<typeof money>;
	/** A settled checkout of `amount` (decimal) at a deposit, credited in the ledger; its transaction id from the derivation index. */
	settle(c: Omit<SweepableCheckout, "transactionId" | "mode" | "completedAt">, amount: string): SweepableCheckout;
}

export function standInServices(opts: {
	/** The test's node (started in beforeAll, hence a getter). */
	db: () => TestNode;
	/** The merchant's destination for every checkout. */
	merchant: () => string;
	/** Checkouts with no destination (not swept automatically); none when absent. */
	noDestination?: (transactionId: string) => boolean;
}): StandInServices {
	const checkouts: SweepableCheckout[] = [];
	const ledger: LedgerEntry[] = [];
	const requests: StandInRequest[] = [];
	const fenced = async (fence: Parameters<typeof assertFence>[1]) => {
		const { app } = opts.db();
		await inTransaction(app.sequelize, t => assertFence(app.models, fence, t));
	};
	const ports: SweeperPorts = {
		sweepable: async () => checkouts.map(c => ({ ...c })),
		destination: async () => opts.merchant(),
		destinationOf: async p => (opts.noDestination?.(p.transactionId ?? "") ? null : { address: opts.merchant(), source: "settings" as const }),
		ownAddressCheckouts: async () => [],
		route: async () => ({ via: "direct", reason: "strategy" }) as never,
		record: async p => {
			await fenced(p.fence);
			ledger.push({ tokenId: p.tokenId, kind: p.kind, amount: p.amount, refType: p.refType, refId: p.refId });
		},
		pendingRequests: async () => requests.filter(r => r.status === "pending"),
		completeRequest: async p => {
			await fenced(p.fence);
			const r = requests.find(x => x.id === p.id)!;
			expect(r.status).toBe("pending"); // paid once
			r.status = "completed";
			r.txHash = p.txHash;
			await opts.db().app.models.WithdrawalRequest.update({ status: "completed", txHash: p.txHash, completedAt: new Date() }, { where: { id: p.id } });
			ledger.push({ tokenId: r.tokenId, kind: "withdrawal", amount: `-${r.amount}`, refType: "request", refId: r.id });
		},
		failRequest: async () => undefined,
	};
	return {
		ports,
		checkouts,
		ledger,
		requests,
		ledgerSum: tokenId => ledger.filter(e => e.tokenId === tokenId).reduce((a, e) => a.plus(money(e.amount)), money(0)),
		settle: (d, amount) => {
			const c: SweepableCheckout = { ...d, transactionId: `00000000-0000-4000-8000-${String(900000000000 + d.derivationIndex)}`, mode: "sandbox", completedAt: new Date(Date.now() - 60_000).toISOString() };
			checkouts.push(c);
			ledger.push({ tokenId: c.tokenId, kind: "credit", amount, refType: "transaction", refId: c.transactionId });
			return c;
		},
	};
}
