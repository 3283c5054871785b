/** cryptopay-gateway-sdk: the typed client of the Crypto Payment Gateway API. */
export { CryptoPayClient, IDEMPOTENT_CREATES, SDK_VERSION, fillPath } from "./client";
export type { ClientOptions, RetryOptions } from "./client";
export { CryptoPayApiError, CryptoPayConnectionError } from "./errors";
export { paginate, collect } from "./pagination";
export { isIdempotentRequest, isRetryableOutcome, parseRetryAfter } from "./retry";
export { verifyWebhook, signWebhook, WebhookVerificationError, SIGNATURE_HEADER } from "./webhooks";
export type { VerifyOptions, WebhookVerificationCode } from "./webhooks";
export type * from "./types";
export type { paths, components, webhooks, operations } from "./generated/openapi";
