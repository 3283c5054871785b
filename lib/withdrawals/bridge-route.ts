/**
 * Whether a settled checkout's sweep goes through the bridge provider (docs/withdrawals.md
 * "Strategy 2: bridged withdrawals"). Pure. A bridge is used only when both hold:
 * - the organization's withdrawal strategy is 2 (bridge), and
 * - the checkout's stored quote required a bridge (`quote.requiresBridge === true`: the payer paid
 *   on another network than the link's) and the payer's network really differs from the link's.
 * Then the funds go from the payer's network/token to the link's network/token, delivered to the
 * merchant's address for the link network's chain type. Anything else is swept directly on the
 * payer's network, as strategy 1 does.
 */
import type { BridgeQuoteRequest } from "./bridge-provider";

export interface RouteNetwork {
	id: string;
	chainType: string;
	chainId: number;
}

export interface RouteToken {
	id: string;
	/** "" for the native coin. */
	contractAddress: string;
}

export interface BridgeRouteInput {
	/** The organization's saved strategy; null without settings (treated as 1). */
	strategy: number | null;
	/** The checkout's stored quote (transactions.quote); null on rows without one. */
	quote: Record<string, unknown> | null;
	payer: { network: RouteNetwork; token: RouteToken };
	link: { network: RouteNetwork; token: RouteToken };
	/**
	 * The merchant's addresses by chain type, as withdrawals.destination resolves them (the
	 * checkout's own withdrawal addresses over the settings').
	 */
	addresses: Readonly<Record<string, string | undefined>> | null;
}

export interface BridgeLeg {
	networkId: string;
	chainType: string;
	chainId: number;
	tokenId: string;
	/** "" for the native coin. */
	token: string;
}

export type BridgeRoute =
	| { via: "direct"; reason: "strategy" | "noBridgeRequired" }
	/** Strategy 2 and a bridged quote, but no merchant address on the destination chain type: the funds stay at the deposit address. */
	| { via: "hold"; reason: "noDestinationAddress" }
	| { via: "bridge"; source: BridgeLeg; destination: BridgeLeg & { address: string }; refundAddress: string | null };

const leg = (side: { network: RouteNetwork; token: RouteToken }): BridgeLeg => ({
	networkId: side.network.id,
	chainType: side.network.chainType,
	chainId: side.network.chainId,
	tokenId: side.token.id,
	token: side.token.contractAddress,
});

export function bridgeRoute(input: BridgeRouteInput): BridgeRoute {
	if (input.strategy !== 2) return { via: "direct", reason: "strategy" };
	// The quote is the record of what the payer was charged for; a checkout never charged a bridge fee is never bridged.
	if (input.quote?.requiresBridge !== true || input.payer.network.id === input.link.network.id) return { via: "direct", reason: "noBridgeRequired" };
	const address = input.addresses?.[input.link.network.chainType];
	if (!address) return { via: "hold", reason: "noDestinationAddress" };
	return {
		via: "bridge",
		source: leg(input.payer),
		destination: { ...leg(input.link), address },
		// A failed bridge refunds on the source chain: to the merchant's address there, if any.
		refundAddress: input.addresses?.[input.payer.network.chainType] || null,
	};
}

/** The provider's quote request for sending `amount` (base units of the source token) along `route`. */
export function bridgeQuoteRequest(route: Extract<BridgeRoute, { via: "bridge" }>, amount: string): BridgeQuoteRequest {
	return {
		sourceChainType: route.source.chainType,
		sourceChainId: route.source.chainId,
		sourceToken: route.source.token,
		destinationChainType: route.destination.chainType,
		destinationChainId: route.destination.chainId,
		destinationToken: route.destination.token,
		amount,
		recipient: route.destination.address,
		refundAddress: route.refundAddress,
	};
}
