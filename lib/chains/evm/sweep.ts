/**
 * The chain-facing half of the EVM sweeper (docs/withdrawals.md "EVM sweeps"): fees, signing and
 * broadcasting of the transactions that move funds from deposit addresses to a withdrawal address.
 * No database: the sweeper service keeps the records and the nonces.
 *
 * - Native coin: the deposit key sends its balance minus the most the fee can cost.
 * - ERC-20, EIP-7702 networks: the sweeper wallet sends one transaction to SweepBatcher for up to
 *   ~20 deposit addresses; each deposit address delegates (once, by a signed authorization carried
 *   in that transaction) to SweepDelegate, which lets only the batcher move its whole balance.
 * - ERC-20, networks without EIP-7702: the sweeper wallet tops the deposit address up with gas,
 *   then the deposit key sends the tokens.
 *
 * Every `sign*` function returns the signed raw transaction and its hash WITHOUT sending it: the
 * service records both first and broadcasts after, so a crash between the two re-broadcasts the
 * very same transaction (`broadcast` treats "already known" as success) and never signs new
 * spending of the same funds. Amounts are bigint wei / token base units; private keys are taken
 * as bytes or hex and never appear in a message or a log.
 */
import {
	Interface, Transaction, Wallet, getAddress, hexlify, toQuantity, type ContractRunner, type JsonRpcApiProvider, type TransactionReceipt,
} from "ethers";
import { contractArtifacts, deployContract } from "./contracts";

export interface Fees {
	maxFeePerGas: bigint;
	maxPriorityFeePerGas: bigint;
}

/** Fees plus the base fee they were computed from (what a transaction is expected to pay per gas: base fee + tip). */
export interface FeeSuggestion extends Fees {
	baseFeePerGas: bigint;
}

export interface SignedTx {
	/** The signed transaction, 0x-hex: what `broadcast` sends, as many times as needed. */
	raw: string;
	hash: string;
	from: string;
	to: string;
	nonce: number;
	gasLimit: bigint;
	fees: Fees;
	/** Wei sent along (native sweep, gas top-up); 0n otherwise. */
	value: bigint;
	/** 2 (EIP-1559) or 4 (EIP-7702, with authorizations). */
	type: 2 | 4;
}

/** A private key: 32 bytes, or their 0x-hex. */
export type PrivateKey = Uint8Array | string;

/** What the provider must do: JSON-RPC calls (ethers JsonRpcProvider and friends). */
export type EvmRpc = Pick<JsonRpcApiProvider, "send">;

/** Gas of a plain ETH transfer to an address without code. */
export const NATIVE_TRANSFER_GAS = 21_000n;
/**
 * Gas limit for one ERC-20 `transfer` from a deposit address (fallback path): plain tokens use
 * ~35-52k (more when the recipient had no balance), proxied stablecoins (USDC, USDT) up to ~65k.
 */
export const TOKEN_TRANSFER_GAS_LIMIT = 65_000n;

// ---------------------------------------------------------------------------------------------
// Fees
// ---------------------------------------------------------------------------------------------

export interface SuggestFeesOptions {
	/** Blocks of eth_feeHistory to read the tip from (default 5). */
	blocks?: number;
	/** Reward percentile of those blocks (default 50). */
	percentile?: number;
	/** maxFeePerGas = baseFee × this + tip (default 2n: stays includable through ~6 blocks of full +12.5% base fee rises). */
	baseFeeMultiplier?: bigint;
	/** Lowest tip offered (default 0.1 gwei; some networks need more, e.g. Polygon 25-30 gwei). */
	priorityFloor?: bigint;
	/** Highest tip offered (default none). */
	priorityCap?: bigint;
	/** Highest maxFeePerGas (default none); the tip is lowered to fit under it. */
	maxFeeCap?: bigint;
}

export const DEFAULT_PRIORITY_FLOOR = 100_000_000n;

function median(values: bigint[]): bigint {
	if (values.length === 0) return 0n;
	const sorted = [...values].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
	return sorted[Math.floor(sorted.length / 2)];
}

const maxOf = (a: bigint, b: bigint) => (a > b ? a : b);
const minOf = (a: bigint, b: bigint) => (a < b ? a : b);

/** Pure part of `suggestFees`: fees from the next block's base fee and the tips recently paid. */
export function feesFrom(baseFeePerGas: bigint, recentTips: bigint[], opts: SuggestFeesOptions = {}): FeeSuggestion {
	let tip = maxOf(median(recentTips), opts.priorityFloor ?? DEFAULT_PRIORITY_FLOOR);
	if (opts.priorityCap !== undefined) tip = minOf(tip, opts.priorityCap);
	let maxFee = baseFeePerGas * (opts.baseFeeMultiplier ?? 2n) + tip;
	if (opts.maxFeeCap !== undefined && maxFee > opts.maxFeeCap) maxFee = opts.maxFeeCap;
	return { baseFeePerGas, maxFeePerGas: maxFee, maxPriorityFeePerGas: minOf(tip, maxFee) };
}

/**
 * EIP-1559 fees for a transaction now: the next block's base fee and the median tip of the last
 * blocks from eth_feeHistory; without it (some nodes), the latest block's base fee and
 * eth_maxPriorityFeePerGas.
 */
export async function suggestFees(provider: EvmRpc, opts: SuggestFeesOptions = {}): Promise<FeeSuggestion> {
	const blocks = opts.blocks ?? 5;
	try {
		const history = (await provider.send("eth_feeHistory", [toQuantity(blocks), "latest", [opts.percentile ?? 50]])) as {
			baseFeePerGas: string[];
			reward?: string[][];
		};
		// baseFeePerGas has one entry more than blocks: the last is the next block's.
		const next = BigInt(history.baseFeePerGas[history.baseFeePerGas.length - 1]);
		const tips = (history.reward ?? []).map(r => BigInt(r[0] ?? "0x0"));
		return feesFrom(next, tips, opts);
	} catch {
		const block = (await provider.send("eth_getBlockByNumber", ["latest", false])) as { baseFeePerGas?: string } | null;
		if (!block?.baseFeePerGas) throw new Error("suggestFees: the node reports no base fee (no EIP-1559 on this network)");
		const tip = BigInt((await provider.send("eth_maxPriorityFeePerGas", [])) as string);
		return feesFrom(BigInt(block.baseFeePerGas), [tip], opts);
	}
}

/** x × 9/8, rounded up, and at least x + 1: a raise of at least 12.5%. */
function bumpOnce(x: bigint): bigint {
	const raised = (x * 9n + 7n) / 8n;
	return raised > x ? raised : x + 1n;
}

/**
 * The fees of the `step`-th replacement of a transaction first sent with `fees`: each step raises
 * both fields by at least 12.5% over the previous step (geth and most nodes refuse a same-nonce
 * replacement that raises either by less than 10%). Step 0 is `fees` itself.
 */
export function bumpFees(fees: Fees, step: number): Fees {
	if (!Number.isInteger(step) || step < 0) throw new Error(`bumpFees: step must be a whole number >= 0, got ${step}`);
	let { maxFeePerGas, maxPriorityFeePerGas } = fees;
	for (let i = 0; i < step; i++) {
		maxFeePerGas = bumpOnce(maxFeePerGas);
		maxPriorityFeePerGas = bumpOnce(maxPriorityFeePerGas);
	}
	return { maxFeePerGas, maxPriorityFeePerGas: minOf(maxPriorityFeePerGas, maxFeePerGas) };
}

/**
 * Fees for replacing a stuck transaction sent with `previous`: one bump above it, or the network's
 * current fees when those are higher (the base fee may have risen past the bump).
 */
export function replacementFees(previous: Fees, current: Fees): Fees {
	const bumped = bumpFees(previous, 1);
	return {
		maxFeePerGas: maxOf(bumped.maxFeePerGas, current.maxFeePerGas),
		maxPriorityFeePerGas: maxOf(bumped.maxPriorityFeePerGas, current.maxPriorityFeePerGas),
	};
}

/** The most a transaction can cost in fees: gasLimit × maxFeePerGas. */
export function maxFeeCost(gasLimit: bigint, fees: Fees): bigint {
	return gasLimit * fees.maxFeePerGas;
}

// ---------------------------------------------------------------------------------------------
// Signing
// ---------------------------------------------------------------------------------------------

function walletOf(key: PrivateKey): Wallet {
	try {
		return new Wallet(typeof key === "string" ? key : hexlify(key));
	} catch {
		// ethers' own message may quote the value: say only that it is not a key.
		throw new Error("evm-sweep: not a valid secp256k1 private key");
	}
}

async function sign(wallet: Wallet, tx: {
	chainId: number | bigint;
	nonce: number;
	to: string;
	gasLimit: bigint;
	fees: Fees;
	value?: bigint;
	data?: string;
	authorizationList?: Awaited<ReturnType<Wallet["authorize"]>>[];
}): Promise<SignedTx> {
	if (!Number.isSafeInteger(tx.nonce) || tx.nonce < 0) throw new Error(`evm-sweep: bad nonce ${tx.nonce}`);
	if (tx.fees.maxPriorityFeePerGas > tx.fees.maxFeePerGas) throw new Error("evm-sweep: maxPriorityFeePerGas above maxFeePerGas");
	const type = tx.authorizationList && tx.authorizationList.length > 0 ? 4 : 2;
	const raw = await wallet.signTransaction({
		type,
		chainId: BigInt(tx.chainId),
		nonce: tx.nonce,
		to: getAddress(tx.to),
		gasLimit: tx.gasLimit,
		maxFeePerGas: tx.fees.maxFeePerGas,
		maxPriorityFeePerGas: tx.fees.maxPriorityFeePerGas,
		value: tx.value ?? 0n,
		data: tx.data ?? "0x",
		...(type === 4 ? { authorizationList: tx.authorizationList } : {}),
	});
	const parsed = Transaction.from(raw);
	return {
		raw,
		hash: parsed.hash!,
		from: parsed.from!,
		to: parsed.to!,
		nonce: tx.nonce,
		gasLimit: tx.gasLimit,
		fees: { maxFeePerGas: tx.fees.maxFeePerGas, maxPriorityFeePerGas: tx.fees.maxPriorityFeePerGas },
		value: tx.value ?? 0n,
		type,
	};
}

/**
 * What a native sweep sends: the balance minus the most the fee can cost (gasLimit × maxFeePerGas),
 * or null when that is below `minValue` (default 1 wei; the service passes its margin). The
 * address keeps gasLimit × (maxFeePerGas − price paid), a dust the base fee decides.
 */
export function nativeSweepValue(balance: bigint, gasLimit: bigint, fees: Fees, minValue = 1n): bigint | null {
	const value = balance - maxFeeCost(gasLimit, fees);
	return value >= minValue && value > 0n ? value : null;
}

export interface NativeSweepParams {
	chainId: number | bigint;
	depositKey: PrivateKey;
	to: string;
	/** The deposit address's balance in wei (read at "latest" by the service). */
	balance: bigint;
	fees: Fees;
	nonce: number;
	/** 21,000 to an address without code; more when `to` is a contract (a multisig's receive). */
	gasLimit?: bigint;
	/** Below this value the sweep is not worth it: null (default 1 wei). */
	minValue?: bigint;
}

/**
 * The gas limit of a native-coin send from `from` to `to` with `value`: 21,000 when the node's
 * eth_estimateGas says a plain transfer (no code runs at `to`), else the estimate plus
 * `marginPercent` (default 20): a contract destination (a Safe, a smart account, an EIP-7702
 * wallet, an exchange's deposit contract) runs its receive() and needs more, and its gas may vary a
 * little between the estimate and the block. A destination that refuses the payment fails here
 * (`isRevert`), before anything is signed. `value` must be one `from` can afford.
 */
export async function estimateNativeGas(provider: EvmRpc, p: { from: string; to: string; value: bigint }, marginPercent = 20): Promise<bigint> {
	const estimate = BigInt((await provider.send("eth_estimateGas", [{ from: getAddress(p.from), to: getAddress(p.to), value: toQuantity(p.value) }])) as string);
	if (estimate <= NATIVE_TRANSFER_GAS) return NATIVE_TRANSFER_GAS;
	return (estimate * BigInt(100 + marginPercent) + 99n) / 100n;
}

/** Node messages for a call that cannot succeed as asked (the EVM reverted or ran out of gas at any limit). */
const REVERTED = /revert|out of gas|gas required exceeds|always failing transaction|invalid opcode|CALL_EXCEPTION/i;

/**
 * True when an eth_estimateGas (or eth_call) failed because the transaction itself fails on the
 * chain's current state, as opposed to the node being unreachable or refusing the request: that
 * is a reason to hold the destination or deposit back, not to try again at once.
 */
export function isRevert(err: unknown): boolean {
	const code = (err as { code?: unknown } | null)?.code;
	if (code === "CALL_EXCEPTION") return true;
	if (code === "TIMEOUT" || code === "SERVER_ERROR" || code === "NETWORK_ERROR") return false;
	return REVERTED.test(errorText(err));
}

/** The gas limit a signed transaction carries (a replacement keeps it: same content, higher fees). */
export function gasLimitOf(raw: string): bigint {
	return Transaction.from(raw).gasLimit;
}

/** The deposit key's transfer of its balance minus the fee to `to`, or null when not worth it. */
export async function signNativeSweep(p: NativeSweepParams): Promise<SignedTx | null> {
	const gasLimit = p.gasLimit ?? NATIVE_TRANSFER_GAS;
	const value = nativeSweepValue(p.balance, gasLimit, p.fees, p.minValue);
	if (value === null) return null;
	return sign(walletOf(p.depositKey), { chainId: p.chainId, nonce: p.nonce, to: p.to, gasLimit, fees: p.fees, value });
}

export const sweepBatcherInterface = new Interface([
	"function sweep(address token, address to, address[] deposits)",
	"function sweepNative(address to, address[] deposits)",
	"function owner() view returns (address)",
]);
export const sweepDelegateInterface = new Interface([
	"function sweepToken(address token, address to)",
	"function sweepNative(address to)",
	"function batcher() view returns (address)",
	"error NotBatcher()",
	"error TransferFailed()",
]);
const erc20Interface = new Interface([
	"function transfer(address to, uint256 amount) returns (bool)",
	"event Transfer(address indexed from, address indexed to, uint256 value)",
]);

export interface BatchDeposit {
	/** The deposit address's private key (signs its authorization; unused once delegated). */
	key: PrivateKey;
	address: string;
	/** The deposit account's nonce for a new authorization; null = already delegated to our delegate. */
	authorizationNonce: number | null;
}

export interface BatchTokenSweepParams {
	chainId: number | bigint;
	sweeperKey: PrivateKey;
	nonce: number;
	batcher: string;
	delegate: string;
	token: string;
	to: string;
	deposits: BatchDeposit[];
	fees: Fees;
	gasLimit: bigint;
}

/**
 * The chain id an EIP-7702 authorization is signed for. Chain id 0 means "valid on every chain":
 * a deposit key's delegation signed with it could be replayed on any chain where that address
 * holds funds, so only a positive chain id is ever signed.
 */
export function authorizationChainId(chainId: number | bigint): bigint {
	const id = typeof chainId === "bigint" ? chainId : Number.isSafeInteger(chainId) ? BigInt(chainId) : null;
	if (id === null || id <= 0n) throw new Error(`evm-sweep: refusing to sign an EIP-7702 authorization for chain id ${String(chainId)} (it must be a positive integer; 0 would be valid on every chain)`);
	return id;
}

/** The batcher call and the authorizations of the deposits not yet delegated (checked: each key is its address's). */
async function batchParts(p: Omit<BatchTokenSweepParams, "sweeperKey" | "nonce" | "fees" | "gasLimit">) {
	if (p.deposits.length === 0) throw new Error("evm-sweep: a batch needs at least one deposit address");
	const seen = new Set<string>();
	const authorizationList = [];
	for (const d of p.deposits) {
		const address = getAddress(d.address);
		if (seen.has(address)) throw new Error(`evm-sweep: deposit ${address} twice in one batch`);
		seen.add(address);
		if (d.authorizationNonce === null) continue;
		const wallet = walletOf(d.key);
		if (wallet.address !== address) throw new Error(`evm-sweep: the key given for ${address} is not that address's key`);
		// authorizeSync: chainId and nonce given, so no provider is asked for them.
		authorizationList.push(wallet.authorizeSync({ address: getAddress(p.delegate), nonce: d.authorizationNonce, chainId: authorizationChainId(p.chainId) }));
	}
	const data = sweepBatcherInterface.encodeFunctionData("sweep", [getAddress(p.token), getAddress(p.to), p.deposits.map(d => getAddress(d.address))]);
	return { data, authorizationList };
}

/**
 * The sweeper wallet's call SweepBatcher.sweep(token, to, deposits): type 4 with an authorization
 * (deposit → delegate) for every deposit whose `authorizationNonce` is set, type 2 when all are
 * already delegated (EIP-7702 forbids an empty authorization list). All or nothing: one deposit
 * that does not run SweepDelegate (an authorization with a stale nonce) reverts the batch; the
 * authorizations that were valid stay applied even then (EIP-7702 applies them before execution).
 */
export async function signBatchTokenSweep(p: BatchTokenSweepParams): Promise<SignedTx> {
	const { data, authorizationList } = await batchParts(p);
	return sign(walletOf(p.sweeperKey), { chainId: p.chainId, nonce: p.nonce, to: p.batcher, gasLimit: p.gasLimit, fees: p.fees, data, authorizationList });
}

/**
 * Gas limit for a batch by formula, when an estimate is not wanted: measured on anvil with
 * TestToken (docs/withdrawals.md) and given room for heavier tokens (proxied stablecoins). The
 * limit must cover the gas before refunds, which is more than a receipt's gasUsed.
 */
export function batchGasLimit(deposits: number, authorizations: number, perDeposit = BATCH_GAS_PER_DEPOSIT): bigint {
	return BATCH_GAS_BASE + BigInt(deposits) * perDeposit + BigInt(authorizations) * BATCH_GAS_PER_AUTHORIZATION;
}
/** Transaction base, calldata, the batcher, and the first credit of `to` (a zero → non-zero store). */
export const BATCH_GAS_BASE = 80_000n;
/** One deposit's call through the delegate to the token, with headroom for proxied tokens. */
export const BATCH_GAS_PER_DEPOSIT = 40_000n;
/** EIP-7702 charges 25,000 per authorization (12,500 refunded when the account already exists). */
export const BATCH_GAS_PER_AUTHORIZATION = 25_000n;

/**
 * eth_estimateGas of the batch (authorizations signed, nothing sent) plus `marginPercent` (default
 * 20): the node runs the sweep against its current state, so a deposit that cannot be swept fails
 * here, before anything is signed for real.
 */
export async function estimateBatchGas(provider: EvmRpc, p: Omit<BatchTokenSweepParams, "nonce" | "fees" | "gasLimit">, marginPercent = 20): Promise<bigint> {
	const { data, authorizationList } = await batchParts(p);
	const from = walletOf(p.sweeperKey).address;
	const request: Record<string, unknown> = { from, to: getAddress(p.batcher), data };
	if (authorizationList.length > 0) {
		request.authorizationList = authorizationList.map(a => ({
			address: a.address,
			chainId: toQuantity(a.chainId),
			nonce: toQuantity(a.nonce),
			yParity: toQuantity(a.signature.yParity),
			r: a.signature.r,
			s: a.signature.s,
		}));
	}
	const estimate = BigInt((await provider.send("eth_estimateGas", [request])) as string);
	return (estimate * BigInt(100 + marginPercent) + 99n) / 100n;
}

/** The code of an address delegated with EIP-7702: 0xef0100 followed by the delegate's address. */
export const DELEGATION_PREFIX = "0xef0100";

/** The delegate an address points to with EIP-7702, or null (no code, or a contract's own code). */
export async function delegationOf(provider: EvmRpc, address: string): Promise<string | null> {
	const code = ((await provider.send("eth_getCode", [getAddress(address), "latest"])) as string).toLowerCase();
	return code.length === 48 && code.startsWith(DELEGATION_PREFIX) ? getAddress(`0x${code.slice(8)}`) : null;
}

export async function isDelegatedTo(provider: EvmRpc, address: string, delegate: string): Promise<boolean> {
	return (await delegationOf(provider, address)) === getAddress(delegate);
}

/**
 * `authorizationNonce` for a deposit of a batch: null when it already delegates to `delegate`,
 * else its pending nonce (the nonce its authorization must carry; the sender is another account).
 */
export async function authorizationNonceFor(provider: EvmRpc, address: string, delegate: string): Promise<number | null> {
	if (await isDelegatedTo(provider, address, delegate)) return null;
	return Number(BigInt((await provider.send("eth_getTransactionCount", [getAddress(address), "pending"])) as string));
}

/** `authorizationNonceFor` of many addresses, asked at once (ethers' JsonRpcProvider sends them as one JSON-RPC batch). */
export async function authorizationNoncesFor(provider: EvmRpc, addresses: string[], delegate: string): Promise<Array<number | null>> {
	return Promise.all(addresses.map(a => authorizationNonceFor(provider, a, delegate)));
}

// ---------------------------------------------------------------------------------------------
// Fallback without EIP-7702: gas top-up, then the deposit key's own transfer
// ---------------------------------------------------------------------------------------------

/** The wei a deposit address needs for a token transfer of `gasLimit` at `fees`, given what it holds. */
export function gasTopUpAmount(gasLimit: bigint, fees: Fees, balance = 0n): bigint {
	const need = maxFeeCost(gasLimit, fees) - balance;
	return need > 0n ? need : 0n;
}

/** An exact amount of the native coin from any of our keys (a merchant's withdrawal request paid from a deposit). */
export async function signNativeTransfer(p: { chainId: number | bigint; key: PrivateKey; nonce: number; to: string; amount: bigint; fees: Fees; gasLimit?: bigint }): Promise<SignedTx> {
	if (p.amount <= 0n) throw new Error("evm-sweep: a transfer needs a positive amount");
	return sign(walletOf(p.key), { chainId: p.chainId, nonce: p.nonce, to: getAddress(p.to), gasLimit: p.gasLimit ?? NATIVE_TRANSFER_GAS, fees: p.fees, value: p.amount });
}

export interface GasTopUpParams {
	chainId: number | bigint;
	sweeperKey: PrivateKey;
	nonce: number;
	to: string;
	amount: bigint;
	fees: Fees;
	gasLimit?: bigint;
}

/** The sweeper wallet's transfer of `amount` wei to a deposit address, to pay its token transfer. */
export async function signGasTopUp(p: GasTopUpParams): Promise<SignedTx> {
	if (p.amount <= 0n) throw new Error("evm-sweep: a gas top-up needs a positive amount");
	return sign(walletOf(p.sweeperKey), { chainId: p.chainId, nonce: p.nonce, to: p.to, gasLimit: p.gasLimit ?? NATIVE_TRANSFER_GAS, fees: p.fees, value: p.amount });
}

export interface TokenTransferParams {
	chainId: number | bigint;
	depositKey: PrivateKey;
	nonce: number;
	token: string;
	to: string;
	amount: bigint;
	fees: Fees;
	gasLimit?: bigint;
}

/** The deposit key's ERC-20 transfer(to, amount). */
export async function signTokenTransfer(p: TokenTransferParams): Promise<SignedTx> {
	if (p.amount <= 0n) throw new Error("evm-sweep: a token transfer needs a positive amount");
	const data = erc20Interface.encodeFunctionData("transfer", [getAddress(p.to), p.amount]);
	return sign(walletOf(p.depositKey), { chainId: p.chainId, nonce: p.nonce, to: p.token, gasLimit: p.gasLimit ?? TOKEN_TRANSFER_GAS_LIMIT, fees: p.fees, data });
}

// ---------------------------------------------------------------------------------------------
// Broadcasting and reading back
// ---------------------------------------------------------------------------------------------

/** Node messages for a transaction it already holds (geth, erigon, besu, nethermind, reth, anvil). */
const ALREADY_KNOWN = /already known|known transaction|already imported|alreadyknown|already exists|already in the (pool|mempool)/i;
const NONCE_USED = /nonce too low|oldnonce|nonce has already been used|nonce is too low|invalid nonce/i;

function errorText(err: unknown): string {
	const parts: string[] = [];
	let e = err as { message?: unknown; error?: unknown; info?: unknown; shortMessage?: unknown } | undefined;
	for (let depth = 0; e && depth < 4; depth++) {
		for (const m of [e.message, e.shortMessage]) if (typeof m === "string") parts.push(m);
		const info = e.info as { error?: { message?: unknown } } | undefined;
		if (typeof info?.error?.message === "string") parts.push(info.error.message);
		e = e.error as typeof e;
	}
	return parts.join(" | ");
}

/**
 * eth_sendRawTransaction, idempotent: a node that already has this transaction (in its pool, or
 * mined: "nonce too low" while the chain holds this very hash) counts as success, so re-sending a
 * recorded transaction after a crash is harmless. Resolves with the hash; anything else throws.
 */
export async function broadcast(provider: EvmRpc, raw: string): Promise<string> {
	const hash = Transaction.from(raw).hash!;
	try {
		const returned = (await provider.send("eth_sendRawTransaction", [raw])) as string;
		if (typeof returned === "string" && returned.toLowerCase() !== hash.toLowerCase()) throw new Error(`broadcast: the node answered hash ${returned} for ${hash}`);
		return hash;
	} catch (err) {
		const text = errorText(err);
		if (ALREADY_KNOWN.test(text)) return hash;
		if (NONCE_USED.test(text) && (await provider.send("eth_getTransactionByHash", [hash])) !== null) return hash;
		throw err;
	}
}

/**
 * What a confirmed batch actually moved, per deposit address (checksummed): the token's Transfer
 * logs from each deposit to `to`. The delegate sweeps whole balances, so this can exceed what was
 * planned when a payment arrived in between; the ledger books these amounts.
 */
export function sweptAmounts(receipt: Pick<TransactionReceipt, "logs">, token: string, to: string): Map<string, bigint> {
	const topic = erc20Interface.getEvent("Transfer")!.topicHash;
	const tokenAddr = getAddress(token);
	const toAddr = getAddress(to);
	const out = new Map<string, bigint>();
	for (const log of receipt.logs) {
		if (log.topics[0] !== topic || getAddress(log.address) !== tokenAddr) continue;
		const parsed = erc20Interface.parseLog({ topics: [...log.topics], data: log.data });
		if (!parsed || getAddress(parsed.args.to as string) !== toAddr) continue;
		const from = getAddress(parsed.args.from as string);
		out.set(from, (out.get(from) ?? 0n) + (parsed.args.value as bigint));
	}
	return out;
}

// ---------------------------------------------------------------------------------------------
// Deployment (tests, dev chain, bench; production addresses come from configuration)
// ---------------------------------------------------------------------------------------------

/**
 * Deploys SweepBatcher (owner: `owner`, default the deploying wallet, which should be the sweeper
 * wallet) and then SweepDelegate pointing at it: the delegate needs the batcher's address in its
 * constructor, so the batcher goes first.
 */
export async function deploySweepContracts(wallet: ContractRunner & { getAddress(): Promise<string> }, owner?: string): Promise<{ batcher: string; delegate: string }> {
	contractArtifacts(); // compile (or load the cache) before the first deployment
	const batcher = await deployContract(wallet, "SweepBatcher", [getAddress(owner ?? (await wallet.getAddress()))]);
	const batcherAddress = await batcher.getAddress();
	const delegate = await deployContract(wallet, "SweepDelegate", [batcherAddress]);
	return { batcher: batcherAddress, delegate: await delegate.getAddress() };
}
