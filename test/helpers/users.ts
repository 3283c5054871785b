/**
 * Users with bearer tokens for service tests, made directly with the models (no sign-up flow):
 * a confirmed user, their default organizations (organizations.createDefaults), a session row,
 * and an access token signed exactly as the gateway verifies it.
 */
import crypto from "node:crypto";
import jwt from "jsonwebtoken";
import type { TestNode } from "./harness";
import type { User, UserRole } from "../../models/user.model";

export interface TestOrganization {
	id: string;
	name: string;
	mode: "sandbox" | "live";
}

export interface UserWithToken {
	user: User;
	token: string;
	sessionId: string;
	organizations: TestOrganization[];
	sandbox: TestOrganization;
	live: TestOrganization;
}

export async function createUserWithToken(
	node: TestNode,
	opts: { email?: string; role?: UserRole; firstName?: string; lastName?: string } = {},
): Promise<UserWithToken> {
	const { models, config } = node.app;
	const now = node.clock.now();
	const user = await models.User.create({
		email: (opts.email || `u${crypto.randomBytes(5).toString("hex")}@example.com`).toLowerCase(),
		passwordHash: null,
		firstName: opts.firstName ?? "Test",
		lastName: opts.lastName ?? "User",
		role: opts.role || "user",
		status: "active",
		provider: "email",
		emailConfirmedAt: now,
	});
	const organizations = (await node.broker.call("organizations.createDefaults", { userId: user.id, name: "Test User" })) as TestOrganization[];
	const sessionId = crypto.randomUUID();
	await models.Session.create({
		id: sessionId,
		userId: user.id,
		refreshNonce: crypto.randomBytes(32).toString("hex"),
		expiresAt: new Date(now.getTime() + 30 * 24 * 3600 * 1000),
	});
	// iat/exp from the node's clock (the gateway verifies against it), one hour as the gateway issues.
	const iat = Math.floor(now.getTime() / 1000);
	const token = jwt.sign({ sub: String(user.id), sid: sessionId, role: user.role, typ: "access", iat, exp: iat + 3600 }, config.secrets.jwt, {
		algorithm: "HS256",
	});
	return {
		user,
		token,
		sessionId,
		organizations,
		sandbox: organizations.find(o => o.mode === "sandbox")!,
		live: organizations.find(o => o.mode === "live")!,
	};
}
