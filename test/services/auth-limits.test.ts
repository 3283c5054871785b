import { startNode, TestNode } from "../helpers/harness";
import { PASSWORD, authRoutesReady, login, signUp, uniqueEmail } from "./auth.helpers";

const MIN = 60_000;

describe("auth: lockout, per-address caps, confirmation resend, password reset", () => {
	let node: TestNode;
	beforeAll(async () => {
		node = await startNode();
		await authRoutesReady(node);
	});
	afterAll(async () => node?.stop());
	afterEach(() => node.clock.reset());

	describe("sign-in lockout", () => {
		it("locks an address for 15 minutes after 10 failed sign-ins", async () => {
			const me = await signUp(node);
			const start = node.clock.now().getTime();
			for (let i = 0; i < 10; i++) expect((await login(node, me.email, `wrong-${i}`)).status).toBe(401);
			const locked = await login(node, me.email, PASSWORD);
			expect(locked.status).toBe(429);
			expect(locked.body).toMatchObject({
				statusCode: 429,
				message: "Too many login attempts",
				error: "Too Many Requests",
				errors: { email: "tooManyLoginAttempts" },
			});
			const retryAt = Date.parse(locked.body.canRetryAt);
			expect(locked.body.canRetryAt).toBe(new Date(retryAt).toISOString());
			expect(retryAt).toBeGreaterThanOrEqual(start + 15 * MIN);
			expect(retryAt).toBeLessThan(start + 16 * MIN);

			node.clock.advance(14 * MIN);
			expect((await login(node, me.email, PASSWORD)).status).toBe(429);
			node.clock.advance(2 * MIN);
			expect((await login(node, me.email, PASSWORD)).status).toBe(200);
		});

		it("locks unknown addresses the same way (nothing disclosed)", async () => {
			const email = uniqueEmail("ghost");
			for (let i = 0; i < 10; i++) expect((await login(node, email, "wrong-pass")).status).toBe(401);
			const locked = await login(node, email, "wrong-pass");
			expect(locked.status).toBe(429);
			expect(locked.body.errors).toEqual({ email: "tooManyLoginAttempts" });
		});

		it("a successful sign-in clears the failures", async () => {
			const me = await signUp(node);
			for (let i = 0; i < 9; i++) await login(node, me.email, "wrong-pass");
			expect((await login(node, me.email, PASSWORD)).status).toBe(200);
			for (let i = 0; i < 9; i++) expect((await login(node, me.email, "wrong-pass")).status).toBe(401);
			expect((await login(node, me.email, PASSWORD)).status).toBe(200);
		});

		it("a burst of parallel guesses cannot get past 10 password checks", async () => {
			const me = await signUp(node);
			const results = await Promise.all(Array.from({ length: 16 }, (_, i) => login(node, me.email, `burst-${i}`)));
			const statuses = results.map(r => r.status);
			expect(statuses.filter(s => s === 401)).toHaveLength(10);
			expect(statuses.filter(s => s === 429)).toHaveLength(6);
		});

		it("wrong old passwords on PATCH /auth/me count towards the lockout", async () => {
			const me = await signUp(node);
			for (let i = 0; i < 10; i++) {
				const res = await node.http("PATCH", "/auth/me", { token: me.token, body: { password: "new-password", oldPassword: `wrong-${i}` } });
				expect(res.status).toBe(400);
			}
			const res = await node.http("PATCH", "/auth/me", { token: me.token, body: { password: "new-password", oldPassword: PASSWORD } });
			expect(res.status).toBe(429);
			expect(res.body.errors).toEqual({ email: "tooManyLoginAttempts" });
		});
	});

	describe("confirmation resend", () => {
		const status = (email: string) => node.http("POST", "/auth/email/confirm/resend/status", { body: { email } });
		const resend = (email: string) => node.http("POST", "/auth/email/confirm/resend", { body: { email } });

		it("resends a working link, 5 times a day, then answers 204 and sends nothing", async () => {
			const email = uniqueEmail("resend");
			await node.http("POST", "/auth/email/register", { body: { email, password: PASSWORD, firstName: "R", lastName: "S" } });
			expect((await status(email)).body).toEqual({ canResend: true, canRetryAt: null, remainingToday: 5 });
			const start = node.clock.now().getTime();
			for (let i = 0; i < 5; i++) {
				const res = await resend(email);
				expect(res.status).toBe(204);
				expect(res.text).toBe("");
			}
			expect(node.mails(email)).toHaveLength(6);
			const over = await resend(email);
			expect(over.status).toBe(204);
			expect(node.mails(email)).toHaveLength(6);

			const st = await status(email);
			expect(st.status).toBe(200);
			expect(st.body.canResend).toBe(false);
			expect(st.body.remainingToday).toBe(0);
			const retryAt = Date.parse(st.body.canRetryAt);
			expect(retryAt).toBeGreaterThanOrEqual(start + 24 * 3600_000);
			expect(retryAt).toBeLessThan(start + 24 * 3600_000 + MIN);

			// The resent link confirms the account.
			const confirmed = await node.http("POST", "/auth/email/confirm", { body: { hash: node.lastMail(email).data.hash } });
			expect(confirmed.status).toBe(200);

			node.clock.advance(24 * 3600_000 + MIN);
			expect((await status(email)).body).toEqual({ canResend: true, canRetryAt: null, remainingToday: 5 });
		});

		it("answers 204 and sends nothing for unknown or already confirmed addresses", async () => {
			const nobody = uniqueEmail("nobody");
			expect((await resend(nobody)).status).toBe(204);
			expect(node.mails(nobody)).toHaveLength(0);
			const me = await signUp(node);
			const before = node.mails(me.email).length;
			expect((await resend(me.email)).status).toBe(204);
			expect(node.mails(me.email)).toHaveLength(before);
		});

		it("the status does not tell known from unknown addresses", async () => {
			const nobody = uniqueEmail("nobody");
			const me = await signUp(node);
			await resend(nobody);
			await resend(me.email);
			expect((await status(nobody)).body).toEqual((await status(me.email)).body);
			expect((await status(nobody)).body.remainingToday).toBe(4);
		});

		it("validates the address", async () => {
			const res = await status("nope");
			expect(res.status).toBe(400);
			expect(res.body.errors).toEqual({ email: "email" });
		});
	});

	it("prunes events and codes no rule reads any more", async () => {
		const email = uniqueEmail("prune");
		await node.http("POST", "/auth/email/login/send-code", { body: { email } });
		await node.http("POST", "/auth/email/register/send-code", { body: { email } });
		const { EmailEvent, AuthCode } = node.app.models;
		expect(await EmailEvent.count({ where: { email } })).toBe(2);
		expect(await AuthCode.count({ where: { email } })).toBe(1);
		const auth = node.broker.getLocalService("auth") as unknown as { prune(): Promise<void> };
		await auth.prune();
		expect(await EmailEvent.count({ where: { email } })).toBe(2);
		node.clock.advance(2 * 24 * 3600_000 + MIN);
		await auth.prune();
		expect(await EmailEvent.count({ where: { email } })).toBe(0);
		expect(await AuthCode.count({ where: { email } })).toBe(0);
	});

	describe("password reset", () => {
		const forgot = (email: string) => node.http("POST", "/auth/forgot/password", { body: { email } });
		const reset = (hash: string, password: string) => node.http("POST", "/auth/reset/password", { body: { hash, password } });

		it("answers 204 for an unknown address and sends nothing", async () => {
			const nobody = uniqueEmail("nobody");
			const res = await forgot(nobody);
			expect(res.status).toBe(204);
			expect(res.text).toBe("");
			expect(node.mails(nobody)).toHaveLength(0);
		});

		it("resets once with the mailed link, ends every session, and the link is then 422 invalidHash", async () => {
			const me = await signUp(node);
			const other = await login(node, me.email, PASSWORD);
			expect((await forgot(me.email)).status).toBe(204);
			const mail = node.lastMail(me.email);
			expect(mail.template).toBe("resetPassword");
			expect(mail.text).toContain(`${node.config.publicUrl}/password-change?hash=${mail.data.hash}`);

			const res = await reset(mail.data.hash, "after-reset-1");
			expect(res.status).toBe(204);
			expect(res.text).toBe("");
			expect((await node.http("GET", "/auth/me", { token: me.token })).status).toBe(401);
			expect((await node.http("GET", "/auth/me", { token: other.body.token })).status).toBe(401);
			expect((await node.http("POST", "/auth/refresh", { token: other.body.refreshToken })).status).toBe(401);
			expect((await login(node, me.email, PASSWORD)).status).toBe(401);
			expect((await login(node, me.email, "after-reset-1")).status).toBe(200);

			const again = await reset(mail.data.hash, "after-reset-2");
			expect(again.status).toBe(422);
			expect(again.body).toEqual({ statusCode: 422, message: "Invalid or expired link", error: "Unprocessable Entity", errors: { hash: "invalidHash" } });
		});

		it("older links die when the password changes by reset", async () => {
			const me = await signUp(node);
			await forgot(me.email);
			const older = node.lastMail(me.email).data.hash;
			node.clock.advance(6 * MIN);
			await forgot(me.email);
			const newer = node.lastMail(me.email).data.hash;
			expect(newer).not.toBe(older);
			expect((await reset(newer, "new-pass-123")).status).toBe(204);
			const res = await reset(older, "other-pass-456");
			expect(res.status).toBe(422);
			expect(res.body.errors).toEqual({ hash: "invalidHash" });
		});

		it("older links die when the password changes in PATCH /auth/me", async () => {
			const me = await signUp(node);
			await forgot(me.email);
			const link = node.lastMail(me.email).data.hash;
			const patched = await node.http("PATCH", "/auth/me", { token: me.token, body: { password: "patched-pass", oldPassword: PASSWORD } });
			expect(patched.status).toBe(200);
			const res = await reset(link, "other-pass-456");
			expect(res.status).toBe(422);
			expect(res.body.errors).toEqual({ hash: "invalidHash" });
			expect((await login(node, me.email, "patched-pass")).status).toBe(200);
		});

		it("links expire after an hour; unknown links are 422 too", async () => {
			const me = await signUp(node);
			await forgot(me.email);
			const link = node.lastMail(me.email).data.hash;
			node.clock.advance(61 * MIN);
			expect((await reset(link, "too-late-123")).status).toBe(422);
			expect((await reset("made-up-hash", "whatever-123")).body.errors).toEqual({ hash: "invalidHash" });
		});

		it("validates the new password", async () => {
			const res = await reset("some-hash", "123");
			expect(res.status).toBe(400);
			expect(res.body.errors).toEqual({ password: "stringMin" });
		});

		it("mails at most once per 5 minutes, and at most 5 a day; always 204", async () => {
			const me = await signUp(node);
			const count = () => node.mails(me.email).filter(m => m.template === "resetPassword").length;
			expect((await forgot(me.email)).status).toBe(204);
			expect((await forgot(me.email)).status).toBe(204);
			expect(count()).toBe(1);
			node.clock.advance(4 * MIN);
			await forgot(me.email);
			expect(count()).toBe(1);
			for (let i = 2; i <= 5; i++) {
				node.clock.advance(5 * MIN + 1000);
				expect((await forgot(me.email)).status).toBe(204);
				expect(count()).toBe(i);
			}
			node.clock.advance(5 * MIN + 1000);
			expect((await forgot(me.email)).status).toBe(204);
			expect(count()).toBe(5);
			node.clock.advance(24 * 3600_000);
			await forgot(me.email);
			expect(count()).toBe(6);
		});

		it("a reset confirms an unconfirmed registration and replaces its password", async () => {
			const email = uniqueEmail("unconf");
			await node.http("POST", "/auth/email/register", { body: { email, password: "squatter-pass", firstName: "A", lastName: "B" } });
			await forgot(email);
			expect((await reset(node.lastMail(email).data.hash, "owner-pass-1")).status).toBe(204);
			const res = await login(node, email, "owner-pass-1");
			expect(res.status).toBe(200);
			expect(res.body.user.emailConfirmed).toBe(true);
		});
	});
});
