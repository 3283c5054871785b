/**
 * JSON Schemas of the gateway's response bodies and webhook events: the one definition that the
 * OpenAPI document (lib/openapi/document.ts) publishes and the view builders' tests check the
 * views against (test/lib/openapi/schemas.test.ts). Objects the views build are closed
 * (`additionalProperties: false`): a field added, renamed or retyped without this file fails the
 * HTTP tests, which validate every response against the document.
 */
import { INTENT_STATES, type IntentEventType } from "../payments/intent-state";
import { LINK_STATUSES } from "../payments/link-state";
import { TRANSACTION_STATUSES } from "../payments/settlement";
import { CHAIN_TYPES } from "../networks/catalogue";
import { ORGANIZATION_MODES } from "../networks/mode";
import { WITHDRAWAL_REQUEST_STATUSES, WITHDRAWAL_STRATEGIES } from "../withdrawals/ledger";
import type { JsonSchema } from "./fv-json-schema";

const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });
const str: JsonSchema = { type: "string" };
const nullableStr: JsonSchema = { type: ["string", "null"] };
const dateTime: JsonSchema = { type: "string", format: "date-time" };
const nullableDateTime: JsonSchema = { type: ["string", "null"], format: "date-time" };
/** Money is a decimal string, never a JSON number. */
const decimal: JsonSchema = { type: "string", pattern: "^-?[0-9]+(\\.[0-9]+)?$", description: "Decimal amount as a string" };
const int: JsonSchema = { type: "integer" };
const bool: JsonSchema = { type: "boolean" };
const freeObject: JsonSchema = { type: "object" };
const nullableInt: JsonSchema = { type: ["integer", "null"] };
const nullableDecimal: JsonSchema = { ...decimal, type: ["string", "null"], description: "Decimal amount as a string; null when it cannot be valued" };
const orgMode: JsonSchema = { enum: [...ORGANIZATION_MODES] };
const orNull = (schema: JsonSchema): JsonSchema => ({ anyOf: [schema, { type: "null" }] });

function closed(properties: Record<string, JsonSchema>, optional: string[] = [], description?: string): JsonSchema {
	return {
		type: "object",
		...(description ? { description } : {}),
		properties,
		required: Object.keys(properties).filter(k => !optional.includes(k)),
		additionalProperties: false,
	};
}

const PAYMENT_LINK = closed({
	id: str,
	title: str,
	slug: str,
	amount: decimal,
	tokenId: str,
	networkId: str,
	status: { enum: [...LINK_STATUSES] },
	expiresAt: nullableDateTime,
	metadata: freeObject,
	withdrawalAddresses: { type: ["object", "null"], additionalProperties: str },
	createdAt: dateTime,
	updatedAt: dateTime,
});

const TRANSACTION = closed({
	id: str,
	paymentLinkId: str,
	amount: decimal,
	totalAmount: decimal,
	amountReceived: decimal,
	overpaidAmount: decimal,
	amountConfirming: decimal,
	confirmations: { type: ["integer", "null"] },
	requiredConfirmations: { type: ["integer", "null"] },
	amountReversed: decimal,
	reversedAt: nullableDateTime,
	status: { enum: [...TRANSACTION_STATUSES] },
	payerTokenId: str,
	payerNetworkId: str,
	supportPercent: { type: "number" },
	depositAddress: str,
	hash: nullableStr,
	simulated: bool,
	expiresAt: dateTime,
	createdAt: dateTime,
	updatedAt: dateTime,
});

const page = (item: JsonSchema): JsonSchema => closed({ data: { type: "array", items: item }, hasNextPage: bool }, [], "One page, newest first");

/** `#/components/schemas`: every response body the document names by reference. */
export const RESPONSE_SCHEMAS: Record<string, JsonSchema> = {
	/** The spec's error shape (interface-spec "Errors"): our own client errors add plain fields such as `canRetryAt` or `code`. */
	Error: {
		type: "object",
		description: "Every error: the status, a message (translated per x-custom-lang), the status phrase, field errors for validation failures",
		properties: {
			statusCode: { type: "integer", minimum: 400, maximum: 599 },
			message: str,
			error: str,
			errors: { type: "object", additionalProperties: str, description: "Field (dotted path) to error code" },
			canRetryAt: { type: "string", description: "When a locked action may be tried again" },
			code: { type: "string", description: "Machine-readable reason, e.g. SIMULATION_SANDBOX_ONLY" },
		},
		required: ["statusCode", "message", "error"],
		additionalProperties: { type: ["string", "number", "boolean", "null"] },
	},
	Info: closed({ name: str, version: str, apiVersion: { const: "v1" }, environment: str, publicUrl: str, time: dateTime }),
	IntentReversal: closed({ transactionId: str, amount: decimal, currency: str, hash: str, reversedAt: dateTime }),
	LatestTransaction: closed({ id: str, status: { enum: [...TRANSACTION_STATUSES] }, hash: nullableStr, amount: decimal, currency: str }, ["currency"]),
	PaymentIntentCreated: closed({
		id: str,
		amount: decimal,
		currency: str,
		status: { enum: [...INTENT_STATES] },
		paymentMethodTypes: { type: "array", items: str },
		clientSecret: str,
		returnUrl: str,
		paymentLink: closed({ id: str, link: { type: "string", format: "uri" } }),
		createdAt: dateTime,
	}),
	PaymentIntent: closed(
		{
			id: str,
			amount: decimal,
			currency: str,
			status: { enum: [...INTENT_STATES] },
			paymentMethodTypes: { type: "array", items: str },
			latestTransaction: { anyOf: [ref("LatestTransaction"), { type: "null" }] },
			reversal: ref("IntentReversal"),
			createdAt: dateTime,
			updatedAt: dateTime,
		},
		["reversal"],
	),
	NextAction: closed({ type: { const: "redirect_to_url" }, redirectToUrl: closed({ url: { type: "string", format: "uri" } }) }),
	PaymentIntentConfirmed: closed({ id: str, status: { enum: [...INTENT_STATES] }, nextAction: ref("NextAction") }),
	PaymentIntentStatus: closed({ id: str, status: { enum: [...INTENT_STATES] }, updatedAt: dateTime }),
	PaymentIntentUpdated: closed({ id: str, amount: decimal, currency: str, status: { enum: [...INTENT_STATES] }, updatedAt: dateTime }),
	PaymentLink: PAYMENT_LINK,
	/** Without the merchant's withdrawal addresses (GET /payments/links/:slug is public). */
	PaymentLinkPublic: closed(Object.fromEntries(Object.entries(PAYMENT_LINK.properties as Record<string, JsonSchema>).filter(([k]) => k !== "withdrawalAddresses"))),
	Transaction: TRANSACTION,
	Network: closed(
		{
			id: str,
			name: str,
			chainType: { enum: [...CHAIN_TYPES] },
			chainId: { type: "number" },
			blockExplorerUrl: str,
			publicRpcUrls: { type: "array", items: str },
			isActive: bool,
			isTestnet: bool,
			listenerConfig: { type: ["object", "null"] },
			requiredConfirmations: int,
			image: nullableStr,
			createdAt: dateTime,
			updatedAt: dateTime,
			deletedAt: nullableDateTime,
			watched: { type: "boolean", description: "A chain watcher follows the network now (listed networks only)" },
		},
		["watched"],
	),
	Token: closed(
		{
			id: str,
			networkId: str,
			symbol: str,
			name: str,
			contractAddress: str,
			decimals: int,
			isNative: bool,
			isStablecoin: bool,
			isActive: bool,
			image: nullableStr,
			createdAt: dateTime,
			updatedAt: dateTime,
			deletedAt: nullableDateTime,
		},
		[],
	),
	User: closed({
		id: int,
		email: nullableStr,
		firstName: nullableStr,
		lastName: nullableStr,
		role: str,
		status: str,
		provider: str,
		emailConfirmed: bool,
		photoId: nullableStr,
		createdAt: dateTime,
		updatedAt: dateTime,
	}),
	File: closed({ id: str, originalName: str, mimeType: str, size: int, path: str, createdAt: dateTime }),
	/** `data.object` of a payment intent event (lib/payments/views.ts intentEventObject). */
	PaymentIntentEventObject: closed(
		{
			id: str,
			amount: decimal,
			currency: str,
			status: { enum: ["requires_payment_method", "requires_confirmation", "processing", "completed", "canceled"] },
			paymentMethodTypes: { type: "array", items: str },
			metadata: freeObject,
			reversal: ref("IntentReversal"),
			createdAt: dateTime,
			updatedAt: dateTime,
			latestTransaction: { anyOf: [ref("LatestTransaction"), { type: "null" }] },
		},
		["reversal", "latestTransaction"],
	),
	/** lib/payments/views.ts payDetailsView: what the hosted pay page shows of a link. */
	PayDetails: closed(Object.fromEntries(Object.entries(PAYMENT_LINK.properties as Record<string, JsonSchema>).filter(([k]) => ["id", "title", "slug", "amount", "tokenId", "networkId", "status", "expiresAt", "metadata", "createdAt"].includes(k)))),
	/** POST /pay/{slug}/cancel: the link's intent when it has one, else the link itself. */
	PayCanceled: closed({ id: str, status: { enum: [...new Set<string>([...INTENT_STATES, ...LINK_STATUSES])] }, updatedAt: dateTime }),
	/** lib/payments/checkout.ts quoteView (the amounts of lib/payments/quote.ts QuoteAmounts). */
	Quote: closed({
		originalAmount: decimal,
		supportPercent: decimal,
		supportAmount: decimal,
		originalTokenSymbol: str,
		payerTokenSymbol: str,
		bridgeFee: decimal,
		bridgeFeeUsd: decimal,
		bridgeFeeInPayerToken: decimal,
		originalAmountInPayerToken: decimal,
		totalAmount: decimal,
		requiresBridge: bool,
		payerTokenId: str,
		payerNetworkId: str,
		payerNetworkName: str,
		payerNetwork: ref("Network"),
		payerToken: ref("Token"),
	}),
	/** GET /payments/transactions/{id}/full: the transaction with what a wallet needs of its token and network. */
	TransactionFull: closed({
		...(TRANSACTION.properties as Record<string, JsonSchema>),
		payerToken: closed({ id: str, symbol: str, decimals: int, contractAddress: str }),
		payerNetwork: closed({ id: str, name: str, chainId: { type: "number" }, publicRpcUrls: { type: "array", items: str } }),
	}),
	PaymentLinkPage: page(ref("PaymentLink")),
	TransactionPage: page(ref("Transaction")),
	UserPage: page(ref("User")),
	/** A new session (services/auth.service.ts startSession, LoginResponse); the user as lib/users/view.ts shows it. */
	LoginResponse: closed({
		token: { type: "string", description: "Access token (JWT), the bearer credential" },
		refreshToken: { type: "string", description: "Bearer credential of POST /auth/refresh" },
		tokenExpires: { type: "integer", description: "When the access token expires (milliseconds since the epoch)" },
		user: ref("User"),
	}),
	RefreshResponse: closed({
		token: { type: "string", description: "Access token (JWT), the bearer credential" },
		refreshToken: { type: "string", description: "The new refresh token (the one sent is spent)" },
		tokenExpires: { type: "integer", description: "When the access token expires (milliseconds since the epoch)" },
	}),
	ResendStatus: closed({ canResend: bool, canRetryAt: nullableDateTime, remainingToday: int }),
	/** services/keys.service.ts toApiKeyView. */
	ApiKey: closed({
		id: int,
		name: str,
		keyPrefix: { type: "string", description: "First 8 characters of the key (ak_live_ or ak_test_)" },
		last4: str,
		status: { enum: ["active", "revoked"] },
		webhookUrl: nullableStr,
		createdAt: dateTime,
		updatedAt: dateTime,
	}),
	ApiKeyCreated: closed({ apiKey: ref("ApiKey"), key: str, secret: { type: "string", description: "Shown in this answer only" } }),
	/** The organization and mode of a key (POST /api-keys/test adds `ok`). */
	ApiKeyPrincipal: closed({ id: int, organizationId: str, mode: orgMode }),
	ApiKeyCheck: closed({ ok: { const: true }, organizationId: str, mode: orgMode }),
	/** services/organizations.service.ts toView: the organization with the caller's role in it. */
	Organization: closed({ id: str, name: str, mode: orgMode, role: { enum: ["owner", "admin", "member"] }, createdAt: dateTime }),
	/** lib/pricing/view.ts. */
	Currency: closed({ id: str, code: str, name: str, symbol: str, decimals: int, isActive: bool, createdAt: dateTime, updatedAt: dateTime }),
	TokenPrice: closed({ id: str, tokenId: str, priceUsd: decimal, source: str, createdAt: dateTime }),
	CurrencyRate: closed({
		id: str,
		baseCurrencyId: str,
		quoteCurrencyId: str,
		rate: { ...decimal, description: "1 base = rate quote" },
		source: str,
		createdAt: dateTime,
		inverted: { type: "boolean", description: "The stored rate is quote to base and this is its inverse" },
	}),
	FiatQuote: closed(
		{
			amountUsd: decimal,
			amountUsdc: decimal,
			sourceAmount: decimal,
			sourceCurrency: str,
			currencyRateId: { type: ["string", "null"], description: "null when the source currency is USD" },
			tokenAmount: decimal,
			tokenSymbol: str,
			tokenPriceId: { type: "string", description: "The price the token amount was computed with" },
			tokenPriceUsd: decimal,
		},
		["tokenAmount", "tokenSymbol", "tokenPriceId", "tokenPriceUsd"],
		"The token fields only when tokenId was given",
	),
	/** services/withdrawals.service.ts settingsView. */
	WithdrawalSettings: closed({
		id: str,
		userId: int,
		addresses: { type: "object", additionalProperties: str, description: "Chain type to address" },
		isEnabled: { const: true },
		strategy: { enum: [...WITHDRAWAL_STRATEGIES] },
		createdAt: dateTime,
		updatedAt: dateTime,
	}),
	/** services/withdrawals.service.ts requestView. */
	WithdrawalRequest: closed({
		id: str,
		userId: int,
		amount: decimal,
		tokenId: str,
		sourceNetworkId: str,
		destinationNetworkId: nullableStr,
		address: str,
		strategy: { enum: [...WITHDRAWAL_STRATEGIES] },
		status: { enum: [...WITHDRAWAL_REQUEST_STATUSES] },
		reason: nullableStr,
		txHash: nullableStr,
		attempts: int,
		createdAt: dateTime,
		updatedAt: dateTime,
		completedAt: nullableDateTime,
	}),
	WithdrawalSummary: closed({
		byNetwork: { type: "array", items: closed({ networkId: str, networkName: nullableStr, totalAmount: decimal, totalUsdcValue: nullableDecimal }) },
		byToken: { type: "array", items: closed({ tokenId: str, networkId: str, tokenSymbol: nullableStr, totalAmount: decimal, totalUsdcValue: nullableDecimal }) },
		totals: closed({ totalEarnedUsdc: decimal, totalWithdrawnUsdc: decimal, remainingUsdc: decimal }),
	}),
	/** services/webhooks.service.ts logView: one delivery attempt. */
	WebhookLog: closed({
		id: int,
		apiKeyId: int,
		userId: nullableInt,
		event: str,
		eventId: str,
		url: str,
		statusCode: { type: ["integer", "null"], description: "What the endpoint answered; null when no answer came" },
		success: bool,
		attemptNumber: int,
		error: nullableStr,
		response: nullableStr,
		durationMs: nullableInt,
		createdAt: dateTime,
	}),
	WebhookLogs: closed({ logs: { type: "array", items: ref("WebhookLog") }, total: int }),
	WebhookTestSent: closed({ success: { const: true }, eventId: str, delivered: bool, statusCode: nullableInt }),
	WebhookReceived: closed({ received: { const: true } }),
	/** services/dashboard.service.ts. */
	DashboardSummary: closed({
		totals: closed({ links: int, intents: int, transactions: int, totalEarnedUsdc: decimal, withdrawnUsdc: decimal, remainingUsdc: decimal }),
		volumeSeries: { type: "array", items: closed({ month: { type: "string", pattern: "^[0-9]{4}-[0-9]{2}$" }, transactionCount: { type: "string", pattern: "^[0-9]+$" } }) },
		recentTransactions: {
			type: "array",
			items: closed({
				id: str,
				status: { enum: [...TRANSACTION_STATUSES] },
				amount: decimal,
				amountReceived: decimal,
				createdAt: dateTime,
				paymentLinkTitle: nullableStr,
				paymentLinkSlug: nullableStr,
				tokenSymbol: nullableStr,
				networkName: nullableStr,
				payerTokenSymbol: nullableStr,
				payerAmount: decimal,
			}),
		},
	}),
};

/** Every webhook event type (the type check below fails when lib/payments/intent-state.ts gains one not listed). */
export const INTENT_EVENT_TYPES = [
	"payment_intent.processing",
	"payment_intent.completed",
	"payment_intent.canceled",
	"payment_intent.requires_payment_method",
	"payment_intent.reversed",
	"payment_intent.recredited",
] as const satisfies readonly IntentEventType[];
type Unlisted = Exclude<IntentEventType, (typeof INTENT_EVENT_TYPES)[number]>;
const allListed: [Unlisted] extends [never] ? true : never = true;
void allListed;

/** The envelope of every outbound webhook (docs/webhooks.md "Outbound events"). */
export function webhookEventSchema(type: string): JsonSchema {
	return closed({
		id: str,
		type: { const: type },
		created: dateTime,
		livemode: bool,
		data: closed({ object: ref("PaymentIntentEventObject") }),
	});
}

/** What an action answers on success: the status and the body's schema (none for 204 and `noBody`). */
export interface SuccessResponse {
	status: number;
	schema?: JsonSchema;
	description: string;
	/** Answered without a body (the spec's "200 empty"). */
	noBody?: boolean;
}

const list = (item: JsonSchema): JsonSchema => ({ type: "array", items: item });

/**
 * Success answers per action. Every action with a REST route is listed: building the document
 * fails for one that is not (lib/openapi/document.ts), so a new route comes with its schema.
 */
export const SUCCESS_RESPONSES: Record<string, SuccessResponse> = {
	"api.info": { status: 200, schema: ref("Info"), description: "What this gateway is" },
	"intents.create": { status: 200, schema: ref("PaymentIntentCreated"), description: "The new payment intent, with its client secret (shown once)" },
	"intents.get": { status: 200, schema: ref("PaymentIntent"), description: "The payment intent" },
	"intents.confirm": { status: 200, schema: ref("PaymentIntentConfirmed"), description: "Confirmed: where to send the payer" },
	"intents.update": { status: 200, schema: ref("PaymentIntentUpdated"), description: "The updated payment intent" },
	"intents.cancel": { status: 200, schema: ref("PaymentIntentStatus"), description: "The canceled payment intent" },
	"intents.complete": { status: 200, schema: ref("PaymentIntentStatus"), description: "The completed payment intent" },
	"intents.simulate": { status: 200, schema: ref("PaymentIntent"), description: "The payment intent after the simulated payment" },
	"links.getBySlug": { status: 200, schema: ref("PaymentLinkPublic"), description: "The payment link" },
	"links.create": { status: 201, schema: ref("PaymentLink"), description: "The new payment link" },
	"links.update": { status: 200, schema: ref("PaymentLink"), description: "The updated payment link" },
	"links.remove": { status: 204, description: "Deleted" },
	"links.checkout": { status: 201, schema: ref("Transaction"), description: "The new checkout transaction" },
	"links.list": { status: 200, schema: ref("PaymentLinkPage"), description: "The organization's payment links" },
	"links.quote": { status: 200, schema: ref("Quote"), description: "What the payer would pay with that token" },
	"links.simulate": { status: 200, schema: ref("Transaction"), description: "The checkout after the simulated payment" },
	"links.payDetails": { status: 200, schema: ref("PayDetails"), description: "The link as the pay page shows it" },
	"links.payConfirm": { status: 200, schema: ref("PaymentIntentConfirmed"), description: "Confirmed: where to send the payer" },
	"links.payCancel": { status: 200, schema: ref("PayCanceled"), description: "The canceled intent, or the link when it has none" },
	"transactions.list": { status: 200, schema: ref("TransactionPage"), description: "The organization's checkout transactions" },
	"transactions.full": { status: 200, schema: ref("TransactionFull"), description: "The checkout transaction with its payer token and network" },
	"transactions.payer": { status: 200, schema: ref("Transaction"), description: "The checkout, repriced in the new token" },
	"transactions.support": { status: 200, schema: ref("Transaction"), description: "The checkout, repriced with the new support percent" },
	"networks.list": { status: 200, schema: list(ref("Network")), description: "The networks" },
	"users.list": { status: 200, schema: ref("UserPage"), description: "The users" },
	"transactions.get": { status: 200, schema: ref("Transaction"), description: "The checkout transaction" },
	"networks.tokens": { status: 200, schema: list(ref("Token")), description: "The network's tokens" },
	"auth.me": { status: 200, schema: ref("User"), description: "The signed-in user" },
	"users.create": { status: 201, schema: ref("User"), description: "The new user" },
	"users.get": { status: 200, schema: ref("User"), description: "The user" },
	"users.update": { status: 200, schema: ref("User"), description: "The updated user" },
	"users.remove": { status: 204, description: "Deleted" },
	"files.upload": { status: 201, schema: ref("File"), description: "The stored file" },
	"auth.login": { status: 200, schema: ref("LoginResponse"), description: "Signed in" },
	"auth.loginVerifyCode": { status: 200, schema: ref("LoginResponse"), description: "Signed in" },
	"auth.registerVerifyCode": { status: 200, schema: ref("LoginResponse"), description: "Registered and signed in" },
	"auth.confirmEmail": { status: 200, schema: ref("LoginResponse"), description: "Confirmed and signed in" },
	"auth.googleLogin": { status: 200, schema: ref("LoginResponse"), description: "Signed in" },
	"auth.refresh": { status: 200, schema: ref("RefreshResponse"), description: "A new access token and refresh token" },
	"auth.resendStatus": { status: 200, schema: ref("ResendStatus"), description: "Whether a confirmation mail may be sent now" },
	"auth.updateMe": { status: 200, schema: ref("User"), description: "The updated user" },
	"keys.create": { status: 201, schema: ref("ApiKeyCreated"), description: "The new API key, with its secret (shown once)" },
	"keys.list": { status: 200, schema: list(ref("ApiKey")), description: "The organization's API keys" },
	"keys.update": { status: 200, schema: ref("ApiKey"), description: "The updated API key" },
	"keys.revoke": { status: 200, schema: ref("ApiKey"), description: "The revoked API key" },
	"keys.test": { status: 200, schema: ref("ApiKeyCheck"), description: "The key and secret are valid" },
	"keys.whoami": { status: 200, schema: ref("ApiKeyPrincipal"), description: "The key the request is authenticated with" },
	"organizations.list": { status: 200, schema: list(ref("Organization")), description: "The caller's organizations" },
	"organizations.create": { status: 201, schema: ref("Organization"), description: "The new organization" },
	"pricing.tokenPrice": { status: 200, schema: orNull(ref("TokenPrice")), description: "The token's latest price, or null when none exists" },
	"pricing.currencies": { status: 200, schema: list(ref("Currency")), description: "The currencies" },
	"pricing.currencyRate": { status: 200, schema: orNull(ref("CurrencyRate")), description: "The rate of the pair, or null when none exists" },
	"pricing.fiatQuote": { status: 200, schema: ref("FiatQuote"), description: "The amount in USD (and in the token)" },
	"pricing.setTokenPrice": { status: 200, schema: ref("TokenPrice"), description: "The stored price" },
	"pricing.setCurrencyRate": { status: 200, schema: ref("CurrencyRate"), description: "The stored rate" },
	"pricing.updateCurrency": { status: 200, schema: ref("Currency"), description: "The updated currency" },
	"withdrawals.getSettings": { status: 200, schema: orNull(ref("WithdrawalSettings")), description: "The organization's withdrawal settings, or null while none are saved" },
	"withdrawals.saveSettings": { status: 200, schema: ref("WithdrawalSettings"), description: "The saved settings" },
	"withdrawals.createRequest": { status: 201, schema: ref("WithdrawalRequest"), description: "The new withdrawal request" },
	"withdrawals.listRequests": { status: 200, schema: list(ref("WithdrawalRequest")), description: "The organization's withdrawal requests, newest first" },
	"withdrawals.summary": { status: 200, schema: ref("WithdrawalSummary"), description: "Balances per network and token, and totals in USDC" },
	"webhooks.receive": { status: 200, schema: ref("WebhookReceived"), description: "Received" },
	"webhooks.sendTest": { status: 200, schema: ref("WebhookTestSent"), description: "The test event was sent (delivered: the endpoint answered 200)" },
	"webhooks.sendCustom": { status: 200, schema: ref("WebhookTestSent"), description: "The custom event was sent (delivered: the endpoint answered 200)" },
	"webhooks.logs": { status: 200, schema: ref("WebhookLogs"), description: "Delivery attempts, newest first" },
	"dashboard.summary": { status: 200, schema: ref("DashboardSummary"), description: "Totals, the monthly volume and the latest transactions" },
	"auth.loginSendCode": { status: 200, noBody: true, description: "Sent when the address has an active, confirmed account (the answer is the same either way)" },
	"auth.registerSendCode": { status: 200, noBody: true, description: "Sent" },
	"auth.register": { status: 204, description: "Registered: a confirmation mail was sent" },
	"auth.resendConfirmation": { status: 204, description: "Sent" },
	"auth.confirmNewEmail": { status: 204, description: "Confirmed" },
	"auth.forgotPassword": { status: 204, description: "Sent when the address is known" },
	"auth.resetPassword": { status: 204, description: "Password changed" },
	"auth.logout": { status: 204, description: "Signed out" },
	"auth.deleteMe": { status: 204, description: "Account deleted" },
};
