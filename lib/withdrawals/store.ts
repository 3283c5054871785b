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
import { accountBalance, accountKey, AccountBalance, KindSum, LedgerKind } from "./ledger";

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
export async function lockAccount(app: App, t: DbTx, account: Account): Promise<void> {
	const { models, clock } = app;
	const id = accountKey(account.organizationId, account.networkId, account.tokenId);
	const row = await models.LedgerAccount.findByPk(id, { transaction: t, lock: t.LOCK.UPDATE });
	if (!row) await models.LedgerAccount.create({ id, ...account, createdAt: clock.now() }, { transaction: t });
}

/** Two first uses of an account at once (MariaDB names only PRIMARY, not the table: any unique failure but an entry's). */
export const isAccountRace = (err: unknown) => (err as { name?: string })?.name === "SequelizeUniqueConstraintError" && !isUniqueViolation(err, "ledger_entries");

/** Σ of a money column, exact: DECIMAL SUM on MySQL; on SQLite (TEXT money) summed with decimal.js. */
async function sumOf(app: App, table: "ledger_entries" | "withdrawal_requests", where: Record<string, unknown>, t?: DbTx): Promise<string[]> {
	const { models, sequelize } = app;
	const model = (table === "ledger_entries" ? models.LedgerEntry : models.WithdrawalRequest) as unknown as { findAll(o: object): Promise<Array<{ amount: unknown }>> };
	if (sequelize.getDialect() === "mysql") {
		const keys = Object.keys(where);
		const rows = await sequelize.query<{ total: unknown }>(`SELECT SUM(amount) AS total FROM ${table} WHERE ${keys.map(k => `\`${k}\` = :${k}`).join(" AND ")}`, {
			replacements: where,
			type: QueryTypes.SELECT,
			transaction: t,
		});
		return [normalizeDecimal(rows[0]?.total) ?? "0"];
	}
	const rows = await model.findAll({ where, attributes: ["amount"], raw: true, transaction: t });
	return rows.map(r => normalizeDecimal(r.amount) ?? "0");
}

/** What the account holds, what pending requests reserve, and what is left for a new request. */
export async function balanceOf(app: App, account: Account, t?: DbTx): Promise<AccountBalance> {
	const { organizationId, networkId, tokenId } = account;
	const [entries, pending] = await Promise.all([
		sumOf(app, "ledger_entries", { organizationId, networkId, tokenId }, t),
		sumOf(app, "withdrawal_requests", { organizationId, sourceNetworkId: networkId, tokenId, status: "pending" }, t),
	]);
	return accountBalance(entries, pending);
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
