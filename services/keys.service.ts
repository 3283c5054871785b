/**
 * API keys of an organization: create (the secret is shown once), list, rename / set the webhook
 * URL, revoke; `authenticate` for the gateway's Basic credentials and POST /api-keys/test.
 *
 * At rest (decisions.md "API keys"): the key only as a keyed digest (look-up), the secret as a
 * keyed digest (checking, constant time, no bcrypt) and AES-GCM encrypted under the master key
 * (webhook signing, `signingSecret`). The gateway caches `authenticate` answers for 30 s per node;
 * every change broadcasts `keys.changed` so a revocation takes effect at once everywhere.
 */
import type { Context, Service, ServiceSchema } from "moleculer";
import { appOf } from "../lib/app";
import { decrypt, digest, encrypt, safeEqual } from "../lib/crypto";
import { badRequest, notFound, unauthorized } from "../lib/errors";
import { registerTranslations } from "../lib/i18n";
import type { AuthApiKey, AuthMeta } from "../lib/meta";
import { announceKeysChanged } from "../lib/keys/announce";
import { generateKeyPair, isWellFormedPair, keyPrefixOf, last4Of } from "../lib/keys/format";
import { WEBHOOK_URL_MAX_LENGTH, WebhookTarget, webhookUrlProblem } from "../lib/keys/webhook-url";
import { MANAGERS, OrgScopeMixin, OrgScopeMethods } from "../mixins/org-scope.mixin";
import type { ApiKey } from "../models/api-key.model";
import type { MembershipRole } from "../models/organization.model";

registerTranslations("es", {
	"API key not found": "Clave de API no encontrada",
	"Invalid API key": "Clave de API no válida",
	"Invalid webhook URL": "URL de webhook no válida",
	"Cannot update an API key in state {state}": "No se puede actualizar una clave de API en estado {state}",
	"An organization can have at most 20 active API keys": "Una organización puede tener como máximo 20 claves de API activas",
});

export interface ApiKeyView {
	id: number;
	name: string;
	keyPrefix: string;
	last4: string;
	status: "active" | "revoked";
	webhookUrl: string | null;
	createdAt: string;
	updatedAt: string;
}

export interface CreatedApiKey {
	apiKey: ApiKeyView;
	key: string;
	secret: string;
}

type Ctx<P = Record<string, never>> = Context<P, AuthMeta>;

interface KeysMethods extends OrgScopeMethods {
	findOwnKey(ctx: Ctx<any>, id: number, roles?: MembershipRole[]): Promise<ApiKey>;
	checkWebhookUrl(url: string | null | undefined): void;
	check(key: string, secret: string): Promise<AuthApiKey | null>;
	announceChanged(ctx: Ctx<any>, id: number): Promise<void>;
}

type KeysThis = Service<{ rest: string }> & KeysMethods;

/**
 * Active keys an organization may hold. Rate limits count per key (and per organization, see
 * docs/gateway.md), so keys are not free budget; 20 covers a key per shop or environment.
 */
export const MAX_ACTIVE_KEYS_PER_ORGANIZATION = 20;
const DEFAULT_NAME = "API key";
/** Ids are INT columns: anything else names no key (400 from the validator, never a 500). */
const KEY_ID = { type: "number", integer: true, positive: true, max: 2147483647, convert: true } as const;
const NAME = { type: "string", trim: true, min: 1, max: 120 } as const;
const WEBHOOK_URL = { type: "string", trim: true, min: 1, max: WEBHOOK_URL_MAX_LENGTH } as const;
/** Credentials in params: never into traces. */
const SECRET_PARAMS = { tags: { params: false, response: false } } as const;
/** Bounded like the gateway's Basic credentials; anything longer is no key. */
const CREDENTIAL = { type: "string", max: 256 } as const;

const keyNotFound = () => notFound("API key not found");
const tooManyKeys = () =>
	badRequest(`An organization can have at most ${MAX_ACTIVE_KEYS_PER_ORGANIZATION} active API keys`, { organizationId: "tooManyApiKeys" });
const secretContext = (keyDigest: string) => `api-key:${keyDigest}`;

export function toApiKeyView(row: ApiKey): ApiKeyView {
	return {
		id: Number(row.id),
		name: row.name,
		keyPrefix: row.keyPrefix,
		last4: row.last4,
		status: row.status,
		webhookUrl: row.webhookUrl ?? null,
		createdAt: new Date(row.createdAt).toISOString(),
		updatedAt: new Date(row.updatedAt).toISOString(),
	};
}

const KeysService: ServiceSchema<{ rest: string }, KeysMethods & Record<string, any>> = {
	name: "keys",
	mixins: [OrgScopeMixin as ServiceSchema],
	settings: { rest: "/" },

	actions: {
		create: {
			rest: "POST /organizations/:organizationId/api-keys",
			auth: "jwt",
			tracing: SECRET_PARAMS,
			params: {
				$$strict: "remove",
				organizationId: { type: "string", max: 200 },
				name: { ...NAME, optional: true },
				webhookUrl: { ...WEBHOOK_URL, optional: true, nullable: true },
			},
			async handler(this: KeysThis, ctx: Ctx<{ organizationId: string; name?: string; webhookUrl?: string | null }>): Promise<CreatedApiKey> {
				const { models, config, sequelize } = appOf(this.broker);
				const org = await this.resolveOrganization(ctx, { organizationId: ctx.params.organizationId, roles: MANAGERS });
				this.checkWebhookUrl(ctx.params.webhookUrl);
				const { key, secret } = generateKeyPair(org.mode);
				const keyDigest = digest(key, config.secrets.master);
				const row = await sequelize.transaction(async t => {
					// The organization's row serialises concurrent creates (MySQL); SQLite's IMMEDIATE transaction does it up front.
					await models.Organization.findByPk(org.id, { attributes: ["id"], transaction: t, lock: t.LOCK.UPDATE });
					const active = await models.ApiKey.count({ where: { organizationId: org.id, status: "active" }, transaction: t });
					if (active >= MAX_ACTIVE_KEYS_PER_ORGANIZATION) throw tooManyKeys();
					return models.ApiKey.create(
						{
							organizationId: org.id,
							createdByUserId: ctx.meta.user!.id,
							name: ctx.params.name || DEFAULT_NAME,
							mode: org.mode,
							keyPrefix: keyPrefixOf(key),
							keyDigest,
							last4: last4Of(key),
							secretDigest: digest(secret, config.secrets.master),
							// Bound to this key's digest: the ciphertext cannot be moved to another row.
							secretEncrypted: encrypt(secret, config.secrets.master, secretContext(keyDigest)),
							webhookUrl: ctx.params.webhookUrl ?? null,
						},
						{ transaction: t },
					);
				});
				ctx.meta.$statusCode = 201;
				ctx.meta.$responseHeaders = { "Cache-Control": "no-store" };
				return { apiKey: toApiKeyView(row), key, secret };
			},
		},

		list: {
			rest: "GET /organizations/:organizationId/api-keys",
			auth: "jwt",
			params: { $$strict: "remove", organizationId: { type: "string", max: 200 } },
			async handler(this: KeysThis, ctx: Ctx<{ organizationId: string }>): Promise<ApiKeyView[]> {
				const { models } = appOf(this.broker);
				const org = await this.resolveOrganization(ctx, { organizationId: ctx.params.organizationId });
				const rows = await models.ApiKey.findAll({ where: { organizationId: org.id }, order: [["id", "DESC"]] });
				return rows.map(toApiKeyView);
			},
		},

		update: {
			rest: "PATCH /api-keys/:id",
			auth: "jwt",
			params: {
				$$strict: "remove",
				id: KEY_ID,
				name: { ...NAME, optional: true },
				webhookUrl: { ...WEBHOOK_URL, optional: true, nullable: true },
			},
			async handler(this: KeysThis, ctx: Ctx<{ id: number; name?: string; webhookUrl?: string | null }>): Promise<ApiKeyView> {
				const row = await this.findOwnKey(ctx, ctx.params.id, MANAGERS);
				if (row.status !== "active") throw badRequest(`Cannot update an API key in state ${row.status}`);
				this.checkWebhookUrl(ctx.params.webhookUrl);
				const changes: Partial<{ name: string; webhookUrl: string | null }> = {};
				if (ctx.params.name !== undefined) changes.name = ctx.params.name;
				if (ctx.params.webhookUrl !== undefined) changes.webhookUrl = ctx.params.webhookUrl;
				if (Object.keys(changes).length > 0) await row.update(changes);
				await this.announceChanged(ctx, row.id);
				return toApiKeyView(row);
			},
		},

		revoke: {
			rest: "POST /api-keys/:id/revoke",
			auth: "jwt",
			params: { $$strict: "remove", id: KEY_ID },
			async handler(this: KeysThis, ctx: Ctx<{ id: number }>): Promise<ApiKeyView> {
				const { clock } = appOf(this.broker);
				const row = await this.findOwnKey(ctx, ctx.params.id, MANAGERS);
				// Revoking twice answers the revoked key unchanged (and still tells every node).
				if (row.status !== "revoked") await row.update({ status: "revoked", revokedAt: clock.now() });
				await this.announceChanged(ctx, row.id);
				return toApiKeyView(row);
			},
		},

		/** Lets a merchant check a key and secret without making a call that changes anything. */
		test: {
			rest: "POST /api-keys/test",
			auth: "public",
			tracing: SECRET_PARAMS,
			params: { $$strict: "remove", key: CREDENTIAL, secret: CREDENTIAL },
			async handler(this: KeysThis, ctx: Ctx<{ key: string; secret: string }>) {
				const found = await this.check(ctx.params.key, ctx.params.secret);
				if (!found) throw unauthorized("Invalid API key");
				return { ok: true, organizationId: found.organizationId, mode: found.mode };
			},
		},

		/** The key the request is authenticated with (Basic credentials). */
		whoami: {
			rest: "GET /api-keys/me",
			auth: "key",
			params: { $$strict: "remove" },
			handler(this: KeysThis, ctx: Ctx): AuthApiKey {
				const { id, organizationId, mode } = ctx.meta.apiKey!;
				return { id, organizationId, mode };
			},
		},

		/** For the gateway: the principal of an active key, null for anything else. */
		authenticate: {
			visibility: "public",
			auth: "public",
			tracing: SECRET_PARAMS,
			params: { key: CREDENTIAL, secret: CREDENTIAL },
			async handler(this: KeysThis, ctx: Ctx<{ key: string; secret: string }>): Promise<AuthApiKey | null> {
				return this.check(ctx.params.key, ctx.params.secret);
			},
		},

		/** For the webhook sender: the plain secret that signs this key's events. Never over HTTP. */
		signingSecret: {
			visibility: "public",
			auth: "public",
			tracing: SECRET_PARAMS,
			params: { id: KEY_ID },
			async handler(this: KeysThis, ctx: Ctx<{ id: number }>): Promise<string> {
				const { models, config } = appOf(this.broker);
				const row = await models.ApiKey.findByPk(ctx.params.id, { attributes: ["id", "keyDigest", "secretEncrypted"] });
				if (!row) throw keyNotFound();
				return decrypt(row.secretEncrypted, config.secrets.master, secretContext(row.keyDigest));
			},
		},
		/**
		 * For the webhook sender: where each key's events go and who to name in the logs. Unknown
		 * ids are left out; revoked keys are listed (status) so their queued events can be dropped.
		 */
		webhookTargets: {
			visibility: "public",
			auth: "public",
			params: { ids: { type: "array", min: 1, max: 1000, items: KEY_ID } },
			async handler(this: KeysThis, ctx: Ctx<{ ids: number[] }>): Promise<WebhookTarget[]> {
				const { models } = appOf(this.broker);
				const rows = await models.ApiKey.findAll({
					where: { id: [...new Set(ctx.params.ids)] },
					attributes: ["id", "organizationId", "mode", "webhookUrl", "status", "createdByUserId"],
				});
				return rows.map(r => ({
					id: Number(r.id),
					organizationId: r.organizationId,
					mode: r.mode,
					webhookUrl: r.webhookUrl ?? null,
					status: r.status,
					createdByUserId: r.createdByUserId ?? null,
				}));
			},
		},
	},

	methods: {
		async check(this: KeysThis, key: string, secret: string): Promise<AuthApiKey | null> {
			const { models, config } = appOf(this.broker);
			// Not a key at all: no look-up.
			if (!isWellFormedPair(key, secret)) return null;
			const row = await models.ApiKey.findOne({
				where: { keyDigest: digest(key, config.secrets.master) },
				attributes: ["id", "organizationId", "mode", "secretDigest", "status"],
			});
			if (!row) return null;
			const secretOk = safeEqual(row.secretDigest, digest(secret, config.secrets.master));
			if (!secretOk || row.status !== "active") return null;
			return { id: Number(row.id), organizationId: row.organizationId, mode: row.mode };
		},

		/**
		 * A key of an organization the caller belongs to; anything else (unknown id, another
		 * organization's key) is 404 `API key not found`. A member without `roles` gets 403.
		 */
		async findOwnKey(this: KeysThis, ctx: Ctx<any>, id: number, roles?: MembershipRole[]): Promise<ApiKey> {
			const { models } = appOf(this.broker);
			const row = await models.ApiKey.findByPk(id);
			if (!row) throw keyNotFound();
			try {
				await this.resolveOrganization(ctx, { organizationId: row.organizationId, roles });
			} catch (err) {
				if ((err as { code?: number }).code === 404) throw keyNotFound();
				throw err;
			}
			return row;
		},

		/** Every gateway node drops the key from its cache before we answer (lib/keys/announce.ts). */
		async announceChanged(this: KeysThis, ctx: Ctx<any>, id: number) {
			await announceKeysChanged(ctx, this.broker, [id], this.logger);
		},

		checkWebhookUrl(this: KeysThis, url: string | null | undefined) {
			if (url === undefined || url === null) return;
			const { config } = appOf(this.broker);
			const problem = webhookUrlProblem(url, { production: config.env === "production" });
			if (problem) throw badRequest("Invalid webhook URL", { webhookUrl: problem });
		},
	},
};

export default KeysService;
