/** `npm run pay` arguments: address, amount (decimal string to base units, no JS number), token choice. */
import { baseUnits, parsePayArgs, DEFAULT_RPC_URL } from "../../../lib/dev/pay-request";

const DEPOSIT = "0x9858EfFD232B4033E47d90003D41EC34EcaEda94";
const USDC = "0x5FbDB2315678afecb367f032d93F642f64180aa3";

describe("parsePayArgs", () => {
	it("defaults to USDC when TEST_USDC_ADDRESS is set, else ETH; an explicit token wins", () => {
		expect(parsePayArgs([DEPOSIT, "12.5"], { TEST_USDC_ADDRESS: USDC.toLowerCase() })).toEqual({ to: DEPOSIT, token: "USDC", amount: "12.5", usdcAddress: USDC, rpcUrl: DEFAULT_RPC_URL });
		expect(parsePayArgs([DEPOSIT, "0.1"], {})).toMatchObject({ token: "ETH", usdcAddress: null });
		expect(parsePayArgs([DEPOSIT.toLowerCase(), "1", "eth"], { TEST_USDC_ADDRESS: USDC, RPC_URL_ANVIL_LOCAL: "http://127.0.0.1:9545" })).toEqual({
			to: DEPOSIT, token: "ETH", amount: "1", usdcAddress: null, rpcUrl: "http://127.0.0.1:9545",
		});
	});

	it("takes the node from --rpc-url (anywhere among the arguments), else RPC_URL_ANVIL_LOCAL, else the default", () => {
		const env = { RPC_URL_ANVIL_LOCAL: "http://127.0.0.1:9545" };
		expect(parsePayArgs(["--rpc-url", "http://127.0.0.1:8546", DEPOSIT, "1", "ETH"], env)).toMatchObject({ to: DEPOSIT, amount: "1", token: "ETH", rpcUrl: "http://127.0.0.1:8546" });
		expect(parsePayArgs([DEPOSIT, "1", "--rpc-url=https://node.example:443"], {})).toMatchObject({ token: "ETH", rpcUrl: "https://node.example:443" });
		expect(parsePayArgs([DEPOSIT, "1"], env).rpcUrl).toBe("http://127.0.0.1:9545");
		expect(parsePayArgs([DEPOSIT, "1"], {}).rpcUrl).toBe(DEFAULT_RPC_URL);
		expect(() => parsePayArgs(["--rpc-url"], {})).toThrow(/--rpc-url needs a value\nUsage/);
		expect(() => parsePayArgs(["--rpc-url", DEPOSIT, "1"], {})).toThrow(/--rpc-url must be an http\(s\) URL/);
		expect(() => parsePayArgs(["--rpc-url", "ws://127.0.0.1:8545", DEPOSIT, "1"], {})).toThrow(/--rpc-url must be an http\(s\) URL \(JSON-RPC over HTTP\), got a ws: URL/);
		expect(() => parsePayArgs([DEPOSIT, "1"], { RPC_URL_ANVIL_LOCAL: "nonsense" })).toThrow(/RPC_URL_ANVIL_LOCAL must be an http\(s\) URL/);
		expect(() => parsePayArgs(["--url", "http://x", DEPOSIT, "1"], {})).toThrow(/Unknown option --url/);
	});

	it("refuses bad addresses, amounts and tokens with a message", () => {
		expect(() => parsePayArgs([DEPOSIT], {})).toThrow(/Usage/);
		expect(() => parsePayArgs([DEPOSIT.replace("E", "e"), "1"], {})).toThrow(/checksum/);
		expect(() => parsePayArgs(["0x0000000000000000000000000000000000000000", "1"], {})).toThrow(/address/);
		for (const amount of ["0", "0.00", "-1", "1e3", "1,5", ".5", "abc", ""]) expect(() => parsePayArgs([DEPOSIT, amount], {})).toThrow(/amount/);
		expect(() => parsePayArgs([DEPOSIT, "1", "DOGE"], {})).toThrow(/ETH or USDC/);
		expect(() => parsePayArgs([DEPOSIT, "1", "USDC"], {})).toThrow(/TEST_USDC_ADDRESS/);
	});
});

describe("baseUnits", () => {
	it("converts decimal strings exactly", () => {
		expect(baseUnits("12.345678", 6)).toBe(12_345_678n);
		expect(baseUnits("0.1", 18)).toBe(100_000_000_000_000_000n);
		expect(baseUnits("123456789012345678901234567890.5", 6)).toBe(123456789012345678901234567890_500000n);
		expect(baseUnits("1.500000000", 6)).toBe(1_500_000n); // trailing zeros beyond the decimals are fine
		expect(baseUnits("7", 0)).toBe(7n);
	});

	it("refuses more decimals than the token has", () => {
		expect(() => baseUnits("1.0000001", 6)).toThrow(/At most 6 decimals/);
		expect(() => baseUnits("1.5", 0)).toThrow(/At most 0 decimals/);
	});
});
