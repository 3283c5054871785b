/**
 * API keys over HTTP: creation (secret shown once, nothing plain at rest), listing, updates and
 * revocation scoped to the caller's organizations, and key authentication through the gateway
 * (Basic credentials, POST /api-keys/test, GET /api-keys/me), including immediate revocation.
 */
import crypto from "node:crypto";
import type { Context } from "moleculer";
import { startNode, TestNode } from "../helpers/harness";
import { createUserWithToken, UserWithToken } from "../helpers/users";

const KEY_FIELDS = ["createdAt", "id", "keyPrefix", "last4", "name", "status", "updatedAt", "webhookUrl"];

describe("keys", () => {
	let node: TestNode;
	let alice: UserWithToken;
	let bob: UserWithToken;
	const changed: unknown[] = [];

	beforeAll(async () => {
		node = await startNode({ services: ["api", "auth", "organizations", "keys", "users"] });
		node.broker.createService({
			name: "keys-spy",
			events: {
				"keys.changed"(ctx: Context<unknown>) {
					changed.push(ctx.params);
				},
			},
		});
		alice = await createUserWithToken(node);
		bob = await createUserWithToken(node);
	});
	afterAll(async () => {
		await node?.stop();
	});

	async function createKey(user: UserWithToken, orgId: string, body: Record<string, unknown> = {}) {
		const res = await node.http("POST", `/organizations/${orgId}/api-keys`, { token: user.token, body });
		expect(res.status).toBe(201);
		return res.body as { apiKey: Record<string, any>; key: string; secret: string };
	}

	describe("POST /organizations/:organizationId/api-keys", () => {
		it("creates a test key for a sandbox organization and returns the secret once", async () => {
			const res = await node.http("POST", `/organizations/${alice.sandbox.id}/api-keys`, {
				token: alice.token,
				body: { name: "Checkout", webhookUrl: "http://127.0.0.1:9/hook" },
			});
			expect(res.status).toBe(201);
			expect(res.headers.get("cache-control")).toBe("no-store");
			const { apiKey, key, secret } = res.body;
			expect(key).toMatch(/^ak_test_[0-9A-Za-z]{32}$/);
			expect(secret).toMatch(/^sk_test_[0-9A-Za-z]{48}$/);
			expect(Object.keys(apiKey).sort()).toEqual(KEY_FIELDS);
			expect(apiKey).toMatchObject({ name: "Checkout", keyPrefix: "ak_test_", last4: key.slice(-4), status: "active", webhookUrl: "http://127.0.0.1:9/hook" });
			expect(Number.isInteger(apiKey.id)).toBe(true);

			// Nothing at rest is the key or the secret in plain text.
			const row = await node.app.models.ApiKey.findByPk(apiKey.id, { raw: true });
			const stored = JSON.stringify(row);
			expect(stored).not.toContain(key.slice(8));
			expect(stored).not.toContain(secret.slice(8));
			expect(row).toMatchObject({ organizationId: alice.sandbox.id, mode: "sandbox", createdByUserId: alice.user.id });

			// The list never shows it again.
			const list = await node.http("GET", `/organizations/${alice.sandbox.id}/api-keys`, { token: alice.token });
			expect(list.text).not.toContain(secret);
			expect(list.text).not.toContain(key);

			// The webhook sender can recover it.
			expect(await node.broker.call("keys.signingSecret", { id: apiKey.id })).toBe(secret);
		});

		it("creates a live key for a live organization, with a default name", async () => {
			const { apiKey, key, secret } = await createKey(alice, alice.live.id);
			expect(key).toMatch(/^ak_live_[0-9A-Za-z]{32}$/);
			expect(secret).toMatch(/^sk_live_[0-9A-Za-z]{48}$/);
			expect(apiKey).toMatchObject({ keyPrefix: "ak_live_", name: "API key", webhookUrl: null });
		});

		it("is 404 for another user's organization, an unknown or a malformed id", async () => {
			for (const orgId of [bob.sandbox.id, "00000000-0000-4000-8000-000000000000", "nope", "..%2F..%2Fx"]) {
				const res = await node.http("POST", `/organizations/${orgId}/api-keys`, { token: alice.token, body: { name: "x" } });
				expect(res.status).toBe(404);
				expect(res.body).toMatchObject({ statusCode: 404, message: "Organization not found", error: "Not Found" });
			}
			expect(await node.app.models.ApiKey.count({ where: { organizationId: bob.sandbox.id } })).toBe(0);
		});

		it("needs an owner or admin: a plain member gets 403", async () => {
			const carol = await createUserWithToken(node);
			await node.app.models.Membership.create({ organizationId: alice.sandbox.id, userId: carol.user.id, role: "member" });
			const res = await node.http("POST", `/organizations/${alice.sandbox.id}/api-keys`, { token: carol.token, body: {} });
			expect(res.status).toBe(403);
			expect(res.body.message).toBe("Insufficient role");
			// ...but may list them.
			const list = await node.http("GET", `/organizations/${alice.sandbox.id}/api-keys`, { token: carol.token });
			expect(list.status).toBe(200);
			const admin = await createUserWithToken(node);
			await node.app.models.Membership.create({ organizationId: alice.sandbox.id, userId: admin.user.id, role: "admin" });
			expect((await node.http("POST", `/organizations/${alice.sandbox.id}/api-keys`, { token: admin.token, body: {} })).status).toBe(201);
		});

		it("validates the webhook URL and the name", async () => {
			for (const webhookUrl of ["ftp://example.com/x", "not a url", "javascript:alert(1)", "http://user:pw@example.com/", 42]) {
				const res = await node.http("POST", `/organizations/${alice.sandbox.id}/api-keys`, { token: alice.token, body: { webhookUrl } });
				expect(res.status).toBe(400);
				expect(res.body.errors.webhookUrl).toEqual(expect.any(String));
			}
			const long = await node.http("POST", `/organizations/${alice.sandbox.id}/api-keys`, { token: alice.token, body: { name: "n".repeat(121) } });
			expect(long.status).toBe(400);
			expect(long.body.errors).toEqual({ name: "stringMax" });
		});

		it("allows 20 active keys per organization: the 21st is 400 errors.organizationId = tooManyApiKeys, a revoked key frees a place", async () => {
			const carol = await createUserWithToken(node);
			const create = () => node.http("POST", `/organizations/${carol.sandbox.id}/api-keys`, { token: carol.token, body: {} });
			const made: number[] = [];
			for (let i = 0; i < 20; i++) {
				const res = await create();
				expect(res.status).toBe(201);
				made.push(res.body.apiKey.id);
			}
			const over = await create();
			expect(over.status).toBe(400);
			expect(over.body).toEqual({
				statusCode: 400,
				message: "An organization can have at most 20 active API keys",
				error: "Bad Request",
				errors: { organizationId: "tooManyApiKeys" },
			});
			expect(await node.app.models.ApiKey.count({ where: { organizationId: carol.sandbox.id } })).toBe(20);
			// Per organization: the same user's live organization is not affected.
			expect((await node.http("POST", `/organizations/${carol.live.id}/api-keys`, { token: carol.token, body: {} })).status).toBe(201);
			// Revoked keys do not count.
			expect((await node.http("POST", `/api-keys/${made[0]}/revoke`, { token: carol.token })).status).toBe(200);
			expect((await create()).status).toBe(201);
			expect((await create()).status).toBe(400);
		});

		it("holds the cap under concurrent creates", async () => {
			const dave = await createUserWithToken(node);
			const create = () => node.http("POST", `/organizations/${dave.sandbox.id}/api-keys`, { token: dave.token, body: {} });
			for (let i = 0; i < 18; i++) expect((await create()).status).toBe(201);
			const results = await Promise.all(Array.from({ length: 6 }, create));
			expect(results.map(r => r.status).sort()).toEqual([201, 201, 400, 400, 400, 400]);
			expect(await node.app.models.ApiKey.count({ where: { organizationId: dave.sandbox.id, status: "active" } })).toBe(20);
		});

		it("cannot be done with an API key or without credentials", async () => {
			const { key, secret } = await createKey(alice, alice.sandbox.id);
			expect((await node.http("POST", `/organizations/${alice.sandbox.id}/api-keys`, { key: { key, secret }, body: {} })).status).toBe(401);
			expect((await node.http("POST", `/organizations/${alice.sandbox.id}/api-keys`, { body: {} })).status).toBe(401);
		});
	});

	describe("GET /organizations/:organizationId/api-keys", () => {
		it("lists only that organization's keys, newest first", async () => {
			const a = await createUserWithToken(node);
			const b = await createUserWithToken(node);
			const k1 = await createKey(a, a.sandbox.id, { name: "one" });
			const k2 = await createKey(a, a.sandbox.id, { name: "two" });
			await createKey(a, a.live.id, { name: "live" });
			await createKey(b, b.sandbox.id, { name: "bob's" });
			const res = await node.http("GET", `/organizations/${a.sandbox.id}/api-keys`, { token: a.token });
			expect(res.status).toBe(200);
			expect(res.body.map((k: { id: number }) => k.id)).toEqual([k2.apiKey.id, k1.apiKey.id]);
			for (const entry of res.body) expect(Object.keys(entry).sort()).toEqual(KEY_FIELDS);
			const other = await node.http("GET", `/organizations/${b.sandbox.id}/api-keys`, { token: a.token });
			expect(other.status).toBe(404);
		});

		it("answers in Spanish with x-custom-lang: es", async () => {
			const res = await node.http("GET", `/organizations/${bob.sandbox.id}/api-keys`, { token: alice.token, headers: { "x-custom-lang": "es" } });
			expect(res.status).toBe(404);
			expect(res.body.message).toBe("Organización no encontrada");
		});
	});

	describe("PATCH /api-keys/:id", () => {
		it("renames, sets and removes the webhook URL, and announces the change", async () => {
			const { apiKey } = await createKey(alice, alice.sandbox.id, { name: "before" });
			changed.length = 0;
			const res = await node.http("PATCH", `/api-keys/${apiKey.id}`, { token: alice.token, body: { name: "after", webhookUrl: "https://merchant.example/hooks" } });
			expect(res.status).toBe(200);
			expect(res.body).toMatchObject({ id: apiKey.id, name: "after", webhookUrl: "https://merchant.example/hooks", status: "active" });
			const cleared = await node.http("PATCH", `/api-keys/${apiKey.id}`, { token: alice.token, body: { webhookUrl: null } });
			expect(cleared.body).toMatchObject({ name: "after", webhookUrl: null });
			expect(changed).toContainEqual({ id: apiKey.id });
			const row = await node.app.models.ApiKey.findByPk(apiKey.id);
			expect(row!.webhookUrl).toBeNull();
		});

		it("is 404 for another organization's key or an unknown id, 400 for a malformed id", async () => {
			const { apiKey } = await createKey(bob, bob.sandbox.id, { name: "bob" });
			const res = await node.http("PATCH", `/api-keys/${apiKey.id}`, { token: alice.token, body: { name: "stolen" } });
			expect(res.status).toBe(404);
			expect(res.body.message).toBe("API key not found");
			expect((await node.app.models.ApiKey.findByPk(apiKey.id))!.name).toBe("bob");
			expect((await node.http("PATCH", "/api-keys/99999999", { token: alice.token, body: { name: "x" } })).status).toBe(404);
			for (const id of ["abc", "1.5", "-1", "0", "99999999999999999999"]) {
				const bad = await node.http("PATCH", `/api-keys/${id}`, { token: alice.token, body: { name: "x" } });
				expect(bad.status).toBe(400);
				expect(bad.body.errors.id).toEqual(expect.any(String));
			}
		});

		it("refuses to change a revoked key", async () => {
			const { apiKey } = await createKey(alice, alice.sandbox.id);
			await node.http("POST", `/api-keys/${apiKey.id}/revoke`, { token: alice.token });
			const res = await node.http("PATCH", `/api-keys/${apiKey.id}`, { token: alice.token, body: { name: "x" } });
			expect(res.status).toBe(400);
			expect(res.body.message).toBe("Cannot update an API key in state revoked");
		});
	});

	describe("POST /api-keys/:id/revoke", () => {
		it("revokes (twice is fine) and is 404 for another organization's key", async () => {
			const { apiKey } = await createKey(alice, alice.sandbox.id);
			const other = await createKey(bob, bob.sandbox.id);
			expect((await node.http("POST", `/api-keys/${other.apiKey.id}/revoke`, { token: alice.token })).status).toBe(404);
			expect((await node.app.models.ApiKey.findByPk(other.apiKey.id))!.status).toBe("active");
			changed.length = 0;
			const first = await node.http("POST", `/api-keys/${apiKey.id}/revoke`, { token: alice.token });
			expect(first.status).toBe(200);
			expect(first.body).toMatchObject({ id: apiKey.id, status: "revoked" });
			const second = await node.http("POST", `/api-keys/${apiKey.id}/revoke`, { token: alice.token });
			expect(second.status).toBe(200);
			expect(second.body.status).toBe("revoked");
			expect(changed).toEqual([{ id: apiKey.id }, { id: apiKey.id }]);
			expect((await node.http("POST", "/api-keys/xyz/revoke", { token: alice.token })).status).toBe(400);
		});
	});

	describe("authentication with a key", () => {
		it("works until revoked; the very next request after revocation is 401", async () => {
			const { apiKey, key, secret } = await createKey(alice, alice.sandbox.id);
			// Twice, so the gateway's per-node cache holds the answer.
			for (let i = 0; i < 2; i++) {
				const me = await node.http("GET", "/api-keys/me", { key: { key, secret } });
				expect(me.status).toBe(200);
				expect(me.body).toEqual({ id: apiKey.id, organizationId: alice.sandbox.id, mode: "sandbox" });
			}
			expect((await node.http("POST", "/api-keys/test", { body: { key, secret } })).body).toEqual({ ok: true, organizationId: alice.sandbox.id, mode: "sandbox" });
			const revoked = await node.http("POST", `/api-keys/${apiKey.id}/revoke`, { token: alice.token });
			expect(revoked.status).toBe(200);
			const after = await node.http("GET", "/api-keys/me", { key: { key, secret } });
			expect(after.status).toBe(401);
			expect(after.body.message).toBe("Invalid API key");
			const tested = await node.http("POST", "/api-keys/test", { body: { key, secret } });
			expect(tested.status).toBe(401);
			expect(await node.broker.call("keys.authenticate", { key, secret })).toBeNull();
		});

		it("rejects a wrong secret, a secret of another key and malformed credentials", async () => {
			const a = await createKey(alice, alice.live.id);
			const b = await createKey(alice, alice.live.id);
			const ok = await node.http("POST", "/api-keys/test", { body: { key: a.key, secret: a.secret } });
			expect(ok.body).toEqual({ ok: true, organizationId: alice.live.id, mode: "live" });
			const wrong = a.secret.slice(0, -1) + (a.secret.endsWith("A") ? "B" : "A");
			const cases = [
				{ key: a.key, secret: wrong },
				{ key: a.key, secret: b.secret },
				{ key: a.key.replace("ak_live_", "ak_test_"), secret: a.secret.replace("sk_live_", "sk_test_") },
				{ key: "ak_live_short", secret: a.secret },
				{ key: "", secret: "" },
				{ key: a.key + " ", secret: a.secret },
			];
			for (const body of cases) {
				const res = await node.http("POST", "/api-keys/test", { body });
				expect(res.status).toBe(401);
				expect(res.body).toEqual({ statusCode: 401, message: "Invalid API key", error: "Unauthorized" });
				expect((await node.http("GET", "/api-keys/me", { key: body })).status).toBe(401);
			}
			const missing = await node.http("POST", "/api-keys/test", { body: { key: a.key } });
			expect(missing.status).toBe(400);
			expect(missing.body.errors.secret).toBe("required");
		});

		it("acts only on the key's organization: a bearer-only route refuses a key", async () => {
			const { key, secret } = await createKey(alice, alice.sandbox.id);
			const res = await node.http("GET", "/organizations", { key: { key, secret }, headers: { "x-organization-id": bob.sandbox.id } });
			expect(res.status).toBe(401);
			// A bearer token on a key-only route is refused too.
			const me = await node.http("GET", "/api-keys/me", { token: alice.token });
			expect(me.status).toBe(401);
			expect(me.body.message).toBe("This operation requires an API key");
		});
	});

	it("keeps internal actions off HTTP", async () => {
		const { apiKey } = await createKey(alice, alice.sandbox.id);
		for (const [method, path] of [["POST", "/keys/signingSecret"], ["GET", `/keys/signingSecret?id=${apiKey.id}`], ["POST", "/keys/authenticate"], ["POST", "/api/keysChanged"], ["POST", "/keysChanged"]] as const) {
			const res = await node.http(method, path, { token: alice.token, ...(method === "POST" ? { body: { id: apiKey.id } } : {}) });
			expect(res.status).toBe(404);
		}
	});

	describe("when an owner is deleted", () => {
		async function keyOf(user: UserWithToken, orgId: string) {
			const { apiKey, key, secret } = await createKey(user, orgId);
			return { id: apiKey.id as number, cred: { key, secret } };
		}
		const status = async (id: number) => (await node.app.models.ApiKey.findByPk(id))!.status;

		it("DELETE /auth/me of the sole owner revokes the keys of their organizations: 401 at once", async () => {
			const owner = await createUserWithToken(node);
			const sandbox = await keyOf(owner, owner.sandbox.id);
			const live = await keyOf(owner, owner.live.id);
			// Cached by the gateway before the deletion.
			expect((await node.http("GET", "/api-keys/me", { key: sandbox.cred })).status).toBe(200);
			const before = changed.length;
			const deletedFrom = node.clock.now().getTime();
			expect((await node.http("DELETE", "/auth/me", { token: owner.token })).status).toBe(204);
			for (const k of [sandbox, live]) {
				const res = await node.http("GET", "/api-keys/me", { key: k.cred });
				expect(res.status).toBe(401);
				expect(res.body.message).toBe("Invalid API key");
				expect(await status(k.id)).toBe("revoked");
				const revokedAt = (await node.app.models.ApiKey.findByPk(k.id))!.revokedAt!.getTime();
				expect(revokedAt >= deletedFrom && revokedAt <= node.clock.now().getTime()).toBe(true);
			}
			expect(changed.slice(before)).toEqual(expect.arrayContaining([{ id: sandbox.id }, { id: live.id }]));
			// The organizations and their data stay.
			expect(await node.app.models.Organization.findByPk(owner.sandbox.id)).not.toBeNull();
		});

		it("DELETE /users/:id (admin) does the same; organizations that keep another owner keep their keys", async () => {
			const admin = await createUserWithToken(node, { role: "admin" });
			const owner = await createUserWithToken(node);
			const coOwner = await createUserWithToken(node);
			// The owner's live organization has a second owner; their sandbox has only an admin member.
			await node.app.models.Membership.create({ organizationId: owner.live.id, userId: coOwner.user.id, role: "owner" });
			await node.app.models.Membership.create({ organizationId: owner.sandbox.id, userId: coOwner.user.id, role: "admin" });
			const shared = await keyOf(owner, owner.live.id);
			const alone = await keyOf(owner, owner.sandbox.id);
			const coOwnersOwn = await keyOf(coOwner, coOwner.sandbox.id);
			expect((await node.http("DELETE", `/users/${owner.user.id}`, { token: admin.token })).status).toBe(204);
			expect((await node.http("GET", "/api-keys/me", { key: alone.cred })).status).toBe(401);
			expect(await status(alone.id)).toBe("revoked");
			for (const k of [shared, coOwnersOwn]) {
				expect((await node.http("GET", "/api-keys/me", { key: k.cred })).status).toBe(200);
				expect(await status(k.id)).toBe("active");
			}
			// The last owner of the live organization goes too: now its keys are revoked.
			expect((await node.http("DELETE", "/auth/me", { token: coOwner.token })).status).toBe(204);
			expect((await node.http("GET", "/api-keys/me", { key: shared.cred })).status).toBe(401);
			expect(await status(coOwnersOwn.id)).toBe("revoked");
		});

		it("two co-owners deleted at the same moment leave no key working", async () => {
			for (let round = 0; round < 3; round++) {
				const a = await createUserWithToken(node);
				const b = await createUserWithToken(node);
				await node.app.models.Membership.create({ organizationId: a.sandbox.id, userId: b.user.id, role: "owner" });
				const k = await keyOf(a, a.sandbox.id);
				const results = await Promise.all([a, b].map(u => node.http("DELETE", "/auth/me", { token: u.token })));
				expect(results.map(r => r.status)).toEqual([204, 204]);
				expect(await status(k.id)).toBe("revoked");
				expect((await node.http("GET", "/api-keys/me", { key: k.cred })).status).toBe(401);
			}
		});

		it("an owner whose co-owner was deleted earlier is the last owner", async () => {
			const admin = await createUserWithToken(node, { role: "admin" });
			const a = await createUserWithToken(node);
			const b = await createUserWithToken(node);
			await node.app.models.Membership.create({ organizationId: a.sandbox.id, userId: b.user.id, role: "owner" });
			const k = await keyOf(a, a.sandbox.id);
			expect((await node.http("DELETE", `/users/${b.user.id}`, { token: admin.token })).status).toBe(204);
			expect(await status(k.id)).toBe("active");
			expect((await node.http("DELETE", `/users/${a.user.id}`, { token: admin.token })).status).toBe(204);
			expect(await status(k.id)).toBe("revoked");
			expect((await node.http("GET", "/api-keys/me", { key: k.cred })).status).toBe(401);
		});
	});

	describe("in production (NODE_ENV=production)", () => {
		let prod: TestNode;
		let owner: UserWithToken;
		beforeAll(async () => {
			const secrets = { AUTH_JWT_SECRET: "j".repeat(32), AUTH_REFRESH_SECRET: "r".repeat(32), MASTER_KEY: "m".repeat(32) };
			prod = await startNode({ services: ["api", "auth", "organizations", "keys"], env: { NODE_ENV: "production", ...secrets } });
			expect(prod.config.env).toBe("production");
			owner = await createUserWithToken(prod);
		});
		afterAll(async () => prod?.stop());

		it("refuses webhook URLs on internal addresses, IPv4 inside IPv6 included, on create and on PATCH", async () => {
			const created = await prod.http("POST", `/organizations/${owner.live.id}/api-keys`, { token: owner.token, body: { webhookUrl: "https://merchant.example/hooks" } });
			expect(created.status).toBe(201);
			const refused = [
				"https://127.0.0.1/h",
				"https://169.254.169.254/latest/meta-data",
				"https://[::ffff:127.0.0.1]/h",
				"https://[::127.0.0.1]/h",
				"https://[64:ff9b::a9fe:a9fe]/h",
				"https://[2002:a9fe:a9fe::]/h",
				"https://[fec0::1]/h",
				"https://[fd00::1]/h",
				"https://localhost/h",
			];
			for (const webhookUrl of refused) {
				const create = await prod.http("POST", `/organizations/${owner.live.id}/api-keys`, { token: owner.token, body: { webhookUrl } });
				expect([webhookUrl, create.status, create.body.errors]).toEqual([webhookUrl, 400, { webhookUrl: "privateAddress" }]);
				const patch = await prod.http("PATCH", `/api-keys/${created.body.apiKey.id}`, { token: owner.token, body: { webhookUrl } });
				expect([webhookUrl, patch.status, patch.body.errors]).toEqual([webhookUrl, 400, { webhookUrl: "privateAddress" }]);
			}
			expect((await prod.app.models.ApiKey.findByPk(created.body.apiKey.id))!.webhookUrl).toBe("https://merchant.example/hooks");
			const publicV6 = await prod.http("PATCH", `/api-keys/${created.body.apiKey.id}`, { token: owner.token, body: { webhookUrl: "https://[2606:4700:4700::1111]/h" } });
			expect(publicV6.status).toBe(200);
		});
	});

	describe("on two nodes (NATS)", () => {
		let first: TestNode;
		let second: TestNode;

		beforeAll(async () => {
			// Own namespace: other test runs on the same NATS server never meet these nodes.
			const env = { TRANSPORTER: "nats://127.0.0.1:4222", NAMESPACE: `keys-${crypto.randomBytes(4).toString("hex")}` };
			first = await startNode({ services: ["api", "auth", "organizations", "keys", "users"], env });
			// A second gateway only: it reaches auth and keys over the transporter.
			second = await startNode({ services: ["api"], env, shareWith: first });
			await second.broker.waitForServices(["auth", "keys", "organizations"], 15_000);
			// Each node must know the other: node 2 its routes to keys, node 1 where to send its events.
			const deadline = Date.now() + 15_000;
			const knowsSecond = () => first.broker.registry.nodes.list({ onlyAvailable: true }).some((n: { id: string }) => n.id === second.broker.nodeID);
			while ((await second.http("GET", "/api-keys/me")).status === 404 || !knowsSecond()) {
				if (Date.now() > deadline) throw new Error("the two nodes never discovered each other");
				await new Promise(r => setTimeout(r, 100));
			}
		}, 40_000);
		afterAll(async () => {
			await second?.stop();
			await first?.stop();
		});

		/** A new key on the first node, answered (and so cached) twice by the second gateway; `end` must make it 401 there. */
		async function refusedOnSecondAfter(end: (owner: UserWithToken, keyId: number) => Promise<number>) {
			const owner = await createUserWithToken(first);
			const created = await first.http("POST", `/organizations/${owner.sandbox.id}/api-keys`, { token: owner.token, body: {} });
			expect(created.status).toBe(201);
			const key = { key: created.body.key, secret: created.body.secret };
			for (let i = 0; i < 2; i++) expect((await second.http("GET", "/api-keys/me", { key })).status).toBe(200);
			expect([200, 204]).toContain(await end(owner, created.body.apiKey.id));
			const after = await second.http("GET", "/api-keys/me", { key });
			expect(after.status).toBe(401);
			expect(after.body.message).toBe("Invalid API key");
		}

		it("a key revoked on one node is refused by the next request on the other", async () => {
			await refusedOnSecondAfter(async (owner, id) => (await first.http("POST", `/api-keys/${id}/revoke`, { token: owner.token })).status);
		});

		it("the keys of a deleted sole owner are refused by the next request on the other node", async () => {
			await refusedOnSecondAfter(async owner => (await first.http("DELETE", "/auth/me", { token: owner.token })).status);
		});
	});
});
