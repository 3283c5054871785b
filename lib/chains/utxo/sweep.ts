/**
 * The chain-facing half of the UTXO sweeper (docs/withdrawals.md "UTXO sweeps"): fee rates,
 * signing and broadcasting of the transaction that consolidates settled deposit outputs
 * (Bitcoin, Litecoin: same code, the network's bitcoinjs `Network` as a parameter) into ONE
 * output at the destination. No database: the sweeper service keeps the records.
 *
 * - No change output, ever: the fee is taken from the total, so nothing is left at a deposit
 *   address (or anywhere else) to be swept again.
 * - RBF (BIP-125) on: a stuck sweep is re-signed from the very same inputs with a higher rate
 *   (`bumpFeeRate`), so the original and every replacement spend the same coins and at most one
 *   of them is ever mined.
 * - `buildSweepPsbt` signs and returns the raw transaction and its txid WITHOUT sending it: the
 *   service records both first and broadcasts after; `broadcastRaw` treats "already there" as
 *   success, so a crash between the two re-sends the very same transaction.
 *
 * Amounts are bigint satoshis; fee rates are sat/vB (a number or bigint, counted in whole
 * milli-sat/vB = sat/kvB, the unit Core uses). Private keys are bytes and never appear in a
 * message or a log.
 */
import { Psbt, Transaction, address as btcAddress, payments, type Network } from "bitcoinjs-lib";
import Decimal from "decimal.js";
import * as ecc from "tiny-secp256k1";

export interface SweepInput {
	/** The funding transaction's id (hex, as RPC shows it). */
	txid: string;
	vout: number;
	valueSats: bigint;
	/** The deposit address holding the output (P2WPKH). */
	address: string;
	/** That address's 32-byte private key (derived on demand; used here only to sign). */
	key: Uint8Array;
}

export interface BuildSweepParams {
	network: Network;
	inputs: SweepInput[];
	destination: string;
	/** sat/vB; counted to the milli-sat/vB (rounded up). */
	feeRateSatPerVb: number | bigint;
	/** nSequence 0xfffffffd (BIP-125 replaceable); false: 0xfffffffe. Default true. */
	rbf?: boolean;
	/** Refuse when the fee exceeds this many sats (default: no absolute cap). */
	maxFeeSats?: bigint;
	/** Refuse when the fee exceeds this share of the inputs' total, in percent (default 10). */
	maxFeePercent?: number;
	/**
	 * The network's dust relay fee in sat/kvB, which sets the dust limit of the output: default
	 * 3000 (Bitcoin Core's); Litecoin needs `LITECOIN_DUST_RELAY_FEE_SAT_PER_KVB`.
	 */
	dustRelayFeeSatPerKvB?: bigint;
}

export interface SignedSweep {
	/** The signed transaction: what `broadcastRaw` sends, as many times as needed. */
	hex: string;
	txid: string;
	/** The signed transaction's virtual size (≤ `estimatedVsize`). */
	vsize: number;
	weight: number;
	/** The size the fee was computed from: the exact size with every signature at its longest. */
	estimatedVsize: number;
	feeSats: bigint;
	/** What the single output pays the destination: Σ inputs − fee. */
	outputSats: bigint;
	inputsSats: bigint;
	/** The rate paid, in sat/kvB (the requested rate rounded up to a milli-sat/vB). */
	feeRateSatPerKvB: bigint;
}

/** Why a sweep was not built: the service waits (more deposits, lower fees) instead of failing. */
export class SweepRefused extends Error {
	constructor(
		readonly reason: "dust" | "fee-cap",
		message: string,
	) {
		super(message);
		this.name = "SweepRefused";
	}
}

/** Bitcoin Core's JSON-RPC as a function (test/helpers/litecoind.ts `rpc`); errors carry `code`. */
export type UtxoRpc = <T = unknown>(method: string, params?: unknown[]) => Promise<T>;

export const SEQUENCE_RBF = 0xfffffffd;
export const SEQUENCE_FINAL_NO_RBF = 0xfffffffe;
/** Bitcoin Core's DUST_RELAY_TX_FEE. */
export const DEFAULT_DUST_RELAY_FEE_SAT_PER_KVB = 3000n;
/** Litecoin Core 0.21's: ten times Bitcoin's (2,940 sats P2WPKH, 5,460 P2PKH; checked against litecoind). */
export const LITECOIN_DUST_RELAY_FEE_SAT_PER_KVB = 30_000n;
export const DEFAULT_MAX_FEE_PERCENT = 10;

// ---------------------------------------------------------------------------------------------
// Fee rates
// ---------------------------------------------------------------------------------------------

/** A sat/vB rate in sat/kvB (whole milli-sat/vB), rounded up; refuses ≤ 0, NaN and infinities. */
export function toSatPerKvB(rate: number | bigint): bigint {
	if (typeof rate === "bigint") {
		if (rate <= 0n) throw new RangeError(`utxo-sweep: fee rate must be positive, got ${rate}`);
		return rate * 1000n;
	}
	if (!Number.isFinite(rate) || rate <= 0) throw new RangeError(`utxo-sweep: fee rate must be a positive finite number, got ${rate}`);
	// Decimal(number) reads the shortest decimal form (1.234, not 1.2339999…): no float error.
	return BigInt(new Decimal(rate).mul(1000).ceil().toFixed(0));
}

/** sat/kvB back to sat/vB (exact: at most 3 decimals). */
export function fromSatPerKvB(satPerKvB: bigint): number {
	return Number(satPerKvB) / 1000;
}

/** What `estimatesmartfee` answers: `feerate` in BTC/kvB, or `errors` when it has no estimate (regtest, a fresh node). */
export interface SmartFeeEstimate {
	feerate?: number | string;
	errors?: string[];
	blocks?: number;
}

export interface FeeRatePolicy {
	/** Lowest rate used, and the rate when the node has no estimate (sat/vB). */
	floorSatPerVb: number;
	/** Highest rate used (sat/vB). */
	capSatPerVb: number;
}

/**
 * The rate to sweep at from an `estimatesmartfee` answer, in sat/vB: its `feerate` (BTC/kvB, ×10⁵
 * exactly, rounded up to a milli-sat/vB), at least the floor and at most the cap. No estimate
 * (errors, no feerate, a non-positive one): the floor.
 */
export function feeRateFromEstimate(estimate: SmartFeeEstimate | null | undefined, policy: FeeRatePolicy): number {
	const floor = toSatPerKvB(policy.floorSatPerVb);
	const cap = toSatPerKvB(policy.capSatPerVb);
	if (cap < floor) throw new RangeError("utxo-sweep: fee rate cap below the floor");
	let rate = floor;
	const raw = estimate?.feerate;
	if (raw !== undefined && raw !== null && (typeof raw === "string" || Number.isFinite(raw))) {
		// BTC/kvB × 10⁸ sat/BTC = sat/kvB; String() of a JSON float gives back its decimal text.
		const satPerKvB = BigInt(new Decimal(String(raw)).mul(1e8).ceil().toFixed(0));
		if (satPerKvB > rate) rate = satPerKvB;
	}
	return fromSatPerKvB(rate < cap ? rate : cap);
}

export interface BumpPolicy {
	/** Raise of each step, in percent (default 25). */
	percent?: number;
	/** Least raise of each step, sat/vB: the network's incremental relay fee (default 1, Core's). */
	minIncrementSatPerVb?: number;
}

/**
 * The rate of the `step`-th replacement of a sweep first signed at `rate` (sat/vB): each step
 * adds max(`percent`%, `minIncrementSatPerVb`) to the previous one, rounded up to a
 * milli-sat/vB. Replacements spend the same inputs into the same single output, so their size is
 * the same estimate and the absolute fee rises by at least `minIncrementSatPerVb` × vsize: what
 * BIP-125 (rules 3 and 4) asks when that is the node's incremental relay fee. Step 0 is `rate`.
 */
export function bumpFeeRate(rate: number | bigint, step: number, policy: BumpPolicy = {}): number {
	if (!Number.isInteger(step) || step < 0) throw new RangeError(`bumpFeeRate: step must be a whole number >= 0, got ${step}`);
	const percent = BigInt(policy.percent ?? 25);
	const minIncrement = toSatPerKvB(policy.minIncrementSatPerVb ?? 1);
	let r = toSatPerKvB(rate);
	for (let i = 0; i < step; i++) {
		const byPercent = (r * percent + 99n) / 100n;
		r += byPercent > minIncrement ? byPercent : minIncrement;
	}
	return fromSatPerKvB(r);
}

/** ceil(vsize × rate): what a transaction of `vsize` pays at `satPerKvB` (never less than Core's truncated figure). */
export function feeFor(vsize: number, satPerKvB: bigint): bigint {
	return (BigInt(vsize) * satPerKvB + 999n) / 1000n;
}

// ---------------------------------------------------------------------------------------------
// Sizes and dust
// ---------------------------------------------------------------------------------------------

function varIntSize(n: number): number {
	return n < 0xfd ? 1 : n <= 0xffff ? 3 : n <= 0xffffffff ? 5 : 9;
}

/**
 * Weight of a P2WPKH input with its signature at the longest (low-S DER, 71 bytes, + sighash
 * byte): outpoint 36 + empty scriptSig 1 + sequence 4, ×4; witness: 2 items, 72-byte signature,
 * 33-byte key.
 */
const P2WPKH_INPUT_WEIGHT = (36 + 1 + 4) * 4 + (1 + 1 + 72 + 1 + 33);

/**
 * The virtual size of a sweep of `inputs` P2WPKH outputs into one output with `outputScript`,
 * every signature at its longest, so the signed transaction is never bigger: version 4,
 * segwit marker+flag, input and output counts, the inputs, the output (value 8 + script), locktime 4.
 */
export function estimateSweepVsize(inputs: number, outputScript: Uint8Array): number {
	return estimateVsize(inputs, [outputScript]);
}

/** The same for any number of outputs (a withdrawal request's payment and its change). */
export function estimateVsize(inputs: number, outputScripts: readonly Uint8Array[]): number {
	if (!Number.isSafeInteger(inputs) || inputs < 1) throw new RangeError("utxo-sweep: a sweep needs at least one input");
	const outputs = outputScripts.reduce((sum, script) => sum + 8 + varIntSize(script.length) + script.length, 0);
	const base = 4 + varIntSize(inputs) + varIntSize(outputScripts.length) + outputs + 4;
	const weight = base * 4 + 2 + inputs * P2WPKH_INPUT_WEIGHT;
	return Math.ceil(weight / 4);
}

/**
 * The least an output with `script` may carry to be relayed (Core's GetDustThreshold): the
 * output's size plus the size of spending it (67 vB for a witness program, 148 otherwise) at
 * the dust relay fee: 294 sats P2WPKH, 330 P2WSH/P2TR, 540 P2SH, 546 P2PKH at 3000 sat/kvB
 * (Bitcoin); ten times that at Litecoin's 30,000.
 */
export function dustThreshold(script: Uint8Array, dustRelayFeeSatPerKvB = DEFAULT_DUST_RELAY_FEE_SAT_PER_KVB): bigint {
	const outputSize = 8 + varIntSize(script.length) + script.length;
	const isWitnessProgram = script.length >= 4 && script.length <= 42 && (script[0] === 0x00 || (script[0] >= 0x51 && script[0] <= 0x60)) && script[1] + 2 === script.length;
	const spendSize = isWitnessProgram ? 32 + 4 + 1 + Math.floor(107 / 4) + 4 : 32 + 4 + 1 + 107 + 4;
	return (BigInt(outputSize + spendSize) * dustRelayFeeSatPerKvB) / 1000n;
}

// ---------------------------------------------------------------------------------------------
// Building and signing
// ---------------------------------------------------------------------------------------------

function outputScriptOf(address: string, network: Network, what: string): Buffer {
	try {
		return btcAddress.toOutputScript(address, network);
	} catch {
		throw new Error(`utxo-sweep: ${what} ${JSON.stringify(address)} is not an address of this network`);
	}
}

function publicKeyOf(key: Uint8Array, where: string): Buffer {
	if (!(key instanceof Uint8Array) || key.length !== 32 || !ecc.isPrivate(key)) throw new Error(`utxo-sweep: ${where}: not a valid secp256k1 private key`);
	return Buffer.from(ecc.pointFromScalar(key, true)!);
}

/**
 * The sweep of `inputs` (P2WPKH deposit outputs) into ONE output to `destination` paying
 * Σ inputs − fee, where fee = ceil(`estimateSweepVsize` × rate): signed (SIGHASH_ALL, each input
 * with its own key, checked against its address first), finalized, not sent. Version 2,
 * locktime 0, inputs in the given order. Throws `SweepRefused` when the output would be dust or
 * the fee is over a cap; a plain Error on bad input (no key ever quoted).
 */
export function buildSweepPsbt(p: BuildSweepParams): SignedSweep {
	if (!Array.isArray(p.inputs) || p.inputs.length === 0) throw new Error("utxo-sweep: a sweep needs at least one input");
	const destinationScript = outputScriptOf(p.destination, p.network, "destination");
	const satPerKvB = toSatPerKvB(p.feeRateSatPerVb);
	const { prepared, inputsSats } = prepareInputs(p);
	const estimatedVsize = estimateSweepVsize(p.inputs.length, destinationScript);
	const feeSats = feeFor(estimatedVsize, satPerKvB);
	const outputSats = inputsSats - feeSats;
	checkFee(p, feeSats, inputsSats);
	const dust = dustThreshold(destinationScript, p.dustRelayFeeSatPerKvB);
	if (outputSats < dust) throw new SweepRefused("dust", `utxo-sweep: output of ${outputSats} sats after a fee of ${feeSats} is below the dust limit of ${dust}`);
	const tx = signTransaction(p, prepared, [{ script: destinationScript, value: outputSats }], estimatedVsize);
	return { ...tx, estimatedVsize, feeSats, outputSats, inputsSats, feeRateSatPerKvB: satPerKvB };
}

export interface BuildPaymentParams extends Omit<BuildSweepParams, "destination"> {
	/** Where the exact amount goes (output 0). */
	payee: string;
	amountSats: bigint;
	/** Where the rest goes (output 1), less the fee; dropped into the fee when it would be dust. */
	change: string;
}

export interface SignedPayment extends SignedSweep {
	amountSats: bigint;
	/** 0n when the change would have been dust (it went to the fee). */
	changeSats: bigint;
}

/**
 * A withdrawal request paid from deposit outputs: ONE transaction, exactly `amountSats` to
 * `payee` (output 0) and the rest less the fee to `change` (output 1, the merchant's own
 * address), signed like a sweep and not sent. A change below the dust limit is not created: it
 * goes to the fee (the transaction is then one output smaller). Throws `SweepRefused` ("dust":
 * the inputs do not cover amount + fee, or the payment itself is dust; "fee-cap").
 */
export function buildPaymentPsbt(p: BuildPaymentParams): SignedPayment {
	const payeeScript = outputScriptOf(p.payee, p.network, "payee");
	const changeScript = outputScriptOf(p.change, p.network, "change address");
	if (typeof p.amountSats !== "bigint" || p.amountSats <= 0n) throw new Error("utxo-sweep: a payment needs a positive amount");
	const { prepared, inputsSats } = prepareInputs(p);
	const satPerKvB = toSatPerKvB(p.feeRateSatPerVb);
	if (p.amountSats < dustThreshold(payeeScript, p.dustRelayFeeSatPerKvB)) throw new SweepRefused("dust", `utxo-sweep: a payment of ${p.amountSats} sats is below the dust limit`);
	let estimatedVsize = estimateVsize(p.inputs.length, [payeeScript, changeScript]);
	let feeSats = feeFor(estimatedVsize, satPerKvB);
	let changeSats = inputsSats - p.amountSats - feeSats;
	const outputs = [{ script: payeeScript, value: p.amountSats }];
	if (changeSats >= dustThreshold(changeScript, p.dustRelayFeeSatPerKvB)) {
		outputs.push({ script: changeScript, value: changeSats });
	} else {
		estimatedVsize = estimateVsize(p.inputs.length, [payeeScript]);
		feeSats = inputsSats - p.amountSats;
		changeSats = 0n;
		if (feeSats < feeFor(estimatedVsize, satPerKvB)) throw new SweepRefused("dust", `utxo-sweep: ${inputsSats} sats do not cover ${p.amountSats} and the fee`);
	}
	checkFee(p, feeSats, inputsSats);
	const tx = signTransaction(p, prepared, outputs, estimatedVsize);
	return { ...tx, estimatedVsize, feeSats, outputSats: p.amountSats + changeSats, inputsSats, feeRateSatPerKvB: satPerKvB, amountSats: p.amountSats, changeSats };
}

interface PreparedInput {
	input: SweepInput;
	script: Buffer;
	publicKey: Buffer;
}

/** Checks every input (outpoint once, P2WPKH, its key is its address's) and totals them. */
function prepareInputs(p: Pick<BuildSweepParams, "network" | "inputs">): { prepared: PreparedInput[]; inputsSats: bigint } {
	const { network, inputs } = p;
	if (!Array.isArray(inputs) || inputs.length === 0) throw new Error("utxo-sweep: a sweep needs at least one input");
	const seen = new Set<string>();
	let inputsSats = 0n;
	const prepared = inputs.map((input, i) => {
		const where = `input ${i}`;
		if (typeof input.txid !== "string" || !/^[0-9a-f]{64}$/i.test(input.txid)) throw new Error(`utxo-sweep: ${where}: txid must be 64 hex digits`);
		if (!Number.isSafeInteger(input.vout) || input.vout < 0 || input.vout > 0xffffffff) throw new Error(`utxo-sweep: ${where}: bad vout ${input.vout}`);
		const outpoint = `${input.txid.toLowerCase()}:${input.vout}`;
		if (seen.has(outpoint)) throw new Error(`utxo-sweep: outpoint ${outpoint} twice in one sweep`);
		seen.add(outpoint);
		if (typeof input.valueSats !== "bigint" || input.valueSats <= 0n || input.valueSats > BigInt(Number.MAX_SAFE_INTEGER)) {
			throw new Error(`utxo-sweep: ${outpoint}: valueSats must be a positive bigint`);
		}
		const script = outputScriptOf(input.address, network, `${outpoint} address`);
		const publicKey = publicKeyOf(input.key, outpoint);
		const own = payments.p2wpkh({ pubkey: publicKey, network }).output!;
		if (!(script.length === 22 && script[0] === 0x00 && script[1] === 0x14)) throw new Error(`utxo-sweep: ${outpoint}: only P2WPKH deposit outputs are swept`);
		if (!own.equals(script)) throw new Error(`utxo-sweep: ${outpoint}: the key given is not the key of ${input.address}`);
		inputsSats += input.valueSats;
		return { input, script, publicKey };
	});
	return { prepared, inputsSats };
}

/** The caps on the fee: absolute (`maxFeeSats`) and as a share of the inputs (`maxFeePercent`). */
function checkFee(p: Pick<BuildSweepParams, "maxFeeSats" | "maxFeePercent">, feeSats: bigint, inputsSats: bigint): void {
	const maxPercent = p.maxFeePercent ?? DEFAULT_MAX_FEE_PERCENT;
	if (p.maxFeeSats !== undefined && feeSats > p.maxFeeSats) throw new SweepRefused("fee-cap", `utxo-sweep: fee ${feeSats} sats above the cap of ${p.maxFeeSats}`);
	if (!(maxPercent > 0)) throw new RangeError("utxo-sweep: maxFeePercent must be positive");
	// fee / inputs > percent / 100, in hundredths of a percent to stay in integers.
	if (feeSats * 10_000n > inputsSats * BigInt(Math.round(maxPercent * 100))) {
		throw new SweepRefused("fee-cap", `utxo-sweep: fee ${feeSats} sats is more than ${maxPercent}% of the ${inputsSats} sats swept`);
	}
}

/** Version 2, locktime 0, inputs in order (RBF unless `rbf: false`), the outputs given; signed, verified, finalized. */
function signTransaction(p: Pick<BuildSweepParams, "network" | "rbf">, prepared: PreparedInput[], outputs: Array<{ script: Buffer; value: bigint }>, estimatedVsize: number) {
	const sequence = p.rbf === false ? SEQUENCE_FINAL_NO_RBF : SEQUENCE_RBF;
	const psbt = new Psbt({ network: p.network });
	psbt.setVersion(2);
	psbt.setLocktime(0);
	for (const { input, script } of prepared) {
		psbt.addInput({ hash: input.txid, index: input.vout, sequence, witnessUtxo: { script, value: Number(input.valueSats) } });
	}
	for (const o of outputs) psbt.addOutput({ script: o.script, value: Number(o.value) });
	prepared.forEach(({ input, publicKey }, i) => {
		const key = input.key;
		psbt.signInput(i, { publicKey, sign: (hash: Buffer) => Buffer.from(ecc.sign(hash, key)) });
	});
	const verify = (pubkey: Buffer, hash: Buffer, signature: Buffer) => ecc.verify(hash, pubkey, signature);
	prepared.forEach((_, i) => {
		if (!psbt.validateSignaturesOfInput(i, verify)) throw new Error(`utxo-sweep: signature of input ${i} does not verify`);
	});
	psbt.finalizeAllInputs();
	// Our own caps were applied above; bitcoinjs' fixed 5000 sat/vB check would only get in the way.
	const tx = psbt.extractTransaction(true);
	const vsize = tx.virtualSize();
	if (vsize > estimatedVsize) throw new Error(`utxo-sweep: signed vsize ${vsize} above the estimate ${estimatedVsize}`);
	return { hex: tx.toHex(), txid: tx.getId(), vsize, weight: tx.weight() };
}

// ---------------------------------------------------------------------------------------------
// Broadcasting
// ---------------------------------------------------------------------------------------------

/** Core's answers for a transaction it already has: in the mempool (older versions) or mined with outputs unspent (-27). */
const ALREADY_THERE = /already in (the )?block ?chain|txn-already-in-mempool|txn-already-known|already have transaction|outputs already in utxo set/i;
/** Mined and every output since spent: Core can no longer tell it from a double spend. */
const INPUTS_GONE = /missingorspent|missing-inputs|missing inputs/i;
const RPC_VERIFY_ALREADY_IN_CHAIN = -27;

/**
 * `sendrawtransaction`, idempotent: a node that already has this transaction (in its mempool, or
 * mined: "Transaction already in block chain") counts as success, so re-sending a recorded sweep
 * after a crash is harmless. When the node says its inputs are missing or spent, the transaction
 * counts as sent only if the node still finds it (`getrawtransaction`: the mempool, or any block
 * with -txindex); otherwise the error stands (a replacement was mined instead, or the inputs
 * were never there). Resolves with the txid; anything else throws the node's error.
 */
export async function broadcastRaw(rpc: UtxoRpc, hex: string): Promise<string> {
	const txid = Transaction.fromHex(hex).getId();
	try {
		const returned = await rpc<string>("sendrawtransaction", [hex]);
		if (typeof returned === "string" && returned !== txid) throw new Error(`broadcastRaw: the node answered txid ${returned} for ${txid}`);
		return txid;
	} catch (err) {
		const e = err as { message?: unknown; code?: unknown };
		const text = typeof e?.message === "string" ? e.message : "";
		if (e?.code === RPC_VERIFY_ALREADY_IN_CHAIN || ALREADY_THERE.test(text)) return txid;
		if (INPUTS_GONE.test(text)) {
			const known = await rpc<{ txid?: string }>("getrawtransaction", [txid, true]).catch(() => null);
			if (known?.txid === txid) return txid;
		}
		throw err;
	}
}
