/** Behaviour switched by configuration: bot check, short token lifetime, admin bootstrap. */
import http from "node:http";
import type { AddressInfo } from "node:net";
import jwt from "jsonwebtoken";
import { startNode, TestNode } from "../helpers/harness";
import { PASSWORD, authRoutesReady, login, signUp, uniqueEmail } from "./auth.helpers";

describe("auth: reCAPTCHA on sign-in, sign-up, confirmation resend and password reset", () => {
	const SECRET = "recaptcha-test-secret";
	let verifier: http.Server;
	const received: URLSearchParams[] = [];
	let node: TestNode;

	beforeAll(async () => {
		verifier = http.createServer((req, res) => {
			let body = "";
			req.on("data", c => (body += c));
			req.on("end", () => {
				const form = new URLSearchParams(body);
				received.push(form);
				const token = form.get("response");
				const answer = token === "good" ? { success: true, score: 0.9 } : token === "low" ? { success: true, score: 0.1 } : { success: false };
				res.setHeader("Content-Type", "application/json");
				res.end(JSON.stringify(answer));
			});
		});
		await new Promise<void>(resolve => verifier.listen(0, "127.0.0.1", resolve));
		const url = `http://127.0.0.1:${(verifier.address() as AddressInfo).port}/siteverify`;
		node = await startNode({ env: { RECAPTCHA_SECRET: SECRET, RECAPTCHA_VERIFY_URL: url } });
		await authRoutesReady(node);
	});
	afterAll(async () => {
		await node?.stop();
		await new Promise(resolve => verifier.close(resolve));
	});

	const register = (email: string, token?: string) =>
		node.http("POST", "/auth/email/register", {
			body: { email, password: PASSWORD, firstName: "Bot", lastName: "Check" },
			headers: token ? { "x-recaptcha-token": token } : {},
		});

	it("refuses a missing token, a failed one and a low score with 400 recaptchaFailed; accepts a good one", async () => {
		const email = uniqueEmail("captcha");
		for (const token of [undefined, "low", "bad"]) {
			const res = await register(email, token);
			expect(res.status).toBe(400);
			expect(res.body).toMatchObject({ statusCode: 400, error: "Bad Request", errors: { recaptcha: "recaptchaFailed" } });
		}
		expect(node.mails(email)).toHaveLength(0);
		const ok = await register(email, "good");
		expect(ok.status).toBe(204);
		expect(node.mails(email)).toHaveLength(1);
		const last = received[received.length - 1];
		expect(last.get("secret")).toBe(SECRET);
		expect(last.get("response")).toBe("good");
	});

	it("protects sign-in, confirmation resend and password reset too, but not codes or reads", async () => {
		const email = uniqueEmail("captcha2");
		for (const path of ["/auth/email/login", "/auth/email/confirm/resend", "/auth/forgot/password"]) {
			const res = await node.http("POST", path, { body: { email, password: PASSWORD } });
			expect(res.status).toBe(400);
			expect(res.body.errors).toEqual({ recaptcha: "recaptchaFailed" });
		}
		expect((await node.http("POST", "/auth/forgot/password", { body: { email }, headers: { "x-recaptcha-token": "good" } })).status).toBe(204);
		expect((await node.http("POST", "/auth/email/login/send-code", { body: { email } })).status).toBe(200);
		expect((await node.http("POST", "/auth/email/confirm/resend/status", { body: { email } })).status).toBe(200);
	});
});

describe("auth: token lifetime", () => {
	let node: TestNode;
	beforeAll(async () => {
		node = await startNode({ env: { AUTH_TOKEN_TTL: "60" } });
		await authRoutesReady(node);
	});
	afterAll(async () => node?.stop());

	it("an expired access token is 401 Token expired; the refresh token still gets a new one", async () => {
		// The lifetime is counted on the node's clock (lib/clock.ts), which the test moves: no sleep.
		const before = node.clock.now().getTime();
		const me = await signUp(node);
		const after = node.clock.now().getTime();
		// JWT times are whole seconds.
		expect(me.tokenExpires).toBeGreaterThanOrEqual(before - 1000 + 60_000);
		expect(me.tokenExpires).toBeLessThanOrEqual(after + 60_000);
		expect((await node.http("GET", "/auth/me", { token: me.token })).status).toBe(200);
		node.clock.advance(61_000);
		const res = await node.http("GET", "/auth/me", { token: me.token });
		expect(res.status).toBe(401);
		expect(res.body).toEqual({ statusCode: 401, message: "Token expired", error: "Unauthorized" });
		const es = await node.http("GET", "/auth/me", { token: me.token, headers: { "x-custom-lang": "es" } });
		expect(es.body.message).toBe("Token caducado");
		const refreshed = await node.http("POST", "/auth/refresh", { token: me.refreshToken });
		expect(refreshed.status).toBe(200);
		expect((await node.http("GET", "/auth/me", { token: refreshed.body.token })).status).toBe(200);
	});
});

describe("auth: admin from configuration", () => {
	it("creates the configured admin once, confirmed, with role admin", async () => {
		const email = uniqueEmail("admin");
		const env = { ADMIN_EMAIL: email.toUpperCase(), ADMIN_PASSWORD: "admin-password-1" };
		const node = await startNode({ env });
		let second: TestNode | undefined;
		try {
			await authRoutesReady(node);
			const res = await login(node, email, "admin-password-1");
			expect(res.status).toBe(200);
			expect(res.body.user).toMatchObject({ email, role: "admin", emailConfirmed: true });
			expect((jwt.decode(res.body.token) as jwt.JwtPayload).role).toBe("admin");
			// Like any user, the admin owns a sandbox and a live organization (made in the background).
			let orgs: Array<{ mode: string; role: string }> = [];
			for (let i = 0; i < 50 && orgs.length < 2; i++) {
				orgs = (await node.http("GET", "/organizations", { token: res.body.token })).body;
				if (orgs.length < 2) await new Promise(r => setTimeout(r, 100));
			}
			expect(orgs.map(o => `${o.mode}:${o.role}`).sort()).toEqual(["live:owner", "sandbox:owner"]);
			// A second node on the same database does not create it again.
			second = await startNode({ env, shareWith: node });
			expect(await node.app.models.User.count({ where: { email } })).toBe(1);
		} finally {
			await second?.stop();
			await node.stop();
		}
	});
});
