/**
 * The withdrawals ledger's database work (docs/withdrawals.md): exact sums on both backends, the
 * account lock, idempotent appends.
 */
import { Op, QueryTypes, type Transaction as DbTx, type WhereOptions } from "sequelize";
import type { App } from "../app";
import { inTransaction } from "../db";
import { uuid } from "../ids";
import { normalizeDecimal } from "../money";
import { isUniqueViolation } from "../payments/store";
import type { OrganizationMode } from "../networks/mode";
import type { LedgerEntry } from "../../models/withdrawal.model";
import { FUNDS_SWEEP_KINDS, OPEN_SWEEP_STATUSES } from "../../models/sweep.model";
import { accountBalance, accountKey, AccountBalance, KindSum, LedgerKind } from "./ledger";

/** refType of reversal / recredit entries (lib/withdrawals/reversals.ts), refId `<transactionId>:<creditId>:<generation>`: the checkout's id comes first. */
export const REVERSAL_REF_TYPE = "transaction_credit";

export interface Account {
	organizationId: string;
	networkId: string;
	tokenId: string;
}

export interface NewEntry extends Account {
	mode: OrganizationMode;
	kind: LedgerKind;
	/** Signed token units. */
	amount: string;
	refType: string;
	refId: string;
}

/**
 * Locks the account's row for the rest of the DB transaction, creating it on first use. Two first
 * uses at once: one insert fails on the primary key and its transaction runs again (retryOn).
 */
export async function lockAccount(app: Pick<App, "models" | "clock">, t: DbTx, account: Account): Promise<void> {
	const { models, clock } = app;
	const id = accountKey(account.organizationId, account.networkId, account.tokenId);
	const row = await models.LedgerAccount.findByPk(id, { transaction: t, lock: t.LOCK.UPDATE });
	if (!row) await models.LedgerAccount.create({ id, ...account, createdAt: clock.now() }, { transaction: t });
}

/** Two first uses of an account at once (MariaDB names only PRIMARY, not the table: any unique failure but an entry's). */
export const isAccountRace = (err: unknown) => (err as { name?: string })?.name === "SequelizeUniqueConstraintError" && !isUniqueViolation(err, "ledger_entries");

/** The amounts of an account's entries (one exact Σ on MySQL). */
function entriesOf(app: LedgerDb, account: Account, t?: DbTx): Promise<string[]> {
	return exactSum(app, "e.amount", "FROM ledger_entries e WHERE e.organizationId = :organizationId AND e.networkId = :networkId AND e.tokenId = :tokenId", { ...account }, t);
}

/**
 * Σ of `column` over the rows of `from` (FROM ... WHERE ..., named replacements), exact: a DECIMAL
 * SUM on MySQL; on SQLite (money is TEXT, its SUM a float) the values are read and summed with
 * decimal.js by the caller (accountBalance).
 */
async function exactSum(app: LedgerDb, column: string, from: string, replacements: Record<string, unknown>, t?: DbTx): Promise<string[]> {
	const { sequelize } = app;
	if (sequelize.getDialect() === "mysql") {
		const rows = await sequelize.query<{ total: unknown }>(`SELECT SUM(${column}) AS total ${from}`, { replacements, type: QueryTypes.SELECT, transaction: t });
		return [normalizeDecimal(rows[0]?.total) ?? "0"];
	}
	const rows = await sequelize.query<{ amount: unknown }>(`SELECT ${column} AS amount ${from}`, { replacements, type: QueryTypes.SELECT, transaction: t });
	return rows.map(r => normalizeDecimal(r.amount) ?? "0");
}

/** What balanceOf reads: the database (a withdrawals node's App, or a sweeper's models and sequelize). */
export type LedgerDb = Pick<App, "sequelize">;

// Stalled sweeps included: their funds stay held until an operator resolves them.
const OPEN_SWEEP = `s.status IN (${OPEN_SWEEP_STATUSES.map(k => `'${k}'`).join(", ")})`;
const FUNDS_KINDS = FUNDS_SWEEP_KINDS.map(k => `'${k}'`).join(", ");

export interface BalanceOptions {
	/**
	 * The account's settled checkouts that have their own withdrawal address for the network's
	 * chain (transactions.ownAddressCheckouts): their funds belong to that address, never to a
	 * request, so they are held until swept.
	 */
	ownAddressTransactions?: readonly string[];
}

/**
 * What the account holds (Σ entries), what pending requests not yet being sent reserve, what is
 * held (funds in sweeps in flight, requests being sent included; funds of checkouts with their
 * own withdrawal address, until swept), and what is left for a new request (docs/withdrawals.md
 * "Available"). Read under the account's lock when it decides something (createRequest, the
 * sweeper's planner).
 */
export async function balanceOf(app: LedgerDb, account: Account, t?: DbTx, opts: BalanceOptions = {}): Promise<AccountBalance> {
	const { organizationId, networkId, tokenId } = account;
	const ids = { organizationId, networkId, tokenId };
	// A request whose send is in flight is held by its sweep's items (a native send: the whole deposit, fee included).
	const reserved = exactSum(
		app,
		"r.amount",
		`FROM withdrawal_requests r WHERE r.organizationId = :organizationId AND r.sourceNetworkId = :networkId AND r.tokenId = :tokenId AND r.status = 'pending'
		 AND NOT EXISTS (SELECT 1 FROM sweeps s WHERE s.requestId = r.id AND ${OPEN_SWEEP})`,
		ids,
		t,
	);
	const inFlight = exactSum(
		app,
		"i.amount",
		`FROM sweep_items i JOIN sweeps s ON s.id = i.sweepId WHERE i.organizationId = :organizationId AND i.tokenId = :tokenId AND s.networkId = :networkId AND i.openKey IS NOT NULL AND ${OPEN_SWEEP}`,
		ids,
		t,
	);
	const own = opts.ownAddressTransactions ?? [];
	// Credits (less reversals, plus recredits: lib/withdrawals/reversals.ts) of checkouts with their
	// own address not swept yet (in flight: counted above).
	const checkout = `(CASE WHEN e.refType = 'transaction' THEN e.refId ELSE SUBSTR(e.refId, 1, 36) END)`;
	const earmarked = own.length
		? exactSum(
				app,
				"e.amount",
				`FROM ledger_entries e WHERE e.organizationId = :organizationId AND e.networkId = :networkId AND e.tokenId = :tokenId
				 AND e.kind IN ('credit', 'reversal', 'recredit') AND e.refType IN ('transaction', '${REVERSAL_REF_TYPE}') AND ${checkout} IN (:own)
				 AND NOT EXISTS (SELECT 1 FROM sweep_items i JOIN sweeps s ON s.id = i.sweepId WHERE i.transactionId = ${checkout} AND i.tokenId = e.tokenId
				   AND (i.openKey IS NOT NULL OR (s.status = 'confirmed' AND s.requestId IS NULL AND s.kind IN (${FUNDS_KINDS}))))`,
				{ ...ids, own: [...own] },
				t,
			)
		: Promise.resolve([] as string[]);
	const [entries, pending, flight, mine] = await Promise.all([entriesOf(app, ids, t), reserved, inFlight, earmarked]);
	return accountBalance(entries, pending, [...flight, ...mine]);
}

/** Per (network, token, kind) sums of an organization's entries. */
export async function kindSums(app: App, organizationId: string): Promise<KindSum[]> {
	const { models, sequelize } = app;
	if (sequelize.getDialect() === "mysql") {
		const rows = await sequelize.query<{ networkId: string; tokenId: string; kind: LedgerKind; total: unknown }>(
			"SELECT networkId, tokenId, kind, SUM(amount) AS total FROM ledger_entries WHERE organizationId = :organizationId GROUP BY networkId, tokenId, kind",
			{ replacements: { organizationId }, type: QueryTypes.SELECT },
		);
		return rows.map(r => ({ networkId: r.networkId, tokenId: r.tokenId, kind: r.kind, amount: normalizeDecimal(r.total) ?? "0" }));
	}
	const rows = await models.LedgerEntry.findAll({ where: { organizationId }, attributes: ["networkId", "tokenId", "kind", "amount"], raw: true });
	return rows.map(r => ({ networkId: r.networkId, tokenId: r.tokenId, kind: r.kind, amount: normalizeDecimal(r.amount) ?? "0" }));
}

export interface AppendResult {
	recorded: boolean;
	duplicate: boolean;
	entry: LedgerEntry;
}

/**
 * Appends an entry under its account's lock. The UNIQUE (kind, refType, refId) is the arbiter: a
 * source event reported again (another node, a retry, the poll after the event) changes nothing
 * and answers the entry recorded first.
 */
export async function appendEntry(app: App, entry: NewEntry, within?: (t: DbTx) => Promise<void>): Promise<AppendResult> {
	const { models, sequelize, clock } = app;
	try {
		const row = await inTransaction(
			sequelize,
			async t => {
				await lockAccount(app, t, entry);
				const created = await models.LedgerEntry.create({ id: uuid(), ...entry, createdAt: clock.now() }, { transaction: t });
				if (within) await within(t);
				return created;
			},
			{ retryOn: isAccountRace },
		);
		return { recorded: true, duplicate: false, entry: row };
	} catch (err) {
		if (!isUniqueViolation(err, "ledger_entries")) throw err;
		const existing = await models.LedgerEntry.findOne({ where: { kind: entry.kind, refType: entry.refType, refId: entry.refId } });
		if (!existing) throw err;
		return { recorded: false, duplicate: true, entry: existing };
	}
}

/** The credit entries already recorded for these checkouts (the feed skips them). */
export async function creditedTransactions(app: App, transactionIds: string[]): Promise<Set<string>> {
	if (!transactionIds.length) return new Set();
	const where: WhereOptions = { kind: "credit", refType: "transaction", refId: { [Op.in]: transactionIds } };
	const rows = await app.models.LedgerEntry.findAll({ where, attributes: ["refId"], raw: true });
	return new Set(rows.map(r => r.refId));
}
