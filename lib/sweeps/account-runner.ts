/**
 * What the runners of the account chains whose token deposits are funded by a top-up from the
 * sweeper wallet (Polkadot, TON) do alike: the steps of paying a withdrawal request and of
 * planning a sweep that do not depend on the chain. Each runner keeps what does (balances, fees,
 * the replay window of a signed message, the address form its wallets are keyed by).
 */
import { Op, type Sequelize } from "sequelize";
import type { Models } from "../../models";
import type { Sweep, SweepKind } from "../../models/sweep.model";
import { fromBaseUnits, toBaseUnits } from "../money";
import type { HoldKey, StepHolds } from "./holds";
import { countUnseen, type ProofRule, type StallContext } from "./proof";
import { forEachPendingRequest, type SweepableCheckout, type SweeperPorts, type SweepNetwork, type SweepRunnerBaseDeps, type SweepToken, type WithdrawalRequestView } from "./ports";
import { Reservations } from "./reservations";
import { advanceInFlight, checkLease, endSweep, openKeyOf, openKeys, planItem, planSweep, sweepsInFlight, sweptTransactions, unsweptCheckouts, type SweepFence } from "./store";

/** What both chains' sweeper settings hold (each adds how long a signed message stays valid). */
export interface AccountSweeperSettings extends ProofRule {
	/** Deposits per top-up from the sweeper wallet. */
	batchSize: number;
	/** Token deposits wait for a full batch at most this long. */
	maxAgeMs: number;
	/** Sweeps of a deposit that land and fail in a row before it is blocked (lib/sweeps/holds.ts). */
	maxFailures: number;
	/** The pause after a deposit's first failure; it doubles with each further one. */
	failureBackoffMs: number;
}

/** What a runner is given besides its chain's API; `K` is the sweeper wallet's key. */
export interface AccountRunnerDeps<S extends AccountSweeperSettings, K> extends SweepRunnerBaseDeps<S> {
	/** The sweeper wallet's key, null when not configured (token sweeps that need its top-up then wait). */
	sweeperKey: () => Promise<K | null>;
}

export interface AccountRunnerContext {
	sequelize: Sequelize;
	models: Models;
	network: SweepNetwork;
	ports: SweeperPorts;
	now: () => Date;
	logger: { info(...a: unknown[]): void; warn(...a: unknown[]): void };
}

/**
 * What a runner tells the shared steps about its chain; `A` is a deposit's native account as the
 * runner reads it (once per deposit considered).
 */
export interface AccountChain<A> {
	chainType: "polkadot" | "ton";
	/** The chain's name in messages. */
	name: string;
	/** The form wallets are told apart by (busy wallets, a top-up's deposit). */
	key(address: string): string;
	/** The step's holds (lib/sweeps/holds.ts): deposits whose sweeps landed and failed, by their `holdKey`. */
	holds: StepHolds;
	holdKey(address: string, tokenId: string): HoldKey;
	/** Wallets that must not sign now (busyWallets). */
	busyWallets(): Promise<Set<string>>;
	account(address: string): Promise<A>;
	/** An account's native balance, base units. */
	native(a: A): bigint;
	/** What a deposit holds of a token (not the native), base units. */
	tokenBalance(token: SweepToken, address: string): Promise<bigint>;
	/** Whether a native deposit is worth sweeping whole (what reaches the merchant after its fee). */
	worthSweeping(c: SweepableCheckout, token: SweepToken, a: A): Promise<boolean>;
	/** Whether a deposit holds the native its token transfer needs (`payment`: a request's exact amount, not a sweep). */
	hasGas(c: SweepableCheckout, token: SweepToken, a: A, payment: boolean): Promise<boolean>;
	/** Whether a deposit's native pays `need` with its fee, keeping what it must. */
	pays(c: SweepableCheckout, token: SweepToken, a: A, need: bigint): Promise<boolean>;
	/** The address a sweep (`kind`) sends to, given the merchant's or payee's. */
	sendTo(address: string, kind: "native" | "token", payment: boolean): string;
	/** Why the chain would refuse `need` of `token` to `address` (a request then fails, nothing signed); null: it would not. */
	refused?(token: SweepToken, need: bigint, address: string): Promise<string | null>;
	/** The sweeper wallet's address, null when not configured (`sweeperEnv`; token deposits then wait, warned once). */
	sweeper(): Promise<string | null>;
	sweeperEnv: string;
	/** What the chain calls its tokens ("asset", "jetton"). */
	tokens: string;
	/** Deposits per top-up. */
	topUpBatch: number;
	maxAgeMs: number;
}

/** What a runner keeps from step to step for the shared steps: what it logged once. */
export interface AccountRunnerState {
	/** Requests logged as waiting for a deposit that holds them. */
	waiting: Set<string>;
	warnedNoSweeper: boolean;
}

export const accountRunnerState = (): AccountRunnerState => ({ waiting: new Set(), warnedNoSweeper: false });

/**
 * A step's shared part, once the runner read its chain's head: the holds loaded, each sweep in
 * flight carried one state further (`advance`), pending requests paid, new sweeps planned (the
 * lease checked before planning).
 */
export async function accountStep<A>(ctx: AccountRunnerContext & { onFailure?: (err: unknown) => void }, fence: SweepFence, lost: AbortSignal | null, chain: AccountChain<A>, state: AccountRunnerState, advance: (s: Sweep) => Promise<void>): Promise<void> {
	await chain.holds.load();
	await advanceInFlight(ctx, fence, lost, advance);
	await payRequests(ctx, fence, chain, state);
	checkLease(fence, lost);
	await planDeposits(ctx, fence, chain, state);
}

/** Every pending request of the network paid where one deposit holds it (payRequest); the unswept checkouts are read once a step. */
async function payRequests<A>(ctx: AccountRunnerContext, fence: SweepFence, chain: AccountChain<A>, state: AccountRunnerState): Promise<void> {
	const { ports, network, models } = ctx;
	let settled: SweepableCheckout[] | null = null;
	await forEachPendingRequest(ports, network.id, async req => {
		settled ??= await unsweptCheckouts(ports, models, network.id);
		await payRequest(ctx, fence, chain, state.waiting, req, settled);
	});
}

/**
 * A request is paid exactly from one deposit of the merchant that holds it: the native with its
 * fee (the item holds the whole deposit while the payment is in flight: its fee comes from it
 * too); a token with the native its transfer needs, after a top-up from the sweeper wallet when
 * the deposit lacks it (the request's own `topup` sweep; the payment follows once it landed, from
 * that deposit). What the deposit keeps is swept later as usual. None can yet: it stays pending.
 */
async function payRequest<A>(ctx: AccountRunnerContext, fence: SweepFence, chain: AccountChain<A>, waiting: Set<string>, req: WithdrawalRequestView, settled: SweepableCheckout[]): Promise<void> {
	const { ports, network, models, logger } = ctx;
	const own = await models.Sweep.findAll({ where: { requestId: req.id, status: { [Op.ne]: "failed" } } });
	if (own.some(s => s.status !== "confirmed" || s.kind !== "topup")) return; // in flight, or paid
	if (req.destinationNetworkId && req.destinationNetworkId !== network.id) {
		await ports.failRequest({ id: req.id, reason: `a withdrawal to another network needs a bridge provider, not wired to the ${chain.name} sweeper`, final: true });
		return;
	}
	const token = network.tokens.find(t => t.tokenId === req.tokenId);
	if (!token) return;
	const need = toBaseUnits(req.amount, token.decimals);
	// Refused before anything is signed: the chain would charge the fee and fail it, every try.
	const refused = (await chain.refused?.(token, need, req.address)) ?? null;
	if (refused) {
		await ports.failRequest({ id: req.id, reason: refused, final: true });
		logger.warn(`Withdrawal request ${req.id} on ${network.slug} refused before signing (nothing sent, no fee): ${refused}`);
		return;
	}
	const busy = await chain.busyWallets();
	const open = await openKeys(models, settled.map(c => openKeyOf(c.depositAddress, c.tokenId)));
	// A top-up's deposit that is blocked no longer holds the request to it.
	const toppedUp = own.find(s => s.kind === "topup" && !chain.holds.get(chain.holdKey(s.toAddress, req.tokenId))?.blockedAt);
	const plan = (kind: SweepKind, from: string, to: string, c: SweepableCheckout, units: bigint) =>
		planSweep(ctx.sequelize, models, fence, { networkId: network.id, kind, tokenId: token.tokenId, fromAddress: from, toAddress: to, chainNonce: 0, items: [planItem(c, token, units)], requestId: req.id }, ctx.now());
	let ungassed: { c: SweepableCheckout; units: bigint } | null = null;
	for (const c of settled) {
		if (c.organizationId !== req.organizationId || c.tokenId !== req.tokenId || open.has(openKeyOf(c.depositAddress, c.tokenId)) || busy.has(chain.key(c.depositAddress)) || chain.holds.held(chain.holdKey(c.depositAddress, c.tokenId))) continue;
		if (toppedUp && chain.key(toppedUp.toAddress) !== chain.key(c.depositAddress)) continue; // finish on the deposit that got the native
		const target = await ports.destinationOf({ organizationId: c.organizationId, chainType: chain.chainType, transactionId: c.transactionId });
		if (target?.source === "payment") continue; // those funds belong to the checkout's own address
		const a = await chain.account(c.depositAddress);
		if (token.contractAddress !== "") {
			// The item holds the deposit's whole token balance while the payment is in flight.
			const units = await chain.tokenBalance(token, c.depositAddress);
			if (units < need) continue;
			if (!(await chain.hasGas(c, token, a, true))) {
				ungassed ??= { c, units };
				continue;
			}
			await plan("token", c.depositAddress, chain.sendTo(req.address, "token", true), c, units);
			return;
		}
		if (!(await chain.pays(c, token, a, need))) continue;
		await plan("native", c.depositAddress, chain.sendTo(req.address, "native", true), c, chain.native(a));
		return;
	}
	if (ungassed) {
		// Again when a landed top-up left the deposit short (its message skipped, or a failed payment spent it).
		const sweeper = await chain.sweeper();
		if (sweeper && !busy.has(chain.key(sweeper))) {
			await plan("topup", sweeper, ungassed.c.depositAddress, ungassed.c, ungassed.units);
			return;
		}
	}
	if (!waiting.has(req.id)) logger.info(`Withdrawal request ${req.id}: no single deposit on ${network.slug} holds ${req.amount} ${token.symbol} and its fee yet (or the sweeper wallet is busy or not configured); it stays pending`);
	waiting.add(req.id);
}

/**
 * Wallets (by `key`) that must not sign now: one with a sweep in flight (one message per wallet
 * at a time), and one whose sweep ended since `since` while what it signed may still be accepted
 * (`live`: a deposit emptied and re-funded starts again at nonce/seqno 0 and would accept it
 * again). `topUps` false leaves the sweeper wallet's ended top-ups out of that window.
 */
export async function busyWallets<R>(ctx: Pick<AccountRunnerContext, "models" | "network">, p: { key: (address: string) => string; since: Date; topUps: boolean; signedOf: (s: Sweep) => R | null; live: (signed: R) => boolean }): Promise<Set<string>> {
	const { models, network } = ctx;
	const busy = new Set<string>();
	for (const s of await sweepsInFlight(models, network.id)) busy.add(p.key(s.fromAddress));
	const kinds = p.topUps ? {} : { kind: { [Op.ne]: "topup" } };
	const recent = await models.Sweep.findAll({ where: { networkId: network.id, ...kinds, status: { [Op.in]: ["confirmed", "failed"] }, updatedAt: { [Op.gte]: p.since } }, attributes: ["fromAddress", "rawTx"] });
	for (const s of recent) {
		const signed = p.signedOf(s);
		if (signed && p.live(signed)) busy.add(p.key(s.fromAddress));
	}
	return busy;
}

/**
 * New sweeps of settled checkouts still at their deposits (route direct, a destination known): a
 * native deposit's whole balance, a token deposit's whole token balance once it holds the native
 * its transfer needs; token deposits that lack it get a top-up from the sweeper wallet, batched
 * (planTopUp). A deposit busy or held (lib/sweeps/holds.ts: a pause, or blocked until support
 * clears it) waits, with no top-up meanwhile. Funds bound for the settings' address are taken from
 * what pending requests leave (lib/sweeps/reservations.ts).
 */
async function planDeposits<A>(ctx: AccountRunnerContext, fence: SweepFence, chain: AccountChain<A>, state: AccountRunnerState): Promise<void> {
	const { ports, network, models, sequelize, now } = ctx;
	const settled = await ports.sweepable({ networkId: network.id });
	if (settled.length === 0) return;
	const swept = await sweptTransactions(models, settled.map(c => c.transactionId));
	const open = await openKeys(models, settled.map(c => openKeyOf(c.depositAddress, c.tokenId)));
	const busy = await chain.busyWallets();
	const reservations = new Reservations({ sequelize, models, now, ownAddressCheckouts: a => ports.ownAddressCheckouts(a) }, network.id);
	const toTopUp = new Map<string, TopUpCandidate[]>();
	const plan = async (kind: "native" | "token", c: SweepableCheckout, token: SweepToken, units: bigint, to: string, fromSettings: boolean) => {
		const toAddress = chain.sendTo(to, kind, false);
		const items = [planItem(c, token, units)];
		const admit = fromSettings ? await reservations.guard(items) : undefined;
		await planSweep(sequelize, models, fence, { networkId: network.id, kind, tokenId: token.tokenId, fromAddress: c.depositAddress, toAddress, chainNonce: 0, items, admit }, now());
		busy.add(chain.key(c.depositAddress));
	};
	for (const c of settled) {
		if (swept.has(c.transactionId) || open.has(openKeyOf(c.depositAddress, c.tokenId)) || busy.has(chain.key(c.depositAddress)) || chain.holds.held(chain.holdKey(c.depositAddress, c.tokenId))) continue;
		const token = network.tokens.find(t => t.tokenId === c.tokenId);
		if (!token) continue;
		const route = await ports.route({ organizationId: c.organizationId, transactionId: c.transactionId });
		if (route.via !== "direct") continue; // held, or bridged (not wired to this sweeper): kept at the deposit
		const target = await ports.destinationOf({ organizationId: c.organizationId, chainType: chain.chainType, transactionId: c.transactionId });
		if (!target) continue;
		const fromSettings = target.source === "settings";
		const a = await chain.account(c.depositAddress);
		if (token.contractAddress === "") {
			if (!(await chain.worthSweeping(c, token, a))) continue;
			const units = chain.native(a);
			if (fromSettings && !(await reservations.take(c.organizationId, token.tokenId, fromBaseUnits(units, token.decimals)))) continue;
			await plan("native", c, token, units, target.address, fromSettings);
			continue;
		}
		const units = await chain.tokenBalance(token, c.depositAddress);
		if (units <= 0n) continue;
		if (fromSettings && !(await reservations.take(c.organizationId, token.tokenId, fromBaseUnits(units, token.decimals)))) continue;
		if (await chain.hasGas(c, token, a, false)) {
			await plan("token", c, token, units, target.address, fromSettings);
			continue;
		}
		toTopUp.set(token.tokenId, [...(toTopUp.get(token.tokenId) ?? []), { c, amount: units, settings: fromSettings }]);
	}
	if (toTopUp.size === 0) return;
	const sweeper = await chain.sweeper();
	if (!sweeper) {
		if (!state.warnedNoSweeper) ctx.logger.warn(`Sweeper: ${network.slug} has ${chain.tokens} deposits to sweep but no ${chain.sweeperEnv}; they stay at their deposit addresses`);
		state.warnedNoSweeper = true;
		return;
	}
	if (busy.has(chain.key(sweeper))) return; // its previous message first: one nonce, one message
	await planTopUp(ctx, fence, reservations, toTopUp, { sweeper, size: chain.topUpBatch, maxAgeMs: chain.maxAgeMs });
}

interface TopUpCandidate {
	c: SweepableCheckout;
	amount: bigint;
	settings: boolean;
}

/**
 * Plans one top-up from the sweeper wallet (`sweeper`) for the first token whose deposits fill a
 * batch of `size`, or whose oldest waited `maxAgeMs`: one sweeper message at a time.
 */
async function planTopUp(ctx: AccountRunnerContext, fence: SweepFence, reservations: Reservations, toTopUp: Map<string, TopUpCandidate[]>, p: { sweeper: string; size: number; maxAgeMs: number }): Promise<void> {
	const { sequelize, models, network, now } = ctx;
	for (const [tokenId, group] of toTopUp) {
		const token = network.tokens.find(t => t.tokenId === tokenId)!;
		const batch = group.slice(0, p.size);
		const oldest = Math.min(...batch.map(d => new Date(d.c.completedAt).getTime()));
		if (batch.length < p.size && now().getTime() - oldest < p.maxAgeMs) continue;
		const items = batch.map(d => planItem(d.c, token, d.amount));
		const admit = await reservations.guard(items.filter((_, n) => batch[n].settings));
		await planSweep(sequelize, models, fence, { networkId: network.id, kind: "topup", tokenId, fromAddress: p.sweeper, toAddress: p.sweeper, chainNonce: 0, items, admit }, now());
		return;
	}
}

/**
 * A signed sweep's fate as its chain's `sendVerdict` reads it, acted on: `landed` is the runner's
 * (`landed`); `dead` (expired, never taken, its nonce / seqno unused: the wallet refuses it from
 * now on) ends it failed, so its funds are planned again and a request's payment is signed again;
 * `superseded` (another transaction used its nonce / seqno: the funds may have moved) counts
 * towards a stall, locked until an operator looks; `pending` sends the same bytes again
 * (`resend`), once broadcast.
 */
export async function followVerdict(
	ctx: Omit<StallContext, "rule" | "network"> & { network: SweepNetwork; ports: SweeperPorts; settings: ProofRule; logger: { warn(...a: unknown[]): void } },
	fence: SweepFence,
	s: Sweep,
	verdict: "landed" | "dead" | "superseded" | "pending",
	p: { landed: () => Promise<void>; deadReason: string; expired: string; used: string; resend: () => Promise<void> },
): Promise<void> {
	if (verdict === "landed") return p.landed();
	if (verdict === "dead") {
		await endSweep(ctx, fence, s, "failed", { reason: p.deadReason });
		if (s.requestId) await ctx.ports.failRequest({ id: s.requestId, reason: `the payment's ${p.expired}; signed again` });
		ctx.logger.warn(`Sweep ${s.id} on ${ctx.network.slug}: ${p.expired}; its funds will be planned again`);
		return;
	}
	if (verdict === "superseded") {
		await countUnseen({ ...ctx, rule: ctx.settings }, fence, s, false, `${p.used} of ${s.fromAddress} was used`);
		return;
	}
	if (s.status === "stalled" || s.status === "signed") return;
	await p.resend();
}
