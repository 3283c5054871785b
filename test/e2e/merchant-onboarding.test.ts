/**
 * The whole onboarding path as a merchant walks it over HTTP, on a node with every service:
 * sign-up -> confirmation mail -> confirm -> login -> organizations -> API key -> key test ->
 * a key-authenticated call -> revocation. The README's curl walk-through follows these steps.
 */
import { startNode, TestNode } from "../helpers/harness";

describe("merchant onboarding over HTTP", () => {
	let node: TestNode;
	beforeAll(async () => {
		node = await startNode();
	});
	afterAll(async () => node?.stop());

	it("goes from sign-up to a working, then revoked, API key", async () => {
		const email = "ada@example.com";
		const password = "s3cret-pass";

		const register = await node.http("POST", "/auth/email/register", { body: { email, password, firstName: "Ada", lastName: "Lovelace" } });
		expect(register.status).toBe(204);
		expect(register.text).toBe("");

		// Signing in before confirming is refused.
		const early = await node.http("POST", "/auth/email/login", { body: { email, password } });
		expect(early.status).toBe(401);
		expect(early.body.message).toBe("Email not confirmed");

		const mail = node.lastMail(email);
		expect(typeof mail.data.hash).toBe("string");
		expect(mail.text).toContain(mail.data.hash);

		const confirm = await node.http("POST", "/auth/email/confirm", { body: { hash: mail.data.hash } });
		expect(confirm.status).toBe(200);
		expect(confirm.body.user).toMatchObject({ email, firstName: "Ada" });

		const login = await node.http("POST", "/auth/email/login", { body: { email, password } });
		expect(login.status).toBe(200);
		const { token, refreshToken, tokenExpires } = login.body;
		expect(typeof token).toBe("string");
		expect(typeof refreshToken).toBe("string");
		expect(tokenExpires).toBeGreaterThan(Date.now());

		const orgs = await node.http("GET", "/organizations", { token });
		expect(orgs.status).toBe(200);
		expect(orgs.body.map((o: { mode: string }) => o.mode).sort()).toEqual(["live", "sandbox"]);
		const sandbox = orgs.body.find((o: { mode: string }) => o.mode === "sandbox");
		expect(sandbox.role).toBe("owner");

		const created = await node.http("POST", `/organizations/${sandbox.id}/api-keys`, { token, body: { name: "server", webhookUrl: "http://localhost:4000/hooks" } });
		expect(created.status).toBe(201);
		const { key, secret, apiKey } = created.body;
		expect(key).toMatch(/^ak_test_[0-9A-Za-z]{32}$/);
		expect(secret).toMatch(/^sk_test_[0-9A-Za-z]{48}$/);
		expect(apiKey).toMatchObject({ name: "server", keyPrefix: "ak_test_", status: "active", webhookUrl: "http://localhost:4000/hooks" });
		expect(JSON.stringify(apiKey)).not.toContain(secret);

		const listed = await node.http("GET", `/organizations/${sandbox.id}/api-keys`, { token });
		expect(listed.status).toBe(200);
		expect(listed.body).toHaveLength(1);
		expect(JSON.stringify(listed.body)).not.toContain(secret);

		const ok = await node.http("POST", "/api-keys/test", { body: { key, secret } });
		expect(ok.status).toBe(200);
		expect(ok.body.ok).toBe(true);
		// The last character changed (a secret that ends in "x" would otherwise stay right: a 1-in-62 flake).
		const wrong = await node.http("POST", "/api-keys/test", { body: { key, secret: `${secret.slice(0, -1)}${secret.endsWith("x") ? "y" : "x"}` } });
		expect(wrong.status).toBe(401);
		expect(wrong.body.message).toBe("Invalid API key");

		const me = await node.http("GET", "/api-keys/me", { key: { key, secret } });
		expect(me.status).toBe(200);
		expect(me.body).toMatchObject({ id: apiKey.id, organizationId: sandbox.id, mode: "sandbox" });

		const revoked = await node.http("POST", `/api-keys/${apiKey.id}/revoke`, { token });
		expect(revoked.status).toBe(200);
		expect(revoked.body.status).toBe("revoked");
		const after = await node.http("GET", "/api-keys/me", { key: { key, secret } });
		expect(after.status).toBe(401);
		const afterTest = await node.http("POST", "/api-keys/test", { body: { key, secret } });
		expect(afterTest.status).toBe(401);
	});
});
