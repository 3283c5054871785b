/**
 * The real REPL: moleculer-repl started by `openRepl` (lib/repl.ts) on an embedded node (no
 * TRANSPORTER: the mode `npm run repl` falls back to), fed command lines through its input stream.
 * The webhooks service polls only when woken (WEBHOOK_POLL_MS=0), so rows written here stay where
 * they are and the `outbox` answer is exact.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import crypto from "node:crypto";
import { PassThrough } from "node:stream";
import nodeRepl = require("node:repl");
import { openRepl } from "../../../lib/repl";
import { startNode, TestNode } from "../../helpers/harness";
import { until } from "../../helpers/until";

describe("the support REPL (moleculer-repl) on an embedded node", () => {
	let node: TestNode;
	let server: nodeRepl.REPLServer;
	const input = new PassThrough();
	const printed: string[] = [];
	const home = fs.mkdtempSync(path.join(os.tmpdir(), "cpg-repl-home-"));
	const homeBefore = process.env.HOME;

	/** Types a line at the prompt; resolves with what the command printed. */
	const type = async (line: string) => {
		const before = printed.length;
		input.write(`${line}\n`);
		await until(`an answer to "${line}"`, () => printed.length > before);
		return printed.slice(before).join("\n");
	};

	beforeAll(async () => {
		node = await startNode({ services: ["webhooks", "organizations"], env: { WEBHOOK_POLL_MS: "0" } });
		const start = nodeRepl.start;
		// moleculer-repl starts Node's REPL on the process's stdin; this one reads our stream instead.
		jest.spyOn(nodeRepl, "start").mockImplementation(options => start({ ...(options as nodeRepl.ReplOptions), input, output: new PassThrough(), terminal: false }));
		process.env.HOME = home; // the REPL's history file
		server = openRepl(node.broker, text => printed.push(text));
	});

	afterAll(async () => {
		// Closing the REPL would stop the broker and exit the process (moleculer-repl's exit handler).
		server?.removeAllListeners("exit");
		server?.close();
		jest.restoreAllMocks();
		process.env.HOME = homeBefore;
		await node?.stop();
		fs.rmSync(home, { recursive: true, force: true });
	});

	it("starts moleculer-repl with the support commands registered", () => {
		expect(nodeRepl.start).toHaveBeenCalledTimes(1);
		expect(node.broker.options.replOptions?.customCommands?.map(c => c.command)).toEqual([
			"intent [words...]",
			"link [words...]",
			"tx [words...]",
			"reversals [words...]",
			"watchers [words...]",
			"webhooks [words...]",
			"outbox [words...]",
		]);
	});

	it("answers `outbox` with the backlog per type and the oldest ages", async () => {
		// The dispatcher's start-up round has finished: nothing runs until woken.
		await node.broker.call("webhooks.drain");
		const { models, clock } = node.app;
		const now = clock.now();
		const ago = (ms: number) => new Date(now.getTime() - ms);
		const org = crypto.randomUUID();
		await models.OutboxEvent.bulkCreate([
			{ id: crypto.randomUUID(), type: "payment_intent.canceled", organizationId: org, apiKeyId: null, livemode: false, payload: {}, createdAt: ago(3_600_000), publishedAt: null },
			{ id: crypto.randomUUID(), type: "payment_intent.completed", organizationId: org, apiKeyId: null, livemode: false, payload: {}, createdAt: ago(60_000), publishedAt: null },
			{ id: crypto.randomUUID(), type: "payment_intent.completed", organizationId: org, apiKeyId: null, livemode: false, payload: {}, createdAt: ago(7_200_000), publishedAt: ago(7_000_000) },
		]);
		const delivery = (status: string, nextAttemptAt: Date | null, type = "payment_intent.completed") => ({
			id: crypto.randomUUID(),
			eventId: crypto.randomUUID(),
			kind: "event" as const,
			type,
			organizationId: org,
			apiKeyId: 1,
			userId: null,
			livemode: false,
			url: "https://shop.example/hooks?token=abc",
			body: "{}",
			status: status as "pending",
			attempts: status === "pending" ? 1 : 3,
			nextAttemptAt,
			leaseOwner: null,
			leaseToken: null,
			leaseUntil: null,
			lastStatusCode: status === "failed" ? 503 : null,
			lastError: null,
			createdAt: ago(600_000),
			updatedAt: ago(300_000),
			deliveredAt: null,
		});
		await models.WebhookDelivery.bulkCreate([
			delivery("pending", ago(300_000)),
			delivery("pending", new Date(now.getTime() + 60_000), "payment_intent.processing"),
			delivery("sending", null),
			delivery("failed", null),
		]);

		const text = await type("outbox");
		expect(text).toBe(
			[
				"Webhook backlog",
				"  outbox, not yet queued  2, oldest written 1 h ago",
				"    by type               payment_intent.canceled 1, payment_intent.completed 1",
				"  deliveries waiting      2 (1 due now, oldest due 5 min ago)",
				"    by type               payment_intent.completed 1, payment_intent.processing 1",
				"  being sent              1",
				"  failed, last 24 h       1",
			].join("\n"),
		);
		expect(await type("webhooks failed")).toMatch(/: 1 of 1, newest first\n.*\n\s+\S+\s+\S+\s+\S+\s+1\s+payment_intent\.completed\s+3\s+HTTP 503\s+https:\/\/shop\.example\/hooks\?…\nSend one again with/);
	});

	it("refuses bad input with one line, and a missing service by name", async () => {
		expect(await type("intent pi_1")).toBe('"pi_1" is not a payment intent id (a UUID such as 0b7f6c1e-3f0a-4d8e-9c55-2a1b3c4d5e6f)');
		expect(await type("webhooks failed --limit 1000")).toBe("--limit takes a number from 1 to 100");
		// This node runs no intents service.
		expect(await type(`intent ${crypto.randomUUID()}`)).toBe("The intents service is not reachable from this node: are its nodes running, with the same TRANSPORTER and NAMESPACE as this REPL?");
	});
});
