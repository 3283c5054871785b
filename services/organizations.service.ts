/**
 * Organizations and memberships. Every user gets one sandbox and one live organization at
 * sign-up (createDefaults); GET/POST /organizations list and add more. `resolve` is the one
 * membership check behind every organization-scoped action (mixins/org-scope.mixin.ts).
 * Decisions are in docs/organizations-and-keys.md.
 */
import type { Context, Service, ServiceSchema } from "moleculer";
import { QueryTypes, Transaction } from "sequelize";
import { appOf } from "../lib/app";
import { forbidden, notFound } from "../lib/errors";
import { registerTranslations } from "../lib/i18n";
import { isUuid, uuid } from "../lib/ids";
import type { AuthMeta } from "../lib/meta";
import type { MembershipRole, OrganizationMode } from "../models/organization.model";
import { SUPPORT_ID } from "../lib/support/params";

registerTranslations("es", {
	"Organization not found": "Organización no encontrada",
	"Insufficient role": "Rol insuficiente",
});

export const MEMBERSHIP_ROLES: MembershipRole[] = ["owner", "admin", "member"];
export const ORGANIZATION_MODES: OrganizationMode[] = ["sandbox", "live"];

export interface OrganizationSummary {
	id: string;
	name: string;
	mode: OrganizationMode;
}

export interface ResolvedOrganization extends OrganizationSummary {
	role: MembershipRole;
}

export interface OrganizationView extends ResolvedOrganization {
	createdAt: string;
}

interface MembershipRow {
	id: string;
	name: string;
	mode: OrganizationMode;
	role: MembershipRole;
	createdAt: Date | string;
}

type Ctx<P = Record<string, never>> = Context<P, AuthMeta>;

interface OrgMethods {
	membershipsOf(userId: number, opts?: { organizationId?: string; mode?: OrganizationMode; limit?: number; transaction?: Transaction }): Promise<MembershipRow[]>;
	createOrganization(userId: number, name: string, mode: OrganizationMode, t: Transaction): Promise<OrganizationSummary>;
}

type OrgThis = Service<{ rest: string }> & OrgMethods;

const NAME = { type: "string", trim: true, min: 1, max: 120 } as const;
const USER_ID = { type: "number", integer: true, positive: true } as const;
const organizationNotFound = () => notFound("Organization not found");

function toDate(value: Date | string): Date {
	// Raw queries give DATETIME strings on SQLite ("2024-01-01 10:00:00.000 +00:00") and Dates on MySQL.
	return value instanceof Date ? value : new Date(value);
}

function toView(row: MembershipRow): OrganizationView {
	return { id: row.id, name: row.name, mode: row.mode, role: row.role, createdAt: toDate(row.createdAt).toISOString() };
}

/** The default name: the user's display name, cut to the column's length. */
function defaultName(name: string | undefined): string {
	const trimmed = (name || "").trim();
	return (trimmed || "My organization").slice(0, 120);
}

const OrganizationsService: ServiceSchema<{ rest: string }, OrgMethods & Record<string, any>> = {
	name: "organizations",
	settings: { rest: "/" },

	actions: {
		/**
		 * Sign-up (and admin user creation): the user's sandbox and live organization, owned by
		 * them, in one transaction. Idempotent: a user who has memberships gets those back.
		 */
		createDefaults: {
			visibility: "public",
			auth: "public",
			params: { $$strict: "remove", userId: USER_ID, name: { type: "string", optional: true, max: 300 } },
			async handler(this: OrgThis, ctx: Ctx<{ userId: number; name?: string }>): Promise<OrganizationSummary[]> {
				const { sequelize, models } = appOf(this.broker);
				const { userId } = ctx.params;
				return sequelize.transaction({ type: Transaction.TYPES.IMMEDIATE }, async t => {
					// The user's row is the lock that serialises concurrent calls for the same user (MySQL);
					// on SQLite the IMMEDIATE transaction takes the write lock up front (ignored by MySQL).
					const user = await models.User.findByPk(userId, { attributes: ["id"], transaction: t, lock: t.LOCK.UPDATE });
					if (!user) throw notFound("User not found");
					const existing = await this.membershipsOf(userId, { transaction: t });
					if (existing.length > 0) return existing.map(r => ({ id: r.id, name: r.name, mode: r.mode }));
					const name = defaultName(ctx.params.name);
					const out: OrganizationSummary[] = [];
					for (const mode of ORGANIZATION_MODES) out.push(await this.createOrganization(userId, name, mode, t));
					return out;
				});
			},
		},

		list: {
			rest: "GET /organizations",
			auth: "jwt",
			params: { $$strict: "remove" },
			async handler(this: OrgThis, ctx: Ctx): Promise<OrganizationView[]> {
				return (await this.membershipsOf(ctx.meta.user!.id)).map(toView);
			},
		},

		create: {
			rest: "POST /organizations",
			auth: "jwt",
			params: { $$strict: "remove", name: NAME, mode: { type: "enum", values: ORGANIZATION_MODES } },
			async handler(this: OrgThis, ctx: Ctx<{ name: string; mode: OrganizationMode }>): Promise<OrganizationView> {
				const { sequelize } = appOf(this.broker);
				const userId = ctx.meta.user!.id;
				const org = await sequelize.transaction({ type: Transaction.TYPES.IMMEDIATE }, t => this.createOrganization(userId, ctx.params.name, ctx.params.mode, t));
				const [row] = await this.membershipsOf(userId, { organizationId: org.id });
				ctx.meta.$statusCode = 201;
				return toView(row);
			},
		},

		/**
		 * The caller's membership in an organization (default: their first sandbox organization).
		 * Not a member, unknown or malformed id: 404 (existence is never disclosed). A member
		 * whose role is not among `roles`: 403.
		 */
		resolve: {
			visibility: "public",
			auth: "public",
			params: {
				$$strict: "remove",
				userId: USER_ID,
				organizationId: { type: "string", optional: true, max: 200 },
				roles: { type: "array", optional: true, items: { type: "enum", values: MEMBERSHIP_ROLES } },
			},
			async handler(this: OrgThis, ctx: Ctx<{ userId: number; organizationId?: string; roles?: MembershipRole[] }>): Promise<ResolvedOrganization> {
				const { userId, organizationId, roles } = ctx.params;
				if (organizationId !== undefined && !isUuid(organizationId)) throw organizationNotFound();
				const rows = organizationId !== undefined
					? await this.membershipsOf(userId, { organizationId, limit: 1 })
					: await this.membershipsOf(userId, { mode: "sandbox", limit: 1 });
				const row = rows[0];
				if (!row) throw organizationNotFound();
				if (roles && roles.length > 0 && !roles.includes(row.role)) throw forbidden("Insufficient role");
				return { id: row.id, name: row.name, mode: row.mode, role: row.role };
			},
		},

		/** Support staff (REPL `webhooks failed <orgId>`): an organization by id, whoever asks. Internal: no route. */
		"support.get": {
			visibility: "public",
			auth: "admin",
			params: { $$strict: "remove", id: SUPPORT_ID },
			async handler(this: OrgThis, ctx: Ctx<{ id: string }>) {
				const { models } = appOf(this.broker);
				const org = await models.Organization.findByPk(ctx.params.id, { attributes: ["id", "name", "mode"] });
				if (!org) throw organizationNotFound();
				return { id: org.id, name: org.name, mode: org.mode };
			},
		},
	},

	methods: {
		/** One indexed query (memberships by user, joined to organizations), oldest membership first. */
		async membershipsOf(this: OrgThis, userId, opts = {}) {
			const { sequelize } = appOf(this.broker);
			const where = ["m.userId = :userId"];
			const replacements: Record<string, unknown> = { userId };
			if (opts.organizationId !== undefined) {
				where.push("m.organizationId = :organizationId");
				replacements.organizationId = opts.organizationId;
			}
			if (opts.mode !== undefined) {
				where.push("o.mode = :mode");
				replacements.mode = opts.mode;
			}
			const limit = opts.limit ? ` LIMIT ${Math.floor(opts.limit)}` : "";
			return sequelize.query<MembershipRow>(
				`SELECT o.id AS id, o.name AS name, o.mode AS mode, m.role AS role, o.createdAt AS createdAt
				 FROM memberships m JOIN organizations o ON o.id = m.organizationId
				 WHERE ${where.join(" AND ")} ORDER BY m.id ASC${limit}`,
				{ replacements, type: QueryTypes.SELECT, transaction: opts.transaction },
			);
		},

		async createOrganization(this: OrgThis, userId, name, mode, t) {
			const { models } = appOf(this.broker);
			const org = await models.Organization.create({ id: uuid(), name, mode }, { transaction: t });
			await models.Membership.create({ organizationId: org.id, userId, role: "owner" }, { transaction: t });
			return { id: org.id, name: org.name, mode: org.mode };
		},
	},
};

export default OrganizationsService;
