/**
 * Organizations over HTTP: default organizations, listing and creating, and the membership
 * check (`organizations.resolve`) behind every organization-scoped action.
 */
import type { Context, ServiceSchema } from "moleculer";
import { startNode, TestNode } from "../helpers/harness";
import { createUserWithToken } from "../helpers/users";
import { addService } from "./api.helpers";
import { OrgScopeMixin, OrgScopeMethods } from "../../mixins/org-scope.mixin";
import type { AuthMeta } from "../../lib/meta";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("organizations", () => {
	let node: TestNode;

	beforeAll(async () => {
		node = await startNode({ services: ["api", "auth", "organizations", "keys"] });
		// An organization-scoped action, as every business service writes one.
		const probe: ServiceSchema<Record<string, any>, OrgScopeMethods & Record<string, any>> = {
			name: "orgprobe",
			mixins: [OrgScopeMixin as ServiceSchema],
			settings: { rest: "/" },
			actions: {
				scope: {
					rest: "GET /orgprobe/scope",
					auth: "any",
					params: { org: { type: "string", optional: true }, owner: { type: "boolean", convert: true, optional: true } },
					handler(this: OrgScopeMethods, ctx: Context<{ org?: string; owner?: boolean }, AuthMeta>) {
						return this.resolveOrganization(ctx, { organizationId: ctx.params.org, roles: ctx.params.owner ? ["owner"] : undefined });
					},
				},
			},
		};
		await addService(node, probe as ServiceSchema);
	});
	afterAll(async () => {
		await node?.stop();
	});

	describe("createDefaults", () => {
		it("creates one sandbox and one live organization owned by the user, once", async () => {
			const { user, organizations } = await createUserWithToken(node);
			expect(organizations.map(o => o.mode).sort()).toEqual(["live", "sandbox"]);
			for (const o of organizations) {
				expect(o.id).toMatch(UUID);
				expect(o.name).toBe("Test User");
			}
			const again = (await node.broker.call("organizations.createDefaults", { userId: user.id, name: "Other" })) as typeof organizations;
			expect(again).toEqual(organizations);
			const memberships = await node.app.models.Membership.findAll({ where: { userId: user.id } });
			expect(memberships).toHaveLength(2);
			expect(memberships.every(m => m.role === "owner")).toBe(true);
		});

		it("is safe under concurrent calls for the same user", async () => {
			const user = await node.app.models.User.create({ email: "concurrent@example.com", passwordHash: null, firstName: "C", lastName: "D", emailConfirmedAt: null });
			const results = await Promise.all([1, 2, 3].map(() => node.broker.call("organizations.createDefaults", { userId: user.id }) as Promise<Array<{ id: string }>>));
			const ids = new Set(results.flat().map(o => o.id));
			expect(ids.size).toBe(2);
			expect(await node.app.models.Membership.count({ where: { userId: user.id } })).toBe(2);
			expect(results[0].map(o => o.id).sort()).toEqual(results[2].map(o => o.id).sort());
		});

		it("uses a default name and rejects an unknown user or a bad id", async () => {
			const user = await node.app.models.User.create({ email: "noname@example.com", passwordHash: null, firstName: null, lastName: null, emailConfirmedAt: null });
			const orgs = (await node.broker.call("organizations.createDefaults", { userId: user.id, name: "   " })) as Array<{ name: string }>;
			expect(orgs.map(o => o.name)).toEqual(["My organization", "My organization"]);
			await expect(node.broker.call("organizations.createDefaults", { userId: 99999999 })).rejects.toMatchObject({ code: 404 });
			await expect(node.broker.call("organizations.createDefaults", { userId: "1; drop" })).rejects.toMatchObject({ name: "ValidationError" });
		});
	});

	describe("GET /organizations", () => {
		it("lists only the caller's organizations with their role", async () => {
			const a = await createUserWithToken(node);
			await createUserWithToken(node);
			const res = await node.http("GET", "/organizations", { token: a.token });
			expect(res.status).toBe(200);
			expect(res.body).toHaveLength(2);
			const ids = res.body.map((o: { id: string }) => o.id).sort();
			expect(ids).toEqual(a.organizations.map(o => o.id).sort());
			for (const o of res.body) {
				expect(Object.keys(o).sort()).toEqual(["createdAt", "id", "mode", "name", "role"]);
				expect(o.role).toBe("owner");
				expect(new Date(o.createdAt).toISOString()).toBe(o.createdAt);
			}
		});

		it("needs a bearer token (an API key or nothing is 401)", async () => {
			expect((await node.http("GET", "/organizations")).status).toBe(401);
			const res = await node.http("GET", "/organizations", { key: { key: "ak_test_" + "a".repeat(32), secret: "sk_test_" + "b".repeat(48) } });
			expect(res.status).toBe(401);
		});
	});

	describe("POST /organizations", () => {
		it("creates an organization owned by the caller", async () => {
			const a = await createUserWithToken(node);
			const res = await node.http("POST", "/organizations", { token: a.token, body: { name: "  Acme Live  ", mode: "live" } });
			expect(res.status).toBe(201);
			expect(res.body).toMatchObject({ name: "Acme Live", mode: "live", role: "owner" });
			expect(res.body.id).toMatch(UUID);
			const list = await node.http("GET", "/organizations", { token: a.token });
			expect(list.body.map((o: { id: string }) => o.id)).toContain(res.body.id);
			expect(list.body).toHaveLength(3);
		});

		it("validates name and mode", async () => {
			const a = await createUserWithToken(node);
			const res = await node.http("POST", "/organizations", { token: a.token, body: { name: "", mode: "prod" } });
			expect(res.status).toBe(400);
			expect(res.body.errors).toMatchObject({ name: expect.any(String), mode: expect.any(String) });
			const long = await node.http("POST", "/organizations", { token: a.token, body: { name: "x".repeat(121), mode: "sandbox" } });
			expect(long.status).toBe(400);
			expect(long.body.errors.name).toBe("stringMax");
		});
	});

	describe("organizations.resolve", () => {
		it("defaults to the first sandbox organization, and checks membership and role", async () => {
			const a = await createUserWithToken(node);
			const b = await createUserWithToken(node);
			const def = await node.broker.call("organizations.resolve", { userId: a.user.id });
			expect(def).toEqual({ id: a.sandbox.id, name: "Test User", mode: "sandbox", role: "owner" });
			const live = await node.broker.call("organizations.resolve", { userId: a.user.id, organizationId: a.live.id, roles: ["owner", "admin"] });
			expect(live).toMatchObject({ id: a.live.id, mode: "live", role: "owner" });
			// Another user's organization, an unknown id and a malformed id all look the same.
			for (const organizationId of [b.sandbox.id, "00000000-0000-4000-8000-000000000000", "not-a-uuid", "' OR 1=1 --"]) {
				await expect(node.broker.call("organizations.resolve", { userId: a.user.id, organizationId })).rejects.toMatchObject({
					code: 404,
					message: "Organization not found",
				});
			}
			// A plain member of b's organization lacks the owner role.
			await node.app.models.Membership.create({ organizationId: b.sandbox.id, userId: a.user.id, role: "member" });
			await expect(node.broker.call("organizations.resolve", { userId: a.user.id, organizationId: b.sandbox.id, roles: ["owner"] })).rejects.toMatchObject({
				code: 403,
				message: "Insufficient role",
			});
			expect(await node.broker.call("organizations.resolve", { userId: a.user.id, organizationId: b.sandbox.id })).toMatchObject({ role: "member" });
		});

		it("is 404 for a user without organizations", async () => {
			const user = await node.app.models.User.create({ email: "orgless@example.com", passwordHash: null, firstName: null, lastName: null, emailConfirmedAt: null });
			await expect(node.broker.call("organizations.resolve", { userId: user.id })).rejects.toMatchObject({ code: 404 });
		});
	});

	it("is not reachable over HTTP for internal actions", async () => {
		const a = await createUserWithToken(node);
		for (const path of ["/organizations/createDefaults", "/organizations/resolve"]) {
			const res = await node.http("POST", path, { token: a.token, body: { userId: a.user.id } });
			expect(res.status).toBe(404);
		}
	});

	describe("org-scope mixin", () => {
		it("bearer callers act on the header's organization, else their first sandbox one, and only where they are members", async () => {
			const a = await createUserWithToken(node);
			const b = await createUserWithToken(node);
			expect((await node.http("GET", "/orgprobe/scope", { token: a.token })).body).toEqual({ id: a.sandbox.id, mode: "sandbox", role: "owner" });
			const live = await node.http("GET", "/orgprobe/scope", { token: a.token, headers: { "x-organization-id": a.live.id } });
			expect(live.body).toEqual({ id: a.live.id, mode: "live", role: "owner" });
			// An explicit organization (e.g. a path parameter) wins over the header.
			const explicit = await node.http("GET", "/orgprobe/scope", { token: a.token, headers: { "x-organization-id": a.live.id }, query: { org: a.sandbox.id } });
			expect(explicit.body.id).toBe(a.sandbox.id);
			for (const header of [b.sandbox.id, "garbage", "00000000-0000-4000-8000-000000000000"]) {
				const res = await node.http("GET", "/orgprobe/scope", { token: a.token, headers: { "x-organization-id": header } });
				expect(res.status).toBe(404);
				expect(res.body).toEqual({ statusCode: 404, message: "Organization not found", error: "Not Found" });
			}
			const es = await node.http("GET", "/orgprobe/scope", { token: a.token, headers: { "x-organization-id": b.live.id, "x-custom-lang": "es" } });
			expect(es.body.message).toBe("Organización no encontrada");
			await node.app.models.Membership.create({ organizationId: b.live.id, userId: a.user.id, role: "member" });
			const member = await node.http("GET", "/orgprobe/scope", { token: a.token, headers: { "x-organization-id": b.live.id } });
			expect(member.body).toEqual({ id: b.live.id, mode: "live", role: "member" });
			const needsOwner = await node.http("GET", "/orgprobe/scope", { token: a.token, headers: { "x-organization-id": b.live.id }, query: { owner: true } });
			expect(needsOwner.status).toBe(403);
			expect(needsOwner.body.message).toBe("Insufficient role");
		});

		it("API key callers act on the key's organization only", async () => {
			const a = await createUserWithToken(node);
			const b = await createUserWithToken(node);
			const created = await node.http("POST", `/organizations/${a.live.id}/api-keys`, { token: a.token, body: {} });
			const key = { key: created.body.key, secret: created.body.secret };
			const res = await node.http("GET", "/orgprobe/scope", { key, headers: { "x-organization-id": b.sandbox.id } });
			expect(res.status).toBe(200);
			expect(res.body).toEqual({ id: a.live.id, mode: "live" });
			expect((await node.http("GET", "/orgprobe/scope", { key, query: { org: a.live.id } })).status).toBe(200);
			expect((await node.http("GET", "/orgprobe/scope", { key, query: { org: a.sandbox.id } })).status).toBe(404);
			expect((await node.http("GET", "/orgprobe/scope", { key, query: { org: b.sandbox.id } })).status).toBe(404);
		});
	});
});
