/**
 * What every chain type's sweeper shares with the services (docs/withdrawals.md "Sweeper"): the
 * network and checkouts it is given, the ports it asks other services through, the withdrawal
 * requests it pays. The per-chain loops are lib/chains/<type>/sweep-runner.ts.
 */
import type { Sequelize } from "sequelize";
import type { Models } from "../../models";
import type { SweepHoldScope } from "../../models/sweep.model";
import type { SweepOutcome } from "../metrics";
import { fromBaseUnits } from "../money";
import type { BridgeRoute } from "../withdrawals/bridge-route";
import type { SweepFence } from "./store";

export interface SweepToken {
	tokenId: string;
	symbol: string;
	/** "" for the native coin. */
	contractAddress: string;
	decimals: number;
}

export interface SweepNetwork {
	id: string;
	slug: string;
	chainId: number;
	requiredConfirmations: number;
	eip7702: boolean;
	tokens: SweepToken[];
}

/** What every account-based chain's runner (EVM, Solana, TON, Polkadot) is given besides its chain; `S` its settings. */
export interface SweepRunnerBaseDeps<S> {
	sequelize: Sequelize;
	models: Models;
	network: SweepNetwork;
	/** A deposit's private key (seed) by its derivation index. */
	depositKey(index: number): Promise<Uint8Array>;
	ports: SweeperPorts;
	settings: S;
	now: () => Date;
	logger: { info(...a: unknown[]): void; warn(...a: unknown[]): void; error(...a: unknown[]): void };
	/** A sweep that could not be carried further this step, or a stalled sweep's alert (error tracking). */
	onFailure?: (err: unknown) => void;
	/** Each step a sweep takes, once recorded (metrics). */
	onOutcome?: (outcome: SweepOutcome) => void;
	/** A destination or deposit held for good after too many failures (metrics; the error goes to onFailure too). */
	onBlocked?: (scope: SweepHoldScope) => void;
}

export interface SweepableCheckout {
	transactionId: string;
	organizationId: string;
	mode: string;
	depositAddress: string;
	derivationIndex: number;
	tokenId: string;
	completedAt: string;
}

/** What the sweeper asks of other services. */
export interface SweeperPorts {
	sweepable(p: { networkId: string }): Promise<SweepableCheckout[]>;
	destination(p: { organizationId: string; chainType: string; transactionId: string }): Promise<string | null>;
	/** A ledger entry, written only while `fence` still holds the sweep lease (checked in the entry's DB transaction). */
	record(p: { organizationId: string; mode: string; networkId: string; tokenId: string; kind: "sweep" | "fee"; amount: string; refType: string; refId: string; fence: SweepFence }): Promise<unknown>;
	/** How a checkout's funds leave: direct, through the bridge (strategy 2), or held. */
	route(p: { organizationId: string; transactionId: string }): Promise<BridgeRoute>;
	/** A network's pending requests, oldest first, by keyset pages (withdrawals.pendingRequests). */
	pendingRequests(p: RequestPage): Promise<WithdrawalRequestView[]>;
	completeRequest(p: { id: string; txHash: string; fence: SweepFence }): Promise<unknown>;
	failRequest(p: { id: string; reason: string; final?: boolean }): Promise<unknown>;
	/** Where a checkout's funds go and why: its own address ("payment") or the settings' (withdrawals.destination). */
	destinationOf(p: { organizationId: string; chainType: string; transactionId?: string }): Promise<{ address: string; source: "payment" | "settings" } | null>;
	/** The account's checkouts whose funds belong to their own withdrawal address (withdrawals.ownAddressCheckouts). */
	ownAddressCheckouts(p: { organizationId: string; networkId: string; tokenId: string }): Promise<string[]>;
}

export interface RequestPage {
	networkId: string;
	afterCreatedAt?: string;
	afterId?: string;
	limit: number;
}

/** A merchant's pending withdrawal request (withdrawals.pendingRequests). */
export interface WithdrawalRequestView {
	id: string;
	organizationId: string;
	mode: string;
	amount: string;
	tokenId: string;
	sourceNetworkId: string;
	destinationNetworkId?: string | null;
	address: string;
	createdAt: string;
}

/** Pending requests read a page at a time (every page of the network's queue is read each step). */
export const REQUEST_PAGE = 100;

/** Every pending request of a network, oldest first, read by keyset pages (requests of other networks never hide them). */
export async function forEachPendingRequest(ports: Pick<SweeperPorts, "pendingRequests">, networkId: string, fn: (req: WithdrawalRequestView) => Promise<void>): Promise<void> {
	let page: Partial<RequestPage> = {};
	for (;;) {
		const requests = await ports.pendingRequests({ networkId, ...page, limit: REQUEST_PAGE });
		for (const req of requests) await fn(req);
		if (requests.length < REQUEST_PAGE) return;
		const last = requests[requests.length - 1];
		page = { afterCreatedAt: last.createdAt, afterId: last.id };
	}
}

/** A withdrawal request's exact amount (what its send pays; its sweep's item may hold more). */
export async function requestAmount(models: Models, requestId: string): Promise<string> {
	const req = await models.WithdrawalRequest.findByPk(requestId, { attributes: ["id", "amount"] });
	if (!req) throw new Error(`withdrawal request ${requestId} not found`);
	return req.amount;
}

/** A sweep's fee paid from a merchant's deposit: a `fee` ledger entry in the native token (none when 0). */
export async function recordFee(ports: Pick<SweeperPorts, "record">, fence: SweepFence, networkId: string, item: { organizationId: string; mode: string }, native: SweepToken, fee: bigint, sweepId: string): Promise<void> {
	if (fee <= 0n) return;
	await ports.record({ organizationId: item.organizationId, mode: item.mode, networkId, tokenId: native.tokenId, kind: "fee", amount: `-${fromBaseUnits(fee, native.decimals)}`, refType: "sweep", refId: sweepId, fence });
}
