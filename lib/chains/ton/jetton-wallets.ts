/**
 * Which jetton wallet a trusted jetton master gives a deposit (docs/watchers.md "TON", "Jetton
 * wallets"). The watcher credits jettons at the deposit's jetton wallet, so it needs that address
 * for every watched deposit (~100,000): one `get_wallet_address` call each is too slow and too
 * rate-limited at startup. A jetton wallet's address is the hash of its StateInit (the master's
 * `jetton_wallet_code` and an initial data cell holding the owner and the master), so it can be
 * computed locally once the data layout is known:
 *
 * - "reference": the TEP-74 reference jetton (token-contract; @ton-community/assets-sdk's
 *   JettonWallet): balance:Coins owner master wallet_code:^Cell.
 * - "stablecoin": ton-blockchain/stablecoin-contract, the contract USDT on TON runs (its
 *   jetton-utils.fc pack_jetton_wallet_data): status:uint4 balance:Coins owner master.
 *
 * A layout is used for a master only after it reproduced that master's own `get_wallet_address`
 * answers for two sample owners; when none does (another contract, a master whose code we do not
 * know), every deposit's wallet is asked of the master (cached, bounded concurrency). The
 * computation is @ton/core's contractAddress (StateInit cell hash), nothing hand-rolled.
 */
import { Address, beginCell, Cell, contractAddress } from "@ton/core";
import type { TonApi } from "./api";
import { mapLimit } from "../map-limit";

/** Jetton wallets live on the basechain (both contracts deploy them there). */
const BASECHAIN = 0;
/** get_wallet_address calls in flight at once when a master's layout is not known. */
export const WALLET_QUERY_CONCURRENCY = 4;
/** Addresses computed between two yields to the event loop (100,000 deposits must not block heartbeats). */
const YIELD_EVERY = 2_000;

export interface JettonWalletLayout {
	name: string;
	/** The wallet's initial data cell for `owner` under `master` (balance 0, status 0). */
	data(owner: Address, master: Address, walletCode: Cell): Cell;
}

export const JETTON_WALLET_LAYOUTS: readonly JettonWalletLayout[] = [
	{ name: "reference", data: (owner, master, code) => beginCell().storeCoins(0).storeAddress(owner).storeAddress(master).storeRef(code).endCell() },
	{ name: "stablecoin", data: (owner, master) => beginCell().storeUint(0, 4).storeCoins(0).storeAddress(owner).storeAddress(master).endCell() },
];

/** Owners whose wallets a master is asked for to check a layout: any two distinct addresses do. */
export const SAMPLE_OWNERS: readonly Address[] = [Address.parseRaw("0:" + "5a".repeat(32)), Address.parseRaw("0:" + "c3".repeat(32))];

/** The jetton wallet (raw `0:hex`) `layout` gives `owner` under `master` with `walletCode`. */
export function layoutWalletAddress(layout: JettonWalletLayout, walletCode: Cell, master: Address, owner: Address): string {
	return contractAddress(BASECHAIN, { code: walletCode, data: layout.data(owner, master, walletCode) }).toRawString();
}

/**
 * The layout among `layouts` that gives, for each sample owner, the wallet the master answered
 * (`answers[i]` for `SAMPLE_OWNERS[i]`, raw); null when none does.
 */
export function verifiedLayout(walletCode: Cell, master: Address, answers: readonly string[], layouts: readonly JettonWalletLayout[] = JETTON_WALLET_LAYOUTS): JettonWalletLayout | null {
	if (answers.length !== SAMPLE_OWNERS.length) return null;
	return layouts.find(l => SAMPLE_OWNERS.every((owner, i) => layoutWalletAddress(l, walletCode, master, owner) === answers[i])) ?? null;
}

/** The address in a get-method stack entry (`{type: "slice"|"cell", value: base64 BOC}`), raw. */
export function stackAddress(entry: unknown): string | null {
	const e = entry as { type?: string; value?: unknown } | null;
	if (!e || (e.type !== "slice" && e.type !== "cell") || typeof e.value !== "string") return null;
	try {
		const a = Cell.fromBase64(e.value).beginParse().loadMaybeAddress();
		return a ? a.toRawString() : null;
	} catch {
		return null;
	}
}

interface GetMethodAnswer {
	exit_code: number;
	stack?: unknown[];
}

/** `get_wallet_address(owner)` on `master` (raw keys in and out), through the v3 API's runGetMethod. */
export async function getWalletAddress(api: TonApi, master: string, owner: string): Promise<string> {
	const ownerSlice = beginCell().storeAddress(Address.parseRaw(owner)).endCell().toBoc().toString("base64");
	const r = await api.post<GetMethodAnswer>("runGetMethod", { address: master, method: "get_wallet_address", stack: [{ type: "slice", value: ownerSlice }] });
	if (Number(r.exit_code) !== 0) throw new Error(`get_wallet_address on jetton master ${master} exited with code ${r.exit_code}`);
	const wallet = stackAddress(r.stack?.[0]);
	if (!wallet) throw new Error(`get_wallet_address on jetton master ${master} returned no address`);
	return wallet;
}

/** `get_jetton_data`'s jetton_wallet_code (the fifth value: total_supply, mintable, admin, content, wallet_code); null when the master does not answer one. */
export async function getJettonWalletCode(api: TonApi, master: string): Promise<Cell | null> {
	const r = await api.post<GetMethodAnswer>("runGetMethod", { address: master, method: "get_jetton_data", stack: [] });
	if (Number(r.exit_code) !== 0) return null;
	const e = r.stack?.[4] as { type?: string; value?: unknown } | undefined;
	if (!e || (e.type !== "cell" && e.type !== "slice") || typeof e.value !== "string") return null;
	try {
		return Cell.fromBase64(e.value);
	} catch {
		return null;
	}
}

/** How a master's wallets are found: computed with a verified layout, or asked one by one. */
export type MasterPlan = { master: Address; layout: JettonWalletLayout; walletCode: Cell } | { master: Address; layout: null; walletCode: null };

export interface JettonWalletsOptions {
	api: TonApi;
	logger?: { info?(...args: unknown[]): void; warn(...args: unknown[]): void };
	/** (master, owner) answers kept; never wrong, only recomputed (or refetched) once dropped. */
	cacheSize?: number;
	concurrency?: number;
}

/** The trusted masters' jetton wallets of deposit owners, per master: a plan found once, answers cached. */
export class JettonWallets {
	private readonly plans = new Map<string, Promise<MasterPlan>>();
	private readonly cache = new Map<string, string>();
	private readonly cacheSize: number;

	constructor(private readonly opts: JettonWalletsOptions) {
		this.cacheSize = opts.cacheSize ?? 500_000;
	}

	/** The master's plan: read once (get_jetton_data and two get_wallet_address calls); an API failure is not kept, the next call asks again. */
	plan(master: string): Promise<MasterPlan> {
		let p = this.plans.get(master);
		if (!p) {
			p = this.findPlan(master);
			p.catch(() => this.plans.delete(master));
			this.plans.set(master, p);
		}
		return p;
	}

	private async findPlan(masterRaw: string): Promise<MasterPlan> {
		const master = Address.parseRaw(masterRaw);
		const walletCode = await getJettonWalletCode(this.opts.api, masterRaw);
		if (walletCode) {
			const answers = await Promise.all(SAMPLE_OWNERS.map(o => getWalletAddress(this.opts.api, masterRaw, o.toRawString())));
			const layout = verifiedLayout(walletCode, master, answers);
			if (layout) {
				this.opts.logger?.info?.(`TON jetton master ${masterRaw}: wallet addresses computed locally (${layout.name} layout, checked against get_wallet_address)`);
				return { master, layout, walletCode };
			}
		}
		this.opts.logger?.warn(`TON jetton master ${masterRaw}: ${walletCode ? "no known wallet layout reproduces its get_wallet_address" : "get_jetton_data gave no wallet code"}; each deposit's jetton wallet is asked of the master (get_wallet_address, cached)`);
		return { master, layout: null, walletCode: null };
	}

	private remember(key: string, wallet: string): void {
		if (this.cache.size >= this.cacheSize) this.cache.delete(this.cache.keys().next().value!);
		this.cache.set(key, wallet);
	}

	/** The jetton wallet `master` gives `owner` (raw keys). */
	async walletOf(master: string, owner: string): Promise<string> {
		return (await this.walletsOf(master, [owner])).get(owner)!;
	}

	/** The jetton wallets `master` gives `owners` (raw keys): computed, or asked with bounded concurrency; the event loop is yielded to while computing many. */
	async walletsOf(master: string, owners: readonly string[]): Promise<Map<string, string>> {
		const out = new Map<string, string>();
		const missing: string[] = [];
		for (const owner of owners) {
			const known = this.cache.get(`${master}|${owner}`);
			if (known) out.set(owner, known);
			else missing.push(owner);
		}
		if (missing.length === 0) return out;
		const plan = await this.plan(master);
		if (plan.layout) {
			for (let i = 0; i < missing.length; i++) {
				if (i > 0 && i % YIELD_EVERY === 0) await new Promise(r => setImmediate(r));
				const wallet = layoutWalletAddress(plan.layout, plan.walletCode, plan.master, Address.parseRaw(missing[i]));
				this.remember(`${master}|${missing[i]}`, wallet);
				out.set(missing[i], wallet);
			}
			return out;
		}
		await mapLimit(missing, this.opts.concurrency ?? WALLET_QUERY_CONCURRENCY, async owner => {
			const wallet = await getWalletAddress(this.opts.api, master, owner);
			this.remember(`${master}|${owner}`, wallet);
			out.set(owner, wallet);
		});
		return out;
	}
}
