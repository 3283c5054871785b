/**
 * Accounts and sign-in: email + password with confirmation, emailed one-time codes, Google ID
 * tokens, sessions with rotating refresh tokens, the account itself (/auth/me), password reset
 * and the per-address protections (lockout, daily caps). Decisions are in docs/auth.md.
 *
 * Secrets at rest: passwords with bcrypt; codes, link hashes and refresh nonces as keyed digests
 * (HMAC under the master key). Answers never disclose whether an address has an account.
 */
import type { Context, Service, ServiceSchema } from "moleculer";
import bcrypt from "bcrypt";
import { Op, Transaction, UniqueConstraintError, WhereOptions, literal, type CreationAttributes } from "sequelize";
import { appOf } from "../lib/app";
import { badRequest, httpError, tooManyRequests, unauthorized, unprocessable } from "../lib/errors";
import { registerTranslations } from "../lib/i18n";
import type { AuthMeta } from "../lib/meta";
import { safeEqual, randomToken } from "../lib/crypto";
import { uuid } from "../lib/ids";
import { toUserView, UserView } from "../lib/users/view";
import { EMAIL_RULE as EMAIL } from "../lib/users/email";
import { announceKeysChanged } from "../lib/keys/announce";
import { revokeKeysOfOrganizationsLeftWithoutOwner } from "../lib/keys/ownerless";
import type { User } from "../models/user.model";
import type { Session } from "../models/session.model";
import type { AuthCodePurpose } from "../models/auth-code.model";
import type { AuthHash, AuthHashPurpose } from "../models/auth-hash.model";
import type { EmailEventKind } from "../models/email-event.model";
import { CODE_PATTERN, CODE_TTL_MS, LINK_TTL_MS, MAX_CODE_ATTEMPTS, codeDigest, generateCode, generateLinkHash, linkHashDigest } from "../lib/auth/codes";
import { generateNonce, nonceDigest, signAccessToken, signRefreshToken } from "../lib/auth/tokens";
import {
	CapState,
	CappedKind,
	DAY_MS,
	EMAIL_CAPS,
	LOGIN_FAILURE_LOOKBACK_MS,
	RESET_COOLDOWN_MS,
	capState,
	combine,
	cooldownState,
	loginLockState,
} from "../lib/auth/limits";
import { GoogleKeysUnavailableError, GoogleVerifier } from "../lib/auth/google";
import type { MailTemplate } from "../lib/mail/templates";

registerTranslations("es", {
	"Account disabled": "Cuenta desactivada",
	"Google sign-in is not configured": "El inicio de sesión con Google no está configurado",
	"Google sign-in is unavailable": "El inicio de sesión con Google no está disponible",
	"Invalid Google token": "Token de Google no válido",
	"Old password is required": "Se requiere la contraseña anterior",
});

export interface LoginResponse {
	token: string;
	refreshToken: string;
	tokenExpires: number;
	user: UserView;
}

export type RefreshResponse = Omit<LoginResponse, "user">;

/** Set by the gateway for `auth: "refresh"` actions from the verified refresh JWT. */
interface RefreshMeta extends AuthMeta {
	refresh?: { sessionId: string; nonce?: unknown; userId: number };
}

type Ctx<P = Record<string, never>> = Context<P, RefreshMeta>;

interface AuthVars {
	dummyHash: string;
	google: GoogleVerifier;
	pruneTimer: NodeJS.Timeout | null;
}

interface AuthMethods {
	ensureAdminOrganizations(userId: number): void;
	nowMs(): number;
	hashPassword(password: string): Promise<string>;
	checkPassword(password: string, hash: string | null | undefined): Promise<boolean>;
	findUserByEmail(email: string): Promise<User | null>;
	currentUser(ctx: Ctx<any>): Promise<User>;
	startSession(user: User): Promise<LoginResponse>;
	closeSessions(where: WhereOptions<Session>, reason: string, t?: Transaction): Promise<string[]>;
	announceEnded(ctx: Ctx<any>, ids: string[]): Promise<void>;
	sendMail(ctx: Ctx<any>, to: string, template: MailTemplate, data: Record<string, unknown>): Promise<void>;
	eventTimes(email: string, kind: EmailEventKind, sinceMs: number, beforeId?: number): Promise<number[]>;
	reserveQuota(email: string, kind: CappedKind, cooldownMs?: number): Promise<{ allowed: boolean; retryAt: number | null }>;
	issueLink(userId: number, purpose: AuthHashPurpose, email: string, t?: Transaction): Promise<string>;
	findLink(hash: string, purpose: AuthHashPurpose): Promise<AuthHash>;
	consumeLink(row: AuthHash, t?: Transaction): Promise<void>;
	revokeLinks(userId: number, purposes: AuthHashPurpose[], t?: Transaction): Promise<void>;
	linkUser(hash: string, purpose: AuthHashPurpose, valid: (user: User, link: AuthHash) => boolean): Promise<{ link: AuthHash; user: User }>;
	redeemLink(link: AuthHash, user: User, t: Transaction, change: () => Promise<unknown>): Promise<void>;
	mailLink(ctx: Ctx<any>, email: string, p: MailLink): Promise<void>;
	createConfirmed(values: UserCreation): Promise<{ user: User; created: boolean }>;
	confirmSignUp(user: User, values: Partial<UserCreation>): Promise<void>;
	signUpSession(ctx: Ctx<any>, user: User): Promise<LoginResponse>;
	issueCode(email: string, purpose: AuthCodePurpose): Promise<string>;
	consumeCode(email: string, purpose: AuthCodePurpose, code: string): Promise<void>;
	ensureOrganizations(ctx: Ctx<any>, user: User): Promise<void>;
	assertActive(user: User): void;
	prune(): Promise<void>;
}

/** A new user (createConfirmed): with an address. */
type UserCreation = CreationAttributes<User> & { email: string };

/** A link mailed on request (mailLink): the address's quota, the user it is for, the mail. */
interface MailLink {
	quota: CappedKind;
	cooldownMs?: number;
	wanted(user: User): boolean;
	purpose: AuthHashPurpose;
	template: MailTemplate;
	data(user: User, hash: string): Record<string, unknown>;
}

type AuthSettings = { rest: string };
type AuthThis = Service<AuthSettings> & AuthVars & AuthMethods;

const PRUNE_EVERY_MS = 60 * 60_000;

// ---- validation ----
/** bcrypt uses the first 72 bytes; longer passphrases are accepted (see docs/auth.md). */
const PASSWORD = { type: "string", min: 6, max: 128 } as const;
const NAME = { type: "string", trim: true, min: 1, max: 100 } as const;
const HASH = { type: "string", min: 1, max: 200 } as const;
const CODE = { type: "string", pattern: CODE_PATTERN } as const;
/** Params of these actions carry passwords, codes or hashes: never into traces. */
const NO_PARAMS_IN_TRACES = { tags: { params: false } } as const;

// ---- errors ----
const invalidCredentials = () => unauthorized("Invalid email or password");
const invalidCode = () => badRequest("Invalid or expired code", { code: "invalidCode" });
const invalidHash = () => unprocessable("Invalid or expired link", { hash: "invalidHash" });
const emailInUse = () => badRequest("Email already in use", { email: "emailAlreadyExists" });
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const tooManyEmails = (retryAt: number | null) => tooManyRequests("Too many emails", { email: "tooManyEmails" }, { canRetryAt: iso(retryAt) });

function displayName(user: { firstName: string | null; lastName: string | null; email: string | null }): string {
	const full = [user.firstName, user.lastName].filter(Boolean).join(" ").trim();
	return full || (user.email ? user.email.split("@")[0] : "My organization");
}

const AuthService: ServiceSchema<AuthSettings, AuthMethods & Record<string, any>, AuthVars> = {
	name: "auth",
	settings: { rest: "/" },

	actions: {
		// ---------- email + password ----------
		login: {
			rest: "POST /auth/email/login",
			auth: "public",
			recaptcha: true,
			tracing: NO_PARAMS_IN_TRACES,
			params: { $$strict: "remove", email: EMAIL, password: { type: "string", min: 1, max: 1024 } },
			async handler(this: AuthThis, ctx: Ctx<{ email: string; password: string }>): Promise<LoginResponse> {
				const { models } = appOf(this.broker);
				const { email, password } = ctx.params;
				const now = this.nowMs();
				const lock = loginLockState(await this.eventTimes(email, "login_failure", now - LOGIN_FAILURE_LOOKBACK_MS), now);
				if (lock.locked) throw tooManyRequests("Too many login attempts", { email: "tooManyLoginAttempts" }, { canRetryAt: iso(lock.until) });
				// Count the attempt before checking it, so a burst of parallel guesses cannot all slip under the lock.
				const attempt = await models.EmailEvent.create({ email, kind: "login_failure", createdAt: new Date(now) });
				const before = loginLockState(await this.eventTimes(email, "login_failure", now - LOGIN_FAILURE_LOOKBACK_MS, attempt.id), now);
				if (before.locked) {
					await attempt.destroy();
					throw tooManyRequests("Too many login attempts", { email: "tooManyLoginAttempts" }, { canRetryAt: iso(before.until) });
				}
				const user = await this.findUserByEmail(email);
				// Unknown address or no password: still one bcrypt compare, so timing does not tell.
				const ok = await this.checkPassword(password, user?.passwordHash);
				if (!user || !ok) throw invalidCredentials();
				await attempt.destroy();
				if (!user.emailConfirmedAt) throw unauthorized("Email not confirmed");
				this.assertActive(user);
				await models.EmailEvent.destroy({ where: { email, kind: "login_failure" } });
				return this.startSession(user);
			},
		},

		register: {
			rest: "POST /auth/email/register",
			auth: "public",
			recaptcha: true,
			tracing: NO_PARAMS_IN_TRACES,
			params: { $$strict: "remove", email: EMAIL, password: PASSWORD, firstName: NAME, lastName: NAME },
			async handler(this: AuthThis, ctx: Ctx<{ email: string; password: string; firstName: string; lastName: string }>): Promise<null> {
				const { models, sequelize } = appOf(this.broker);
				const { email, firstName, lastName } = ctx.params;
				ctx.meta.$statusCode = 204;
				// Hashed before the look-up, so known and unknown addresses cost the same.
				const passwordHash = await this.hashPassword(ctx.params.password);
				let user = await this.findUserByEmail(email);
				if (user) {
					// Known address: answer the same; mail the owner (capped like confirmation resends).
					const quota = await this.reserveQuota(email, "confirm_resend");
					if (!quota.allowed) return null;
					if (user.emailConfirmedAt) {
						await this.sendMail(ctx, email, "accountExists", {});
						return null;
					}
					// Not confirmed yet: the latest registration wins and earlier links stop working.
					const existing = user;
					const hash = await sequelize.transaction(async t => {
						await existing.update({ passwordHash, firstName, lastName }, { transaction: t });
						await this.revokeLinks(existing.id, ["confirm"], t);
						return this.issueLink(existing.id, "confirm", email, t);
					});
					await this.sendMail(ctx, email, "confirm", { hash, firstName });
					return null;
				}
				try {
					user = await models.User.create({ email, passwordHash, firstName, lastName, provider: "email", emailConfirmedAt: null });
				} catch (err) {
					// A concurrent registration of the same address won: answer the same, send nothing more.
					if (err instanceof UniqueConstraintError) return null;
					throw err;
				}
				await models.EmailEvent.create({ email, kind: "confirm", createdAt: new Date(this.nowMs()) });
				const hash = await this.issueLink(user.id, "confirm", email);
				await this.sendMail(ctx, email, "confirm", { hash, firstName });
				await this.ensureOrganizations(ctx, user);
				return null;
			},
		},

		confirmEmail: {
			rest: "POST /auth/email/confirm",
			auth: "public",
			tracing: NO_PARAMS_IN_TRACES,
			params: { $$strict: "remove", hash: HASH },
			async handler(this: AuthThis, ctx: Ctx<{ hash: string }>): Promise<LoginResponse> {
				const { sequelize } = appOf(this.broker);
				const { link, user } = await this.linkUser(ctx.params.hash, "confirm", (u, l) => u.email === l.email);
				await sequelize.transaction(t =>
					this.redeemLink(link, user, t, async () => {
						if (!user.emailConfirmedAt) await user.update({ emailConfirmedAt: new Date(this.nowMs()) }, { transaction: t });
					}),
				);
				return this.signUpSession(ctx, user);
			},
		},

		resendStatus: {
			rest: "POST /auth/email/confirm/resend/status",
			auth: "public",
			params: { $$strict: "remove", email: EMAIL },
			async handler(this: AuthThis, ctx: Ctx<{ email: string }>) {
				// Counts requests for the address whether or not it has an account, so it discloses nothing.
				const now = this.nowMs();
				const cap = EMAIL_CAPS.confirm_resend;
				const state: CapState = capState(await this.eventTimes(ctx.params.email, "confirm_resend", now - cap.windowMs), now, cap);
				return { canResend: state.allowed, canRetryAt: iso(state.retryAt), remainingToday: state.remaining };
			},
		},

		resendConfirmation: {
			rest: "POST /auth/email/confirm/resend",
			auth: "public",
			recaptcha: true,
			params: { $$strict: "remove", email: EMAIL },
			async handler(this: AuthThis, ctx: Ctx<{ email: string }>): Promise<null> {
				ctx.meta.$statusCode = 204;
				await this.mailLink(ctx, ctx.params.email, { quota: "confirm_resend", wanted: user => !user.emailConfirmedAt, purpose: "confirm", template: "confirm", data: (user, hash) => ({ hash, firstName: user.firstName }) });
				return null;
			},
		},

		confirmNewEmail: {
			rest: "POST /auth/email/confirm/new",
			auth: "public",
			tracing: NO_PARAMS_IN_TRACES,
			params: { $$strict: "remove", hash: HASH },
			async handler(this: AuthThis, ctx: Ctx<{ hash: string }>): Promise<null> {
				const { models, sequelize } = appOf(this.broker);
				// Only the latest requested address can be confirmed.
				const { link, user } = await this.linkUser(ctx.params.hash, "confirmNew", (u, l) => Boolean(l.email) && u.pendingEmail === l.email);
				const newEmail = link.email!;
				const oldEmail = user.email;
				const taken = await models.User.findOne({ where: { email: newEmail, id: { [Op.ne]: user.id } } });
				if (taken) throw emailInUse();
				try {
					await sequelize.transaction(t => this.redeemLink(link, user, t, () => user.update({ email: newEmail, pendingEmail: null, emailConfirmedAt: new Date(this.nowMs()) }, { transaction: t })));
				} catch (err) {
					if (err instanceof UniqueConstraintError) throw emailInUse();
					throw err;
				}
				// The previous address learns of the change (a stolen session could otherwise move the account silently).
				if (oldEmail && oldEmail !== newEmail) await this.sendMail(ctx, oldEmail, "emailChanged", { newEmail });
				ctx.meta.$statusCode = 204;
				return null;
			},
		},

		forgotPassword: {
			rest: "POST /auth/forgot/password",
			auth: "public",
			recaptcha: true,
			params: { $$strict: "remove", email: EMAIL },
			async handler(this: AuthThis, ctx: Ctx<{ email: string }>): Promise<null> {
				ctx.meta.$statusCode = 204;
				await this.mailLink(ctx, ctx.params.email, { quota: "reset", cooldownMs: RESET_COOLDOWN_MS, wanted: () => true, purpose: "reset", template: "resetPassword", data: (_user, hash) => ({ hash }) });
				return null;
			},
		},

		resetPassword: {
			rest: "POST /auth/reset/password",
			auth: "public",
			tracing: NO_PARAMS_IN_TRACES,
			params: { $$strict: "remove", hash: HASH, password: PASSWORD },
			async handler(this: AuthThis, ctx: Ctx<{ hash: string; password: string }>): Promise<null> {
				const { models, sequelize } = appOf(this.broker);
				const { link, user } = await this.linkUser(ctx.params.hash, "reset", (u, l) => u.email === l.email);
				const passwordHash = await this.hashPassword(ctx.params.password);
				const now = new Date(this.nowMs());
				const ended = await sequelize.transaction(async t => {
					// The link proves the mailbox, so it also confirms an unconfirmed address.
					await this.redeemLink(link, user, t, () => user.update({ passwordHash, passwordChangedAt: now, emailConfirmedAt: user.emailConfirmedAt ?? now }, { transaction: t }));
					return this.closeSessions({ userId: user.id }, "password_reset", t);
				});
				await this.announceEnded(ctx, ended);
				if (user.email) await models.EmailEvent.destroy({ where: { email: user.email, kind: "login_failure" } });
				ctx.meta.$statusCode = 204;
				return null;
			},
		},

		// ---------- one-time codes ----------
		registerSendCode: {
			rest: "POST /auth/email/register/send-code",
			auth: "public",
			params: { $$strict: "remove", email: EMAIL },
			async handler(this: AuthThis, ctx: Ctx<{ email: string }>): Promise<null> {
				const { email } = ctx.params;
				const quota = await this.reserveQuota(email, "register_code");
				if (!quota.allowed) throw tooManyEmails(quota.retryAt);
				const user = await this.findUserByEmail(email);
				if (user?.emailConfirmedAt) {
					// Same answer as for a new address; the owner is told instead of getting a code.
					await this.sendMail(ctx, email, "accountExists", {});
					return null;
				}
				const code = await this.issueCode(email, "register");
				await this.sendMail(ctx, email, "registerCode", { code });
				return null;
			},
		},

		registerVerifyCode: {
			rest: "POST /auth/email/register/verify-code",
			auth: "public",
			tracing: NO_PARAMS_IN_TRACES,
			params: {
				$$strict: "remove",
				email: EMAIL,
				code: CODE,
				password: { ...PASSWORD, optional: true },
				firstName: { ...NAME, optional: true },
				lastName: { ...NAME, optional: true },
			},
			async handler(
				this: AuthThis,
				ctx: Ctx<{ email: string; code: string; password?: string; firstName?: string; lastName?: string }>,
			): Promise<LoginResponse> {
				const { email, code, password, firstName, lastName } = ctx.params;
				await this.consumeCode(email, "register", code);
				const passwordHash = password ? await this.hashPassword(password) : null;
				const now = new Date(this.nowMs());
				let user = await this.findUserByEmail(email);
				let created = false;
				if (!user) ({ user, created } = await this.createConfirmed({ email, passwordHash, firstName: firstName ?? null, lastName: lastName ?? null, provider: "email", emailConfirmedAt: now }));
				// An unconfirmed registration had a password nobody proved: replace it (or clear it).
				if (!created && !user.emailConfirmedAt) await this.confirmSignUp(user, { passwordHash, firstName: firstName ?? user.firstName, lastName: lastName ?? user.lastName, emailConfirmedAt: now });
				return this.signUpSession(ctx, user);
			},
		},

		loginSendCode: {
			rest: "POST /auth/email/login/send-code",
			auth: "public",
			params: { $$strict: "remove", email: EMAIL },
			async handler(this: AuthThis, ctx: Ctx<{ email: string }>): Promise<null> {
				const { email } = ctx.params;
				// The quota is spent whatever the address, so the 429 does not disclose accounts either.
				const quota = await this.reserveQuota(email, "login_code");
				if (!quota.allowed) throw tooManyEmails(quota.retryAt);
				const user = await this.findUserByEmail(email);
				if (!user || !user.emailConfirmedAt || user.status !== "active") return null;
				const code = await this.issueCode(email, "login");
				await this.sendMail(ctx, email, "loginCode", { code });
				return null;
			},
		},

		loginVerifyCode: {
			rest: "POST /auth/email/login/verify-code",
			auth: "public",
			tracing: NO_PARAMS_IN_TRACES,
			params: { $$strict: "remove", email: EMAIL, code: CODE },
			async handler(this: AuthThis, ctx: Ctx<{ email: string; code: string }>): Promise<LoginResponse> {
				const { email, code } = ctx.params;
				await this.consumeCode(email, "login", code);
				const user = await this.findUserByEmail(email);
				if (!user || !user.emailConfirmedAt) throw invalidCode();
				this.assertActive(user);
				return this.startSession(user);
			},
		},

		// ---------- Google ----------
		googleLogin: {
			rest: "POST /auth/google/login",
			auth: "public",
			tracing: NO_PARAMS_IN_TRACES,
			params: { $$strict: "remove", idToken: { type: "string", min: 1, max: 8192 } },
			async handler(this: AuthThis, ctx: Ctx<{ idToken: string }>): Promise<LoginResponse> {
				if (!this.google.configured) throw badRequest("Google sign-in is not configured", { idToken: "googleNotConfigured" });
				let identity;
				try {
					identity = await this.google.verify(ctx.params.idToken);
				} catch (err) {
					if (err instanceof GoogleKeysUnavailableError) {
						this.logger.warn("Google signing keys could not be fetched");
						throw httpError(503, "Google sign-in is unavailable");
					}
					throw httpError(401, "Invalid Google token", { errors: { idToken: "invalidIdToken" } });
				}
				const { email } = identity;
				if (email.length > 254 || !/^[^\s@]+@[^\s@]+$/.test(email)) throw httpError(401, "Invalid Google token", { errors: { idToken: "invalidIdToken" } });
				const now = new Date(this.nowMs());
				let user = await this.findUserByEmail(email);
				if (!user) ({ user } = await this.createConfirmed({ email, passwordHash: null, firstName: identity.firstName, lastName: identity.lastName, provider: "google", emailConfirmedAt: now }));
				// Google proves the mailbox; a password set by an unconfirmed sign-up is not trusted.
				else if (!user.emailConfirmedAt) await this.confirmSignUp(user, { emailConfirmedAt: now, passwordHash: null });
				return this.signUpSession(ctx, user);
			},
		},

		// ---------- sessions ----------
		refresh: {
			rest: "POST /auth/refresh",
			auth: "refresh",
			tracing: NO_PARAMS_IN_TRACES,
			params: { $$strict: "remove" },
			async handler(this: AuthThis, ctx: Ctx): Promise<RefreshResponse> {
				const { models, config } = appOf(this.broker);
				const claims = ctx.meta.refresh;
				if (!claims || typeof claims.nonce !== "string" || !claims.nonce) throw unauthorized("Invalid token");
				const session = await models.Session.findByPk(claims.sessionId);
				const now = this.nowMs();
				if (!session || Number(session.userId) !== Number(claims.userId)) throw unauthorized("Invalid token");
				if (session.endedAt || new Date(session.expiresAt).getTime() <= now) throw unauthorized("Session ended");
				const presented = nonceDigest(claims.nonce, config.secrets.master);
				const reuse = async () => {
					// A refresh token that was already rotated away: whoever holds it, the session is compromised.
					await this.announceEnded(ctx, await this.closeSessions({ id: session.id }, "refresh_reuse"));
					return unauthorized("Invalid token");
				};
				if (!safeEqual(presented, session.refreshNonce)) throw await reuse();
				const user = await models.User.findByPk(session.userId);
				if (!user || user.status !== "active") {
					await this.announceEnded(ctx, await this.closeSessions({ id: session.id }, "user_inactive"));
					throw unauthorized("Session ended");
				}
				const nonce = generateNonce();
				const [rotated] = await models.Session.update(
					{ refreshNonce: nonceDigest(nonce, config.secrets.master), expiresAt: new Date(now + config.refreshTtlSeconds * 1000) },
					{ where: { id: session.id, refreshNonce: presented, endedAt: null } },
				);
				// Lost a race with another refresh of the same token: that is reuse too.
				if (!rotated) throw await reuse();
				const access = signAccessToken({ userId: user.id, sessionId: session.id, role: user.role }, config.secrets.jwt, config.tokenTtlSeconds, now);
				const refresh = signRefreshToken({ userId: user.id, sessionId: session.id, nonce }, config.secrets.refresh, config.refreshTtlSeconds, now);
				return { token: access.token, refreshToken: refresh.token, tokenExpires: access.expiresAtMs };
			},
		},

		logout: {
			rest: "POST /auth/logout",
			auth: "jwt",
			params: { $$strict: "remove" },
			async handler(this: AuthThis, ctx: Ctx): Promise<null> {
				const sessionId = ctx.meta.user!.sessionId;
				await this.announceEnded(ctx, await this.closeSessions({ id: sessionId }, "logout"));
				ctx.meta.$statusCode = 204;
				return null;
			},
		},

		/** For the gateway (cached 30 s per node, cleared by `auth.sessions.ended`). */
		sessionActive: {
			visibility: "public",
			auth: "public",
			params: { sessionId: { type: "string", min: 1, max: 64 } },
			async handler(this: AuthThis, ctx: Ctx<{ sessionId: string }>): Promise<boolean> {
				const { models } = appOf(this.broker);
				const session = await models.Session.findByPk(ctx.params.sessionId, { attributes: ["id", "userId", "endedAt", "expiresAt"] });
				if (!session || session.endedAt || new Date(session.expiresAt).getTime() <= this.nowMs()) return false;
				const user = await models.User.findByPk(session.userId, { attributes: ["id", "status"] });
				return !!user && user.status === "active";
			},
		},

		/** For other services (e.g. an admin deleting or disabling a user): ends every session of a user. */
		endUserSessions: {
			visibility: "public",
			auth: "public",
			params: { userId: { type: "number", integer: true, positive: true }, reason: { type: "string", optional: true, max: 30 } },
			async handler(this: AuthThis, ctx: Ctx<{ userId: number; reason?: string }>): Promise<{ ended: number }> {
				const ids = await this.closeSessions({ userId: ctx.params.userId }, ctx.params.reason || "admin");
				await this.announceEnded(ctx, ids);
				return { ended: ids.length };
			},
		},

		// ---------- the account ----------
		me: {
			rest: "GET /auth/me",
			auth: "jwt",
			params: { $$strict: "remove" },
			async handler(this: AuthThis, ctx: Ctx): Promise<UserView> {
				return toUserView(await this.currentUser(ctx));
			},
		},

		updateMe: {
			rest: "PATCH /auth/me",
			auth: "jwt",
			tracing: NO_PARAMS_IN_TRACES,
			params: {
				$$strict: "remove",
				firstName: { ...NAME, optional: true },
				lastName: { ...NAME, optional: true },
				email: { ...EMAIL, optional: true },
				password: { ...PASSWORD, optional: true },
				oldPassword: { type: "string", optional: true, min: 1, max: 1024 },
			},
			async handler(
				this: AuthThis,
				ctx: Ctx<{ firstName?: string; lastName?: string; email?: string; password?: string; oldPassword?: string }>,
			): Promise<UserView> {
				const { models, sequelize } = appOf(this.broker);
				const user = await this.currentUser(ctx);
				const { firstName, lastName, email, password, oldPassword } = ctx.params;
				const now = this.nowMs();
				let newPasswordHash: string | null = null;
				if (password !== undefined) {
					if (oldPassword === undefined) throw badRequest("Old password is required", { oldPassword: "required" });
					// Guessing the old password with a stolen token counts towards the sign-in lockout.
					const lockEmail = user.email;
					if (lockEmail) {
						const lock = loginLockState(await this.eventTimes(lockEmail, "login_failure", now - LOGIN_FAILURE_LOOKBACK_MS), now);
						if (lock.locked) throw tooManyRequests("Too many login attempts", { email: "tooManyLoginAttempts" }, { canRetryAt: iso(lock.until) });
					}
					if (!(await this.checkPassword(oldPassword, user.passwordHash))) {
						if (lockEmail) await models.EmailEvent.create({ email: lockEmail, kind: "login_failure", createdAt: new Date(now) });
						throw badRequest("Incorrect old password", { oldPassword: "incorrectOldPassword" });
					}
					newPasswordHash = await this.hashPassword(password);
				}
				let newEmail: string | null = null;
				if (email !== undefined && email !== user.email) {
					const taken = await models.User.findOne({ where: { email, id: { [Op.ne]: user.id } } });
					if (taken) throw emailInUse();
					newEmail = email;
				}
				let confirmHash: string | null = null;
				const ended = await sequelize.transaction(async t => {
					const changes: Partial<Pick<User, "firstName" | "lastName" | "pendingEmail" | "passwordHash" | "passwordChangedAt">> = {};
					if (firstName !== undefined) changes.firstName = firstName;
					if (lastName !== undefined) changes.lastName = lastName;
					if (email !== undefined) changes.pendingEmail = newEmail; // the current address again cancels a pending change
					if (newPasswordHash) {
						changes.passwordHash = newPasswordHash;
						changes.passwordChangedAt = new Date(now);
					}
					if (Object.keys(changes).length) await user.update(changes, { transaction: t });
					if (email !== undefined) await this.revokeLinks(user.id, ["confirmNew"], t);
					if (newEmail) confirmHash = await this.issueLink(user.id, "confirmNew", newEmail, t);
					if (!newPasswordHash) return [];
					// Older reset links die with the old password; other devices must sign in again.
					await this.revokeLinks(user.id, ["reset"], t);
					return this.closeSessions({ userId: user.id, id: { [Op.ne]: ctx.meta.user!.sessionId } }, "password_changed", t);
				});
				await this.announceEnded(ctx, ended);
				if (newEmail && confirmHash) await this.sendMail(ctx, newEmail, "confirmNew", { hash: confirmHash });
				return toUserView(user);
			},
		},

		deleteMe: {
			rest: "DELETE /auth/me",
			auth: "jwt",
			params: { $$strict: "remove" },
			async handler(this: AuthThis, ctx: Ctx): Promise<null> {
				const { sequelize, models } = appOf(this.broker);
				const user = await this.currentUser(ctx);
				const { ended, revokedKeys } = await sequelize.transaction(async t => {
					// Before the user row changes (lock order, lib/keys/ownerless.ts).
					const revokedKeys = await revokeKeysOfOrganizationsLeftWithoutOwner(models, user.id, new Date(this.nowMs()), t);
					// The address is released (unique index) so it can sign up again; the row stays for audit.
					await user.update({ email: null, pendingEmail: null }, { transaction: t });
					await user.destroy({ transaction: t });
					await this.revokeLinks(user.id, ["confirm", "confirmNew", "reset"], t);
					return { ended: await this.closeSessions({ userId: user.id }, "account_deleted", t), revokedKeys };
				});
				await this.announceEnded(ctx, ended);
				await announceKeysChanged(ctx, this.broker, revokedKeys, this.logger);
				ctx.meta.$statusCode = 204;
				return null;
			},
		},
	},

	methods: {
		/**
		 * The configured admin gets a sandbox and a live organization like any user. In the
		 * background: on a split cluster the organizations service may be on a node still starting;
		 * createDefaults is idempotent, so running it on every start is safe.
		 */
		ensureAdminOrganizations(this: AuthThis, userId: number) {
			this.broker
				.waitForServices("organizations", 60_000)
				.then(() => this.broker.call("organizations.createDefaults", { userId, name: "Admin" }))
				.catch(err => this.logger.warn(`Admin organizations not created: ${err?.name || "Error"}`));
		},
		nowMs(this: AuthThis) {
			return appOf(this.broker).clock.now().getTime();
		},

		hashPassword(this: AuthThis, password: string) {
			return bcrypt.hash(password, appOf(this.broker).config.bcryptRounds);
		},

		async checkPassword(this: AuthThis, password: string, hash: string | null | undefined) {
			if (!hash) {
				await bcrypt.compare(password, this.dummyHash);
				return false;
			}
			return bcrypt.compare(password, hash);
		},

		findUserByEmail(this: AuthThis, email: string) {
			return appOf(this.broker).models.User.findOne({ where: { email } });
		},

		async currentUser(this: AuthThis, ctx: Ctx<any>) {
			const id = ctx.meta.user?.id;
			const user = id ? await appOf(this.broker).models.User.findByPk(id) : null;
			if (!user) throw unauthorized("Session ended");
			return user;
		},

		assertActive(user: User) {
			if (user.status !== "active") throw unauthorized("Account disabled");
		},

		async startSession(this: AuthThis, user: User): Promise<LoginResponse> {
			const { models, config } = appOf(this.broker);
			const now = this.nowMs();
			const sessionId = uuid();
			const nonce = generateNonce();
			await models.Session.create({
				id: sessionId,
				userId: user.id,
				refreshNonce: nonceDigest(nonce, config.secrets.master),
				expiresAt: new Date(now + config.refreshTtlSeconds * 1000),
			});
			const access = signAccessToken({ userId: user.id, sessionId, role: user.role }, config.secrets.jwt, config.tokenTtlSeconds, now);
			const refresh = signRefreshToken({ userId: user.id, sessionId, nonce }, config.secrets.refresh, config.refreshTtlSeconds, now);
			return { token: access.token, refreshToken: refresh.token, tokenExpires: access.expiresAtMs, user: toUserView(user) };
		},

		async closeSessions(this: AuthThis, where: WhereOptions<Session>, reason: string, t?: Transaction) {
			const { models } = appOf(this.broker);
			const rows = await models.Session.findAll({ where: { ...(where as object), endedAt: null }, attributes: ["id"], transaction: t });
			if (rows.length === 0) return [];
			const ids = rows.map(r => r.id);
			await models.Session.update({ endedAt: new Date(this.nowMs()), endReason: reason }, { where: { id: ids, endedAt: null }, transaction: t });
			return ids;
		},

		async announceEnded(this: AuthThis, ctx: Ctx<any>, ids: string[]) {
			if (ids.length) await ctx.broadcast("auth.sessions.ended", { sessionIds: ids });
		},

		async sendMail(this: AuthThis, ctx: Ctx<any>, to: string, template: MailTemplate, data: Record<string, unknown>) {
			try {
				await ctx.call("mail.send", { to, template, data, lang: ctx.meta.lang || "en" });
			} catch (err: any) {
				// The request still answers as the spec says; never log the data (codes, links).
				this.logger.warn(`Mail "${template}" could not be sent: ${err?.name || "Error"} ${err?.code ?? ""}`.trim());
			}
		},

		async eventTimes(this: AuthThis, email: string, kind: EmailEventKind, sinceMs: number, beforeId?: number) {
			const { models } = appOf(this.broker);
			const where: Record<string, unknown> = { email, kind, createdAt: { [Op.gt]: new Date(sinceMs) } };
			if (beforeId !== undefined) where.id = { [Op.lt]: beforeId };
			const rows = await models.EmailEvent.findAll({ where, attributes: ["createdAt"] });
			return rows.map(r => new Date(r.createdAt).getTime());
		},

		/**
		 * Spends one unit of an address's daily quota (and respects a cooldown). The event is
		 * written first and only earlier events are counted, so parallel requests cannot overrun
		 * the cap; a refused request removes its event again.
		 */
		async reserveQuota(this: AuthThis, email: string, kind: CappedKind, cooldownMs?: number) {
			const { models } = appOf(this.broker);
			const now = this.nowMs();
			const cap = EMAIL_CAPS[kind];
			const event = await models.EmailEvent.create({ email, kind, createdAt: new Date(now) });
			const since = now - Math.max(cap.windowMs, cooldownMs ?? 0, DAY_MS);
			const earlier = await this.eventTimes(email, kind, since, event.id);
			let state: { allowed: boolean; retryAt: number | null } = capState(earlier, now, cap);
			if (cooldownMs) state = combine(state, cooldownState(earlier, now, cooldownMs));
			if (!state.allowed) await event.destroy();
			return state;
		},

		async issueLink(this: AuthThis, userId: number, purpose: AuthHashPurpose, email: string, t?: Transaction) {
			const { models, config } = appOf(this.broker);
			const hash = generateLinkHash();
			await models.AuthHash.create(
				{ userId, purpose, email, hashDigest: linkHashDigest(hash, config.secrets.master), expiresAt: new Date(this.nowMs() + LINK_TTL_MS[purpose]) },
				{ transaction: t },
			);
			return hash;
		},

		async findLink(this: AuthThis, hash: string, purpose: AuthHashPurpose) {
			const { models, config } = appOf(this.broker);
			const row = await models.AuthHash.findOne({ where: { hashDigest: linkHashDigest(hash, config.secrets.master) } });
			if (!row || row.purpose !== purpose || row.usedAt || new Date(row.expiresAt).getTime() <= this.nowMs()) throw invalidHash();
			return row;
		},

		async consumeLink(this: AuthThis, row: AuthHash, t?: Transaction) {
			const { models } = appOf(this.broker);
			// Conditional update: of two concurrent uses, exactly one wins.
			const [n] = await models.AuthHash.update({ usedAt: new Date(this.nowMs()) }, { where: { id: row.id, usedAt: null }, transaction: t });
			if (n !== 1) throw invalidHash();
		},

		async revokeLinks(this: AuthThis, userId: number, purposes: AuthHashPurpose[], t?: Transaction) {
			const { models } = appOf(this.broker);
			await models.AuthHash.update({ usedAt: new Date(this.nowMs()) }, { where: { userId, purpose: purposes, usedAt: null }, transaction: t });
		},

		/** A user whose mailbox is proven (code, Google); when a concurrent sign-up of the address won, that user (`created` false). */
		async createConfirmed(this: AuthThis, values: UserCreation) {
			const { models } = appOf(this.broker);
			try {
				return { user: await models.User.create(values), created: true };
			} catch (err) {
				if (!(err instanceof UniqueConstraintError)) throw err;
				const user = await this.findUserByEmail(values.email);
				if (!user) throw err;
				return { user, created: false };
			}
		},

		/** An unconfirmed sign-up whose mailbox is now proven: `values` set and its confirmation links revoked, in one transaction. */
		async confirmSignUp(this: AuthThis, user: User, values: Partial<UserCreation>) {
			const { sequelize } = appOf(this.broker);
			await sequelize.transaction(async t => {
				await user.update(values, { transaction: t });
				await this.revokeLinks(user.id, ["confirm"], t);
			});
		},

		/**
		 * A session for a user whose mailbox was just proven (confirmation link, code, Google):
		 * refused when inactive; its organizations made sure of first (idempotent: repairs a
		 * sign-up whose first call failed).
		 */
		async signUpSession(this: AuthThis, ctx: Ctx<any>, user: User) {
			this.assertActive(user);
			await this.ensureOrganizations(ctx, user);
			return this.startSession(user);
		},

		/** The link `hash` of `purpose` and its user: invalidHash unless it is usable and `valid` for that user. */
		async linkUser(this: AuthThis, hash: string, purpose: AuthHashPurpose, valid: (user: User, link: AuthHash) => boolean) {
			const { models } = appOf(this.broker);
			const link = await this.findLink(hash, purpose);
			const user = await models.User.findByPk(link.userId);
			if (!user || !valid(user, link)) throw invalidHash();
			return { link, user };
		},

		/** In `t`: the link used up (once only), the user changed, and the user's other links of that purpose revoked. */
		async redeemLink(this: AuthThis, link: AuthHash, user: User, t: Transaction, change: () => Promise<unknown>) {
			await this.consumeLink(link, t);
			await change();
			await this.revokeLinks(user.id, [link.purpose], t);
		},

		/**
		 * Mails a new link to the address's user when it has one `wanted`, within the address's
		 * quota; the caller answers the same (204) in every case, so nothing about accounts shows.
		 */
		async mailLink(this: AuthThis, ctx: Ctx<any>, email: string, p: MailLink) {
			const quota = await this.reserveQuota(email, p.quota, p.cooldownMs);
			if (!quota.allowed) return;
			const user = await this.findUserByEmail(email);
			if (!user || !p.wanted(user)) return;
			const hash = await this.issueLink(user.id, p.purpose, email);
			await this.sendMail(ctx, email, p.template, p.data(user, hash));
		},

		async issueCode(this: AuthThis, email: string, purpose: AuthCodePurpose) {
			const { models, config } = appOf(this.broker);
			const now = this.nowMs();
			// Only the newest code works: each one gets its own 5 tries, never more in parallel.
			await models.AuthCode.update({ usedAt: new Date(now) }, { where: { email, purpose, usedAt: null } });
			const code = generateCode();
			await models.AuthCode.create({ email, purpose, codeDigest: codeDigest(purpose, email, code, config.secrets.master), expiresAt: new Date(now + CODE_TTL_MS) });
			return code;
		},

		async consumeCode(this: AuthThis, email: string, purpose: AuthCodePurpose, code: string) {
			const { models, config } = appOf(this.broker);
			const now = new Date(this.nowMs());
			const row = await models.AuthCode.findOne({
				where: { email, purpose, usedAt: null, expiresAt: { [Op.gt]: now }, attempts: { [Op.lt]: MAX_CODE_ATTEMPTS } },
				order: [["id", "DESC"]],
			});
			if (!row) throw invalidCode();
			// Claim a try first (atomically), so parallel guesses cannot exceed the limit.
			const [claimed] = await models.AuthCode.update(
				{ attempts: literal("attempts + 1") as unknown as number },
				{ where: { id: row.id, usedAt: null, attempts: { [Op.lt]: MAX_CODE_ATTEMPTS } } },
			);
			if (claimed !== 1) throw invalidCode();
			if (!safeEqual(row.codeDigest, codeDigest(purpose, email, code, config.secrets.master))) throw invalidCode();
			const [used] = await models.AuthCode.update({ usedAt: now }, { where: { id: row.id, usedAt: null } });
			if (used !== 1) throw invalidCode();
		},

		/** Rows no rule reads any more: events past every window, long-expired codes and links. Idempotent on every node. */
		async prune(this: AuthThis) {
			const { models } = appOf(this.broker);
			const now = this.nowMs();
			await models.EmailEvent.destroy({ where: { createdAt: { [Op.lt]: new Date(now - 2 * DAY_MS) } } });
			await models.AuthCode.destroy({ where: { expiresAt: { [Op.lt]: new Date(now - DAY_MS) } } });
			await models.AuthHash.destroy({ where: { expiresAt: { [Op.lt]: new Date(now - 30 * DAY_MS) } } });
		},

		async ensureOrganizations(this: AuthThis, ctx: Ctx<any>, user: User) {
			try {
				await ctx.call("organizations.createDefaults", { userId: user.id, name: displayName(user) });
			} catch (err: any) {
				// The account stands; createDefaults is idempotent and is retried at email confirmation.
				const line = `organizations.createDefaults failed for user ${user.id}: ${err?.name || "Error"}: ${err?.message || ""}`;
				if (err?.name === "ServiceNotFoundError") this.logger.warn(line);
				else this.logger.error(line);
			}
		},
	},

	created(this: AuthThis) {
		this.pruneTimer = null;
		const { config } = appOf(this.broker);
		this.google = new GoogleVerifier(config.google, () => this.nowMs());
	},

	async started(this: AuthThis) {
		const { config, models } = appOf(this.broker);
		// Compared against when an address has no password, so a miss costs a real bcrypt round.
		this.dummyHash = await bcrypt.hash(randomToken(24), config.bcryptRounds);
		this.pruneTimer = setInterval(() => {
			this.prune().catch(err => this.logger.warn(`Pruning auth rows failed: ${err?.name || "Error"}`));
		}, PRUNE_EVERY_MS);
		this.pruneTimer.unref();
		const admin = config.admin;
		if (!admin) return;
		const existing = await models.User.findOne({ where: { email: admin.email } });
		if (existing) return this.ensureAdminOrganizations(existing.id);
		if (admin.password.length < 6) this.logger.warn("ADMIN_PASSWORD is shorter than 6 characters; choose a stronger one");
		try {
			const created = await models.User.create({
				email: admin.email,
				passwordHash: await bcrypt.hash(admin.password, config.bcryptRounds),
				firstName: "Admin",
				lastName: null,
				role: "admin",
				provider: "email",
				emailConfirmedAt: new Date(this.nowMs()),
			});
			this.logger.info("Admin user created from configuration");
			this.ensureAdminOrganizations(created.id);
		} catch (err) {
			// Another node created it at the same moment.
			if (!(err instanceof UniqueConstraintError)) throw err;
		}
	},

	async stopped(this: AuthThis) {
		if (this.pruneTimer) clearInterval(this.pruneTimer);
		this.pruneTimer = null;
	},
};

export default AuthService;
