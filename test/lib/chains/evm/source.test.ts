/**
 * The EVM chain source against a real anvil node, behind a loopback JSON-RPC proxy that behaves
 * like a hosted provider (refuses wide log ranges, answers 429, goes down and comes back).
 * No database: runs in the sqlite jest project only.
 */
import crypto from "node:crypto";
import { inspect } from "node:util";
import { Contract, getAddress, parseEther, parseUnits, type TransactionReceipt } from "ethers";
import { deployContract } from "../../../../lib/chains/evm/contracts";
import { evmCodec } from "../../../../lib/chains/evm/codec";
import {
	BlockUnavailableError, ChainMismatchError, RpcError, RpcUnavailableError, classifyRpcFailure, createEvmSource, type EvmSource, type EvmSourceOptions,
} from "../../../../lib/chains/evm/source";
import { NATIVE_INDEX_OFFSET, type ChainTransfer, type WatchedToken } from "../../../../lib/chains/source";
import { startAnvil, type Anvil } from "../../../helpers/anvil";
import { startRpcProxy, type RpcProxy } from "../../../helpers/rpc-proxy";
import { ABANDON_SEED, TESTNET } from "../fixtures";

/** Nothing here depends on the backend: run once (sqlite project), not twice. */
const describeChain = process.env.TEST_BACKEND === "mysql" ? describe.skip : describe;

const NETWORK_ID = "00000000-0000-4000-8000-00000000a11c";
/** PUSH1 0 PUSH1 0 REVERT: any call to an address with this code fails. */
const REVERTING_CODE = "0x60006000fd";

describeChain("EVM chain source (anvil)", () => {
	let anvil: Anvil;
	let proxy: RpcProxy;
	let token: Contract;
	let forwarder: Contract;
	let tokens: WatchedToken[];
	let deposits: string[];
	let addresses: Set<string>;
	const sources: EvmSource[] = [];
	const logged: string[] = [];

	function source(extra: Partial<EvmSourceOptions> = {}): EvmSource {
		const s = createEvmSource({
			networkId: NETWORK_ID,
			rpcUrl: proxy.url,
			chainId: 31337,
			timeoutMs: 2_000,
			retry: { attempts: 3, startingDelayMs: 20, maxDelayMs: 100 },
			logger: { info: (msg: unknown) => logged.push(String(msg)), warn: (msg: unknown) => logged.push(String(msg)) },
			...extra,
		});
		sources.push(s);
		return s;
	}

	const payer = () => anvil.accounts[0];
	const receiptOf = async (tx: { hash: string }): Promise<TransactionReceipt> => (await anvil.provider.waitForTransaction(tx.hash))!;
	const sendEth = async (to: string, ether: string) => receiptOf(await payer().sendTransaction({ to, value: parseEther(ether) }));
	const sendUsdc = async (to: string, amount: string) => receiptOf(await (token.connect(payer()) as Contract).transfer(to, parseUnits(amount, 6)));
	const query = (fromBlock: number, toBlock: number, extra: { addresses?: Set<string>; tokens?: WatchedToken[]; blockHashes?: Map<number, string> } = {}) => ({
		fromBlock,
		toBlock,
		addresses: extra.addresses ?? addresses,
		tokens: extra.tokens ?? tokens,
		blockHashes: extra.blockHashes,
	});

	beforeAll(async () => {
		anvil = await startAnvil();
		proxy = await startRpcProxy(anvil.url);
		token = await deployContract(payer(), "TestToken", ["Test USD Coin", "USDC"]);
		forwarder = await deployContract(payer(), "Forwarder");
		await receiptOf(await (token.connect(payer()) as Contract).mint(anvil.addresses[0], parseUnits("1000000", 6)));
		tokens = [
			{ tokenId: "token-eth", contractAddress: "", decimals: 18 },
			{ tokenId: "token-usdc", contractAddress: await token.getAddress(), decimals: 6 },
		];
		deposits = [];
		for (let i = 0; i < 8; i++) deposits.push((await evmCodec.deriveAddress(ABANDON_SEED, TESTNET, i)).address);
		addresses = new Set(deposits);
	});

	afterAll(async () => {
		for (const s of sources) await s.close();
		await proxy?.stop();
		await anvil?.stop();
	});

	describe("payments", () => {
		it("returns ETH and ERC-20 payments to deposit addresses with amounts, indexes, block number and hash", async () => {
			const s = source();
			const from = (await anvil.blockNumber()) + 1;
			const eth = await sendEth(deposits[0], "0.5");
			const usdc = await sendUsdc(deposits[1], "12.345678");
			await sendEth(getAddress(`0x${crypto.randomBytes(20).toString("hex")}`), "1"); // not ours
			await sendUsdc(anvil.addresses[1], "5"); // not ours
			const to = await anvil.blockNumber();

			const found = await s.transfers(query(from, to));
			expect(found).toEqual<ChainTransfer[]>([
				{
					networkId: NETWORK_ID,
					txHash: eth.hash,
					logIndex: NATIVE_INDEX_OFFSET + eth.index,
					toAddress: deposits[0],
					tokenId: "token-eth",
					amount: "500000000000000000",
					blockNumber: eth.blockNumber,
					blockHash: eth.blockHash,
				},
				{
					networkId: NETWORK_ID,
					txHash: usdc.hash,
					logIndex: usdc.logs[0].index,
					toAddress: deposits[1],
					tokenId: "token-usdc",
					amount: "12345678",
					blockNumber: usdc.blockNumber,
					blockHash: usdc.blockHash,
				},
			]);
			// Only the tokens asked for.
			expect((await s.transfers(query(from, to, { tokens: [tokens[1]] }))).map(t => t.tokenId)).toEqual(["token-usdc"]);
			expect(await s.transfers(query(from, to, { addresses: new Set() }))).toEqual([]);
			// Addresses in another form than the codec's canonical one would silently match nothing: refused.
			await expect(s.transfers(query(from, to, { addresses: new Set([deposits[0].toLowerCase()]) }))).rejects.toThrow(/EIP-55/);
		});

		it("counts two Transfer logs of one transaction as two transfers", async () => {
			const s = source();
			const outsider = anvil.addresses[2];
			const r = await receiptOf(await (token.connect(payer()) as Contract).batchTransfer([deposits[2], outsider, deposits[2], deposits[3]], [1_000_000n, 7n, 2_000_000n, 3n]));
			const found = await s.transfers(query(r.blockNumber, r.blockNumber));
			expect(found.map(t => [t.txHash, t.toAddress, t.amount, t.logIndex])).toEqual([
				[r.hash, deposits[2], "1000000", r.logs[0].index],
				[r.hash, deposits[2], "2000000", r.logs[2].index],
				[r.hash, deposits[3], "3", r.logs[3].index],
			]);
			expect(new Set(found.map(t => t.logIndex)).size).toBe(3);
		});

		it("ignores a failed transaction that sent ETH to a deposit address", async () => {
			const s = source();
			const target = deposits[4];
			await anvil.rpc("anvil_setCode", [target, REVERTING_CODE]);
			try {
				const tx = await payer().sendTransaction({ to: target, value: parseEther("3"), gasLimit: 100_000 });
				const failed = await receiptOf(tx);
				expect(failed.status).toBe(0);
				// Its block is read, the candidate found, its receipt says 0: nothing counted.
				expect(await s.transfers(query(failed.blockNumber, failed.blockNumber))).toEqual([]);
				// A reverted token transfer emits no log either.
				await expect((token.connect(payer()) as Contract).transfer(target, parseUnits("10000000000", 6))).rejects.toThrow();
				payer().reset(); // the NonceManager counted the transaction that was never sent
			} finally {
				await anvil.rpc("anvil_setCode", [target, "0x"]);
			}
		});

		it("sees ETH sent by a contract's internal calls only through nativeBalances", async () => {
			const s = source();
			const [a, b] = [deposits[5], deposits[6]];
			const before = await anvil.blockNumber();
			const r = await receiptOf(await (forwarder.connect(payer()) as Contract).forward([a, b], [parseEther("1"), parseEther("2")], { value: parseEther("3") }));
			expect(await s.transfers(query(r.blockNumber, r.blockNumber))).toEqual([]);
			expect(await s.nativeBalances([a, b], r.blockNumber)).toEqual(new Map([[a, "1000000000000000000"], [b, "2000000000000000000"]]));
			expect(await s.nativeBalances([a, b], before)).toEqual(new Map([[a, "0"], [b, "0"]]));
		});
	});

	describe("ranges and address sets", () => {
		let from: number;
		let to: number;
		let expected: ChainTransfer[];

		beforeAll(async () => {
			// 200 blocks with payments spread over them.
			from = (await anvil.blockNumber()) + 1;
			for (let i = 0; i < 10; i++) {
				await sendUsdc(deposits[i % 3], `${i + 1}.5`);
				if (i % 3 === 0) await sendEth(deposits[7], `0.0${i + 1}`);
				await anvil.mine(19);
			}
			to = await anvil.blockNumber();
			expect(to - from + 1).toBeGreaterThanOrEqual(200);
			expected = await source().transfers(query(from, to));
			expect(expected.filter(t => t.tokenId === "token-usdc")).toHaveLength(10);
			expect(expected.filter(t => t.tokenId === "token-eth")).toHaveLength(4);
		});

		it("splits ranges a provider refuses, down to what it accepts, and still returns every transfer", async () => {
			proxy.maxLogsRange = 10;
			proxy.resetCounts();
			try {
				const found = await source().transfers(query(from, to, { tokens: [tokens[1]] }));
				expect(found).toEqual(expected.filter(t => t.tokenId === "token-usdc"));
				// 500 -> 250... refused until the span fits 10 blocks, then about (to-from+1)/6 queries.
				expect(proxy.calls("eth_getLogs")).toBeGreaterThan(Math.ceil((to - from + 1) / 10));
				expect(logged.some(l => /refused \(tooLarge\)/.test(l))).toBe(true);
			} finally {
				proxy.maxLogsRange = null;
			}
		});

		it("halves a range whose query times out", async () => {
			const s = source({ timeoutMs: 500 });
			await s.head(); // the chain id check is done
			logged.length = 0;
			proxy.stallNext(1);
			expect(await s.transfers(query(from, to, { tokens: [tokens[1]] }))).toEqual(expected.filter(t => t.tokenId === "token-usdc"));
			expect(logged.some(l => /refused \(timeout\)/.test(l))).toBe(true);
		});

		it("large-address-set mode (5,000 addresses) returns the same as topic filters, in one query a range", async () => {
			const many = new Set(deposits);
			while (many.size < 5_000) many.add(getAddress(`0x${crypto.randomBytes(20).toString("hex")}`));
			proxy.resetCounts();
			const topicMode = await source({ largeSetThreshold: 10_000 }).transfers(query(from, to, { addresses: many }));
			const topicQueries = proxy.calls("eth_getLogs");
			proxy.resetCounts();
			const largeMode = await source().transfers(query(from, to, { addresses: many }));
			expect(largeMode).toEqual(topicMode);
			expect(largeMode).toEqual(expected);
			expect(topicQueries).toBe(25); // 5,000 / 200 topic chunks, one range
			expect(proxy.calls("eth_getLogs")).toBe(1);
		});

		it("queries by block hash where the watcher gives one, with the same answer", async () => {
			const hashes = new Map<number, string>();
			for (const b of await source().blocks(to - 40, to)) hashes.set(b.number, b.hash);
			const s = source();
			expect(await s.transfers(query(from, to, { blockHashes: hashes }))).toEqual(expected);
		});

		it("errors, never answers nothing, for a block hash the node does not know", async () => {
			const s = source();
			const unknown = new Map([[to, `0x${"11".repeat(32)}`]]);
			await expect(s.transfers(query(to, to, { blockHashes: unknown, tokens: [tokens[1]] }))).rejects.toBeInstanceOf(BlockUnavailableError);
			await expect(s.transfers(query(to, to, { blockHashes: unknown, tokens: [tokens[0]] }))).rejects.toBeInstanceOf(BlockUnavailableError);
		});
	});

	describe("blocks", () => {
		it("reads the head, single blocks and runs of blocks; null and a short run beyond the head", async () => {
			const s = source();
			const head = await s.head();
			expect(head.number).toBe(await anvil.blockNumber());
			expect(head.hash).toMatch(/^0x[0-9a-f]{64}$/);
			const run = await s.blocks(head.number - 60, head.number + 5);
			expect(run.map(b => b.number)).toEqual(Array.from({ length: 61 }, (_, i) => head.number - 60 + i));
			for (let i = 1; i < run.length; i++) expect(run[i].parentHash).toBe(run[i - 1].hash);
			expect(run[run.length - 1]).toEqual(head);
			expect(await s.block(head.number)).toEqual(head);
			expect(await s.block(head.number + 1)).toBeNull();
		});

		it("forgets blocks mined after a snapshot once reverted to it", async () => {
			const s = source();
			const head = await s.head();
			const id = await anvil.snapshot();
			await anvil.mine(3);
			expect((await s.head()).number).toBe(head.number + 3);
			await anvil.revert(id);
			expect(await s.head()).toEqual(head);
			expect(await s.block(head.number + 1)).toBeNull();
		});

		it("sees new hashes after a reorg of depth 3, and the payment put in the new chain", async () => {
			const s = source();
			await anvil.mine(5);
			const head = await anvil.blockNumber();
			const before = await s.blocks(head - 3, head);
			// The payment goes in the first replaced block (offset 0), so every later hash changes with it
			// (an empty block rebuilt on the same parent can come out identical).
			await anvil.reorg(3, [[{ from: anvil.addresses[0], to: deposits[0], value: `0x${parseEther("0.25").toString(16)}` }, 0]]);
			const after = await s.blocks(head - 3, head);
			expect(after[0]).toEqual(before[0]);
			for (let i = 1; i <= 3; i++) expect(after[i].hash).not.toBe(before[i].hash);
			expect(after[1].parentHash).toBe(before[0].hash);
			const found = await s.transfers(query(head - 2, head, { tokens: [tokens[0]] }));
			expect(found).toHaveLength(1);
			expect(found[0]).toMatchObject({ toAddress: deposits[0], amount: "250000000000000000", blockNumber: head - 2, blockHash: after[1].hash });
		});
	});

	describe("RPC failures", () => {
		it("retries 429 answers with backoff, then succeeds", async () => {
			const s = source();
			await s.head(); // chain id checked
			proxy.resetCounts();
			proxy.failNext(2);
			expect((await s.head()).number).toBe(await anvil.blockNumber());
			expect(proxy.requests()).toBe(3);
		});

		it("gives up with RpcUnavailableError after the bounded attempts, and works again when the node is back", async () => {
			// A long request timeout: a refused connection must fail at once, never wait for it.
			const s = source({ timeoutMs: 60_000 });
			await s.head();
			proxy.failNext(5, 503);
			await expect(s.head()).rejects.toMatchObject({ name: "RpcUnavailableError", attempts: 3 });
			proxy.failNext(0);
			await proxy.stop();
			try {
				const started = Date.now();
				const error = await s.transfers(query(1, 2)).catch(e => e);
				expect(error).toBeInstanceOf(RpcUnavailableError);
				expect(error.attempts).toBe(3);
				// Three attempts that each waited for the timeout would take 180 s; failing fast is far below
				// this generous bound even on a loaded machine.
				expect(Date.now() - started).toBeLessThan(30_000);
				await expect(s.head()).rejects.toBeInstanceOf(RpcUnavailableError);
			} finally {
				await proxy.start();
			}
			expect((await s.head()).number).toBe(await anvil.blockNumber());
		});

		it("never puts the RPC URL (API keys live in it) in an error", async () => {
			const s = source({ rpcUrl: `${proxy.url}/v3/SECRET-API-KEY?key=SECRET-API-KEY` });
			await s.head();
			proxy.failNext(5, 503);
			const unavailable = await s.head().catch(e => e);
			proxy.failNext(0);
			const rejected = await s.transfers(query(1, 2, { tokens: [{ tokenId: "x", contractAddress: "0xnot-an-address", decimals: 6 }] })).catch(e => e);
			await proxy.stop();
			const down = await s.head().catch(e => e);
			await proxy.start();
			for (const error of [unavailable, rejected, down]) {
				expect(error).toBeInstanceOf(RpcError);
				expect(inspect(error, { depth: 10 })).not.toContain("SECRET-API-KEY");
				expect(JSON.stringify(error)).not.toContain("SECRET-API-KEY");
			}
			expect(unavailable.message).toMatch(/503/);
		});

		it("refuses to read a node on another chain", async () => {
			const s = source({ chainId: 1 });
			await expect(s.head()).rejects.toBeInstanceOf(ChainMismatchError);
			await expect(s.transfers(query(1, 1))).rejects.toMatchObject({ expected: 1, actual: 31337 });
		});

		it("fails a call on a closed source without retrying", async () => {
			const s = source();
			await s.close();
			await expect(s.head()).rejects.toMatchObject({ name: "RpcError", reason: "rejected" });
		});
	});
});

describeChain("classifyRpcFailure", () => {
	const rpc = (code: number, message: string) => ({ code: "UNKNOWN_ERROR", error: { code, message } });
	const http = (status: string, body = "") => ({ code: "SERVER_ERROR", info: { responseStatus: status, responseBody: body } });

	it("tells refusals to widen the query from rate limits, outages and plain errors", () => {
		expect(classifyRpcFailure(rpc(-32005, "query returned more than 10000 results"))).toBe("tooLarge");
		expect(classifyRpcFailure(rpc(-32602, "eth_getLogs block range too large, range: 1000, max: 500"))).toBe("tooLarge");
		expect(classifyRpcFailure(rpc(-32000, "Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range"))).toBe("tooLarge");
		expect(classifyRpcFailure(rpc(-32005, "daily request count exceeded, request rate limited"))).toBe("transient");
		expect(classifyRpcFailure(rpc(429, "Your app has exceeded its compute units per second capacity"))).toBe("transient");
		expect(classifyRpcFailure(rpc(-32000, "unknown block"))).toBe("unknownBlock");
		expect(classifyRpcFailure(rpc(-32602, "invalid argument 0: hex string without 0x prefix"))).toBe("rejected");
		expect(classifyRpcFailure(http("429 Too Many Requests"))).toBe("transient");
		expect(classifyRpcFailure(http("503 Service Unavailable"))).toBe("transient");
		expect(classifyRpcFailure(http("413 Payload Too Large"))).toBe("tooLarge");
		expect(classifyRpcFailure(http("401 Unauthorized"))).toBe("rejected");
		expect(classifyRpcFailure({ code: "TIMEOUT" })).toBe("timeout");
		expect(classifyRpcFailure(Object.assign(new TypeError("fetch failed"), { cause: { code: "ECONNREFUSED" } }))).toBe("transient");
	});
});
