/**
 * The Polkadot sweeper's loop for one network (docs/withdrawals.md "Polkadot sweeps"). Each step:
 * 1. carries every sweep in flight one state further: planned -> signed (the extrinsic's bytes,
 *    hash, nonce and mortal era (birth block, period, death) recorded in `rawTx` BEFORE it is
 *    submitted, so a crash submits the same bytes, never new ones) -> broadcast -> confirmed
 *    (ledger written) or failed. Its fate is `sendVerdict` read from the FINALIZED chain only:
 *    landed (found in a finalized block of its era window), dead (the finalized head is past the
 *    era, it is in no block of the window, the signer's nonce did not pass it: only then are its
 *    funds planned again), superseded (another extrinsic took the nonce: counted towards a stall
 *    for an operator) or pending (the same bytes are submitted again);
 * 2. pays pending withdrawal requests exactly (native: `transferKeepAlive` of the amount from a
 *    deposit that holds it, its fee and the ED);
 * 3. plans new sweeps: a native deposit's whole balance (`transferAll`, reaped); asset deposits get
 *    a batched native top-up from the sweeper wallet (`utility.batchAll`), then each sends its
 *    whole asset balance with `assets.transfer`.
 *
 * The records' `nonce` is the shared counter of lib/sweeps/store.ts (UNIQUE per wallet), not the
 * account nonce (a reaped deposit comes back at 0); the account nonce is in `rawTx` (PolkadotSigned).
 * A wallet signs one extrinsic at a time, and a deposit is swept again only after its previous
 * extrinsic's era is over at the finalized head (a reaped, re-funded account at nonce 0 would
 * accept it again until then).
 */
import type { ApiPromise } from "@polkadot/api";
import type { KeyringPair } from "@polkadot/keyring/types";
import type { Sweep, SweepItem } from "../../../models/sweep.model";
import type { SweepOutcome } from "../../metrics";
import { fromBaseUnits, toBaseUnits } from "../../money";
import { StepHolds, type HoldKey } from "../../sweeps/holds";
import { accountRunnerState, accountStep, busyWallets, followVerdict, type AccountChain, type AccountRunnerDeps, type AccountSweeperSettings } from "../../sweeps/account-runner";
import { recordFee, requestAmount, type SweepToken } from "../../sweeps/ports";
import { briefly, endSweep, signThenBroadcast, type SweepFence } from "../../sweeps/store";
import * as dot from "./sweep";

export interface PolkadotSweeperSettings extends AccountSweeperSettings {
	/** Blocks a signed extrinsic stays valid (its mortal era; a power of two, 4..65536). */
	eraPeriod: number;
}

/** `sweeperKey`: the sr25519 sweeper wallet, whose top-ups are batched by utility.batchAll. */
export interface PolkadotSweepRunnerDeps extends AccountRunnerDeps<PolkadotSweeperSettings, KeyringPair> {
	api: () => Promise<ApiPromise>;
	ss58Format: number;
	/** Submits signed bytes (default author_submitExtrinsic); tests withhold them. */
	submit?: (api: ApiPromise, hex: string) => Promise<void>;
}

/**
 * A Polkadot sweep record's signed bytes (`rawTx`, JSON): what is submitted, and what it signs
 * (the account nonce, the era window), plus what was computed when it was signed (the amount it
 * moves, a top-up's total), so nothing is re-derived after a crash. `txHash` is the extrinsic hash.
 */
export interface PolkadotSigned {
	hex: string;
	nonce: number;
	/** The era's checkpoint block (its hash is in the signed payload). */
	birth: number;
	birthHash: string;
	period: number;
	/** The first block it can no longer be in. */
	death: number;
	/** Asset sweep / payment: base units moved. */
	amount?: string;
	/** Top-up: planck sent to each deposit. */
	each?: string;
}

interface Head {
	number: number;
	hash: string;
}

interface AccountView {
	nonce: number;
	free: bigint;
}

export const signedOf = (s: Pick<Sweep, "rawTx">): PolkadotSigned | null => (s.rawTx ? (JSON.parse(s.rawTx) as PolkadotSigned) : null);

const defaultSubmit = async (api: ApiPromise, hex: string) => {
	await api.rpc.author.submitExtrinsic(hex);
};

export class PolkadotSweepRunner {
	private fence: SweepFence = { networkId: "", owner: "", token: -1 };
	private lost: AbortSignal | null = null;
	private head: Head = { number: 0, hash: "" };
	private api!: ApiPromise;
	private readonly holds: StepHolds;
	private readonly state = accountRunnerState();
	/** Per sweep: the next block of its era window not yet searched (the search resumes there). */
	private readonly scanned = new Map<string, number>();
	private fees = new Map<string, bigint>();

	constructor(private readonly deps: PolkadotSweepRunnerDeps) {
		this.holds = new StepHolds(deps);
	}

	async step(fence: SweepFence, lost?: AbortSignal): Promise<void> {
		this.fence = fence;
		this.lost = lost ?? null;
		this.api = await this.deps.api();
		this.head = await this.finalizedHead();
		this.fees = new Map();
		await accountStep(this.deps, fence, this.lost, this.chain(), this.state, s => this.advance(s));
	}

	private token(tokenId: string): SweepToken | undefined {
		return this.deps.network.tokens.find(t => t.tokenId === tokenId);
	}

	private native(): SweepToken | undefined {
		return this.deps.network.tokens.find(t => t.contractAddress === "");
	}

	// -------------------------------------------------------------------------------------------
	// The chain, at the finalized head

	private async finalizedHead(): Promise<Head> {
		const hash = (await this.api.rpc.chain.getFinalizedHead()).toHex();
		const header = await this.api.rpc.chain.getHeader(hash);
		return { number: header.number.toNumber(), hash };
	}

	private async account(address: string): Promise<AccountView> {
		const at = await this.api.at(this.head.hash);
		const a = (await at.query.system.account(address)) as unknown as { nonce: { toNumber(): number }; data: { free: { toString(): string } } };
		return { nonce: a.nonce.toNumber(), free: BigInt(a.data.free.toString()) };
	}

	private async assetBalance(assetId: string, address: string): Promise<bigint> {
		const at = await this.api.at(this.head.hash);
		const a = (await at.query.assets.account(assetId, address)) as unknown as { isSome: boolean; unwrap(): { balance: { toString(): string } } };
		return a.isSome ? BigInt(a.unwrap().balance.toString()) : 0n;
	}

	/**
	 * Why the runtime would refuse `amount` of `token` to `to` at the finalized head (null: it would
	 * not): an account's first native below the existential deposit (`Token: BelowMinimum`: what
	 * it would hold after stays under the ED), a new asset account below the asset's `min_balance`,
	 * or a non-sufficient asset to an account that does not exist (`CannotCreate`).
	 */
	private async belowMinimum(token: SweepToken, amount: bigint, to: string): Promise<string | null> {
		const show = (units: bigint) => `${fromBaseUnits(units, token.decimals)} ${token.symbol}`;
		const target = await this.account(to);
		if (token.contractAddress === "") {
			const ed = this.ed();
			if (target.free + amount >= ed) return null;
			return `${show(amount)} to ${to}, which holds ${show(target.free)}, leaves it below Polkadot's existential deposit (${show(ed)}): the network refuses a new account's first funds under it; not sent`;
		}
		const at = await this.api.at(this.head.hash);
		const account = (await at.query.assets.account(token.contractAddress, to)) as unknown as { isSome: boolean };
		if (account.isSome) return null;
		const details = (await at.query.assets.asset(token.contractAddress)) as unknown as { isSome: boolean; unwrap(): { minBalance: { toString(): string }; isSufficient: { isTrue: boolean } } };
		if (!details.isSome) return `asset ${token.contractAddress} does not exist on this network; not sent`;
		const minBalance = BigInt(details.unwrap().minBalance.toString());
		if (amount < minBalance) return `${show(amount)} to ${to}, which holds none, is below the asset's minimum balance (${show(minBalance)}): the network refuses it; not sent`;
		if (!details.unwrap().isSufficient.isTrue && target.free === 0n) return `${to} does not exist on this network and ${token.symbol} is not a sufficient asset: the network cannot create its account; not sent`;
		return null;
	}

	private ed(): bigint {
		return BigInt(this.api.consts.balances.existentialDeposit.toString());
	}

	/** The fee of a transfer from `from` (asset or native), estimated once a step per kind. */
	private async feeOf(kind: "native" | "asset", from: string, token: SweepToken): Promise<bigint> {
		const known = this.fees.get(kind);
		if (known !== undefined) return known;
		const tx = kind === "native" ? this.api.tx.balances.transferAll(from, false) : this.api.tx.assets.transfer(token.contractAddress, from, 1n);
		const info = await tx.paymentInfo(from);
		const fee = BigInt(info.partialFee.toString());
		this.fees.set(kind, fee);
		return fee;
	}

	private async submit(hex: string): Promise<void> {
		await (this.deps.submit ?? defaultSubmit)(this.api, hex);
	}

	/** Where the extrinsic `hash` is among the finalized blocks of its window (resuming the last search). */
	private async find(s: Sweep, signed: PolkadotSigned): Promise<{ blockHash: string; index: number } | null> {
		const last = Math.min(this.head.number, signed.death);
		for (let n = this.scanned.get(s.id) ?? signed.birth; n <= last; n++) {
			const blockHash = (await this.api.rpc.chain.getBlockHash(n)).toHex();
			const block = await this.api.rpc.chain.getBlock(blockHash);
			const index = block.block.extrinsics.findIndex(x => x.hash.toHex() === s.txHash);
			if (index >= 0) return { blockHash, index };
			this.scanned.set(s.id, n + 1);
		}
		return null;
	}

	// -------------------------------------------------------------------------------------------
	// Sweeps in flight

	private async advance(s: Sweep): Promise<void> {
		const { logger } = this.deps;
		// Recorded first: a crash here, or a submit that fails, submits these same bytes next step.
		const submitted = await signThenBroadcast(this.deps, this.fence, s, () => this.sign(s), () => this.submit(signedOf(s)!.hex), { verb: "submit", again: "the same extrinsic is submitted again at the next step" });
		if (submitted) return;
		const signed = signedOf(s)!;
		const where = await this.find(s, signed);
		// The nonce only matters once the window is over (read after the search, at the same head).
		const finalizedNonce = where || this.head.number < signed.death ? 0 : (await this.account(s.fromAddress)).nonce;
		const verdict = dot.sendVerdict({ found: where !== null, finalized: this.head.number, death: signed.death, finalizedNonce, nonce: signed.nonce });
		await followVerdict(this.deps, this.fence, s, verdict, {
			landed: () => this.landed(s, signed, where!),
			deadReason: `extrinsic ${s.txHash} not in any finalized block of its era (#${signed.birth}..#${signed.death - 1}; finalized #${this.head.number}), nonce ${signed.nonce} unused`,
			expired: "extrinsic expired unincluded",
			used: `nonce ${signed.nonce}`,
			// Pending: the same bytes again (a pool may drop an extrinsic; "already imported" is fine).
			resend: () => this.submit(signed.hex).catch(err => logger.info(`Sweep ${s.id}: resubmit: ${briefly(err)}`)),
		});
		if (verdict === "landed" || verdict === "dead") this.scanned.delete(s.id);
	}

	/** Signs a planned sweep from the finalized state now. Null: nothing to send; "later": not now. */
	private async sign(s: Sweep): Promise<{ hash: string; record: PolkadotSigned } | null | "later"> {
		const { models, settings } = this.deps;
		const api = this.api;
		const items = await models.SweepItem.findAll({ where: { sweepId: s.id }, order: [["id", "ASC"]] });
		const token = this.token(s.tokenId);
		if (!token || items.length === 0) return null;
		const era = { current: this.head.number, birthHash: this.head.hash, period: settings.eraPeriod };
		const record = (signed: dot.SignedExtrinsic & dot.EraWindow, nonce: number, extra: Partial<PolkadotSigned> = {}) => ({
			hash: signed.hash,
			record: { hex: signed.hex, nonce, birth: signed.birth, birthHash: this.head.hash, period: signed.period, death: signed.death, ...extra },
		});
		if (s.kind === "topup") {
			const pair = await this.deps.sweeperKey();
			if (!pair) return "later";
			const ed = this.ed();
			const fee = await this.feeOf("asset", items[0].depositAddress, token);
			// Enough for the asset transfer's fee twice over and the ED: the deposit is never reaped with dust.
			const each = ed + 2n * fee;
			const need: string[] = [];
			for (const i of items) if ((await this.account(i.depositAddress)).free < ed + fee) need.push(i.depositAddress);
			if (need.length === 0) return null;
			const w = await this.account(s.fromAddress);
			if (w.free < BigInt(need.length) * each + ed + fee) throw new Error(`the sweeper wallet ${s.fromAddress} holds ${w.free} planck, too little for ${need.length} top-up(s)`);
			const calls = need.map(d => api.tx.balances.transferKeepAlive(d, each));
			const signed = dot.signExtrinsic(api, api.tx.utility.batchAll(calls), pair, { ...era, nonce: w.nonce });
			return record(signed, w.nonce, { each: each.toString() });
		}
		const item = items[0];
		const pair = dot.depositPair(await this.deps.depositKey(item.derivationIndex), this.deps.ss58Format);
		if (!dot.sameAccount(pair.address, item.depositAddress)) throw new Error(`deposit key ${item.derivationIndex} is not the key of ${item.depositAddress}`);
		const a = await this.account(item.depositAddress);
		if (s.kind === "native" && s.requestId) {
			const amount = toBaseUnits(await requestAmount(models, s.requestId), token.decimals);
			const fee = await this.feeOf("native", item.depositAddress, token);
			if (a.free < amount + fee + this.ed()) return null;
			const signed = dot.signExtrinsic(api, api.tx.balances.transferKeepAlive(s.toAddress, amount), pair, { ...era, nonce: a.nonce });
			return record(signed, a.nonce, { amount: amount.toString() });
		}
		if (s.kind === "native") {
			if (a.free <= 0n) return null;
			const signed = dot.signExtrinsic(api, api.tx.balances.transferAll(s.toAddress, false), pair, { ...era, nonce: a.nonce });
			return record(signed, a.nonce);
		}
		if (s.kind === "token") {
			const units = s.requestId ? toBaseUnits(await requestAmount(models, s.requestId), token.decimals) : await this.assetBalance(token.contractAddress, item.depositAddress);
			if (units <= 0n) return null;
			const fee = await this.feeOf("asset", item.depositAddress, token);
			if (a.free < this.ed() + fee) return "later"; // its top-up first
			// The whole balance (the asset account goes away); a request's exact amount keeps the rest alive.
			const call = s.requestId ? api.tx.assets.transferKeepAlive(token.contractAddress, s.toAddress, units) : api.tx.assets.transfer(token.contractAddress, s.toAddress, units);
			const signed = dot.signExtrinsic(api, call, pair, { ...era, nonce: a.nonce });
			return record(signed, a.nonce, { amount: units.toString() });
		}
		return null;
	}

	/** In a finalized block: the ledger gets what really moved, read from its events. */
	private async landed(s: Sweep, signed: PolkadotSigned, where: { blockHash: string; index: number }): Promise<void> {
		const { models, network, ports, logger } = this.deps;
		const items = await models.SweepItem.findAll({ where: { sweepId: s.id }, order: [["id", "ASC"]] });
		const out = dot.outcomeOf(await dot.eventsAt(this.api, where.blockHash), where.index, s.fromAddress);
		const native = this.native()!;
		const token = this.token(s.tokenId)!;
		const hash = s.txHash!;
		const item = items[0];
		if (!out.success) {
			await this.failedOnChain(s, item, native, out, `ExtrinsicFailed in ${where.blockHash}: ${out.error ?? "unknown"}`);
			return;
		}
		if (s.kind === "topup") {
			// The operator's native (as EVM gas top-ups): on the record, not in a merchant's ledger.
			await this.end(s, "confirmed", { feePaid: out.fee.toString() });
			return;
		}
		await this.clearDepositHolds(items);
		if (s.kind === "native") {
			await recordFee(ports, this.fence, network.id, item, native, out.fee + out.dust, s.id);
			if (s.requestId) {
				await ports.completeRequest({ id: s.requestId, txHash: hash, fence: this.fence });
				await this.end(s, "confirmed", { feePaid: out.fee.toString() });
				logger.info(`Withdrawal request ${s.requestId} paid on ${network.slug}: ${hash}`);
				return;
			}
			await ports.record({ organizationId: item.organizationId, mode: item.mode, networkId: network.id, tokenId: item.tokenId, kind: "sweep", amount: `-${fromBaseUnits(out.nativeOut, native.decimals)}`, refType: "sweep_item", refId: String(item.id), fence: this.fence });
			await this.end(s, "confirmed", { feePaid: out.fee.toString() });
			logger.info(`Sweep ${s.id} confirmed on ${network.slug}: ${hash}`);
			return;
		}
		const moved = out.assetsOut.get(token.contractAddress) ?? 0n;
		if (s.requestId) {
			await ports.completeRequest({ id: s.requestId, txHash: hash, fence: this.fence });
			await this.end(s, "confirmed", { feePaid: out.fee.toString() });
			logger.info(`Withdrawal request ${s.requestId} paid on ${network.slug}: ${fromBaseUnits(moved, token.decimals)} ${token.symbol}, ${hash}`);
			return;
		}
		await ports.record({ organizationId: item.organizationId, mode: item.mode, networkId: network.id, tokenId: item.tokenId, kind: "sweep", amount: `-${fromBaseUnits(moved, token.decimals)}`, refType: "sweep_item", refId: String(item.id), fence: this.fence });
		await this.end(s, "confirmed", { feePaid: out.fee.toString() });
		logger.info(`Sweep ${s.id} confirmed on ${network.slug}: ${fromBaseUnits(moved, token.decimals)} ${token.symbol}, ${hash}`);
	}

	/**
	 * Landed, and `ExtrinsicFailed`: nothing moved but the fee (the runtime rolled the call back).
	 * A native deposit paid it from the merchant's funds (a `fee` entry, so the ledger equals the
	 * chain); an asset deposit's and a top-up's fee was the sweeper wallet's native (on the sweep's
	 * record only). The sweep fails, so its funds are not swept and are planned again; for a deposit's
	 * own extrinsic a failure counts on the deposit's hold (lib/sweeps/holds.ts): nothing is signed
	 * from it (and no top-up sent to it) before the pause ends, nothing at all once it is blocked.
	 */
	private async failedOnChain(s: Sweep, item: SweepItem, native: SweepToken, out: dot.ExtrinsicOutcome, reason: string): Promise<void> {
		const { network, ports, logger } = this.deps;
		if (s.kind === "native") await recordFee(ports, this.fence, network.id, item, native, out.fee + out.dust, s.id);
		if (!(await this.end(s, "failed", { feePaid: out.fee.toString(), reason: `failed on chain: ${reason}` }))) return;
		// A failed top-up is the sweeper wallet's (all or none: batchAll); its deposits are not at fault.
		const blocked = s.kind !== "topup" && (await this.holdFailure(this.holdKey(item.depositAddress, item.tokenId), `${s.kind} extrinsic ${s.txHash} failed on chain: ${out.error ?? "unknown"}`));
		if (s.requestId) await ports.failRequest({ id: s.requestId, reason: `the payment's extrinsic failed on chain (${out.error ?? "unknown"}); ${blocked ? "its deposit is held: not retried from it" : "retried"}` });
		logger.warn(`Sweep ${s.id} on ${network.slug} failed on chain (${s.txHash}): ${reason}`);
	}

	private end(s: Sweep, status: "confirmed" | "failed" | "stalled", fields: Parameters<typeof endSweep>[4], outcome: SweepOutcome = status): Promise<boolean> {
		return endSweep(this.deps, this.fence, s, status, fields, outcome);
	}

	// ---- holds (lib/sweeps/holds.ts): deposits whose extrinsics failed on chain ----------------

	private holdKey(address: string, tokenId: string): HoldKey {
		return { networkId: this.deps.network.id, scope: "deposit", address, tokenId };
	}

	private held(address: string, tokenId: string): boolean {
		return this.holds.held(this.holdKey(address, tokenId));
	}

	/** Counts a failure on the deposit; true when it is blocked (support clears it). */
	private async holdFailure(key: HoldKey, reason: string): Promise<boolean> {
		const { logger, network } = this.deps;
		const { hold, blockedNow } = await this.holds.fail(key, reason);
		if (blockedNow) {
			logger.error(`Sweeper: ${key.scope} ${key.address} on ${network.slug} failed ${hold.failures} times in a row (last: ${reason}); nothing more is sent from there, and no top-up to it, until support clears it (sweeper-polkadot.support.clearHold)`);
			this.deps.onBlocked?.(key.scope);
		}
		return Boolean(hold.blockedAt);
	}

	private async clearDepositHolds(items: SweepItem[]): Promise<void> {
		await this.holds.clear(items.map(i => this.holdKey(i.depositAddress, i.tokenId)));
	}

	// -------------------------------------------------------------------------------------------
	// Which wallets may sign now

	/**
	 * Wallets (account keys) that must not sign now: one with a sweep in flight (one extrinsic per
	 * wallet at a time), and one whose last extrinsic's era is not over at the finalized head (a
	 * reaped deposit, re-funded, is back at nonce 0 and would accept that extrinsic again).
	 */
	private busyWallets(): Promise<Set<string>> {
		const since = new Date(this.deps.now().getTime() - 24 * 3_600_000);
		return busyWallets(this.deps, { key: dot.accountKey, since, topUps: true, signedOf, live: signed => signed.death > this.head.number });
	}

	// -------------------------------------------------------------------------------------------
	// Withdrawal requests and planning (lib/sweeps/account-runner.ts), with Polkadot's amounts

	/**
	 * Requests: native by `transferKeepAlive` (its fee and the ED kept), an asset by
	 * `assets.transferKeepAlive` with the deposit's native for the fee. New sweeps: a native
	 * deposit's whole balance (`transferAll`, reaped), worth it when the merchant gets at least the
	 * ED after the fee (a new account needs it); an asset deposit's whole balance once it holds
	 * the ED and the fee, after a batched top-up (`utility.batchAll`) otherwise.
	 */
	private chain(): AccountChain<AccountView> {
		const { settings } = this.deps;
		return {
			chainType: "polkadot",
			name: "Polkadot",
			key: dot.accountKey,
			account: address => this.account(address),
			native: a => a.free,
			tokenBalance: (token, address) => this.assetBalance(token.contractAddress, address),
			worthSweeping: async (c, token, a) => a.free >= this.ed() + 2n * (await this.feeOf("native", c.depositAddress, token)),
			hasGas: async (c, token, a) => a.free >= this.ed() + (await this.feeOf("asset", c.depositAddress, token)),
			pays: async (c, token, a, need) => a.free >= need + this.ed() + (await this.feeOf("native", c.depositAddress, token)),
			sendTo: address => address,
			// The runtime would charge the fee and fail it at dispatch.
			refused: (token, need, address) => this.belowMinimum(token, need, address),
			sweeper: async () => (await this.deps.sweeperKey())?.address ?? null,
			sweeperEnv: "SWEEPER_PRIVATE_KEY_POLKADOT",
			tokens: "asset",
			holds: this.holds,
			holdKey: (address, tokenId) => this.holdKey(address, tokenId),
			busyWallets: () => this.busyWallets(),
			topUpBatch: settings.batchSize,
			maxAgeMs: settings.maxAgeMs,
		};
	}
}
