/**
 * Access and refresh tokens (JWT HS256, jsonwebtoken). `iat`/`exp` come from the caller's clock
 * so tests can move time; the gateway verifies them with `verifyToken` (lib/auth/credentials.ts
 * resolveBearer).
 * The refresh token carries a random nonce; the session row keeps only its keyed digest, and a
 * refresh replaces it, so an old refresh token is recognisable as reuse.
 */
import jwt from "jsonwebtoken";
import { digest, randomToken } from "../crypto";

export interface AccessClaims {
	sub: string;
	sid: string;
	role: string;
	typ: "access";
}

export interface RefreshClaims {
	sub: string;
	sid: string;
	nonce: string;
	typ: "refresh";
}

export interface SignedToken {
	token: string;
	/** Expiry instant, epoch milliseconds (what `tokenExpires` carries). */
	expiresAtMs: number;
}

function sign(claims: object, secret: string, ttlSeconds: number, nowMs: number): SignedToken {
	const iat = Math.floor(nowMs / 1000);
	const exp = iat + Math.max(1, Math.floor(ttlSeconds));
	const token = jwt.sign({ ...claims, iat, exp }, secret, { algorithm: "HS256" });
	return { token, expiresAtMs: exp * 1000 };
}

export function signAccessToken(input: { userId: number; sessionId: string; role: string }, secret: string, ttlSeconds: number, nowMs: number): SignedToken {
	const claims: AccessClaims = { sub: String(input.userId), sid: input.sessionId, role: input.role, typ: "access" };
	return sign(claims, secret, ttlSeconds, nowMs);
}

export function signRefreshToken(input: { userId: number; sessionId: string; nonce: string }, secret: string, ttlSeconds: number, nowMs: number): SignedToken {
	const claims: RefreshClaims = { sub: String(input.userId), sid: input.sessionId, nonce: input.nonce, typ: "refresh" };
	return sign(claims, secret, ttlSeconds, nowMs);
}

export function generateNonce(): string {
	return randomToken(24);
}

export function nonceDigest(nonce: string, key: string): string {
	return digest(`refresh:${nonce}`, key);
}

/**
 * The claims of a token we signed with `secret`, at `nowSeconds` (the app clock). HS256 only
 * (`none` and public-key algorithms are refused). jsonwebtoken checks `exp` only when a token has
 * one; every token we issue has it, so one without is not ours and never expires: refused.
 * Throws jsonwebtoken's errors (TokenExpiredError for an expired token).
 */
export function verifyToken(token: string, secret: string, nowSeconds: number): jwt.JwtPayload {
	const verified = jwt.verify(token, secret, { algorithms: ["HS256"], clockTimestamp: nowSeconds });
	if (typeof verified !== "object" || verified === null) throw new jwt.JsonWebTokenError("payload is not an object");
	if (typeof verified.exp !== "number") throw new jwt.JsonWebTokenError("jwt exp required");
	return verified;
}
