/**
 * The UTXO sweeper's loop for one Bitcoin-family network (docs/withdrawals.md "UTXO sweeper"):
 * settled checkouts' credited outputs that are still unspent are consolidated, per merchant and
 * destination, into ONE transaction with ONE output (no change is ever left at a deposit
 * address), RBF on, signed with deposit keys derived on demand (lib/chains/utxo/sweep.ts). The
 * same records as the EVM sweeper (lib/sweeps/store.ts): planned -> signed (bytes recorded
 * before broadcast) -> broadcast -> confirmed / failed; a sweep stuck in the mempool is signed
 * again over the same inputs at a higher fee rate (a replacement: only one can be mined).
 */
import { address as btcAddress, Transaction as BtcTransaction } from "bitcoinjs-lib";
import type { Network } from "bitcoinjs-lib";
import { Op, type Sequelize } from "sequelize";
import * as utxo from "./sweep";
import { satoshis } from "./source";
import { fromBaseUnits, toBaseUnits } from "../../money";
import type { Models } from "../../../models";
import type { Sweep } from "../../../models/sweep.model";
import type { SweepOutcome } from "../../metrics";
import { advanceInFlight, checkLease, finishSweep, openKeyOf, openKeys, planSweep, recordBroadcast, recordMinedBlock, recordSigned, recordUnseen, sweptTransactions, type SweepFence } from "../../sweeps/store";
import { forEachPendingRequest, requestAmount, type SweepableCheckout, type SweeperPorts, type SweepNetwork, type WithdrawalRequestView } from "../../sweeps/ports";
import { countUnseen } from "../../sweeps/proof";
import { Reservations } from "../../sweeps/reservations";
import { UtxoRpcError, type UtxoRpcCall } from "./rpc";

/** What the UTXO sweeper asks of other services. */
export interface UtxoSweeperPorts extends Pick<SweeperPorts, "pendingRequests" | "completeRequest" | "failRequest" | "ownAddressCheckouts"> {
	sweepable(p: { networkId: string }): Promise<SweepableCheckout[]>;
	creditedOutputs(p: { transactionIds: string[] }): Promise<Array<{ transactionId: string; txHash: string; logIndex: number; tokenId: string; amount: string }>>;
	/** withdrawals.destination: a checkout's own address ("payment"), else the settings' (also without a checkout). */
	destinationOf(p: { organizationId: string; chainType: string; transactionId?: string }): Promise<{ address: string; source: "payment" | "settings" } | null>;
	record(p: { organizationId: string; mode: string; networkId: string; tokenId: string; kind: "sweep" | "fee"; amount: string; refType: string; refId: string; fence: SweepFence }): Promise<unknown>;
}

export interface UtxoSweepRunnerDeps {
	sequelize: Sequelize;
	models: Models;
	rpc: UtxoRpcCall;
	network: SweepNetwork;
	btcNetwork: Network;
	/** The withdrawal-address key of the network: "bitcoin", or "litecoin" (lib/chains/withdrawal-keys.ts). */
	withdrawalKey: string;
	/** Litecoin relays dust below 30,000 sat/kvB; Bitcoin 3,000. */
	dustRelayFeeSatPerKvB: bigint;
	feePolicy: { floorSatPerVb: number; capSatPerVb: number };
	stuckMs: number;
	/** A sweep whose inputs are spent while none of its transactions can be found is stalled only after this many polls and this long. */
	proofPolls: number;
	proofMs: number;
	depositKey(index: number): Promise<Uint8Array>;
	ports: UtxoSweeperPorts;
	now: () => Date;
	logger: { info(...a: unknown[]): void; warn(...a: unknown[]): void; error(...a: unknown[]): void };
	/** A sweep that could not be carried further this step (error tracking; the next step tries again). */
	onFailure?: (err: unknown) => void;
	/** Each step a sweep takes, once recorded (metrics). */
	onOutcome?: (outcome: SweepOutcome) => void;
}

/** The sending "wallet" of UTXO sweeps in sweep_wallets: UTXO sweeps have no nonce; the counter only numbers them. */
const UTXO_WALLET = "utxo-consolidation";

interface Outpoint {
	txid: string;
	vout: number;
	valueSats: bigint;
	address: string;
	derivationIndex: number;
}

/** Bitcoin Core's "No such mempool or blockchain transaction" (and "not found in the given block"). */
const RPC_INVALID_ADDRESS_OR_KEY = -5;
/** How far back a mined sweep is looked for, block by block, when neither the mempool nor its own output knows it. */
const SCAN_MAX_BLOCKS = 1_000;
/** Block times may run this far ahead of the wall clock (consensus: 2 hours). */
const BLOCK_TIME_SLACK_S = 7_200;

/** Where a sweep's transaction is: mined in a block (with its confirmations and output value), in the mempool, or nowhere found. */
type Found = { at: "block"; txid: string; confirmations: number; outputSats: bigint } | { at: "mempool" } | null;

interface VerboseTx {
	txid: string;
	blockhash?: string;
	confirmations?: number;
	in_active_chain?: boolean;
	vout: Array<{ value: string }>;
}

export class UtxoSweepRunner {
	private fence: SweepFence = { networkId: "", owner: "", token: -1 };
	private lost: AbortSignal | null = null;

	constructor(private readonly deps: UtxoSweepRunnerDeps) {}

	/** One step under the network's sweep lease (every write fenced by it; `lost` aborts between sweeps). */
	async step(fence: SweepFence, lost?: AbortSignal): Promise<void> {
		this.fence = fence;
		this.lost = lost ?? null;
		await advanceInFlight(this.deps, fence, this.lost, s => this.advance(s));
		await this.executeRequests();
		checkLease(fence, this.lost);
		await this.plan();
	}

	private native() {
		return this.deps.network.tokens.find(t => t.contractAddress === "")!;
	}

	/** The outpoints a sweep spends: from its recorded bytes once signed, else the items' unspent credited outputs. */
	private async outpointsOf(s: Sweep): Promise<Outpoint[]> {
		const { models, ports, rpc } = this.deps;
		const items = await models.SweepItem.findAll({ where: { sweepId: s.id } });
		const credited = await ports.creditedOutputs({ transactionIds: items.map(i => i.transactionId) });
		const byItem = new Map(items.map(i => [i.transactionId, i]));
		const recorded = s.rawTx ? new Set(BtcTransaction.fromHex(s.rawTx).ins.map(i => `${Buffer.from(i.hash).reverse().toString("hex")}:${i.index}`)) : null;
		const out: Outpoint[] = [];
		for (const c of credited) {
			const item = byItem.get(c.transactionId)!;
			const key = `${c.txHash}:${c.logIndex}`;
			if (recorded) {
				if (!recorded.has(key)) continue;
			} else if (!(await rpc("gettxout", [c.txHash, c.logIndex, true]))) {
				continue; // spent already
			}
			out.push({ txid: c.txHash, vout: c.logIndex, valueSats: toBaseUnits(c.amount, this.native().decimals), address: item.depositAddress, derivationIndex: item.derivationIndex });
		}
		return out;
	}

	private async feeRate(step: number): Promise<number> {
		const estimate = await this.deps.rpc<utxo.SmartFeeEstimate>("estimatesmartfee", [6]).catch(() => null);
		const base = utxo.feeRateFromEstimate(estimate, this.deps.feePolicy);
		return step > 0 ? utxo.bumpFeeRate(base, step) : base;
	}

	private async sign(s: Sweep, step: number): Promise<utxo.SignedSweep> {
		const inputs = await this.outpointsOf(s);
		if (inputs.length === 0) throw new Error("nothing left to spend");
		const keyed = await Promise.all(inputs.map(async i => ({ txid: i.txid, vout: i.vout, valueSats: i.valueSats, address: i.address, key: await this.deps.depositKey(i.derivationIndex) })));
		const common = { network: this.deps.btcNetwork, inputs: keyed, feeRateSatPerVb: await this.feeRate(step), dustRelayFeeSatPerKvB: this.deps.dustRelayFeeSatPerKvB };
		if (s.requestId) {
			// A withdrawal request: its exact amount to its address, the change to the merchant's own address.
			const items = await this.deps.models.SweepItem.findAll({ where: { sweepId: s.id }, limit: 1 });
			const change = await this.changeAddress(items[0].organizationId);
			if (!change) throw new Error(`no ${this.deps.withdrawalKey} address in the withdrawal settings for the change`);
			return utxo.buildPaymentPsbt({ ...common, payee: s.toAddress, amountSats: toBaseUnits(await requestAmount(this.deps.models, s.requestId), this.native().decimals), change });
		}
		return utxo.buildSweepPsbt({ ...common, destination: s.toAddress });
	}

	/** The merchant's own address for this chain in the settings: where a request's change goes. */
	private async changeAddress(organizationId: string): Promise<string | null> {
		const settings = await this.deps.ports.destinationOf({ organizationId, chainType: this.deps.withdrawalKey });
		return settings?.source === "settings" ? settings.address : null;
	}

	private async advance(s: Sweep): Promise<void> {
		const { rpc, network, logger, now, sequelize, models } = this.deps;
		if (s.status === "planned") {
			const signed = await this.sign(s, 0);
			await recordSigned(sequelize, models, this.fence, s, { raw: signed.hex, hash: signed.txid }, 0, now());
		}
		if (s.status === "signed") {
			await utxo.broadcastRaw(rpc, s.rawTx!);
			await recordBroadcast(sequelize, models, this.fence, s, now());
			this.deps.onOutcome?.("broadcast");
			return;
		}
		// Broadcast (or stalled): the transaction's own confirmations, read from the transaction itself
		// (its output may already be spent by the destination: gettxout would say nothing).
		let found = await this.locate(s);
		// (A stalled sweep is not looked for block by block at every poll: the operator resolves it.)
		if (!found && s.status !== "stalled" && (await this.inputsSpent(s))) {
			// Mined and its output spent before we looked, or the inputs went elsewhere: look in the blocks.
			found = await this.scanBlocks(s);
			if (!found) {
				await this.inputsTaken(s);
				return;
			}
		}
		if (found?.at === "block") {
			if (found.confirmations < network.requiredConfirmations) return;
			await this.confirm(s, found.txid, found.outputSats);
			return;
		}
		if (s.unseenPolls > 0) await recordUnseen(sequelize, models, this.fence, s, true, now());
		if (s.status === "stalled") return;
		if (s.broadcastAt && now().getTime() - s.broadcastAt.getTime() > this.deps.stuckMs * (s.feeStep + 1)) {
			const signed = await this.sign(s, s.feeStep + 1);
			await recordSigned(sequelize, models, this.fence, s, { raw: signed.hex, hash: signed.txid }, s.feeStep + 1, now());
			this.deps.onOutcome?.("replaced");
			logger.info(`Sweep ${s.id} on ${network.slug} stuck: replaced at a higher fee rate (step ${s.feeStep})`);
		}
		await utxo.broadcastRaw(rpc, s.rawTx!).catch(err => logger.warn(`Sweep ${s.id}: broadcast: ${(err as Error).message}`));
	}

	/** A transaction of the node, verbose; null when the node does not know it (there, or in that block). */
	private async rawTransaction(txid: string, blockHash?: string): Promise<VerboseTx | null> {
		try {
			return await this.deps.rpc<VerboseTx>("getrawtransaction", blockHash ? [txid, true, blockHash] : [txid, true]);
		} catch (err) {
			if (err instanceof UtxoRpcError && err.code === RPC_INVALID_ADDRESS_OR_KEY) return null;
			throw err;
		}
	}

	/** A transaction found in a block: remembered there (without -txindex a mined transaction is only found by its block). */
	private async minedIn(s: Sweep, tx: VerboseTx, blockHash: string): Promise<Found> {
		await recordMinedBlock(this.deps.sequelize, this.deps.models, this.fence, s, blockHash, this.deps.now());
		return { at: "block", txid: tx.txid, confirmations: tx.confirmations ?? 0, outputSats: satoshis(tx.vout[0].value) };
	}

	/**
	 * Where one of the sweep's transactions is, asked by its id: in the block remembered for it
	 * (confirmations from the transaction, whatever became of its output), in the mempool (or any
	 * block with -txindex), or mined with its output still unspent (gettxout tells the block).
	 */
	private async locate(s: Sweep): Promise<Found> {
		const { rpc, sequelize, models, now } = this.deps;
		if (s.minedBlock) {
			for (const txid of s.hashes) {
				const tx = await this.rawTransaction(txid, s.minedBlock);
				if (tx && tx.in_active_chain !== false) return { at: "block", txid, confirmations: tx.confirmations ?? 0, outputSats: satoshis(tx.vout[0].value) };
			}
			// The block left the chain (a reorg): the transaction is looked for again.
			await recordMinedBlock(sequelize, models, this.fence, s, null, now());
		}
		let pending = false;
		for (const txid of s.hashes) {
			const tx = await this.rawTransaction(txid);
			if (tx?.blockhash) return this.minedIn(s, tx, tx.blockhash);
			if (tx) pending = true;
			const out = await rpc<{ confirmations: number; bestblock: string } | null>("gettxout", [txid, 0, false]);
			if (out && out.confirmations > 0) {
				const best = await rpc<{ height: number }>("getblockheader", [out.bestblock, true]);
				const blockHash = await rpc<string>("getblockhash", [best.height - out.confirmations + 1]);
				const mined = await this.rawTransaction(txid, blockHash);
				if (mined) return this.minedIn(s, mined, blockHash);
			}
		}
		return pending ? { at: "mempool" } : null;
	}

	/** Whether any input of the sweep's recorded bytes is spent (in a block or by a mempool transaction). */
	private async inputsSpent(s: Sweep): Promise<boolean> {
		for (const input of BtcTransaction.fromHex(s.rawTx!).ins) {
			if (!(await this.deps.rpc("gettxout", [Buffer.from(input.hash).reverse().toString("hex"), input.index, true]))) return true;
		}
		return false;
	}

	/** The blocks since the sweep was first broadcast (at most SCAN_MAX_BLOCKS), newest first, looked through for its transactions. */
	private async scanBlocks(s: Sweep): Promise<Found> {
		const { rpc } = this.deps;
		const ours = new Set(s.hashes);
		const since = Math.floor((s.broadcastAt ?? s.createdAt).getTime() / 1000) - BLOCK_TIME_SLACK_S;
		const tip = await rpc<number>("getblockcount");
		for (let height = tip; height >= 0 && tip - height < SCAN_MAX_BLOCKS; height--) {
			const hash = await rpc<string>("getblockhash", [height]);
			const block = await rpc<{ tx: string[]; time: number }>("getblock", [hash, 1]);
			const txid = block.tx.find(t => ours.has(t));
			if (txid) {
				const tx = await this.rawTransaction(txid, hash);
				if (tx) return this.minedIn(s, tx, hash);
			}
			if (block.time < since) break;
		}
		return null;
	}

	/**
	 * The sweep's inputs are spent and none of its transactions is in the mempool or the blocks since
	 * it was sent: counted, and stalled (an operator alert, its items kept open) only with proof
	 * (lib/sweeps/proof.ts).
	 */
	private async inputsTaken(s: Sweep): Promise<void> {
		const { proofPolls, proofMs } = this.deps;
		await countUnseen({ ...this.deps, rule: { proofPolls, proofMs } }, this.fence, s, false, "the inputs of this sweep were spent");
	}

	/**
	 * Confirmed: each deposit's `sweep` entry, the transaction's fee as one `fee` entry charged to
	 * the first deposit's sweep (a sweep holds one merchant's deposits), then the sweep closes.
	 */
	private async confirm(s: Sweep, txid: string, outputSats: bigint): Promise<void> {
		if (s.requestId) return this.confirmRequest(s, txid);
		const { models, sequelize, network, ports, now } = this.deps;
		const native = this.native();
		const items = await models.SweepItem.findAll({ where: { sweepId: s.id }, order: [["id", "ASC"]] });
		const total = items.reduce((sum, i) => sum + toBaseUnits(i.amount, native.decimals), 0n);
		const fee = total - outputSats;
		for (const [n, item] of items.entries()) {
			const moved = toBaseUnits(item.amount, native.decimals) - (n === 0 ? fee : 0n);
			await ports.record({ organizationId: item.organizationId, mode: item.mode, networkId: network.id, tokenId: native.tokenId, kind: "sweep", amount: `-${fromBaseUnits(moved, native.decimals)}`, refType: "sweep_item", refId: String(item.id), fence: this.fence });
		}
		if (fee > 0n) {
			const first = items[0];
			await ports.record({ organizationId: first.organizationId, mode: first.mode, networkId: network.id, tokenId: native.tokenId, kind: "fee", amount: `-${fromBaseUnits(fee, native.decimals)}`, refType: "sweep", refId: s.id, fence: this.fence });
		}
		if (await finishSweep(sequelize, models, this.fence, s, "confirmed", { txHash: txid, feePaid: fee.toString() }, now())) this.deps.onOutcome?.("confirmed");
		this.deps.logger.info(`Sweep ${s.id} confirmed on ${network.slug}: ${items.length} checkout(s) into one output, ${txid}`);
	}

	/** One consolidation per merchant and destination over the unspent credited outputs of settled checkouts. */
	private async plan(): Promise<void> {
		const { ports, network, models, sequelize, rpc, now, logger } = this.deps;
		const native = this.native();
		const settled = (await ports.sweepable({ networkId: network.id })).filter(c => c.tokenId === native.tokenId);
		if (settled.length === 0) return;
		const swept = await sweptTransactions(models, settled.map(c => c.transactionId));
		const open = await openKeys(models, settled.map(c => openKeyOf(c.depositAddress, c.tokenId)));
		const todo = settled.filter(c => !swept.has(c.transactionId) && !open.has(openKeyOf(c.depositAddress, c.tokenId)));
		if (todo.length === 0) return;
		const credited = await ports.creditedOutputs({ transactionIds: todo.map(c => c.transactionId) });
		const groups = new Map<string, { destination: string; items: Array<SweepableCheckout & { sats: bigint; fromSettings: boolean }> }>();
		const reservations = this.reservations();
		for (const c of todo) {
			let sats = 0n;
			for (const o of credited.filter(o => o.transactionId === c.transactionId)) {
				if (await rpc("gettxout", [o.txHash, o.logIndex, true])) sats += toBaseUnits(o.amount, native.decimals);
			}
			if (sats === 0n) continue;
			const target = await ports.destinationOf({ organizationId: c.organizationId, chainType: this.deps.withdrawalKey, transactionId: c.transactionId });
			if (!target) continue; // waits at the deposit until the merchant saves settings
			const destination = target.address;
			// Funds pending requests are paid from stay at their deposits (lib/sweeps/reservations.ts).
			const fromSettings = target.source === "settings";
			if (fromSettings && !(await reservations.take(c.organizationId, c.tokenId, fromBaseUnits(sats, native.decimals)))) continue;
			const key = `${c.organizationId}|${destination}`;
			const group = groups.get(key) ?? { destination, items: [] };
			group.items.push({ ...c, sats, fromSettings });
			groups.set(key, group);
		}
		const rate = await this.feeRate(0);
		for (const { destination, items } of groups.values()) {
			// Worth sending only when the one output is above dust after the fee (else it waits for more).
			const script = btcAddress.toOutputScript(destination, this.deps.btcNetwork);
			const fee = utxo.feeFor(utxo.estimateSweepVsize(items.length, script), utxo.toSatPerKvB(rate));
			const total = items.reduce((sum, c) => sum + c.sats, 0n);
			if (total - fee < utxo.dustThreshold(script, this.deps.dustRelayFeeSatPerKvB)) continue;
			const planItems = items.map(c => this.item(c, c.sats));
			const admit = await reservations.guard(planItems.filter((_, n) => items[n].fromSettings));
			const planned = await planSweep(
				sequelize,
				models,
				this.fence,
				{
					networkId: network.id,
					kind: "utxo",
					tokenId: native.tokenId,
					fromAddress: UTXO_WALLET,
					toAddress: destination,
					chainNonce: 0,
					items: planItems,
					admit,
				},
				now(),
			);
			if (planned) logger.info(`Sweeper: ${items.length} checkout(s) on ${network.slug} consolidated to the merchant's address (sweep ${planned.id})`);
		}
	}

	private item(c: SweepableCheckout, sats: bigint) {
		const native = this.native();
		return { transactionId: c.transactionId, organizationId: c.organizationId, mode: c.mode, depositAddress: c.depositAddress, derivationIndex: c.derivationIndex, tokenId: native.tokenId, amount: fromBaseUnits(sats, native.decimals) };
	}

	/** This step's view of what the automatic sweep may take from requestable funds. */
	private reservations(): Reservations {
		const { sequelize, models, now, network, ports } = this.deps;
		return new Reservations({ sequelize, models, now, ownAddressCheckouts: a => ports.ownAddressCheckouts(a) }, network.id);
	}

	/**
	 * Pending withdrawal requests of this network, oldest first (read by network: others never
	 * hide them). Each is paid in ONE transaction: its exact amount to its address, the change to
	 * the merchant's own address in the settings (docs/withdrawals.md "Requests on Bitcoin-family
	 * networks"), from the unspent credited outputs of the merchant's settled checkouts whose
	 * destination is the settings' (never a checkout with its own withdrawal address), oldest
	 * first, as few as cover amount + fee. Not enough yet: the request stays pending.
	 */
	private async executeRequests(): Promise<void> {
		const { ports, network } = this.deps;
		let outputs: Map<string, Array<Outpoint & { transactionId: string }>> | null = null;
		await forEachPendingRequest(ports, network.id, async req => {
			outputs ??= await this.requestableOutputs();
			await this.executeRequest(req, outputs).catch(err => {
				this.deps.logger.warn(`Withdrawal request ${req.id} on ${network.slug}: ${(err as Error).message}`);
				this.deps.onFailure?.(err);
			});
		});
	}

	/** Per organization: the unspent credited outputs of its settled checkouts that may pay a request, oldest checkout first. */
	private async requestableOutputs(): Promise<Map<string, Array<Outpoint & { transactionId: string }>>> {
		const { ports, network, models, rpc } = this.deps;
		const native = this.native();
		const settled = (await ports.sweepable({ networkId: network.id })).filter(c => c.tokenId === native.tokenId);
		const swept = await sweptTransactions(models, settled.map(c => c.transactionId));
		const open = await openKeys(models, settled.map(c => openKeyOf(c.depositAddress, c.tokenId)));
		const todo = settled.filter(c => !swept.has(c.transactionId) && !open.has(openKeyOf(c.depositAddress, c.tokenId)));
		const byOrg = new Map<string, Array<Outpoint & { transactionId: string }>>();
		if (todo.length === 0) return byOrg;
		const credited = await ports.creditedOutputs({ transactionIds: todo.map(c => c.transactionId) });
		for (const c of todo) {
			const target = await ports.destinationOf({ organizationId: c.organizationId, chainType: this.deps.withdrawalKey, transactionId: c.transactionId });
			if (target?.source === "payment") continue; // belongs to the checkout's own address
			for (const o of credited.filter(o => o.transactionId === c.transactionId)) {
				if (!(await rpc("gettxout", [o.txHash, o.logIndex, true]))) continue;
				const list = byOrg.get(c.organizationId) ?? [];
				list.push({ txid: o.txHash, vout: o.logIndex, valueSats: toBaseUnits(o.amount, native.decimals), address: c.depositAddress, derivationIndex: c.derivationIndex, transactionId: c.transactionId });
				byOrg.set(c.organizationId, list);
			}
		}
		return byOrg;
	}

	private async executeRequest(req: WithdrawalRequestView, outputs: Map<string, Array<Outpoint & { transactionId: string }>>): Promise<void> {
		const { ports, network, models, sequelize, logger, now } = this.deps;
		const native = this.native();
		if (await models.Sweep.count({ where: { requestId: req.id, status: { [Op.ne]: "failed" } } })) return; // in flight, or paid
		if (req.destinationNetworkId && req.destinationNetworkId !== network.id) {
			await ports.failRequest({ id: req.id, reason: "a withdrawal to another network needs a bridge provider, not wired to the sweeper yet", final: true });
			return;
		}
		if (req.tokenId !== native.tokenId) return;
		const change = await this.changeAddress(req.organizationId);
		if (!change) {
			await ports.failRequest({ id: req.id, reason: `no ${this.deps.withdrawalKey} address in the withdrawal settings for the change`, final: true });
			return;
		}
		const mine = outputs.get(req.organizationId) ?? [];
		const need = toBaseUnits(req.amount, native.decimals);
		const rate = utxo.toSatPerKvB(await this.feeRate(0));
		const scripts = [btcAddress.toOutputScript(req.address, this.deps.btcNetwork), btcAddress.toOutputScript(change, this.deps.btcNetwork)];
		// Whole checkouts, oldest first, until they cover the amount and the fee of a two-output payment.
		const chosen: typeof mine = [];
		let total = 0n;
		for (const transactionId of [...new Set(mine.map(o => o.transactionId))]) {
			if (total >= need + utxo.feeFor(utxo.estimateVsize(Math.max(chosen.length, 1), scripts), rate)) break;
			for (const o of mine.filter(o => o.transactionId === transactionId)) {
				chosen.push(o);
				total += o.valueSats;
			}
		}
		if (chosen.length === 0 || total < need + utxo.feeFor(utxo.estimateVsize(chosen.length, scripts), rate)) {
			logger.info(`Withdrawal request ${req.id}: the merchant's unspent outputs on ${network.slug} do not cover ${req.amount} and the fee yet; it stays pending`);
			return;
		}
		const bySettled = new Map<string, { c: SweepableCheckout; sats: bigint }>();
		for (const o of chosen) {
			const entry = bySettled.get(o.transactionId) ?? { c: { transactionId: o.transactionId, organizationId: req.organizationId, mode: req.mode, depositAddress: o.address, derivationIndex: o.derivationIndex, tokenId: native.tokenId, completedAt: "" }, sats: 0n };
			entry.sats += o.valueSats;
			bySettled.set(o.transactionId, entry);
		}
		const planned = await planSweep(
			sequelize,
			models,
			this.fence,
			{ networkId: network.id, kind: "utxo", tokenId: native.tokenId, fromAddress: UTXO_WALLET, toAddress: req.address, chainNonce: 0, requestId: req.id, items: [...bySettled.values()].map(e => this.item(e.c, e.sats)) },
			now(),
		);
		if (!planned) return;
		// These outputs are taken for this step.
		outputs.set(req.organizationId, mine.filter(o => !chosen.includes(o)));
		logger.info(`Withdrawal request ${req.id} on ${network.slug}: ${req.amount} from ${chosen.length} output(s) (sweep ${planned.id})`);
	}

	/**
	 * A request's payment confirmed: its `withdrawal` entry (completeRequest), the fee as a `fee`
	 * entry and the change that went to the merchant's own address as a `sweep` entry, so the
	 * spent checkouts' ledger falls by exactly what their outputs held.
	 */
	private async confirmRequest(s: Sweep, txid: string): Promise<void> {
		const { models, sequelize, network, ports, now, rpc } = this.deps;
		const native = this.native();
		const items = await models.SweepItem.findAll({ where: { sweepId: s.id }, order: [["id", "ASC"]] });
		const total = items.reduce((sum, i) => sum + toBaseUnits(i.amount, native.decimals), 0n);
		const amount = toBaseUnits(await requestAmount(models, s.requestId!), native.decimals);
		// The mined variant's outputs: the recorded bytes when it is the last one signed, else the node's copy.
		let outputs: bigint[];
		if (s.rawTx && BtcTransaction.fromHex(s.rawTx).getId() === txid) {
			outputs = BtcTransaction.fromHex(s.rawTx).outs.map(o => BigInt(o.value));
		} else {
			// Without -txindex a mined transaction is only found in its block (remembered by locate()).
			const tx = await rpc<{ vout: Array<{ value: number | string }> }>("getrawtransaction", s.minedBlock ? [txid, true, s.minedBlock] : [txid, true]);
			outputs = tx.vout.map(o => satoshis(String(o.value)));
		}
		const sent = outputs.reduce((a, b) => a + b, 0n);
		const fee = total - sent;
		const change = sent - amount;
		const first = items[0];
		const entry = { organizationId: first.organizationId, mode: first.mode, networkId: network.id, tokenId: native.tokenId, refType: "sweep", refId: s.id, fence: this.fence };
		if (fee > 0n) await ports.record({ ...entry, kind: "fee", amount: `-${fromBaseUnits(fee, native.decimals)}` });
		if (change > 0n) await ports.record({ ...entry, kind: "sweep", amount: `-${fromBaseUnits(change, native.decimals)}` });
		await ports.completeRequest({ id: s.requestId!, txHash: txid, fence: this.fence });
		if (await finishSweep(sequelize, models, this.fence, s, "confirmed", { txHash: txid, feePaid: fee.toString() }, now())) this.deps.onOutcome?.("confirmed");
		this.deps.logger.info(`Withdrawal request ${s.requestId} paid on ${network.slug}: ${txid} (${items.length} checkout(s), change ${fromBaseUnits(change, native.decimals)})`);
	}
}
