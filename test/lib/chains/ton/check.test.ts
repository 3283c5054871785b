/**
 * `npm run chain:check` on TON networks (lib/chains/ton/check.ts through the dispatcher
 * lib/chains/check.ts): its arguments, and a run against an HTTP server answering in the v3 shape
 * with the documented mainnet transactions (test/fixtures/toncenter-v3) in its last block; and on
 * the TON test node (test/helpers/ton-node.ts), USDT found at the address's jetton wallet as the
 * watcher finds it.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Address, toNano } from "@ton/core";
import fixture from "../../../fixtures/toncenter-v3/traces-cookbook.json";
import { chainCheck } from "../../../../lib/chains/check";
import { parseTonChainCheckArgs } from "../../../../lib/chains/ton/check";
import { CATALOGUE } from "../../../../lib/networks/catalogue";
import { startTonNode, type TonNode } from "../../../helpers/ton-node";

const SEQNO = 52372896;
const PAYEE_RAW = "0:852443f8599fe6a5da34fe43049ac4e0beb3071bb2bfb56635ea9421287c283a";
const PAYEE = Address.parseRaw(PAYEE_RAW).toString({ urlSafe: true, bounceable: false, testOnly: false });

describe("chain:check arguments (TON)", () => {
	const env = { RPC_URL_TON: "http://127.0.0.1:9", RPC_API_KEY_TON: "k".repeat(20) };

	it("reads a TON network's API URL and key, the block count and the addresses", () => {
		const req = parseTonChainCheckArgs(["ton", "--blocks", "3", "--address", PAYEE_RAW], env);
		// The codec's canonical form: a raw address stays raw, a user-friendly one keeps its flags.
		expect(req).toMatchObject({ apiUrl: "http://127.0.0.1:9", apiKey: "k".repeat(20), blocks: 3, addresses: [PAYEE_RAW] });
		expect(parseTonChainCheckArgs(["ton", "--address", PAYEE], env).addresses).toEqual([PAYEE]);
		expect(parseTonChainCheckArgs(["ton"], env)).toMatchObject({ blocks: 10, addresses: null });
	});

	it("refuses what it cannot check, saying why", () => {
		expect(() => parseTonChainCheckArgs(["ton", "--address", "0x52908400098527886E0F7030069857D2E4169EE7"], env)).toThrow(/is not a TON address of ton/);
		// A testnet address (test-only flag) is not a mainnet deposit.
		const testnet = Address.parseRaw(PAYEE_RAW).toString({ urlSafe: true, bounceable: false, testOnly: true });
		expect(() => parseTonChainCheckArgs(["ton", "--address", testnet], env)).toThrow(/is not a TON address/);
		expect(() => parseTonChainCheckArgs(["ton-testnet"], env)).toThrow(/set RPC_URL_TON_TESTNET or give --rpc-url/);
	});

	it("the one command dispatches by chain type and names what it reads", async () => {
		await expect(chainCheck(["ethereum"], env, () => undefined)).rejects.toThrow(/reads solana, ton, polkadot networks so far; "ethereum" is evm/);
		await expect(chainCheck(["solana-devnet"], {}, () => undefined)).rejects.toThrow(/set RPC_URL_SOLANA_DEVNET/);
		await expect(chainCheck(["--blocks", "2", "ton-testnet"], {}, () => undefined)).rejects.toThrow(/set RPC_URL_TON_TESTNET/);
	});
});

describe("chain:check against a v3 API", () => {
	let server: http.Server;
	let base: string;
	const keys: Array<string | undefined> = [];
	beforeAll(async () => {
		const block = (seqno: number) => ({ workchain: -1, shard: "8000000000000000", seqno, root_hash: Buffer.alloc(32, seqno % 200).toString("base64"), gen_utime: "1758910259" });
		server = http.createServer((req, res) => {
			keys.push(req.headers["x-api-key"] as string | undefined);
			const u = new URL(req.url!, "http://x");
			let body: unknown = { error: "not found" };
			if (u.pathname === "/api/v3/masterchainInfo") body = { last: block(SEQNO), first: block(1) };
			else if (u.pathname === "/api/v3/blocks") body = { blocks: Number(u.searchParams.get("seqno")) <= SEQNO ? [block(Number(u.searchParams.get("seqno")))] : [] };
			else if (u.pathname === "/api/v3/transactionsByMasterchainBlock") {
				const seqno = Number(u.searchParams.get("seqno"));
				const offset = Number(u.searchParams.get("offset") ?? 0);
				body = { transactions: seqno === SEQNO && offset === 0 ? Object.values(fixture.traces[0].transactions) : [], address_book: {} };
			}
			res.writeHead(body && (body as { error?: string }).error ? 404 : 200, { "content-type": "application/json" }).end(JSON.stringify(body));
		});
		await new Promise<void>(r => server.listen(0, "127.0.0.1", r));
		base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
	});
	afterAll(() => new Promise<void>(r => server.close(() => r())));

	it("reads the newest masterchain blocks and prints the TON payment to the address, with the key in its header", async () => {
		const lines: string[] = [];
		await chainCheck(["ton", "--blocks", "2", "--address", PAYEE], { RPC_URL_TON: base, RPC_API_KEY_TON: "key-".repeat(5) }, l => lines.push(l));
		expect(lines[0]).toMatch(new RegExp(`^ton: last masterchain block ${SEQNO}; reading 2 block\\(s\\) ${SEQNO - 1}\\.\\.${SEQNO}; looking for 1 address`));
		expect(lines).toContain(`block ${SEQNO} ${Buffer.alloc(32, SEQNO % 200).toString("hex")}: 6 transaction(s); payments: 1`);
		expect(lines).toContain(`  0.5438 TON to ${PAYEE} in ${Buffer.from("bNFFOB9Y5fZuu1AEURYpe6jogFxsdhGG4Vh+/L5rC90=", "base64").toString("hex")}`);
		expect(lines[lines.length - 1]).toMatch(/^1 payment\(s\) in 2 masterchain block\(s\)/);
		expect(new Set(keys)).toEqual(new Set(["key-".repeat(5)]));
	});

	it("without addresses counts every accepted transfer", async () => {
		const lines: string[] = [];
		await chainCheck(["ton", "--blocks", "1"], { RPC_URL_TON: base }, l => lines.push(l));
		// Five of the six documented transactions carry value in an internal message (the sixth is the external-in).
		expect(lines).toContain(`block ${SEQNO} ${Buffer.alloc(32, SEQNO % 200).toString("hex")}: 6 transaction(s); payments: 5`);
	});
});

describe("chain:check on the TON test node", () => {
	let ton: TonNode;
	beforeAll(async () => {
		ton = await startTonNode();
	}, 60_000);
	afterAll(async () => ton?.stop());

	it("with --address lists USDT sent with and without a notification once each, at the jetton wallet, and a look-alike's notification as its TON only", async () => {
		const master = Address.parse(CATALOGUE.find(n => n.slug === "ton")!.tokens.find(t => t.symbol === "USDT")!.contractAddress!);
		const usdt = await ton.placeJetton(master, { symbol: "USDT", decimals: 6 });
		const lookalike = await ton.deployJetton({ symbol: "USDT", decimals: 6 });
		const payer = await ton.wallet({ balance: toNano("100") });
		await ton.mint(usdt, payer.address, 100_000_000n);
		await ton.mint(lookalike, payer.address, 100_000_000n);
		await ton.seal();
		const deposit = await ton.wallet();
		const address = deposit.address.toString({ urlSafe: true, bounceable: false });
		const wallet = await ton.jettonWalletAddress(usdt, deposit.address);
		const silent = await ton.jettonTransfer(payer, usdt, deposit.address, 1_500_000n, { forwardTonAmount: 0n });
		const notified = await ton.jettonTransfer(payer, usdt, deposit.address, 2_000_000n, { forwardTonAmount: toNano("0.02") });
		const fake = await ton.jettonTransfer(payer, lookalike, deposit.address, 9_000_000n, { forwardTonAmount: toNano("0.01") });
		const seqno = await ton.seal();
		const hex = (txs: typeof silent.txs, account: Address) => Buffer.from(txs.find(t => t.account === account.toRawString().toUpperCase())!.hash, "base64").toString("hex");
		const lines: string[] = [];
		await chainCheck(["ton", "--blocks", "1", "--address", address], { RPC_URL_TON: ton.url }, l => lines.push(l));
		expect(lines.filter(l => l.startsWith("  "))).toEqual([
			`  1.5 USDT to ${address} in ${hex(silent.txs, wallet)}`,
			`  2 USDT to ${address} in ${hex(notified.txs, wallet)}`,
			`  0.01 TON to ${address} in ${hex(fake.txs, deposit.address)}`,
		]);
		const count = silent.txs.length + notified.txs.length + fake.txs.length;
		expect(lines.filter(l => l.startsWith("block "))).toEqual([expect.stringMatching(new RegExp(`^block ${seqno} [0-9a-f]{64}: ${count} transaction\\(s\\); payments: 3$`))]);
	});
});
