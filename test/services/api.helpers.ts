/**
 * Helpers for the gateway suites: test-only services (and a reliable wait for the gateway to
 * publish their routes), stand-ins for the `auth` and `keys` services' gateway contract, token
 * signing as the auth service does it, and raw HTTP for requests fetch cannot send.
 */
import net from "node:net";
import type { ServiceSchema } from "moleculer";
import jwt from "jsonwebtoken";
import type { TestNode } from "../helpers/harness";
import type { AuthApiKey } from "../../lib/meta";

/**
 * Creates a service on the node and resolves once the gateway has regenerated its routes with it.
 * moleculer-web regenerates autoAliases (debounced) on `$services.changed` and then broadcasts
 * `$api.aliases.regenerated`; the new service itself listens for that broadcast, so the one it
 * receives was necessarily computed after it had registered.
 */
export async function addService(node: TestNode, schema: ServiceSchema, timeoutMs = 10_000): Promise<void> {
	let timer: NodeJS.Timeout | undefined;
	const regenerated = new Promise<void>((resolve, reject) => {
		timer = setTimeout(() => reject(new Error(`gateway did not regenerate routes for ${schema.name}`)), timeoutMs);
		const events = { ...(schema.events || {}), "$api.aliases.regenerated": () => resolve() };
		node.broker.createService({ ...schema, events } as ServiceSchema);
	});
	try {
		await regenerated;
	} finally {
		clearTimeout(timer);
	}
}

export interface AuthStub {
	active: Set<string>;
	calls: number;
	schema: ServiceSchema;
}

/** The gateway's view of the auth service: `auth.sessionActive({ sessionId })`. */
export function authStub(): AuthStub {
	const stub: AuthStub = {
		active: new Set(),
		calls: 0,
		schema: {
			name: "auth",
			actions: {
				sessionActive: {
					visibility: "public",
					params: { sessionId: { type: "string", min: 1, max: 64 } },
					handler(ctx: { params: { sessionId: string } }) {
						stub.calls++;
						return stub.active.has(ctx.params.sessionId);
					},
				},
			},
		} as unknown as ServiceSchema,
	};
	return stub;
}

export interface KeysStub {
	keys: Map<string, AuthApiKey>;
	calls: number;
	/** When set, a look-up reads the table, then waits for this before answering (to stage races). */
	gate: Promise<void> | null;
	schema: ServiceSchema;
}

/** The gateway's view of the keys service: `keys.authenticate({ key, secret })` -> principal or null. */
export function keysStub(): KeysStub {
	const stub: KeysStub = {
		keys: new Map(),
		calls: 0,
		gate: null,
		schema: {
			name: "keys",
			actions: {
				authenticate: {
					visibility: "public",
					params: { key: { type: "string", max: 256 }, secret: { type: "string", max: 256 } },
					async handler(ctx: { params: { key: string; secret: string } }) {
						stub.calls++;
						const found = stub.keys.get(`${ctx.params.key}:${ctx.params.secret}`) || null;
						if (stub.gate) await stub.gate;
						return found;
					},
				},
			},
		} as unknown as ServiceSchema,
	};
	return stub;
}

export interface TokenInput {
	userId?: number | string;
	sessionId?: string;
	role?: string;
	typ?: string;
	/** Seconds from the node's clock; negative for an expired token. */
	expiresIn?: number;
	secret?: string;
	algorithm?: jwt.Algorithm;
	extra?: Record<string, unknown>;
}

/** An access token as the auth service signs it (HS256, { sub, sid, role, typ }), timed by the node's clock. */
export function signAccess(node: TestNode, input: TokenInput = {}): string {
	const iat = Math.floor(node.clock.now().getTime() / 1000);
	const claims = {
		sub: String(input.userId ?? 1),
		sid: input.sessionId ?? "session-1",
		role: input.role ?? "user",
		typ: input.typ ?? "access",
		iat,
		exp: iat + (input.expiresIn ?? 3600),
		...input.extra,
	};
	return jwt.sign(claims, input.secret ?? node.config.secrets.jwt, { algorithm: input.algorithm ?? "HS256" });
}

/** A JWT with `alg: none` (no signature), which must never be accepted. */
export function unsignedToken(claims: Record<string, unknown>): string {
	const enc = (o: object) => Buffer.from(JSON.stringify(o)).toString("base64url");
	return `${enc({ alg: "none", typ: "JWT" })}.${enc(claims)}.`;
}

export function basic(key: string, secret: string): string {
	return `Basic ${Buffer.from(`${key}:${secret}`).toString("base64")}`;
}

export function portOf(node: TestNode): number {
	return Number(new URL(node.baseUrl).port);
}

/** Sends bytes as they are and returns the raw response (for requests a client library would refuse to send). */
export function rawHttp(node: TestNode, request: string, opts: { halfClose?: boolean } = {}): Promise<{ status: number; headers: string; body: string }> {
	return new Promise((resolve, reject) => {
		const socket = net.connect({ port: portOf(node), host: "127.0.0.1", allowHalfOpen: true }, () => {
			socket.write(request);
			// Stop sending (as a client that gave up mid-body) but keep reading the answer.
			if (opts.halfClose) socket.end();
		});
		let out = "";
		socket.setEncoding("utf8");
		socket.on("data", d => (out += d));
		socket.on("error", reject);
		socket.on("end", () => socket.end());
		socket.on("close", () => {
			const [head, ...rest] = out.split("\r\n\r\n");
			const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] || 0);
			resolve({ status, headers: head, body: rest.join("\r\n\r\n") });
		});
		setTimeout(() => socket.destroy(), 5000).unref();
	});
}

/** The error body every failure must have: the spec's three fields, `errors` only as a flat map of codes. */
export function expectErrorShape(body: any, status: number): void {
	expect(body).toEqual(expect.objectContaining({ statusCode: status, message: expect.any(String), error: expect.any(String) }));
	if (body.errors !== undefined) {
		expect(typeof body.errors).toBe("object");
		for (const v of Object.values(body.errors)) expect(typeof v).toBe("string");
	}
	expect(JSON.stringify(body)).not.toMatch(/\bat .+:\d+:\d+|node_modules|\.ts:\d+/);
}
