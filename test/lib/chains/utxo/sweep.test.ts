/**
 * The UTXO sweep primitives: fee maths, sizes and dust (pure), then sweeps on a real
 * `litecoind -regtest`: four deposit outputs (two of them to one address, in one transaction)
 * consolidated into one output, an RBF replacement that takes the first one's place, and
 * re-broadcasts. No database: the node part runs in the sqlite jest project only.
 */
import { Block, Transaction, payments, type Network } from "bitcoinjs-lib";
import Decimal from "decimal.js";
import * as ecc from "tiny-secp256k1";
import { bitcoinCodec } from "../../../../lib/chains/utxo/codec";
import {
	DEFAULT_DUST_RELAY_FEE_SAT_PER_KVB, LITECOIN_DUST_RELAY_FEE_SAT_PER_KVB, SEQUENCE_RBF, SweepRefused, broadcastRaw, bumpFeeRate, buildSweepPsbt, dustThreshold, estimateSweepVsize, feeFor,
	feeRateFromEstimate, toSatPerKvB, type SweepInput,
} from "../../../../lib/chains/utxo/sweep";
import { bitcoinjsNetwork } from "../../../../lib/chains/utxo/codec";
import { startLitecoind, type Litecoind } from "../../../helpers/litecoind";
import { ABANDON_SEED } from "../fixtures";

/** Litecoin regtest address parameters, as the gateway's codec has them (lib/chains/utxo/codec.ts). */
const LITECOIN_REGTEST: Network = bitcoinjsNetwork({ isTestnet: true, bitcoinNetwork: "litecoin-regtest" });
const REGTEST_PARAMS = { isTestnet: true, bitcoinNetwork: "regtest" } as const;

/** A deposit key and its P2WPKH address on Litecoin regtest, derived like the gateway derives deposit keys. */
async function depositKey(index: number): Promise<{ key: Uint8Array; address: string }> {
	const key = await bitcoinCodec.derivePrivateKey(ABANDON_SEED, REGTEST_PARAMS, index);
	const { address } = payments.p2wpkh({ pubkey: Buffer.from(ecc.pointFromScalar(key, true)!), network: LITECOIN_REGTEST });
	return { key, address: address! };
}

/** 8-decimal text of an amount in sats, the way Core prints amounts. */
const coins = (sats: bigint) => `${sats / 100_000_000n}.${(sats % 100_000_000n).toString().padStart(8, "0")}`;
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

describe("fee rates", () => {
	const policy = { floorSatPerVb: 2, capSatPerVb: 50 };

	it("feeRateFromEstimate: BTC/kvB to sat/vB exactly, between the floor and the cap", () => {
		expect(feeRateFromEstimate({ feerate: 0.00012345, blocks: 6 }, policy)).toBe(12.345);
		expect(feeRateFromEstimate({ feerate: 0.0001, blocks: 2 }, policy)).toBe(10);
		expect(feeRateFromEstimate({ feerate: "0.00003001" }, policy)).toBe(3.001);
		expect(feeRateFromEstimate({ feerate: 0.00001, blocks: 6 }, policy)).toBe(2); // 1 sat/vB: the floor
		expect(feeRateFromEstimate({ feerate: 0.01, blocks: 1 }, policy)).toBe(50); // 1000 sat/vB: the cap
		// A float that prints in exponent form, and one below a milli-sat/vB (rounded up).
		expect(feeRateFromEstimate({ feerate: 1e-7 }, { floorSatPerVb: 0.001, capSatPerVb: 10 })).toBe(0.01);
		expect(feeRateFromEstimate({ feerate: 0.000000001 }, { floorSatPerVb: 0.001, capSatPerVb: 10 })).toBe(0.001);
	});

	it("feeRateFromEstimate: no estimate (regtest's errors, nothing, a negative rate) gives the floor", () => {
		expect(feeRateFromEstimate({ errors: ["Insufficient data or no feerate found"], blocks: 0 }, policy)).toBe(2);
		expect(feeRateFromEstimate(null, policy)).toBe(2);
		expect(feeRateFromEstimate({ feerate: -1 }, policy)).toBe(2);
		expect(() => feeRateFromEstimate({}, { floorSatPerVb: 5, capSatPerVb: 4 })).toThrow(/cap below the floor/);
		expect(() => feeRateFromEstimate({}, { floorSatPerVb: 0, capSatPerVb: 4 })).toThrow(/positive/);
	});

	it("bumpFeeRate: + max(25%, 1 sat/vB) a step, rounded up to a milli-sat/vB", () => {
		expect(bumpFeeRate(2, 0)).toBe(2);
		expect(bumpFeeRate(2, 1)).toBe(3);
		expect(bumpFeeRate(2, 2)).toBe(4);
		expect(bumpFeeRate(10, 1)).toBe(12.5);
		expect(bumpFeeRate(10, 2)).toBe(15.625);
		expect(bumpFeeRate(10, 3)).toBe(19.532); // 19.53125 rounded up
		expect(bumpFeeRate(1.234, 1)).toBe(2.234);
		expect(bumpFeeRate(7n, 1)).toBe(8.75);
		expect(bumpFeeRate(10, 1, { percent: 10, minIncrementSatPerVb: 5 })).toBe(15);
		let previous = 1.001;
		for (let step = 1; step <= 20; step++) {
			const next = bumpFeeRate(1.001, step);
			expect(toSatPerKvB(next) - toSatPerKvB(previous)).toBeGreaterThanOrEqual(1000n);
			expect(toSatPerKvB(next) * 100n).toBeGreaterThanOrEqual(toSatPerKvB(previous) * 125n);
			previous = next;
		}
		expect(() => bumpFeeRate(2, -1)).toThrow(/step/);
		expect(() => bumpFeeRate(2, 0.5)).toThrow(/step/);
	});

	it("toSatPerKvB and feeFor: whole milli-sat/vB, fees rounded up", () => {
		expect(toSatPerKvB(1.234)).toBe(1234n);
		expect(toSatPerKvB(3n)).toBe(3000n);
		expect(toSatPerKvB(0.0001)).toBe(1n);
		for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY, 0n, -2n]) expect(() => toSatPerKvB(bad)).toThrow(/positive/);
		expect(feeFor(141, 2000n)).toBe(282n);
		expect(feeFor(141, 1234n)).toBe(174n); // 173.994
		expect(feeFor(1000, 1n)).toBe(1n);
	});
});

describe("sizes and dust", () => {
	const pubkey = Buffer.from(ecc.pointFromScalar(Buffer.alloc(32, 1), true)!);
	const p2wpkh = payments.p2wpkh({ pubkey }).output!;
	const p2pkh = payments.p2pkh({ pubkey }).output!;
	const p2sh = payments.p2sh({ redeem: payments.p2wpkh({ pubkey }) }).output!;
	const p2wsh = payments.p2wsh({ redeem: { output: p2pkh } }).output!;
	const p2tr = payments.p2tr({ internalPubkey: pubkey.subarray(1) }).output!;

	it("dustThreshold: Core's numbers at 3000 sat/kvB", () => {
		expect(dustThreshold(p2wpkh)).toBe(294n);
		expect(dustThreshold(p2pkh)).toBe(546n);
		expect(dustThreshold(p2sh)).toBe(540n);
		expect(dustThreshold(p2wsh)).toBe(330n);
		expect(dustThreshold(p2tr)).toBe(330n);
		expect(DEFAULT_DUST_RELAY_FEE_SAT_PER_KVB).toBe(3_000n);
		expect(dustThreshold(p2wpkh, LITECOIN_DUST_RELAY_FEE_SAT_PER_KVB)).toBe(2_940n);
		expect(dustThreshold(p2pkh, LITECOIN_DUST_RELAY_FEE_SAT_PER_KVB)).toBe(5_460n);
	});

	it("estimateSweepVsize: every signature at its longest (72 bytes with the sighash byte)", () => {
		// weight = 4×(4+1+1+8+1+22+4) + 2 + n×(4×41 + 108)
		expect(estimateSweepVsize(1, p2wpkh)).toBe(110); // 438 / 4 = 109.5
		expect(estimateSweepVsize(4, p2wpkh)).toBe(314); // 1254 / 4 = 313.5
		expect(estimateSweepVsize(4, p2pkh)).toBe(317);
		expect(estimateSweepVsize(253, p2wpkh)).toBe(Math.ceil((4 * (4 + 3 + 1 + 8 + 1 + 22 + 4) + 2 + 253 * 272) / 4));
		expect(() => estimateSweepVsize(0, p2wpkh)).toThrow(/at least one input/);
	});
});

describe("buildSweepPsbt refusals (no node)", () => {
	const fakeTxid = "11".repeat(32);
	let deposit: { key: Uint8Array; address: string };
	let other: { key: Uint8Array; address: string };
	let dest: string;
	beforeAll(async () => {
		deposit = await depositKey(100);
		other = await depositKey(101);
		dest = (await depositKey(102)).address;
	});
	const input = (valueSats: bigint, extra: Partial<SweepInput> = {}): SweepInput => ({ txid: fakeTxid, vout: 0, valueSats, ...deposit, ...extra });

	it("refuses an output below the dust limit, and a fee over either cap", () => {
		// 1 input at 2 sat/vB: fee 220, 500 − 220 = 280 < 294.
		const dust = () => buildSweepPsbt({ network: LITECOIN_REGTEST, inputs: [input(500n)], destination: dest, feeRateSatPerVb: 2, maxFeePercent: 100 });
		expect(dust).toThrow(SweepRefused);
		expect(dust).toThrow(/below the dust limit of 294/);
		const ok = buildSweepPsbt({ network: LITECOIN_REGTEST, inputs: [input(514n)], destination: dest, feeRateSatPerVb: 2, maxFeePercent: 100 });
		expect(ok.outputSats).toBe(294n);
		expect(() => buildSweepPsbt({ network: LITECOIN_REGTEST, inputs: [input(100_000n)], destination: dest, feeRateSatPerVb: 10, maxFeeSats: 1_099n })).toThrow(
			/fee 1100 sats above the cap of 1099/,
		);
		// Default cap: 10% of what is swept.
		expect(() => buildSweepPsbt({ network: LITECOIN_REGTEST, inputs: [input(10_999n)], destination: dest, feeRateSatPerVb: 10 })).toThrow(/more than 10%/);
		expect(buildSweepPsbt({ network: LITECOIN_REGTEST, inputs: [input(11_000n)], destination: dest, feeRateSatPerVb: 10 }).feeSats).toBe(1_100n);
		try {
			buildSweepPsbt({ network: LITECOIN_REGTEST, inputs: [input(500n)], destination: dest, feeRateSatPerVb: 2, maxFeePercent: 100 });
		} catch (e) {
			expect((e as SweepRefused).reason).toBe("dust");
		}
	});

	it("refuses a key that is not its address's, bad keys, duplicates and foreign addresses, never quoting a key", () => {
		const cases: Array<[() => unknown, RegExp]> = [
			[() => buildSweepPsbt({ network: LITECOIN_REGTEST, inputs: [input(100_000n, { key: other.key })], destination: dest, feeRateSatPerVb: 2 }), /not the key of/],
			[() => buildSweepPsbt({ network: LITECOIN_REGTEST, inputs: [input(100_000n, { key: new Uint8Array(32) })], destination: dest, feeRateSatPerVb: 2 }), /not a valid secp256k1 private key/],
			[() => buildSweepPsbt({ network: LITECOIN_REGTEST, inputs: [input(100_000n), input(100_000n)], destination: dest, feeRateSatPerVb: 2 }), /twice in one sweep/],
			[() => buildSweepPsbt({ network: LITECOIN_REGTEST, inputs: [input(100_000n)], destination: "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq", feeRateSatPerVb: 2 }), /not an address of this network/],
			[() => buildSweepPsbt({ network: LITECOIN_REGTEST, inputs: [], destination: dest, feeRateSatPerVb: 2 }), /at least one input/],
			[() => buildSweepPsbt({ network: LITECOIN_REGTEST, inputs: [input(0n)], destination: dest, feeRateSatPerVb: 2 }), /positive bigint/],
			[() => buildSweepPsbt({ network: LITECOIN_REGTEST, inputs: [input(100_000n, { txid: "zz" })], destination: dest, feeRateSatPerVb: 2 }), /64 hex/],
		];
		for (const [build, message] of cases) {
			let caught: Error | undefined;
			try {
				build();
			} catch (e) {
				caught = e as Error;
			}
			expect(caught?.message).toMatch(message);
			expect(caught?.message).not.toContain(hex(deposit.key));
			expect(caught?.message).not.toContain(hex(other.key));
		}
	});
});

/** Nothing here depends on the backend: run once (sqlite project), not twice. */
const describeChain = process.env.TEST_BACKEND === "mysql" ? describe.skip : describe;

describeChain("sweeps on litecoind -regtest", () => {
	let node: Litecoind;
	let destination: string;
	let legacyDestination: string;
	const deposits: SweepInput[] = [];
	let fundedTotal = 0n;

	beforeAll(async () => {
		// Litecoin Core replaces mempool transactions only with -mempoolreplacement=1 (default 0,
		// unlike Bitcoin Core): see the last test for what a default node does.
		node = await startLitecoind({ args: ["-mempoolreplacement=1"] });
		const receiver = await node.createWallet("receiver");
		destination = await receiver<string>("getnewaddress", ["", "bech32"]);
		legacyDestination = await receiver<string>("getnewaddress", ["", "legacy"]);

		// One funding transaction: two outputs to deposit 0, one each to deposits 1 and 2.
		const keys = await Promise.all([0, 1, 2].map(depositKey));
		const plan: Array<[number, bigint]> = [[0, 30_000_000n], [0, 20_000_000n], [1, 15_000_000n], [2, 5_000_123n]];
		const draft = new Transaction();
		draft.version = 2;
		for (const [i, sats] of plan) draft.addOutput(payments.p2wpkh({ address: keys[i].address, network: LITECOIN_REGTEST }).output!, Number(sats));
		const funded = await node.wallet<{ hex: string }>("fundrawtransaction", [draft.toHex(), { changePosition: plan.length }, false]);
		const signed = await node.wallet<{ hex: string; complete: boolean }>("signrawtransactionwithwallet", [funded.hex]);
		expect(signed.complete).toBe(true);
		const fundingTxid = await node.rpc<string>("sendrawtransaction", [signed.hex]);
		const fundingTx = Transaction.fromHex(signed.hex);
		plan.forEach(([i, sats], vout) => {
			expect(BigInt(fundingTx.outs[vout].value)).toBe(sats);
			deposits.push({ txid: fundingTxid, vout, valueSats: sats, ...keys[i] });
			fundedTotal += sats;
		});
		await node.mine(6); // settled
	}, 120_000);
	afterAll(async () => {
		await node?.stop();
	});

	/** Core's own view of a mempool transaction, amounts as printed (exact). */
	async function mempoolEntry(txid: string): Promise<{ vsize: number; base: string; replaceable: boolean }> {
		const raw = await node.rpcRaw("getmempoolentry", [txid]);
		const parsed = JSON.parse(raw) as { error: unknown; result: { vsize: number; "bip125-replaceable": boolean } };
		if (parsed.error) throw new Error(JSON.stringify(parsed.error));
		return { vsize: parsed.result.vsize, base: /"base":([0-9.]+)/.exec(raw)![1], replaceable: parsed.result["bip125-replaceable"] };
	}

	it("consolidates four deposit outputs into one output; an RBF replacement takes its place and alone is mined", async () => {
		// Regtest has no fee estimate: the floor applies.
		const estimate = await node.rpc<{ feerate?: number; errors?: string[] }>("estimatesmartfee", [6]);
		expect(estimate.feerate).toBeUndefined();
		expect(estimate.errors?.length).toBeGreaterThan(0);
		const rate = feeRateFromEstimate(estimate, { floorSatPerVb: 2, capSatPerVb: 100 });
		expect(rate).toBe(2);

		const first = buildSweepPsbt({ network: LITECOIN_REGTEST, inputs: deposits, destination, feeRateSatPerVb: rate });
		expect(first.inputsSats).toBe(fundedTotal);
		expect(first.feeSats).toBe(feeFor(first.estimatedVsize, 2000n));
		expect(first.outputSats).toBe(fundedTotal - first.feeSats);
		expect(first.vsize).toBeLessThanOrEqual(first.estimatedVsize);
		expect(first.estimatedVsize - first.vsize).toBeLessThanOrEqual(deposits.length);

		const decoded = await node.rpc<{ txid: string; vsize: number; vin: Array<{ sequence: number }>; vout: unknown[] }>("decoderawtransaction", [first.hex]);
		expect(decoded.txid).toBe(first.txid);
		expect(decoded.vsize).toBe(first.vsize);
		expect(decoded.vout).toHaveLength(1);
		expect(decoded.vin.map(v => v.sequence)).toEqual([SEQUENCE_RBF, SEQUENCE_RBF, SEQUENCE_RBF, SEQUENCE_RBF]);

		expect(await broadcastRaw(node.rpc, first.hex)).toBe(first.txid);
		expect(await broadcastRaw(node.rpc, first.hex)).toBe(first.txid); // already in the mempool: success
		const entry = await mempoolEntry(first.txid);
		expect(entry).toEqual({ vsize: first.vsize, base: coins(first.feeSats), replaceable: true });

		// Stuck: the same inputs re-signed one step up.
		const bumpedRate = bumpFeeRate(rate, 1);
		expect(bumpedRate).toBe(3);
		const replacement = buildSweepPsbt({ network: LITECOIN_REGTEST, inputs: deposits, destination, feeRateSatPerVb: bumpedRate });
		expect(replacement.txid).not.toBe(first.txid);
		expect(replacement.feeSats - first.feeSats).toBeGreaterThanOrEqual(BigInt(replacement.vsize)); // BIP-125 rule 4 at 1 sat/vB
		expect(await broadcastRaw(node.rpc, replacement.hex)).toBe(replacement.txid);
		const mempool = await node.rpc<string[]>("getrawmempool");
		expect(mempool).toContain(replacement.txid);
		expect(mempool).not.toContain(first.txid);
		expect((await mempoolEntry(replacement.txid)).base).toBe(coins(replacement.feeSats));
		// The replaced one cannot come back: it pays less than what now holds its inputs.
		await expect(broadcastRaw(node.rpc, first.hex)).rejects.toMatchObject({ code: -26 });

		const [blockHash] = await node.mine(1);
		const block = Block.fromHex(await node.rpc<string>("getblock", [blockHash, 0]));
		const ids = block.transactions!.map(t => t.getId());
		expect(ids).toContain(replacement.txid);
		expect(ids).not.toContain(first.txid);
		expect(await node.rpc<string[]>("getrawmempool")).toEqual([]);
		const minedSweep = block.transactions!.find(t => t.getId() === replacement.txid)!;
		expect(minedSweep.outs).toHaveLength(1);
		expect(BigInt(minedSweep.outs[0].value)).toBe(fundedTotal - replacement.feeSats);

		// The destination's wallet sees exactly total − fee.
		// (read as the reply's text: the harness's JSON.parse would turn the amount into a float)
		const receivedRaw = await (
			await fetch(`${node.rpcEndpoint}wallet/receiver`, {
				method: "POST",
				headers: { authorization: `Basic ${Buffer.from(`${node.rpcUser}:${node.rpcPassword}`).toString("base64")}` },
				body: JSON.stringify({ jsonrpc: "1.0", id: 1, method: "getreceivedbyaddress", params: [destination, 1] }),
			})
		).text();
		expect(receivedRaw).toContain(`"result":${coins(fundedTotal - replacement.feeSats)},`);

		// Re-sending what was mined is success; re-sending the replaced one is not.
		expect(await broadcastRaw(node.rpc, replacement.hex)).toBe(replacement.txid);
		await expect(broadcastRaw(node.rpc, first.hex)).rejects.toThrow(/missingorspent|missing/i);
		// The deposits are spent: nothing is left at a deposit address.
		for (const d of deposits) expect(await node.rpc("gettxout", [d.txid, d.vout, true])).toBeNull();
	});

	it("sweeps one output to a legacy (P2PKH) destination with RBF off; re-sending it once mined is success", async () => {
		const d = await depositKey(3);
		const txid = await node.wallet<string>("sendtoaddress", [d.address, "0.0123"]);
		const funding = Transaction.fromHex((await node.wallet<{ hex: string }>("gettransaction", [txid])).hex);
		const vout = funding.outs.findIndex(o => o.script.equals(payments.p2wpkh({ address: d.address, network: LITECOIN_REGTEST }).output!));
		await node.mine(1);

		const sweep = buildSweepPsbt({
			network: LITECOIN_REGTEST,
			inputs: [{ txid, vout, valueSats: 1_230_000n, ...d }],
			destination: legacyDestination,
			feeRateSatPerVb: 1.5,
			rbf: false,
		});
		expect(sweep.estimatedVsize).toBe(113);
		expect(sweep.feeSats).toBe(170n); // 113 × 1.5 = 169.5, rounded up
		const decoded = await node.rpc<{ vsize: number; vin: Array<{ sequence: number }>; vout: Array<{ scriptPubKey: { type: string } }> }>("decoderawtransaction", [sweep.hex]);
		expect(decoded.vin[0].sequence).toBe(0xfffffffe);
		expect(decoded.vout.map(o => o.scriptPubKey.type)).toEqual(["pubkeyhash"]);
		expect(decoded.vsize).toBe(sweep.vsize);
		await broadcastRaw(node.rpc, sweep.hex);
		expect((await mempoolEntry(sweep.txid)).replaceable).toBe(false);
		await node.mine(1);
		expect(await broadcastRaw(node.rpc, sweep.hex)).toBe(sweep.txid); // "Transaction already in block chain"
	});

	it("agrees with litecoind on dust at Litecoin's dust relay fee (30,000 sat/kvB): 2,939 sats to P2WPKH is dust, 2,940 is not", async () => {
		const d = await depositKey(6);
		const txid = await node.wallet<string>("sendtoaddress", [d.address, "0.0001"]);
		const funding = Transaction.fromHex((await node.wallet<{ hex: string }>("gettransaction", [txid])).hex);
		const vout = funding.outs.findIndex(o => o.script.equals(payments.p2wpkh({ address: d.address, network: LITECOIN_REGTEST }).output!));
		const value = BigInt(funding.outs[vout].value);
		expect(value).toBe(10_000n);
		await node.mine(1);
		const input = [{ txid, vout, valueSats: value, ...d }];
		// Rates that leave exactly `out` sats of `value` after the fee of the 110-vB sweep.
		const at = (out: bigint) => new Decimal((value - out).toString()).div(110).toDecimalPlaces(3, Decimal.ROUND_DOWN).toNumber();
		const sweep = (out: bigint, dustRelayFeeSatPerKvB?: bigint) =>
			buildSweepPsbt({ network: LITECOIN_REGTEST, inputs: input, destination, feeRateSatPerVb: at(out), maxFeePercent: 100, dustRelayFeeSatPerKvB });
		const accept = async (hex: string) => (await node.rpc<Array<{ allowed: boolean; "reject-reason"?: string }>>("testmempoolaccept", [[hex]]))[0];

		const ok = sweep(2_940n, LITECOIN_DUST_RELAY_FEE_SAT_PER_KVB);
		expect(ok.outputSats).toBe(2_940n);
		expect(await accept(ok.hex)).toMatchObject({ allowed: true });
		expect(() => sweep(2_939n, LITECOIN_DUST_RELAY_FEE_SAT_PER_KVB)).toThrow(/below the dust limit of 2940/);
		// At Bitcoin's default (3,000 sat/kvB) our check lets 2,939 through, and litecoind refuses it:
		// the service must pass the network's own dust relay fee.
		const dusty = sweep(2_939n);
		expect(dusty.outputSats).toBe(2_939n);
		expect(await accept(dusty.hex)).toMatchObject({ allowed: false, "reject-reason": "dust" });
	});
});

describeChain("a default litecoind (-mempoolreplacement=0)", () => {
	let node: Litecoind;
	beforeAll(async () => {
		node = await startLitecoind({ premine: 101 });
	}, 120_000);
	afterAll(async () => {
		await node?.stop();
	});

	it("keeps the first sweep and refuses the replacement: on Litecoin a bump reaches only nodes that opted in", async () => {
		const d = await depositKey(4);
		const txid = await node.wallet<string>("sendtoaddress", [d.address, "0.5"]);
		const funding = Transaction.fromHex((await node.wallet<{ hex: string }>("gettransaction", [txid])).hex);
		const vout = funding.outs.findIndex(o => o.value === 50_000_000);
		await node.mine(1);
		const inputs = [{ txid, vout, valueSats: 50_000_000n, ...d }];
		const destination = (await depositKey(5)).address;
		const first = buildSweepPsbt({ network: LITECOIN_REGTEST, inputs, destination, feeRateSatPerVb: 1 });
		const bumped = buildSweepPsbt({ network: LITECOIN_REGTEST, inputs, destination, feeRateSatPerVb: bumpFeeRate(1, 3) });
		await broadcastRaw(node.rpc, first.hex);
		expect((await node.rpc<{ "bip125-replaceable": boolean }>("getmempoolentry", [first.txid]))["bip125-replaceable"]).toBe(true);
		await expect(broadcastRaw(node.rpc, bumped.hex)).rejects.toMatchObject({ code: -26, message: expect.stringMatching(/txn-mempool-conflict/) });
		expect(await node.rpc<string[]>("getrawmempool")).toEqual([first.txid]);
	});
});
