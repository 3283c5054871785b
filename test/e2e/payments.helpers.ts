/**
 * Shared set-up of the payments tests: a node with the payments services, merchants with keys
 * made through the real endpoints, catalogue ids, manual prices set through the admin endpoint.
 */
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { startNode, TestNode, StartOptions } from "../helpers/harness";
import { createUserWithToken, UserWithToken } from "../helpers/users";

export const PAYMENTS_SERVICES = ["api", "pages", "auth", "mail", "organizations", "keys", "networks", "pricing", "intents", "links", "transactions", "dashboard"];

export const IDS = {
	sepolia: networkIdFor("ethereum-sepolia"),
	sepoliaEth: tokenIdFor("ethereum-sepolia", "ETH"),
	sepoliaUsdc: tokenIdFor("ethereum-sepolia", "USDC"),
	baseSepolia: networkIdFor("base-sepolia"),
	baseSepoliaUsdc: tokenIdFor("base-sepolia", "USDC"),
	solanaDevnet: networkIdFor("solana-devnet"),
	solanaDevnetSol: tokenIdFor("solana-devnet", "SOL"),
	bitcoinTestnet: networkIdFor("bitcoin-testnet4"),
	bitcoinTestnetBtc: tokenIdFor("bitcoin-testnet4", "BTC"),
	ethereum: networkIdFor("ethereum"),
	ethereumEth: tokenIdFor("ethereum", "ETH"),
};

export async function startPaymentsNode(opts: StartOptions = {}): Promise<TestNode> {
	return startNode({ services: PAYMENTS_SERVICES, ...opts });
}

export interface Merchant extends UserWithToken {
	sandboxKey: { key: string; secret: string; id: number };
	liveKey: { key: string; secret: string; id: number };
}

export async function createMerchant(node: TestNode): Promise<Merchant> {
	const user = await createUserWithToken(node);
	const keyFor = async (orgId: string) => {
		const res = await node.http("POST", `/organizations/${orgId}/api-keys`, { token: user.token, body: { name: "server" } });
		if (res.status !== 201) throw new Error(`key creation failed: ${res.status} ${res.text}`);
		return { key: res.body.key as string, secret: res.body.secret as string, id: res.body.apiKey.id as number };
	};
	return { ...user, sandboxKey: await keyFor(user.sandbox.id), liveKey: await keyFor(user.live.id) };
}

/** A signed-up merchant and an API key of their sandbox organization (delivering webhooks to `webhookUrl`, if given). */
export async function sandboxMerchant(node: TestNode, webhookUrl?: string): Promise<{ user: UserWithToken; key: { key: string; secret: string } }> {
	const user = await createUserWithToken(node);
	const res = await node.http("POST", `/organizations/${user.sandbox.id}/api-keys`, { token: user.token, body: { name: "shop", ...(webhookUrl ? { webhookUrl } : {}) } });
	if (res.status !== 201) throw new Error(`key creation failed: ${res.status} ${res.text}`);
	return { user, key: { key: res.body.key, secret: res.body.secret } };
}

/** Manual USD prices through the admin endpoint (an admin user made for the purpose). */
export async function setPrices(node: TestNode, prices: Record<string, string>): Promise<void> {
	const admin = await createUserWithToken(node, { role: "admin" });
	for (const [tokenId, priceUsd] of Object.entries(prices)) {
		const res = await node.http("PUT", `/price/admin/token/${tokenId}`, { token: admin.token, body: { priceUsd } });
		if (res.status !== 200) throw new Error(`price failed: ${res.status} ${res.text}`);
	}
}

export function intentBody(overrides: Record<string, unknown> = {}) {
	return {
		amount: "0.5",
		currency: "eth",
		payment_method_types: ["crypto"],
		tokenId: IDS.sepoliaEth,
		networkId: IDS.sepolia,
		return_url: "https://shop.example.com/return",
		description: "Order 42",
		metadata: { orderId: "42" },
		...overrides,
	};
}

/** Every response a test saw must be below 500. */
export function expectNo5xx(statuses: number[]): void {
	expect(statuses.filter(s => s >= 500)).toEqual([]);
}

export interface OpenedCheckout {
	intentId: string;
	slug: string;
	txId: string;
	address: string;
	/** The checkout as POST /payments/links/:slug/transactions answered it. */
	checkout: Record<string, any>;
}

/**
 * An intent made with an API key, and its checkout opened as the pay page does (the payer's
 * choice of token/network in `payer`, if any): what chain tests pay.
 */
export async function openCheckout(node: TestNode, key: { key: string; secret: string }, intent: { amount: string; currency: string; tokenId: string; networkId: string }, payer: Record<string, unknown> = {}): Promise<OpenedCheckout> {
	const created = await node.http("POST", "/payment_intents", { key, body: { payment_method_types: ["crypto"], return_url: "https://shop.example.com/return", ...intent } });
	if (created.status !== 200) throw new Error(`intent failed: ${created.status} ${created.text}`);
	const slug = created.body.paymentLink.link.split("/pay/")[1];
	const tx = await node.http("POST", `/payments/links/${slug}/transactions`, { body: payer });
	if (tx.status !== 201) throw new Error(`checkout failed: ${tx.status} ${tx.text}`);
	return { intentId: created.body.id, slug, txId: tx.body.id, address: tx.body.depositAddress, checkout: tx.body };
}
