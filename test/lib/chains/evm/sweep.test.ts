/**
 * The EVM sweep primitives: the fee ladder and the native-value maths (pure), then the sweeps
 * themselves against a real anvil node (native, EIP-7702 batches of 20 ERC-20 deposit addresses,
 * the gas top-up fallback, a stuck transaction replaced, re-broadcasts).
 * No database: the anvil part runs in the sqlite jest project only.
 */
import crypto from "node:crypto";
import { Contract, Wallet, computeAddress, getAddress, hexlify, parseEther, parseUnits, type TransactionReceipt } from "ethers";
import { anvilPrivateKeys } from "../../../../lib/dev/anvil";
import { deployContract } from "../../../../lib/chains/evm/contracts";
import { evmCodec } from "../../../../lib/chains/evm/codec";
import {
	NATIVE_TRANSFER_GAS, TOKEN_TRANSFER_GAS_LIMIT, authorizationNonceFor, authorizationNoncesFor, batchGasLimit, broadcast, bumpFees, delegationOf, deploySweepContracts,
	estimateBatchGas, estimateNativeGas, feesFrom, gasLimitOf, isRevert, gasTopUpAmount, isDelegatedTo, nativeSweepValue, replacementFees, signBatchTokenSweep, signGasTopUp, signNativeSweep,
	signTokenTransfer, suggestFees, sweepBatcherInterface, sweepDelegateInterface, sweptAmounts, type BatchDeposit, type Fees,
} from "../../../../lib/chains/evm/sweep";
import { startAnvil, type Anvil } from "../../../helpers/anvil";
import { ABANDON_SEED, TESTNET } from "../fixtures";

const GWEI = 1_000_000_000n;

describe("bumpFees", () => {
	const fees: Fees = { maxFeePerGas: 30n * GWEI, maxPriorityFeePerGas: 2n * GWEI };

	it("step 0 is the fees themselves", () => {
		expect(bumpFees(fees, 0)).toEqual(fees);
	});

	it("raises both fields by at least 12.5% at every step", () => {
		let previous = fees;
		for (let step = 1; step <= 12; step++) {
			const next = bumpFees(fees, step);
			expect(next.maxFeePerGas * 8n).toBeGreaterThanOrEqual(previous.maxFeePerGas * 9n);
			expect(next.maxPriorityFeePerGas * 8n).toBeGreaterThanOrEqual(previous.maxPriorityFeePerGas * 9n);
			expect(next.maxPriorityFeePerGas).toBeLessThanOrEqual(next.maxFeePerGas);
			previous = next;
		}
		expect(bumpFees(fees, 1)).toEqual({ maxFeePerGas: 33_750_000_000n, maxPriorityFeePerGas: 2_250_000_000n });
	});

	it("rounds up, so tiny and zero values still rise", () => {
		expect(bumpFees({ maxFeePerGas: 7n, maxPriorityFeePerGas: 0n }, 1)).toEqual({ maxFeePerGas: 8n, maxPriorityFeePerGas: 1n });
		expect(bumpFees({ maxFeePerGas: 1n, maxPriorityFeePerGas: 1n }, 2)).toEqual({ maxFeePerGas: 3n, maxPriorityFeePerGas: 3n });
	});

	it("refuses a negative or fractional step", () => {
		expect(() => bumpFees(fees, -1)).toThrow(/step/);
		expect(() => bumpFees(fees, 1.5)).toThrow(/step/);
	});

	it("replacementFees: one bump, or the network's fees when higher", () => {
		expect(replacementFees(fees, { maxFeePerGas: GWEI, maxPriorityFeePerGas: GWEI })).toEqual(bumpFees(fees, 1));
		expect(replacementFees(fees, { maxFeePerGas: 100n * GWEI, maxPriorityFeePerGas: GWEI })).toEqual({ maxFeePerGas: 100n * GWEI, maxPriorityFeePerGas: 2_250_000_000n });
	});
});

describe("EIP-7702 authorizations", () => {
	const key = `0x${"11".repeat(32)}`;
	const deposit = { key, address: new Wallet(key).address, authorizationNonce: 0 };
	const batch = (chainId: number | bigint) => ({
		chainId,
		sweeperKey: `0x${"22".repeat(32)}`,
		nonce: 0,
		batcher: getAddress(`0x${"33".repeat(20)}`),
		delegate: getAddress(`0x${"44".repeat(20)}`),
		token: getAddress(`0x${"55".repeat(20)}`),
		to: getAddress(`0x${"66".repeat(20)}`),
		deposits: [deposit],
		fees: { maxFeePerGas: 2n, maxPriorityFeePerGas: 1n },
		gasLimit: 500_000n,
	});

	it("are never signed for chain id 0 (valid on every chain) or below", async () => {
		for (const chainId of [0, 0n, -1, -1n, 1.5]) {
			await expect(signBatchTokenSweep(batch(chainId))).rejects.toThrow(/refusing to sign an EIP-7702 authorization for chain id/);
		}
		// A positive chain id is signed.
		const signed = await signBatchTokenSweep(batch(31337));
		expect(signed.hash).toMatch(/^0x[0-9a-f]{64}$/);
	});
});

describe("fee and value maths", () => {
	const fees: Fees = { maxFeePerGas: 10n * GWEI, maxPriorityFeePerGas: GWEI };

	it("nativeSweepValue: balance minus gasLimit x maxFeePerGas; null when nothing is left or below the minimum", () => {
		expect(nativeSweepValue(parseEther("1"), 21_000n, fees)).toBe(parseEther("1") - 210_000n * GWEI);
		expect(nativeSweepValue(210_000n * GWEI, 21_000n, fees)).toBeNull();
		expect(nativeSweepValue(210_000n * GWEI + 1n, 21_000n, fees)).toBe(1n);
		expect(nativeSweepValue(100n, 21_000n, fees)).toBeNull();
		expect(nativeSweepValue(210_000n * GWEI + 999n, 21_000n, fees, 1000n)).toBeNull();
		expect(nativeSweepValue(210_000n * GWEI + 1000n, 21_000n, fees, 1000n)).toBe(1000n);
	});

	it("gasTopUpAmount: what the transfer may cost, less what the address already holds", () => {
		expect(gasTopUpAmount(65_000n, fees)).toBe(650_000n * GWEI);
		expect(gasTopUpAmount(65_000n, fees, 50_000n * GWEI)).toBe(600_000n * GWEI);
		expect(gasTopUpAmount(65_000n, fees, parseEther("1"))).toBe(0n);
	});

	it("feesFrom: base fee x 2 + median tip, floored, capped", () => {
		expect(feesFrom(10n * GWEI, [GWEI, 3n * GWEI, 2n * GWEI])).toEqual({ baseFeePerGas: 10n * GWEI, maxFeePerGas: 22n * GWEI, maxPriorityFeePerGas: 2n * GWEI });
		expect(feesFrom(10n, [0n, 0n])).toEqual({ baseFeePerGas: 10n, maxFeePerGas: 20n + 100_000_000n, maxPriorityFeePerGas: 100_000_000n });
		expect(feesFrom(10n * GWEI, [5n * GWEI], { priorityCap: 2n * GWEI, maxFeeCap: 15n * GWEI })).toEqual({
			baseFeePerGas: 10n * GWEI, maxFeePerGas: 15n * GWEI, maxPriorityFeePerGas: 2n * GWEI,
		});
	});

	it("a bad private key is refused without quoting it", async () => {
		const key = "0x" + "ab".repeat(31);
		const err = await signNativeSweep({ chainId: 1, depositKey: key, to: computeAddress(anvilPrivateKeys(1)[0]), balance: parseEther("1"), fees, nonce: 0 }).then(() => null, (e: unknown) => e as Error);
		expect(err).toBeInstanceOf(Error);
		expect(err!.message).not.toContain("abab");
	});
});

/** Nothing here depends on the backend: run once (sqlite project), not twice. */
const describeChain = process.env.TEST_BACKEND === "mysql" ? describe.skip : describe;

describeChain("EVM sweeps (anvil)", () => {
	let anvil: Anvil;
	let token: Contract;
	let batcher: string;
	let delegate: string;
	const sweeperKey = anvilPrivateKeys(2)[1];
	const sweeper = new Wallet(sweeperKey).address;
	let nextIndex = 0;

	/** Fresh HD deposit keys (the same derivation the gateway uses), never used by another test. */
	async function depositKeys(count: number): Promise<Array<{ key: Uint8Array; address: string }>> {
		const out = [];
		for (let i = 0; i < count; i++) {
			const key = await evmCodec.derivePrivateKey(ABANDON_SEED, TESTNET, 1_000 + nextIndex++);
			out.push({ key, address: computeAddress(hexlify(key)) });
		}
		return out;
	}
	const randomAddress = () => getAddress(`0x${crypto.randomBytes(20).toString("hex")}`);
	const nonceOf = async (address: string) => anvil.provider.getTransactionCount(address, "pending");
	const balanceOf = async (address: string) => (await token.balanceOf(address)) as bigint;
	const receiptOf = async (hash: string): Promise<TransactionReceipt> => (await anvil.provider.waitForTransaction(hash))!;
	const mint = async (to: string, amount: bigint) => (await (await token.mint(to, amount)).wait());
	const fees = () => suggestFees(anvil.provider);

	beforeAll(async () => {
		anvil = await startAnvil();
		token = await deployContract(anvil.accounts[0], "TestToken", ["Test USD Coin", "USDC"]);
		({ batcher, delegate } = await deploySweepContracts(new Wallet(sweeperKey, anvil.provider)));
	}, 60_000);
	afterAll(async () => {
		await anvil?.stop();
	});

	it("native gas: 21,000 to an address without code, the estimate plus a margin to a contract whose receive() writes storage, a revert to one that refuses", async () => {
		const [deposit] = await depositKeys(1);
		await (await anvil.accounts[0].sendTransaction({ to: deposit.address, value: parseEther("1") })).wait();
		expect(await estimateNativeGas(anvil.provider, { from: deposit.address, to: randomAddress(), value: parseEther("0.5") })).toBe(NATIVE_TRANSFER_GAS);
		const safeLike = await deployContract(anvil.accounts[0], "StoringReceiver");
		const gasLimit = await estimateNativeGas(anvil.provider, { from: deposit.address, to: await safeLike.getAddress(), value: parseEther("0.5") });
		expect(gasLimit).toBeGreaterThan(NATIVE_TRANSFER_GAS + 20_000n);
		// Signed with that limit, the send lands and the contract ran.
		const f = await fees();
		const signed = await signNativeSweep({ chainId: anvil.chainId, depositKey: deposit.key, to: await safeLike.getAddress(), balance: await anvil.provider.getBalance(deposit.address), fees: f, nonce: 0, gasLimit });
		expect(gasLimitOf(signed!.raw)).toBe(gasLimit);
		expect((await receiptOf(await broadcast(anvil.provider, signed!.raw))).status).toBe(1);
		expect(await safeLike.count()).toBe(1n);
		const refuser = await deployContract(anvil.accounts[0], "RevertingReceiver");
		const err = await estimateNativeGas(anvil.provider, { from: deposit.address, to: await refuser.getAddress(), value: 1n }).then(() => null, e => e);
		expect(err).not.toBeNull();
		expect(isRevert(err)).toBe(true);
		expect(isRevert(Object.assign(new Error("server response 502 Bad Gateway"), { code: "SERVER_ERROR" }))).toBe(false);
		expect(isRevert(Object.assign(new Error("request timeout"), { code: "TIMEOUT" }))).toBe(false);
	});

	it("native: the deposit address sends its balance minus the fee; the destination receives exactly that", async () => {
		const [deposit] = await depositKeys(1);
		const to = randomAddress();
		await (await anvil.accounts[0].sendTransaction({ to: deposit.address, value: parseEther("1.5") })).wait();
		const balance = await anvil.provider.getBalance(deposit.address);
		const f = await fees();
		const tx = await signNativeSweep({ chainId: anvil.chainId, depositKey: deposit.key, to, balance, fees: f, nonce: await nonceOf(deposit.address) });
		expect(tx).not.toBeNull();
		expect(tx!.value).toBe(balance - NATIVE_TRANSFER_GAS * f.maxFeePerGas);
		expect(tx!.from).toBe(deposit.address);
		expect(await broadcast(anvil.provider, tx!.raw)).toBe(tx!.hash);
		const receipt = await receiptOf(tx!.hash);
		expect(receipt.status).toBe(1);
		expect(await anvil.provider.getBalance(to)).toBe(tx!.value);
		const left = await anvil.provider.getBalance(deposit.address);
		expect(left).toBe(balance - tx!.value - receipt.gasUsed * receipt.gasPrice);
		expect(left).toBeLessThan(NATIVE_TRANSFER_GAS * f.maxFeePerGas);

		// What is left is not worth another sweep.
		expect(await signNativeSweep({ chainId: anvil.chainId, depositKey: deposit.key, to, balance: left, fees: f, nonce: 1 })).toBeNull();
	});

	async function sweepBatch(deposits: BatchDeposit[], to: string): Promise<{ receipt: TransactionReceipt; type: number; estimate: bigint }> {
		const f = await fees();
		const common = { chainId: anvil.chainId, sweeperKey, batcher, delegate, token: await token.getAddress(), to, deposits };
		const estimate = await estimateBatchGas(anvil.provider, common);
		const authorizations = deposits.filter(d => d.authorizationNonce !== null).length;
		expect(estimate).toBeLessThanOrEqual(batchGasLimit(deposits.length, authorizations));
		const tx = await signBatchTokenSweep({ ...common, nonce: await nonceOf(sweeper), fees: f, gasLimit: estimate });
		expect(await broadcast(anvil.provider, tx.raw)).toBe(tx.hash);
		const receipt = await receiptOf(tx.hash);
		expect(receipt.status).toBe(1);
		return { receipt, type: tx.type, estimate };
	}

	it("ERC-20: 20 deposit addresses without ETH swept in one EIP-7702 transaction, then again once delegated", async () => {
		const keys = await depositKeys(20);
		const to = randomAddress();
		const amounts = keys.map((_, i) => parseUnits(String(10 + i), 6) + BigInt(i));
		for (const [i, k] of keys.entries()) await mint(k.address, amounts[i]);
		for (const k of keys) expect(await anvil.provider.getBalance(k.address)).toBe(0n);

		const first: BatchDeposit[] = [];
		for (const k of keys) first.push({ ...k, authorizationNonce: await authorizationNonceFor(anvil.provider, k.address, delegate) });
		expect(first.every(d => d.authorizationNonce === 0)).toBe(true);
		const round1 = await sweepBatch(first, to);
		expect(round1.type).toBe(4);
		const perAddress1 = Number(round1.receipt.gasUsed) / keys.length;
		console.log(`sweep-evm test: first sweep of 20 (authorizations included): ${round1.receipt.gasUsed} gas, ${perAddress1.toFixed(0)} gas/address (estimate with margin ${round1.estimate})`);
		expect(perAddress1).toBeLessThanOrEqual(35_000);

		const total = amounts.reduce((a, b) => a + b, 0n);
		expect(await balanceOf(to)).toBe(total);
		for (const k of keys) expect(await balanceOf(k.address)).toBe(0n);
		const moved = sweptAmounts(round1.receipt, await token.getAddress(), to);
		expect(moved.size).toBe(20);
		for (const [i, k] of keys.entries()) expect(moved.get(k.address)).toBe(amounts[i]);
		for (const k of keys) {
			expect(await isDelegatedTo(anvil.provider, k.address, delegate)).toBe(true);
			expect(await delegationOf(anvil.provider, k.address)).toBe(delegate);
		}

		// Second payments to the same addresses: no authorization needed, a plain type-2 call.
		for (const [i, k] of keys.entries()) await mint(k.address, amounts[i]);
		const nonces = await authorizationNoncesFor(anvil.provider, keys.map(k => k.address), delegate);
		const second: BatchDeposit[] = keys.map((k, i) => ({ ...k, authorizationNonce: nonces[i] }));
		expect(second.every(d => d.authorizationNonce === null)).toBe(true);
		const round2 = await sweepBatch(second, to);
		expect(round2.type).toBe(2);
		const perAddress2 = Number(round2.receipt.gasUsed) / keys.length;
		console.log(`sweep-evm test: repeat sweep of 20 (already delegated): ${round2.receipt.gasUsed} gas, ${perAddress2.toFixed(0)} gas/address`);
		expect(perAddress2).toBeLessThanOrEqual(15_000);
		expect(await balanceOf(to)).toBe(2n * total);
		for (const k of keys) expect(await balanceOf(k.address)).toBe(0n);
	});

	it("a batch mixing delegated and new deposit addresses carries authorizations only for the new ones", async () => {
		const keys = await depositKeys(3);
		const to = randomAddress();
		for (const k of keys) await mint(k.address, 5_000_000n);
		await sweepBatch([{ ...keys[0], authorizationNonce: 0 }], to);
		const mixed: BatchDeposit[] = [];
		for (const k of keys) mixed.push({ ...k, authorizationNonce: await authorizationNonceFor(anvil.provider, k.address, delegate) });
		expect(mixed.map(d => d.authorizationNonce)).toEqual([null, 0, 0]);
		await mint(keys[0].address, 1n);
		const { type } = await sweepBatch(mixed, to);
		expect(type).toBe(4);
		expect(await balanceOf(to)).toBe(15_000_001n);
	});

	it("signBatchTokenSweep refuses a key that is not the deposit's, and a deposit twice", async () => {
		const [a, b] = await depositKeys(2);
		const common = { chainId: anvil.chainId, sweeperKey, nonce: 0, batcher, delegate, token: await token.getAddress(), to: randomAddress(), fees: await fees(), gasLimit: 500_000n };
		await expect(signBatchTokenSweep({ ...common, deposits: [{ key: a.key, address: b.address, authorizationNonce: 0 }] })).rejects.toThrow(/not that address's key/);
		await expect(signBatchTokenSweep({ ...common, deposits: [{ ...a, authorizationNonce: 0 }, { ...a, authorizationNonce: null }] })).rejects.toThrow(/twice/);
	});

	it("only the batcher may call the delegate, and only the sweeper wallet the batcher; plain ETH to a delegated address is accepted", async () => {
		const [deposit] = await depositKeys(1);
		const to = randomAddress();
		await mint(deposit.address, 7_000_000n);
		await sweepBatch([{ ...deposit, authorizationNonce: 0 }], to);
		await mint(deposit.address, 3_000_000n);
		const tokenAddress = await token.getAddress();
		const stranger = anvil.accounts[2];

		// Straight to the delegated deposit address, from another account: NotBatcher.
		const direct = sweepDelegateInterface.encodeFunctionData("sweepToken", [tokenAddress, await stranger.getAddress()]);
		await expect(stranger.sendTransaction({ to: deposit.address, data: direct, gasLimit: 200_000n }).then(t => t.wait())).rejects.toThrow();
		stranger.reset();
		await expect(anvil.provider.call({ from: await stranger.getAddress(), to: deposit.address, data: direct })).rejects.toThrow();
		// Through the batcher, from another account: NotOwner.
		const viaBatcher = sweepBatcherInterface.encodeFunctionData("sweep", [tokenAddress, await stranger.getAddress(), [deposit.address]]);
		await expect(anvil.provider.call({ from: await stranger.getAddress(), to: batcher, data: viaBatcher })).rejects.toThrow();
		expect(await balanceOf(deposit.address)).toBe(3_000_000n);

		// A plain ETH payment to the delegated deposit address goes through (receive()).
		const paid = await (await anvil.accounts[0].sendTransaction({ to: deposit.address, value: parseEther("0.25") })).wait();
		expect(paid!.status).toBe(1);
		expect(await anvil.provider.getBalance(deposit.address)).toBe(parseEther("0.25"));
		// ... and the batcher can move it out without the deposit paying gas.
		const f = await fees();
		const data = sweepBatcherInterface.encodeFunctionData("sweepNative", [to, [deposit.address]]);
		const sweeperWallet = new Wallet(sweeperKey, anvil.provider);
		const native = await (await sweeperWallet.sendTransaction({ to: batcher, data, nonce: await nonceOf(sweeper), ...f })).wait();
		expect(native!.status).toBe(1);
		expect(await anvil.provider.getBalance(deposit.address)).toBe(0n);
		expect(await anvil.provider.getBalance(to)).toBe(parseEther("0.25"));
	});

	it("fallback without EIP-7702: a gas top-up from the sweeper wallet, then the deposit key's transfer", async () => {
		const [deposit] = await depositKeys(1);
		const to = randomAddress();
		const tokenAddress = await token.getAddress();
		await mint(deposit.address, 42_000_000n);
		const f = await fees();
		const amount = gasTopUpAmount(TOKEN_TRANSFER_GAS_LIMIT, f, await anvil.provider.getBalance(deposit.address));
		const topUp = await signGasTopUp({ chainId: anvil.chainId, sweeperKey, nonce: await nonceOf(sweeper), to: deposit.address, amount, fees: f });
		expect(topUp.value).toBe(amount);
		await broadcast(anvil.provider, topUp.raw);
		expect((await receiptOf(topUp.hash)).status).toBe(1);

		const transfer = await signTokenTransfer({ chainId: anvil.chainId, depositKey: deposit.key, nonce: await nonceOf(deposit.address), token: tokenAddress, to, amount: 42_000_000n, fees: f });
		expect(transfer.from).toBe(deposit.address);
		await broadcast(anvil.provider, transfer.raw);
		const receipt = await receiptOf(transfer.hash);
		expect(receipt.status).toBe(1);
		expect(await balanceOf(to)).toBe(42_000_000n);
		expect(await balanceOf(deposit.address)).toBe(0n);
		expect(sweptAmounts(receipt, tokenAddress, to).get(deposit.address)).toBe(42_000_000n);
		expect(await anvil.provider.getBalance(deposit.address)).toBe(amount - receipt.gasUsed * receipt.gasPrice);
	});

	it("a stuck transaction is replaced by the bumped one with the same nonce; re-broadcasts are harmless", async () => {
		const [deposit] = await depositKeys(1);
		await anvil.setAutomine(false);
		try {
			const sent = await fees();
			const nonce = await nonceOf(sweeper);
			const stuck = await signGasTopUp({ chainId: anvil.chainId, sweeperKey, nonce, to: deposit.address, amount: 1_000n, fees: sent });
			expect(await broadcast(anvil.provider, stuck.raw)).toBe(stuck.hash);
			expect(await broadcast(anvil.provider, stuck.raw)).toBe(stuck.hash); // already known
			// The base fee jumps past its maxFeePerGas before a block takes it: stuck in the pool.
			await anvil.rpc("anvil_setNextBlockBaseFeePerGas", [(sent.maxFeePerGas * 4n).toString()]);
			await anvil.mine();
			expect(await anvil.provider.getTransactionReceipt(stuck.hash)).toBeNull();

			// Replacement: same nonce, up the ladder until the fees clear the base fee again.
			const base = (await fees()).baseFeePerGas;
			let step = 1;
			let replacementFeesNow = bumpFees(sent, step);
			while (replacementFeesNow.maxFeePerGas < base) replacementFeesNow = bumpFees(sent, ++step);
			expect(step).toBeGreaterThan(1);
			const replacement = await signGasTopUp({ chainId: anvil.chainId, sweeperKey, nonce, to: deposit.address, amount: 1_000n, fees: replacementFeesNow });
			expect(replacement.hash).not.toBe(stuck.hash);
			expect(await broadcast(anvil.provider, replacement.raw)).toBe(replacement.hash);
			await anvil.mine();
			const receipt = await anvil.provider.getTransactionReceipt(replacement.hash);
			expect(receipt?.status).toBe(1);
			expect(await anvil.provider.getTransactionReceipt(stuck.hash)).toBeNull();
			expect(await anvil.provider.getBalance(deposit.address)).toBe(1_000n);

			// Re-sending the mined transaction (a restart after a crash) is a success, and moves nothing again.
			expect(await broadcast(anvil.provider, replacement.raw)).toBe(replacement.hash);
			await anvil.mine();
			expect(await anvil.provider.getBalance(deposit.address)).toBe(1_000n);
			// Re-sending the replaced one is not: its nonce went to another transaction.
			await expect(broadcast(anvil.provider, stuck.raw)).rejects.toThrow();
		} finally {
			await anvil.setAutomine(true);
		}
	});
});
