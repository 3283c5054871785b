/**
 * Verifies a Google ID token: RS256 signature against the published keys (jwks-rsa, cached and
 * rate-limited), issuer, audience (our client ids), expiry against the injectable clock, and a
 * verified email. The keys' URL is configuration, so tests serve their own JWKS.
 */
import jwt from "jsonwebtoken";
import jwksRsa from "jwks-rsa";

export interface GoogleConfig {
	clientIds: string[];
	jwksUrl: string;
	issuers: string[];
}

export interface GoogleIdentity {
	subject: string;
	email: string;
	firstName: string | null;
	lastName: string | null;
}

/** The token is not acceptable (signature, claims, expiry, unverified email). */
export class GoogleTokenError extends Error {}
/** Google's keys could not be fetched: not the caller's fault. */
export class GoogleKeysUnavailableError extends Error {}

export class GoogleVerifier {
	private readonly client: jwksRsa.JwksClient;

	constructor(private readonly cfg: GoogleConfig, private readonly nowMs: () => number) {
		this.client = new jwksRsa.JwksClient({
			jwksUri: cfg.jwksUrl,
			cache: true,
			cacheMaxAge: 10 * 60_000,
			// Unknown `kid`s force a fetch; cap them so forged tokens cannot hammer the key endpoint.
			rateLimit: true,
			jwksRequestsPerMinute: 10,
			timeout: 5000,
		});
	}

	get configured(): boolean {
		return this.cfg.clientIds.length > 0;
	}

	async verify(idToken: string): Promise<GoogleIdentity> {
		const decoded = jwt.decode(idToken, { complete: true });
		if (!decoded || typeof decoded.payload === "string" || decoded.header.alg !== "RS256") {
			throw new GoogleTokenError("Malformed token");
		}
		let publicKey: string;
		try {
			publicKey = (await this.client.getSigningKey(decoded.header.kid)).getPublicKey();
		} catch (err) {
			const name = (err as Error)?.name;
			if (name === "SigningKeyNotFoundError" || name === "JwksRateLimitError") throw new GoogleTokenError("Unknown signing key");
			throw new GoogleKeysUnavailableError("Google signing keys unavailable");
		}
		let claims: jwt.JwtPayload;
		try {
			claims = jwt.verify(idToken, publicKey, {
				algorithms: ["RS256"],
				audience: this.cfg.clientIds as [string, ...string[]],
				issuer: this.cfg.issuers as [string, ...string[]],
				clockTimestamp: Math.floor(this.nowMs() / 1000),
				clockTolerance: 5,
			}) as jwt.JwtPayload;
		} catch {
			throw new GoogleTokenError("Invalid token");
		}
		const verified = claims.email_verified === true || claims.email_verified === "true";
		if (typeof claims.email !== "string" || !claims.email || !verified) throw new GoogleTokenError("Email not verified");
		if (typeof claims.sub !== "string" || !claims.sub) throw new GoogleTokenError("Missing subject");
		const name = (v: unknown) => (typeof v === "string" && v.trim() ? v.trim().slice(0, 100) : null);
		return { subject: claims.sub, email: claims.email.trim().toLowerCase(), firstName: name(claims.given_name), lastName: name(claims.family_name) };
	}
}
