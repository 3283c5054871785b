/**
 * The Polkadot sweeper's test chain (test/lib/chains/polkadot/sweep-runner*.test.ts,
 * test/services/sweeper-polkadot.test.ts): the
 * chopsticks Asset Hub node (test/helpers/polkadot-node.ts) with a payer and a sweeper wallet
 * (SWEEPER_PRIVATE_KEY_POLKADOT's) holding 1,000 native each, the total issuance raised to cover
 * what was written by storage, blocks built on a timer when a test asks, and the environment a
 * node needs to watch and sweep `polkadot-asset-hub` on it.
 */
import type { KeyringPair } from "@polkadot/keyring/types";
import { encodeAddress } from "@polkadot/util-crypto";
import { polkadotSweeperPair } from "../../lib/chains/polkadot/sweep";
import { money } from "../../lib/money";
import type { Sweep } from "../../models/sweep.model";
import { networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { startPolkadotNode, type PolkadotNode, type PolkadotNodeOptions } from "./polkadot-node";
import type { TestNode } from "./harness";
import { until } from "./until";
import { createUserWithToken, type UserWithToken } from "./users";
import { openCheckout, startPaymentsNode, PAYMENTS_SERVICES, type OpenedCheckout } from "../e2e/payments.helpers";

export const DOT_NET = networkIdFor("polkadot-asset-hub");
export const DOT_TOKEN = tokenIdFor("polkadot-asset-hub", "DOT");

/** The sweeper wallet's 32-byte hex seed (SWEEPER_PRIVATE_KEY_POLKADOT). */
export const POLKADOT_SWEEPER_SEED = `0x${"5a".repeat(32)}`;

export interface PolkadotSweeperChain {
	chain: PolkadotNode;
	payer: KeyringPair;
	sweeper: KeyringPair;
	/** Native free balance at the finalized head. */
	free(address: string): Promise<bigint>;
	/** Asset units at the finalized head. */
	assetOf(assetId: number, address: string): Promise<bigint>;
	/** The payer's real balances.transferKeepAlive to `to`, in a (finalized, when autoFinalize) block. */
	pay(to: string, planck: bigint): Promise<void>;
	/** A block (finalized, when autoFinalize) every `ms`, one at a time; null stops it (and waits for the one being built). */
	autoProduce(ms: number | null): Promise<void>;
	/** What a node needs to watch and sweep `polkadot-asset-hub` on this node (`extra` added or overriding). */
	env(extra?: Record<string, string>): Record<string, string>;
	stop(): Promise<void>;
}

export async function startPolkadotSweeperChain(opts: PolkadotNodeOptions = {}): Promise<PolkadotSweeperChain> {
	const chain = await startPolkadotNode(opts);
	const unit = 10n ** BigInt(chain.decimals);
	const payer = chain.pair("//Payer");
	await chain.fund(payer.address, 1_000n * unit);
	// fund() writes balances by storage, not issuance: the runtime refuses to move more than the
	// total issuance (ArithmeticError::Underflow), so it is raised to cover what was written.
	await chain.rpc("dev_setStorage", [{ Balances: { TotalIssuance: (1_000_000n * unit).toString() } }]);
	const sweeper = await polkadotSweeperPair(POLKADOT_SWEEPER_SEED, chain.ss58Format);
	await chain.fund(sweeper.address, 1_000n * unit);
	await chain.newBlock();

	const free = async (address: string) => {
		const at = await chain.api.at(chain.finalized().hash);
		const a = (await at.query.system.account(address)) as unknown as { data: { free: { toString(): string } } };
		return BigInt(a.data.free.toString());
	};
	const assetOf = async (assetId: number, address: string) => {
		const at = await chain.api.at(chain.finalized().hash);
		const a = (await at.query.assets.account(assetId, address)) as unknown as { isSome: boolean; unwrap(): { balance: { toString(): string } } };
		return a.isSome ? BigInt(a.unwrap().balance.toString()) : 0n;
	};

	let timer: NodeJS.Timeout | null = null;
	let building: Promise<unknown> = Promise.resolve();
	const autoProduce = async (ms: number | null) => {
		if (timer) clearTimeout(timer);
		timer = null;
		await building;
		if (ms === null) return;
		const tick = () => {
			building = chain.newBlock().catch(() => undefined).then(() => {
				if (timer) timer = setTimeout(tick, ms);
			});
		};
		timer = setTimeout(tick, ms);
	};

	return {
		chain,
		payer,
		sweeper,
		free,
		assetOf,
		async pay(to, planck) {
			await chain.api.tx.balances.transferKeepAlive(to, planck).signAndSend(payer);
			await chain.newBlock();
		},
		autoProduce,
		env: (extra = {}) => ({
			RPC_URL_POLKADOT_ASSET_HUB: chain.url,
			SWEEPER_PRIVATE_KEY_POLKADOT: POLKADOT_SWEEPER_SEED,
			WATCHER_POLL_MS: "100",
			SWEEP_POLL_MS: "300",
			SWEEP_LEASE_MS: "3000",
			SWEEP_MAX_AGE_MINUTES: "0",
			SWEEP_PROOF_POLLS: "2",
			SWEEP_PROOF_MS: "0",
			SWEEP_POLKADOT_ERA_PERIOD: "64",
			...extra,
		}),
		async stop() {
			await autoProduce(null);
			await chain.stop();
		},
	};
}

export interface PolkadotSweeperNodes {
	bench: PolkadotSweeperChain;
	/** The payments services, watcher-polkadot and withdrawals (and sweeper-polkadot unless `sweeper: false`). */
	node: TestNode;
	user: UserWithToken;
	/** The live organization's API key (polkadot-asset-hub is a mainnet network). */
	key: { key: string; secret: string };
	/** The merchant's withdrawal account (its settings' Polkadot address, SS58 prefix 0). */
	merchant: KeyringPair;
	merchantAddress: string;
	/** A DOT checkout of `amount` (catalogue units) paid by the payer, waited for until completed (blocks built meanwhile). */
	paidCheckout(amount: string): Promise<OpenedCheckout>;
	/** The organization's ledger balance of DOT (withdrawals.balance). */
	ledger(): Promise<ReturnType<typeof money>>;
	/** The sweeps that carry `depositAddress`. */
	sweepsOf(depositAddress: string): Promise<Sweep[]>;
	stop(): Promise<void>;
}

/**
 * The chain and a node watching it, with a live merchant whose Polkadot withdrawal address is set.
 * The catalogue counts DOT in 10 decimals: amounts are the chain's base units (planck) all the same.
 */
export async function startPolkadotSweeperNodes(opts: { sweeper?: boolean; env?: Record<string, string> } = {}): Promise<PolkadotSweeperNodes> {
	const bench = await startPolkadotSweeperChain();
	const node = await startPaymentsNode({
		services: [...PAYMENTS_SERVICES, "watcher-polkadot", "withdrawals", ...(opts.sweeper === false ? [] : ["sweeper-polkadot"])],
		env: bench.env(opts.env),
	});
	const user = await createUserWithToken(node);
	const res = await node.http("POST", `/organizations/${user.live.id}/api-keys`, { token: user.token, body: { name: "shop" } });
	if (res.status !== 201) throw new Error(`key creation failed: ${res.status} ${res.text}`);
	const key = { key: res.body.key, secret: res.body.secret };
	const merchant = bench.chain.pair("//Merchant");
	const merchantAddress = encodeAddress(merchant.publicKey, 0);
	// The merchant's account exists (as a merchant's would).
	await bench.chain.fund(merchant.address, 10n ** BigInt(bench.chain.decimals));
	await bench.chain.newBlock();
	const saved = await node.http("PUT", "/withdrawals/settings", { token: user.token, headers: { "x-organization-id": user.live.id }, body: { addresses: { polkadot: merchantAddress } } });
	if (saved.status !== 200) throw new Error(`withdrawal settings failed: ${saved.status} ${saved.text}`);
	const getTx = async (id: string) => (await node.http("GET", `/payments/transactions/${id}`)).body;
	return {
		bench,
		node,
		user,
		key,
		merchant,
		merchantAddress,
		async paidCheckout(amount) {
			const c = await openCheckout(node, key, { amount, currency: "dot", tokenId: DOT_TOKEN, networkId: DOT_NET });
			const planck = money(amount).times(money(10).pow(10)).toFixed(0);
			await bench.chain.api.tx.balances.transferKeepAlive(c.address, BigInt(planck)).signAndSend(bench.payer);
			await bench.autoProduce(300);
			await until(`checkout ${c.txId} completed`, async () => (await getTx(c.txId)).status === "completed", 180_000);
			return c;
		},
		ledger: async () => money(((await node.broker.call("withdrawals.balance", { organizationId: user.live.id, networkId: DOT_NET, tokenId: DOT_TOKEN })) as { balance: string }).balance),
		async sweepsOf(depositAddress) {
			const items = await node.app.models.SweepItem.findAll({ where: { depositAddress } });
			return node.app.models.Sweep.findAll({ where: { id: items.map(i => i.sweepId) } });
		},
		async stop() {
			await node.stop();
			await bench.stop();
		},
	};
}
