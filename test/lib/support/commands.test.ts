/**
 * The support commands on a real cluster of two brokers over NATS: a core node with the payments
 * services, webhooks and the EVM watcher (anvil behind an RPC proxy), and a REPL-only node
 * (lib/repl.ts createReplNode: no service, no database) that runs the commands. Real data: an
 * intent paid on anvil, its webhooks failing at a local receiver, then redelivered; a payment the
 * provider's log index missed, replayed with `watchers rewind`.
 */
import crypto from "node:crypto";
import { Contract, parseUnits } from "ethers";
import type { ServiceBroker } from "moleculer";
import { loadConfig } from "../../../lib/config";
import { networkIdFor, tokenIdFor } from "../../../lib/networks/catalogue";
import { createReplNode } from "../../../lib/repl";
import { failureLine, intentCommand, linkCommand, outboxCommand, runSupportCommand, splitArgs, SupportInputError, txCommand, watchersCommand, webhooksCommand } from "../../../lib/support/commands";
import { slugOf } from "../../../lib/support/params";
import { verifyWebhookSignature } from "../../../lib/webhooks/signature";
import { deployTestUsdc, startAnvil, Anvil } from "../../helpers/anvil";
import { TestNode } from "../../helpers/harness";
import { startRpcProxy, RpcProxy } from "../../helpers/rpc-proxy";
import { until } from "../../helpers/until";
import { startReceiver, WebhookReceiver } from "../../helpers/webhook-receiver";
import { openCheckout, OpenedCheckout, PAYMENTS_SERVICES, sandboxMerchant, startPaymentsNode } from "../../e2e/payments.helpers";

const NATS_URL = process.env.TEST_NATS_URL || "nats://127.0.0.1:4222";
const NET = networkIdFor("anvil-local");
const USDC = tokenIdFor("anvil-local", "USDC");
const REQUIRED = 2;

describe("support commands (pure parts)", () => {
	it("splits words into operands and flags", () => {
		expect(splitArgs(["failed", "--limit", "5", "org"], ["limit"])).toEqual({ operands: ["failed", "org"], flags: { limit: "5" } });
		expect(splitArgs(["rewind", "net", "7", "--yes"])).toEqual({ operands: ["rewind", "net", "7"], flags: { yes: true } });
		expect(splitArgs(["--limit=3"], ["limit"])).toEqual({ operands: [], flags: { limit: "3" } });
	});

	it("finds the slug in a pay-page reference", () => {
		expect(slugOf("pl_abc123")).toBe("pl_abc123");
		expect(slugOf("https://pay.example.com/pay/pl_abc123/checkout?x=1")).toBe("pl_abc123");
		expect(slugOf("https://pay.example.com/other/pl_abc123")).toBeNull();
		expect(slugOf("not a url")).toBeNull();
	});

	it("turns any failure into one line without a stack", () => {
		expect(failureLine(new SupportInputError("No payment intent x"))).toBe("No payment intent x");
		const notFound = Object.assign(new Error("Service 'intents.support.get' is not found."), { name: "ServiceNotFoundError", data: { action: "intents.support.get" } });
		expect(failureLine(notFound)).toMatch(/^The intents service is not reachable from this node/);
		const boom = new Error("connection lost\n    at Socket.emit (node:events:1:1)");
		expect(failureLine(boom)).toBe("Failed: connection lost");
	});
});

describe("support commands on a cluster (core node + REPL-only node over NATS)", () => {
	let anvil: Anvil;
	let proxy: RpcProxy;
	let token: Contract;
	let receiver: WebhookReceiver;
	let core: TestNode;
	let repl: ServiceBroker;
	let key: { key: string; secret: string };
	let orgId: string;
	let paid: OpenedCheckout;
	let payHash: string;
	const outputs: string[] = [];
	const coreId = `core-${crypto.randomBytes(3).toString("hex")}`;

	/** Runs a command on the REPL-only node, keeping its text for the secrets check. */
	const run = async (command: (b: ServiceBroker, words: string[]) => Promise<string>, ...words: string[]) => {
		const text = await command(repl, words);
		outputs.push(text);
		return text;
	};
	/** A refusal: the command throws a SupportInputError (the REPL prints its message). */
	const refusal = async (command: (b: ServiceBroker, words: string[]) => Promise<string>, ...words: string[]) => {
		const err = await command(repl, words).then(
			() => null,
			e => e as Error,
		);
		expect(err?.name).toBe("SupportInputError");
		return err!.message;
	};
	const getTx = async (id: string) => (await core.http("GET", `/payments/transactions/${id}`)).body;
	const payUsdc = async (to: string, amount: string) => ((await (token.connect(anvil.accounts[1]) as Contract).transfer(to, parseUnits(amount, 6))) as { hash: string }).hash;
	const watcherStatus = async () => ((await core.broker.call("watcher-evm.status")) as Array<{ slug: string; cursor: number | null; leader: boolean }>).find(s => s.slug === "anvil-local");

	beforeAll(async () => {
		anvil = await startAnvil();
		token = await deployTestUsdc(anvil, [1]);
		proxy = await startRpcProxy(anvil.url);
		receiver = await startReceiver();
		receiver.respond(500);
		const cluster = { TRANSPORTER: NATS_URL, NAMESPACE: `support-${crypto.randomBytes(4).toString("hex")}` };
		core = await startPaymentsNode({
			services: [...PAYMENTS_SERVICES, "webhooks", "watcher-evm"],
			nodeID: coreId,
			env: {
				...cluster,
				RPC_URL_ANVIL_LOCAL: proxy.url,
				TEST_USDC_ADDRESS: await token.getAddress(),
				REQUIRED_CONFIRMATIONS_ANVIL_LOCAL: String(REQUIRED),
				WATCHER_POLL_MS: "50",
				WATCHER_RECONCILE_MS: "0",
				WEBHOOK_POLL_MS: "50",
				WEBHOOK_BACKOFF_MS: "50",
				WEBHOOK_MAX_ATTEMPTS: "2",
			},
		});
		const env = { NODE_ENV: "test", DATA_DIR: core.dataDir, LOG_LEVEL: "error", ...cluster };
		repl = createReplNode({ config: loadConfig(env), env, nodeID: `repl-${crypto.randomBytes(3).toString("hex")}` });
		await repl.start();
		await repl.waitForServices(["intents", "links", "transactions", "webhooks", "organizations", "networks", "watcher-evm"], 30_000, 100);
		const merchant = await sandboxMerchant(core, receiver.url);
		key = merchant.key;
		orgId = merchant.user.sandbox.id;

		// An intent paid on anvil: detected at 1 of 2, credited at 2; both webhooks fail (500) twice.
		paid = await openCheckout(core, key, { amount: "25", currency: "usdc", tokenId: USDC, networkId: NET });
		payHash = await payUsdc(paid.address, "25");
		await anvil.mine(1);
		await until("detection", async () => (await getTx(paid.txId)).confirmations === 1);
		await anvil.mine(1);
		await until("completed", async () => (await getTx(paid.txId)).status === "completed");
		await until("both deliveries failed", async () => (await core.app.models.WebhookDelivery.count({ where: { organizationId: orgId, status: "failed" } })) === 2);
	}, 180_000);

	afterAll(async () => {
		await repl?.stop();
		await core?.stop();
		await proxy?.stop();
		await receiver?.close();
		await anvil?.stop();
	});

	it("runs no service and has no database on the REPL-only node", () => {
		const own = repl.registry.getServiceList({ onlyLocal: true, skipInternal: true });
		expect(own).toEqual([]);
		expect(repl.nodeID).not.toBe(coreId);
		expect(repl.isMetricsEnabled()).toBe(false);
	});

	it("intent: state, amounts as decimal strings, its checkout and its webhook deliveries", async () => {
		const text = await run(intentCommand, paid.intentId);
		expect(text).toContain(`Payment intent ${paid.intentId}  succeeded  (sandbox)`);
		expect(text).toMatch(/organization\s+\S+/);
		expect(text).toContain(orgId);
		expect(text).toMatch(/amount\s+25 usdc/);
		expect(text).toMatch(/to pay\s+25 USDC on Anvil \(local\)/);
		expect(text).toContain(`/pay/${paid.slug}`);
		expect(text).toContain("Checkouts (1)");
		expect(text).toMatch(new RegExp(`${paid.txId}\\s+completed\\s+25 of 25 USDC`));
		expect(text).toContain(payHash);
		expect(text).toContain("Webhook events (2)");
		expect(text).toMatch(/payment_intent\.processing .*failed {2}2 attempts {2}last: HTTP 500/);
		expect(text).toMatch(/payment_intent\.completed .*failed {2}2 attempts {2}last: HTTP 500/);
		expect(text).toMatch(/#1 .* HTTP 500/);
	});

	it("tx by hash: the checkout with its detection, its credit, the deliveries it caused, and what the watcher stored", async () => {
		const text = await run(txCommand, payHash);
		expect(text).toContain(`Transaction ${paid.txId}  completed  (sandbox)`);
		expect(text).toMatch(new RegExp(`intent\\s+${paid.intentId}`));
		expect(text).toMatch(/received\s+25 USDC/);
		expect(text).toMatch(new RegExp(`deposit address\\s+${paid.address}`));
		expect(text).toContain("Detections (1)");
		expect(text).toMatch(new RegExp(`${payHash}\\s+\\d+\\s+\\d+\\s+25\\s+\\d+\\s+credited`));
		expect(text).toContain("Credits (1)");
		expect(text).toMatch(new RegExp(`${payHash}\\s+\\d+\\s+25\\s+\\d+\\s+20\\d\\d-`));
		expect(text).toMatch(/payment_intent\.completed .*failed/);
		expect(text).toContain("Stored by the watchers (1)");
		expect(text).toMatch(/watcher-evm\s+anvil-local\s+\d+\s+\d+\s+\S+\s+25\s+active\s+credited/);
		// Upper case hex finds it too.
		expect(await run(txCommand, `0x${payHash.slice(2).toUpperCase()}`)).toContain(`Transaction ${paid.txId}`);
	});

	it("tx by our id or the payer's checkout URL: the same checkout, without the watchers' part", async () => {
		const text = await run(txCommand, paid.txId);
		expect(text).toContain(`Transaction ${paid.txId}  completed`);
		expect(text).toContain("Credits (1)");
		expect(text).not.toContain("Stored by the watchers");
		expect(await run(txCommand, `${core.config.publicUrl}/pay/${paid.slug}/checkout?transaction=${paid.txId}&lang=es`)).toBe(text);
	});

	it("link: by slug and by pay-page URL, with the intent to look at next", async () => {
		const bySlug = await run(linkCommand, paid.slug);
		expect(bySlug).toMatch(/^Payment link \S+ {2}completed {2}\(sandbox\)/);
		expect(bySlug).toContain(`intent ${paid.intentId}`);
		expect(bySlug).toContain(paid.txId);
		const byUrl = await run(linkCommand, `${core.config.publicUrl}/pay/${paid.slug}/checkout`);
		expect(byUrl.split("\n")[0]).toBe(bySlug.split("\n")[0]);
	});

	it("watchers: the leading node, head, cursor and lag of each network", async () => {
		const head = await anvil.blockNumber();
		const text = await until("caught up", async () => {
			const t = await run(watchersCommand);
			return new RegExp(`anvil-local\\s+evm\\s+${coreId}\\s+${head}\\s+${head}\\s+0\\s+ok`).test(t) ? t : null;
		});
		expect(text).toMatch(/network\s+chain\s+leader\s+head\s+cursor\s+lag\s+rpc/);
		// Each replica's fair share: the one replica leads the one network, its share is 1 of 1.
		expect(text).toMatch(/chain\s+replica\s+leads\s+share\s+replicas\s+networks led/);
		expect(text).toMatch(new RegExp(`evm\\s+${coreId}\\s+1\\s+1\\s+1\\s+anvil-local`));
	});

	it("outbox: nothing waiting, the two failures of the last day", async () => {
		const text = await run(outboxCommand);
		expect(text).toMatch(/outbox, not yet queued\s+0/);
		expect(text).toMatch(/deliveries waiting\s+0 \(0 due now\)/);
		expect(text).toMatch(/failed, last 24 h\s+2/);
	});

	it("webhooks failed: newest first, for all or one organization; refuses a bad or unknown organization", async () => {
		const all = await run(webhooksCommand, "failed");
		expect(all).toMatch(/Failed webhook deliveries in all organizations: 2 of 2, newest first/);
		const newestFirst = await core.app.models.WebhookDelivery.findAll({ where: { status: "failed" }, order: [["updatedAt", "DESC"]] });
		const listed = all.split("\n").filter(l => l.includes("payment_intent.")).map(l => l.trim().split(/\s+/)[0]);
		expect(listed).toEqual(newestFirst.map(d => d.id));
		expect(all).toContain(receiver.url);

		const mine = await run(webhooksCommand, "failed", orgId, "--limit", "1");
		expect(mine).toMatch(new RegExp(`in organization ${orgId} \\(.*, sandbox\\): 1 of 2`));

		const other = await sandboxMerchant(core);
		expect(await run(webhooksCommand, "failed", other.user.sandbox.id)).toMatch(new RegExp(`^No failed webhook deliveries in organization ${other.user.sandbox.id} \\(.+, sandbox\\)\\.$`));
		const unknown = crypto.randomUUID();
		expect(await refusal(webhooksCommand, "failed", unknown)).toBe(`No organization ${unknown}`);
		expect(await refusal(webhooksCommand, "failed", "acme")).toMatch(/^"acme" is not an organization id/);
		expect(await refusal(webhooksCommand, "failed", "--limit", "0")).toBe("--limit takes a number from 1 to 100");
		expect(await refusal(webhooksCommand, "failed", "--since", "1d")).toMatch(/^Unknown option --since/);
		expect(await refusal(webhooksCommand)).toMatch(/^Missing argument\. Usage: webhooks failed/);
		expect(await refusal(webhooksCommand, "retry")).toMatch(/^Unknown webhooks command "retry"/);
	});

	it("webhooks redeliver: a failed delivery goes through the queue again and arrives signed; refused for others", async () => {
		const delivery = await core.app.models.WebhookDelivery.findOne({ where: { organizationId: orgId, type: "payment_intent.completed" } });
		expect(delivery!.status).toBe("failed");
		const before = receiver.received.length;
		receiver.respond(200);
		const text = await run(webhooksCommand, "redeliver", delivery!.id);
		expect(text).toContain(`Delivery ${delivery!.id} (payment_intent.completed, event ${delivery!.eventId}) is queued again`);
		expect(text).toContain("Outcome: delivered (attempt 3, HTTP 200)");
		const hit = receiver.received.slice(before).find(h => h.headers["x-webhook-id"] === delivery!.eventId);
		expect(hit).toBeTruthy();
		expect(hit!.rawBody).toBe(delivery!.body);
		expect(verifyWebhookSignature(hit!.rawBody, hit!.headers["x-webhook-signature"] as string, key.secret)).toBe(true);
		const after = await core.app.models.WebhookDelivery.findByPk(delivery!.id);
		expect(after).toMatchObject({ status: "delivered", attempts: 3 });
		const logs = await core.app.models.WebhookLog.findAll({ where: { deliveryId: delivery!.id }, order: [["attemptNumber", "ASC"]] });
		expect(logs.map(l => [l.attemptNumber, l.statusCode])).toEqual([[1, 500], [2, 500], [3, 200]]);

		// What the REPL prints for the action's refusal (a 409 from the webhooks service).
		expect(await runSupportCommand(() => webhooksCommand(repl, ["redeliver", delivery!.id]))).toBe(`Delivery ${delivery!.id} is delivered: only a failed or canceled delivery can be sent again`);
		const unknown = crypto.randomUUID();
		expect(await refusal(webhooksCommand, "redeliver", unknown)).toBe(`No webhook delivery ${unknown}`);
		expect(await refusal(webhooksCommand, "redeliver", "42")).toMatch(/^"42" is not a webhook delivery id/);
		expect(await refusal(webhooksCommand, "redeliver")).toMatch(/^Missing argument\. Usage: webhooks redeliver <delivery id>/);
	});

	it("refuses malformed, unknown and missing ids with one sentence", async () => {
		const unknown = crypto.randomUUID();
		expect(await refusal(intentCommand)).toBe("Missing argument. Usage: intent <intent id>");
		expect(await refusal(intentCommand, "pi_123")).toMatch(/^"pi_123" is not a payment intent id \(a UUID/);
		expect(await refusal(intentCommand, unknown)).toBe(`No payment intent ${unknown}`);
		expect(await refusal(intentCommand, unknown, "extra")).toBe("Too many arguments. Usage: intent <intent id>");
		expect(await refusal(txCommand)).toMatch(/^Missing argument/);
		expect(await refusal(txCommand, "0xzz")).toBe(`"0xzz" is neither a transaction id (UUID), a chain transaction hash nor a checkout URL`);
		expect(await refusal(txCommand, unknown)).toBe(`No transaction ${unknown}`);
		const nowhere = `0x${"ab".repeat(32)}`;
		expect(await refusal(txCommand, nowhere)).toMatch(new RegExp(`^No checkout was paid by ${nowhere}, and no watcher stored a transfer with that hash`));
		expect(await refusal(linkCommand, "pl_nothing")).toBe("No payment link pl_nothing");
		expect(await refusal(linkCommand, "https://x.example/shop")).toMatch(/is not a link id/);
		expect(await refusal(watchersCommand, "status")).toMatch(/^Too many arguments/);
	});

	it("watchers rewind replays a range the provider's log index missed: the payment is credited once", async () => {
		const missed = await openCheckout(core, key, { amount: "5", currency: "usdc", tokenId: USDC, networkId: NET });
		proxy.hideLogs(true);
		const hash = await payUsdc(missed.address, "5");
		await anvil.mine(1);
		const paidIn = Number((await anvil.provider.getTransactionReceipt(hash))!.blockNumber);
		await anvil.mine(3);
		const head = await anvil.blockNumber();
		await until("the watcher past the payment", async () => (await watcherStatus())?.cursor === head);
		proxy.hideLogs(false);
		await anvil.mine(1);
		await until("the watcher at the new head", async () => (await watcherStatus())?.cursor === head + 1);
		expect((await getTx(missed.txId)).status).toBe("pending");
		expect((await getTx(missed.txId)).amountConfirming).toBe("0");

		// Guards first: nothing moves.
		expect(await refusal(watchersCommand, "rewind", "anvil-local", String(head + 100))).toBe(`Block ${head + 100} is not before anvil-local's cursor (block ${head + 1}): a rewind only goes back`);
		expect(await refusal(watchersCommand, "rewind", "nowhere", "5")).toBe('No watcher follows a network "nowhere" (followed: anvil-local)');
		expect(await refusal(watchersCommand, "rewind", "anvil-local", "-3")).toBe('"-3" is not a block number');
		expect(await refusal(watchersCommand, "rewind", "anvil-local")).toMatch(/^Missing argument\. Usage: watchers rewind <network slug> <block> \[--yes\]/);
		expect(await refusal(watchersCommand, "rewind", "anvil-local", "1", "--force")).toMatch(/^Unknown option --force/);
		const plan = await run(watchersCommand, "rewind", "anvil-local", String(paidIn - 1));
		expect(plan).toBe(
			`Would rewind anvil-local from block ${head + 1} to ${paidIn - 1}: blocks ${paidIn}..${head + 1} (${head + 2 - paidIn}) are read again; transfers already stored are kept, missed ones are stored and credited. Run again with --yes to do it.`,
		);
		expect((await watcherStatus())?.cursor).toBe(head + 1);

		const done = await run(watchersCommand, "rewind", "anvil-local", String(paidIn - 1), "--yes");
		expect(done).toMatch(new RegExp(`^Rewound anvil-local from block ${head + 1} to ${paidIn - 1} \\(0x[0-9a-f]{64}\\)`));
		await until("credited after the replay", async () => (await getTx(missed.txId)).status === "completed", 30_000);
		const credits = await core.app.models.TransactionCredit.findAll({ where: { transactionId: missed.txId } });
		expect(credits.map(c => [c.txHash, c.amount])).toEqual([[hash, "5"]]);
		// The first payment's transfer was read again, not stored twice.
		expect(await core.app.models.ChainTransfer.count({ where: { txHash: payHash } })).toBe(1);
		await until("caught up again", async () => (await watcherStatus())?.cursor === head + 1 && (await watcherStatus())?.leader === true);
	}, 120_000);

	it("never prints a secret", () => {
		expect(outputs.length).toBeGreaterThan(10);
		for (const text of outputs) {
			expect(text).not.toContain(key.secret);
			expect(text).not.toContain(core.config.secrets.master);
		}
	});
});
