import jwt from "jsonwebtoken";
import { startNode, TestNode } from "../helpers/harness";
import { PASSWORD, authRoutesReady, login, signUp, uniqueEmail } from "./auth.helpers";

describe("auth: email sign-up, sessions and the account", () => {
	let node: TestNode;
	beforeAll(async () => {
		node = await startNode();
		await authRoutesReady(node);
	});
	afterAll(async () => node?.stop());

	it("registers with 204 and an empty body, and mails a confirmation link", async () => {
		const email = uniqueEmail("Reg").toUpperCase();
		const res = await node.http("POST", "/auth/email/register", { body: { email, password: PASSWORD, firstName: "Ada", lastName: "Lovelace" } });
		expect(res.status).toBe(204);
		expect(res.text).toBe("");
		const mail = node.lastMail(email.toLowerCase());
		expect(mail.to).toBe(email.toLowerCase());
		expect(mail.template).toBe("confirm");
		expect(typeof mail.data.hash).toBe("string");
		expect(mail.text).toContain(`${node.config.publicUrl}/confirm-email?hash=${mail.data.hash}`);
		expect(mail.html).toContain(`${node.config.publicUrl}/confirm-email?hash=${mail.data.hash}`);
		expect(mail.subject).toBe("Confirm your email");
	});

	it("refuses password sign-in before confirmation, confirms once, then signs in", async () => {
		const email = uniqueEmail();
		await node.http("POST", "/auth/email/register", { body: { email, password: PASSWORD, firstName: "Grace", lastName: "Hopper" } });
		const early = await login(node, email, PASSWORD);
		expect(early.status).toBe(401);
		expect(early.body).toEqual({ statusCode: 401, message: "Email not confirmed", error: "Unauthorized" });

		const { hash } = node.lastMail(email).data;
		const before = Date.now();
		const confirmed = await node.http("POST", "/auth/email/confirm", { body: { hash } });
		expect(confirmed.status).toBe(200);
		expect(Object.keys(confirmed.body).sort()).toEqual(["refreshToken", "token", "tokenExpires", "user"]);
		expect(confirmed.body.user).toMatchObject({ email, firstName: "Grace", lastName: "Hopper", role: "user", status: "active", emailConfirmed: true });
		expect(confirmed.body.user).not.toHaveProperty("passwordHash");
		// Expiry instant in epoch milliseconds, one hour ahead by default.
		expect(confirmed.body.tokenExpires).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 + 3600_000);
		expect(confirmed.body.tokenExpires).toBeLessThanOrEqual(Date.now() + 3600_000 + 1000);
		const claims = jwt.decode(confirmed.body.token) as jwt.JwtPayload;
		expect(claims).toMatchObject({ sub: String(confirmed.body.user.id), role: "user", typ: "access" });
		expect(typeof claims.sid).toBe("string");
		expect(claims.exp! * 1000).toBe(confirmed.body.tokenExpires);

		const again = await node.http("POST", "/auth/email/confirm", { body: { hash } });
		expect(again.status).toBe(422);
		expect(again.body).toMatchObject({ statusCode: 422, errors: { hash: "invalidHash" } });

		const ok = await login(node, email.toUpperCase(), PASSWORD);
		expect(ok.status).toBe(200);
		expect(ok.body.user.email).toBe(email);
	});

	it("sign-up gives the user a sandbox and a live organization they own", async () => {
		const me = await signUp(node, { firstName: "Org", lastName: "Owner" });
		const res = await node.http("GET", "/organizations", { token: me.token });
		expect(res.status).toBe(200);
		expect(res.body).toHaveLength(2);
		expect(res.body.map((o: { mode: string }) => o.mode).sort()).toEqual(["live", "sandbox"]);
		for (const org of res.body) expect(org).toMatchObject({ role: "owner", name: "Org Owner" });
		// Confirming again later (idempotent call) does not add more.
		const again = await login(node, me.email, PASSWORD);
		expect((await node.http("GET", "/organizations", { token: again.body.token })).body).toHaveLength(2);
	});

	it("answers a wrong password and an unknown address identically", async () => {
		const { email } = await signUp(node);
		const wrong = await login(node, email, "not-the-password");
		const unknown = await login(node, uniqueEmail("nobody"), "not-the-password");
		expect(wrong.status).toBe(401);
		expect(unknown.status).toBe(401);
		expect(wrong.body).toEqual({ statusCode: 401, message: "Invalid email or password", error: "Unauthorized" });
		expect(unknown.body).toEqual(wrong.body);
	});

	it("translates messages with x-custom-lang: es", async () => {
		const res = await node.http("POST", "/auth/email/login", { body: { email: uniqueEmail(), password: "whatever" }, headers: { "x-custom-lang": "es" } });
		expect(res.status).toBe(401);
		expect(res.body.message).toBe("Correo electrónico o contraseña no válidos");
	});

	it("mails in Spanish when asked to", async () => {
		const email = uniqueEmail("es");
		await node.http("POST", "/auth/email/register", { body: { email, password: PASSWORD, firstName: "Ana", lastName: "Ruiz" }, headers: { "x-custom-lang": "es" } });
		expect(node.lastMail(email).subject).toBe("Confirma tu correo electrónico");
	});

	it("validates bodies: wrong types, bad email, short password, long names, malformed JSON", async () => {
		const types = await node.http("POST", "/auth/email/register", { body: { email: 5, password: true, firstName: [], lastName: {} } });
		expect(types.status).toBe(400);
		expect(Object.keys(types.body.errors).sort()).toEqual(["email", "firstName", "lastName", "password"]);

		const bad = await node.http("POST", "/auth/email/register", {
			body: { email: "not-an-email", password: "12345", firstName: "x".repeat(101), lastName: "" },
		});
		expect(bad.status).toBe(400);
		expect(bad.body).toMatchObject({ statusCode: 400, error: "Bad Request" });
		expect(bad.body.errors).toMatchObject({ email: "email", password: "stringMin", firstName: "stringMax" });
		expect(bad.body.errors.lastName).toBeDefined();

		const missing = await node.http("POST", "/auth/email/login", { body: {} });
		expect(missing.status).toBe(400);
		expect(missing.body.errors).toMatchObject({ email: "required", password: "required" });

		const malformed = await node.http("POST", "/auth/email/login", { rawBody: '{"email": "a@b.co",', headers: { "Content-Type": "application/json" } });
		expect(malformed.status).toBe(400);
		expect(malformed.body).toMatchObject({ statusCode: 400, error: "Bad Request" });
		expect(malformed.text).not.toMatch(/at .*\.(ts|js):\d+/);
	});

	it("refuses an email with a NUL or other control character with 400 errors.email = email on every route that takes one", async () => {
		const routes: Array<[string, Record<string, unknown>]> = [
			["/auth/email/login", { password: PASSWORD }],
			["/auth/email/register", { password: PASSWORD, firstName: "Nul", lastName: "Byte" }],
			["/auth/email/confirm/resend/status", {}],
			["/auth/email/confirm/resend", {}],
			["/auth/forgot/password", {}],
			["/auth/email/register/send-code", {}],
			["/auth/email/register/verify-code", { code: "123456", password: PASSWORD, firstName: "Nul", lastName: "Byte" }],
			["/auth/email/login/send-code", {}],
			["/auth/email/login/verify-code", { code: "123456" }],
		];
		for (const email of ["x\u0000b@example.com", "\u0000@example.com", "a@example.com\u0000", "x\u0001b@example.com", "x\u007fb@example.com"]) {
			for (const [path, body] of routes) {
				const res = await node.http("POST", path, { body: { ...body, email } });
				expect({ path, email, status: res.status }).toEqual({ path, email, status: 400 });
				expect(res.body).toMatchObject({ statusCode: 400, error: "Bad Request", errors: { email: "email" } });
			}
		}
	});

	it("drops unknown body fields (a client cannot set its own role)", async () => {
		const email = uniqueEmail("role");
		const res = await node.http("POST", "/auth/email/register", { body: { email, password: PASSWORD, firstName: "A", lastName: "B", role: "admin", emailConfirmedAt: "2020-01-01" } });
		expect(res.status).toBe(204);
		const early = await login(node, email, PASSWORD);
		expect(early.body.message).toBe("Email not confirmed");
		const confirmed = await node.http("POST", "/auth/email/confirm", { body: { hash: node.lastMail(email).data.hash } });
		expect(confirmed.body.user.role).toBe("user");
	});

	it("does not disclose an existing account on sign-up, and tells its owner instead", async () => {
		const { email } = await signUp(node);
		const res = await node.http("POST", "/auth/email/register", { body: { email, password: "another-pass", firstName: "X", lastName: "Y" } });
		expect(res.status).toBe(204);
		expect(node.lastMail(email).template).toBe("accountExists");
		// The existing password still works; the attempt changed nothing.
		expect((await login(node, email, PASSWORD)).status).toBe(200);
		expect((await login(node, email, "another-pass")).status).toBe(401);
	});

	it("lets the latest registration of an unconfirmed address win, and voids its earlier link", async () => {
		const email = uniqueEmail("rereg");
		await node.http("POST", "/auth/email/register", { body: { email, password: "first-pass", firstName: "A", lastName: "B" } });
		const first = node.lastMail(email).data.hash;
		await node.http("POST", "/auth/email/register", { body: { email, password: "second-pass", firstName: "C", lastName: "D" } });
		const second = node.lastMail(email).data.hash;
		expect(second).not.toBe(first);
		expect((await node.http("POST", "/auth/email/confirm", { body: { hash: first } })).status).toBe(422);
		const ok = await node.http("POST", "/auth/email/confirm", { body: { hash: second } });
		expect(ok.status).toBe(200);
		expect(ok.body.user).toMatchObject({ firstName: "C", lastName: "D" });
		expect((await login(node, email, "first-pass")).status).toBe(401);
		expect((await login(node, email, "second-pass")).status).toBe(200);
	});

	it("GET /auth/me needs a token and returns the user's public form", async () => {
		const me = await signUp(node, { firstName: "Alan", lastName: "Turing" });
		expect((await node.http("GET", "/auth/me")).status).toBe(401);
		expect((await node.http("GET", "/auth/me", { token: "garbage" })).status).toBe(401);
		// A refresh token is not an access token.
		expect((await node.http("GET", "/auth/me", { token: me.refreshToken })).status).toBe(401);
		const res = await node.http("GET", "/auth/me", { token: me.token });
		expect(res.status).toBe(200);
		expect(res.body).toMatchObject({ id: me.user.id, email: me.email, firstName: "Alan", lastName: "Turing", role: "user", status: "active" });
		expect(JSON.stringify(res.body)).not.toMatch(/passwordHash|\$2[aby]\$/);
	});

	it("PATCH /auth/me updates names and changes the password only with the right old password", async () => {
		const me = await signUp(node);
		const names = await node.http("PATCH", "/auth/me", { token: me.token, body: { firstName: "  Ada  ", lastName: "King" } });
		expect(names.status).toBe(200);
		expect(names.body).toMatchObject({ firstName: "Ada", lastName: "King", email: me.email });

		const missingOld = await node.http("PATCH", "/auth/me", { token: me.token, body: { password: "brand-new-pass" } });
		expect(missingOld.status).toBe(400);
		expect(missingOld.body.errors).toEqual({ oldPassword: "required" });

		const wrongOld = await node.http("PATCH", "/auth/me", { token: me.token, body: { password: "brand-new-pass", oldPassword: "nope-nope" } });
		expect(wrongOld.status).toBe(400);
		expect(wrongOld.body).toMatchObject({ statusCode: 400, message: "Incorrect old password", errors: { oldPassword: "incorrectOldPassword" } });

		const short = await node.http("PATCH", "/auth/me", { token: me.token, body: { password: "12345", oldPassword: PASSWORD } });
		expect(short.status).toBe(400);
		expect(short.body.errors.password).toBe("stringMin");

		const other = await login(node, me.email, PASSWORD);
		expect(other.status).toBe(200);
		const changed = await node.http("PATCH", "/auth/me", { token: me.token, body: { password: "brand-new-pass", oldPassword: PASSWORD } });
		expect(changed.status).toBe(200);
		expect((await login(node, me.email, PASSWORD)).status).toBe(401);
		expect((await login(node, me.email, "brand-new-pass")).status).toBe(200);
		// The session that changed it stays; other sessions end.
		expect((await node.http("GET", "/auth/me", { token: me.token })).status).toBe(200);
		expect((await node.http("GET", "/auth/me", { token: other.body.token })).status).toBe(401);
		expect((await node.http("POST", "/auth/refresh", { token: other.body.refreshToken })).status).toBe(401);
	});

	it("changes the email only once the new address confirms it", async () => {
		const me = await signUp(node);
		const taken = await signUp(node);
		const clash = await node.http("PATCH", "/auth/me", { token: me.token, body: { email: taken.email } });
		expect(clash.status).toBe(400);
		expect(clash.body.errors).toEqual({ email: "emailAlreadyExists" });

		const newEmail = uniqueEmail("moved");
		const res = await node.http("PATCH", "/auth/me", { token: me.token, body: { email: newEmail.toUpperCase() } });
		expect(res.status).toBe(200);
		expect(res.body.email).toBe(me.email);
		const mail = node.lastMail(newEmail);
		expect(mail.template).toBe("confirmNew");
		expect(mail.text).toContain(`${node.config.publicUrl}/confirm-new-email?hash=${mail.data.hash}`);
		expect((await node.http("GET", "/auth/me", { token: me.token })).body.email).toBe(me.email);

		// A confirm-email link is not a confirm-new-email link.
		expect((await node.http("POST", "/auth/email/confirm", { body: { hash: mail.data.hash } })).status).toBe(422);
		const done = await node.http("POST", "/auth/email/confirm/new", { body: { hash: mail.data.hash } });
		expect(done.status).toBe(204);
		expect(done.text).toBe("");
		expect((await node.http("GET", "/auth/me", { token: me.token })).body.email).toBe(newEmail);
		expect(node.lastMail(me.email)).toMatchObject({ template: "emailChanged", data: { newEmail } });
		expect((await login(node, newEmail, PASSWORD)).status).toBe(200);
		expect((await login(node, me.email, PASSWORD)).status).toBe(401);

		const reuse = await node.http("POST", "/auth/email/confirm/new", { body: { hash: mail.data.hash } });
		expect(reuse.status).toBe(422);
		expect(reuse.body.errors).toEqual({ hash: "invalidHash" });
	});

	it("only the latest requested new address can be confirmed", async () => {
		const me = await signUp(node);
		const a = uniqueEmail("a");
		const b = uniqueEmail("b");
		await node.http("PATCH", "/auth/me", { token: me.token, body: { email: a } });
		await node.http("PATCH", "/auth/me", { token: me.token, body: { email: b } });
		expect((await node.http("POST", "/auth/email/confirm/new", { body: { hash: node.lastMail(a).data.hash } })).status).toBe(422);
		expect((await node.http("POST", "/auth/email/confirm/new", { body: { hash: node.lastMail(b).data.hash } })).status).toBe(204);
		expect((await node.http("GET", "/auth/me", { token: me.token })).body.email).toBe(b);
	});

	it("rotates refresh tokens and treats a reused one as theft", async () => {
		const me = await signUp(node);
		const first = await node.http("POST", "/auth/refresh", { token: me.refreshToken });
		expect(first.status).toBe(200);
		expect(Object.keys(first.body).sort()).toEqual(["refreshToken", "token", "tokenExpires"]);
		expect(first.body.refreshToken).not.toBe(me.refreshToken);
		expect((jwt.decode(first.body.token) as jwt.JwtPayload).sid).toBe((jwt.decode(me.token) as jwt.JwtPayload).sid);
		expect((await node.http("GET", "/auth/me", { token: first.body.token })).status).toBe(200);

		const second = await node.http("POST", "/auth/refresh", { token: first.body.refreshToken });
		expect(second.status).toBe(200);

		// The first refresh token was already used: 401, and the whole session ends.
		const reused = await node.http("POST", "/auth/refresh", { token: me.refreshToken });
		expect(reused.status).toBe(401);
		expect((await node.http("POST", "/auth/refresh", { token: second.body.refreshToken })).status).toBe(401);
		expect((await node.http("GET", "/auth/me", { token: second.body.token })).status).toBe(401);
		expect((await node.http("GET", "/auth/me", { token: me.token })).status).toBe(401);
	});

	it("refuses an access token on /auth/refresh and a forged refresh token", async () => {
		const me = await signUp(node);
		expect((await node.http("POST", "/auth/refresh", { token: me.token })).status).toBe(401);
		expect((await node.http("POST", "/auth/refresh")).status).toBe(401);
		const claims = jwt.decode(me.refreshToken) as jwt.JwtPayload;
		const forged = jwt.sign({ ...claims, nonce: "guessed" }, "not-the-secret");
		expect((await node.http("POST", "/auth/refresh", { token: forged })).status).toBe(401);
		// The genuine token still works: a forgery does not end the session.
		expect((await node.http("POST", "/auth/refresh", { token: me.refreshToken })).status).toBe(200);
	});

	it("ends the session when the refresh window passes", async () => {
		const me = await signUp(node);
		node.clock.advance(node.config.refreshTtlSeconds * 1000 + 1000);
		try {
			expect((await node.http("POST", "/auth/refresh", { token: me.refreshToken })).status).toBe(401);
		} finally {
			node.clock.reset();
		}
	});

	it("logout ends the session: its access and refresh tokens are 401 afterwards, other sessions live on", async () => {
		const me = await signUp(node);
		const other = await login(node, me.email, PASSWORD);
		expect((await node.http("GET", "/auth/me", { token: me.token })).status).toBe(200);
		const out = await node.http("POST", "/auth/logout", { token: me.token });
		expect(out.status).toBe(204);
		expect(out.text).toBe("");
		const after = await node.http("GET", "/auth/me", { token: me.token });
		expect(after.status).toBe(401);
		expect(after.body).toMatchObject({ statusCode: 401, error: "Unauthorized" });
		expect((await node.http("POST", "/auth/refresh", { token: me.refreshToken })).status).toBe(401);
		expect((await node.http("POST", "/auth/logout", { token: me.token })).status).toBe(401);
		expect((await node.http("GET", "/auth/me", { token: other.body.token })).status).toBe(200);
	});

	it("DELETE /auth/me soft-deletes the account, ends its sessions and frees the address", async () => {
		const me = await signUp(node);
		const other = await login(node, me.email, PASSWORD);
		const del = await node.http("DELETE", "/auth/me", { token: me.token });
		expect(del.status).toBe(204);
		expect(del.text).toBe("");
		expect((await node.http("GET", "/auth/me", { token: me.token })).status).toBe(401);
		expect((await node.http("GET", "/auth/me", { token: other.body.token })).status).toBe(401);
		expect((await node.http("POST", "/auth/refresh", { token: other.body.refreshToken })).status).toBe(401);
		expect((await login(node, me.email, PASSWORD)).body).toMatchObject({ statusCode: 401, message: "Invalid email or password" });
		// The row stays (paranoid) for audit.
		const row = await node.app.models.User.findByPk(me.user.id, { paranoid: false });
		expect(row?.deletedAt).toBeTruthy();
		// The address can sign up again as a new account.
		const again = await signUp(node, { email: me.email });
		expect(again.user.id).not.toBe(me.user.id);
	});

	it("stores no secret in plain text", async () => {
		const me = await signUp(node);
		const { models } = node.app;
		const user = await models.User.findByPk(me.user.id);
		expect(user!.passwordHash).toMatch(/^\$2[aby]\$/);
		const claims = jwt.decode(me.refreshToken) as jwt.JwtPayload;
		const session = await models.Session.findByPk(claims.sid);
		expect(session!.refreshNonce).not.toContain(claims.nonce);
		expect(session!.refreshNonce).toMatch(/^[0-9a-f]{64}$/);
		const hashes = await models.AuthHash.findAll({ where: { userId: me.user.id } });
		expect(hashes.length).toBeGreaterThan(0);
		for (const h of hashes) expect(h.hashDigest).toMatch(/^[0-9a-f]{64}$/);
	});
});
