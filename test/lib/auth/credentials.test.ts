/** Credential resolution (lib/auth/credentials.ts): what reaches ctx.meta, what is asked once, what invalidation clears. */
import { CredentialResolver, authorizeRequirement, type VerifierCall } from "../../../lib/auth/credentials";
import { signAccessToken } from "../../../lib/auth/tokens";
import type { AuthMeta } from "../../../lib/meta";

const secrets = { jwt: "j".repeat(32), refresh: "r".repeat(32) };
const NOW = new Date("2026-01-01T00:00:00Z");

function resolver() {
	const warnings: string[] = [];
	const r = new CredentialResolver({ secrets, now: () => NOW, logger: { warn: (...a: unknown[]) => void warnings.push(a.join(" ")) } });
	return { r, warnings };
}

function counting(answer: (action: string, params: Record<string, unknown>) => unknown) {
	const calls: string[] = [];
	const call: VerifierCall = async (action, params) => {
		calls.push(action);
		return answer(action, params);
	};
	return { call, calls };
}

const basic = (key: string, secret: string) => `Basic ${Buffer.from(`${key}:${secret}`).toString("base64")}`;

describe("CredentialResolver", () => {
	it("resolves an API key once, then from the cache until keysChanged clears it", async () => {
		const { r } = resolver();
		const { call, calls } = counting(() => ({ id: 7, organizationId: "org-1", mode: "live", extra: "dropped" }));
		const meta: AuthMeta = {} as AuthMeta;
		await r.resolve(meta, basic("pk_live_a", "sk_live_b"), "key", call);
		expect(meta.apiKey).toEqual({ id: 7, organizationId: "org-1", mode: "live" });
		await r.resolve({} as AuthMeta, basic("pk_live_a", "sk_live_b"), "key", call);
		expect(calls).toEqual(["keys.authenticate"]);
		r.keysChanged();
		await r.resolve({} as AuthMeta, basic("pk_live_a", "sk_live_b"), "key", call);
		expect(calls).toEqual(["keys.authenticate", "keys.authenticate"]);
	});

	it("refuses malformed or unknown keys with 401 Invalid API key", async () => {
		const { r } = resolver();
		const { call, calls } = counting(() => null);
		await expect(r.resolve({} as AuthMeta, "Basic !!!", "key", call)).rejects.toMatchObject({ code: 401, message: "Invalid API key" });
		expect(calls).toEqual([]);
		await expect(r.resolve({} as AuthMeta, basic("k", "s"), "key", call)).rejects.toMatchObject({ code: 401, message: "Invalid API key" });
		await expect(r.resolve({} as AuthMeta, "Digest abc", "key", call)).rejects.toMatchObject({ code: 401 });
	});

	it("checks a session once, and remembers a session that ended as ended", async () => {
		const { r } = resolver();
		const { call, calls } = counting(() => true);
		const { token } = signAccessToken({ userId: 3, sessionId: "s-1", role: "user" }, secrets.jwt, 900, NOW.getTime());
		const meta = {} as AuthMeta;
		await r.resolve(meta, `Bearer ${token}`, "jwt", call);
		expect(meta.user).toEqual({ id: 3, role: "user", sessionId: "s-1" });
		await r.resolve({} as AuthMeta, `Bearer ${token}`, "jwt", call);
		expect(calls).toEqual(["auth.sessionActive"]);
		r.sessionsEnded({ sessionIds: ["s-1"] });
		await expect(r.resolve({} as AuthMeta, `Bearer ${token}`, "jwt", call)).rejects.toMatchObject({ code: 401, message: "Session ended" });
		expect(calls).toEqual(["auth.sessionActive"]);
	});

	it("goes on anonymously on a public route when the verifier is unavailable, 503 where the credential is needed", async () => {
		const { r, warnings } = resolver();
		const gone = Object.assign(new Error("gone"), { name: "ServiceNotFoundError", code: 404 });
		const call: VerifierCall = async () => {
			throw gone;
		};
		const meta = {} as AuthMeta;
		await r.resolve(meta, basic("pk_live_a", "sk_live_b"), "public", call);
		expect(meta.apiKey).toBeUndefined();
		await expect(r.resolve({} as AuthMeta, basic("pk_live_a", "sk_live_b"), "key", call)).rejects.toMatchObject({ code: 503 });
		expect(warnings).toHaveLength(1);
	});
});

describe("authorizeRequirement", () => {
	it("lets through what the action declared and refuses the rest", () => {
		const user = { id: 1, role: "user", sessionId: "s" };
		expect(() => authorizeRequirement({ user } as AuthMeta, "jwt")).not.toThrow();
		expect(() => authorizeRequirement({ user } as AuthMeta, "admin")).toThrow("Insufficient role");
		expect(() => authorizeRequirement({ user } as AuthMeta, "key")).toThrow("This operation requires an API key");
		expect(() => authorizeRequirement({} as AuthMeta, "any")).toThrow("Unauthorized");
		expect(() => authorizeRequirement({} as AuthMeta, "public")).not.toThrow();
		expect(() => authorizeRequirement({} as AuthMeta, "bogus" as never)).toThrow("Unauthorized");
	});
});
