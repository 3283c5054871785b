/**
 * The support staff's actions (`*.support.*`, see docs/operations.md) see every organization's
 * data: they must stay internal. On a node with every service, the gateway publishes none of
 * them, and the paths one might try answer 404.
 */
import crypto from "node:crypto";
import { startNode, TestNode } from "../helpers/harness";
import { createUserWithToken } from "../helpers/users";

const SUPPORT_ACTIONS = [
	"intents.support.get",
	"links.support.get",
	"transactions.support.find",
	"transactions.support.reversals",
	"organizations.support.get",
	"webhooks.support.deliveries",
	"webhooks.support.failed",
	"webhooks.support.redeliver",
	"webhooks.support.outbox",
	"watcher-evm.support.cursors",
	"watcher-evm.support.transfers",
	"watcher-evm.support.rewind",
	"watcher-bitcoin.support.cursors",
	"watcher-bitcoin.support.transfers",
	"watcher-bitcoin.support.rewind",
	"watcher-solana.support.cursors",
	"watcher-solana.support.transfers",
	"watcher-solana.support.rewind",
	"watcher-ton.support.cursors",
	"watcher-ton.support.transfers",
	"watcher-ton.support.rewind",
	"watcher-polkadot.support.cursors",
	"watcher-polkadot.support.transfers",
	"watcher-polkadot.support.rewind",
	"sweeper-evm.support.clearHold",
	"sweeper-bitcoin.support.clearHold",
	"sweeper-evm.support.resolveStalled",
	"sweeper-solana.support.clearHold",
	"sweeper-solana.support.resolveStalled",
	"sweeper-ton.support.clearHold",
	"sweeper-ton.support.resolveStalled",
	"sweeper-polkadot.support.clearHold",
	"sweeper-polkadot.support.resolveStalled",
	"sweeper-bitcoin.support.resolveStalled",
];

describe("support actions are not reachable through the gateway", () => {
	let node: TestNode;
	beforeAll(async () => {
		node = await startNode();
	}, 60_000);
	afterAll(async () => node?.stop());

	it("are internal: callable in the cluster, never published", () => {
		const actions = node.broker.registry.getActionList({ onlyLocal: true, skipInternal: true, withEndpoints: false }) as unknown as Array<{ name: string; action: { visibility?: string; rest?: unknown; auth?: string } }>;
		const support = actions.filter(a => a.name.includes(".support."));
		expect(support.map(a => a.name).sort()).toEqual([...SUPPORT_ACTIONS].sort());
		for (const a of support) expect({ name: a.name, visibility: a.action.visibility, rest: a.action.rest, auth: a.action.auth }).toEqual({ name: a.name, visibility: "public", rest: undefined, auth: "admin" });

		const api = node.broker.getLocalService("api") as unknown as { aliases: Array<{ action?: string; method: string; fullPath: string }> };
		expect(api.aliases.filter(a => typeof a.action === "string").length).toBeGreaterThan(50);
		expect(api.aliases.filter(a => typeof a.action === "string" && a.action.includes(".support.")).map(a => `${a.method} ${a.fullPath}`)).toEqual([]);
	});

	it("answer 404 at the paths one might guess, also for an admin", async () => {
		const admin = await createUserWithToken(node, { role: "admin" });
		const id = crypto.randomUUID();
		const guesses: Array<[string, string]> = [
			["GET", `/intents/support/get?id=${id}`],
			["POST", "/intents.support.get"],
			["POST", "/intents/support.get"],
			["GET", `/transactions/support/find?id=${id}`],
			["POST", "/webhooks/support/redeliver"],
			["POST", "/webhooks.support.redeliver"],
			["GET", "/webhooks/support/failed"],
			["GET", "/webhooks/support/outbox"],
			["POST", "/watcher-evm/support/rewind"],
			["GET", `/organizations/support/get?id=${id}`],
		];
		for (const [method, path] of guesses) {
			const res = await node.http(method, path, { token: admin.token, ...(method === "POST" ? { body: { id, network: "ethereum", block: 1 } } : {}) });
			expect({ method, path, status: res.status }).toEqual({ method, path, status: 404 });
		}
	});
});
