/**
 * Only owners and admins choose where money goes (docs/withdrawals.md "Who chooses where money
 * goes"): the withdrawal addresses of intents and links, on create and on update, need the same
 * roles as PUT /withdrawals/settings. A plain member gets 403 and nothing is stored; without the
 * field a member works as before. An API key acts for the manager who created it while they still
 * are one.
 */
import { TestNode } from "../helpers/harness";
import { createUserWithToken, UserWithToken } from "../helpers/users";
import { createMerchant, IDS, intentBody, Merchant, setPrices, startPaymentsNode } from "../e2e/payments.helpers";
import type { MembershipRole } from "../../models/organization.model";

const ADDRESS = "0x52908400098527886E0F7030069857D2E4169EE7";
const OTHER = "0x8617E340B3D01FA5F11F306F4090FD50E238070D";
const linkBody = (extra: Record<string, unknown> = {}) => ({ title: "T-shirt", amount: "25", tokenId: IDS.sepoliaUsdc, networkId: IDS.sepolia, ...extra });

describe("withdrawal addresses of intents and links need an owner or admin", () => {
	let node: TestNode;
	let alice: Merchant;
	let member: UserWithToken;
	let admin: UserWithToken;
	const statuses: number[] = [];

	async function call(method: string, path: string, opts: Parameters<TestNode["http"]>[2] = {}) {
		const res = await node.http(method, path, opts);
		statuses.push(res.status);
		return res;
	}
	/** A bearer caller acting on alice's sandbox organization. */
	const as = (u: UserWithToken) => ({ token: u.token, headers: { "x-organization-id": alice.sandbox.id } });
	async function join(role: MembershipRole): Promise<UserWithToken> {
		const u = await createUserWithToken(node);
		await node.app.models.Membership.create({ organizationId: alice.sandbox.id, userId: u.user.id, role });
		return u;
	}
	const counts = async () => ({
		intents: await node.app.models.PaymentIntent.count({ where: { organizationId: alice.sandbox.id } }),
		links: await node.app.models.PaymentLink.count({ where: { organizationId: alice.sandbox.id } }),
	});
	function expectForbidden(res: { status: number; body: any }) {
		expect(res.status).toBe(403);
		expect(res.body).toEqual({ statusCode: 403, message: expect.any(String), error: "Forbidden" });
	}
	/** What is stored for an intent and its link (the sweeper reads either). */
	async function storedOfIntent(id: string) {
		const intent = await node.app.models.PaymentIntent.findByPk(id);
		const link = await node.app.models.PaymentLink.findByPk(intent!.paymentLinkId);
		return { intent: intent!.withdrawalAddresses, link: link!.withdrawalAddresses };
	}
	const storedOfLink = async (id: string) => (await node.app.models.PaymentLink.findByPk(id))!.withdrawalAddresses;

	beforeAll(async () => {
		node = await startPaymentsNode();
		alice = await createMerchant(node);
		await setPrices(node, { [IDS.sepoliaEth]: "2000", [IDS.sepoliaUsdc]: "1" });
		member = await join("member");
		admin = await join("admin");
	});
	afterAll(async () => {
		await node?.stop();
	});
	afterEach(() => {
		expect(statuses.filter(s => s >= 500)).toEqual([]);
	});

	it("a member cannot create an intent or a link with withdrawal addresses: 403, nothing stored", async () => {
		const before = await counts();
		expectForbidden(await call("POST", "/payment_intents", { ...as(member), body: intentBody({ withdrawal_addresses: { evm: ADDRESS } }) }));
		expectForbidden(await call("POST", "/payments/links", { ...as(member), body: linkBody({ withdrawalAddresses: { evm: ADDRESS } }) }));
		expect(await counts()).toEqual(before);
	});

	it("a member still creates and updates intents and links without the field (or with it empty)", async () => {
		const intent = await call("POST", "/payment_intents", { ...as(member), body: intentBody() });
		expect(intent.status).toBe(200);
		const empty = await call("POST", "/payment_intents", { ...as(member), body: intentBody({ withdrawal_addresses: { evm: "" } }) });
		expect(empty.status).toBe(200);
		expect(await storedOfIntent(empty.body.id)).toEqual({ intent: null, link: null });
		const link = await call("POST", "/payments/links", { ...as(member), body: linkBody() });
		expect(link.status).toBe(201);
		expect((await call("PATCH", `/payment_intents/${intent.body.id}`, { ...as(member), body: { description: "changed" } })).status).toBe(200);
		expect((await call("PATCH", `/payments/links/${link.body.id}`, { ...as(member), body: { title: "changed" } })).status).toBe(200);
	});

	it("a member cannot change or clear the addresses of an intent or a link: 403, unchanged", async () => {
		const intent = await call("POST", "/payment_intents", { key: alice.sandboxKey, body: intentBody({ withdrawal_addresses: { evm: ADDRESS } }) });
		expect(intent.status).toBe(200);
		const link = await call("POST", "/payments/links", { token: alice.token, body: linkBody({ withdrawalAddresses: { evm: ADDRESS } }) });
		expect(link.status).toBe(201);
		for (const value of [{ evm: OTHER }, null, {}]) {
			expectForbidden(await call("PATCH", `/payment_intents/${intent.body.id}`, { ...as(member), body: { withdrawal_addresses: value, description: "changed" } }));
			expectForbidden(await call("PATCH", `/payments/links/${link.body.id}`, { ...as(member), body: { withdrawalAddresses: value, title: "changed" } }));
		}
		expect(await storedOfIntent(intent.body.id)).toEqual({ intent: { evm: ADDRESS }, link: { evm: ADDRESS } });
		expect((await node.app.models.PaymentIntent.findByPk(intent.body.id))!.description).toBe("Order 42");
		expect(await storedOfLink(link.body.id)).toEqual({ evm: ADDRESS });
		expect((await node.app.models.PaymentLink.findByPk(link.body.id))!.title).toBe("T-shirt");
	});

	it.each([
		["the owner", () => as(alice)],
		["an admin", () => as(admin)],
	])("%s sets and changes them", async (_who, caller) => {
		const intent = await call("POST", "/payment_intents", { ...caller(), body: intentBody({ withdrawal_addresses: { evm: ADDRESS } }) });
		expect(intent.status).toBe(200);
		expect(await storedOfIntent(intent.body.id)).toEqual({ intent: { evm: ADDRESS }, link: { evm: ADDRESS } });
		expect((await call("PATCH", `/payment_intents/${intent.body.id}`, { ...caller(), body: { withdrawal_addresses: { evm: OTHER } } })).status).toBe(200);
		expect(await storedOfIntent(intent.body.id)).toEqual({ intent: { evm: OTHER }, link: { evm: OTHER } });

		const link = await call("POST", "/payments/links", { ...caller(), body: linkBody({ withdrawalAddresses: { evm: ADDRESS } }) });
		expect(link.status).toBe(201);
		expect(link.body.withdrawalAddresses).toEqual({ evm: ADDRESS });
		const changed = await call("PATCH", `/payments/links/${link.body.id}`, { ...caller(), body: { withdrawalAddresses: null } });
		expect(changed.status).toBe(200);
		expect(await storedOfLink(link.body.id)).toBeNull();
	});

	it("an API key acts for the manager who created it, while they still are one", async () => {
		const res = await call("POST", `/organizations/${alice.sandbox.id}/api-keys`, { token: admin.token, body: { name: "admin's" } });
		expect(res.status).toBe(201);
		const key = { key: res.body.key as string, secret: res.body.secret as string };
		const withAddresses = intentBody({ withdrawal_addresses: { evm: ADDRESS } });
		const made = await call("POST", "/payment_intents", { key, body: withAddresses });
		expect(made.status).toBe(200);
		expect(await storedOfIntent(made.body.id)).toEqual({ intent: { evm: ADDRESS }, link: { evm: ADDRESS } });

		// The admin who made the key is now a plain member: the key keeps working, but not for this.
		await node.app.models.Membership.update({ role: "member" }, { where: { organizationId: alice.sandbox.id, userId: admin.user.id } });
		const before = await counts();
		expectForbidden(await call("POST", "/payment_intents", { key, body: withAddresses }));
		expect(await counts()).toEqual(before);
		expectForbidden(await call("PATCH", `/payment_intents/${made.body.id}`, { key, body: { withdrawal_addresses: { evm: OTHER } } }));
		expect(await storedOfIntent(made.body.id)).toEqual({ intent: { evm: ADDRESS }, link: { evm: ADDRESS } });
		expect((await call("POST", "/payment_intents", { key, body: intentBody() })).status).toBe(200);

		// The owner's key (its creator still owns the organization) sets them.
		expect((await call("PATCH", `/payment_intents/${made.body.id}`, { key: alice.sandboxKey, body: { withdrawal_addresses: { evm: OTHER } } })).status).toBe(200);
		expect(await storedOfIntent(made.body.id)).toEqual({ intent: { evm: OTHER }, link: { evm: OTHER } });
	});
});
