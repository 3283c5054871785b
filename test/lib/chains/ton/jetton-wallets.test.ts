/**
 * Jetton wallet addresses computed locally (lib/chains/ton/jetton-wallets.ts), checked on the TON
 * test node (test/helpers/ton-node.ts: @ton/sandbox runs the masters' get methods on the real TVM,
 * answered through the toncenter v3 facade): the reference jetton of @ton-community/assets-sdk
 * (its "reference" layout), a master whose get_wallet_address builds the stablecoin (USDT-on-TON)
 * wallet data, written here in FunC from the published layout (stablecoin-contract's
 * jetton-utils.fc) and compiled with func-js, and a master no layout reproduces (asked per owner).
 */
import crypto from "node:crypto";
import { Address, beginCell, Cell, toNano } from "@ton/core";
import { createShardAccount } from "@ton/sandbox";
import { compileFunc } from "@ton-community/func-js";
import { JettonWallet } from "@ton-community/assets-sdk/dist/jetton/JettonWallet";
import { createTonApi, type TonApi } from "../../../../lib/chains/ton/api";
import { JETTON_WALLET_LAYOUTS, JettonWallets, layoutWalletAddress, SAMPLE_OWNERS, verifiedLayout } from "../../../../lib/chains/ton/jetton-wallets";
import { startTonNode, type TonNode } from "../../../helpers/ton-node";

/** A jetton master of our own for the test: get_jetton_data gives the wallet code in its data, get_wallet_address the stablecoin layout's (status:uint4 balance:Coins owner master) address. */
const STABLECOIN_LAYOUT_MASTER = `
builder begin_cell() asm "NEWC";
cell end_cell(builder b) asm "ENDC";
builder store_grams(builder b, int x) asm "STGRAMS";
builder store_slice(builder b, slice s) asm "STSLICER";
builder store_dict(builder b, cell c) asm(c b) "STDICT";
slice begin_parse(cell c) asm "CTOS";
cell get_data() asm "c4 PUSH";
cell preload_ref(slice s) asm "PLDREF";
int cell_hash(cell c) asm "HASHCU";
slice my_address() asm "MYADDR";

() recv_internal() impure { }

cell wallet_code() inline { return get_data().begin_parse().preload_ref(); }

(int, int, slice, cell, cell) get_jetton_data() method_id {
	return (0, -1, begin_cell().store_uint(0, 2).end_cell().begin_parse(), begin_cell().end_cell(), wallet_code());
}

slice get_wallet_address(slice owner) method_id {
	cell data = begin_cell().store_uint(0, 4).store_grams(0).store_slice(owner).store_slice(my_address()).end_cell();
	cell init = begin_cell().store_uint(0, 2).store_dict(wallet_code()).store_dict(data).store_uint(0, 1).end_cell();
	return begin_cell().store_uint(4, 3).store_int(0, 8).store_uint(cell_hash(init), 256).end_cell().begin_parse();
}
`;

async function compiled(source: string): Promise<Cell> {
	const r = await compileFunc({ targets: ["master.fc"], sources: { "master.fc": source } });
	if (r.status !== "ok") throw new Error(r.message);
	return Cell.fromBase64(r.codeBoc);
}

/** The API with its runGetMethod calls counted by method. */
function counted(api: TonApi): { api: TonApi; calls: string[] } {
	const calls: string[] = [];
	return {
		calls,
		api: {
			get: (path, query) => api.get(path, query),
			post: (path, body) => {
				calls.push((body as { method: string }).method);
				return api.post(path, body);
			},
		},
	};
}

const randomOwners = (n: number) => Array.from({ length: n }, () => Address.parseRaw("0:" + crypto.randomBytes(32).toString("hex")));

describe("jetton wallet addresses on the test node", () => {
	let ton: TonNode;
	let api: TonApi;
	beforeAll(async () => {
		ton = await startTonNode();
		api = createTonApi({ baseUrl: ton.url, timeoutMs: 10_000 });
	}, 60_000);
	afterAll(async () => ton?.stop());

	it("the reference jetton: the reference layout is verified and every computed wallet is the one the master answers, with no get method per owner", async () => {
		const jetton = await ton.deployJetton({ symbol: "REF" });
		const c = counted(api);
		const wallets = new JettonWallets({ api: c.api });
		const master = jetton.master.toRawString();
		expect((await wallets.plan(master)).layout?.name).toBe("reference");
		const owners = randomOwners(12);
		const computed = await wallets.walletsOf(master, owners.map(o => o.toRawString()));
		for (const o of owners) expect(computed.get(o.toRawString())).toBe((await ton.jettonWalletAddress(jetton, o)).toRawString());
		// get_jetton_data and the two sample owners' get_wallet_address, nothing more.
		expect(c.calls).toEqual(["get_jetton_data", "get_wallet_address", "get_wallet_address"]);
		// The wallet the master's own minting deploys is the computed one.
		await ton.mint(jetton, owners[0], 1_000n);
		await ton.seal();
		expect(ton.status(Address.parseRaw(computed.get(owners[0].toRawString())!))).toBe("active");
	});

	it.each([
		["in an ordinary cell", () => JettonWallet.code],
		// As USDT on mainnet hands it out: a library cell (exotic, the code's hash), hashed as it is.
		["as a library cell", () => new Cell({ exotic: true, bits: beginCell().storeUint(2, 8).storeBuffer(JettonWallet.code.hash()).endCell().bits })],
	])("a master building the stablecoin (USDT) wallet data, its wallet code %s: the stablecoin layout is verified, the reference one is not", async (_name, codeOf) => {
		const code = await compiled(STABLECOIN_LAYOUT_MASTER);
		const walletCode = codeOf(); // any code: the layout is what is tested
		const address = Address.parseRaw("0:" + crypto.randomBytes(32).toString("hex"));
		await ton.facade.exclusive(() => ton.facade.blockchain.setShardAccount(address, createShardAccount({ address, code, data: beginCell().storeRef(walletCode).endCell(), balance: toNano("1"), workchain: 0 })));
		const answers = await Promise.all(SAMPLE_OWNERS.map(async o => (await ton.jettonWalletAddress(address, o)).toRawString()));
		expect(verifiedLayout(walletCode, address, answers)?.name).toBe("stablecoin");
		const reference = JETTON_WALLET_LAYOUTS.find(l => l.name === "reference")!;
		expect(verifiedLayout(walletCode, address, answers, [reference])).toBeNull();
		const c = counted(api);
		const wallets = new JettonWallets({ api: c.api });
		const plan = await wallets.plan(address.toRawString());
		expect(plan.layout?.name).toBe("stablecoin");
		expect(plan.walletCode!.isExotic).toBe(walletCode.isExotic);
		const owners = randomOwners(5);
		const computed = await wallets.walletsOf(address.toRawString(), owners.map(o => o.toRawString()));
		for (const o of owners) expect(computed.get(o.toRawString())).toBe((await ton.jettonWalletAddress(address, o)).toRawString());
		expect(c.calls).toHaveLength(3);
	});

	it("a master no known layout reproduces: each owner's wallet is asked of it, once, at most four in flight", async () => {
		// A look-alike of the reference master whose answers are shifted: get_wallet_address of another owner.
		const jetton = await ton.deployJetton({ symbol: "ODD" });
		const master = jetton.master.toRawString();
		const other = (owner: string) => "0:" + crypto.createHash("sha256").update(owner).digest("hex");
		let inFlight = 0;
		let most = 0;
		const asked: string[] = [];
		const lying: TonApi = {
			get: (path, query) => api.get(path, query),
			post: async <T>(path: string, body: unknown): Promise<T> => {
				const b = body as { method: string; stack: Array<{ type: string; value: string }> };
				if (b.method !== "get_wallet_address") return api.post<T>(path, body);
				const owner = Cell.fromBase64(b.stack[0].value).beginParse().loadAddress().toRawString();
				asked.push(owner);
				inFlight++;
				most = Math.max(most, inFlight);
				try {
					return await api.post<T>(path, { ...b, stack: [{ type: "slice", value: beginCell().storeAddress(Address.parseRaw(other(owner))).endCell().toBoc().toString("base64") }] });
				} finally {
					inFlight--;
				}
			},
		};
		const wallets = new JettonWallets({ api: lying });
		expect((await wallets.plan(master)).layout).toBeNull();
		const owners = randomOwners(10).map(o => o.toRawString());
		const found = await wallets.walletsOf(master, owners);
		for (const o of owners) expect(found.get(o)).toBe((await ton.jettonWalletAddress(jetton, Address.parseRaw(other(o)))).toRawString());
		expect(asked.slice(2).sort()).toEqual([...owners].sort());
		expect(most).toBeLessThanOrEqual(4);
		expect(most).toBeGreaterThan(1);
		// Cached: asked again, nothing is.
		await wallets.walletsOf(master, owners);
		expect(asked).toHaveLength(2 + owners.length);
	});

	it("a layout computation is @ton/core's StateInit address: the reference one is assets-sdk's own", () => {
		const master = randomOwners(1)[0];
		const reference = JETTON_WALLET_LAYOUTS.find(l => l.name === "reference")!;
		for (const owner of randomOwners(3)) {
			expect(layoutWalletAddress(reference, JettonWallet.code, master, owner)).toBe(JettonWallet.createFromConfig({ owner, jettonMaster: master }).address.toRawString());
		}
	});
});
