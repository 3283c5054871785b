/**
 * The view builders' output matches the response schemas the document publishes
 * (lib/openapi/schemas.ts), and the schemas are closed: a field the schema does not name fails.
 */
import Ajv2020 from "ajv/dist/2020";
import addFormats from "ajv-formats";
import { RESPONSE_SCHEMAS, webhookEventSchema } from "../../../lib/openapi/schemas";
import { intentConfirmedView, intentCreatedView, intentEventObject, intentStatusView, intentUpdatedView, intentView, linkPublicView, linkView, payDetailsView, transactionFullView, transactionView } from "../../../lib/payments/views";
import { networkView, tokenView } from "../../../lib/networks/view";
import { currencyView, rateViewFor, storedPrice, storedRate, tokenPriceView } from "../../../lib/pricing/view";
import { toApiKeyView } from "../../../services/keys.service";
import { requestView, settingsView } from "../../../services/withdrawals.service";
import { logView } from "../../../services/webhooks.service";
import { type DashboardSummary, remaining, volumeSeries } from "../../../lib/payments/dashboard";
import { summaryTotals, type WithdrawalSummary } from "../../../lib/withdrawals/ledger";
import { money } from "../../../lib/money";

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
// As in the document: the schemas under #/components/schemas, a webhook's body beside them.
ajv.addSchema({ components: { schemas: { ...RESPONSE_SCHEMAS, CompletedEvent: webhookEventSchema("payment_intent.completed") } } }, "doc");
const validator = (name: string) => ajv.compile({ $ref: `doc#/components/schemas/${name}` });
function expectValid(name: string, value: unknown) {
	const validate = validator(name);
	const ok = validate(value);
	expect({ name, errors: ok ? null : validate.errors }).toEqual({ name, errors: null });
}

const at = new Date("2026-11-26T12:00:00.000Z");
const intent = {
	id: "9b1e0c1e-1f2a-4b3c-8d4e-5f6a7b8c9d0e",
	amount: "12.5",
	currency: "usd",
	status: "requires_payment_method" as const,
	paymentMethodTypes: ["crypto"],
	returnUrl: "https://shop.example.com/return",
	metadata: { order: "42" },
	createdAt: at,
	updatedAt: at,
};
const tx = {
	id: "c2d4e6f8-0000-4000-8000-000000000001",
	paymentLinkId: "l1",
	amount: "12.5",
	totalAmount: "12.5",
	amountReceived: "0",
	overpaidAmount: "0",
	status: "pending" as const,
	payerTokenId: "t1",
	payerNetworkId: "n1",
	supportPercent: "0",
	depositAddress: "0x593814d3309e2dF31D112824F0bb5aa7Cb0D7d47",
	simulated: false,
	hash: null,
	expiresAt: at,
	createdAt: at,
	updatedAt: at,
};
const link = {
	id: "l1",
	title: "Order",
	slug: "pl_abc",
	amount: "1",
	tokenId: "t1",
	networkId: "n1",
	status: "active" as const,
	expiresAt: null,
	metadata: {},
	withdrawalAddresses: { evm: "0x593814d3309e2dF31D112824F0bb5aa7Cb0D7d47" },
	createdAt: at,
	updatedAt: at,
};

describe("response schemas and the view builders", () => {
	it("payment intent views", () => {
		expectValid("PaymentIntentCreated", intentCreatedView(intent, { id: "l1", slug: "pl_abc" }, "secret", "https://pay.example.com"));
		expectValid("PaymentIntent", intentView(intent, null));
		expectValid("PaymentIntent", intentView({ ...intent, reversal: { transactionId: tx.id, amount: "1", currency: "usdc", hash: "0xabc", reversedAt: at.toISOString() } }, tx));
		expectValid("PaymentIntentConfirmed", intentConfirmedView(intent, "https://pay.example.com/pay/pl_abc"));
		expectValid("PaymentIntentStatus", intentStatusView(intent));
		expectValid("PaymentIntentUpdated", intentUpdatedView(intent));
		expectValid("PaymentIntentEventObject", intentEventObject(intent, tx, "usdc", true));
		expectValid("CompletedEvent", { id: "e1", type: "payment_intent.completed", created: at.toISOString(), livemode: false, data: { object: intentEventObject({ ...intent, status: "succeeded" }, tx, "usdc", true) } });
		expect(validator("CompletedEvent")({ id: "e1", type: "payment_intent.canceled", created: at.toISOString(), livemode: false, data: { object: intentEventObject(intent, null, undefined, false) } })).toBe(false);
	});

	it("links, transactions, networks, tokens", () => {
		expectValid("PaymentLink", linkView(link));
		expectValid("PaymentLinkPublic", linkPublicView(link));
		expectValid("Transaction", transactionView(tx));
		expectValid("PayDetails", payDetailsView(link));
		expectValid("PaymentLinkPage", { data: [linkView(link)], hasNextPage: false });
		const full = transactionFullView(tx, { id: "t1", symbol: "ETH", decimals: 18, contractAddress: "" }, { id: "n1", name: "Sepolia", chainId: 11155111, publicRpcUrls: ["https://rpc.example.com"] });
		expectValid("TransactionFull", full);
		expect(validator("TransactionFull")({ ...full, payerToken: { ...full.payerToken, name: "Ether" } })).toBe(false);
		const network = { id: "n1", name: "Sepolia", chainType: "evm" as const, chainId: 11155111, blockExplorerUrl: "", publicRpcUrls: [], isActive: true, isTestnet: true, listenerConfig: null, requiredConfirmations: 2, image: null, createdAt: at, updatedAt: at };
		expectValid("Network", networkView(network));
		expectValid("Network", { ...networkView(network), watched: true });
		expectValid("Token", tokenView({ id: "t1", networkId: "n1", symbol: "USDC", name: "USD Coin", contractAddress: "0x1", decimals: 6, isNative: false, isStablecoin: true, isActive: true, image: null, createdAt: at, updatedAt: at }));
	});

	it("API keys, pricing, withdrawals, webhook logs", () => {
		const key = { id: 7, name: "Shop", keyPrefix: "ak_test_", last4: "abcd", status: "active", webhookUrl: null, createdAt: at, updatedAt: at };
		expectValid("ApiKey", toApiKeyView(key as never));
		expectValid("ApiKey", toApiKeyView({ ...key, status: "revoked", webhookUrl: "https://shop.example.com/hook" } as never));
		expectValid("Currency", currencyView({ id: "c1", code: "EUR", name: "Euro", symbol: "€", decimals: 2, isActive: true, createdAt: at, updatedAt: at }));
		expectValid("TokenPrice", tokenPriceView(storedPrice({ id: "p1", tokenId: "t1", priceUsd: "1.0002", source: "manual", createdAt: at, confirmedAt: at })));
		const rate = storedRate({ id: "r1", baseCurrencyId: "c1", quoteCurrencyId: "c2", rate: "1.08", source: "manual", createdAt: at, confirmedAt: at });
		expectValid("CurrencyRate", rateViewFor(rate, "c1", "c2"));
		expectValid("CurrencyRate", rateViewFor(rate, "c2", "c1"));
		expectValid("WithdrawalSettings", settingsView({ id: "s1", userId: 1, addresses: { evm: "0x593814d3309e2dF31D112824F0bb5aa7Cb0D7d47" }, strategy: 1, createdAt: at, updatedAt: at } as never));
		const request = { id: "w1", userId: 1, amount: "1.5", tokenId: "t1", sourceNetworkId: "n1", destinationNetworkId: null, address: "0x1", strategy: 1, status: "pending", reason: null, txHash: null, attempts: 0, createdAt: at, updatedAt: at, completedAt: null };
		expectValid("WithdrawalRequest", requestView(request as never));
		const log = { id: 3, apiKeyId: 7, userId: null, event: "payment_intent.completed", eventId: "e1", url: "https://shop.example.com/hook", statusCode: null, success: false, attemptNumber: 1, error: "ECONNREFUSED", response: null, durationMs: null, createdAt: at };
		expectValid("WebhookLog", logView(log as never));
		expectValid("WebhookLogs", { logs: [logView({ ...log, userId: 1, statusCode: 200, success: true, error: null, response: "ok", durationMs: 12 } as never)], total: 1 });
		expectValid("WithdrawalRequest", requestView({ ...request, status: "completed", txHash: "0xabc", attempts: 1, completedAt: at } as never));
	});

	it("the dashboard and withdrawal summaries (their types are the actions' return types)", () => {
		const dashboard: DashboardSummary = {
			totals: { links: 2, intents: 1, transactions: 3, totalEarnedUsdc: "12.5", withdrawnUsdc: "0", remainingUsdc: remaining("12.5", "0") },
			volumeSeries: volumeSeries(at, { "2026-11": 3 }),
			recentTransactions: [
				{ id: tx.id, status: "completed", amount: "12.5", amountReceived: "12.5", createdAt: at.toISOString(), paymentLinkTitle: "Order", paymentLinkSlug: "pl_abc", tokenSymbol: "USDC", networkName: "Sepolia", payerTokenSymbol: "ETH", payerAmount: "0.004" },
				{ id: tx.id, status: "pending", amount: "1", amountReceived: "0", createdAt: at.toISOString(), paymentLinkTitle: null, paymentLinkSlug: null, tokenSymbol: null, networkName: null, payerTokenSymbol: null, payerAmount: "1" },
			],
		};
		expectValid("DashboardSummary", dashboard);
		const balance = { tokenId: "t1", networkId: "n1", balance: money("1.5"), earned: money("2"), withdrawn: money("0.5"), fees: money(0) };
		const summary: WithdrawalSummary = {
			byNetwork: [{ networkId: "n1", networkName: "Sepolia", totalAmount: "1.5", totalUsdcValue: "3" }, { networkId: "n2", networkName: null, totalAmount: "1", totalUsdcValue: null }],
			byToken: [{ tokenId: "t1", networkId: "n1", tokenSymbol: "ETH", totalAmount: "1.5", totalUsdcValue: "3" }],
			totals: summaryTotals([balance], new Map([["t1", "2"]])),
		};
		expectValid("WithdrawalSummary", summary);
	});

	it("closed objects: a field added, renamed or retyped fails", () => {
		const view = intentView(intent, null);
		expect(validator("PaymentIntent")({ ...view, extra: 1 })).toBe(false);
		expect(validator("PaymentIntent")({ ...view, amount: 12.5 })).toBe(false);
		const { createdAt, ...renamed } = view;
		expect(validator("PaymentIntent")({ ...renamed, created: createdAt })).toBe(false);
	});

	it("the error shape: status, message, phrase; field errors and plain extras allowed, nothing nested", () => {
		expectValid("Error", { statusCode: 400, message: "Validation failed", error: "Bad Request", errors: { email: "required" } });
		expectValid("Error", { statusCode: 429, message: "Too many", error: "Too Many Requests", canRetryAt: at.toISOString() });
		expect(validator("Error")({ statusCode: 400, message: "x" })).toBe(false);
		expect(validator("Error")({ statusCode: 400, message: "x", error: "Bad Request", stack: { a: 1 } })).toBe(false);
	});
});
