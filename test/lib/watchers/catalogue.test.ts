import { watchedTokens } from "../../../lib/watchers/catalogue";

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
