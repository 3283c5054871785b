import http from "node:http";
import crypto from "node:crypto";
import type { AddressInfo } from "node:net";
import jwt from "jsonwebtoken";
import { startNode, TestNode } from "../helpers/harness";
import { PASSWORD, authRoutesReady, login, signUp, uniqueEmail } from "./auth.helpers";

const CLIENT_ID = "test-client.apps.googleusercontent.com";
const KID = "test-key-1";

function rsaKey() {
	return crypto.generateKeyPairSync("rsa", { modulusLength: 2048 });
}

describe("auth: Google sign-in", () => {
	const key = rsaKey();
	const otherKey = rsaKey();
	let jwks: http.Server;
	let jwksHits = 0;
	let node: TestNode;

	function idToken(claims: Record<string, unknown> = {}, opts: { key?: crypto.KeyObject; kid?: string; expiresIn?: number } = {}) {
		const now = Math.floor(Date.now() / 1000);
		const payload = {
			iss: "https://accounts.google.com",
			aud: CLIENT_ID,
			sub: `g-${crypto.randomBytes(4).toString("hex")}`,
			email: uniqueEmail("google"),
			email_verified: true,
			given_name: "Gina",
			family_name: "Google",
			iat: now,
			exp: now + (opts.expiresIn ?? 3600),
			...claims,
		};
		return jwt.sign(payload, (opts.key || key.privateKey).export({ type: "pkcs8", format: "pem" }), { algorithm: "RS256", keyid: opts.kid ?? KID });
	}

	const googleLogin = (token: unknown) => node.http("POST", "/auth/google/login", { body: { idToken: token } });

	beforeAll(async () => {
		const jwk = { ...key.publicKey.export({ format: "jwk" }), kid: KID, alg: "RS256", use: "sig" };
		jwks = http.createServer((_req, res) => {
			jwksHits++;
			res.setHeader("Content-Type", "application/json");
			res.end(JSON.stringify({ keys: [jwk] }));
		});
		await new Promise<void>(resolve => jwks.listen(0, "127.0.0.1", resolve));
		const port = (jwks.address() as AddressInfo).port;
		node = await startNode({ env: { GOOGLE_CLIENT_ID: CLIENT_ID, GOOGLE_JWKS_URL: `http://127.0.0.1:${port}/certs` } });
		await authRoutesReady(node);
	});
	afterAll(async () => {
		await node?.stop();
		await new Promise(resolve => jwks.close(resolve));
	});
	afterEach(() => node.clock.reset());

	it("creates a confirmed account for a new address and signs the same account in next time", async () => {
		const email = uniqueEmail("newg");
		const first = await googleLogin(idToken({ email }));
		expect(first.status).toBe(200);
		expect(Object.keys(first.body).sort()).toEqual(["refreshToken", "token", "tokenExpires", "user"]);
		expect(first.body.user).toMatchObject({ email, firstName: "Gina", lastName: "Google", provider: "google", emailConfirmed: true, role: "user" });
		expect((await node.http("GET", "/auth/me", { token: first.body.token })).body.email).toBe(email);
		const orgs = await node.http("GET", "/organizations", { token: first.body.token });
		expect(orgs.body.map((o: { mode: string }) => o.mode).sort()).toEqual(["live", "sandbox"]);

		const second = await googleLogin(idToken({ email: email.toUpperCase() }));
		expect(second.status).toBe(200);
		expect(second.body.user.id).toBe(first.body.user.id);
		// No password was set, so a password sign-in cannot succeed.
		expect((await login(node, email, "anything-goes")).status).toBe(401);
		// The keys are cached, not fetched per sign-in.
		expect(jwksHits).toBe(1);
	});

	it("signs an existing email account in", async () => {
		const me = await signUp(node);
		const res = await googleLogin(idToken({ email: me.email }));
		expect(res.status).toBe(200);
		expect(res.body.user.id).toBe(me.user.id);
		expect(res.body.user.provider).toBe("email");
		expect((await login(node, me.email, PASSWORD)).status).toBe(200);
	});

	it("confirms an unconfirmed registration and drops its unproven password", async () => {
		const email = uniqueEmail("pending");
		await node.http("POST", "/auth/email/register", { body: { email, password: "squatter-pass", firstName: "A", lastName: "B" } });
		const res = await googleLogin(idToken({ email }));
		expect(res.status).toBe(200);
		expect(res.body.user.emailConfirmed).toBe(true);
		expect((await login(node, email, "squatter-pass")).status).toBe(401);
	});

	const rejected: Array<[string, () => string]> = [
		["a wrong audience", () => idToken({ aud: "someone-else.apps.googleusercontent.com" })],
		["a wrong issuer", () => idToken({ iss: "https://evil.example.com" })],
		["an expired token", () => idToken({}, { expiresIn: -120 })],
		["a bad signature", () => idToken({}, { key: otherKey.privateKey })],
		["an unknown key id", () => idToken({}, { key: otherKey.privateKey, kid: "unknown-kid" })],
		["an unverified email", () => idToken({ email_verified: false })],
		["no email", () => idToken({ email: undefined })],
		["an HS256 token", () => jwt.sign({ iss: "https://accounts.google.com", aud: CLIENT_ID, sub: "1", email: uniqueEmail(), email_verified: true }, "secret", { keyid: KID })],
		["an unsigned token", () => jwt.sign({ iss: "https://accounts.google.com", aud: CLIENT_ID, sub: "1", email: uniqueEmail(), email_verified: true }, "", { algorithm: "none" })],
		["garbage", () => "not.a.token"],
	];
	it.each(rejected)("rejects %s with 401", async (_name, make) => {
		const res = await googleLogin(make());
		expect(res.status).toBe(401);
		expect(res.body).toMatchObject({ statusCode: 401, message: "Invalid Google token", error: "Unauthorized", errors: { idToken: "invalidIdToken" } });
	});

	it("checks expiry against the service clock", async () => {
		const token = idToken({}, { expiresIn: 600 });
		node.clock.advance(20 * 60_000);
		expect((await googleLogin(token)).status).toBe(401);
	});

	it("validates the body", async () => {
		const res = await googleLogin(12345);
		expect(res.status).toBe(400);
		expect(res.body.errors).toEqual({ idToken: "string" });
		expect((await node.http("POST", "/auth/google/login", { body: {} })).body.errors).toEqual({ idToken: "required" });
	});

	it("without a configured client id, Google sign-in is a clear 400", async () => {
		const bare = await startNode();
		try {
			await authRoutesReady(bare);
			const res = await bare.http("POST", "/auth/google/login", { body: { idToken: idToken() } });
			expect(res.status).toBe(400);
			expect(res.body).toMatchObject({ statusCode: 400, message: "Google sign-in is not configured", errors: { idToken: "googleNotConfigured" } });
		} finally {
			await bare.stop();
		}
	});
});
