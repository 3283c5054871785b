/**
 * A withdrawal request's transaction on a UTXO chain (lib/chains/utxo/sweep.ts buildPaymentPsbt,
 * pure): the exact amount to the payee as output 0, the rest less the fee to the change address
 * as output 1, a dust change dropped into the fee, and refusals when the inputs do not cover it.
 */
import { address as btcAddress, Transaction, payments, type Network } from "bitcoinjs-lib";
import * as ecc from "tiny-secp256k1";
import { bitcoinCodec, bitcoinjsNetwork } from "../../../../lib/chains/utxo/codec";
import { buildPaymentPsbt, dustThreshold, estimateVsize, feeFor, LITECOIN_DUST_RELAY_FEE_SAT_PER_KVB, SweepRefused } from "../../../../lib/chains/utxo/sweep";
import { ABANDON_SEED } from "../fixtures";

const NETWORK: Network = bitcoinjsNetwork({ isTestnet: true, bitcoinNetwork: "litecoin-regtest" });

async function keyed(index: number) {
	const key = await bitcoinCodec.derivePrivateKey(ABANDON_SEED, { isTestnet: true, bitcoinNetwork: "regtest" }, index);
	const { address } = payments.p2wpkh({ pubkey: Buffer.from(ecc.pointFromScalar(key, true)!), network: NETWORK });
	return { key, address: address! };
}

describe("buildPaymentPsbt", () => {
	const txid = (n: number) => n.toString(16).padStart(64, "0");

	it("pays the exact amount (output 0) and sends the rest less the fee to the change address (output 1)", async () => {
		const [a, b, payee, change] = await Promise.all([keyed(1), keyed(2), keyed(3), keyed(4)]);
		const inputs = [
			{ txid: txid(1), vout: 0, valueSats: 30_000_000n, ...a },
			{ txid: txid(2), vout: 1, valueSats: 25_000_000n, ...b },
		];
		const signed = buildPaymentPsbt({ network: NETWORK, inputs, payee: payee.address, amountSats: 40_000_000n, change: change.address, feeRateSatPerVb: 2, dustRelayFeeSatPerKvB: LITECOIN_DUST_RELAY_FEE_SAT_PER_KVB });
		const tx = Transaction.fromHex(signed.hex);
		expect(tx.outs.map(o => [btcAddress.fromOutputScript(o.script, NETWORK), BigInt(o.value)])).toEqual([
			[payee.address, 40_000_000n],
			[change.address, 15_000_000n - signed.feeSats],
		]);
		const scripts = [payee.address, change.address].map(x => btcAddress.toOutputScript(x, NETWORK));
		expect(signed.feeSats).toBe(feeFor(estimateVsize(2, scripts), 2000n));
		expect(signed.changeSats + signed.amountSats + signed.feeSats).toBe(55_000_000n);
		expect(tx.ins.map(i => i.sequence)).toEqual([0xfffffffd, 0xfffffffd]);
	});

	it("gives a change below the dust limit to the fee, and refuses inputs that do not cover amount and fee", async () => {
		const [a, payee, change] = await Promise.all([keyed(1), keyed(3), keyed(4)]);
		const script = btcAddress.toOutputScript(payee.address, NETWORK);
		const oneOutputFee = feeFor(estimateVsize(1, [script]), 2000n);
		const dust = dustThreshold(btcAddress.toOutputScript(change.address, NETWORK), LITECOIN_DUST_RELAY_FEE_SAT_PER_KVB);
		// What is left after the amount is above one output's fee but leaves a change below dust.
		const value = 10_000_000n + oneOutputFee + dust / 2n;
		const signed = buildPaymentPsbt({ network: NETWORK, inputs: [{ txid: txid(1), vout: 0, valueSats: value, ...a }], payee: payee.address, amountSats: 10_000_000n, change: change.address, feeRateSatPerVb: 2, dustRelayFeeSatPerKvB: LITECOIN_DUST_RELAY_FEE_SAT_PER_KVB });
		const tx = Transaction.fromHex(signed.hex);
		expect(tx.outs.map(o => BigInt(o.value))).toEqual([10_000_000n]);
		expect([signed.changeSats, signed.feeSats]).toEqual([0n, value - 10_000_000n]);
		const short = () => buildPaymentPsbt({ network: NETWORK, inputs: [{ txid: txid(1), vout: 0, valueSats: 10_000_000n + oneOutputFee - 1n, ...a }], payee: payee.address, amountSats: 10_000_000n, change: change.address, feeRateSatPerVb: 2, dustRelayFeeSatPerKvB: LITECOIN_DUST_RELAY_FEE_SAT_PER_KVB });
		expect(short).toThrow(SweepRefused);
	});
});
