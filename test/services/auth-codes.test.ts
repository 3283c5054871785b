import { startNode, TestNode } from "../helpers/harness";
import { PASSWORD, authRoutesReady, login, signUp, uniqueEmail } from "./auth.helpers";

describe("auth: emailed one-time codes", () => {
	let node: TestNode;
	beforeAll(async () => {
		node = await startNode();
		await authRoutesReady(node);
	});
	afterAll(async () => node?.stop());
	afterEach(() => node.clock.reset());

	const sendRegister = (email: string) => node.http("POST", "/auth/email/register/send-code", { body: { email } });
	const verifyRegister = (body: Record<string, unknown>) => node.http("POST", "/auth/email/register/verify-code", { body });
	const sendLogin = (email: string) => node.http("POST", "/auth/email/login/send-code", { body: { email } });
	const verifyLogin = (email: string, code: string) => node.http("POST", "/auth/email/login/verify-code", { body: { email, code } });
	const wrongCode = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, "0");

	it("signs up with a code: 200 with an empty body, then a confirmed user and the login response", async () => {
		const email = uniqueEmail("code");
		const sent = await sendRegister(email);
		expect(sent.status).toBe(200);
		expect(sent.text).toBe("");
		const mail = node.lastMail(email);
		expect(mail.template).toBe("registerCode");
		expect(mail.data.code).toMatch(/^\d{6}$/);
		expect(mail.text).toContain(mail.data.code);

		const res = await verifyRegister({ email, code: mail.data.code, password: PASSWORD, firstName: "Code", lastName: "User" });
		expect(res.status).toBe(200);
		expect(Object.keys(res.body).sort()).toEqual(["refreshToken", "token", "tokenExpires", "user"]);
		expect(res.body.user).toMatchObject({ email, firstName: "Code", lastName: "User", emailConfirmed: true, provider: "email" });
		expect((await node.http("GET", "/auth/me", { token: res.body.token })).status).toBe(200);
		expect((await login(node, email, PASSWORD)).status).toBe(200);
		const orgs = await node.http("GET", "/organizations", { token: res.body.token });
		expect(orgs.body.map((o: { mode: string }) => o.mode).sort()).toEqual(["live", "sandbox"]);
	});

	it("a code works once", async () => {
		const email = uniqueEmail("once");
		await sendRegister(email);
		const { code } = node.lastMail(email).data;
		expect((await verifyRegister({ email, code })).status).toBe(200);
		const again = await verifyRegister({ email, code });
		expect(again.status).toBe(400);
		expect(again.body).toMatchObject({ statusCode: 400, message: "Invalid or expired code", errors: { code: "invalidCode" } });
	});

	it("without a password the account has none: password sign-in fails, code sign-in works", async () => {
		const email = uniqueEmail("nopw");
		await sendRegister(email);
		const res = await verifyRegister({ email, code: node.lastMail(email).data.code });
		expect(res.status).toBe(200);
		expect(res.body.user.firstName).toBeNull();
		expect((await login(node, email, "anything-at-all")).status).toBe(401);
		await sendLogin(email);
		expect((await verifyLogin(email, node.lastMail(email).data.code)).status).toBe(200);
	});

	it("5 wrong tries burn the code", async () => {
		const email = uniqueEmail("burn");
		await sendRegister(email);
		const { code } = node.lastMail(email).data;
		for (let i = 0; i < 5; i++) {
			const res = await verifyRegister({ email, code: wrongCode(code) });
			expect(res.status).toBe(400);
			expect(res.body.errors).toEqual({ code: "invalidCode" });
		}
		expect((await verifyRegister({ email, code })).status).toBe(400);
	});

	it("4 wrong tries still leave the right one working", async () => {
		const email = uniqueEmail("four");
		await sendRegister(email);
		const { code } = node.lastMail(email).data;
		for (let i = 0; i < 4; i++) expect((await verifyRegister({ email, code: wrongCode(code) })).status).toBe(400);
		expect((await verifyRegister({ email, code })).status).toBe(200);
	});

	it("parallel guesses cannot exceed 5 tries", async () => {
		const email = uniqueEmail("race");
		await sendLogin((await signUp(node, { email })).email);
		const { code } = node.lastMail(email).data;
		const guesses = await Promise.all(Array.from({ length: 8 }, () => verifyLogin(email, wrongCode(code))));
		expect(guesses.every(g => g.status === 400)).toBe(true);
		const row = await node.app.models.AuthCode.findOne({ where: { email, purpose: "login" }, order: [["id", "DESC"]] });
		expect(row!.attempts).toBe(5);
		expect((await verifyLogin(email, code)).status).toBe(400);
	});

	it("codes expire after 10 minutes", async () => {
		const email = uniqueEmail("late");
		await sendRegister(email);
		const { code } = node.lastMail(email).data;
		node.clock.advance(10 * 60_000 + 1000);
		expect((await verifyRegister({ email, code })).status).toBe(400);
	});

	it("a code still works just before its expiry", async () => {
		const email = uniqueEmail("intime");
		await sendRegister(email);
		const { code } = node.lastMail(email).data;
		node.clock.advance(9 * 60_000);
		expect((await verifyRegister({ email, code })).status).toBe(200);
	});

	it("a new code replaces the previous one", async () => {
		const email = uniqueEmail("newer");
		await sendRegister(email);
		const first = node.lastMail(email).data.code;
		await sendRegister(email);
		const second = node.lastMail(email).data.code;
		if (first !== second) expect((await verifyRegister({ email, code: first })).status).toBe(400);
		expect((await verifyRegister({ email, code: second })).status).toBe(200);
	});

	it("a code is bound to its address and purpose", async () => {
		const me = await signUp(node);
		const stranger = uniqueEmail("stranger");
		await sendLogin(me.email);
		const { code } = node.lastMail(me.email).data;
		expect((await verifyRegister({ email: me.email, code })).status).toBe(400);
		expect((await verifyLogin(stranger, code)).status).toBe(400);
		expect((await verifyLogin(me.email, code)).status).toBe(200);
	});

	it("rejects malformed codes with a validation error", async () => {
		const res = await verifyLogin(uniqueEmail(), "12ab56");
		expect(res.status).toBe(400);
		expect(res.body.errors.code).toBeDefined();
		const num = await node.http("POST", "/auth/email/login/verify-code", { body: { email: uniqueEmail(), code: 123456 } });
		expect(num.status).toBe(400);
		expect(num.body.errors.code).toBe("string");
	});

	it("sign-in codes: the login response for an account, 200 and no mail for an unknown address", async () => {
		const me = await signUp(node);
		const sent = await sendLogin(me.email.toUpperCase());
		expect(sent.status).toBe(200);
		expect(sent.text).toBe("");
		const mail = node.lastMail(me.email);
		expect(mail.template).toBe("loginCode");
		const res = await verifyLogin(me.email, mail.data.code);
		expect(res.status).toBe(200);
		expect(res.body.user.id).toBe(me.user.id);

		const nobody = uniqueEmail("nobody");
		const unknown = await sendLogin(nobody);
		expect(unknown.status).toBe(200);
		expect(unknown.text).toBe("");
		expect(node.mails(nobody)).toHaveLength(0);
		expect((await verifyLogin(nobody, "000000")).body.errors).toEqual({ code: "invalidCode" });
	});

	it("sends no sign-in code to an unconfirmed registration", async () => {
		const email = uniqueEmail("unconf");
		await node.http("POST", "/auth/email/register", { body: { email, password: PASSWORD, firstName: "A", lastName: "B" } });
		const before = node.mails(email).length;
		expect((await sendLogin(email)).status).toBe(200);
		expect(node.mails(email)).toHaveLength(before);
	});

	it("sign-up code for an existing account: same answer, the owner is told, no code", async () => {
		const me = await signUp(node);
		const res = await sendRegister(me.email);
		expect(res.status).toBe(200);
		const mail = node.lastMail(me.email);
		expect(mail.template).toBe("accountExists");
		expect(mail.data.code).toBeUndefined();
	});

	it("a sign-up code for an unconfirmed registration confirms it and replaces its unproven password", async () => {
		const email = uniqueEmail("claim");
		await node.http("POST", "/auth/email/register", { body: { email, password: "squatter-pass", firstName: "S", lastName: "Q" } });
		const oldLink = node.lastMail(email).data.hash;
		await sendRegister(email);
		const res = await verifyRegister({ email, code: node.lastMail(email).data.code, password: "owner-pass-1" });
		expect(res.status).toBe(200);
		expect((await login(node, email, "squatter-pass")).status).toBe(401);
		expect((await login(node, email, "owner-pass-1")).status).toBe(200);
		expect((await node.http("POST", "/auth/email/confirm", { body: { hash: oldLink } })).status).toBe(422);
	});

	it("caps sign-in codes at 10 a day per address with 429 tooManyEmails and canRetryAt, for unknown addresses alike", async () => {
		for (const email of [(await signUp(node)).email, uniqueEmail("capped")]) {
			const start = node.clock.now().getTime();
			for (let i = 0; i < 10; i++) expect((await sendLogin(email)).status).toBe(200);
			const over = await sendLogin(email);
			expect(over.status).toBe(429);
			expect(over.body).toMatchObject({ statusCode: 429, message: "Too many emails", error: "Too Many Requests", errors: { email: "tooManyEmails" } });
			const retryAt = Date.parse(over.body.canRetryAt);
			expect(retryAt).toBeGreaterThanOrEqual(start + 24 * 3600_000);
			expect(retryAt).toBeLessThan(start + 24 * 3600_000 + 60_000);
			node.clock.advance(24 * 3600_000 + 60_000);
			expect((await sendLogin(email)).status).toBe(200);
			node.clock.reset();
		}
	});

	it("caps sign-up codes at 10 a day per address", async () => {
		const email = uniqueEmail("regcap");
		for (let i = 0; i < 10; i++) expect((await sendRegister(email)).status).toBe(200);
		const over = await sendRegister(email);
		expect(over.status).toBe(429);
		expect(over.body.errors).toEqual({ email: "tooManyEmails" });
		expect(typeof over.body.canRetryAt).toBe("string");
		expect(node.mails(email)).toHaveLength(10);
	});
});
