/**
 * /users over HTTP (admin only): create with default organizations, the paginated list with
 * filters and sort, read, update and soft delete, and the sessions those changes end.
 */
import bcrypt from "bcrypt";
import { startNode, TestNode } from "../helpers/harness";
import { createUserWithToken, UserWithToken } from "../helpers/users";

const USER_FIELDS = ["createdAt", "email", "emailConfirmed", "firstName", "id", "lastName", "photoId", "provider", "role", "status", "updatedAt"];

describe("users", () => {
	let node: TestNode;
	let admin: UserWithToken;
	let plain: UserWithToken;

	beforeAll(async () => {
		node = await startNode({ services: ["api", "auth", "organizations", "users"] });
		admin = await createUserWithToken(node, { role: "admin", email: "root@example.com" });
		plain = await createUserWithToken(node, { email: "plain@example.com" });
	});
	afterAll(async () => {
		await node?.stop();
	});

	const create = (body: Record<string, unknown>, token = admin.token) => node.http("POST", "/users", { token, body });

	describe("POST /users", () => {
		it("creates a confirmed user with a hashed password and their default organizations", async () => {
			const res = await create({ email: "  New.User@Example.com ", password: "secret123", firstName: "New", lastName: "User", role: "user" });
			expect(res.status).toBe(201);
			expect(Object.keys(res.body).sort()).toEqual(USER_FIELDS);
			expect(res.body).toMatchObject({ email: "new.user@example.com", firstName: "New", lastName: "User", role: "user", status: "active", emailConfirmed: true });
			const row = await node.app.models.User.findByPk(res.body.id);
			expect(row!.passwordHash).not.toBe("secret123");
			expect(await bcrypt.compare("secret123", row!.passwordHash!)).toBe(true);
			const orgs = await node.app.models.Membership.findAll({ where: { userId: res.body.id } });
			expect(orgs).toHaveLength(2);
			expect(res.text).not.toContain("passwordHash");
		});

		it("refuses a taken email with errors.email = emailAlreadyExists", async () => {
			const res = await create({ email: "PLAIN@example.com", firstName: "A", lastName: "B" });
			expect(res.status).toBe(400);
			expect(res.body).toMatchObject({ statusCode: 400, message: "Email already in use", errors: { email: "emailAlreadyExists" } });
			const es = await node.http("POST", "/users", { token: admin.token, body: { email: "plain@example.com", firstName: "A", lastName: "B" }, headers: { "x-custom-lang": "es" } });
			expect(es.body.message).toBe("El correo electrónico ya está en uso");
		});

		it("validates the body", async () => {
			const res = await create({ email: "nope", firstName: "", role: "root", status: "gone", password: "123" });
			expect(res.status).toBe(400);
			expect(Object.keys(res.body.errors).sort()).toEqual(["email", "firstName", "lastName", "password", "role", "status"]);
		});

		it("is for admins only", async () => {
			const res = await create({ email: "x@example.com", firstName: "X", lastName: "Y" }, plain.token);
			expect(res.status).toBe(403);
			expect(res.body.message).toBe("Insufficient role");
			expect((await node.http("POST", "/users", { body: { email: "x@example.com", firstName: "X", lastName: "Y" } })).status).toBe(401);
			expect(await node.app.models.User.count({ where: { email: "x@example.com" } })).toBe(0);
		});
	});

	describe("GET /users", () => {
		let listNode: TestNode;
		let root: UserWithToken;

		beforeAll(async () => {
			listNode = await startNode({ services: ["api", "auth", "organizations", "users"] });
			root = await createUserWithToken(listNode, { role: "admin", email: "admin0@example.com", firstName: "Zed", lastName: "Admin" });
			for (let i = 1; i <= 12; i++) {
				await listNode.app.models.User.create({
					email: `user${String(i).padStart(2, "0")}@example.com`,
					passwordHash: null,
					firstName: `First${i}`,
					lastName: i % 2 ? "Odd" : "Even",
					role: i <= 2 ? "admin" : "user",
					status: i % 3 === 0 ? "inactive" : "active",
					emailConfirmedAt: null,
				});
			}
		});
		afterAll(async () => {
			await listNode?.stop();
		});

		const list = (query: Record<string, string | number> = {}, token = root.token) => listNode.http("GET", "/users", { token, query });

		it("pages with { data, hasNextPage }: default limit 10", async () => {
			const first = await list();
			expect(first.status).toBe(200);
			expect(Object.keys(first.body).sort()).toEqual(["data", "hasNextPage"]);
			expect(first.body.data).toHaveLength(10);
			expect(first.body.hasNextPage).toBe(true);
			const second = await list({ page: 2 });
			expect(second.body.data).toHaveLength(3);
			expect(second.body.hasNextPage).toBe(false);
			const ids = [...first.body.data, ...second.body.data].map((u: { id: number }) => u.id);
			expect(new Set(ids).size).toBe(13);
			const exact = await list({ limit: 13 });
			expect(exact.body.hasNextPage).toBe(false);
			expect((await list({ limit: 12 })).body.hasNextPage).toBe(true);
			for (const u of first.body.data) expect(Object.keys(u).sort()).toEqual(USER_FIELDS);
		});

		it("filters by role, status and email", async () => {
			const admins = await list({ filters: JSON.stringify({ role: "admin" }) });
			expect(admins.body.data.map((u: { email: string }) => u.email).sort()).toEqual(["admin0@example.com", "user01@example.com", "user02@example.com"]);
			const inactive = await list({ filters: JSON.stringify({ status: "inactive", role: "user" }), limit: 100 });
			expect(inactive.body.data.map((u: { email: string }) => u.email).sort()).toEqual(["user03@example.com", "user06@example.com", "user09@example.com", "user12@example.com"]);
			const byEmail = await list({ filters: JSON.stringify({ email: "USER1" }) });
			expect(byEmail.body.data.map((u: { email: string }) => u.email).sort()).toEqual(["user10@example.com", "user11@example.com", "user12@example.com"]);
			// LIKE wildcards are plain characters here.
			expect((await list({ filters: JSON.stringify({ email: "%" }) })).body.data).toEqual([]);
			expect((await list({ filters: JSON.stringify({ email: "_" }) })).body.data).toEqual([]);
		});

		it("sorts by whitelisted columns", async () => {
			const byEmail = await list({ sort: JSON.stringify([{ orderBy: "email", order: "asc" }]), limit: 3 });
			expect(byEmail.body.data.map((u: { email: string }) => u.email)).toEqual(["admin0@example.com", "user01@example.com", "user02@example.com"]);
			const desc = await list({ sort: JSON.stringify([{ orderBy: "email", order: "desc" }]), limit: 2 });
			expect(desc.body.data.map((u: { email: string }) => u.email)).toEqual(["user12@example.com", "user11@example.com"]);
			const multi = await list({ sort: JSON.stringify([{ orderBy: "lastName", order: "asc" }, { orderBy: "email", order: "desc" }]), limit: 2 });
			expect(multi.body.data.map((u: { email: string }) => u.email)).toEqual(["admin0@example.com", "user12@example.com"]);
		});

		it("refuses malformed filters, sort and paging with 400", async () => {
			const cases: Array<[Record<string, string | number>, Record<string, string>]> = [
				[{ filters: "{not json" }, { filters: "invalidJson" }],
				[{ filters: "[1,2]" }, { filters: "invalidFilters" }],
				[{ filters: JSON.stringify({ role: "god" }) }, { "filters.role": "enumValue" }],
				[{ filters: JSON.stringify({ passwordHash: "x" }) }, { "filters.passwordHash": "unknownField" }],
				[{ filters: JSON.stringify({ email: 5 }) }, { "filters.email": "string" }],
				// A NUL byte cannot be searched for (SQLite's driver ends the statement there): 400, never 500.
				[{ filters: JSON.stringify({ email: "a\u0000b" }) }, { "filters.email": "stringPattern" }],
				[{ filters: JSON.stringify({ firstName: "\u0000", lastName: "x\u0000" }) }, { "filters.firstName": "stringPattern", "filters.lastName": "stringPattern" }],
				[{ sort: "nope" }, { sort: "invalidJson" }],
				[{ sort: JSON.stringify([{ orderBy: "passwordHash" }]) }, { sort: "invalidSortColumn" }],
				[{ sort: JSON.stringify([{ orderBy: "email", order: "up" }]) }, { sort: "invalidSortOrder" }],
				[{ page: 0 }, { page: "numberMin" }],
				[{ page: "abc" }, { page: "number" }],
				[{ limit: 101 }, { limit: "numberMax" }],
				[{ limit: 2.5 }, { limit: "numberInteger" }],
			];
			for (const [query, errors] of cases) {
				const res = await list(query);
				expect([JSON.stringify(query), res.status]).toEqual([JSON.stringify(query), 400]);
				expect(res.body.errors).toEqual(errors);
			}
		});

		it("is for admins only", async () => {
			const user = await createUserWithToken(listNode);
			expect((await list({}, user.token)).status).toBe(403);
			expect((await listNode.http("GET", "/users")).status).toBe(401);
		});
	});

	describe("GET/PATCH/DELETE /users/:id", () => {
		it("reads a user; unknown is 404, malformed is 400, non-admin 403", async () => {
			const res = await node.http("GET", `/users/${plain.user.id}`, { token: admin.token });
			expect(res.status).toBe(200);
			expect(res.body).toMatchObject({ id: plain.user.id, email: "plain@example.com", role: "user" });
			const missing = await node.http("GET", "/users/99999999", { token: admin.token });
			expect(missing.status).toBe(404);
			expect(missing.body.message).toBe("User not found");
			for (const id of ["abc", "0", "-3", "1e40"]) expect((await node.http("GET", `/users/${id}`, { token: admin.token })).status).toBe(400);
			expect((await node.http("GET", `/users/${admin.user.id}`, { token: plain.token })).status).toBe(403);
		});

		it("updates fields; a taken email is refused", async () => {
			const target = await createUserWithToken(node);
			const res = await node.http("PATCH", `/users/${target.user.id}`, { token: admin.token, body: { firstName: "Renamed", email: "Renamed@Example.com" } });
			expect(res.status).toBe(200);
			expect(res.body).toMatchObject({ firstName: "Renamed", email: "renamed@example.com", emailConfirmed: true });
			// Name changes keep the sessions.
			expect((await node.http("GET", "/organizations", { token: target.token })).status).toBe(200);
			const taken = await node.http("PATCH", `/users/${target.user.id}`, { token: admin.token, body: { email: "plain@example.com" } });
			expect(taken.status).toBe(400);
			expect(taken.body.errors).toEqual({ email: "emailAlreadyExists" });
			const same = await node.http("PATCH", `/users/${target.user.id}`, { token: admin.token, body: { email: "renamed@example.com" } });
			expect(same.status).toBe(200);
			expect((await node.http("PATCH", "/users/99999999", { token: admin.token, body: { firstName: "x" } })).status).toBe(404);
			expect((await node.http("PATCH", `/users/${target.user.id}`, { token: plain.token, body: { firstName: "x" } })).status).toBe(403);
		});

		it("ends the user's sessions at once when the role, status or password changes", async () => {
			for (const change of [{ role: "admin" }, { status: "inactive" }, { password: "another-secret" }]) {
				const target = await createUserWithToken(node);
				// Warm the gateway's session cache.
				expect((await node.http("GET", "/organizations", { token: target.token })).status).toBe(200);
				const res = await node.http("PATCH", `/users/${target.user.id}`, { token: admin.token, body: change });
				expect(res.status).toBe(200);
				const after = await node.http("GET", "/organizations", { token: target.token });
				expect([change, after.status]).toEqual([change, 401]);
				const session = await node.app.models.Session.findByPk(target.sessionId);
				expect(session!.endedAt).not.toBeNull();
			}
		});

		it("soft-deletes with 204, ends sessions, releases the email", async () => {
			const target = await createUserWithToken(node, { email: "leaving@example.com" });
			expect((await node.http("GET", "/organizations", { token: target.token })).status).toBe(200);
			expect((await node.http("DELETE", `/users/${target.user.id}`, { token: plain.token })).status).toBe(403);
			const res = await node.http("DELETE", `/users/${target.user.id}`, { token: admin.token });
			expect(res.status).toBe(204);
			expect(res.text).toBe("");
			expect((await node.http("GET", "/organizations", { token: target.token })).status).toBe(401);
			expect((await node.http("GET", `/users/${target.user.id}`, { token: admin.token })).status).toBe(404);
			expect((await node.http("DELETE", `/users/${target.user.id}`, { token: admin.token })).status).toBe(404);
			const row = await node.app.models.User.findByPk(target.user.id, { paranoid: false });
			expect(row!.deletedAt).not.toBeNull();
			const again = await create({ email: "leaving@example.com", firstName: "Back", lastName: "Again" });
			expect(again.status).toBe(201);
		});
	});

	it("does not carry moleculer-db's generic actions", async () => {
		const names = node.broker.registry.getActionList({ onlyLocal: true }).map((a: { name: string }) => a.name).filter((n: string) => n.startsWith("users."));
		expect(names.sort()).toEqual(["users.create", "users.get", "users.list", "users.remove", "users.update"]);
		for (const action of ["users.find", "users.count", "users.insert"]) {
			await expect(node.broker.call(action, {})).rejects.toMatchObject({ name: "ServiceNotFoundError" });
		}
	});
});
