/**
 * Which organization an organization-scoped action acts on, and with what role. Every such
 * action calls `this.resolveOrganization(ctx, opts)` first and then filters by the returned id:
 * - API key caller: always the key's organization; a header is ignored, and asking for another
 *   organization explicitly (opts.organizationId, e.g. a path parameter) is 404.
 * - Bearer-token caller: opts.organizationId ?? the `x-organization-id` header ?? their first
 *   sandbox organization, checked against their memberships by `organizations.resolve`
 *   (not a member, unknown or malformed id: 404; member without one of opts.roles: 403).
 * Choosing where money goes is for managers only: `this.requireManager(ctx, organizationId)`.
 */
import type { Context, Service, ServiceSchema } from "moleculer";
import { appOf } from "../lib/app";
import { forbidden, notFound, unauthorized } from "../lib/errors";
import { isUuid } from "../lib/ids";
import type { AuthMeta } from "../lib/meta";
import type { MembershipRole, OrganizationMode } from "../models/organization.model";

/**
 * The organization's managers: they manage API keys and choose where money goes (withdrawal
 * settings and requests, the withdrawal addresses of intents and links). docs/withdrawals.md.
 */
export const MANAGERS: MembershipRole[] = ["owner", "admin"];

export interface OrgScope {
	id: string;
	mode: OrganizationMode;
	/** The member's role; absent for API key callers. */
	role?: MembershipRole;
}

export interface ResolveOrganizationOptions {
	/** Roles a member needs (bearer-token callers). API keys act with their organization's authority. */
	roles?: MembershipRole[];
	/** The organization the request names (e.g. a path parameter); overrides the header. */
	organizationId?: string;
}

export interface OrgScopeMethods {
	resolveOrganization(ctx: Context<unknown, AuthMeta>, opts?: ResolveOrganizationOptions): Promise<OrgScope>;
	requireManager(ctx: Context<unknown, AuthMeta>, organizationId: string): Promise<void>;
}

export const OrgScopeMixin: Partial<ServiceSchema> = {
	methods: {
		async resolveOrganization(ctx: Context<unknown, AuthMeta>, opts: ResolveOrganizationOptions = {}): Promise<OrgScope> {
			const { apiKey, user } = ctx.meta;
			if (apiKey) {
				if (opts.organizationId !== undefined && opts.organizationId !== apiKey.organizationId) throw notFound("Organization not found");
				return { id: apiKey.organizationId, mode: apiKey.mode };
			}
			if (!user) throw unauthorized();
			const organizationId = opts.organizationId ?? ctx.meta.organizationId;
			// A malformed id names no organization of the caller's: 404 without a look-up.
			if (organizationId !== undefined && !isUuid(organizationId)) throw notFound("Organization not found");
			const found = (await ctx.call("organizations.resolve", {
				userId: user.id,
				...(organizationId !== undefined ? { organizationId } : {}),
				...(opts.roles && opts.roles.length ? { roles: opts.roles } : {}),
			})) as { id: string; mode: OrganizationMode; role: MembershipRole };
			return { id: found.id, mode: found.mode, role: found.role };
		},

		/**
		 * The caller may choose where the organization's money goes, else 403 (docs/withdrawals.md
		 * "Who chooses where money goes"). A bearer caller must be an owner or admin. An API key
		 * carries the authority of the manager who created it (only managers create keys), checked
		 * now: its creator must still be an active user and an owner or admin of the organization,
		 * so a key outlives its creator's role for everything else but not for this.
		 */
		async requireManager(this: Service & OrgScopeMethods, ctx: Context<unknown, AuthMeta>, organizationId: string): Promise<void> {
			const { apiKey } = ctx.meta;
			if (!apiKey) {
				await this.resolveOrganization(ctx, { organizationId, roles: MANAGERS });
				return;
			}
			const { models } = appOf(this.broker);
			const key = apiKey.organizationId === organizationId ? await models.ApiKey.findByPk(apiKey.id, { attributes: ["id", "createdByUserId"] }) : null;
			const creatorId = key?.createdByUserId ?? null;
			if (creatorId !== null) {
				const [creator, membership] = await Promise.all([
					models.User.findOne({ where: { id: creatorId, status: "active" }, attributes: ["id"] }),
					models.Membership.findOne({ where: { organizationId, userId: creatorId, role: MANAGERS }, attributes: ["id"] }),
				]);
				if (creator && membership) return;
			}
			throw forbidden("Only keys created by a current owner or admin of the organization can set withdrawal addresses");
		},
	},
};

export default OrgScopeMixin;
