/**
 * `Idempotency-Key` for POST requests that create something (decisions.md "Payment intents").
 * The gateway copies the header to `ctx.meta.idempotencyKey`. A creating action wraps its work:
 *
 *   return this.idempotent(ctx, async record => {
 *     ...prepare (calls to other services, no DB transaction open)...
 *     return sequelize.transaction(async t => { ...create rows...; await record(t, 201, body); return body; });
 *   });
 *
 * - Keys are scoped to the caller: an API key's organization (`org:<id>`), a bearer token's user
 *   and the organization it names (`user:<id>|<x-organization-id or default>`), or `public` for
 *   unauthenticated checkouts (whose request includes the link's slug). They live 24 hours.
 * - The same key with the same request (action + params, canonical JSON, sha256) returns the first
 *   response again, same status and body, with `Idempotent-Replayed: true`, and creates nothing.
 * - The same key with another request is 400 (`errors.idempotencyKey = "reusedWithDifferentRequest"`).
 * - The stored response is encrypted (AES-GCM under MASTER_KEY, bound to scope and key): a
 *   replay must answer the intent's client secret again, and no secret sits in clear at rest.
 * - The row is inserted in the same DB transaction as what the request creates, under
 *   UNIQUE (scope, key): of two concurrent duplicates one commits; the other's insert fails (MySQL
 *   waits for the first to commit; SQLite's IMMEDIATE transactions run one after the other) and it
 *   answers the committed response. A key is therefore never bound to work that did not commit;
 *   a request that failed can be retried with the same key.
 */
import type { Context, ServiceSchema } from "moleculer";
import { Op, type Transaction } from "sequelize";
import { appOf } from "../lib/app";
import { decrypt, encrypt, sha256Hex } from "../lib/crypto";
import { badRequest, httpError } from "../lib/errors";
import type { AuthMeta } from "../lib/meta";
import { isUniqueViolation } from "../lib/payments/store";

export type IdempotencyMeta = AuthMeta & { idempotencyKey?: string };

export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;
/** Printable ASCII, as Stripe allows (UUIDs, random strings). */
const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export type RecordResponse = (t: Transaction, status: number, body: unknown) => Promise<void>;

export interface IdempotencyMethods {
	idempotent<T>(ctx: Context<unknown, IdempotencyMeta>, work: (record: RecordResponse) => Promise<T>): Promise<T>;
}

interface IdempotencyRequest {
	scope: string;
	key: string;
	requestHash: string;
}

/** JSON with object keys sorted at every level: the same request always hashes the same. */
export function canonicalJson(value: unknown): string {
	if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null";
	if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
	const entries = Object.keys(value as Record<string, unknown>)
		.filter(k => (value as Record<string, unknown>)[k] !== undefined)
		.sort()
		.map(k => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`);
	return `{${entries.join(",")}}`;
}

/** The stored response is sealed to its key: it may hold a secret (an intent's client secret). */
const sealContext = (req: IdempotencyRequest) => `idempotency:${req.scope}:${req.key}`;

function requestOf(ctx: Context<unknown, IdempotencyMeta>): IdempotencyRequest | null {
	const raw = ctx.meta.idempotencyKey;
	if (raw === undefined || raw === null || raw === "") return null;
	if (typeof raw !== "string" || !KEY_PATTERN.test(raw)) throw badRequest("Invalid Idempotency-Key header", { idempotencyKey: "invalid" });
	const { apiKey, user } = ctx.meta;
	// A bearer token acts on the organization its x-organization-id names (or its default).
	const scope = apiKey ? `org:${apiKey.organizationId}` : user ? `user:${user.id}|${ctx.meta.organizationId ?? "default"}` : "public";
	const action = ctx.action?.name ?? "";
	return { scope, key: raw, requestHash: sha256Hex(canonicalJson({ action, params: ctx.params })) };
}

export const IdempotencyMixin: Partial<ServiceSchema> = {
	methods: {
		async idempotent<T>(this: { broker: Context["broker"] }, ctx: Context<unknown, IdempotencyMeta>, work: (record: RecordResponse) => Promise<T>): Promise<T> {
			const req = requestOf(ctx);
			if (!req) return work(async () => undefined);
			const { models, clock, config } = appOf(this.broker);

			const replay = async (): Promise<{ body: T } | null> => {
				const row = await models.IdempotencyKey.findOne({ where: { scope: req.scope, key: req.key } });
				if (!row || row.expiresAt.getTime() <= clock.now().getTime()) return null;
				if (row.requestHash !== req.requestHash) {
					throw badRequest("Idempotency-Key was already used with a different request", { idempotencyKey: "reusedWithDifferentRequest" });
				}
				ctx.meta.$statusCode = row.responseStatus;
				ctx.meta.$responseHeaders = { ...(ctx.meta.$responseHeaders || {}), "Idempotent-Replayed": "true" };
				return { body: JSON.parse(decrypt(row.responseBody, config.secrets.master, sealContext(req))) as T };
			};

			const earlier = await replay();
			if (earlier) return earlier.body;

			const record: RecordResponse = async (t, status, body) => {
				const now = clock.now();
				// An expired claim of the same key gives way (the sweep removes the rest).
				await models.IdempotencyKey.destroy({ where: { scope: req.scope, key: req.key, expiresAt: { [Op.lte]: now } }, transaction: t });
				await models.IdempotencyKey.create(
					{
						scope: req.scope,
						key: req.key,
						requestHash: req.requestHash,
						responseStatus: status,
						responseBody: encrypt(JSON.stringify(body), config.secrets.master, sealContext(req)),
						createdAt: now,
						expiresAt: new Date(now.getTime() + IDEMPOTENCY_TTL_MS),
					},
					{ transaction: t },
				);
			};

			try {
				return await work(record);
			} catch (err) {
				if (!isUniqueViolation(err, "idempotency_keys")) throw err;
				// A concurrent request with the same key committed first: answer what it answered.
				const winner = await replay();
				if (winner) return winner.body;
				throw httpError(409, "A request with this Idempotency-Key is being processed; retry later");
			}
		},
	},
};

export default IdempotencyMixin;
