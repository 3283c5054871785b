/**
 * watcher-utxo: the UTXO source's matching cost. Synthetic `getblock <hash> 2` answers (the
 * shape litecoind/bitcoind print, compact JSON) of UTXO_BENCH_OUTPUTS outputs (default 2,000,
 * P2WPKH, 2 outputs a transaction) are parsed exactly (values quoted, lib/chains/utxo/source.ts)
 * and matched against UTXO_BENCH_ADDRESSES watched deposit addresses (default 100,000; 100 of
 * the outputs pay one of them). Reports the one-off script index build, then outputs per second
 * of parse + match per block (target ≥ 10,000/s). No node needed: the RPC round trip is not in it.
 *
 *   npm run build && node dist/bench/watcher-utxo.js
 */
import crypto from "node:crypto";
import { payments } from "bitcoinjs-lib";
import { bitcoinjsNetwork } from "../lib/chains/utxo/codec";
import { createUtxoSource, parseRpcReply, type RawBlock } from "../lib/chains/utxo/source";
import { envInt, runMain } from "./common";

const ADDRESSES = envInt("UTXO_BENCH_ADDRESSES", 100_000, 1);
const OUTPUTS = envInt("UTXO_BENCH_OUTPUTS", 2_000, 2);
const BLOCKS = envInt("UTXO_BENCH_BLOCKS", 20, 1);
const network = bitcoinjsNetwork({ isTestnet: true, bitcoinNetwork: "litecoin-regtest" });

const p2wpkh = () => {
	const hash = crypto.randomBytes(20);
	const p = payments.p2wpkh({ hash, network });
	return { address: p.address!, hex: p.output!.toString("hex") };
};

function blockText(height: number, paid: string[]): string {
	const tx = [];
	for (let i = 0; i < OUTPUTS / 2; i++) {
		const vout = [0, 1].map(n => {
			const k = i * 2 + n;
			const out = k % Math.floor(OUTPUTS / paid.length) === 0 && paid.length ? { hex: paid[(k / Math.floor(OUTPUTS / paid.length)) % paid.length] } : { hex: p2wpkh().hex };
			return `{"ismweb":false,"value":${(k % 97) + 0.12345678},"n":${n},"scriptPubKey":{"asm":"0 x","hex":"${out.hex}","reqSigs":1,"type":"witness_v0_keyhash","addresses":["x"]}}`;
		});
		tx.push(`{"txid":"${crypto.randomBytes(32).toString("hex")}","hash":"h","version":2,"size":222,"vsize":141,"weight":561,"locktime":0,"vin":[{"ismweb":false,"txid":"${crypto.randomBytes(32).toString("hex")}","vout":0,"scriptSig":{"asm":"","hex":""},"sequence":4294967293}],"vout":[${vout.join(",")}],"hex":"00"}`);
	}
	return `{"result":{"hash":"${crypto.randomBytes(32).toString("hex")}","height":${height},"time":1,"tx":[${tx.join(",")}]},"error":null,"id":1}`;
}

runMain("watcher-utxo", async () => {
	const watched = new Set<string>();
	const scripts: string[] = [];
	for (let i = 0; i < ADDRESSES; i++) {
		const a = p2wpkh();
		watched.add(a.address);
		if (i < 100) scripts.push(a.hex);
	}
	const texts = Array.from({ length: BLOCKS }, (_, i) => blockText(i + 1, scripts));
	const source = createUtxoSource({ networkId: "bench", rpcUrl: "http://127.0.0.1:1/", network });
	const tokens = [{ tokenId: "ltc", contractAddress: "", decimals: 8 }];
	let t = performance.now();
	source.matchBlock({ hash: "x", height: 0, time: 0, tx: [] }, { addresses: watched, tokens }, 0);
	const indexMs = performance.now() - t;
	let found = 0;
	t = performance.now();
	for (const [i, text] of texts.entries()) {
		const block = parseRpcReply<{ result: RawBlock }>(text).result;
		found += source.matchBlock(block, { addresses: watched, tokens }, i + 1).length;
	}
	const ms = performance.now() - t;
	const perSecond = Math.round((OUTPUTS * BLOCKS) / (ms / 1000));
	console.log(`watcher-utxo: script index of ${ADDRESSES} addresses built once in ${indexMs.toFixed(0)} ms`);
	console.log(`watcher-utxo: ${BLOCKS} blocks x ${OUTPUTS} outputs (${(texts[0].length / 1024).toFixed(0)} KB each) parsed exactly + matched against ${ADDRESSES} addresses in ${ms.toFixed(0)} ms: ${perSecond} outputs/s (target >= 10,000/s); ${found} payments found (${100 * BLOCKS} expected)`);
	await source.close();
});
