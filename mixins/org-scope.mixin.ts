/**
 * Which organization an organization-scoped action acts on, and with what role. Every such
 * action calls `this.resolveOrganization(ctx, opts)` first and then filters by the returned id:
 * - API key caller: always the key's organization; a header is ignored, and asking for another
 *   organization explicitly (opts.organizationId, e.g. a path parameter) is 404.
 * - Bearer-token caller: opts.organizationId ?? the `x-organization-id` header ?? their first
 *   sandbox organization, checked against their memberships by `organizations.resolve`
 *   (not a member, unknown or malformed id: 404; member without one of opts.roles: 403).
 */
import type { Context, ServiceSchema } from "moleculer";
import { notFound, unauthorized } from "../lib/errors";
import { isUuid } from "../lib/ids";
import type { AuthMeta } from "../lib/meta";
import type { MembershipRole, OrganizationMode } from "../models/organization.model";

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
	},
};

export default OrgScopeMixin;
