/** The litecoind regtest harness itself: starts, funds a wallet, mines, pays, stops. */
import { startLitecoind, type Litecoind } from "../../helpers/litecoind";

let node: Litecoind;
beforeAll(async () => {
	node = await startLitecoind();
}, 60_000);
afterAll(async () => {
	await node?.stop();
});

it("starts a funded regtest wallet and mines on request", async () => {
	const info = await node.rpc<{ chain: string; blocks: number }>("getblockchaininfo");
	expect(info.chain).toBe("regtest");
	expect(info.blocks).toBe(200);
	expect(node.rpcUrl).toMatch(/^http:\/\/cpgtest:[^@]+@127\.0\.0\.1:\d+\/$/);
	const other = await node.createWallet("other");
	const to = await other<string>("getnewaddress", ["", "bech32"]);
	expect(to).toMatch(/^rltc1q/);
	const txid = await node.wallet<string>("sendtoaddress", [to, "0.1"]);
	expect(await node.rpc<string[]>("getrawmempool")).toContain(txid);
	const [hash] = await node.mine(1);
	expect(await node.blockCount()).toBe(201);
	const raw = await node.rpcRaw("getblock", [hash, 2]);
	expect(raw).toContain('"value":0.10000000');
	await expect(node.rpc("getblockhash", [9999])).rejects.toMatchObject({ code: -8 });
});
