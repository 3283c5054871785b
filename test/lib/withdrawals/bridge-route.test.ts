import { bridgeQuoteRequest, bridgeRoute, type BridgeRouteInput } from "../../../lib/withdrawals/bridge-route";

const POLYGON = { id: "00000000-0000-4000-8000-000000000137", chainType: "evm", chainId: 137 };
const BASE = { id: "00000000-0000-4000-8000-000000002105", chainType: "evm", chainId: 8453 };
const SOLANA = { id: "00000000-0000-4000-8000-00000000501a", chainType: "solana", chainId: 101 };
const USDC_POLYGON = { id: "00000000-0000-4000-8000-0000000000a1", contractAddress: "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359" };
const USDC_BASE = { id: "00000000-0000-4000-8000-0000000000a2", contractAddress: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913" };
const SOL = { id: "00000000-0000-4000-8000-0000000000a3", contractAddress: "" };
const EVM_MERCHANT = "0x000000000000000000000000000000000000bEEF";
const SOL_MERCHANT = "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin";

/** A checkout of a Base USDC link paid in Polygon USDC, organization on strategy 2. */
function input(over: Partial<BridgeRouteInput> = {}): BridgeRouteInput {
	return {
		strategy: 2,
		quote: { requiresBridge: true, bridgeFee: "0.51" },
		payer: { network: POLYGON, token: USDC_POLYGON },
		link: { network: BASE, token: USDC_BASE },
		addresses: { evm: EVM_MERCHANT },
		...over,
	};
}

describe("bridge route of a settled checkout", () => {
	it("bridges on strategy 2 when the quote required a bridge: payer network/token to the link's, to the merchant's address there", () => {
		const route = bridgeRoute(input());
		expect(route).toEqual({
			via: "bridge",
			source: { networkId: POLYGON.id, chainType: "evm", chainId: 137, tokenId: USDC_POLYGON.id, token: USDC_POLYGON.contractAddress },
			destination: { networkId: BASE.id, chainType: "evm", chainId: 8453, tokenId: USDC_BASE.id, token: USDC_BASE.contractAddress, address: EVM_MERCHANT },
			refundAddress: EVM_MERCHANT,
		});
	});

	it("sweeps directly on strategy 1 or without settings, even when the quote required a bridge", () => {
		expect(bridgeRoute(input({ strategy: 1 }))).toEqual({ via: "direct", reason: "strategy" });
		expect(bridgeRoute(input({ strategy: null }))).toEqual({ via: "direct", reason: "strategy" });
	});

	it("sweeps directly on strategy 2 when the quote required no bridge, or there is no quote", () => {
		const sameNetwork = { network: BASE, token: USDC_BASE };
		expect(bridgeRoute(input({ quote: { requiresBridge: false }, payer: sameNetwork }))).toEqual({ via: "direct", reason: "noBridgeRequired" });
		expect(bridgeRoute(input({ quote: null }))).toEqual({ via: "direct", reason: "noBridgeRequired" });
		expect(bridgeRoute(input({ quote: {} }))).toEqual({ via: "direct", reason: "noBridgeRequired" });
		// Only the boolean counts: a string "true" is not a quote that charged a bridge fee.
		expect(bridgeRoute(input({ quote: { requiresBridge: "true" } }))).toEqual({ via: "direct", reason: "noBridgeRequired" });
	});

	it("never bridges a checkout paid on the link's own network, whatever the quote says", () => {
		expect(bridgeRoute(input({ payer: { network: BASE, token: USDC_BASE } }))).toEqual({ via: "direct", reason: "noBridgeRequired" });
	});

	it("holds the funds when the merchant has no address on the destination chain type", () => {
		const toSolana = input({ link: { network: SOLANA, token: SOL } });
		expect(bridgeRoute(toSolana)).toEqual({ via: "hold", reason: "noDestinationAddress" });
		expect(bridgeRoute(input({ addresses: null }))).toEqual({ via: "hold", reason: "noDestinationAddress" });
		expect(bridgeRoute(input({ addresses: { evm: "" } }))).toEqual({ via: "hold", reason: "noDestinationAddress" });
	});

	it("delivers to the destination chain type's address and refunds to the source chain type's, none when missing", () => {
		const toSolana = bridgeRoute(input({ link: { network: SOLANA, token: SOL }, addresses: { solana: SOL_MERCHANT } }));
		expect(toSolana).toMatchObject({ via: "bridge", destination: { chainType: "solana", token: "", address: SOL_MERCHANT }, refundAddress: null });
		const both = bridgeRoute(input({ link: { network: SOLANA, token: SOL }, addresses: { solana: SOL_MERCHANT, evm: EVM_MERCHANT } }));
		expect(both).toMatchObject({ via: "bridge", destination: { address: SOL_MERCHANT }, refundAddress: EVM_MERCHANT });
	});

	it("builds the provider's quote request with the amount as given (base units)", () => {
		const route = bridgeRoute(input());
		if (route.via !== "bridge") throw new Error("expected a bridge route");
		expect(bridgeQuoteRequest(route, "1000000000000000000000001")).toEqual({
			sourceChainType: "evm",
			sourceChainId: 137,
			sourceToken: USDC_POLYGON.contractAddress,
			destinationChainType: "evm",
			destinationChainId: 8453,
			destinationToken: USDC_BASE.contractAddress,
			amount: "1000000000000000000000001",
			recipient: EVM_MERCHANT,
			refundAddress: EVM_MERCHANT,
		});
	});
});
