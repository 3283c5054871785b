/**
 * The UTXO sweeper's loop for one Bitcoin-family network (docs/withdrawals.md "UTXO sweeper"):
 * settled checkouts' credited outputs that are still unspent are consolidated, per merchant and
 * destination, into ONE transaction with ONE output (no change is ever left at a deposit
 * address), RBF on, signed with deposit keys derived on demand (lib/chains/utxo-sweep.ts). The
 * same records as the EVM sweeper (lib/sweeps/store.ts): planned -> signed (bytes recorded
 * before broadcast) -> broadcast -> confirmed / failed; a sweep stuck in the mempool is signed
 * again over the same inputs at a higher fee rate (a replacement: only one can be mined).
 */
import { address as btcAddress, Transaction as BtcTransaction } from "bitcoinjs-lib";
import type { Network } from "bitcoinjs-lib";
import type { Sequelize } from "sequelize";
import * as utxo from "../chains/utxo-sweep";
import { satoshis } from "../chains/utxo-source";
import { fromBaseUnits, toBaseUnits } from "../money";
import type { Models } from "../../models";
import type { Sweep } from "../../models/sweep.model";
import type { SweepOutcome } from "../metrics";
import { finishSweep, openKeyOf, openKeys, planSweep, recordBroadcast, recordSigned, sweepsInFlight, sweptTransactions } from "./store";
import type { SweepableCheckout, SweepNetwork } from "./runner";
import type { UtxoRpcCall } from "./utxo-rpc";

/** What the UTXO sweeper asks of other services. */
export interface UtxoSweeperPorts {
	sweepable(p: { networkId: string }): Promise<SweepableCheckout[]>;
	creditedOutputs(p: { transactionIds: string[] }): Promise<Array<{ transactionId: string; txHash: string; logIndex: number; tokenId: string; amount: string }>>;
	destination(p: { organizationId: string; chainType: string; transactionId: string }): Promise<string | null>;
	record(p: { organizationId: string; mode: string; networkId: string; tokenId: string; kind: "sweep" | "fee"; amount: string; refType: string; refId: string }): Promise<unknown>;
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
	depositKey(index: number): Promise<Uint8Array>;
	ports: UtxoSweeperPorts;
	now: () => Date;
	logger: { info(...a: unknown[]): void; warn(...a: unknown[]): void };
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

export class UtxoSweepRunner {
	constructor(private readonly deps: UtxoSweepRunnerDeps) {}

	async step(): Promise<void> {
		for (const s of await sweepsInFlight(this.deps.models, this.deps.network.id)) {
			await this.advance(s).catch(err => {
				this.deps.logger.warn(`Sweep ${s.id} on ${this.deps.network.slug}: ${(err as Error).message}`);
				this.deps.onFailure?.(err);
			});
		}
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
		return utxo.buildSweepPsbt({ network: this.deps.btcNetwork, inputs: keyed, destination: s.toAddress, feeRateSatPerVb: await this.feeRate(step), dustRelayFeeSatPerKvB: this.deps.dustRelayFeeSatPerKvB });
	}

	private async advance(s: Sweep): Promise<void> {
		const { rpc, network, logger, now } = this.deps;
		if (s.status === "planned") {
			const signed = await this.sign(s, 0);
			await recordSigned(s, { raw: signed.hex, hash: signed.txid }, 0, now());
		}
		if (s.status === "signed") {
			await utxo.broadcastRaw(rpc, s.rawTx!);
			await recordBroadcast(s, now());
			this.deps.onOutcome?.("broadcast");
			return;
		}
		for (const txid of s.hashes) {
			const out = await rpc<{ confirmations: number; value: string } | null>("gettxout", [txid, 0, true]);
			if (!out) continue;
			if (out.confirmations < network.requiredConfirmations) return;
			await this.confirm(s, txid, satoshis(out.value));
			return;
		}
		if (s.broadcastAt && now().getTime() - s.broadcastAt.getTime() > this.deps.stuckMs * (s.feeStep + 1)) {
			const signed = await this.sign(s, s.feeStep + 1);
			await recordSigned(s, { raw: signed.hex, hash: signed.txid }, s.feeStep + 1, now());
			this.deps.onOutcome?.("replaced");
			logger.info(`Sweep ${s.id} on ${network.slug} stuck: replaced at a higher fee rate (step ${s.feeStep})`);
		}
		await utxo.broadcastRaw(rpc, s.rawTx!).catch(err => logger.warn(`Sweep ${s.id}: broadcast: ${(err as Error).message}`));
	}

	/**
	 * Confirmed: each deposit's `sweep` entry, the transaction's fee as one `fee` entry charged to
	 * the first deposit's sweep (a sweep holds one merchant's deposits), then the sweep closes.
	 */
	private async confirm(s: Sweep, txid: string, outputSats: bigint): Promise<void> {
		const { models, sequelize, network, ports, now } = this.deps;
		const native = this.native();
		const items = await models.SweepItem.findAll({ where: { sweepId: s.id }, order: [["id", "ASC"]] });
		const total = items.reduce((sum, i) => sum + toBaseUnits(i.amount, native.decimals), 0n);
		const fee = total - outputSats;
		for (const [n, item] of items.entries()) {
			const moved = toBaseUnits(item.amount, native.decimals) - (n === 0 ? fee : 0n);
			await ports.record({ organizationId: item.organizationId, mode: item.mode, networkId: network.id, tokenId: native.tokenId, kind: "sweep", amount: `-${fromBaseUnits(moved, native.decimals)}`, refType: "sweep_item", refId: String(item.id) });
		}
		if (fee > 0n) {
			const first = items[0];
			await ports.record({ organizationId: first.organizationId, mode: first.mode, networkId: network.id, tokenId: native.tokenId, kind: "fee", amount: `-${fromBaseUnits(fee, native.decimals)}`, refType: "sweep", refId: s.id });
		}
		if (await finishSweep(sequelize, models, s, "confirmed", { txHash: txid, feePaid: fee.toString() }, now())) this.deps.onOutcome?.("confirmed");
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
		const groups = new Map<string, { destination: string; items: Array<SweepableCheckout & { sats: bigint }> }>();
		for (const c of todo) {
			let sats = 0n;
			for (const o of credited.filter(o => o.transactionId === c.transactionId)) {
				if (await rpc("gettxout", [o.txHash, o.logIndex, true])) sats += toBaseUnits(o.amount, native.decimals);
			}
			if (sats === 0n) continue;
			const destination = await ports.destination({ organizationId: c.organizationId, chainType: this.deps.withdrawalKey, transactionId: c.transactionId });
			if (!destination) continue; // waits at the deposit until the merchant saves settings
			const key = `${c.organizationId}|${destination}`;
			const group = groups.get(key) ?? { destination, items: [] };
			group.items.push({ ...c, sats });
			groups.set(key, group);
		}
		const rate = await this.feeRate(0);
		for (const { destination, items } of groups.values()) {
			// Worth sending only when the one output is above dust after the fee (else it waits for more).
			const script = btcAddress.toOutputScript(destination, this.deps.btcNetwork);
			const fee = utxo.feeFor(utxo.estimateSweepVsize(items.length, script), utxo.toSatPerKvB(rate));
			const total = items.reduce((sum, c) => sum + c.sats, 0n);
			if (total - fee < utxo.dustThreshold(script, this.deps.dustRelayFeeSatPerKvB)) continue;
			const planned = await planSweep(
				sequelize,
				models,
				{
					networkId: network.id,
					kind: "utxo",
					tokenId: native.tokenId,
					fromAddress: UTXO_WALLET,
					toAddress: destination,
					chainNonce: 0,
					items: items.map(c => ({ transactionId: c.transactionId, organizationId: c.organizationId, mode: c.mode, depositAddress: c.depositAddress, derivationIndex: c.derivationIndex, tokenId: native.tokenId, amount: fromBaseUnits(c.sats, native.decimals) })),
				},
				now(),
			);
			if (planned) logger.info(`Sweeper: ${items.length} checkout(s) on ${network.slug} consolidated to the merchant's address (sweep ${planned.id})`);
		}
	}
}
