/**
 * The pay page's payment URIs (web/pay/uri.ts), built for every network and token of the
 * catalogue with a deposit address the chain's codec derives, then read back with the parser of
 * that ecosystem's wallets: eth-url-parser (EIP-681), bip21 with the coin's own scheme, the Solana
 * Pay reference parser (@solana/pay parseURL), TON's address parsing in @ton/core; the address-only
 * chains' QR content is checked with the chain's own address codec.
 */
import { Address } from "@ton/core";
import { parseURL } from "@solana/pay";
import Decimal from "decimal.js";
import * as bip21 from "bip21";
import { parse as parseEip681 } from "eth-url-parser";
import { chainParamsFor, codecFor } from "../../../lib/chains";
import { CATALOGUE, CatalogueNetwork, CatalogueToken, CHAIN_TYPES } from "../../../lib/networks/catalogue";
import { erc20TransferData, fromBaseUnits, paymentUri, toBaseUnits, trimAmount } from "../../../web/pay/uri";


const TO = "0x1111111111111111111111111111111111111111";
const USDC = "0x2222222222222222222222222222222222222222";
/** The local chain's test token has no catalogue address (TEST_USDC_ADDRESS): any contract stands in. */
const LOCAL_TOKEN = "0x3333333333333333333333333333333333333333";
const SEED = new Uint8Array(64).map((_, i) => i + 1);

/** An amount using every decimal the token has: 1234.123456789012345678 cut to `decimals`. */
const amountFor = (decimals: number) => (decimals ? `1234.${"123456789012345678".padEnd(decimals, "9").slice(0, decimals)}` : "1234");

/** eth-url-parser gives numbers as bignumber.js strings, exponent notation above 1e21: read exactly with decimal.js. */
const integer = (s: string) => BigInt(new Decimal(s).toFixed());

interface Case {
	network: CatalogueNetwork;
	token: CatalogueToken;
	address: string;
	contract: string;
	amount: string;
	units: bigint;
	uri: string;
}

async function casesOf(chainType: string): Promise<Case[]> {
	const out: Case[] = [];
	for (const network of CATALOGUE.filter(n => n.chainType === chainType)) {
		const { address } = await codecFor(network.chainType).deriveAddress(SEED, chainParamsFor(network), 7);
		for (const token of network.tokens) {
			const contract = token.isNative ? "" : (token.contractAddress ?? LOCAL_TOKEN);
			const amount = amountFor(token.decimals);
			const uri = paymentUri({ uriScheme: network.uriScheme, chainId: network.chainId, address, amount, decimals: token.decimals, contractAddress: contract, isNative: token.isNative });
			out.push({ network, token, address, contract, amount, units: toBaseUnits(amount, token.decimals), uri });
		}
	}
	return out;
}

describe("payment URIs of every catalogue network, read back by the wallets' parsers", () => {
	it("covers every chain type of the catalogue, each network with a scheme or explicitly none", () => {
		expect(new Set(CATALOGUE.map(n => n.chainType))).toEqual(new Set(CHAIN_TYPES));
		for (const n of CATALOGUE) expect(n).toHaveProperty("uriScheme");
		// The scheme is the network's, not the chain type's: Litecoin is the bitcoin chain type.
		expect(CATALOGUE.filter(n => n.slug.startsWith("litecoin")).map(n => [n.chainType, n.uriScheme])).toEqual(Array(3).fill(["bitcoin", "litecoin"]));
		expect(CATALOGUE.filter(n => n.slug.startsWith("bitcoin")).map(n => n.uriScheme)).toEqual(["bitcoin", "bitcoin", "bitcoin"]);
	});

	it("evm: EIP-681 parsed by eth-url-parser (target, chain id, recipient, amount in base units)", async () => {
		const cases = await casesOf("evm");
		expect(cases.length).toBeGreaterThan(20);
		for (const c of cases) {
			const p = parseEip681(c.uri);
			expect(p.scheme).toBe("ethereum");
			expect(p.chain_id).toBe(String(c.network.chainId));
			if (c.token.isNative) {
				expect(p.target_address).toBe(c.address);
				expect(p.function_name).toBeUndefined();
				expect(integer(p.parameters!.value)).toBe(c.units);
			} else {
				expect(p.target_address).toBe(c.contract);
				expect(p.function_name).toBe("transfer");
				expect(p.parameters!.address).toBe(c.address);
				expect(integer(p.parameters!.uint256)).toBe(c.units);
			}
		}
	});

	it("bitcoin (Bitcoin and Litecoin): BIP-21 with the coin's scheme, parsed by bip21; the other coin's scheme is refused", async () => {
		const cases = await casesOf("bitcoin");
		expect(cases.map(c => c.uri.split(":")[0])).toEqual(["bitcoin", "bitcoin", "bitcoin", "litecoin", "litecoin", "litecoin"]);
		for (const c of cases) {
			const scheme = c.network.uriScheme as string;
			const { address, options } = bip21.decode(c.uri, scheme);
			expect(address).toBe(c.address);
			// The address is one of this network's (bitcoinjs with the network's parameters).
			expect(codecFor("bitcoin").normalizeAddress(address, chainParamsFor(c.network))).toBe(c.address);
			expect(toBaseUnits(new Decimal(options.amount as number).toFixed(), 8)).toBe(c.units);
			// A wallet of the other coin refuses it, as a Litecoin wallet refused the old `bitcoin:` URI.
			expect(() => bip21.decode(c.uri, scheme === "litecoin" ? "bitcoin" : "litecoin")).toThrow("Invalid BIP21 URI");
		}
	});

	it("solana: Solana Pay parsed by @solana/pay parseURL (recipient = owner, amount in token units, spl-token = the catalogue mint)", async () => {
		const cases = await casesOf("solana");
		expect(cases).toHaveLength(5);
		for (const c of cases) {
			const p = parseURL(c.uri);
			if (!("recipient" in p)) throw new Error(`not a transfer request: ${c.uri}`);
			expect(p.recipient.toBase58()).toBe(c.address);
			expect(toBaseUnits(p.amount!.toFixed(), c.token.decimals)).toBe(c.units);
			expect(p.splToken?.toBase58()).toBe(c.token.isNative ? undefined : c.contract);
			expect(p.reference).toBeUndefined();
		}
	});

	it("ton: ton://transfer to the non-bounceable deposit address, nanotons or jetton base units, jetton = the catalogue master (@ton/core)", async () => {
		const cases = await casesOf("ton");
		expect(cases).toHaveLength(3);
		for (const c of cases) {
			const url = new URL(c.uri);
			expect(url.protocol).toBe("ton:");
			expect(url.host).toBe("transfer");
			const friendly = Address.parseFriendly(url.pathname.slice(1));
			// Not deployed until its first sweep: a bounceable transfer to it would come back.
			expect(friendly.isBounceable).toBe(false);
			expect(friendly.isTestOnly).toBe(c.network.isTestnet);
			expect(friendly.address.equals(Address.parse(c.address))).toBe(true);
			expect(BigInt(url.searchParams.get("amount") as string)).toBe(c.units);
			const jetton = url.searchParams.get("jetton");
			if (c.token.isNative) expect(jetton).toBeNull();
			else expect(Address.parse(jetton as string).equals(Address.parse(c.contract))).toBe(true);
			expect([...url.searchParams.keys()].sort()).toEqual(c.token.isNative ? ["amount"] : ["amount", "jetton"]);
		}
	});

	it.each(["tron", "cosmos", "polkadot", "move"])("%s: no payment URI in wide use, the QR code holds the deposit address alone, valid for the network", async chainType => {
		const cases = await casesOf(chainType);
		expect(cases.length).toBeGreaterThan(1);
		for (const c of cases) {
			expect(c.network.uriScheme).toBeNull();
			expect(c.uri).toBe(c.address);
			expect(codecFor(c.network.chainType).normalizeAddress(c.uri, chainParamsFor(c.network))).toBe(c.address);
		}
	});
});

describe("payment URIs, exact forms", () => {
	const base = { chainId: 0, decimals: 8, contractAddress: "", isNative: true };
	it("EIP-681 for native coins and ERC-20 tokens, amounts in base units", () => {
		expect(paymentUri({ uriScheme: "ethereum", chainId: 11155111, address: TO, amount: "0.5", decimals: 18, contractAddress: "", isNative: true })).toBe(`ethereum:${TO}@11155111?value=500000000000000000`);
		expect(paymentUri({ uriScheme: "ethereum", chainId: 8453, address: TO, amount: "1001.5", decimals: 6, contractAddress: USDC, isNative: false })).toBe(`ethereum:${USDC}@8453/transfer?address=${TO}&uint256=1001500000`);
	});
	it("BIP-21 with the network's scheme, Solana Pay, TON transfer links, the bare address elsewhere", () => {
		expect(paymentUri({ ...base, uriScheme: "bitcoin", address: "tb1qxyz", amount: "0.00100000" })).toBe("bitcoin:tb1qxyz?amount=0.001");
		expect(paymentUri({ ...base, uriScheme: "litecoin", address: "ltc1qxyz", amount: "0.00000001" })).toBe("litecoin:ltc1qxyz?amount=0.00000001");
		expect(paymentUri({ ...base, uriScheme: "solana", address: "So1Addr", amount: "2.50", decimals: 9 })).toBe("solana:So1Addr?amount=2.5");
		expect(paymentUri({ ...base, uriScheme: "solana", address: "So1Addr", amount: "3", decimals: 6, contractAddress: "Mint1", isNative: false })).toBe("solana:So1Addr?amount=3&spl-token=Mint1");
		expect(paymentUri({ ...base, uriScheme: "ton", address: "UQAddr", amount: "1.5", decimals: 9 })).toBe("ton://transfer/UQAddr?amount=1500000000");
		expect(paymentUri({ ...base, uriScheme: "ton", address: "UQAddr", amount: "12.5", decimals: 6, contractAddress: "EQMaster", isNative: false })).toBe("ton://transfer/UQAddr?amount=12500000&jetton=EQMaster");
		expect(paymentUri({ ...base, uriScheme: null, address: "TAddr", amount: "3", decimals: 6 })).toBe("TAddr");
	});
	it("refuses an amount with more decimals than the token has, rather than rounding it", () => {
		expect(() => paymentUri({ ...base, uriScheme: "litecoin", address: "ltc1qxyz", amount: "0.000000001" })).toThrow();
		expect(() => paymentUri({ ...base, uriScheme: "ton", address: "UQAddr", amount: "0.0000000001", decimals: 9 })).toThrow();
	});
});

describe("decimal helpers", () => {
	it("converts decimal strings exactly and refuses what is not one", () => {
		expect(toBaseUnits("0.000000000000000001", 18)).toBe(1n);
		expect(toBaseUnits("123456789.123456789", 9)).toBe(123456789123456789n);
		expect(toBaseUnits("1.50", 1)).toBe(15n);
		expect(() => toBaseUnits("1.23", 1)).toThrow();
		expect(() => toBaseUnits("-1", 6)).toThrow();
		expect(() => toBaseUnits("1e6", 6)).toThrow();
		expect(trimAmount("2.000")).toBe("2");
		expect(trimAmount("100")).toBe("100");
		expect(fromBaseUnits(1n, 8)).toBe("0.00000001");
		expect(fromBaseUnits(1500000n, 6)).toBe("1.5");
		expect(fromBaseUnits(2000000n, 6)).toBe("2");
		expect(fromBaseUnits(0n, 9)).toBe("0");
		expect(fromBaseUnits(-15n, 1)).toBe("-1.5");
		expect(fromBaseUnits(42n, 0)).toBe("42");
	});
	it("encodes an ERC-20 transfer call", () => {
		expect(erc20TransferData(TO, 1001500000n)).toBe(`0xa9059cbb${"0".repeat(24)}${TO.slice(2)}${(1001500000).toString(16).padStart(64, "0")}`);
		expect(() => erc20TransferData("0x12", 1n)).toThrow();
	});
});
