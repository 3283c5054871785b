/**
 * A DELETE with a JSON body (`{}`) is answered as the same DELETE without one, on every DELETE
 * route: same status, same body, same effect (docs/gateway.md "The body and the parameters").
 */
import { TestNode } from "../helpers/harness";
import { createUserWithToken } from "../helpers/users";
import { createMerchant, IDS, startPaymentsNode } from "../e2e/payments.helpers";

const EMPTY_JSON = [
	{ body: {} },
	{ rawBody: "{}", headers: { "Content-Type": "application/json; charset=utf-8" } },
];

describe("DELETE with a JSON body", () => {
	let node: TestNode;

	beforeAll(async () => {
		node = await startPaymentsNode({ services: ["api", "auth", "mail", "organizations", "keys", "users", "networks", "pricing", "intents", "links", "transactions"] });
	});
	afterAll(async () => {
		await node?.stop();
	});

	it.each(EMPTY_JSON)("DELETE /payments/links/:id with %j: as without a body", async body => {
		const alice = await createMerchant(node);
		const bob = await createMerchant(node);
		const link = async () => {
			const res = await node.http("POST", "/payments/links", { token: alice.token, body: { title: "Delete me", amount: "1", tokenId: IDS.sepoliaEth, networkId: IDS.sepolia } });
			expect(res.status).toBe(201);
			return res.body as { id: string; slug: string };
		};
		const plain = await link();
		const withBody = await link();
		const [a, b] = [await node.http("DELETE", `/payments/links/${plain.id}`, { token: alice.token }), await node.http("DELETE", `/payments/links/${withBody.id}`, { token: alice.token, ...body })];
		expect([a.status, a.text]).toEqual([204, ""]);
		expect([b.status, b.text]).toEqual([204, ""]);
		for (const l of [plain, withBody]) {
			expect((await node.app.models.PaymentLink.findByPk(l.id, { paranoid: false }))!.deletedAt).not.toBeNull();
			expect((await node.http("GET", `/payments/links/${l.slug}`)).status).toBe(404);
		}
		// Not found (deleted, another organization's, unknown) and unauthenticated: the same answers too.
		const other = await link();
		for (const [path, token] of [
			[`/payments/links/${plain.id}`, alice.token],
			[`/payments/links/${other.id}`, bob.token],
			["/payments/links/not-a-uuid", alice.token],
			[`/payments/links/${other.id}`, undefined],
		] as Array<[string, string | undefined]>) {
			const without = await node.http("DELETE", path, { token });
			const withJson = await node.http("DELETE", path, { token, ...body });
			expect([path, withJson.status, withJson.body]).toEqual([path, without.status, without.body]);
			expect(without.status).toBe(token ? 404 : 401);
		}
		expect((await node.app.models.PaymentLink.findByPk(other.id))!.deletedAt).toBeNull();
	});

	it.each(EMPTY_JSON)("DELETE /users/:id and DELETE /auth/me with %j: as without a body", async body => {
		const admin = await createUserWithToken(node, { role: "admin" });
		const byAdmin = await createUserWithToken(node);
		const res = await node.http("DELETE", `/users/${byAdmin.user.id}`, { token: admin.token, ...body });
		expect([res.status, res.text]).toEqual([204, ""]);
		expect(await node.app.models.User.findByPk(byAdmin.user.id)).toBeNull();
		const gone = [await node.http("DELETE", `/users/${byAdmin.user.id}`, { token: admin.token }), await node.http("DELETE", `/users/${byAdmin.user.id}`, { token: admin.token, ...body })];
		expect(gone[1].body).toEqual(gone[0].body);
		expect(gone.map(r => r.status)).toEqual([404, 404]);

		const self = await createUserWithToken(node);
		const me = await node.http("DELETE", "/auth/me", { token: self.token, ...body });
		expect([me.status, me.text]).toEqual([204, ""]);
		expect(await node.app.models.User.findByPk(self.user.id)).toBeNull();
	});
});
