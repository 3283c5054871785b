/**
 * The support staff's REPL commands (docs/operations.md), each a function of a broker and the
 * command's words that answers text: `intent`, `link`, `tx`, `reversals`, `watchers` (and
 * `watchers rewind`), `webhooks failed`, `webhooks redeliver`, `outbox`. The broker may run no service at all (the
 * REPL-only node, lib/repl.ts): data comes from the core services' internal `*.support.*`
 * actions over the transporter. Bad input is refused with one sentence before any call; a
 * failure anywhere becomes one line (`runSupportCommand`), never a stack trace.
 * lib/repl.ts registers them with moleculer-repl.
 */
import type { ServiceBroker } from "moleculer";
import type { SupportCheckout, SupportIntentDetails, SupportLinkDetails, SupportReversal, SupportTransaction } from "../payments/support";
import type { TokenWithNetworkView } from "../networks/view";
import type { SupportDeliveryWithAttempts, SupportFailedDeliveries, SupportOutboxBacklog } from "../webhooks/support";
import type { WatcherStatus } from "../watchers/runner";
import type { SupportCursor, SupportRewind, SupportTransfer } from "../watchers/store";
import type { ShareView } from "../watchers/balancer";
import { age, fields, NONE, orNone, plural, table } from "./format";
import { checkoutIdOf, isHash, isUuid, slugOf } from "./params";

/** A refusal of the command's input: shown as it is. */
export class SupportInputError extends Error {
	constructor(message: string) {
		super(message);
		this.name = "SupportInputError";
	}
}

const CALL_TIMEOUT_MS = 15_000;
const FAILED_DEFAULT = 20;
const FAILED_MAX = 100;

/** The words after the command name, split into operands and `--flags` (`--limit 5`, `--limit=5`, `--yes`). */
export interface CommandArgs {
	operands: string[];
	flags: Record<string, string | true>;
}

/** Splits a command's words; `valueFlags` take the next word as their value. */
export function splitArgs(words: readonly string[], valueFlags: readonly string[] = []): CommandArgs {
	const out: CommandArgs = { operands: [], flags: {} };
	for (let i = 0; i < words.length; i++) {
		const word = String(words[i]);
		if (!word.startsWith("--")) {
			out.operands.push(word);
			continue;
		}
		const [name, inline] = word.slice(2).split(/=(.*)/s, 2);
		if (inline !== undefined) out.flags[name] = inline;
		else if (valueFlags.includes(name) && i + 1 < words.length && !String(words[i + 1]).startsWith("--")) out.flags[name] = String(words[++i]);
		else out.flags[name] = true;
	}
	return out;
}

function expectArgs(args: CommandArgs, usage: string, opts: { min: number; max: number; flags?: string[] }): void {
	const unknown = Object.keys(args.flags).filter(f => !(opts.flags ?? []).includes(f));
	if (unknown.length) throw new SupportInputError(`Unknown option --${unknown[0]}. Usage: ${usage}`);
	if (args.operands.length < opts.min) throw new SupportInputError(`Missing argument. Usage: ${usage}`);
	if (args.operands.length > opts.max) throw new SupportInputError(`Too many arguments. Usage: ${usage}`);
}

function call<T>(broker: ServiceBroker, action: string, params: object = {}, opts: { nodeID?: string } = {}): Promise<T> {
	return broker.call(action, params, { timeout: CALL_TIMEOUT_MS, ...opts }) as Promise<T>;
}

function codeOf(err: unknown): number | undefined {
	const code = (err as { code?: unknown })?.code;
	return typeof code === "number" ? code : undefined;
}

/** The action's "not found" (a 404 client error; not Moleculer's own 404, a missing service) becomes the command's sentence about the unknown id. */
async function orUnknown<T>(promise: Promise<T>, message: string): Promise<T> {
	try {
		return await promise;
	} catch (err) {
		if (codeOf(err) === 404 && (err as Error).name === "MoleculerClientError") throw new SupportInputError(message);
		throw err;
	}
}

function requireUuid(value: string, what: string): string {
	if (!isUuid(value)) throw new SupportInputError(`"${value}" is not ${what} (a UUID such as 0b7f6c1e-3f0a-4d8e-9c55-2a1b3c4d5e6f)`);
	return value.toLowerCase();
}

/**
 * One line for any failure: a refusal as it is; a service not in the cluster, a timeout, a
 * validation or client error (4xx) by its message; anything else "Failed: <message>".
 */
export function failureLine(err: unknown): string {
	const e = err as { name?: string; message?: string; data?: { action?: string } | Array<{ message?: string }> };
	const message = e?.message ?? String(err);
	if (e?.name === "SupportInputError") return message;
	if (e?.name === "ServiceNotFoundError" || e?.name === "ServiceNotAvailableError") {
		const action = (e.data as { action?: string } | undefined)?.action ?? "";
		const service = action.split(".")[0] || "a needed";
		return `The ${service} service is not reachable from this node: are its nodes running, with the same TRANSPORTER and NAMESPACE as this REPL?`;
	}
	if (e?.name === "RequestTimeoutError") return `No answer within ${CALL_TIMEOUT_MS / 1000} s (${message}); try again, and check the nodes' logs`;
	if (e?.name === "ValidationError" && Array.isArray(e.data) && e.data[0]?.message) return `Invalid input: ${e.data[0].message}`;
	const code = codeOf(err);
	if (code !== undefined && code >= 400 && code < 500) return message;
	return `Failed: ${message.split("\n")[0]}`;
}

/** Runs a command; whatever happens, text comes back. */
export async function runSupportCommand(run: () => Promise<string>): Promise<string> {
	try {
		return await run();
	} catch (err) {
		return failureLine(err);
	}
}

/** Token and network names for the ids in a payment, looked up once per command. */
class Names {
	private tokens = new Map<string, Promise<TokenWithNetworkView | null>>();

	constructor(private readonly broker: ServiceBroker) {}

	private token(id: string): Promise<TokenWithNetworkView | null> {
		let hit = this.tokens.get(id);
		if (!hit) {
			hit = call<TokenWithNetworkView>(this.broker, "networks.getToken", { id }).catch(() => null);
			this.tokens.set(id, hit);
		}
		return hit;
	}

	/** "USDC on Ethereum Sepolia", or the token id when it cannot be named. */
	async tokenOn(id: string): Promise<string> {
		const t = await this.token(id);
		return t ? `${t.symbol} on ${t.network.name}` : `token ${id}`;
	}

	async symbol(id: string): Promise<string> {
		return (await this.token(id))?.symbol ?? "";
	}
}

function deliveriesText(deliveries: SupportDeliveryWithAttempts[], events: Array<{ id: string; type: string; createdAt: string }>): string {
	if (events.length === 0) return "  none";
	const lines: string[] = [];
	for (const event of events) {
		const mine = deliveries.filter(d => d.eventId === event.id);
		if (mine.length === 0) {
			lines.push(`  ${event.type}  event ${event.id}  ${event.createdAt}  no delivery (no webhook URL on the API key, or not relayed yet: see \`outbox\`)`);
			continue;
		}
		for (const d of mine) {
			const last = d.lastStatusCode !== null ? `HTTP ${d.lastStatusCode}` : orNone(d.lastError);
			lines.push(`  ${d.type}  event ${d.eventId}  delivery ${d.id}  ${d.status}  ${plural(d.attempts, "attempt")}  last: ${d.status === "delivered" ? "HTTP 200" : last}  -> ${d.url}`);
			if (d.status === "pending" && d.nextAttemptAt) lines.push(`      next attempt ${d.nextAttemptAt}`);
			for (const a of d.attemptLog) {
				const answer = a.statusCode !== null ? `HTTP ${a.statusCode}` : "no answer";
				lines.push(`      #${a.attempt}  ${a.at}  ${answer}${a.durationMs !== null ? `  ${a.durationMs} ms` : ""}${a.success ? "" : a.error ? `  ${a.error}` : ""}`);
			}
		}
	}
	return lines.join("\n");
}

async function deliveriesOf(broker: ServiceBroker, eventIds: string[]): Promise<SupportDeliveryWithAttempts[]> {
	if (eventIds.length === 0) return [];
	return call<SupportDeliveryWithAttempts[]>(broker, "webhooks.support.deliveries", { eventIds });
}

/** ", 1 REVERSED" when a deep reorg orphaned credited transfers of the checkout. */
function reversedNote(tx: SupportTransaction): string {
	return tx.amountReversed !== "0" ? `, ${tx.amountReversed} REVERSED` : "";
}

async function checkoutLine(names: Names, tx: SupportTransaction): Promise<string[]> {
	const symbol = await names.symbol(tx.payerTokenId);
	const confirming = tx.amountConfirming !== "0" ? `, ${tx.amountConfirming} confirming (${orNone(tx.confirmations)} of ${orNone(tx.requiredConfirmations)})` : "";
	return [tx.id, tx.status, `${tx.amountReceived} of ${tx.totalAmount} ${symbol}${confirming}${reversedNote(tx)}`, await names.tokenOn(tx.payerTokenId), orNone(tx.hash), tx.createdAt ?? NONE];
}

async function checkoutsTable(names: Names, txs: SupportTransaction[]): Promise<string> {
	if (txs.length === 0) return "  none (no checkout opened yet)";
	return table(["id", "status", "received", "token", "hash", "opened"], await Promise.all(txs.map(tx => checkoutLine(names, tx))));
}

/** `intent <id>`: the intent with its state, amounts, link, checkouts and webhook events with their deliveries. */
export async function intentCommand(broker: ServiceBroker, words: readonly string[]): Promise<string> {
	const usage = "intent <intent id>";
	const args = splitArgs(words);
	expectArgs(args, usage, { min: 1, max: 1 });
	const id = requireUuid(args.operands[0], "a payment intent id");
	const found = await orUnknown(call<SupportIntentDetails>(broker, "intents.support.get", { id }), `No payment intent ${id}`);
	const names = new Names(broker);
	const { intent, link } = found;
	const deliveries = await deliveriesOf(broker, found.events.map(e => e.id));
	return [
		`Payment intent ${intent.id}  ${intent.status}  (${intent.mode})`,
		fields([
			["organization", intent.organizationId],
			["amount", `${intent.amount} ${intent.currency}`],
			["to pay", `${intent.tokenAmount} ${await names.tokenOn(intent.tokenId)}`],
			["amount in USD", intent.amountUsd],
			["description", intent.description],
			["API key", intent.apiKeyId],
			["pay page", link ? `${link.payPageUrl}  (link ${link.id}, ${link.status})` : intent.paymentLinkId],
			["latest checkout", intent.latestTransactionId],
			["created", intent.createdAt],
			["updated", intent.updatedAt],
			["expires", intent.expiresAt],
			["succeeded", intent.succeededAt],
			["reversed", intent.reversal ? `${intent.reversal.amount} ${intent.reversal.currency} on checkout ${intent.reversal.transactionId} (tx ${intent.reversal.hash} orphaned by a reorg, ${intent.reversal.reversedAt}; see: tx ${intent.reversal.transactionId})` : null],
			["canceled", intent.canceledAt ? `${intent.canceledAt} (${orNone(intent.cancellationReason)})` : null],
		]),
		"",
		`Checkouts (${found.transactions.length})`,
		await checkoutsTable(names, found.transactions),
		"",
		`Webhook events (${found.events.length})`,
		deliveriesText(deliveries, found.events),
	].join("\n");
}

/** `link <id|slug|pay-page URL>`: a payment link with its checkouts (and its intent's id, for `intent`). */
export async function linkCommand(broker: ServiceBroker, words: readonly string[]): Promise<string> {
	const usage = "link <link id | pl_ slug | pay-page URL>";
	const args = splitArgs(words);
	expectArgs(args, usage, { min: 1, max: 1 });
	const ref = args.operands[0];
	const slug = slugOf(ref);
	if (!slug && !isUuid(ref)) throw new SupportInputError(`"${ref}" is not a link id (UUID), a pay-page slug (pl_…) or a pay-page URL`);
	const params = slug ? { slug } : { id: ref.toLowerCase() };
	const found = await orUnknown(call<SupportLinkDetails>(broker, "links.support.get", params), `No payment link ${slug ?? ref}`);
	const names = new Names(broker);
	const { link } = found;
	return [
		`Payment link ${link.id}  ${link.status}  (${link.mode})${link.deletedAt ? `  deleted ${link.deletedAt}` : ""}`,
		fields([
			["organization", link.organizationId],
			["title", link.title],
			["amount", `${link.amount} ${await names.tokenOn(link.tokenId)}`],
			["pay page", link.payPageUrl],
			["intent", link.intentId ? `${link.intentId}  (see: intent ${link.intentId})` : "none (a payment link of its own)"],
			["single use", link.singleUse ? "yes" : "no"],
			["created", link.createdAt],
			["expires", link.expiresAt],
		]),
		"",
		`Checkouts (${found.transactions.length})`,
		await checkoutsTable(names, found.transactions),
	].join("\n");
}

/** A credit's reorg history: reversed (since when), or credited again after reversals. */
function reorgState(k: { reversedAt: string | null; reversals: number }): string {
	if (k.reversedAt) return `REVERSED ${k.reversedAt}`;
	return k.reversals > 0 ? `mined again, credited again (reversed ${k.reversals}x before)` : NONE;
}

async function checkoutText(broker: ServiceBroker, names: Names, c: SupportCheckout, deliveries: SupportDeliveryWithAttempts[]): Promise<string> {
	const tx = c.transaction;
	const symbol = await names.symbol(tx.payerTokenId);
	const detections = c.detections.length
		? table(
				["tx hash", "index", "block", "amount", "confirmations", "status"],
				c.detections.map(d => [d.txHash, String(d.logIndex), String(d.blockNumber), `${d.amount}${d.counted ? "" : " (other token, not counted)"}`, String(d.confirmations), d.status]),
			)
		: "  none";
	const credits = c.credits.length
		? table(
				["tx hash", "index", "amount", "confirmations", "credited at", "reorg"],
				c.credits.map(k => [k.txHash, String(k.logIndex), `${k.amount}${k.counted ? "" : " (not counted)"}${k.simulated ? " (simulated)" : ""}`, orNone(k.confirmations), orNone(k.createdAt), reorgState(k)]),
			)
		: "  none";
	return [
		`Transaction ${tx.id}  ${tx.status}  (${tx.mode})${tx.simulated ? "  simulated" : ""}`,
		fields([
			["organization", tx.organizationId],
			["intent", tx.intentId ? `${tx.intentId}  (see: intent ${tx.intentId})` : "none (a payment link checkout)"],
			["payment link", tx.paymentLinkId],
			["pays with", await names.tokenOn(tx.payerTokenId)],
			["deposit address", tx.depositAddress],
			["due", `${tx.totalAmount} ${symbol} (amount ${tx.amount})`],
			["received", `${tx.amountReceived} ${symbol}${tx.overpaidAmount !== "0" ? `, overpaid ${tx.overpaidAmount}` : ""}`],
			["confirming", tx.amountConfirming !== "0" ? `${tx.amountConfirming} ${symbol}, ${orNone(tx.confirmations)} of ${orNone(tx.requiredConfirmations)} confirmations` : null],
			["reversed", tx.amountReversed !== "0" ? `${tx.amountReversed} ${symbol} credited, then orphaned by a reorg deeper than the required confirmations (${orNone(tx.reversedAt)}); not in "received", taken out of the ledger` : null],
			["hash", tx.hash],
			["opened", tx.createdAt],
			["expires", tx.expiresAt],
			["completed", tx.completedAt],
		]),
		"",
		`Detections (${c.detections.length})`,
		detections,
		`Credits (${c.credits.length})`,
		credits,
		`Webhook deliveries`,
		tx.intentId ? deliveriesText(deliveries, c.events) : "  none (payment link checkouts send no webhooks)",
	].join("\n");
}

const REVERSALS_DEFAULT = 20;
const REVERSALS_MAX = 200;

/** `reversals [--limit n]`: credited transfers a deep reorg orphaned, newest first, with their checkouts. */
export async function reversalsCommand(broker: ServiceBroker, words: readonly string[]): Promise<string> {
	const usage = `reversals [--limit 1..${REVERSALS_MAX}]`;
	const args = splitArgs(words, ["limit"]);
	expectArgs(args, usage, { min: 0, max: 0, flags: ["limit"] });
	let limit = REVERSALS_DEFAULT;
	if (args.flags.limit !== undefined) {
		const given = String(args.flags.limit);
		if (!/^\d{1,3}$/.test(given) || Number(given) < 1 || Number(given) > REVERSALS_MAX) throw new SupportInputError(`--limit takes a number from 1 to ${REVERSALS_MAX}`);
		limit = Number(given);
	}
	const { reversals } = await call<{ reversals: SupportReversal[] }>(broker, "transactions.support.reversals", { limit });
	if (reversals.length === 0) return "No credit was ever reversed by a reorg.";
	const names = new Names(broker);
	const rows = await Promise.all(
		reversals.map(async r => [
			reorgState(r),
			await names.tokenOn(r.tokenId),
			r.txHash,
			String(r.logIndex),
			`${r.amount}${r.counted ? "" : " (not counted)"}`,
			r.transactionId,
			r.transaction ? `${r.transaction.status}, received ${r.transaction.amountReceived}, reversed ${r.transaction.amountReversed}` : NONE,
			r.transaction?.organizationId ?? NONE,
		]),
	);
	return [
		`Credits reversed by a reorg deeper than the required confirmations: ${reversals.length}, newest first`,
		table(["state", "token", "tx hash", "index", "amount", "checkout", "checkout now", "organization"], rows),
		"Details: tx <checkout id>; raise REQUIRED_CONFIRMATIONS_<SLUG> for the network (docs/operations.md).",
	].join("\n");
}

/** Watcher services running in the cluster, with the nodes that run them. */
function watcherServices(broker: ServiceBroker): Map<string, string[]> {
	const list = broker.registry.getServiceList({ onlyAvailable: true, skipInternal: true }) as Array<{ name: string; nodeID: string }>;
	const out = new Map<string, string[]>();
	for (const s of list) {
		if (!s.name.startsWith("watcher-")) continue;
		out.set(s.name, [...(out.get(s.name) ?? []), s.nodeID]);
	}
	return out;
}

async function watcherTransfers(broker: ServiceBroker, hash: string): Promise<Array<SupportTransfer & { service: string }>> {
	const out: Array<SupportTransfer & { service: string }> = [];
	for (const name of watcherServices(broker).keys()) {
		const rows = await call<SupportTransfer[]>(broker, `${name}.support.transfers`, { txHash: hash });
		out.push(...rows.map(r => ({ ...r, service: name })));
	}
	return out;
}

/** `tx <id|hash>`: checkouts by our id or by a chain transaction hash, with detections, credits, deliveries and (by hash) what the watchers stored. */
export async function txCommand(broker: ServiceBroker, words: readonly string[]): Promise<string> {
	const usage = "tx <transaction id | chain transaction hash | pay-page checkout URL>";
	const args = splitArgs(words);
	expectArgs(args, usage, { min: 1, max: 1 });
	const ref = checkoutIdOf(args.operands[0]) ?? args.operands[0];
	const byId = isUuid(ref);
	if (!byId && !isHash(ref)) throw new SupportInputError(`"${ref}" is neither a transaction id (UUID), a chain transaction hash nor a checkout URL`);
	const found = await orUnknown(
		call<{ transactions: SupportCheckout[] }>(broker, "transactions.support.find", byId ? { id: ref.toLowerCase() } : { hash: ref }),
		`No transaction ${ref}`,
	);
	const seen = byId ? [] : await watcherTransfers(broker, ref);
	if (found.transactions.length === 0 && seen.length === 0) {
		throw new SupportInputError(`No checkout was paid by ${ref}, and no watcher stored a transfer with that hash (wrong network, or not read yet: see \`watchers\`)`);
	}
	const names = new Names(broker);
	const deliveries = await deliveriesOf(broker, found.transactions.flatMap(c => c.events.map(e => e.id)));
	const parts = await Promise.all(found.transactions.map(c => checkoutText(broker, names, c, deliveries)));
	if (!byId) {
		parts.push(
			seen.length
				? `Stored by the watchers (${seen.length})\n${table(
						["service", "network", "index", "block", "to", "amount", "status", "payments heard"],
						seen.map(s => [s.service, s.slug ?? s.networkId, String(s.logIndex), String(s.blockNumber), s.toAddress, s.amount, s.status, `${s.reported}${s.pending ? " (report pending)" : ""}`]),
					)}`
				: "Stored by the watchers: nothing with this hash",
		);
		if (found.transactions.length === 0) parts.unshift(`No checkout was credited or detected with ${ref}: the watchers stored it, but the payments side did not match it to a checkout (see "payments heard").`);
	}
	return parts.join("\n\n");
}

interface NetworkState {
	service: string;
	networkId: string;
	slug: string;
	cursor: SupportCursor | null;
	leader: { nodeID: string; status: WatcherStatus } | null;
	standbys: string[];
	silent: string[];
}

/** The node id in a watcher lease owner (`<nodeID>:<pid>:<random>`, lib/watchers/runner.ts). */
function ownerNode(owner: string): string {
	const parts = owner.split(":");
	return parts.length > 2 ? parts.slice(0, -2).join(":") : owner;
}

async function networkStates(broker: ServiceBroker): Promise<NetworkState[]> {
	const states = new Map<string, NetworkState>();
	const stateOf = (service: string, networkId: string, slug: string | null) => {
		let s = states.get(networkId);
		if (!s) {
			s = { service, networkId, slug: slug ?? networkId, cursor: null, leader: null, standbys: [], silent: [] };
			states.set(networkId, s);
		}
		if (slug) s.slug = slug;
		return s;
	};
	for (const [service, nodes] of watcherServices(broker)) {
		for (const cursor of await call<SupportCursor[]>(broker, `${service}.support.cursors`)) stateOf(service, cursor.networkId, cursor.slug).cursor = cursor;
		await Promise.all(
			nodes.map(async nodeID => {
				let statuses: WatcherStatus[];
				try {
					statuses = await call<WatcherStatus[]>(broker, `${service}.status`, {}, { nodeID });
				} catch {
					for (const s of states.values()) if (s.service === service) s.silent.push(nodeID);
					return;
				}
				for (const st of statuses) {
					const s = stateOf(service, st.networkId, st.slug);
					if (st.leader) s.leader = { nodeID, status: st };
					else s.standbys.push(nodeID);
				}
			}),
		);
	}
	return [...states.values()].sort((a, b) => a.slug.localeCompare(b.slug));
}

/** `watchers`: per network the leading node, head, cursor and lag; standbys; RPC state. */
async function watchersOverview(broker: ServiceBroker): Promise<string> {
	const services = watcherServices(broker);
	if (services.size === 0) return "No watcher service runs in this cluster (SERVICES with watcher-evm, watcher-bitcoin, ...).";
	const now = new Date();
	const states = await networkStates(broker);
	if (states.length === 0) return `Watcher services (${[...services.keys()].join(", ")}) follow no network: none is active with an RPC_URL_<SLUG> on their nodes.`;
	const rows = states.map(s => {
		const live = s.leader?.status;
		let leader: string;
		if (s.leader) leader = s.leader.nodeID;
		else if (s.cursor?.leaseOwner && s.cursor.leaseUntil && new Date(s.cursor.leaseUntil) > now) leader = `${ownerNode(s.cursor.leaseOwner)} (not answering)`;
		else leader = s.cursor?.leaseUntil ? `none (lease expired ${age(s.cursor.leaseUntil, now)})` : "none";
		const rpc = live ? (live.rpcDown ? "DOWN" : "ok") : NONE;
		const error = live?.lastError ? live.lastError.slice(0, 80) : "";
		return [s.slug, s.service.replace(/^watcher-/, ""), leader, orNone(live?.head), orNone(live?.cursor ?? s.cursor?.blockNumber), orNone(live?.lag), rpc, s.standbys.join(",") || NONE, error];
	});
	const silent = [...new Set(states.flatMap(s => s.silent))];
	// Each replica's fair share (docs/deployment.md "Load sharing"): what it leads against ceil(networks / replicas).
	const shares: string[][] = [];
	for (const [service, nodes] of services) {
		for (const nodeID of [...nodes].sort()) {
			const view = await call<ShareView>(broker, `${service}.share`, {}, { nodeID }).catch(() => null);
			const led = states.filter(s => s.service === service && s.leader?.nodeID === nodeID).map(s => s.slug);
			shares.push([service.replace(/^watcher-/, ""), nodeID, String(led.length), view ? String(view.share) : NONE, view ? String(view.replicas.length) : NONE, led.join(",") || NONE]);
		}
	}
	return [
		table(["network", "chain", "leader", "head", "cursor", "lag", "rpc", "standby", "last error"], rows),
		...(silent.length ? [`Not answering: ${silent.join(", ")}`] : []),
		"Head and lag come from the leader; without one, the cursor is the stored one.",
		"",
		table(["chain", "replica", "leads", "share", "replicas", "networks led"], shares),
		"Share: ceil(networks / live replicas of the service); a replica above it hands networks over (WATCHER_REBALANCE_MS).",
	].join("\n");
}

/** `watchers rewind <network> <block> [--yes]`: replay the blocks after `block`. Without --yes, says what it would do. */
async function rewind(broker: ServiceBroker, args: CommandArgs): Promise<string> {
	const usage = "watchers rewind <network slug> <block> [--yes]";
	expectArgs({ operands: args.operands.slice(1), flags: args.flags }, usage, { min: 2, max: 2, flags: ["yes"] });
	const [, network, blockText] = args.operands;
	if (!/^\d{1,15}$/.test(blockText)) throw new SupportInputError(`"${blockText}" is not a block number`);
	const block = Number(blockText);
	const states = await networkStates(broker);
	const state = states.find(s => s.slug === network || s.networkId === network);
	if (!state) {
		const known = states.map(s => s.slug).join(", ") || "none";
		throw new SupportInputError(`No watcher follows a network "${network}" (followed: ${known})`);
	}
	const cursor = state.leader?.status.cursor ?? state.cursor?.blockNumber ?? null;
	if (cursor === null) throw new SupportInputError(`${state.slug} has no cursor yet: nothing was read, nothing to replay`);
	if (block >= cursor) throw new SupportInputError(`Block ${block} is not before ${state.slug}'s cursor (block ${cursor}): a rewind only goes back`);
	const span = `blocks ${block + 1}..${cursor} (${cursor - block})`;
	if (args.flags.yes !== true) {
		return `Would rewind ${state.slug} from block ${cursor} to ${block}: ${span} are read again; transfers already stored are kept, missed ones are stored and credited. Run again with --yes to do it.`;
	}
	const done = await call<SupportRewind>(broker, `${state.service}.support.rewind`, { network: state.slug, block });
	return `Rewound ${done.slug} from block ${done.from} to ${done.to} (${done.hash}): the leader re-reads blocks ${done.to + 1}..${done.from} now; follow it with \`watchers\`.`;
}

/** `watchers` and `watchers rewind <network> <block> [--yes]`. */
export async function watchersCommand(broker: ServiceBroker, words: readonly string[]): Promise<string> {
	const args = splitArgs(words);
	if (args.operands[0] === "rewind") return rewind(broker, args);
	expectArgs(args, "watchers | watchers rewind <network slug> <block> [--yes]", { min: 0, max: 0 });
	return watchersOverview(broker);
}

/** `webhooks failed [orgId] [--limit n]`: failed deliveries, newest first. */
async function failed(broker: ServiceBroker, args: CommandArgs): Promise<string> {
	const usage = `webhooks failed [organization id] [--limit 1..${FAILED_MAX}]`;
	expectArgs({ operands: args.operands.slice(1), flags: args.flags }, usage, { min: 0, max: 1, flags: ["limit"] });
	let limit = FAILED_DEFAULT;
	if (args.flags.limit !== undefined) {
		const given = String(args.flags.limit);
		if (!/^\d{1,3}$/.test(given) || Number(given) < 1 || Number(given) > FAILED_MAX) throw new SupportInputError(`--limit takes a number from 1 to ${FAILED_MAX}`);
		limit = Number(given);
	}
	const orgRef = args.operands[1];
	let scope = "any organization";
	let organizationId: string | undefined;
	if (orgRef !== undefined) {
		organizationId = requireUuid(orgRef, "an organization id");
		const org = await orUnknown(call<{ id: string; name: string; mode: string }>(broker, "organizations.support.get", { id: organizationId }), `No organization ${organizationId}`);
		scope = `organization ${org.id} (${org.name}, ${org.mode})`;
	}
	const res = await call<SupportFailedDeliveries>(broker, "webhooks.support.failed", { limit, ...(organizationId ? { organizationId } : {}) });
	if (res.total === 0) return `No failed webhook deliveries in ${scope}.`;
	if (!organizationId) scope = "all organizations";
	const rows = res.deliveries.map(d => [d.id, orNone(d.updatedAt), d.organizationId, String(d.apiKeyId), d.type, String(d.attempts), d.lastStatusCode !== null ? `HTTP ${d.lastStatusCode}` : orNone(d.lastError), d.url]);
	return [
		`Failed webhook deliveries in ${scope}: ${res.deliveries.length} of ${res.total}, newest first`,
		table(["delivery", "failed at", "organization", "key", "event", "attempts", "last", "url"], rows),
		"Send one again with: webhooks redeliver <delivery>",
	].join("\n");
}

/** How long `webhooks redeliver` waits to report the new attempt's outcome. */
const REDELIVER_WAIT_MS = 10_000;

/** `webhooks redeliver <deliveryId>`: a failed delivery back on the queue; waits a little for the attempt. */
async function redeliver(broker: ServiceBroker, args: CommandArgs, waitMs: number): Promise<string> {
	expectArgs({ operands: args.operands.slice(1), flags: args.flags }, "webhooks redeliver <delivery id>", { min: 1, max: 1 });
	const id = requireUuid(args.operands[1], "a webhook delivery id");
	const { delivery: queued, attemptsBefore: before } = await orUnknown(
		call<{ delivery: SupportDeliveryWithAttempts; attemptsBefore: number }>(broker, "webhooks.support.redeliver", { id }),
		`No webhook delivery ${id}`,
	);
	const head = `Delivery ${id} (${queued.type}, event ${queued.eventId}) is queued again -> ${queued.url}`;
	const finished = (d: SupportDeliveryWithAttempts) => d.attempts > before && d.status !== "sending";
	const deadline = Date.now() + waitMs;
	let now = queued;
	while (!finished(now) && Date.now() < deadline) {
		await new Promise(r => setTimeout(r, 200));
		[now] = await call<SupportDeliveryWithAttempts[]>(broker, "webhooks.support.deliveries", { ids: [id] });
	}
	const latest = now.attemptLog[now.attemptLog.length - 1];
	const outcome =
		now.status === "delivered"
			? `delivered (attempt ${now.attempts}, HTTP 200)`
			: finished(now)
				? `attempt ${now.attempts} failed (${latest?.statusCode ? `HTTP ${latest.statusCode}` : orNone(latest?.error ?? now.lastError)}); it is ${now.status}${now.nextAttemptAt ? `, next attempt ${now.nextAttemptAt}` : ""}`
				: `not attempted yet (status ${now.status}): the webhooks service sends it within a poll; check later with \`webhooks failed\` or \`tx\``;
	return `${head}\nOutcome: ${outcome}`;
}

/** `webhooks failed [orgId]` and `webhooks redeliver <deliveryId>`. */
export async function webhooksCommand(broker: ServiceBroker, words: readonly string[], opts: { redeliverWaitMs?: number } = {}): Promise<string> {
	const args = splitArgs(words, ["limit"]);
	const sub = args.operands[0];
	if (sub === "failed") return failed(broker, args);
	if (sub === "redeliver") return redeliver(broker, args, opts.redeliverWaitMs ?? REDELIVER_WAIT_MS);
	throw new SupportInputError(sub === undefined ? "Missing argument. Usage: webhooks failed [organization id] | webhooks redeliver <delivery id>" : `Unknown webhooks command "${sub}": use webhooks failed [organization id] or webhooks redeliver <delivery id>`);
}

/** `outbox`: events not yet queued for delivery, deliveries waiting or being sent, per type, with the oldest. */
export async function outboxCommand(broker: ServiceBroker, words: readonly string[]): Promise<string> {
	expectArgs(splitArgs(words), "outbox", { min: 0, max: 0 });
	const b = await call<SupportOutboxBacklog>(broker, "webhooks.support.outbox");
	const now = new Date(b.now);
	const byType = (counts: Record<string, number>) => {
		const entries = Object.entries(counts).sort(([x], [y]) => x.localeCompare(y));
		return entries.length ? entries.map(([type, n]) => `${type} ${n}`).join(", ") : NONE;
	};
	return [
		"Webhook backlog",
		fields([
			["outbox, not yet queued", `${b.outbox.unpublished}${b.outbox.oldestAt ? `, oldest written ${age(b.outbox.oldestAt, now)}` : ""}`],
			["  by type", byType(b.outbox.byType)],
			["deliveries waiting", `${b.deliveries.pending} (${b.deliveries.due} due now${b.deliveries.oldestDueAt ? `, oldest due ${age(b.deliveries.oldestDueAt, now)}` : ""})`],
			["  by type", byType(b.deliveries.pendingByType)],
			["being sent", b.deliveries.sending],
			["failed, last 24 h", b.deliveries.failedLast24h],
		]),
	].join("\n");
}

/** The commands by name, for lib/repl.ts (moleculer-repl) and tests. */
export const SUPPORT_COMMANDS: Array<{ name: string; usage: string; description: string; run(broker: ServiceBroker, words: readonly string[]): Promise<string> }> = [
	{ name: "intent", usage: "intent <id>", description: "A payment intent: state, amounts, checkouts, webhook deliveries", run: intentCommand },
	{ name: "link", usage: "link <id|slug|url>", description: "A payment link (by id, pl_ slug or pay-page URL) and its checkouts", run: linkCommand },
	{ name: "tx", usage: "tx <id|hash|checkout URL>", description: "A checkout by our id, a chain tx hash or its pay-page URL: detections, credits, webhook deliveries", run: txCommand },
	{ name: "reversals", usage: "reversals [--limit n]", description: "Credits a reorg deeper than the required confirmations reversed (and whether they were mined again)", run: reversalsCommand },
	{ name: "watchers", usage: "watchers [rewind <network> <block> [--yes]]", description: "Per network: leader node, head, cursor, lag; `rewind` replays blocks", run: watchersCommand },
	{ name: "webhooks", usage: "webhooks failed [orgId] [--limit n] | webhooks redeliver <deliveryId>", description: "Failed webhook deliveries; send one again", run: (broker, words) => webhooksCommand(broker, words) },
	{ name: "outbox", usage: "outbox", description: "Webhook backlog: events not yet queued, deliveries waiting, per type", run: outboxCommand },
];
