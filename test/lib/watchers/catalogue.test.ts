import { networkIdFor, tokenIdFor } from "../../../lib/networks/catalogue";
import { readNetworkCatalogue, watchedTokens } from "../../../lib/watchers/catalogue";
import { startNode, TestNode } from "../../helpers/harness";

const row = (id: string, over: Partial<{ symbol: string; contractAddress: string | null; decimals: number; isNative: boolean; isActive: boolean }> = {}) => ({
	id,
	symbol: id.toUpperCase(),
	contractAddress: "",
	decimals: 18,
	isNative: false,
	isActive: true,
	...over,
});

describe("the tokens a watcher follows", () => {
	it("are the native coin and every contract token with a contract, switched on or off", () => {
		const out = watchedTokens([
			row("c", { contractAddress: "0xCc", decimals: 6 }),
			row("a", { isNative: true }),
			row("b", { contractAddress: "0xBb", decimals: 6, isActive: false }),
		]);
		expect(out).toEqual([
			{ tokenId: "a", symbol: "A", contractAddress: "", decimals: 18 },
			{ tokenId: "b", symbol: "B", contractAddress: "0xBb", decimals: 6 },
			{ tokenId: "c", symbol: "C", contractAddress: "0xCc", decimals: 6 },
		]);
	});

	it("leave out a contract token whose contract is not known yet", () => {
		expect(watchedTokens([row("u", { contractAddress: "" }), row("v", { contractAddress: null })])).toEqual([]);
	});

	it("read the native coin without a contract, whatever its row holds", () => {
		expect(watchedTokens([row("n", { isNative: true, contractAddress: "0xNope" })])).toEqual([{ tokenId: "n", symbol: "N", contractAddress: "", decimals: 18 }]);
	});
});

describe("a network's catalogue read from the database", () => {
	let node: TestNode;
	const NET = networkIdFor("ethereum");

	beforeAll(async () => {
		node = await startNode({ services: ["networks"] });
	}, 60_000);

	afterAll(async () => {
		await node?.stop();
	});

	it("has the confirmations and every token on or off, without a removed one; null for a removed network", async () => {
		const { Network, Token } = node.app.models;
		const usdt = tokenIdFor("ethereum", "USDT");
		const usdc = tokenIdFor("ethereum", "USDC");
		await Network.update({ requiredConfirmations: 7 }, { where: { id: NET } });
		await Token.update({ isActive: false }, { where: { id: usdt } });
		const read = (await readNetworkCatalogue(node.app.models, NET))!;
		expect(read.requiredConfirmations).toBe(7);
		const stored = (await Token.findAll({ where: { networkId: NET } })).filter(t => t.isNative || t.contractAddress);
		expect(read.tokens.map(t => t.tokenId).sort()).toEqual(stored.map(t => t.id).sort());
		expect(read.tokens.find(t => t.tokenId === usdt)).toMatchObject({ symbol: "USDT", decimals: 6 });
		expect(read.tokens.find(t => t.tokenId === tokenIdFor("ethereum", "ETH"))).toMatchObject({ contractAddress: "", decimals: 18 });
		await Token.destroy({ where: { id: usdc } });
		expect((await readNetworkCatalogue(node.app.models, NET))!.tokens.map(t => t.tokenId)).not.toContain(usdc);
		await Network.destroy({ where: { id: NET } });
		expect(await readNetworkCatalogue(node.app.models, NET)).toBeNull();
	});
});
