/** The UTXO chain source: exact amounts (pure) and every call against a real litecoind -regtest. */
import { codecFor } from "../../../../lib/chains";
import { bitcoinjsNetwork } from "../../../../lib/chains/utxo/codec";
import { createUtxoSource, parseRpcReply, quoteValues, satoshis, ScriptIndex, type UtxoSource } from "../../../../lib/chains/utxo/source";
import { freePort } from "../../../helpers/anvil";
import { startLitecoind, type Litecoind } from "../../../helpers/litecoind";
import { ABANDON_SEED } from "../fixtures";

const RLTC = { isTestnet: true, bitcoinNetwork: "litecoin-regtest" } as const;
const NETWORK = bitcoinjsNetwork(RLTC);
const TOKENS = [{ tokenId: "ltc", contractAddress: "", decimals: 8 }];

describe("exact amounts", () => {
	it("converts the node's fixed-point decimals to satoshis without floats", () => {
		expect(satoshis("0.10000000")).toBe(10_000_000n);
		expect(satoshis("0.1")).toBe(10_000_000n);
		expect(satoshis("0.00000001")).toBe(1n);
		expect(satoshis("20999999.97690000")).toBe(2_099_999_997_690_000n);
		expect(satoshis("84000000.00000000")).toBe(8_400_000_000_000_000n);
		for (const bad of ["1e-8", "0.000000001", "-1", "", "1.", ".5", "0x10"]) expect(() => satoshis(bad)).toThrow(TypeError);
	});

	it("keeps every value field a string through JSON parsing, compact or pretty", () => {
		expect(quoteValues('{"value":0.30000000,"n":0}')).toBe('{"value":"0.30000000","n":0}');
		const parsed = parseRpcReply<{ vout: Array<{ value: string }> }>('{"vout":[{"value": 0.1}, {"value":20999999.97690000}]}');
		expect(parsed.vout.map(v => v.value)).toEqual(["0.1", "20999999.97690000"]);
		// What JSON.parse + float maths would do: 0.1 + 0.2 sats rounding is fine, but the float is not exact.
		expect(satoshis(parsed.vout[1].value).toString()).toBe("2099999997690000");
	});
});

describe("ScriptIndex", () => {
	it("maps output scripts to addresses and grows with the watched set", async () => {
		const codec = codecFor("bitcoin");
		const a = (await codec.deriveAddress(ABANDON_SEED, RLTC, 0)).address;
		const b = (await codec.deriveAddress(ABANDON_SEED, RLTC, 1)).address;
		const set = new Set([a, "not-an-address", "ltc1qjmxnz78nmc8nq77wuxh25n2es7rzm5c2rkk4wh"]);
		const index = new ScriptIndex(NETWORK);
		expect([...index.sync(set).values()]).toEqual([a]);
		set.add(b);
		expect([...index.sync(set).values()]).toEqual([a, b]);
		expect([...index.sync(new Set([b])).values()]).toEqual([b]);
	});
});

describe("UTXO source on litecoind -regtest", () => {
	let node: Litecoind;
	let source: UtxoSource;
	const deposit: string[] = [];

	beforeAll(async () => {
		node = await startLitecoind();
		source = createUtxoSource({ networkId: "net", rpcUrl: node.rpcUrl, network: NETWORK, retry: { attempts: 2, startingDelayMs: 10 } });
		for (let i = 0; i < 3; i++) deposit.push((await codecFor("bitcoin").deriveAddress(ABANDON_SEED, RLTC, i)).address);
	}, 60_000);
	afterAll(async () => {
		await source?.close();
		await node?.stop();
	});

	/** One transaction paying `address` twice (two outputs): createrawtransaction refuses duplicate addresses, so the output is repeated in the hex. */
	async function payTwice(address: string, amount: string): Promise<string> {
		const one = await node.rpc<string>("createrawtransaction", [[], [{ [address]: amount }]]);
		// version(8) | 00 inputs | 01 output | <output> | locktime(8)
		const output = one.slice(12, one.length - 8);
		const two = `${one.slice(0, 8)}0002${output}${output}${one.slice(-8)}`;
		const funded = await node.wallet<{ hex: string }>("fundrawtransaction", [two, { replaceable: true }]);
		const signed = await node.wallet<{ hex: string; complete: boolean }>("signrawtransactionwithwallet", [funded.hex]);
		return node.rpc<string>("sendrawtransaction", [signed.hex]);
	}

	it("reads head, blocks by number and a gap-free run", async () => {
		const head = await source.head();
		expect(head.number).toBe(await node.blockCount());
		expect(head.hash).toBe(await node.rpc("getbestblockhash"));
		const b = await source.block(head.number - 1);
		expect(b).toMatchObject({ number: head.number - 1, hash: head.parentHash });
		expect(await source.block(head.number + 1)).toBeNull();
		const run = await source.blocks(head.number - 2, head.number + 5);
		expect(run.map(r => r.number)).toEqual([head.number - 2, head.number - 1, head.number]);
		expect(run[2].parentHash).toBe(run[1].hash);
	});

	it("finds every output to a deposit address, exact amounts, keyed by txid + vout; mempool first", async () => {
		const single = await node.wallet<string>("sendtoaddress", [deposit[0], "0.12345678"]);
		const twice = await payTwice(deposit[1], "0.1");
		const watched = new Set(deposit);
		const pending = await source.mempoolTransfers({ addresses: watched, tokens: TOKENS });
		expect(pending.map(p => [p.txHash, p.toAddress, p.amount]).sort()).toEqual(
			[
				[single, deposit[0], "12345678"],
				[twice, deposit[1], "10000000"],
				[twice, deposit[1], "10000000"],
			].sort(),
		);
		const [hash] = await node.mine(1);
		const n = await node.blockCount();
		expect(await source.mempoolTransfers({ addresses: watched, tokens: TOKENS })).toEqual([]);
		const found = await source.transfers({ fromBlock: n, toBlock: n, addresses: watched, tokens: TOKENS });
		expect(found).toHaveLength(3);
		for (const f of found) expect(f).toMatchObject({ networkId: "net", blockNumber: n, blockHash: hash, tokenId: "ltc" });
		const two = found.filter(f => f.txHash === twice);
		expect(two.map(f => f.amount)).toEqual(["10000000", "10000000"]);
		expect(new Set(two.map(f => f.logIndex)).size).toBe(2);
		const decoded = await node.rpc<{ vout: Array<{ n: number; scriptPubKey: { addresses?: string[] } }> }>("getrawtransaction", [single, true, hash]);
		const vout = decoded.vout.find(o => o.scriptPubKey.addresses?.[0] === deposit[0])!.n;
		expect(found.find(f => f.txHash === single)).toMatchObject({ logIndex: vout, amount: "12345678", toAddress: deposit[0] });
		// Not watched: nothing. No native token: nothing.
		expect(await source.transfers({ fromBlock: n, toBlock: n, addresses: new Set([deposit[2]]), tokens: TOKENS })).toEqual([]);
		expect(await source.transfers({ fromBlock: n, toBlock: n, addresses: watched, tokens: [] })).toEqual([]);
	});

	it("refuses a block hash the node does not have instead of answering no payments", async () => {
		const n = await node.blockCount();
		await expect(source.transfers({ fromBlock: n, toBlock: n, addresses: new Set(deposit), tokens: TOKENS, blockHashes: new Map([[n, "00".repeat(32)]]) })).rejects.toMatchObject({ name: "BlockUnavailableError" });
	});

	it("never puts the RPC credentials in an error; an unreachable node is RpcUnavailableError", async () => {
		const wrong = createUtxoSource({ networkId: "net", rpcUrl: `http://cpgtest:s3cretWrong@127.0.0.1:${node.rpcPort}/`, network: NETWORK, retry: { attempts: 1 } });
		const e1 = await wrong.head().catch(e => e as Error);
		expect(e1).toBeInstanceOf(Error);
		expect(String((e1 as Error).message)).not.toContain("s3cretWrong");
		const port = await freePort();
		const down = createUtxoSource({ networkId: "net", rpcUrl: `http://u:s3cretDown@127.0.0.1:${port}/`, network: NETWORK, retry: { attempts: 2, startingDelayMs: 5 } });
		const e2 = await down.head().catch(e => e as Error);
		expect(e2).toMatchObject({ name: "RpcUnavailableError" });
		expect(JSON.stringify({ m: (e2 as Error).message, s: (e2 as Error).stack })).not.toContain("s3cretDown");
	});
});
