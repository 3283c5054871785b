/**
 * What the automatic sweep may take from funds that withdrawal requests are paid from
 * (docs/withdrawals.md "Available"): a deposit whose destination is the settings' address is swept
 * only while what stays covers the account's pending requests, i.e. only as far as the account's
 * `available` goes; with no pending request (nothing reserved) it is swept as always. Funds of a
 * checkout with its own withdrawal address are never a request's and are swept freely.
 * The check runs twice: per step, without locks, to choose deposits (`take`), and in the DB
 * transaction that opens the sweep, under the accounts' locks, as createRequest checks (`guard`),
 * so a request accepted meanwhile is never left without funds.
 */
import type { Sequelize, Transaction as DbTx } from "sequelize";
import { money, type MoneyValue } from "../money";
import type { Models } from "../../models";
import { balanceOf, lockAccount, type Account } from "../withdrawals/store";
import type { PlanItem } from "./store";

export interface ReservationDeps {
	sequelize: Sequelize;
	models: Models;
	now: () => Date;
	/** withdrawals.ownAddressCheckouts: funds held for their own address (not available). */
	ownAddressCheckouts(p: Account): Promise<string[]>;
}

const keyOf = (a: Account) => `${a.organizationId}|${a.networkId}|${a.tokenId}`;

export class Reservations {
	/** Per account: its own-address checkouts, and what the sweep may still take this step (null: no limit). */
	private readonly accounts = new Map<string, { own: string[]; left: MoneyValue | null }>();

	constructor(
		private readonly deps: ReservationDeps,
		private readonly networkId: string,
	) {}

	private async account(a: Account) {
		let state = this.accounts.get(keyOf(a));
		if (!state) {
			const own = await this.deps.ownAddressCheckouts(a);
			const b = await balanceOf(this.deps, a, undefined, { ownAddressTransactions: own });
			state = { own, left: money(b.reserved).isZero() ? null : money(b.available) };
			this.accounts.set(keyOf(a), state);
		}
		return state;
	}

	/** Takes `amount` (token units) of a settings-destination deposit: false when it must stay for pending requests. */
	async take(organizationId: string, tokenId: string, amount: string): Promise<boolean> {
		const state = await this.account({ organizationId, networkId: this.networkId, tokenId });
		if (state.left === null) return true;
		if (money(amount).gt(state.left)) return false;
		state.left = state.left.minus(money(amount));
		return true;
	}

	/**
	 * planSweep's admission of `items` (settings-destination deposits), in its DB transaction: each
	 * account locked (in a fixed order) and its pending requests still covered after the sweep.
	 */
	async guard(items: readonly PlanItem[]): Promise<(t: DbTx) => Promise<boolean>> {
		const totals = new Map<string, { account: Account; total: MoneyValue; own: string[] }>();
		for (const i of items) {
			const account = { organizationId: i.organizationId, networkId: this.networkId, tokenId: i.tokenId };
			// Read before the DB transaction opens: nothing but its own statements runs inside it.
			const entry = totals.get(keyOf(account)) ?? { account, total: money(0), own: (await this.account(account)).own };
			entry.total = entry.total.plus(money(i.amount));
			totals.set(keyOf(account), entry);
		}
		return async t => {
			for (const key of [...totals.keys()].sort()) {
				const { account, total, own } = totals.get(key)!;
				await lockAccount({ models: this.deps.models, clock: { now: this.deps.now } }, t, account);
				const b = await balanceOf(this.deps, account, t, { ownAddressTransactions: own });
				if (!money(b.reserved).isZero() && total.gt(money(b.available))) return false;
			}
			return true;
		};
	}
}
