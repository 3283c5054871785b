/**
 * The TON chain source (lib/chains/ton/source.ts) over a scripted v3 API: block refs and parent
 * hashes, paging of a masterchain block's transactions, the jetton-wallet trust check, and the
 * API client (lib/chains/ton/api.ts) over HTTP: key header, retries, final errors.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Address, beginCell, Cell } from "@ton/core";
import { JettonWallet } from "@ton-community/assets-sdk/dist/jetton/JettonWallet";
import fixture from "../../../fixtures/toncenter-v3/traces-cookbook.json";
import runGetMethod from "../../../fixtures/toncenter-v3/run-get-method.json";
import { createTonApi, TonApiError, TonApiUnavailableError, type TonApi } from "../../../../lib/chains/ton/api";
import { MAX_BLOCKS_PER_READ, stackAddress, TonSource, TX_PAGE } from "../../../../lib/chains/ton/source";
import { hashHex, OP_INTERNAL_TRANSFER, OP_TRANSFER_NOTIFICATION, type V3Transaction } from "../../../../lib/chains/ton/transactions";

const SEQNO = 52372896;
const rootHash = (seqno: number) => Buffer.alloc(32, seqno % 251).toString("base64");
const PLAIN = "bNFFOB9Y5fZuu1AEURYpe6jogFxsdhGG4Vh+/L5rC90=";
const plainTx = () => structuredClone(fixture.traces[0].transactions[PLAIN]) as unknown as V3Transaction;
const DEPOSIT_RAW = "0:852443f8599fe6a5da34fe43049ac4e0beb3071bb2bfb56635ea9421287c283a";
// The deposit as the watched set holds it: the codec's non-bounceable user-friendly form.
const DEPOSIT = Address.parseRaw(DEPOSIT_RAW).toString({ urlSafe: true, bounceable: false, testOnly: false });

const MASTER = Address.parseRaw("0:" + "11".repeat(32));
const LOOKALIKE_MASTER = Address.parseRaw("0:" + "22".repeat(32));
const WALLET_OF = (master: Address) => Address.parseRaw("0:" + (master.equals(MASTER) ? "a1" : "b2").repeat(32));
const TOKENS = [
	{ tokenId: "ton", contractAddress: "", decimals: 9 },
	{ tokenId: "usdt", contractAddress: MASTER.toString(), decimals: 6 },
];

function notification(fromWallet: Address, amount: bigint, hashByte: number, op = OP_TRANSFER_NOTIFICATION): V3Transaction {
	const tx = plainTx();
	tx.hash = Buffer.alloc(32, hashByte).toString("base64");
	tx.in_msg!.source = fromWallet.toRawString().toUpperCase();
	tx.in_msg!.opcode = "0x" + op.toString(16);
	tx.in_msg!.value = "1";
	const body = beginCell().storeUint(op, 32).storeUint(0, 64).storeCoins(amount).storeAddress(Address.parseRaw("0:" + "cd".repeat(32))).storeBit(false).endCell();
	tx.in_msg!.message_content = { hash: null, body: body.toBoc().toString("base64"), decoded: null };
	return tx;
}

/** The internal_transfer `wallet` accepted (the documented transfer moved to that account). */
function internalTransfer(wallet: Address, amount: bigint, hashByte: number): V3Transaction {
	const tx = notification(Address.parseRaw("0:" + "ef".repeat(32)), amount, hashByte, OP_INTERNAL_TRANSFER);
	tx.account = wallet.toRawString().toUpperCase();
	tx.in_msg!.destination = tx.account;
	return tx;
}

/**
 * A scripted v3 API: masterchain blocks up to `last`, transactions per block, and the masters' get
 * methods: by default get_jetton_data gives a wallet code that no known layout turns into the
 * scripted get_wallet_address answers (WALLET_OF: any owner gets its master's one wallet), so
 * every deposit's wallet is asked; `walletOf` / `walletCode` script a master whose layout is known.
 */
function scriptedApi(opts: { last: number; txs: Map<number, V3Transaction[]>; walletOf?: (master: Address, owner: Address) => Address; walletCode?: Cell }) {
	const calls: Array<{ path: string; query?: Record<string, unknown>; body?: unknown; owner?: string }> = [];
	const api: TonApi = {
		async get<T>(path: string, query?: Record<string, string | number | undefined>): Promise<T> {
			calls.push({ path, query });
			const block = (seqno: number) => ({ workchain: -1, shard: "8000000000000000", seqno, root_hash: rootHash(seqno), gen_utime: String(1758910000 + seqno - SEQNO) });
			if (path === "masterchainInfo") return { last: block(opts.last), first: block(1) } as T;
			if (path === "blocks") {
				const seqno = Number(query!.seqno);
				return { blocks: seqno <= opts.last ? [block(seqno)] : [] } as T;
			}
			if (path === "transactionsByMasterchainBlock") {
				const all = opts.txs.get(Number(query!.seqno)) ?? [];
				const offset = Number(query!.offset ?? 0);
				return { transactions: all.slice(offset, offset + Number(query!.limit)), address_book: {} } as T;
			}
			throw new Error(`unexpected GET ${path}`);
		},
		async post<T>(path: string, body: unknown): Promise<T> {
			const b = body as { address: string; method: string; stack: Array<{ type: string; value: string }> };
			expect(path).toBe("runGetMethod");
			const master = Address.parse(b.address);
			const cell = (c: Cell) => ({ type: "cell", value: c.toBoc().toString("base64") });
			if (b.method === "get_jetton_data") {
				calls.push({ path, body });
				const code = opts.walletCode ?? beginCell().storeUint(0xdead, 16).endCell();
				return { gas_used: 1, exit_code: 0, stack: [{ type: "num", value: "0x1" }, { type: "num", value: "-0x1" }, cell(beginCell().endCell()), cell(beginCell().endCell()), cell(code)] } as T;
			}
			expect(b.method).toBe("get_wallet_address");
			const owner = Cell.fromBase64(b.stack[0].value).beginParse().loadAddress();
			calls.push({ path, body, owner: owner.toRawString() });
			const wallet = beginCell().storeAddress((opts.walletOf ?? WALLET_OF)(master, owner)).endCell().toBoc().toString("base64");
			return { gas_used: 1, exit_code: 0, stack: [{ type: "slice", value: wallet }] } as T;
		},
	};
	return { api, calls };
}

const source = (api: TonApi) => new TonSource({ networkId: "net-ton", apiUrl: "http://unused", timeoutMs: 1_000, isTestnet: false, api });

describe("TonSource over a scripted v3 API", () => {
	it("head and blocks: masterchain seqnos, root hashes as hex, each block's parent hash the previous block's", async () => {
		const { api } = scriptedApi({ last: SEQNO + 3, txs: new Map() });
		const s = source(api);
		const head = await s.head();
		expect(head).toEqual({ number: SEQNO + 3, hash: hashHex(rootHash(SEQNO + 3)), parentHash: hashHex(rootHash(SEQNO + 2)), timestamp: 1758910003 });
		const blocks = await s.blocks(SEQNO, SEQNO + 10);
		expect(blocks.map(b => b.number)).toEqual([SEQNO, SEQNO + 1, SEQNO + 2, SEQNO + 3]);
		for (let i = 1; i < blocks.length; i++) expect(blocks[i].parentHash).toBe(blocks[i - 1].hash);
		expect(await s.block(SEQNO + 4)).toBeNull();
		expect((await s.blocks(SEQNO - 100, SEQNO + 100)).length).toBe(MAX_BLOCKS_PER_READ);
	});

	it("reads every page of a busy masterchain block and finds the one TON payment to the deposit", async () => {
		const filler = Array.from({ length: TX_PAGE * 2 + 5 }, (_, i) => {
			const tx = plainTx();
			tx.hash = Buffer.alloc(32, i % 250).toString("base64");
			tx.account = "0:" + "ee".repeat(32);
			tx.in_msg!.destination = tx.account;
			return tx;
		});
		const txs = [...filler, plainTx()];
		const { api, calls } = scriptedApi({ last: SEQNO, txs: new Map([[SEQNO, txs]]) });
		const found = await source(api).transfers({ fromBlock: SEQNO, toBlock: SEQNO, addresses: new Set([DEPOSIT]), tokens: TOKENS, blockHashes: new Map([[SEQNO, hashHex(rootHash(SEQNO))]]) });
		expect(calls.filter(c => c.path === "transactionsByMasterchainBlock")).toHaveLength(3);
		expect(found).toEqual([{ networkId: "net-ton", txHash: hashHex(PLAIN), logIndex: 0, toAddress: DEPOSIT, tokenId: "ton", amount: "543800000", blockNumber: SEQNO, blockHash: hashHex(rootHash(SEQNO)) }]);
	});

	it("credits jettons at the deposit's jetton wallet under the trusted master, once; its notification nothing more; a look-alike's notification only its TON", async () => {
		const credit = internalTransfer(WALLET_OF(MASTER), 25_000_000n, 3);
		const echo = notification(WALLET_OF(MASTER), 25_000_000n, 1);
		const fakeCredit = internalTransfer(WALLET_OF(LOOKALIKE_MASTER), 1_000_000_000n, 4);
		const fake = notification(WALLET_OF(LOOKALIKE_MASTER), 1_000_000_000n, 2);
		const { api, calls } = scriptedApi({ last: SEQNO, txs: new Map([[SEQNO, [credit, echo, fakeCredit, fake]]]) });
		const s = source(api);
		const found = await s.transfers({ fromBlock: SEQNO, toBlock: SEQNO, addresses: new Set([DEPOSIT]), tokens: TOKENS });
		expect(found.map(f => [f.txHash, f.toAddress, f.tokenId, f.amount])).toEqual([
			[hashHex(credit.hash), DEPOSIT, "usdt", "25000000"],
			[hashHex(fake.hash), DEPOSIT, "ton", "1"],
		]);
		// No known layout reproduces the scripted answers: get_jetton_data, the two sample owners, then the deposit's own wallet; cached for the next step.
		const getMethods = () => calls.filter(c => c.path === "runGetMethod");
		expect(getMethods().map(c => c.owner ?? "jetton data")).toEqual(["jetton data", expect.not.stringMatching(DEPOSIT_RAW), expect.not.stringMatching(DEPOSIT_RAW), DEPOSIT_RAW]);
		await s.transfers({ fromBlock: SEQNO, toBlock: SEQNO, addresses: new Set([DEPOSIT]), tokens: TOKENS });
		expect(getMethods()).toHaveLength(4);
		expect(await s.jettonWallet(MASTER.toRawString(), DEPOSIT_RAW)).toBe(WALLET_OF(MASTER).toRawString());
	});

	it("computes every deposit's jetton wallet locally once a layout reproduced the master's own answers: no get method per deposit, new deposits included", async () => {
		// The master answers as the reference jetton does (assets-sdk's own wallet address computation).
		const walletOf = (master: Address, owner: Address) => JettonWallet.createFromConfig({ owner, jettonMaster: master }).address;
		const deposits = Array.from({ length: 50 }, (_, i) => Address.parseRaw("0:" + (i + 1).toString(16).padStart(64, "0")));
		const paid = deposits[37];
		const credit = internalTransfer(walletOf(MASTER, paid), 9_000_000n, 5);
		const txs = new Map([[SEQNO, [credit]]]);
		const { api, calls } = scriptedApi({ last: SEQNO, txs, walletOf, walletCode: JettonWallet.code });
		const s = source(api);
		const addresses = new Set(deposits.map(d => d.toString({ urlSafe: true, bounceable: false })));
		const found = await s.transfers({ fromBlock: SEQNO, toBlock: SEQNO, addresses, tokens: TOKENS });
		expect(found.map(f => [f.txHash, f.toAddress, f.tokenId, f.amount])).toEqual([[hashHex(credit.hash), paid.toString({ urlSafe: true, bounceable: false }), "usdt", "9000000"]]);
		expect(calls.filter(c => c.path === "runGetMethod")).toHaveLength(3);
		// A deposit added while running: computed on the fly, still no get method.
		const late = Address.parseRaw("0:" + "77".repeat(32));
		addresses.add(late.toString({ urlSafe: true, bounceable: false }));
		const lateCredit = internalTransfer(walletOf(MASTER, late), 1_000_000n, 6);
		txs.set(SEQNO, [lateCredit]);
		const again = await s.transfers({ fromBlock: SEQNO, toBlock: SEQNO, addresses, tokens: TOKENS });
		expect(again.map(f => [f.toAddress, f.amount])).toEqual([[late.toString({ urlSafe: true, bounceable: false }), "1000000"]]);
		expect(calls.filter(c => c.path === "runGetMethod")).toHaveLength(3);
	});

	it("without the jetton in the catalogue a real notification is only its TON", async () => {
		const { api } = scriptedApi({ last: SEQNO, txs: new Map([[SEQNO, [notification(WALLET_OF(MASTER), 25_000_000n, 1)]]]) });
		const found = await source(api).transfers({ fromBlock: SEQNO, toBlock: SEQNO, addresses: new Set([DEPOSIT]), tokens: TOKENS.slice(0, 1) });
		expect(found.map(f => [f.tokenId, f.amount])).toEqual([["ton", "1"]]);
	});

	it("refuses an answer holding a transaction of another masterchain block", async () => {
		const tx = plainTx();
		tx.mc_block_seqno = SEQNO + 1;
		const { api } = scriptedApi({ last: SEQNO + 1, txs: new Map([[SEQNO, [tx]]]) });
		await expect(source(api).transfers({ fromBlock: SEQNO, toBlock: SEQNO, addresses: new Set([DEPOSIT]), tokens: TOKENS })).rejects.toMatchObject({ name: "BlockUnavailableError" });
	});

	it("reads the address of the published runGetMethod answer's stack", () => {
		expect(stackAddress(runGetMethod.stack[0])).toMatch(/^0:[0-9a-f]{64}$/);
		expect(stackAddress({ type: "num", value: "0x1" })).toBeNull();
	});
});

describe("the v3 API client over HTTP", () => {
	let server: http.Server;
	let base: string;
	const seen: Array<{ url: string; key: string | undefined; method: string; body: string; connection: string | undefined }> = [];
	/** A status and body; "stall": answer nothing (the client's timeout); "cut": half a body, then the connection reset. */
	let script: Array<[number, string] | "stall" | "cut"> = [];
	beforeAll(async () => {
		server = http.createServer((req, res) => {
			let body = "";
			req.on("data", c => (body += c));
			req.on("end", () => {
				seen.push({ url: req.url!, key: req.headers["x-api-key"] as string | undefined, method: req.method!, body, connection: req.headers.connection });
				const next = script.shift() ?? [200, "{}"];
				if (next === "stall") return;
				if (next === "cut") {
					res.writeHead(200, { "content-type": "application/json", "content-length": "1000" }).write('{"transactions":[');
					setTimeout(() => req.socket.destroy(), 20);
					return;
				}
				const [status, text] = next;
				res.writeHead(status, { "content-type": "application/json" }).end(text);
			});
		});
		await new Promise<void>(r => server.listen(0, "127.0.0.1", r));
		base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
	});
	afterAll(() => new Promise<void>(r => server.close(() => r())));
	beforeEach(() => {
		seen.length = 0;
		script = [];
	});

	it("sends the key in X-API-Key, under /api/v3, and retries 429 and 5xx", async () => {
		script = [[503, "busy"], [429, "slow down"], [200, '{"last":{"seqno":5}}']];
		const api = createTonApi({ baseUrl: base, apiKey: "secret-key-1234", timeoutMs: 2_000, startingDelayMs: 1, maxDelayMs: 5 });
		await expect(api.get("masterchainInfo", { a: 1 })).resolves.toEqual({ last: { seqno: 5 } });
		expect(seen.map(s => [s.url, s.key])).toEqual(Array(3).fill(["/api/v3/masterchainInfo?a=1", "secret-key-1234"]));
	});

	it("keeps its connection alive across requests, and retries a timeout or an answer cut mid-body", async () => {
		// Two clients: the keep-alive one with a timeout no busy machine reaches (a retry after a
		// timeout would rightly open a new connection), the other short enough to make the stall quick.
		script = [[200, '{"n":1}'], [200, '{"n":2}'], "stall", "cut", [200, '{"n":3}']];
		const api = createTonApi({ baseUrl: base, timeoutMs: 30_000, startingDelayMs: 1, maxDelayMs: 5 });
		const quick = createTonApi({ baseUrl: base, timeoutMs: 1_500, startingDelayMs: 1, maxDelayMs: 5 });
		try {
			await expect(api.get("a")).resolves.toEqual({ n: 1 });
			await expect(api.get("b")).resolves.toEqual({ n: 2 });
			// Every request goes through the client's own keep-alive agent. (In CI it once went out with
			// `Connection: close` on a new socket each time: chopsticks, loaded by a Polkadot test file
			// earlier in the same jest worker, had patched http.request: test/helpers/global-agent-off.ts.)
			expect(seen.map(s => s.connection)).toEqual(["keep-alive", "keep-alive"]);
			await expect(quick.get("c")).resolves.toEqual({ n: 3 });
			expect(seen.map(s => s.url)).toEqual(["/api/v3/a", "/api/v3/b", "/api/v3/c", "/api/v3/c", "/api/v3/c"]);
		} finally {
			api.close?.();
			quick.close?.();
		}
	});

	it("keeps a base that already ends in /api/v3 and posts JSON", async () => {
		script = [[200, '{"exit_code":0,"stack":[]}']];
		const api = createTonApi({ baseUrl: `${base}/api/v3/`, timeoutMs: 2_000 });
		await api.post("runGetMethod", { address: "0:00", method: "seqno", stack: [] });
		expect(seen[0]).toMatchObject({ url: "/api/v3/runGetMethod", method: "POST", key: undefined });
		expect(JSON.parse(seen[0].body)).toEqual({ address: "0:00", method: "seqno", stack: [] });
	});

	it("gives up after the attempts as RPC-unavailable, and a 4xx at once, without the key in the message", async () => {
		script = Array(4).fill([502, "bad gateway secret-key-1234"]);
		const api = createTonApi({ baseUrl: base, apiKey: "secret-key-1234", timeoutMs: 2_000, startingDelayMs: 1, maxDelayMs: 5 });
		const down = (await api.get("blocks").catch((e: unknown) => e)) as TonApiUnavailableError;
		expect(down).toBeInstanceOf(TonApiUnavailableError);
		expect(down.name).toBe("RpcUnavailableError");
		expect(down.message).not.toContain("secret-key-1234");
		expect(seen).toHaveLength(4);
		seen.length = 0;
		script = [[401, '{"error":"API key does not exist"}']];
		const refused = (await api.get("blocks").catch((e: unknown) => e)) as TonApiError;
		expect(refused).toBeInstanceOf(TonApiError);
		expect(refused.status).toBe(401);
		expect(seen).toHaveLength(1);
	});
});
