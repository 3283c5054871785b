/**
 * Many requests at once on one node, rate limits off: every request the node accepts gets an
 * answer, never a 5xx. On the embedded default (SQLite) this is what the single-writer queue of
 * lib/db.ts buys (docs/deployment.md "SQLite under concurrency"); MySQL runs the same requests.
 */
import { TestNode } from "../helpers/harness";
import { createUserWithToken, UserWithToken } from "../helpers/users";
import { createMerchant, IDS, intentBody, Merchant, setPrices, startPaymentsNode } from "./payments.helpers";

const PARALLEL = 60;
/** PAYMENTS_MAX_OPEN_CHECKOUTS's default: open checkouts a link allows at once. */
const OPEN_CHECKOUT_CAP = 20;

describe("concurrency", () => {
	let node: TestNode;
	let merchant: Merchant;
	let users: UserWithToken[];

	beforeAll(async () => {
		node = await startPaymentsNode({ env: { RATE_LIMIT: "off" } });
		merchant = await createMerchant(node);
		await setPrices(node, { [IDS.sepoliaEth]: "2000", [IDS.sepoliaUsdc]: "1" });
		users = [];
		for (let i = 0; i < 10; i++) users.push(await createUserWithToken(node));
	});
	afterAll(async () => {
		await node?.stop();
	});

	const codes = (rs: Array<{ status: number }>) => {
		const out: Record<number, number> = {};
		for (const r of rs) out[r.status] = (out[r.status] || 0) + 1;
		return out;
	};

	it(`answers ${PARALLEL} creates with one key, ${PARALLEL} checkouts on one link, ${PARALLEL} more on three others and signed-in users at once, with no 5xx`, async () => {
		const newLink = async () => {
			const res = await node.http("POST", "/payments/links", { token: merchant.token, body: { title: "Busy", amount: "25", tokenId: IDS.sepoliaUsdc, networkId: IDS.sepolia } });
			expect(res.status).toBe(201);
			return res.body as { id: string; slug: string };
		};
		const busy = await newLink();
		const others = [await newLink(), await newLink(), await newLink()];
		const checkout = (slug: string) => node.http("POST", `/payments/links/${slug}/transactions`, { body: {} });

		const creates = Array.from({ length: PARALLEL }, (_, i) => node.http("POST", "/payment_intents", { key: merchant.sandboxKey, body: intentBody({ metadata: { orderId: String(i) } }) }));
		const onBusy = Array.from({ length: PARALLEL }, () => checkout(busy.slug));
		const onOthers = others.flatMap(l => Array.from({ length: OPEN_CHECKOUT_CAP }, () => checkout(l.slug)));
		// Signed-in users at the same time: their first request checks the session in the database.
		const signedIn = users.flatMap(u => [
			node.http("GET", "/auth/me", { token: u.token }),
			node.http("POST", "/payments/links", { token: u.token, body: { title: "Mine", amount: "3", tokenId: IDS.sepoliaUsdc, networkId: IDS.sepolia } }),
			node.http("GET", "/payments/links", { token: u.token }),
		]);
		const [created, busyOpened, othersOpened, theirs] = await Promise.all([Promise.all(creates), Promise.all(onBusy), Promise.all(onOthers), Promise.all(signedIn)]);

		expect(codes(created)).toEqual({ 200: PARALLEL });
		// The cap on open checkouts holds under concurrency: exactly that many open, the rest are 400.
		expect(codes(busyOpened)).toEqual({ 201: OPEN_CHECKOUT_CAP, 400: PARALLEL - OPEN_CHECKOUT_CAP });
		for (const r of busyOpened.filter(r => r.status === 400)) expect(r.body.errors).toEqual({ paymentLink: "tooManyOpenCheckouts" });
		expect(codes(othersOpened)).toEqual({ 201: others.length * OPEN_CHECKOUT_CAP });
		const addresses = [...busyOpened, ...othersOpened].filter(r => r.status === 201).map(r => r.body.depositAddress);
		expect(new Set(addresses).size).toBe((others.length + 1) * OPEN_CHECKOUT_CAP);
		expect(codes(theirs)).toEqual({ 200: users.length * 2, 201: users.length });

		expect(await node.app.models.PaymentIntent.count({ where: { organizationId: merchant.sandbox.id } })).toBe(PARALLEL);
		expect(await node.app.models.Transaction.count({ where: { paymentLinkId: busy.id } })).toBe(OPEN_CHECKOUT_CAP);
	}, 120_000);
});
