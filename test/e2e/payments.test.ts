/**
 * A merchant's payment path over HTTP on a node with every payments service: sign-up and keys
 * through the real endpoints, then a payment intent created with a sandbox key, confirmed,
 * paid by simulation through the normal checkout and credit path, and read back as succeeded;
 * live keys cannot simulate; canceled intents cannot be paid; Idempotency-Key replays.
 */
import { chainParamsFor, codecFor } from "../../lib/chains";
import { TestNode } from "../helpers/harness";
import { watchNetworks } from "../helpers/watched";
import { IDS, intentBody, startPaymentsNode } from "./payments.helpers";

const CREATE_FIELDS = ["amount", "clientSecret", "createdAt", "currency", "id", "paymentLink", "paymentMethodTypes", "returnUrl", "status"];
const GET_FIELDS = ["amount", "createdAt", "currency", "id", "latestTransaction", "paymentMethodTypes", "status", "updatedAt"];

describe("payments over HTTP", () => {
	let node: TestNode;
	const statuses: number[] = [];
	let token: string;
	let sandboxKey: { key: string; secret: string };
	let liveKey: { key: string; secret: string };

	async function call(method: string, path: string, opts: Parameters<TestNode["http"]>[2] = {}) {
		const res = await node.http(method, path, opts);
		statuses.push(res.status);
		return res;
	}

	beforeAll(async () => {
		node = await startPaymentsNode();
		const email = "merchant@example.com";
		const password = "s3cret-pass";
		expect((await call("POST", "/auth/email/register", { body: { email, password, firstName: "Mer", lastName: "Chant" } })).status).toBe(204);
		const confirm = await call("POST", "/auth/email/confirm", { body: { hash: node.lastMail(email).data.hash } });
		expect(confirm.status).toBe(200);
		const login = await call("POST", "/auth/email/login", { body: { email, password } });
		token = login.body.token;
		const orgs = await call("GET", "/organizations", { token });
		const sandbox = orgs.body.find((o: { mode: string }) => o.mode === "sandbox");
		const live = orgs.body.find((o: { mode: string }) => o.mode === "live");
		const sk = await call("POST", `/organizations/${sandbox.id}/api-keys`, { token, body: { name: "sandbox server" } });
		const lk = await call("POST", `/organizations/${live.id}/api-keys`, { token, body: { name: "live server" } });
		sandboxKey = { key: sk.body.key, secret: sk.body.secret };
		liveKey = { key: lk.body.key, secret: lk.body.secret };
		// Live intents below pay on Ethereum: a live payment needs a watcher following its network (test/helpers/watched.ts).
		await watchNetworks(node, ["ethereum"]);
	});
	afterAll(async () => {
		await node?.stop();
	});
	afterEach(() => {
		expect(statuses.filter(s => s >= 500)).toEqual([]);
	});

	it("creates, confirms, simulates and reads a sandbox intent as succeeded", async () => {
		const created = await call("POST", "/payment_intents", { key: sandboxKey, body: intentBody(), headers: { "Idempotency-Key": "order-42" } });
		expect(created.status).toBe(200);
		expect(Object.keys(created.body).sort()).toEqual(CREATE_FIELDS);
		const intent = created.body;
		expect(intent).toMatchObject({ amount: "0.5", currency: "eth", status: "requires_payment_method", paymentMethodTypes: ["crypto"], returnUrl: "https://shop.example.com/return" });
		expect(intent.clientSecret).toMatch(new RegExp(`^${intent.id}_secret_[0-9A-Za-z]{32}$`));
		expect(intent.paymentLink.id).toMatch(/^[0-9a-f-]{36}$/);
		expect(intent.paymentLink.link).toMatch(new RegExp(`^${node.config.publicUrl.replace(/\/$/, "")}/pay/pl_[0-9A-Za-z]+$`));

		// The same key and body: the first answer again, nothing new.
		const replay = await call("POST", "/payment_intents", { key: sandboxKey, body: intentBody(), headers: { "Idempotency-Key": "order-42" } });
		expect(replay.status).toBe(200);
		expect(replay.body).toEqual(intent);
		expect(replay.headers.get("idempotent-replayed")).toBe("true");
		// The same key, another body: 400.
		const reused = await call("POST", "/payment_intents", { key: sandboxKey, body: intentBody({ amount: "0.6" }), headers: { "Idempotency-Key": "order-42" } });
		expect(reused.status).toBe(400);
		expect(reused.body.errors).toEqual({ idempotencyKey: "reusedWithDifferentRequest" });
		expect(await node.app.models.PaymentIntent.count()).toBe(1);

		const read = await call("GET", `/payment_intents/${intent.id}`, { key: sandboxKey });
		expect(read.status).toBe(200);
		expect(Object.keys(read.body).sort()).toEqual(GET_FIELDS);
		expect(read.body).toMatchObject({ status: "requires_payment_method", latestTransaction: null });

		const wrong = await call("POST", `/payment_intents/${intent.id}/confirm`, { key: sandboxKey, body: { client_secret: `${intent.id}_secret_nope` } });
		expect(wrong.status).toBe(400);
		expect(wrong.body.errors).toEqual({ client_secret: "invalid" });
		const confirmed = await call("POST", `/payment_intents/${intent.id}/confirm`, { key: sandboxKey, body: { client_secret: intent.clientSecret } });
		expect(confirmed.status).toBe(200);
		expect(confirmed.body).toEqual({ id: intent.id, status: "requires_confirmation", nextAction: { type: "redirect_to_url", redirectToUrl: { url: intent.paymentLink.link } } });

		const simulated = await call("POST", `/payment_intents/${intent.id}/simulate`, { key: sandboxKey });
		expect(simulated.status).toBe(200);
		expect(simulated.body.status).toBe("succeeded");
		expect(simulated.body.latestTransaction).toMatchObject({ status: "completed", amount: "0.5" });
		expect(simulated.body.latestTransaction.hash).toMatch(/^sim_[0-9a-f]{64}$/);

		const after = await call("GET", `/payment_intents/${intent.id}`, { token, headers: { "x-organization-id": (await node.app.models.PaymentIntent.findByPk(intent.id))!.organizationId } });
		expect(after.status).toBe(200);
		expect(after.body.status).toBe("succeeded");
		expect(after.body.latestTransaction).toEqual(simulated.body.latestTransaction);

		// The checkout behind it: simulated, with a real deposit address of the network's chain.
		const tx = await call("GET", `/payments/transactions/${simulated.body.latestTransaction.id}`);
		expect(tx.status).toBe(200);
		expect(tx.body).toMatchObject({ status: "completed", simulated: true, amountReceived: "0.5", totalAmount: "0.5", payerTokenId: IDS.sepoliaEth });
		expect(codecFor("evm").normalizeAddress(tx.body.depositAddress, chainParamsFor({ chainType: "evm", isTestnet: true }))).toBe(tx.body.depositAddress);

		// The completed event in the outbox says completed, livemode false, with latestTransaction.
		const events = await node.app.models.OutboxEvent.findAll({ where: { type: "payment_intent.completed" } });
		expect(events).toHaveLength(1);
		expect(events[0].livemode).toBe(false);
		expect(events[0].payload).toMatchObject({ id: intent.id, status: "completed", metadata: { orderId: "42" }, latestTransaction: { id: tx.body.id, currency: "eth", amount: "0.5" } });

		// A succeeded intent can be neither canceled nor paid again.
		const cancel = await call("POST", `/payment_intents/${intent.id}/cancel`, { key: sandboxKey });
		expect(cancel.status).toBe(400);
		expect(cancel.body.message).toBe("Cannot cancel a payment intent in state succeeded");
		const again = await call("POST", `/payment_intents/${intent.id}/simulate`, { key: sandboxKey });
		expect(again.status).toBe(400);
		expect(again.body.message).toBe("Cannot simulate a payment for a payment intent in state succeeded");
	});

	it("refuses simulation to live keys (403 SIMULATION_SANDBOX_ONLY) and hides other organizations' intents", async () => {
		const live = await call("POST", "/payment_intents", { key: liveKey, body: intentBody({ tokenId: IDS.ethereumEth, networkId: IDS.ethereum }) });
		expect(live.status).toBe(200);
		const sim = await call("POST", `/payment_intents/${live.body.id}/simulate`, { key: liveKey });
		expect(sim.status).toBe(403);
		expect(sim.body).toMatchObject({ statusCode: 403, code: "SIMULATION_SANDBOX_ONLY", error: "Forbidden" });
		// The sandbox key's organization does not see the live one's intent.
		expect((await call("GET", `/payment_intents/${live.body.id}`, { key: sandboxKey })).status).toBe(404);
		expect((await call("POST", `/payment_intents/${live.body.id}/simulate`, { key: sandboxKey })).status).toBe(404);
		// A live organization cannot use a test network.
		const wrongNet = await call("POST", "/payment_intents", { key: liveKey, body: intentBody() });
		expect(wrongNet.status).toBe(400);
		expect(wrongNet.body.errors).toEqual({ networkId: "networkNotAllowedForMode" });
	});

	it("never lets a canceled intent be paid", async () => {
		const created = await call("POST", "/payment_intents", { key: sandboxKey, body: intentBody() });
		const { id, paymentLink } = created.body;
		const canceled = await call("POST", `/payment_intents/${id}/cancel`, { key: sandboxKey });
		expect(canceled.status).toBe(200);
		expect(Object.keys(canceled.body).sort()).toEqual(["id", "status", "updatedAt"]);
		expect(canceled.body.status).toBe("canceled");
		// Canceling again answers it unchanged.
		const twice = await call("POST", `/payment_intents/${id}/cancel`, { key: sandboxKey });
		expect(twice.status).toBe(200);
		expect(twice.body).toEqual(canceled.body);

		const slug = paymentLink.link.split("/pay/")[1];
		const checkout = await call("POST", `/payments/links/${slug}/transactions`, { body: {} });
		expect(checkout.status).toBe(400);
		expect(checkout.body.message).toBe("Cannot pay a payment link in state canceled");
		const sim = await call("POST", `/payment_intents/${id}/simulate`, { key: sandboxKey });
		expect(sim.status).toBe(400);
		expect(sim.body.message).toBe("Cannot simulate a payment for a payment intent in state canceled");
		const confirm = await call("POST", `/payment_intents/${id}/confirm`, { key: sandboxKey, body: { client_secret: created.body.clientSecret } });
		expect(confirm.status).toBe(400);
		expect(confirm.body.message).toBe("Cannot confirm a payment intent in state canceled");
		const events = await node.app.models.OutboxEvent.findAll({ where: { type: "payment_intent.canceled" } });
		expect(events.map(e => e.payload.id)).toEqual([id]);
	});

	it("shows the result on the dashboard", async () => {
		const res = await call("GET", "/dashboard/summary", { token });
		expect(res.status).toBe(200);
		expect(res.body.totals).toMatchObject({ intents: 2, transactions: 1, links: 2, withdrawnUsdc: "0" });
		// Simulated money is never earned.
		expect(res.body.totals.totalEarnedUsdc).toBe("0");
		expect(res.body.volumeSeries).toHaveLength(12);
		expect(res.body.volumeSeries[11].transactionCount).toBe("1");
		expect(res.body.recentTransactions).toHaveLength(1);
		expect(res.body.recentTransactions[0]).toMatchObject({ status: "completed", tokenSymbol: "ETH", networkName: "Ethereum Sepolia", payerTokenSymbol: "ETH", payerAmount: "0.5" });
	});
});
