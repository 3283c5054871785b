import { erc20TransferData, paymentUri, toBaseUnits, trimAmount } from "../../../web/pay/uri";

const TO = "0x1111111111111111111111111111111111111111";
const USDC = "0x2222222222222222222222222222222222222222";

describe("payment URIs", () => {
	it("EIP-681 for native coins and ERC-20 tokens, amounts in base units", () => {
		expect(paymentUri({ chainType: "evm", chainId: 11155111, address: TO, amount: "0.5", decimals: 18, contractAddress: "", isNative: true })).toBe(`ethereum:${TO}@11155111?value=500000000000000000`);
		expect(paymentUri({ chainType: "evm", chainId: 8453, address: TO, amount: "1001.5", decimals: 6, contractAddress: USDC, isNative: false })).toBe(`ethereum:${USDC}@8453/transfer?address=${TO}&uint256=1001500000`);
	});
	it("BIP-21, Solana Pay (with the SPL mint), the bare address elsewhere", () => {
		expect(paymentUri({ chainType: "bitcoin", chainId: 0, address: "tb1qxyz", amount: "0.00100000", decimals: 8, contractAddress: "", isNative: true })).toBe("bitcoin:tb1qxyz?amount=0.001");
		expect(paymentUri({ chainType: "solana", chainId: 501, address: "So1Addr", amount: "2.50", decimals: 9, contractAddress: "", isNative: true })).toBe("solana:So1Addr?amount=2.5");
		expect(paymentUri({ chainType: "solana", chainId: 501, address: "So1Addr", amount: "3", decimals: 6, contractAddress: "Mint1", isNative: false })).toBe("solana:So1Addr?amount=3&spl-token=Mint1");
		expect(paymentUri({ chainType: "tron", chainId: 1, address: "TAddr", amount: "3", decimals: 6, contractAddress: "", isNative: true })).toBe("TAddr");
	});
	it("converts decimal strings exactly and refuses what is not one", () => {
		expect(toBaseUnits("0.000000000000000001", 18)).toBe(1n);
		expect(toBaseUnits("123456789.123456789", 9)).toBe(123456789123456789n);
		expect(toBaseUnits("1.50", 1)).toBe(15n);
		expect(() => toBaseUnits("1.23", 1)).toThrow();
		expect(() => toBaseUnits("-1", 6)).toThrow();
		expect(() => toBaseUnits("1e6", 6)).toThrow();
		expect(trimAmount("2.000")).toBe("2");
		expect(trimAmount("100")).toBe("100");
	});
	it("encodes an ERC-20 transfer call", () => {
		expect(erc20TransferData(TO, 1001500000n)).toBe(`0xa9059cbb${"0".repeat(24)}${TO.slice(2)}${(1001500000).toString(16).padStart(64, "0")}`);
		expect(() => erc20TransferData("0x12", 1n)).toThrow();
	});
});
