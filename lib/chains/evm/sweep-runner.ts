/**
 * The EVM sweeper's loop for one network (docs/withdrawals.md "Sweeper"). Each step:
 * 1. carries every sweep in flight one state further: planned -> signed (bytes recorded) ->
 *    broadcast -> confirmed (ledger written) or failed; a broadcast stuck past `stuckMs` is signed
 *    again with the same nonce and higher fees (the bump ladder);
 * 2. plans new sweeps for settled checkouts whose funds are still at their deposit address and
 *    whose merchant has a destination: native coin one deposit per sweep (the deposit key pays its
 *    own gas), ERC-20 tokens in EIP-7702 batches of up to `batchSize` deposits paid by the sweeper
 *    wallet.
 * Only the holder of the network's sweep lease runs it (lib/watchers/store.ts leases).
 */
import { Contract, JsonRpcProvider, TransactionReceipt, Wallet, getAddress } from "ethers";
import { Op } from "sequelize";
import * as sweep from "./sweep";
import type { BridgeProvider } from "../../withdrawals/bridge-provider";
import { bridgeQuoteRequest, type BridgeRoute } from "../../withdrawals/bridge-route";
import { fromBaseUnits, toBaseUnits } from "../../money";
import type { Sweep, SweepHold, SweepHoldScope, SweepItem } from "../../../models/sweep.model";
import type { SweepOutcome } from "../../metrics";
import { clearHolds, holdKeyOf, holdsOf, isHeld, recordHoldFailure, type HoldKey } from "../../sweeps/holds";
import { countUnseen, type ProofRule } from "../../sweeps/proof";
import { Reservations } from "../../sweeps/reservations";
import { forEachPendingRequest, requestAmount, type SweepableCheckout, type SweepRunnerBaseDeps, type SweepToken, type WithdrawalRequestView } from "../../sweeps/ports";
import { advanceInFlight, checkLease, dropItems, finishSweep, openKeyOf, openKeys, planSweep, recordBroadcast, recordSigned, recordUnseen, saveSweep, sweptTransactions, type SweepFence } from "../../sweeps/store";

/** proofPolls / proofMs: a sweep whose nonce was used while none of its transactions can be found is stalled only then (lib/sweeps/proof.ts). */
export interface SweeperSettings extends ProofRule {
	batchSize: number;
	/** A broadcast sweep not mined after this long is replaced with higher fees. */
	stuckMs: number;
	/** Native sweeps only when the amount is at least this many times the fee. */
	minValueMultiple: number;
	/** Token deposits wait for a full batch at most this long. */
	maxAgeMs: number;
	/** Failures in a row (reverted sends, estimates that say "reverts") after which a destination or deposit is held for good (lib/sweeps/holds.ts). */
	maxFailures: number;
	/** The wait after a destination's or deposit's first failure; it doubles with each further one. */
	failureBackoffMs: number;
}

export interface SweepRunnerDeps extends SweepRunnerBaseDeps<SweeperSettings> {
	provider: JsonRpcProvider;
	contracts: { batcher: string; delegate: string } | null;
	sweeperKey: string | null;
	/** Strategy 2's bridge provider (BRIDGE_PROVIDER_URL); null: bridged routes are held. */
	bridge: BridgeProvider | null;
}

/** What signing a sweep came to: the bytes, nothing worth sending (the sweep ends), or not now (it stays planned). */
type Signing = { raw: string; hash: string } | null | "later";

/** A failure in a few words for a log line or a hold's reason (ethers' messages carry the whole request). */
function briefly(err: unknown): string {
	const e = err as { shortMessage?: unknown; message?: unknown };
	const text = typeof e?.shortMessage === "string" ? e.shortMessage : typeof e?.message === "string" ? e.message : String(err);
	return text.length > 200 ? `${text.slice(0, 200)}...` : text;
}

const ERC20 = ["function balanceOf(address) view returns (uint256)"];

interface RequestContext {
	/** The network's settled checkouts whose funds were not swept. */
	settled: SweepableCheckout[];
	/** transaction id → whether its funds may pay a request (asked once a step). */
	requestable: Map<string, boolean>;
	fees: sweep.FeeSuggestion | null;
}

export class SweepRunner {
	private warnedNoContracts = false;
	private warnedNoBridge = false;
	/** Requests already said to be waiting for funds (logged once each). */
	private readonly waiting = new Set<string>();
	/** The network's holds (lib/sweeps/holds.ts), read at each step and kept current by its writes. */
	private holds = new Map<string, SweepHold>();
	/** The lease this step writes under, and whether it is still held (the service's heartbeat). */
	private fence: SweepFence = { networkId: "", owner: "", token: -1 };
	private lost: AbortSignal | null = null;

	constructor(private readonly deps: SweepRunnerDeps) {}

	/**
	 * One step under `fence` (the network's sweep lease). Every write is fenced by it; `lost` aborts
	 * the step between sweeps as soon as the lease is known to be gone.
	 */
	async step(fence: SweepFence, lost?: AbortSignal): Promise<void> {
		this.fence = fence;
		this.lost = lost ?? null;
		this.holds = await holdsOf(this.deps.models, this.deps.network.id);
		await advanceInFlight(this.deps, fence, this.lost, s => this.advance(s));
		await this.executeRequests();
		checkLease(fence, this.lost);
		await this.plan();
		checkLease(fence, this.lost);
		await this.followBridges();
	}

	private token(tokenId: string): SweepToken | undefined {
		return this.deps.network.tokens.find(t => t.tokenId === tokenId);
	}

	/**
	 * Signs a planned sweep (nothing is sent before its bytes are recorded). Native sends get the gas
	 * the node estimates for the real destination (a contract's receive() needs more than 21,000); a
	 * replacement keeps the limit of the bytes it replaces. "later": the estimate says the send
	 * would revert (a failure is counted at its destination or deposits): it stays planned.
	 */
	private async sign(s: Sweep, feeStep: number): Promise<Signing> {
		const { models, network, provider, contracts, sweeperKey } = this.deps;
		const items = await models.SweepItem.findAll({ where: { sweepId: s.id } });
		const base = await sweep.suggestFees(provider);
		const fees = feeStep > 0 ? sweep.bumpFees(base, feeStep) : base;
		if ((s.requestId || s.bridgeQuoteId) && (s.kind === "native" || s.kind === "token")) {
			// A withdrawal request or a bridge quote: exactly its amount, from one deposit, to its address
			// (a request's native send holds its whole deposit as the item: the amount is the request's).
			const item = items[0];
			const token = this.token(s.tokenId)!;
			const amount = toBaseUnits(s.requestId ? await requestAmount(models, s.requestId) : item.amount, token.decimals);
			const key = await this.deps.depositKey(item.derivationIndex);
			if (s.kind === "token") return sweep.signTokenTransfer({ chainId: network.chainId, depositKey: key, nonce: s.nonce, token: token.contractAddress, to: s.toAddress, amount, fees });
			const gasLimit = s.rawTx ? sweep.gasLimitOf(s.rawTx) : await this.nativeGas(item.depositAddress, s.toAddress, amount);
			if (gasLimit === null) return "later";
			return sweep.signNativeTransfer({ chainId: network.chainId, key, nonce: s.nonce, to: s.toAddress, amount, fees, gasLimit });
		}
		if (s.kind === "native") {
			const item = items[0];
			const balance = await provider.getBalance(item.depositAddress);
			// Estimated with what a plain transfer would send: an amount the deposit can pay with its gas.
			const probe = balance - sweep.maxFeeCost(sweep.NATIVE_TRANSFER_GAS, fees);
			if (probe <= 0n) return null;
			const gasLimit = s.rawTx ? sweep.gasLimitOf(s.rawTx) : await this.nativeGas(item.depositAddress, s.toAddress, probe);
			if (gasLimit === null) return "later";
			return sweep.signNativeSweep({ chainId: network.chainId, depositKey: await this.deps.depositKey(item.derivationIndex), to: s.toAddress, balance, fees, nonce: s.nonce, gasLimit });
		}
		if (s.kind === "topup" || s.kind === "token") {
			const item = items[0];
			const token = this.token(s.tokenId)!;
			if (s.kind === "topup") {
				if (!sweeperKey) throw new Error("a gas top-up needs SWEEPER_PRIVATE_KEY");
				const amount = sweep.gasTopUpAmount(sweep.TOKEN_TRANSFER_GAS_LIMIT, fees, await provider.getBalance(item.depositAddress));
				if (amount <= 0n) return null; // the deposit has its gas already: the token transfer is planned next
				return sweep.signGasTopUp({ chainId: network.chainId, sweeperKey, nonce: s.nonce, to: item.depositAddress, amount, fees });
			}
			const amount = (await new Contract(token.contractAddress, ERC20, provider).balanceOf(item.depositAddress)) as bigint;
			if (amount <= 0n) return null;
			return sweep.signTokenTransfer({ chainId: network.chainId, depositKey: await this.deps.depositKey(item.derivationIndex), nonce: s.nonce, token: token.contractAddress, to: s.toAddress, amount, fees });
		}
		if (!contracts || !sweeperKey) throw new Error("token sweeps need SWEEPER_PRIVATE_KEY and the sweep contracts of this network");
		const token = this.token(s.tokenId)!;
		let kept = items;
		let gasLimit = s.rawTx ? sweep.gasLimitOf(s.rawTx) : null;
		if (gasLimit === null) {
			// Estimated on the chain's state now: a deposit that makes the batch revert (blacklisted, a
			// paused token) leaves the batch here, before anything is signed, and the rest goes.
			const estimate = await this.estimateBatch(token, s.toAddress, items);
			kept = items.filter(i => !estimate.dropped.has(i.depositAddress));
			if (kept.length < items.length) {
				if (!(await dropItems(this.deps.sequelize, models, this.fence, s, items.filter(i => estimate.dropped.has(i.depositAddress)).map(i => i.id), this.deps.now()))) return "later";
				if (kept.length === 0) return null;
			}
			if (estimate.gasLimit === null) return "later";
			gasLimit = estimate.gasLimit;
		}
		return sweep.signBatchTokenSweep({ chainId: network.chainId, sweeperKey, nonce: s.nonce, batcher: contracts.batcher, delegate: contracts.delegate, token: token.contractAddress, to: s.toAddress, deposits: await this.batchDeposits(kept), fees, gasLimit });
	}

	/** A batch's deposits with their keys and authorization nonces, asked at every signing: a reverted batch may have left some authorizations applied. */
	private async batchDeposits(items: Array<Pick<SweepItem, "depositAddress" | "derivationIndex">>): Promise<sweep.BatchDeposit[]> {
		const nonces = await sweep.authorizationNoncesFor(this.deps.provider, items.map(i => i.depositAddress), this.deps.contracts!.delegate);
		return Promise.all(items.map(async (item, i) => ({ key: await this.deps.depositKey(item.derivationIndex), address: item.depositAddress, authorizationNonce: nonces[i] })));
	}

	/**
	 * eth_estimateGas of a token batch. When it says the batch reverts, each deposit is estimated
	 * alone: those that revert alone are `dropped` and a failure is counted on each (a blacklisted
	 * deposit); when none passes alone (a paused token, a blacklisted destination) the failure is
	 * counted at the destination and every deposit is dropped. `gasLimit` is the estimate of the
	 * deposits kept, null when there is none or it still fails.
	 */
	private async estimateBatch(token: SweepToken, to: string, items: Array<Pick<SweepItem, "depositAddress" | "derivationIndex">>): Promise<{ gasLimit: bigint | null; dropped: Set<string> }> {
		const { provider, network, contracts, sweeperKey } = this.deps;
		const estimate = async (list: typeof items) =>
			sweep.estimateBatchGas(provider, { chainId: network.chainId, sweeperKey: sweeperKey!, batcher: contracts!.batcher, delegate: contracts!.delegate, token: token.contractAddress, to, deposits: await this.batchDeposits(list) });
		const reverts = async (list: typeof items): Promise<{ gas: bigint } | { error: unknown }> => {
			try {
				return { gas: await estimate(list) };
			} catch (err) {
				if (!sweep.isRevert(err)) throw err;
				return { error: err };
			}
		};
		const whole = await reverts(items);
		if ("gas" in whole) return { gasLimit: whole.gas, dropped: new Set() };
		const bad: Array<{ item: (typeof items)[number]; error: unknown }> = [];
		for (const item of items) {
			const alone = await reverts([item]);
			if ("error" in alone) bad.push({ item, error: alone.error });
		}
		if (bad.length === items.length && items.length > 1) {
			await this.holdFailure(this.holdKey("destination", to, token.tokenId), `${token.symbol} batch gas estimate: ${briefly(whole.error)}`);
			return { gasLimit: null, dropped: new Set(items.map(i => i.depositAddress)) };
		}
		for (const b of bad) await this.holdFailure(this.holdKey("deposit", b.item.depositAddress, token.tokenId), `${token.symbol} sweep gas estimate: ${briefly(b.error)}`);
		const dropped = new Set(bad.map(b => b.item.depositAddress));
		const kept = items.filter(i => !dropped.has(i.depositAddress));
		if (kept.length === 0) return { gasLimit: null, dropped };
		const rest = await reverts(kept);
		return { gasLimit: "gas" in rest ? rest.gas : null, dropped };
	}

	/**
	 * The gas limit of a native send, estimated against its real destination; null when the node
	 * says it would revert (a failure is counted at the destination: lib/sweeps/holds.ts). Other
	 * errors (the node unreachable) throw: the step is tried again, nothing is counted.
	 */
	private async nativeGas(from: string, to: string, value: bigint): Promise<bigint | null> {
		// Held (backing off, or for good): not even estimated, so a failure counts once per attempt.
		if (this.held("destination", to, "")) return null;
		try {
			return await sweep.estimateNativeGas(this.deps.provider, { from, to, value });
		} catch (err) {
			if (!sweep.isRevert(err)) throw err;
			await this.holdFailure(this.holdKey("destination", to, ""), `gas estimate: ${briefly(err)}`);
			return null;
		}
	}

	private holdKey(scope: SweepHoldScope, address: string, tokenId: string): HoldKey {
		return { networkId: this.deps.network.id, scope, address: getAddress(address), tokenId };
	}

	private holdAt(scope: SweepHoldScope, address: string, tokenId: string): SweepHold | undefined {
		return this.holds.get(holdKeyOf(this.holdKey(scope, address, tokenId)));
	}

	/** True while a hold keeps the sweeper from sending there (backing off, or blocked). */
	private held(scope: SweepHoldScope, address: string, tokenId: string): boolean {
		return isHeld(this.holdAt(scope, address, tokenId), this.deps.now());
	}

	/**
	 * One failure at a destination or deposit: held until its next attempt, and for good after
	 * SWEEP_MAX_FAILURES, which is alerted once (an error log, the `sweeps.blocked` metric, error
	 * tracking). Answers whether it is blocked now.
	 */
	private async holdFailure(key: HoldKey, reason: string): Promise<boolean> {
		const { models, network, settings, logger, now } = this.deps;
		const { hold, blockedNow } = await recordHoldFailure(models, key, reason, { maxFailures: settings.maxFailures, backoffMs: settings.failureBackoffMs }, now());
		this.holds.set(holdKeyOf(key), hold);
		const what = `${key.scope} ${key.address}${key.tokenId ? ` (${this.token(key.tokenId)?.symbol ?? key.tokenId})` : ""} on ${network.slug}`;
		if (blockedNow) {
			const message = `Sweeper: ${what} failed ${hold.failures} times in a row (last: ${reason}); nothing more is sent there until support clears it (sweeper-evm.support.clearHold) or the merchant changes the address`;
			logger.error(message);
			this.deps.onBlocked?.(key.scope);
			this.deps.onFailure?.(new Error(message));
		} else if (!hold.blockedAt) {
			logger.warn(`Sweeper: ${what} failed (${reason}); failure ${hold.failures} of ${settings.maxFailures}, next attempt after ${hold.nextAttemptAt.toISOString()}`);
		}
		return Boolean(hold.blockedAt);
	}

	private async advance(s: Sweep): Promise<void> {
		const { provider, network, settings, logger, now } = this.deps;
		if (s.status === "planned") {
			const signed = await this.sign(s, 0);
			if (signed === "later") {
				await this.endIfBlocked(s);
				return;
			}
			if (!signed) {
				await this.end(s, "failed", { reason: "not worth its fee, or nothing left to send" }, "skipped");
				return;
			}
			await recordSigned(this.deps.sequelize, this.deps.models, this.fence, s, signed, 0, now());
		}
		if (s.status === "signed") {
			await sweep.broadcast(provider, s.rawTx!);
			await recordBroadcast(this.deps.sequelize, this.deps.models, this.fence, s, now());
			this.deps.onOutcome?.("broadcast");
			return;
		}
		// Broadcast (or stalled): mined (any of its hashes), failed, or stuck.
		const receipt = await this.minedReceipt(s);
		if (receipt) {
			const hash = receipt.hash;
			const head = await provider.getBlockNumber();
			if (head - receipt.blockNumber + 1 < network.requiredConfirmations) return;
			const feePaid = (receipt.gasUsed * receipt.gasPrice).toString();
			if (receipt.status !== 1) {
				await this.reverted(s, hash, receipt.gasUsed, feePaid);
				return;
			}
			await this.confirm(s, hash, receipt.gasUsed, feePaid, receipt);
			return;
		}
		const chainNonce = await provider.getTransactionCount(s.fromAddress, "latest");
		if (chainNonce > s.nonce) {
			await this.nonceUsed(s);
			return;
		}
		if (s.unseenPolls > 0) await recordUnseen(this.deps.sequelize, this.deps.models, this.fence, s, true, now());
		if (s.status === "stalled") return; // a stalled sweep is only watched for its own transactions
		if (s.broadcastAt && now().getTime() - s.broadcastAt.getTime() > settings.stuckMs * (s.feeStep + 1)) {
			const signed = await this.sign(s, s.feeStep + 1);
			if (!signed || signed === "later") return;
			await recordSigned(this.deps.sequelize, this.deps.models, this.fence, s, signed, s.feeStep + 1, now());
			this.deps.onOutcome?.("replaced");
			logger.info(`Sweep ${s.id} on ${network.slug} stuck: replaced with higher fees (step ${s.feeStep})`);
		}
		await sweep.broadcast(provider, s.rawTx!).catch(err => logger.warn(`Sweep ${s.id}: broadcast: ${(err as Error).message}`));
	}

	/** The receipt of whichever of the sweep's transactions was mined, asked by hash; null: none found this time. */
	private async minedReceipt(s: Sweep): Promise<TransactionReceipt | null> {
		for (const hash of s.hashes) {
			const receipt = await this.deps.provider.getTransactionReceipt(hash);
			if (receipt) return receipt;
		}
		return null;
	}

	/**
	 * The sending wallet's nonce is used, and no receipt of ours answered. A receipt lookup that
	 * answers null (a lagging node behind a load balancer, a block mined between two calls) is not
	 * proof: every hash is asked again, by receipt and by transaction, and only after
	 * `proofPolls` consecutive polls over at least `proofMs` with none found is the nonce known to
	 * be taken by a transaction we do not know. Even then the funds are not freed (they may have
	 * moved): the sweep is `stalled`, its items and request stay open, and the operator is alerted.
	 */
	private async nonceUsed(s: Sweep): Promise<void> {
		const { provider, network, settings } = this.deps;
		let seen = false;
		for (const hash of s.hashes) {
			if ((await provider.getTransaction(hash)) || (await provider.getTransactionReceipt(hash))) {
				seen = true;
				break;
			}
		}
		await countUnseen({ ...this.deps, network, rule: settings }, this.fence, s, seen, `nonce ${s.nonce} of ${s.fromAddress} was used`);
	}

	/** Ends a sweep (lib/sweeps/store.ts finishSweep) and reports its outcome, once. */
	private async end(s: Sweep, status: "confirmed" | "failed" | "stalled", fields: Parameters<typeof finishSweep>[5], outcome: SweepOutcome = status): Promise<boolean> {
		const ended = await finishSweep(this.deps.sequelize, this.deps.models, this.fence, s, status, fields, this.deps.now());
		if (ended) this.deps.onOutcome?.(outcome);
		return ended;
	}

	/** The holds a sweep's send counts against: its destination for native sends, its deposits for token sends. */
	private holdKeysOf(s: Sweep, items: SweepItem[]): HoldKey[] {
		if (s.kind === "native") return [this.holdKey("destination", s.toAddress, "")];
		return items.map(i => this.holdKey("deposit", i.depositAddress, i.tokenId));
	}

	/** A planned sweep that cannot be signed now ends, unsent (its nonce given back), once a hold stops it for good. */
	private async endIfBlocked(s: Sweep): Promise<void> {
		const items = await this.deps.models.SweepItem.findAll({ where: { sweepId: s.id } });
		const blocked = this.holdKeysOf(s, items).map(k => this.holdAt(k.scope, k.address, k.tokenId)).find(h => h?.blockedAt);
		if (!blocked) return;
		const reason = `not sent: ${blocked.scope} ${blocked.address} is held after ${blocked.failures} failures (${blocked.reason})`;
		if (!(await this.end(s, "failed", { reason }, "skipped"))) return;
		if (s.requestId) await this.deps.ports.failRequest({ id: s.requestId, reason, final: true });
	}

	/**
	 * A send mined and reverted. Its gas was paid: by the deposit for a native send (the merchant's
	 * funds, booked as a `fee` entry so the ledger equals the chain), by the sweeper wallet
	 * otherwise. A failure is counted at its destination (native) or deposits (tokens), so the same
	 * send is not tried again at once, nor forever; a withdrawal request fails for good once its
	 * destination is held for good.
	 */
	private async reverted(s: Sweep, hash: string, gasUsed: bigint, feePaid: string): Promise<void> {
		const { models, network, ports, logger } = this.deps;
		const items = await models.SweepItem.findAll({ where: { sweepId: s.id } });
		const native = network.tokens.find(t => t.contractAddress === "");
		if (s.kind === "native" && native && items[0]) {
			await ports.record({ organizationId: items[0].organizationId, mode: items[0].mode, networkId: network.id, tokenId: native.tokenId, kind: "fee", amount: `-${fromBaseUnits(BigInt(feePaid), native.decimals)}`, refType: "sweep", refId: s.id, fence: this.fence });
		}
		if (!(await this.end(s, "failed", { txHash: hash, gasUsed: gasUsed.toString(), feePaid, reason: "reverted on chain" }))) return;
		let blocked = false;
		for (const key of this.holdKeysOf(s, items)) blocked = (await this.holdFailure(key, `${s.kind} send ${hash} reverted on chain`)) || blocked;
		if (s.requestId) await ports.failRequest({ id: s.requestId, reason: `send reverted on chain (${hash}); ${blocked ? "its destination refuses payments: not retried" : "retried"}`, final: blocked });
		logger.warn(`Sweep ${s.id} reverted on ${network.slug} (${hash}); ${blocked ? "held: not sent again" : "its funds will be planned again after a pause"}`);
	}

	/** Confirmed: the ledger gets each deposit's withdrawal (and a native sweep's fee), then the sweep closes. */
	private async confirm(s: Sweep, hash: string, gasUsed: bigint, feePaid: string, receipt: TransactionReceipt): Promise<void> {
		const { models, network, ports } = this.deps;
		const items = await models.SweepItem.findAll({ where: { sweepId: s.id } });
		const native = network.tokens.find(t => t.contractAddress === "");
		const token = this.token(s.tokenId)!;
		if (s.kind === "topup") {
			// The operator's gas, not the merchant's funds: the token transfer is planned next.
			await this.end(s, "confirmed", { txHash: hash, gasUsed: gasUsed.toString(), feePaid });
			return;
		}
		if (s.requestId) {
			// The request's own `withdrawal` entry (its exact amount) is written as it completes; a
			// native send's gas came from the same deposit and is the merchant's fee.
			const item = items[0];
			if (s.kind === "native" && native) {
				await ports.record({ organizationId: item.organizationId, mode: item.mode, networkId: network.id, tokenId: native.tokenId, kind: "fee", amount: `-${fromBaseUnits(BigInt(feePaid), native.decimals)}`, refType: "sweep", refId: s.id, fence: this.fence });
			}
			await ports.completeRequest({ id: s.requestId, txHash: hash, fence: this.fence });
			await this.end(s, "confirmed", { txHash: hash, gasUsed: gasUsed.toString(), feePaid });
			await this.clearHoldsOf(s, items);
			this.deps.logger.info(`Withdrawal request ${s.requestId} paid on ${network.slug}: ${hash}`);
			return;
		}
		// The delegate sweeps whole balances: what each deposit really sent is in the Transfer logs.
		const sent = s.kind === "batch7702" || s.kind === "token" ? sweep.sweptAmounts(receipt, token.contractAddress, s.toAddress) : null;
		for (const item of items) {
			let moved = sent ? fromBaseUnits(sent.get(item.depositAddress) ?? 0n, token.decimals) : item.amount;
			if (s.kind === "native" && native) {
				// The deposit paid its own gas: what reached the merchant is the transaction's value.
				const sent = await this.deps.provider.getTransaction(hash);
				moved = fromBaseUnits(sent?.value ?? 0n, native.decimals);
				await ports.record({ organizationId: item.organizationId, mode: item.mode, networkId: network.id, tokenId: native.tokenId, kind: "fee", amount: `-${fromBaseUnits(BigInt(feePaid), native.decimals)}`, refType: "sweep", refId: s.id, fence: this.fence });
			}
			await ports.record({ organizationId: item.organizationId, mode: item.mode, networkId: network.id, tokenId: item.tokenId, kind: "sweep", amount: `-${moved}`, refType: "sweep_item", refId: String(item.id), fence: this.fence });
		}
		await this.end(s, "confirmed", { txHash: hash, gasUsed: gasUsed.toString(), feePaid });
		await this.clearHoldsOf(s, items);
		this.deps.logger.info(`Sweep ${s.id} confirmed on ${network.slug}: ${items.length} deposit(s), ${hash}`);
	}

	/** A confirmed send: failures counted at its destination and deposits no longer count (they count in a row). */
	private async clearHoldsOf(s: Sweep, items: SweepItem[]): Promise<void> {
		const keys = [...this.holdKeysOf(s, items), this.holdKey("destination", s.toAddress, s.kind === "native" ? "" : s.tokenId)].filter(k => this.holds.has(holdKeyOf(k)));
		await clearHolds(this.deps.models, keys);
		for (const k of keys) this.holds.delete(holdKeyOf(k));
	}

	/**
	 * Pending withdrawal requests of this network (read by network, in keyset pages: requests of
	 * other networks never hide them): each is paid in one send of its exact amount from a deposit
	 * of the merchant that holds it (a token deposit without gas gets a top-up first), never from a
	 * checkout with its own withdrawal address (those funds belong to that address). A request no
	 * single deposit can pay yet stays pending; one to another network needs a bridge (strategy 2),
	 * which is not wired to the sweeper yet: it fails with that reason.
	 */
	private async executeRequests(): Promise<void> {
		const { ports, network } = this.deps;
		let context: RequestContext | null = null;
		await forEachPendingRequest(ports, network.id, async req => {
			context ??= await this.requestContext();
			await this.executeRequest(req, context);
		});
	}

	/** What every request of a step looks at: the network's settled checkouts, and where each one's funds go. */
	private async requestContext(): Promise<RequestContext> {
		const { ports, network, models } = this.deps;
		const settled = await ports.sweepable({ networkId: network.id });
		const swept = await sweptTransactions(models, settled.map(c => c.transactionId));
		return { settled: settled.filter(c => !swept.has(c.transactionId)), requestable: new Map(), fees: null };
	}

	/** Whether a checkout's funds may pay a request: its destination is the settings' address, or none. */
	private async isRequestable(c: SweepableCheckout, context: RequestContext): Promise<boolean> {
		let ok = context.requestable.get(c.transactionId);
		if (ok === undefined) {
			const destination = await this.deps.ports.destinationOf({ organizationId: c.organizationId, chainType: "evm", transactionId: c.transactionId });
			ok = destination?.source !== "payment";
			context.requestable.set(c.transactionId, ok);
		}
		return ok;
	}

	private async executeRequest(req: WithdrawalRequestView, context: RequestContext): Promise<void> {
		const { ports, network, provider, models, sequelize, sweeperKey, logger, now } = this.deps;
		const own = await models.Sweep.findAll({ where: { requestId: req.id, status: { [Op.ne]: "failed" } } });
		if (own.some(s => s.status !== "confirmed" || s.kind !== "topup")) return; // in flight, or paid
		if (req.destinationNetworkId && req.destinationNetworkId !== network.id) {
			await ports.failRequest({ id: req.id, reason: "a withdrawal to another network needs a bridge provider, not wired to the sweeper yet", final: true });
			return;
		}
		const token = this.token(req.tokenId);
		if (!token) return;
		const need = toBaseUnits(req.amount, token.decimals);
		if (token.contractAddress === "") {
			// A destination that keeps refusing payments: the request fails for good, with the reason; one backing off waits.
			const hold = this.holdAt("destination", req.address, "");
			if (hold?.blockedAt) {
				await ports.failRequest({ id: req.id, reason: `the destination ${req.address} refuses payments (${hold.failures} failures, last: ${hold.reason}); not sent`, final: true });
				return;
			}
			if (this.held("destination", req.address, "")) return;
		}
		const fees = (context.fees ??= await sweep.suggestFees(provider));
		const toppedUp = own.find(s => s.kind === "topup");
		const open = await openKeys(models, context.settled.map(c => openKeyOf(c.depositAddress, c.tokenId)));
		for (const c of context.settled) {
			if (c.organizationId !== req.organizationId || c.tokenId !== req.tokenId || open.has(openKeyOf(c.depositAddress, c.tokenId))) continue;
			if (toppedUp && toppedUp.toAddress !== c.depositAddress) continue; // finish on the deposit that got the gas
			if (token.contractAddress !== "" && this.held("deposit", c.depositAddress, c.tokenId)) continue; // its sends reverted: backing off
			if (!(await this.isRequestable(c, context))) continue;
			const eth = await provider.getBalance(c.depositAddress);
			if (token.contractAddress === "") {
				// 21,000 is the least a send costs; the destination's real gas is estimated only then.
				if (eth < need + this.nativeSendFee(fees)) continue;
				const gas = await this.nativeGas(c.depositAddress, req.address, need);
				if (gas === null) return; // the destination refuses it: counted there, tried again after its pause
				if (eth < need + sweep.maxFeeCost(gas, fees)) continue;
				// The item holds the whole deposit while the send is in flight: the fee comes from it too.
				await planSweep(sequelize, models, this.fence, { networkId: network.id, kind: "native", tokenId: token.tokenId, fromAddress: c.depositAddress, toAddress: req.address, chainNonce: await provider.getTransactionCount(c.depositAddress, "latest"), items: [this.item(c, token, eth)], requestId: req.id }, now());
				return;
			}
			const balance = (await new Contract(token.contractAddress, ERC20, provider).balanceOf(c.depositAddress)) as bigint;
			if (balance < need) continue;
			const item = this.item(c, token, need);
			if (sweep.gasTopUpAmount(sweep.TOKEN_TRANSFER_GAS_LIMIT, fees, eth) > 0n) {
				if (!sweeperKey) continue;
				const sweeper = new Wallet(sweeperKey).address;
				await planSweep(sequelize, models, this.fence, { networkId: network.id, kind: "topup", tokenId: token.tokenId, fromAddress: sweeper, toAddress: c.depositAddress, chainNonce: await provider.getTransactionCount(sweeper, "latest"), items: [item], requestId: req.id }, now());
			} else {
				await planSweep(sequelize, models, this.fence, { networkId: network.id, kind: "token", tokenId: token.tokenId, fromAddress: c.depositAddress, toAddress: req.address, chainNonce: await provider.getTransactionCount(c.depositAddress, "latest"), items: [item], requestId: req.id }, now());
			}
			return;
		}
		if (!this.waiting.has(req.id)) {
			this.waiting.add(req.id);
			logger.info(`Withdrawal request ${req.id}: no single deposit on ${network.slug} holds ${req.amount} yet; it stays pending`);
		}
	}

	/** The most a plain native send (a request's exact amount) can cost in fees. */
	private nativeSendFee(fees: sweep.Fees): bigint {
		return sweep.maxFeeCost(sweep.NATIVE_TRANSFER_GAS, fees);
	}

	/** New sweeps for settled checkouts still holding funds. */
	private async plan(): Promise<void> {
		const { ports, network, provider, models, sequelize, settings, contracts, sweeperKey, now } = this.deps;
		const settled = await ports.sweepable({ networkId: network.id });
		if (settled.length === 0) return;
		const swept = await sweptTransactions(models, settled.map(c => c.transactionId));
		const open = await openKeys(models, settled.map(c => openKeyOf(c.depositAddress, c.tokenId)));
		const byGroup = new Map<string, Array<SweepableCheckout & { amount: bigint; destination: string; settings: boolean }>>();
		const reservations = this.reservations();
		for (const c of settled) {
			if (swept.has(c.transactionId) || open.has(openKeyOf(c.depositAddress, c.tokenId))) continue;
			const token = this.token(c.tokenId);
			if (!token) continue;
			const route = await ports.route({ organizationId: c.organizationId, transactionId: c.transactionId });
			if (route.via === "hold") continue;
			const amount = token.contractAddress === "" ? await provider.getBalance(c.depositAddress) : ((await new Contract(token.contractAddress, ERC20, provider).balanceOf(c.depositAddress)) as bigint);
			if (amount <= 0n) continue;
			if (route.via === "bridge") {
				if (!(await reservations.take(c.organizationId, token.tokenId, fromBaseUnits(amount, token.decimals)))) continue;
				await this.planBridged(c, token, amount, route);
				continue;
			}
			const target = await ports.destinationOf({ organizationId: c.organizationId, chainType: "evm", transactionId: c.transactionId });
			if (!target) continue; // kept at the deposit address until the merchant saves settings
			const destination = target.address;
			const fromSettings = target.source === "settings";
			if (token.contractAddress === "") {
				if (this.held("destination", destination, "")) continue;
				const fees = await sweep.suggestFees(provider);
				const old = now().getTime() - new Date(c.completedAt).getTime() > settings.maxAgeMs;
				const worthIt = (gas: bigint) => {
					const fee = sweep.maxFeeCost(gas, fees);
					return amount > fee && (amount >= fee * BigInt(settings.minValueMultiple) || old);
				};
				// Worth it at 21,000 (the least a send costs) before the destination's real gas is asked.
				if (!worthIt(sweep.NATIVE_TRANSFER_GAS)) continue;
				const gas = await this.nativeGas(c.depositAddress, destination, amount - sweep.maxFeeCost(sweep.NATIVE_TRANSFER_GAS, fees));
				if (gas === null || !worthIt(gas)) continue;
				const items = [this.item(c, token, amount)];
				// Funds pending requests are paid from stay at their deposit (lib/sweeps/reservations.ts).
				if (fromSettings && !(await reservations.take(c.organizationId, token.tokenId, items[0].amount))) continue;
				const admit = fromSettings ? await reservations.guard(items) : undefined;
				await planSweep(sequelize, models, this.fence, { networkId: network.id, kind: "native", tokenId: token.tokenId, fromAddress: c.depositAddress, toAddress: destination, chainNonce: await provider.getTransactionCount(c.depositAddress, "latest"), items, admit }, now());
				continue;
			}
			// A deposit or a token destination backing off after failures (lib/sweeps/holds.ts) waits.
			if (this.held("deposit", c.depositAddress, c.tokenId) || this.held("destination", destination, c.tokenId)) continue;
			if (fromSettings && !(await reservations.take(c.organizationId, token.tokenId, fromBaseUnits(amount, token.decimals)))) continue;
			const key = `${c.tokenId}|${destination}`;
			byGroup.set(key, [...(byGroup.get(key) ?? []), { ...c, amount, destination, settings: fromSettings }]);
		}
		if (byGroup.size === 0) return;
		if (!network.eip7702 && sweeperKey) {
			await this.planWithoutDelegation([...byGroup.values()].flat(), sweeperKey, reservations);
			return;
		}
		if (!contracts || !sweeperKey || !network.eip7702) {
			if (this.warnedNoContracts) return;
			this.warnedNoContracts = true;
			this.deps.logger.warn(`Sweeper: ${network.slug} has token deposits to sweep but no EIP-7702 sweep contracts or sweeper key configured; they stay at their deposit addresses`);
			return;
		}
		const sweeper = new Wallet(sweeperKey).address;
		for (const group of byGroup.values()) {
			const token = this.token(group[0].tokenId)!;
			for (let i = 0; i < group.length; i += settings.batchSize) {
				let batch = group.slice(i, i + settings.batchSize);
				const oldest = Math.min(...batch.map(c => new Date(c.completedAt).getTime()));
				if (batch.length < settings.batchSize && now().getTime() - oldest < settings.maxAgeMs) continue;
				// Estimated before a nonce is taken: deposits that make it revert stay out (and are held).
				const estimate = await this.estimateBatch(token, batch[0].destination, batch);
				batch = batch.filter(c => !estimate.dropped.has(c.depositAddress));
				if (estimate.gasLimit === null || batch.length === 0) continue;
				const items = batch.map(c => this.item(c, token, c.amount));
				const admit = await reservations.guard(items.filter((_, n) => batch[n].settings));
				await planSweep(
					sequelize,
					models,
					this.fence,
					{ networkId: network.id, kind: "batch7702", tokenId: token.tokenId, fromAddress: sweeper, toAddress: batch[0].destination, chainNonce: await provider.getTransactionCount(sweeper, "latest"), items, admit },
					now(),
				);
			}
		}
	}

	/**
	 * A network without EIP-7702: each token deposit gets its gas from the sweeper wallet (a
	 * top-up), then sends its tokens itself; a deposit that already holds enough gas sends at once.
	 */
	private async planWithoutDelegation(deposits: Array<SweepableCheckout & { amount: bigint; destination: string; settings: boolean }>, sweeperKey: string, reservations: Reservations): Promise<void> {
		const { provider, models, sequelize, network, now } = this.deps;
		const fees = await sweep.suggestFees(provider);
		const sweeper = new Wallet(sweeperKey).address;
		for (const d of deposits) {
			const token = this.token(d.tokenId)!;
			const needsGas = sweep.gasTopUpAmount(sweep.TOKEN_TRANSFER_GAS_LIMIT, fees, await provider.getBalance(d.depositAddress)) > 0n;
			const plan = needsGas
				? { kind: "topup" as const, fromAddress: sweeper, toAddress: d.depositAddress }
				: { kind: "token" as const, fromAddress: d.depositAddress, toAddress: d.destination };
			const items = [this.item(d, token, d.amount)];
			const admit = d.settings ? await reservations.guard(items) : undefined;
			await planSweep(sequelize, models, this.fence, { networkId: network.id, tokenId: token.tokenId, ...plan, chainNonce: await provider.getTransactionCount(plan.fromAddress, "latest"), items, admit }, now());
		}
	}

	/**
	 * Strategy 2 with a bridged quote: one deposit's funds go to the bridge provider's deposit
	 * address for a quote of exactly the amount sent (native: the balance less twice its gas, the
	 * rest stays as headroom). A token deposit without gas on a network without EIP-7702 gets its
	 * top-up first and is quoted at the next step.
	 */
	private async planBridged(c: SweepableCheckout, token: SweepToken, balance: bigint, route: Extract<BridgeRoute, { via: "bridge" }>): Promise<void> {
		const { bridge, provider, models, sequelize, network, contracts, sweeperKey, logger, now } = this.deps;
		if (!bridge) {
			if (!this.warnedNoBridge) logger.warn(`Sweeper: strategy 2 needs a bridge provider (BRIDGE_PROVIDER_URL); bridged payments on ${network.slug} stay at their deposit addresses`);
			this.warnedNoBridge = true;
			return;
		}
		const fees = await sweep.suggestFees(provider);
		const native = token.contractAddress === "";
		const eth = native ? balance : await provider.getBalance(c.depositAddress);
		const viaBatch = !native && network.eip7702 && contracts !== null && sweeperKey !== null;
		if (!native && !viaBatch && sweep.gasTopUpAmount(sweep.TOKEN_TRANSFER_GAS_LIMIT, fees, eth) > 0n) {
			if (!sweeperKey) return;
			const sweeper = new Wallet(sweeperKey).address;
			await planSweep(sequelize, models, this.fence, { networkId: network.id, kind: "topup", tokenId: token.tokenId, fromAddress: sweeper, toAddress: c.depositAddress, chainNonce: await provider.getTransactionCount(sweeper, "latest"), items: [this.item(c, token, balance)] }, now());
			return;
		}
		const amount = native ? balance - 2n * sweep.maxFeeCost(21_000n, fees) : balance;
		if (amount <= 0n) return;
		const quote = await bridge.quote(bridgeQuoteRequest(route, amount.toString()));
		const common = { networkId: network.id, tokenId: token.tokenId, toAddress: quote.depositAddress, items: [this.item(c, token, amount)], bridge: { provider: bridge.name, quoteId: quote.quoteId } };
		if (viaBatch) {
			const sweeper = new Wallet(sweeperKey!).address;
			await planSweep(sequelize, models, this.fence, { ...common, kind: "batch7702", fromAddress: sweeper, chainNonce: await provider.getTransactionCount(sweeper, "latest") }, now());
		} else {
			await planSweep(sequelize, models, this.fence, { ...common, kind: native ? "native" : "token", fromAddress: c.depositAddress, chainNonce: await provider.getTransactionCount(c.depositAddress, "latest") }, now());
		}
		logger.info(`Sweeper: ${fromBaseUnits(amount, token.decimals)} ${token.symbol} of checkout ${c.transactionId} goes through ${bridge.name} (quote ${quote.quoteId})`);
	}

	/** Confirmed sweeps into a bridge: the provider's status until it is final. */
	private async followBridges(): Promise<void> {
		const { bridge, models, network, logger, now } = this.deps;
		if (!bridge) return;
		const open = await models.Sweep.findAll({ where: { networkId: network.id, status: "confirmed", bridgeState: "pending" }, limit: 50 });
		for (const s of open) {
			const status = await bridge.status(s.bridgeQuoteId!).catch(err => (logger.warn(`Bridge status of sweep ${s.id}: ${(err as Error).message}`), null));
			if (!status || status.state === "pending") continue;
			s.bridgeState = status.state;
			s.bridgeTxHash = status.destinationTxHash;
			if (status.reason) s.reason = status.reason;
			s.updatedAt = now();
			await saveSweep(this.deps.sequelize, models, this.fence, s);
			const log = status.state === "completed" ? logger.info : logger.warn;
			log.call(logger, `Bridge ${status.state} for sweep ${s.id} on ${network.slug}${status.destinationTxHash ? ` (${status.destinationTxHash})` : ""}${status.reason ? `: ${status.reason}` : ""}`);
		}
	}

	/** This step's view of what the automatic sweep may take from requestable funds. */
	private reservations(): Reservations {
		const { sequelize, models, now, network, ports } = this.deps;
		return new Reservations({ sequelize, models, now, ownAddressCheckouts: a => ports.ownAddressCheckouts(a) }, network.id);
	}

	private item(c: SweepableCheckout, token: SweepToken, amount: bigint) {
		return { transactionId: c.transactionId, organizationId: c.organizationId, mode: c.mode, depositAddress: c.depositAddress, derivationIndex: c.derivationIndex, tokenId: token.tokenId, amount: fromBaseUnits(amount, token.decimals) };
	}
}

