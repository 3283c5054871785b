import crypto from "node:crypto";
import jwt from "jsonwebtoken";
import { generateNonce, nonceDigest, signAccessToken, signRefreshToken, verifyToken } from "../../../lib/auth/tokens";

const NOW = Date.UTC(2030, 5, 1, 10, 0, 0, 789);

describe("tokens", () => {
	it("access tokens carry sub, sid, role, typ and expire after the TTL from the given clock", () => {
		const { token, expiresAtMs } = signAccessToken({ userId: 42, sessionId: "s-1", role: "user" }, "secret", 3600, NOW);
		const claims = jwt.verify(token, "secret", { algorithms: ["HS256"], clockTimestamp: Math.floor(NOW / 1000) }) as jwt.JwtPayload;
		expect(claims).toMatchObject({ sub: "42", sid: "s-1", role: "user", typ: "access" });
		expect(claims.iat).toBe(Math.floor(NOW / 1000));
		expect(claims.exp).toBe(Math.floor(NOW / 1000) + 3600);
		expect(expiresAtMs).toBe(claims.exp! * 1000);
		expect(jwt.decode(token, { complete: true })!.header.alg).toBe("HS256");
		expect(() => jwt.verify(token, "secret", { algorithms: ["HS256"], clockTimestamp: claims.exp! + 1 })).toThrow(jwt.TokenExpiredError);
		expect(() => jwt.verify(token, "other", { algorithms: ["HS256"], clockTimestamp: claims.iat })).toThrow(jwt.JsonWebTokenError);
	});

	it("refresh tokens carry the nonce and typ refresh", () => {
		const nonce = generateNonce();
		const { token } = signRefreshToken({ userId: 7, sessionId: "s-2", nonce }, "r-secret", 86400, NOW);
		const claims = jwt.verify(token, "r-secret", { clockTimestamp: Math.floor(NOW / 1000) }) as jwt.JwtPayload;
		expect(claims).toMatchObject({ sub: "7", sid: "s-2", nonce, typ: "refresh" });
		expect(claims.exp! - claims.iat!).toBe(86400);
	});

	it("verifyToken answers our tokens' claims and refuses expired, foreign-algorithm and exp-less ones", () => {
		const now = Math.floor(NOW / 1000);
		const { token } = signAccessToken({ userId: 42, sessionId: "s-1", role: "user" }, "secret", 60, NOW);
		expect(verifyToken(token, "secret", now)).toMatchObject({ sub: "42", typ: "access", exp: now + 60 });
		expect(() => verifyToken(token, "secret", now + 61)).toThrow(jwt.TokenExpiredError);
		expect(() => verifyToken(token, "other", now)).toThrow(jwt.JsonWebTokenError);
		expect(() => verifyToken(jwt.sign({ sub: "42", exp: now + 60 }, "secret", { algorithm: "HS512" }), "secret", now)).toThrow(jwt.JsonWebTokenError);
		for (const noExp of [jwt.sign({ sub: "42", iat: now }, "secret"), jwt.sign({ sub: "42" }, "secret", { noTimestamp: true })]) {
			expect(() => verifyToken(noExp, "secret", now)).toThrow(/exp required/);
		}
		// A non-numeric exp (jwt.sign will not write one, so signed by hand) is refused too.
		const enc = (o: object) => Buffer.from(JSON.stringify(o)).toString("base64url");
		const head = `${enc({ alg: "HS256", typ: "JWT" })}.${enc({ sub: "42", exp: String(now + 60) })}`;
		const stringExp = `${head}.${crypto.createHmac("sha256", "secret").update(head).digest("base64url")}`;
		expect(() => verifyToken(stringExp, "secret", now)).toThrow(jwt.JsonWebTokenError);
	});

	it("nonces are random and stored only as keyed digests", () => {
		const a = generateNonce();
		expect(a.length).toBeGreaterThanOrEqual(32);
		expect(generateNonce()).not.toBe(a);
		expect(nonceDigest(a, "k")).toMatch(/^[0-9a-f]{64}$/);
		expect(nonceDigest(a, "k")).toBe(nonceDigest(a, "k"));
		expect(nonceDigest(a, "k")).not.toBe(nonceDigest(a, "k2"));
	});
});
