/** Shared steps for the auth suites: sign a user up through the real endpoints. */
import crypto from "node:crypto";
import type { TestNode } from "../helpers/harness";

export const PASSWORD = "correct-horse-1";

export function uniqueEmail(tag = "user"): string {
	return `${tag}-${crypto.randomBytes(4).toString("hex")}@example.com`;
}

export interface SignedUp {
	email: string;
	password: string;
	token: string;
	refreshToken: string;
	tokenExpires: number;
	user: { id: number; email: string; [k: string]: unknown };
}

/** register -> confirmation mail -> confirm; returns the login response of the confirmation. */
export async function signUp(node: TestNode, opts: { email?: string; password?: string; firstName?: string; lastName?: string } = {}): Promise<SignedUp> {
	const email = opts.email || uniqueEmail();
	const password = opts.password || PASSWORD;
	const reg = await node.http("POST", "/auth/email/register", {
		body: { email, password, firstName: opts.firstName || "Ada", lastName: opts.lastName || "Lovelace" },
	});
	if (reg.status !== 204) throw new Error(`register: ${reg.status} ${reg.text}`);
	const mail = node.lastMail(email);
	const res = await node.http("POST", "/auth/email/confirm", { body: { hash: mail.data.hash } });
	if (res.status !== 200) throw new Error(`confirm: ${res.status} ${res.text}`);
	return { email, password, ...res.body };
}

export async function login(node: TestNode, email: string, password: string) {
	return node.http("POST", "/auth/email/login", { body: { email, password } });
}

/** The gateway builds its routes ~0.5 s after services start; wait until the auth routes answer. */
export async function authRoutesReady(node: TestNode): Promise<void> {
	for (let i = 0; i < 100; i++) {
		const res = await node.http("POST", "/auth/email/confirm/resend/status", { body: {} });
		if (res.status !== 404) return;
		await new Promise(r => setTimeout(r, 50));
	}
	throw new Error("auth routes never appeared");
}
