/**
 * What arrives at accounts in one Solana block, read from the block's transactions as
 * `getBlock(slot, { transactionDetails: "full", maxSupportedTransactionVersion: 0, rewards: false })`
 * returns them through @solana/web3.js v1 (docs/watchers.md "Solana"). Pure: no RPC here.
 *
 * - Successful transactions only (`meta.err` null); a failed one moves no lamports or tokens
 *   other than its fee.
 * - SOL: an account whose balance rose in a transaction (postBalances[i] > preBalances[i]). The
 *   account list is the message's static keys, then the addresses loaded from lookup tables
 *   (writable, then readonly): the order of the balances for v0 transactions.
 * - SPL tokens: a token account whose amount of a mint rose (postTokenBalances against
 *   preTokenBalances of the same account index; an account created in the transaction starts at
 *   0), attributed to the token account's OWNER, with its mint (the caller keeps only the
 *   catalogue's mints: a token is its mint, never its symbol). Older RPC nodes omit `owner` in
 *   token balances: the owner is then the one `ownerOf` gives for the token account (the source
 *   reads it from the account itself, lib/chains/solana/source.ts), for the same mint only.
 * - Net per transaction: an account paid and debited in one transaction counts what it gained.
 *
 * A payment's key is (signature, position): SOL at the account's index, a token at
 * TOKEN_INDEX_OFFSET + the token account's index (account indices are u8), so two transfers in one
 * transaction are two payments and a SOL and a token payment never share a key.
 */
import type { VersionedBlockResponse } from "@solana/web3.js";

/** Token payments' position: TOKEN_INDEX_OFFSET + the token account's index (an account index is below 256). */
export const TOKEN_INDEX_OFFSET = 256;

export interface SolanaCredit {
	signature: string;
	/** The payment's position in its transaction (ChainTransfer.logIndex). */
	index: number;
	/** The account paid: the SOL account, or the token account's owner. */
	account: string;
	/** "" for SOL, else the token's mint. */
	mint: string;
	/** Lamports or token base units. */
	amount: bigint;
}

type BlockTransaction = VersionedBlockResponse["transactions"][number];

/** Lamports from the JSON numbers of pre/postBalances; a balance past 2^53 cannot be trusted after JSON.parse. */
function lamports(n: number | undefined, what: string): bigint {
	if (n === undefined) throw new Error(`Solana block: ${what} missing`);
	if (!Number.isSafeInteger(n) || n < 0) throw new Error(`Solana block: ${what} ${n} is not an exact lamport count (above 2^53 after JSON parsing)`);
	return BigInt(n);
}

/** Every account key of a transaction, in the order of its balances (static, then loaded writable, then loaded readonly). */
export function accountKeys(tx: BlockTransaction): string[] {
	const keys = tx.transaction.message.getAccountKeys({ accountKeysFromLookups: tx.meta?.loadedAddresses ?? undefined });
	return keys.keySegments().flat().map(k => k.toBase58());
}

/** The owner of a token account holding `mint`, as known outside the block; undefined when unknown (or not a token account of that mint). */
export type TokenOwnerOf = (tokenAccount: string, mint: string) => string | undefined;

type TokenBalances = NonNullable<NonNullable<BlockTransaction["meta"]>["postTokenBalances"]>;

/** What a token account gained in a transaction: its post amount less its pre amount (0 when created in the transaction). */
function tokenGain(post: TokenBalances[number], pres: TokenBalances | null | undefined): { gained: bigint; preOwner: string | undefined } {
	const pre = (pres ?? []).find(b => b.accountIndex === post.accountIndex && b.mint === post.mint);
	return { gained: BigInt(post.uiTokenAmount.amount) - (pre ? BigInt(pre.uiTokenAmount.amount) : 0n), preOwner: pre?.owner };
}

/**
 * Token accounts whose balance of one of `mints` rose in a successful transaction and whose
 * owner the block does not say (an older RPC node): the ones the caller must look up before
 * blockCredits can attribute them.
 */
export function ownerlessTokenAccounts(block: Pick<VersionedBlockResponse, "transactions">, mints: ReadonlySet<string>): Array<{ account: string; mint: string }> {
	const out: Array<{ account: string; mint: string }> = [];
	for (const tx of block.transactions) {
		const meta = tx.meta;
		if (!meta || meta.err !== null) continue;
		let keys: string[] | null = null;
		for (const post of meta.postTokenBalances ?? []) {
			if (post.owner || !mints.has(post.mint)) continue;
			const { gained, preOwner } = tokenGain(post, meta.preTokenBalances);
			if (preOwner || gained <= 0n) continue;
			keys ??= accountKeys(tx);
			out.push({ account: keys[post.accountIndex], mint: post.mint });
		}
	}
	return out;
}

/**
 * Every credit of the block's successful transactions. `wanted(account)`: whether an account
 * (SOL) or a token account's owner is a deposit address; only those are computed (a block of
 * a busy chain pays thousands of accounts). `ownerOf`: token accounts' owners where the block
 * omits them (see ownerlessTokenAccounts); without it such a balance is attributed to no one.
 */
export function blockCredits(block: Pick<VersionedBlockResponse, "transactions">, wanted: (account: string) => boolean, mints: ReadonlySet<string>, ownerOf?: TokenOwnerOf): SolanaCredit[] {
	const out: SolanaCredit[] = [];
	for (const tx of block.transactions) {
		const meta = tx.meta;
		// No status meta: nothing is known of its effect, nothing is credited from it.
		if (!meta || meta.err !== null) continue;
		const signature = tx.transaction.signatures[0];
		const keys = accountKeys(tx);
		if (meta.preBalances.length !== keys.length || meta.postBalances.length !== keys.length) {
			throw new Error(`Solana block: transaction ${signature} has ${keys.length} accounts but ${meta.preBalances.length}/${meta.postBalances.length} balances`);
		}
		for (let i = 0; i < keys.length; i++) {
			if (!wanted(keys[i])) continue;
			const gained = lamports(meta.postBalances[i], `postBalances[${i}] of ${signature}`) - lamports(meta.preBalances[i], `preBalances[${i}] of ${signature}`);
			if (gained > 0n) out.push({ signature, index: i, account: keys[i], mint: "", amount: gained });
		}
		for (const post of meta.postTokenBalances ?? []) {
			if (!mints.has(post.mint)) continue;
			// The common case (owner in the balance) decides before the pre balance is searched.
			if (post.owner && !wanted(post.owner)) continue;
			const { gained, preOwner } = tokenGain(post, meta.preTokenBalances);
			if (gained <= 0n) continue;
			const owner = post.owner || preOwner || ownerOf?.(keys[post.accountIndex], post.mint);
			if (owner && wanted(owner)) out.push({ signature, index: TOKEN_INDEX_OFFSET + post.accountIndex, account: owner, mint: post.mint, amount: gained });
		}
	}
	return out;
}
