/**
 * The TON sweeper's loop for one network (docs/withdrawals.md "TON sweeps", "For the runner").
 * Each step:
 * 1. carries every sweep in flight one state further: planned -> signed (the external message's
 *    BoC, normalized hash, seqno and validUntil recorded BEFORE it is sent, so a crash re-sends the
 *    same bytes, never new ones) -> broadcast -> confirmed (ledger written) or failed; the fate of
 *    a message is `sendVerdict` read from the last masterchain block: `landed` (its transaction is
 *    found by its normalized hash), `dead` (expired, seqno unused: only then are its funds planned
 *    again), `superseded` (expired, another message used the seqno: counted towards a stall for an
 *    operator, its funds stay locked) or `pending` (the same BoC is sent again);
 * 2. pays pending withdrawal requests exactly, each from one deposit that holds the amount: TON
 *    from the deposit's balance (its fee on top); a jetton request by a jetton transfer from the
 *    deposit, after a top-up (kind `topup`, the request's id) from the sweeper wallet when the
 *    deposit lacks the TON the transfer carries, excesses back to the sweeper;
 * 3. plans new sweeps: a TON deposit's whole balance to the merchant (the deposit ends destroyed);
 *    jetton deposits get a batched top-up from the sweeper wallet (one v5R1 message for up to
 *    `batchSize` deposits), then each sends its whole jetton balance, excesses back to the sweeper.
 *
 * The records' `nonce` is the shared counter of lib/sweeps/store.ts (UNIQUE per wallet), not the
 * seqno: a destroyed deposit comes back at seqno 0. The seqno and validUntil of a signed message
 * are in its record's `rawTx` (see TonSigned), read from the BoC's own signed body.
 * A wallet signs one message at a time (nothing is planned from a wallet with a sweep in flight),
 * and a deposit is swept again only after its previous message's validUntil has passed (a
 * destroyed wallet at seqno 0 would accept that message again until then).
 */
import { Address } from "@ton/core";
import { mnemonicToPrivateKey, mnemonicValidate } from "@ton/crypto";
import type { Sweep, SweepItem } from "../../../models/sweep.model";
import type { SweepOutcome } from "../../metrics";
import { fromBaseUnits, toBaseUnits } from "../../money";
import { StepHolds, type HoldKey } from "../../sweeps/holds";
import { accountRunnerState, accountStep, busyWallets, followVerdict, type AccountChain, type AccountRunnerDeps, type AccountSweeperSettings } from "../../sweeps/account-runner";
import { recordFee, requestAmount, type SweepToken } from "../../sweeps/ports";
import { briefly, endSweep, signThenBroadcast, type SweepFence } from "../../sweeps/store";
import type { TonApi } from "./api";
import { getWalletAddress } from "./jetton-wallets";
import * as ton from "./sweep";

/** `batchSize`: at most MAX_V5R1_MESSAGES. */
export interface TonSweeperSettings extends AccountSweeperSettings {
	/** Seconds a signed message stays acceptable (its validUntil = last masterchain utime + this). */
	validForSec: number;
}

/** `sweeperKey`: the v5R1 sweeper wallet's key. */
export interface TonSweepRunnerDeps extends AccountRunnerDeps<TonSweeperSettings, Uint8Array> {
	api: TonApi;
}

/**
 * What a TON sweep record keeps as its signed bytes (`rawTx`, JSON): the BoC that is sent, and
 * copies of what the BoC itself signs (seqno, validUntil) plus what was computed when it was
 * signed (the jetton amount moved, the TON it carries), so nothing has to be re-derived after a
 * crash. `txHash` is the normalized message hash.
 */
export interface TonSigned {
	boc: string;
	seqno: number;
	validUntil: number;
	/** Jetton sweep / payment: base units moved. */
	jettonAmount?: string;
	/** Top-up: total nanotons sent. */
	total?: string;
}

interface McHead {
	seqno: number;
	utime: number;
}

interface WalletState {
	balance: bigint;
	deployed: boolean;
	seqno: number;
}

interface TxJson {
	hash: string;
	mc_block_seqno: number | null;
	total_fees: string;
	description?: ton.LandedTx["description"];
	in_msg: { hash: string; value: string | null } | null;
	out_msgs: Array<{ hash: string; value: string | null; fwd_fee: string | null; destination: string | null; opcode?: string | null; bounced?: boolean | null }>;
	account_state_before: { balance: string };
	account_state_after: { balance: string };
}

export const signedOf = (s: Pick<Sweep, "rawTx">): TonSigned | null => (s.rawTx ? (JSON.parse(s.rawTx) as TonSigned) : null);

/** A jetton request's top-up: what the payment needs, plus a margin for the storage fee the deposit pays on receipt. */
const REQUEST_TOP_UP = ton.JETTON_PAYMENT_TON + ton.PAYMENT_FEE_RESERVE;

const raw = (address: string) => ton.parseAddress(address, "address").address.toRawString();

export class TonSweepRunner {
	private fence: SweepFence = { networkId: "", owner: "", token: -1 };
	private lost: AbortSignal | null = null;
	private head: McHead | null = null;
	private readonly holds: StepHolds;
	private readonly state = accountRunnerState();
	private readonly jettonWallets = new Map<string, string>();

	constructor(private readonly deps: TonSweepRunnerDeps) {
		this.holds = new StepHolds(deps);
	}

	async step(fence: SweepFence, lost?: AbortSignal): Promise<void> {
		this.fence = fence;
		this.lost = lost ?? null;
		this.head = await this.mcHead();
		await accountStep(this.deps, fence, this.lost, this.chain(), this.state, s => this.advance(s));
	}

	private token(tokenId: string): SweepToken | undefined {
		return this.deps.network.tokens.find(t => t.tokenId === tokenId);
	}

	// -------------------------------------------------------------------------------------------
	// Holds (lib/sweeps/holds.ts): deposits whose sweeps landed and failed

	/** A deposit's hold, by its raw address (the API and support may spell it in any form). */
	private holdKey(address: string, tokenId: string): HoldKey {
		return { networkId: this.deps.network.id, scope: "deposit", address: raw(address), tokenId };
	}

	private held(address: string, tokenId: string): boolean {
		return this.holds.held(this.holdKey(address, tokenId));
	}

	/** Counts a failure on the deposit; true when it is blocked (support clears it). */
	private async holdFailure(key: HoldKey, reason: string): Promise<boolean> {
		const { network, logger } = this.deps;
		const { hold, blockedNow } = await this.holds.fail(key, reason);
		if (blockedNow) {
			const message = `Sweeper: deposit ${key.address} on ${network.slug} failed ${hold.failures} times in a row (last: ${reason}); nothing more is sent from it, and no top-up to it, until support clears it (sweeper-ton.support.clearHold)`;
			logger.error(message);
			this.deps.onBlocked?.(key.scope);
			this.deps.onFailure?.(new Error(message));
		}
		return Boolean(hold.blockedAt);
	}

	// -------------------------------------------------------------------------------------------
	// The API

	private async mcHead(): Promise<McHead> {
		const r = await this.deps.api.get<{ last: { seqno: number; gen_utime: string | number } }>("masterchainInfo");
		return { seqno: Number(r.last.seqno), utime: Number(r.last.gen_utime) };
	}

	private async wallet(address: string): Promise<WalletState> {
		// The account first (any status, a destroyed one included), the wallet's seqno only when it is active.
		const a = await this.deps.api.get<{ balance: string; status: string }>("addressInformation", { address: raw(address) });
		const deployed = a.status === "active";
		if (!deployed) return { balance: BigInt(a.balance ?? "0"), deployed, seqno: 0 };
		const w = await this.deps.api.get<{ balance: string; status: string; seqno?: number }>("walletInformation", { address: raw(address) });
		if (w.seqno === undefined) throw new Error(`${address} is active but not a wallet the API knows`);
		return { balance: BigInt(w.balance), deployed: w.status === "active", seqno: Number(w.seqno) };
	}

	/** get_wallet_address(owner) on the catalogue's (trusted) jetton master; cached. */
	private async jettonWallet(master: string, owner: string): Promise<string> {
		const key = `${raw(master)}|${raw(owner)}`;
		const known = this.jettonWallets.get(key);
		if (known) return known;
		const wallet = await getWalletAddress(this.deps.api, raw(master), raw(owner));
		this.jettonWallets.set(key, wallet);
		return wallet;
	}

	/** The jetton balance `owner` holds (0 when its jetton wallet does not exist). */
	private async jettonBalance(master: string, owner: string): Promise<bigint> {
		const jw = await this.jettonWallet(master, owner);
		const info = await this.deps.api.get<{ status: string }>("addressInformation", { address: jw });
		if (info.status !== "active") return 0n;
		const r = await this.deps.api.post<{ exit_code: number; stack: Array<{ type: string; value: string }> }>("runGetMethod", { address: jw, method: "get_wallet_data", stack: [] });
		if (Number(r.exit_code) !== 0 || r.stack?.[0]?.type !== "num") throw new Error(`get_wallet_data on ${jw} failed (exit code ${r.exit_code})`);
		return BigInt(r.stack[0].value);
	}

	/** The transaction whose inbound message has `hash` (normalized, or any message hash), in a sealed block. */
	private async txByMessage(hash: string): Promise<TxJson | null> {
		const r = await this.deps.api.get<{ transactions: TxJson[] }>("transactionsByMessage", { msg_hash: hash, direction: "in", limit: 10 });
		return r.transactions.find(t => t.mc_block_seqno !== null) ?? null;
	}

	private async send(boc: string): Promise<void> {
		await this.deps.api.post("message", { boc });
	}

	private validUntil(): number {
		return this.head!.utime + this.deps.settings.validForSec;
	}

	// -------------------------------------------------------------------------------------------
	// Sweeps in flight

	private async advance(s: Sweep): Promise<void> {
		const { logger } = this.deps;
		// Recorded first: a crash here, or a send that fails, sends these same bytes at the next step.
		// A message refused on sending (expired meanwhile) is judged below like any other.
		const sent = await signThenBroadcast(this.deps, this.fence, s, () => this.sign(s), () => this.send(signedOf(s)!.boc), { verb: "send", again: "the same message is sent again at the next step" });
		if (sent) return;
		const signed = signedOf(s)!;
		// In this order (sweep.ts sendVerdict): the block's utime, the wallet's seqno, then the message.
		const head = this.head!;
		const wallet = await this.wallet(s.fromAddress);
		const tx = await this.txByMessage(s.txHash!);
		const verdict = ton.sendVerdict({ found: tx !== null, walletSeqno: wallet.seqno, masterchainUtime: head.utime, seqno: signed.seqno, validUntil: signed.validUntil });
		await followVerdict(this.deps, this.fence, s, verdict, {
			landed: () => this.landed(s, signed, tx!),
			deadReason: `message ${s.txHash} expired unaccepted (validUntil ${signed.validUntil}, block ${head.seqno} at ${head.utime})`,
			expired: "message expired unaccepted",
			used: `seqno ${signed.seqno}`,
			// Pending: the same bytes again (an external message may be dropped before a validator sees it).
			resend: () => this.send(signed.boc).catch(err => logger.warn(`Sweep ${s.id}: send: ${briefly(err)}`)),
		});
	}

	/**
	 * Signs a planned sweep from the chain's state now. Null: nothing to send (the sweep ends);
	 * "later": not now (a top-up not arrived, the replay window of the deposit's last message open).
	 */
	private async sign(s: Sweep): Promise<{ hash: string; record: TonSigned } | null | "later"> {
		const { models, network } = this.deps;
		const items = await models.SweepItem.findAll({ where: { sweepId: s.id }, order: [["id", "ASC"]] });
		const token = this.token(s.tokenId);
		if (!token || items.length === 0) return null;
		const validUntil = this.validUntil();
		if (s.kind === "topup") {
			const key = await this.deps.sweeperKey();
			if (!key) return "later";
			const w = await this.wallet(s.fromAddress);
			// A request's top-up carries what its jetton payment attaches plus the deposit's own fee.
			const [least, amount] = s.requestId ? [ton.JETTON_PAYMENT_TON, REQUEST_TOP_UP] : [ton.JETTON_SWEEP_TON, ton.JETTON_SWEEP_TON];
			// A deposit that got its TON meanwhile (an earlier top-up) needs none.
			const need: string[] = [];
			for (const i of items) if ((await this.wallet(i.depositAddress)).balance < least) need.push(i.depositAddress);
			if (need.length === 0) return null;
			if (w.balance < BigInt(need.length) * (amount + ton.PAYMENT_FEE_RESERVE)) throw new Error(`the sweeper wallet ${s.fromAddress} holds ${w.balance} nanotons, too little for ${need.length} top-up(s)`);
			const m = ton.buildTopUps({ sweeper: { key, version: "v5r1", seqno: w.seqno, deployed: w.deployed, address: s.fromAddress }, deposits: need.map(address => ({ address, amount })), validUntil });
			return { hash: m.hash, record: { boc: m.boc, seqno: m.seqno, validUntil, total: m.total.toString() } };
		}
		const item = items[0];
		const w = await this.wallet(item.depositAddress);
		const key = await this.deps.depositKey(item.derivationIndex);
		const deposit = { key, seqno: w.seqno, deployed: w.deployed, address: item.depositAddress };
		try {
			if (s.kind === "native" && s.requestId) {
				const amount = toBaseUnits(await requestAmount(models, s.requestId), token.decimals);
				const m = ton.buildTonPayment({ wallet: { ...deposit, version: "v4r2" }, balance: w.balance, payee: s.toAddress, amount, validUntil });
				return { hash: m.hash, record: { boc: m.boc, seqno: m.seqno, validUntil } };
			}
			if (s.kind === "native") {
				if (w.balance <= 0n) return null;
				const m = ton.buildTonSweep({ deposit: { ...deposit, balance: w.balance }, destination: s.toAddress, validUntil });
				return { hash: m.hash, record: { boc: m.boc, seqno: m.seqno, validUntil } };
			}
			if (s.kind === "token" && s.requestId) {
				const sweeperKey = await this.deps.sweeperKey();
				if (!sweeperKey) return "later";
				// Exactly the request's amount (mode 1: the deposit stays, with the rest); excesses to the sweeper, whose TON it carries.
				const amount = toBaseUnits(await requestAmount(models, s.requestId), token.decimals);
				const m = ton.buildJettonPayment({
					wallet: { ...deposit, version: "v4r2" },
					jettonWallet: await this.jettonWallet(token.contractAddress, item.depositAddress),
					jettonBalance: await this.jettonBalance(token.contractAddress, item.depositAddress),
					tonBalance: w.balance,
					payee: s.toAddress,
					amount,
					responseDestination: ton.walletAddress(sweeperKey, "v5r1"),
					validUntil,
				});
				return { hash: m.hash, record: { boc: m.boc, seqno: m.seqno, validUntil, jettonAmount: amount.toString() } };
			}
			if (s.kind === "token") {
				const sweeperKey = await this.deps.sweeperKey();
				if (!sweeperKey) return "later";
				const jettons = await this.jettonBalance(token.contractAddress, item.depositAddress);
				if (jettons <= 0n) return null;
				const m = ton.buildJettonSweep({
					deposit: { ...deposit, jettonWallet: await this.jettonWallet(token.contractAddress, item.depositAddress), jettonAmount: jettons, tonBalance: w.balance },
					destination: s.toAddress,
					responseDestination: ton.walletAddress(sweeperKey, "v5r1"),
					validUntil,
				});
				return { hash: m.hash, record: { boc: m.boc, seqno: m.seqno, validUntil, jettonAmount: jettons.toString() } };
			}
		} catch (err) {
			if (err instanceof ton.SweepRefused) {
				this.deps.logger.info(`Sweep ${s.id} on ${network.slug} not signed: ${err.message}`);
				return err.reason === "gas" ? "later" : null;
			}
			throw err;
		}
		return null;
	}

	/**
	 * The message was accepted: whether its funds moved is read from its transaction(s) in final
	 * blocks (sweep.ts landedOutcome); the ledger gets what really moved, or the fee a failure cost.
	 */
	private async landed(s: Sweep, signed: TonSigned, tx: TxJson): Promise<void> {
		const { models, network, ports, logger } = this.deps;
		const items = await models.SweepItem.findAll({ where: { sweepId: s.id }, order: [["id", "ASC"]] });
		const native = network.tokens.find(t => t.contractAddress === "");
		const spent = BigInt(tx.account_state_before.balance) - BigInt(tx.account_state_after.balance);
		const hash = s.txHash!;
		if (s.kind === "topup") {
			// The operator's TON (as EVM gas top-ups): on the record, not in a merchant's ledger.
			await this.end(s, "confirmed", { feePaid: (spent - BigInt(signed.total ?? "0")).toString() });
			return;
		}
		const item = items[0];
		const jetton = s.kind === "token";
		// A jetton transfer's next hops: the deposit's jetton wallet, then the receiving one (each only once the one before took it).
		const first = jetton && ton.executed(tx) && tx.out_msgs[0] ? await this.txByMessage(tx.out_msgs[0].hash) : null;
		const internal = first?.out_msgs.find(m => m.opcode === ton.OP_JETTON_INTERNAL_TRANSFER);
		const second = internal && ton.executed(first!) ? await this.txByMessage(internal.hash) : null;
		const outcome = ton.landedOutcome({ jetton, deposit: tx, jettonWallet: first, destination: second });
		if (outcome.status === "pending") return; // its next hops are not in a final block yet
		if (outcome.status === "failed") {
			// What came back to the deposit (a bounce) is still there: the failure cost the rest.
			const returned = (first?.out_msgs ?? []).filter(m => m.bounced).reduce((sum, m) => sum + BigInt(m.value ?? "0"), 0n);
			await this.failedOnChain(s, item, jetton ? spent - returned : spent, outcome.reason);
			return;
		}
		if (s.kind === "native") {
			const value = BigInt(tx.out_msgs[0].value ?? "0");
			if (s.requestId) {
				// Exactly the request's amount left; the deposit paid its fees on top (the merchant's fee).
				await recordFee(ports, this.fence, network.id, item, native!, spent - value, s.id);
				await ports.completeRequest({ id: s.requestId, txHash: hash, fence: this.fence });
				await this.confirmed(s, item, spent - value);
				logger.info(`Withdrawal request ${s.requestId} paid on ${network.slug}: ${hash}`);
				return;
			}
			// The whole balance left: what reached the merchant is the message's value, the rest was fees.
			await recordFee(ports, this.fence, network.id, item, native!, spent - value, s.id);
			await ports.record({ organizationId: item.organizationId, mode: item.mode, networkId: network.id, tokenId: item.tokenId, kind: "sweep", amount: `-${fromBaseUnits(value, native!.decimals)}`, refType: "sweep_item", refId: String(item.id), fence: this.fence });
			await this.confirmed(s, item, spent - value);
			logger.info(`Sweep ${s.id} confirmed on ${network.slug}: ${hash}`);
			return;
		}
		const token = this.token(s.tokenId)!;
		if (s.requestId) {
			// Exactly the request's amount reached the payee's jetton wallet: the merchant's `withdrawal`
			// entry. The TON it carried was the sweeper's top-up (excesses went back to it): on the record only.
			await ports.completeRequest({ id: s.requestId, txHash: hash, fence: this.fence });
			await this.confirmed(s, item, spent);
			logger.info(`Withdrawal request ${s.requestId} paid on ${network.slug}: ${fromBaseUnits(BigInt(signed.jettonAmount!), token.decimals)} ${token.symbol}, ${hash}`);
			return;
		}
		await ports.record({ organizationId: item.organizationId, mode: item.mode, networkId: network.id, tokenId: item.tokenId, kind: "sweep", amount: `-${fromBaseUnits(BigInt(signed.jettonAmount!), token.decimals)}`, refType: "sweep_item", refId: String(item.id), fence: this.fence });
		// The TON it carried was the sweeper's top-up: the operator's, on the record (excesses return to the sweeper wallet).
		await this.confirmed(s, item, spent);
		logger.info(`Sweep ${s.id} confirmed on ${network.slug}: ${fromBaseUnits(BigInt(signed.jettonAmount!), token.decimals)} ${token.symbol}, ${hash}`);
	}

	/** Confirmed: the deposit's failures in a row no longer count (its hold, if any, is deleted). */
	private async confirmed(s: Sweep, item: SweepItem, fee: bigint): Promise<void> {
		if (!(await this.end(s, "confirmed", { feePaid: fee.toString() }))) return;
		await this.holds.clear([this.holdKey(item.depositAddress, item.tokenId)]);
	}

	/**
	 * Landed, and its funds did not move: the sweep fails with what it cost. A TON deposit paid the
	 * fees from the merchant's TON (a `fee` entry, so the ledger equals the chain); a jetton
	 * deposit's TON was the sweeper's top-up (on the sweep's record only, as a top-up is). The
	 * failure counts on the deposit's hold (lib/sweeps/holds.ts): nothing is planned from it (no
	 * new top-up either) before the pause ends, and nothing at all once it is blocked.
	 */
	private async failedOnChain(s: Sweep, item: SweepItem, fee: bigint, reason: string): Promise<void> {
		const { network, logger } = this.deps;
		const native = network.tokens.find(t => t.contractAddress === "");
		if (s.kind === "native" && native) await recordFee(this.deps.ports, this.fence, network.id, item, native, fee, s.id);
		if (!(await this.end(s, "failed", { feePaid: fee.toString(), reason: `failed on chain: ${reason}` }))) return;
		const blocked = await this.holdFailure(this.holdKey(item.depositAddress, item.tokenId), `${s.kind} sweep ${s.txHash} failed on chain: ${reason}`);
		if (s.requestId) await this.deps.ports.failRequest({ id: s.requestId, reason: `${reason}; ${blocked ? "its deposit is held: not retried from it" : "retried"}` });
		logger.warn(`Sweep ${s.id} on ${network.slug} failed on chain (${s.txHash}): ${reason}`);
	}

	private end(s: Sweep, status: "confirmed" | "failed" | "stalled", fields: Parameters<typeof endSweep>[4], outcome: SweepOutcome = status): Promise<boolean> {
		return endSweep(this.deps, this.fence, s, status, fields, outcome);
	}

	// -------------------------------------------------------------------------------------------
	// Which wallets may sign now

	/**
	 * Wallets that must not sign a new message now: one with a sweep in flight (one message per
	 * wallet at a time, so two never take one seqno), and a deposit whose last message's validUntil
	 * has not passed at the last masterchain block (a destroyed wallet at seqno 0 would accept it again).
	 * The sweeper wallet's top-ups are exempt from that window: the sweeper wallet is never destroyed,
	 * so a top-up that landed used its seqno for good, and one that did not ended only once expired.
	 */
	private busyWallets(): Promise<Set<string>> {
		const since = new Date(this.deps.now().getTime() - 3_600_000);
		return busyWallets(this.deps, { key: raw, since, topUps: false, signedOf, live: signed => signed.validUntil >= this.head!.utime });
	}

	// -------------------------------------------------------------------------------------------
	// Withdrawal requests and planning (lib/sweeps/account-runner.ts), with TON's amounts

	/**
	 * Requests: TON from the deposit's balance, its fee on top; a jetton by a jetton transfer from
	 * the deposit carrying JETTON_PAYMENT_TON, excesses back to the sweeper wallet. New sweeps: a
	 * TON deposit's whole balance (the deposit ends destroyed); a jetton deposit's whole jetton
	 * balance once it holds JETTON_SWEEP_TON, after a top-up (one v5R1 message for up to
	 * `batchSize` deposits) otherwise. Sweeps go to the merchant's address non-bounceable
	 * (merchantAddress), as does a jetton payment.
	 */
	private chain(): AccountChain<WalletState> {
		const { settings } = this.deps;
		return {
			chainType: "ton",
			name: "TON",
			key: raw,
			account: address => this.wallet(address),
			native: w => w.balance,
			tokenBalance: (token, address) => this.jettonBalance(token.contractAddress, address),
			worthSweeping: async (_c, _token, w) => w.balance >= ton.TON_SWEEP_MIN_BALANCE,
			hasGas: async (_c, _token, w, payment) => w.balance >= (payment ? ton.JETTON_PAYMENT_TON : ton.JETTON_SWEEP_TON),
			pays: async (_c, _token, w, need) => w.balance >= need + ton.PAYMENT_FEE_RESERVE,
			sendTo: (address, kind, payment) => (kind === "native" && payment ? address : merchantAddress(address)),
			sweeper: async () => {
				const key = await this.deps.sweeperKey();
				return key ? ton.walletAddress(key, "v5r1") : null;
			},
			sweeperEnv: "SWEEPER_PRIVATE_KEY_TON",
			tokens: "jetton",
			holds: this.holds,
			holdKey: (address, tokenId) => this.holdKey(address, tokenId),
			busyWallets: () => this.busyWallets(),
			topUpBatch: Math.min(settings.batchSize, ton.maxTopUpsPerMessage("v5r1")),
			maxAgeMs: settings.maxAgeMs,
		};
	}
}

/** Two spellings (raw, user-friendly bounceable or not) of one TON address, for support.clearHold; false when either is none. */
export function sameTonAddress(a: string, b: string): boolean {
	try {
		return raw(a) === raw(b);
	} catch {
		return false;
	}
}

/**
 * A merchant's address as the sweep sends to it: non-bounceable (docs/withdrawals.md "TON
 * sweeps"): an undeployed bounceable destination would bounce the sweep back to the destroyed
 * deposit, and sweeping it again would bounce again, paying the fees each time.
 */
export function merchantAddress(address: string): string {
	const { address: a } = ton.parseAddress(address, "destination");
	const testOnly = Address.isFriendly(address) ? Address.parseFriendly(address).isTestOnly : false;
	return a.toString({ urlSafe: true, bounceable: false, testOnly });
}

/**
 * The sweeper wallet's key from SWEEPER_PRIVATE_KEY_TON (lib/sweeps/config.ts checked its form):
 * 64 hex digits are the 32-byte ed25519 seed, 128 the 64-byte secret key (seed || public key,
 * checked by the builders), 24 words a TON mnemonic (@ton/crypto mnemonicToPrivateKey, the key a
 * TON wallet app derives from those words). The error never quotes the key.
 */
export async function tonSweeperKey(form: string): Promise<Uint8Array> {
	const hex = form.replace(/^0x/, "");
	if (/^([0-9a-fA-F]{64}|[0-9a-fA-F]{128})$/.test(hex)) return new Uint8Array(Buffer.from(hex, "hex"));
	const words = form.trim().split(/\s+/);
	if (words.length !== 24 || !(await mnemonicValidate(words))) throw new Error("Configuration: SWEEPER_PRIVATE_KEY_TON is not a valid 24-word TON mnemonic");
	return new Uint8Array((await mnemonicToPrivateKey(words)).secretKey);
}
