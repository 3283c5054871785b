/**
 * The Solana sweeper's loop for one network (docs/withdrawals.md "Solana sweeper"), on the shared
 * sweep records (lib/sweeps/store.ts) with the transactions of lib/chains/solana/sweep.ts:
 * - `sol`: settled SOL deposits of one merchant and destination, up to 10 per transaction, each
 *   sending its whole balance, the largest paying the fee: every deposit ends at exactly 0;
 * - `spl`: settled token deposits (USDC, USDT: the catalogue's mints), 5 or 6 per transaction, the
 *   sweeper wallet paying the fee (and the destination's token account rent when it is created),
 *   each deposit's token account closed with its rent back to the sweeper wallet;
 * - a withdrawal request: its exact amount from one deposit (SOL: the deposit pays the fee; tokens:
 *   the sweeper wallet does).
 * Each step carries every sweep in flight one state further: planned -> signed (bytes, signature
 * and lastValidBlockHeight recorded BEFORE the first send) -> broadcast -> confirmed at FINALIZED
 * (ledger written from the finalized transaction's balances) or failed. A broadcast transaction
 * not landed is sent again, the same bytes, at every step until it lands or its blockhash expires.
 * It is proven dead only when the finalized block height is past its lastValidBlockHeight and
 * getSignatureStatuses (searchTransactionHistory) knows none of its signatures, on
 * SWEEP_PROOF_POLLS polls over SWEEP_PROOF_MS in a row (one node's "not found" is not proof): only
 * then is the sweep failed and its funds planned again, signed over a new blockhash. Solana has no
 * nonce: the sweep wallet row only numbers the sweeps.
 */
import { Connection, PublicKey, type VersionedTransactionResponse } from "@solana/web3.js";
import { AccountLayout } from "@solana/spl-token";
import { Op } from "sequelize";
import * as sol from "./sweep";
import { fromBaseUnits, toBaseUnits } from "../../money";
import type { Sweep, SweepHoldScope, SweepItem } from "../../../models/sweep.model";
import type { SweepOutcome } from "../../metrics";
import { LeaseLostError } from "../../watchers/store";
import { StepHolds, type HoldKey } from "../../sweeps/holds";
import { isProven, type ProofRule } from "../../sweeps/proof";
import { Reservations } from "../../sweeps/reservations";
import { forEachPendingRequest, requestAmount, type SweepableCheckout, type SweeperPorts, type SweepRunnerBaseDeps, type SweepToken, type WithdrawalRequestView } from "../../sweeps/ports";
import { advanceInFlight, checkLease, dropItems, endSweep, openKeyOf, openKeys, planItem, planSweep, recordBroadcast, recordSigned, recordUnseen, sweptTransactions, type SweepFence } from "../../sweeps/store";

export interface SolanaSweeperSettings extends ProofRule {
	/** At most this many deposits a transaction (and never more than Solana's size limit allows). */
	batchSize: number;
	/** SOL sweeps only when the amount is at least this many times the fee (or the deposit is older than maxAgeMs). */
	minValueMultiple: number;
	/** Token deposits wait for a full transaction at most this long. */
	maxAgeMs: number;
	maxFailures: number;
	failureBackoffMs: number;
}

export interface SolanaSweepRunnerDeps extends Omit<SweepRunnerBaseDeps<SolanaSweeperSettings>, "ports"> {
	connection: Connection;
	/** SWEEPER_PRIVATE_KEY_SOLANA's 64-byte secret key; null: token deposits stay where they are. */
	sweeperKey: Uint8Array | null;
	ports: Pick<SweeperPorts, "sweepable" | "record" | "route" | "pendingRequests" | "completeRequest" | "failRequest" | "destinationOf" | "ownAddressCheckouts">;
}

/** The "wallet" of Solana sweeps in sweep_wallets: no nonce on Solana; its counter only numbers the sweeps. */
const SOLANA_SWEEPS = "solana-sweeps";
/**
 * Balances are read at `confirmed`, the commitment the blockhash is taken at and the state the
 * leader executes the transaction on: a deposit read there is swept to exactly 0. (At `finalized`
 * a payment confirmed since would be left behind, possibly below the rent-exempt minimum, which
 * fails the transaction.) Only checkouts credited at finalized are swept at all, and every amount
 * is explicit in the instructions: a confirmed block that is dropped can only make the transaction
 * fail (fee charged, nothing moved), never move more than the deposit holds. The ledger is written
 * from the finalized transaction's own balances.
 */
const READ: "confirmed" = "confirmed";

/** What a deposit's token account holds: base units and the lamports its close returns. */
interface TokenAccountState {
	amount: bigint;
	lamports: bigint;
}

type Group = { token: SweepToken; destination: string; items: Array<SweepableCheckout & { amount: bigint; settings: boolean }> };

export class SolanaSweepRunner {
	private fence: SweepFence = { networkId: "", owner: "", token: -1 };
	private lost: AbortSignal | null = null;
	private readonly holds: StepHolds;
	private warnedNoKey = false;
	private warnedBridge = false;
	private readonly waiting = new Set<string>();

	constructor(private readonly deps: SolanaSweepRunnerDeps) {
		this.holds = new StepHolds(deps);
	}

	/** One step under `fence` (the network's sweep lease); `lost` aborts it between sweeps. */
	async step(fence: SweepFence, lost?: AbortSignal): Promise<void> {
		this.fence = fence;
		this.lost = lost ?? null;
		await this.holds.load();
		await advanceInFlight(this.deps, fence, this.lost, s => this.advance(s));
		await this.executeRequests();
		checkLease(fence, this.lost);
		await this.plan();
	}

	private token(tokenId: string): SweepToken | undefined {
		return this.deps.network.tokens.find(t => t.tokenId === tokenId);
	}

	private native(): SweepToken {
		return this.deps.network.tokens.find(t => t.contractAddress === "")!;
	}

	private async lamports(address: string): Promise<bigint> {
		return BigInt(await this.deps.connection.getBalance(new PublicKey(address), READ));
	}

	/** A token account's amount and lamports; null when there is none (never created, or closed). */
	private async tokenAccount(address: string): Promise<TokenAccountState | null> {
		const info = await this.deps.connection.getAccountInfo(new PublicKey(address), READ);
		if (!info || info.data.length < AccountLayout.span) return null;
		return { amount: AccountLayout.decode(info.data).amount, lamports: BigInt(info.lamports) };
	}

	// ---- holds (lib/sweeps/holds.ts): deposits whose sends failed on chain -------------------------

	private holdKey(scope: SweepHoldScope, address: string, tokenId: string): HoldKey {
		return { networkId: this.deps.network.id, scope, address, tokenId };
	}

	private held(scope: SweepHoldScope, address: string, tokenId: string): boolean {
		return this.holds.held(this.holdKey(scope, address, tokenId));
	}

	private async holdFailure(key: HoldKey, reason: string): Promise<boolean> {
		const { network, logger } = this.deps;
		const { hold, blockedNow } = await this.holds.fail(key, reason);
		if (blockedNow) {
			const message = `Sweeper: ${key.scope} ${key.address} on ${network.slug} failed ${hold.failures} times in a row (last: ${reason}); nothing more is sent from there until support clears it (sweeper-solana.support.clearHold)`;
			logger.error(message);
			this.deps.onBlocked?.(key.scope);
			this.deps.onFailure?.(new Error(message));
		}
		return Boolean(hold.blockedAt);
	}

	// ---- a sweep in flight ------------------------------------------------------------------------

	private end(s: Sweep, status: "confirmed" | "failed", fields: Parameters<typeof endSweep>[4], outcome: SweepOutcome = status): Promise<boolean> {
		return endSweep(this.deps, this.fence, s, status, fields, outcome);
	}

	private async send(raw: string): Promise<void> {
		// Preflight skipped: the same bytes are sent again until they land or expire, and a preflight
		// of a transaction already processed answers an error, not its signature. The RPC node's own
		// re-sending (maxRetries left to it) only adds copies of these same bytes.
		await this.deps.connection.sendRawTransaction(Buffer.from(raw, "base64"), { skipPreflight: true });
	}

	private async advance(s: Sweep): Promise<void> {
		const { connection, sequelize, models, network, logger, now } = this.deps;
		if (s.status === "planned") {
			let signed: sol.SignedSolanaTx | null;
			try {
				signed = await this.sign(s);
			} catch (err) {
				if (!(err instanceof sol.SweepRefused)) throw err;
				// Never sent: its funds are free again (a payment waits for a deposit that can pay it).
				if (await this.end(s, "failed", { reason: `not sent: ${err.message}` }, "skipped")) {
					if (s.requestId) await this.deps.ports.failRequest({ id: s.requestId, reason: `not sent: ${err.message}; retried` });
				}
				return;
			}
			if (!signed) {
				await this.end(s, "failed", { reason: "nothing left to send" }, "skipped");
				return;
			}
			// Recorded with the bytes, before they are ever sent: a crash from here on sends these same bytes.
			s.lastValidBlockHeight = signed.lastValidBlockHeight.toString();
			await recordSigned(sequelize, models, this.fence, s, { raw: signed.serialized, hash: signed.signature }, 0, now());
		}
		if (s.status === "signed") {
			await this.send(s.rawTx!);
			await recordBroadcast(sequelize, models, this.fence, s, now());
			this.deps.onOutcome?.("broadcast");
			return;
		}
		// The finalized height is read BEFORE the statuses: a transaction that landed by then is in
		// the history the statuses search (never the other way round, which could miss it).
		const finalizedHeight = BigInt(await connection.getBlockHeight("finalized"));
		const { value } = await connection.getSignatureStatuses(s.hashes, { searchTransactionHistory: true });
		const found = s.hashes.map((signature, i) => ({ signature, status: value[i] })).filter(x => x.status);
		const final = found.find(x => x.status!.confirmationStatus === "finalized");
		if (final) {
			if (final.status!.err) await this.failedOnChain(s, final.signature);
			else await this.confirm(s, final.signature);
			return;
		}
		if (found.length > 0) {
			// Landed, not finalized yet: it will be (or its block is dropped and it is sent again).
			if (s.unseenPolls > 0) await recordUnseen(sequelize, models, this.fence, s, true, now());
			return;
		}
		const verdict = sol.sendVerdict({ status: null, finalizedBlockHeight: finalizedHeight, lastValidBlockHeight: BigInt(String(s.lastValidBlockHeight ?? "0")) });
		if (verdict === "pending") {
			if (s.unseenPolls > 0) await recordUnseen(sequelize, models, this.fence, s, true, now());
			await this.send(s.rawTx!).catch(err => logger.warn(`Sweep ${s.id} on ${network.slug}: send: ${(err as Error).message}`));
			return;
		}
		// Expired and found nowhere: counted; proven dead only after proofPolls polls over proofMs.
		const { polls, since } = await recordUnseen(sequelize, models, this.fence, s, false, now());
		if (!isProven(polls, since, now(), this.deps.settings)) return;
		await this.expired(s, finalizedHeight, polls);
	}

	/** Proven dead: the sweep fails and its funds (and its request) are planned again, over a new blockhash. */
	private async expired(s: Sweep, finalizedHeight: bigint, polls: number): Promise<void> {
		const reason = `expired unsent: the finalized block height ${finalizedHeight} is past its lastValidBlockHeight ${s.lastValidBlockHeight} and none of its ${s.hashes.length} signature(s) has a status (${polls} polls); its funds are signed again`;
		if (!(await this.end(s, "failed", { reason }))) return;
		if (s.requestId) await this.deps.ports.failRequest({ id: s.requestId, reason: `sweep ${s.id} ${reason}; retried` });
		this.deps.logger.warn(`Sweep ${s.id} on ${this.deps.network.slug} ${reason}`);
	}

	private async finalizedTransaction(signature: string): Promise<VersionedTransactionResponse | null> {
		return this.deps.connection.getTransaction(signature, { commitment: "finalized", maxSupportedTransactionVersion: 0 });
	}

	/**
	 * Landed and finalized with an error: nothing moved but the fee. A SOL send's fee was paid by a
	 * deposit (the merchant's funds: a `fee` entry, so the ledger equals the chain); a token send's by
	 * the sweeper wallet (as the EVM sweeper's gas: on the sweep's record, not the merchant's ledger).
	 * A failure is counted on each deposit (lib/sweeps/holds.ts), its funds planned again after a pause.
	 */
	private async failedOnChain(s: Sweep, signature: string): Promise<void> {
		const { models, network, ports, logger } = this.deps;
		const tx = await this.finalizedTransaction(signature);
		if (!tx?.meta) return; // this node has no copy yet: asked again at the next step
		const fee = BigInt(tx.meta.fee);
		const items = await models.SweepItem.findAll({ where: { sweepId: s.id }, order: [["id", "ASC"]] });
		if (s.kind === "sol") {
			const payer = tx.transaction.message.staticAccountKeys[0].toBase58();
			const item = items.find(i => i.depositAddress === payer);
			if (item) await this.recordFee(item, fee, s.id);
		}
		if (!(await this.end(s, "failed", { txHash: signature, feePaid: fee.toString(), reason: `failed on chain: ${JSON.stringify(tx.meta.err)}` }))) return;
		let blocked = false;
		for (const i of items) blocked = (await this.holdFailure(this.holdKey("deposit", i.depositAddress, i.tokenId), `${s.kind} send ${signature} failed on chain`)) || blocked;
		if (s.requestId) await ports.failRequest({ id: s.requestId, reason: `send failed on chain (${signature}); ${blocked ? "its deposit is held: not retried from it" : "retried"}` });
		logger.warn(`Sweep ${s.id} failed on chain on ${network.slug} (${signature}): ${JSON.stringify(tx.meta.err)}`);
	}

	private async recordFee(item: SweepItem, lamports: bigint, sweepId: string): Promise<void> {
		const native = this.native();
		await this.deps.ports.record({ organizationId: item.organizationId, mode: item.mode, networkId: this.deps.network.id, tokenId: native.tokenId, kind: "fee", amount: `-${fromBaseUnits(lamports, native.decimals)}`, refType: "sweep", refId: sweepId, fence: this.fence });
	}

	/**
	 * Finalized without error. The ledger gets what each deposit really sent, from the finalized
	 * transaction's pre/post balances (SOL) or token balances (tokens): SOL sweeps `sweep` entries
	 * for what reached the destination and a `fee` entry for the fee the paying deposit gave; token
	 * sweeps `sweep` entries only (the sweeper wallet's fee and rent are the operator's, kept on the
	 * sweep's record). A request: its `withdrawal` entry (completeRequest), and for SOL the fee.
	 */
	private async confirm(s: Sweep, signature: string): Promise<void> {
		const { models, network, ports, logger } = this.deps;
		const tx = await this.finalizedTransaction(signature);
		if (!tx?.meta) return; // asked again at the next step
		const fee = BigInt(tx.meta.fee);
		const keys = tx.transaction.message.staticAccountKeys.map(k => k.toBase58());
		const items = await models.SweepItem.findAll({ where: { sweepId: s.id }, order: [["id", "ASC"]] });
		const token = this.token(s.tokenId)!;
		if (s.requestId) {
			if (s.kind === "sol") await this.recordFee(items[0], fee, s.id);
			await ports.completeRequest({ id: s.requestId, txHash: signature, fence: this.fence });
		} else if (s.kind === "sol") {
			for (const item of items) {
				const i = keys.indexOf(item.depositAddress);
				if (i < 0) continue;
				const left = BigInt(tx.meta.preBalances[i]) - BigInt(tx.meta.postBalances[i]);
				const moved = i === 0 ? left - fee : left;
				if (i === 0) await this.recordFee(item, fee, s.id);
				if (moved > 0n) await ports.record({ organizationId: item.organizationId, mode: item.mode, networkId: network.id, tokenId: item.tokenId, kind: "sweep", amount: `-${fromBaseUnits(moved, token.decimals)}`, refType: "sweep_item", refId: String(item.id), fence: this.fence });
			}
		} else {
			const units = (list: typeof tx.meta.preTokenBalances, i: number) => BigInt(list?.find(b => b.accountIndex === i && b.mint === token.contractAddress)?.uiTokenAmount.amount ?? "0");
			for (const item of items) {
				const i = keys.indexOf(sol.associatedTokenAccount(item.depositAddress, token.contractAddress));
				if (i < 0) continue;
				const moved = units(tx.meta.preTokenBalances, i) - units(tx.meta.postTokenBalances, i);
				if (moved > 0n) await ports.record({ organizationId: item.organizationId, mode: item.mode, networkId: network.id, tokenId: item.tokenId, kind: "sweep", amount: `-${fromBaseUnits(moved, token.decimals)}`, refType: "sweep_item", refId: String(item.id), fence: this.fence });
			}
		}
		if (!(await this.end(s, "confirmed", { txHash: signature, feePaid: fee.toString() }))) return;
		await this.holds.clear(items.map(i => this.holdKey("deposit", i.depositAddress, i.tokenId)));
		if (s.kind === "spl") {
			// The sweeper wallet's side: the fee, the rent of a destination account it created, the rent of the accounts it closed.
			const sweeper = keys[0];
			const net = BigInt(tx.meta.postBalances[0]) - BigInt(tx.meta.preBalances[0]);
			logger.info(`Sweep ${s.id} on ${network.slug}: the sweeper wallet ${sweeper} paid ${fee} lamports in fees, net ${net >= 0n ? "+" : ""}${net} lamports with rent`);
		}
		logger.info(`${s.requestId ? `Withdrawal request ${s.requestId} paid` : `Sweep ${s.id} confirmed`} on ${network.slug}: ${items.length} deposit(s), ${signature}`);
	}

	// ---- signing ------------------------------------------------------------------------------------

	/** Signs a planned sweep over a fresh blockhash (nothing is sent before it is recorded); null: nothing left to send. */
	private async sign(s: Sweep): Promise<sol.SignedSolanaTx | null> {
		const { models, connection, sequelize, now } = this.deps;
		const items = await models.SweepItem.findAll({ where: { sweepId: s.id }, order: [["id", "ASC"]] });
		if (items.length === 0) return null;
		const token = this.token(s.tokenId);
		if (!token) throw new Error(`token ${s.tokenId} is no longer in the catalogue of ${this.deps.network.slug}`);
		// `confirmed`: the blockhash the cluster's recommended clients take (a finalized one expires ~32 blocks sooner).
		const latest = await connection.getLatestBlockhash(READ);
		const blockhash = { blockhash: latest.blockhash, lastValidBlockHeight: latest.lastValidBlockHeight };
		const key = (i: SweepItem) => this.deps.depositKey(i.derivationIndex);
		if (s.kind === "sol" && s.requestId) {
			const item = items[0];
			const amount = toBaseUnits(await requestAmount(models, s.requestId), token.decimals);
			return sol.buildSolPayment({ ...blockhash, deposit: { address: item.depositAddress, key: await key(item), lamports: await this.lamports(item.depositAddress) }, payee: s.toAddress, amount, payeeLamports: await this.lamports(s.toAddress) });
		}
		if (s.kind === "sol") {
			const balances = await Promise.all(items.map(i => this.lamports(i.depositAddress)));
			// A deposit emptied meanwhile leaves the sweep before anything is signed.
			const empty = items.filter((_, n) => balances[n] === 0n);
			if (empty.length > 0 && !(await dropItems(sequelize, models, this.fence, s, empty.map(i => i.id), now()))) return null;
			const kept = items.map((item, n) => ({ item, lamports: balances[n] })).filter(x => x.lamports > 0n);
			if (kept.length === 0) return null;
			return sol.buildSolSweep({ ...blockhash, destination: s.toAddress, deposits: await Promise.all(kept.map(async x => ({ address: x.item.depositAddress, key: await key(x.item), lamports: x.lamports }))) });
		}
		if (!this.deps.sweeperKey) throw new Error("token sweeps need SWEEPER_PRIVATE_KEY_SOLANA");
		const createDestinationAccount = !(await this.tokenAccount(sol.associatedTokenAccount(s.toAddress, token.contractAddress)));
		const common = { ...blockhash, sweeperKey: this.deps.sweeperKey, mint: token.contractAddress, decimals: token.decimals, createDestinationAccount };
		if (s.requestId) {
			const item = items[0];
			const account = await this.tokenAccount(sol.associatedTokenAccount(item.depositAddress, token.contractAddress));
			if (!account || account.amount === 0n) return null;
			const amount = toBaseUnits(await requestAmount(models, s.requestId), token.decimals);
			return sol.buildTokenPayment({ ...common, payee: s.toAddress, amount, deposit: { owner: item.depositAddress, key: await key(item), amount: account.amount, tokenAccountLamports: account.lamports } });
		}
		const accounts = await Promise.all(items.map(i => this.tokenAccount(sol.associatedTokenAccount(i.depositAddress, token.contractAddress))));
		// Empty deposits, and those over what one transaction holds now (the destination's account
		// may have to be created after all), leave the sweep: they are planned again.
		const fits = sol.maxTokenDepositsPerTransaction(createDestinationAccount);
		const kept = items.map((item, n) => ({ item, account: accounts[n] })).filter(x => x.account && x.account.amount > 0n).slice(0, fits);
		const dropped = items.filter(i => !kept.some(x => x.item.id === i.id));
		if (dropped.length > 0 && !(await dropItems(sequelize, models, this.fence, s, dropped.map(i => i.id), now()))) return null;
		if (kept.length === 0) return null;
		return sol.buildTokenSweep({
			...common,
			destination: s.toAddress,
			deposits: await Promise.all(kept.map(async x => ({ owner: x.item.depositAddress, key: await key(x.item), amount: x.account!.amount, tokenAccountLamports: x.account!.lamports }))),
		});
	}

	// ---- planning -----------------------------------------------------------------------------------

	private reservations(): Reservations {
		const { sequelize, models, now, network, ports } = this.deps;
		return new Reservations({ sequelize, models, now, ownAddressCheckouts: a => ports.ownAddressCheckouts(a) }, network.id);
	}

	/** Settled checkouts whose funds were neither swept nor are in a sweep in flight. */
	private async unswept(): Promise<SweepableCheckout[]> {
		const { ports, network, models } = this.deps;
		const settled = await ports.sweepable({ networkId: network.id });
		if (settled.length === 0) return [];
		const swept = await sweptTransactions(models, settled.map(c => c.transactionId));
		const open = await openKeys(models, settled.map(c => openKeyOf(c.depositAddress, c.tokenId)));
		return settled.filter(c => !swept.has(c.transactionId) && !open.has(openKeyOf(c.depositAddress, c.tokenId)));
	}

	/** What a deposit holds of `token` now (lamports, or token base units in its associated token account). */
	private async balanceOf(c: SweepableCheckout, token: SweepToken): Promise<bigint> {
		if (token.contractAddress === "") return this.lamports(c.depositAddress);
		return (await this.tokenAccount(sol.associatedTokenAccount(c.depositAddress, token.contractAddress)))?.amount ?? 0n;
	}

	/** New sweeps for settled checkouts still holding funds, per merchant, token and destination. */
	private async plan(): Promise<void> {
		const { ports, network, logger } = this.deps;
		const todo = await this.unswept();
		if (todo.length === 0) return;
		const groups = new Map<string, Group>();
		const reservations = this.reservations();
		for (const c of todo) {
			const token = this.token(c.tokenId);
			if (!token || this.held("deposit", c.depositAddress, c.tokenId)) continue;
			const route = await ports.route({ organizationId: c.organizationId, transactionId: c.transactionId });
			if (route.via === "hold") continue;
			if (route.via === "bridge") {
				if (!this.warnedBridge) logger.warn(`Sweeper: strategy 2 (a bridge) is not wired to the Solana sweeper yet; bridged payments on ${network.slug} stay at their deposit addresses`);
				this.warnedBridge = true;
				continue;
			}
			const amount = await this.balanceOf(c, token);
			if (amount <= 0n) continue;
			const target = await ports.destinationOf({ organizationId: c.organizationId, chainType: "solana", transactionId: c.transactionId });
			if (!target) continue; // kept at the deposit address until the merchant saves settings
			const fromSettings = target.source === "settings";
			// Funds pending requests are paid from stay at their deposit (lib/sweeps/reservations.ts).
			if (fromSettings && !(await reservations.take(c.organizationId, token.tokenId, fromBaseUnits(amount, token.decimals)))) continue;
			const key = `${c.organizationId}|${token.tokenId}|${target.address}`;
			const group = groups.get(key) ?? { token, destination: target.address, items: [] };
			group.items.push({ ...c, amount, settings: fromSettings });
			groups.set(key, group);
		}
		for (const group of groups.values()) {
			if (group.token.contractAddress === "") await this.planSol(group, reservations);
			else await this.planTokens(group, reservations);
		}
	}

	private isOld(items: Array<{ completedAt: string }>): boolean {
		const oldest = Math.min(...items.map(c => new Date(c.completedAt).getTime()));
		return this.deps.now().getTime() - oldest > this.deps.settings.maxAgeMs;
	}

	private async planGroup(group: Group, kind: "sol" | "spl", batch: Group["items"], reservations: Reservations): Promise<void> {
		const { sequelize, models, network, now, logger } = this.deps;
		const items = batch.map(c => planItem(c, group.token, c.amount));
		const admit = await reservations.guard(items.filter((_, n) => batch[n].settings));
		const planned = await planSweep(sequelize, models, this.fence, { networkId: network.id, kind, tokenId: group.token.tokenId, fromAddress: SOLANA_SWEEPS, toAddress: group.destination, chainNonce: 0, items, admit }, now());
		if (planned) logger.info(`Sweeper: ${batch.length} ${group.token.symbol} deposit(s) on ${network.slug} planned in one transaction (sweep ${planned.id})`);
	}

	/** SOL: up to 10 deposits a transaction, worth their fee, the largest able to pay it and stay at 0 or above the rent-exempt minimum. */
	private async planSol(group: Group, reservations: Reservations): Promise<void> {
		const size = Math.min(this.deps.settings.batchSize, sol.maxSolDepositsPerTransaction());
		for (const batch of sol.batches(group.items, size)) {
			const fee = sol.feeFor(batch.length);
			const total = batch.reduce((sum, c) => sum + c.amount, 0n);
			const largest = batch.reduce((max, c) => (c.amount > max ? c.amount : max), 0n);
			if (largest - fee < sol.SYSTEM_ACCOUNT_RENT_EXEMPT) continue; // dust: waits for more
			if (total < fee * BigInt(this.deps.settings.minValueMultiple) && !this.isOld(batch)) continue;
			await this.planGroup(group, "sol", batch, reservations);
		}
	}

	/** Tokens: 6 deposits a transaction when the destination's token account exists, else 5 (each creates it); a partial batch waits up to maxAgeMs. */
	private async planTokens(group: Group, reservations: Reservations): Promise<void> {
		if (!this.deps.sweeperKey) {
			if (!this.warnedNoKey) this.deps.logger.warn(`Sweeper: ${this.deps.network.slug} has token deposits to sweep but no SWEEPER_PRIVATE_KEY_SOLANA; they stay at their deposit addresses`);
			this.warnedNoKey = true;
			return;
		}
		const exists = Boolean(await this.tokenAccount(sol.associatedTokenAccount(group.destination, group.token.contractAddress)));
		// While the destination's token account is missing every transaction creates it (idempotently: whichever
		// lands first pays the rent, the others' creation does nothing), so none fails for landing before another.
		const size = Math.min(this.deps.settings.batchSize, sol.maxTokenDepositsPerTransaction(!exists));
		for (const batch of sol.batches(group.items, size)) {
			if (batch.length < size && !this.isOld(batch)) return;
			await this.planGroup(group, "spl", batch, reservations);
		}
	}

	// ---- withdrawal requests ------------------------------------------------------------------------

	/**
	 * Pending withdrawal requests of this network, oldest first (keyset pages): each is paid in one
	 * transaction of its exact amount from one of the merchant's deposits that holds it (never one
	 * with its own withdrawal address). None holds it yet: it stays pending.
	 */
	private async executeRequests(): Promise<void> {
		const { ports, network } = this.deps;
		let settled: SweepableCheckout[] | null = null;
		await forEachPendingRequest(ports, network.id, async req => {
			settled ??= await this.unswept();
			await this.executeRequest(req, settled).catch(err => {
				if (err instanceof LeaseLostError) throw err;
				this.deps.logger.warn(`Withdrawal request ${req.id} on ${network.slug}: ${(err as Error).message}`);
				this.deps.onFailure?.(err);
			});
		});
	}

	private async executeRequest(req: WithdrawalRequestView, settled: SweepableCheckout[]): Promise<void> {
		const { ports, network, models, sequelize, logger, now } = this.deps;
		if (await models.Sweep.count({ where: { requestId: req.id, status: { [Op.ne]: "failed" } } })) return; // in flight, or paid
		if (req.destinationNetworkId && req.destinationNetworkId !== network.id) {
			await ports.failRequest({ id: req.id, reason: "a withdrawal to another network needs a bridge provider, not wired to the sweeper yet", final: true });
			return;
		}
		const token = this.token(req.tokenId);
		if (!token) return;
		const need = toBaseUnits(req.amount, token.decimals);
		const native = token.contractAddress === "";
		if (native && need < sol.SYSTEM_ACCOUNT_RENT_EXEMPT && (await this.lamports(req.address)) === 0n) {
			await ports.failRequest({ id: req.id, reason: `${req.amount} SOL to an empty account is below Solana's rent-exempt minimum (${fromBaseUnits(sol.SYSTEM_ACCOUNT_RENT_EXEMPT, token.decimals)} SOL): the network refuses it`, final: true });
			return;
		}
		if (!native && !this.deps.sweeperKey) return; // the sweeper wallet pays token payments: warned when planning
		const fee = sol.feeFor(1);
		for (const c of settled) {
			if (c.organizationId !== req.organizationId || c.tokenId !== req.tokenId || this.held("deposit", c.depositAddress, c.tokenId)) continue;
			const target = await ports.destinationOf({ organizationId: c.organizationId, chainType: "solana", transactionId: c.transactionId });
			if (target?.source === "payment") continue; // belongs to the checkout's own address
			const balance = await this.balanceOf(c, token);
			if (native) {
				const rest = balance - need - fee;
				// The deposit keeps 0 or at least the rent-exempt minimum (the network refuses anything between).
				if (rest < 0n || (rest > 0n && rest < sol.SYSTEM_ACCOUNT_RENT_EXEMPT)) continue;
			} else if (balance < need) {
				continue;
			}
			// A SOL payment's item holds the whole deposit while it is in flight (its fee comes from it too).
			const planned = await planSweep(sequelize, models, this.fence, { networkId: network.id, kind: native ? "sol" : "spl", tokenId: token.tokenId, fromAddress: SOLANA_SWEEPS, toAddress: req.address, chainNonce: 0, items: [planItem(c, token, native ? balance : need)], requestId: req.id }, now());
			if (planned) {
				settled.splice(settled.indexOf(c), 1);
				logger.info(`Withdrawal request ${req.id} on ${network.slug}: ${req.amount} ${token.symbol} from ${c.depositAddress} (sweep ${planned.id})`);
			}
			return;
		}
		if (!this.waiting.has(req.id)) {
			this.waiting.add(req.id);
			logger.info(`Withdrawal request ${req.id}: no single deposit on ${network.slug} holds ${req.amount} ${token.symbol} yet; it stays pending`);
		}
	}
}
