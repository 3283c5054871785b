/**
 * The TON sweeper's test setup on `ton` (test/e2e/ton-payments-sweeps.test.ts, test/cluster/
 * sweeper-ton-crash.test.ts): the TON test node (test/helpers/ton-node.ts) with a block sealed
 * every 200 ms, a payer with 10,000 TON and 1,000 USDT of the reference jetton placed at the
 * catalogue's USDT master (the master the watcher and the sweeper trust), a funded v5R1 sweeper
 * wallet, the environment a node needs to watch and sweep it, and a merchant whose live
 * organization has an API key and a TON withdrawal address. `ton` is a mainnet network: its
 * checkouts are a live organization's (USDT is in the catalogue of the mainnet network only).
 */
import { Address, toNano } from "@ton/core";
import { keyPairFromSeed } from "@ton/crypto";
import { CATALOGUE, networkIdFor, tokenIdFor } from "../../lib/networks/catalogue";
import { money } from "../../lib/money";
import { startTonNode, type Jetton, type TestWallet, type TonNode } from "./ton-node";
import type { TestNode } from "./harness";
import { createUserWithToken, type UserWithToken } from "./users";

export const TON_NET = networkIdFor("ton");
export const TON_TOKEN = tokenIdFor("ton", "TON");
export const USDT_TOKEN = tokenIdFor("ton", "USDT");
export const CATALOGUE_USDT_MASTER = Address.parse(CATALOGUE.find(n => n.slug === "ton")!.tokens.find(t => t.symbol === "USDT")!.contractAddress!);

const SWEEPER_SEED = Buffer.alloc(32, 0x5e);

export interface TonSweeperChain {
	ton: TonNode;
	payer: TestWallet;
	usdt: Jetton;
	/** The sweeper wallet (v5R1, deployed, 100 TON): SWEEPER_PRIVATE_KEY_TON's. */
	sweeper: TestWallet;
	/** What a node needs to watch and sweep `ton` on this test node (`extra` added or overriding). */
	env(extra?: Record<string, string>): Record<string, string>;
}

export async function startTonSweeperChain(): Promise<TonSweeperChain> {
	const ton = await startTonNode();
	const payer = await ton.wallet({ balance: toNano("10000") });
	const usdt = await ton.placeJetton(CATALOGUE_USDT_MASTER, { name: "Tether USD", symbol: "USDT", decimals: 6 });
	await ton.mint(usdt, payer.address, 1_000_000_000n);
	const sweeper = await ton.wallet({ version: "v5", keyPair: keyPairFromSeed(SWEEPER_SEED), balance: toNano("100") });
	await ton.settle();
	ton.autoSeal(200);
	const env = (extra: Record<string, string> = {}) => ({
		RPC_URL_TON: ton.url,
		SWEEPER_PRIVATE_KEY_TON: SWEEPER_SEED.toString("hex"),
		WATCHER_POLL_MS: "100",
		SWEEP_POLL_MS: "200",
		SWEEP_LEASE_MS: "3000",
		SWEEP_MAX_AGE_MINUTES: "0",
		SWEEP_PROOF_POLLS: "2",
		SWEEP_PROOF_MS: "0",
		...extra,
	});
	return { ton, payer, usdt, sweeper, env };
}

export interface TonMerchant {
	user: UserWithToken;
	/** The live organization's API key (webhooks to `webhookUrl`, if given). */
	key: { key: string; secret: string };
	/** Its TON withdrawal address: an undeployed wallet (it keeps what it is sent, less its storage fee). */
	wallet: TestWallet;
}

/** A merchant whose live organization has an API key; `withdrawTo()` saves its TON withdrawal address. */
export async function tonMerchant(node: TestNode, ton: TonNode, webhookUrl?: string): Promise<TonMerchant & { withdrawTo(): Promise<void> }> {
	const user = await createUserWithToken(node);
	const res = await node.http("POST", `/organizations/${user.live.id}/api-keys`, { token: user.token, body: { name: "shop", ...(webhookUrl ? { webhookUrl } : {}) } });
	if (res.status !== 201) throw new Error(`key creation failed: ${res.status} ${res.text}`);
	const wallet = await ton.wallet();
	const withdrawTo = async () => {
		const saved = await node.http("PUT", "/withdrawals/settings", { token: user.token, headers: { "x-organization-id": user.live.id }, body: { addresses: { ton: wallet.friendly } } });
		if (saved.status !== 200) throw new Error(`withdrawal settings failed: ${saved.status} ${saved.text}`);
	};
	return { user, key: { key: res.body.key, secret: res.body.secret }, wallet, withdrawTo };
}

/** The organization's ledger balance of a token on `ton` (withdrawals.balance: Σ of its entries). */
export async function tonLedger(node: TestNode, organizationId: string, tokenId: string) {
	return money(((await node.broker.call("withdrawals.balance", { organizationId, networkId: TON_NET, tokenId })) as { balance: string }).balance);
}
