/**
 * The Solana sweep transactions (lib/chains/solana/sweep.ts), executed signed on litesvm: a real
 * Solana runtime in-process (System, SPL Token and associated-token programs, fees, rent and
 * signature checks as a validator runs them). SOL swept to exactly zero, token sweeps paid by the
 * sweeper wallet with the destination's token account created and the deposits' closed (rent
 * back), 20 token deposits in batches, exact withdrawal payments; and the pure parts: fee maths,
 * sizes and batch limits, the expiry verdict. No database: runs the same in both jest projects.
 */
import {
	ACCOUNT_SIZE, ASSOCIATED_TOKEN_PROGRAM_ID, AccountLayout, AccountState, MINT_SIZE, TOKEN_PROGRAM_ID, createAssociatedTokenAccountIdempotentInstruction, createInitializeMint2Instruction,
	createMintToInstruction, getAssociatedTokenAddressSync,
} from "@solana/spl-token";
import { Keypair, PublicKey, SystemProgram, Transaction, VersionedTransaction } from "@solana/web3.js";
import { decodeBase58, getBytes, toBeArray, zeroPadValue } from "ethers";
import { FailedTransactionMetadata, LiteSVM } from "litesvm";
import { solanaCodec } from "../../../../lib/chains/solana/codec";
import {
	MAX_TRANSACTION_SIZE, SYSTEM_ACCOUNT_RENT_EXEMPT, SweepRefused, TOKEN_ACCOUNT_RENT_EXEMPT, batches, buildSolPayment, buildSolSweep, buildTokenPayment,
	buildTokenSweep, feeFor, maxSolDepositsPerTransaction, maxTokenDepositsPerTransaction, rentExemptMinimum, sendVerdict, solSweepSize, tokenSweepSize,
	type SignedSolanaTx, type TokenDeposit,
} from "../../../../lib/chains/solana/sweep";
import { ABANDON_SEED } from "../fixtures";

const DECIMALS = 6;

/** A deposit's key and address, derived as the gateway derives them (m/44'/501'/i'/0'). */
async function deposit(index: number): Promise<{ key: Uint8Array; address: string; pk: PublicKey }> {
	const key = await solanaCodec.derivePrivateKey(ABANDON_SEED, { isTestnet: true }, index);
	const { address } = await solanaCodec.deriveAddress(ABANDON_SEED, { isTestnet: true }, index);
	return { key, address, pk: new PublicKey(address) };
}

function blockhashOf(svm: LiteSVM) {
	// litesvm has no block heights: any value works for signing; expiry is the runtime's blockhash check.
	return { blockhash: svm.latestBlockhash(), lastValidBlockHeight: 150n };
}

/** Sends the built bytes exactly as an RPC node would receive them; throws with the runtime's error. */
function send(svm: LiteSVM, signed: SignedSolanaTx): void {
	const bytes = Buffer.from(signed.serialized, "base64");
	expect(bytes.length).toBe(signed.size);
	expect(bytes.length).toBeLessThanOrEqual(MAX_TRANSACTION_SIZE);
	const result = svm.sendTransaction(VersionedTransaction.deserialize(bytes));
	if (result instanceof FailedTransactionMetadata) throw new Error(`transaction failed: ${result.err().toString()} ${result.meta().logs().join("\n")}`);
}

const balance = (svm: LiteSVM, pk: PublicKey) => svm.getBalance(pk) ?? 0n;

function run(svm: LiteSVM, payer: Keypair, signers: Keypair[], ...instructions: Parameters<Transaction["add"]>): void {
	const tx = new Transaction({ feePayer: payer.publicKey, recentBlockhash: svm.latestBlockhash() }).add(...instructions);
	tx.sign(payer, ...signers);
	const result = svm.sendTransaction(tx);
	if (result instanceof FailedTransactionMetadata) throw new Error(`setup failed: ${result.err().toString()}`);
}

function tokenAmount(svm: LiteSVM, account: PublicKey): bigint | null {
	const info = svm.getAccount(account);
	if (!info || info.data.length === 0) return null;
	return AccountLayout.decode(info.data).amount;
}

/**
 * A VM with a 6-decimal mint (created and minted from by the SPL Token program), a funded
 * sweeper wallet, and payments into owners' associated token accounts.
 *
 * The token accounts are written into the VM as the associated-token program leaves them
 * (rent-exempt, initialized, empty) instead of by running that program: litesvm 0.8's linux-x64
 * binary corrupts the V8 heap whenever the associated-token program runs (any instruction of it,
 * even one failing at once), and node aborts with std::bad_alloc at its next garbage collection,
 * also in a child process or a worker thread (LiteSVM/litesvm issue #171, PR #352). The tokens
 * themselves are minted by the Token program; sweeps that create an account are checked by their
 * instructions (see "creates the destination's token account").
 */
function tokenWorld() {
	const svm = new LiteSVM();
	const authority = Keypair.generate();
	const mint = Keypair.generate();
	const sweeper = Keypair.generate();
	svm.airdrop(authority.publicKey, 100_000_000_000n);
	svm.airdrop(sweeper.publicKey, 1_000_000_000n);
	run(
		svm,
		authority,
		[mint],
		SystemProgram.createAccount({ fromPubkey: authority.publicKey, newAccountPubkey: mint.publicKey, lamports: Number(rentExemptMinimum(MINT_SIZE)), space: MINT_SIZE, programId: TOKEN_PROGRAM_ID }),
		createInitializeMint2Instruction(mint.publicKey, DECIMALS, authority.publicKey, null),
	);
	const ataOf = (owner: PublicKey) => getAssociatedTokenAddressSync(mint.publicKey, owner, true);
	/** `owner`'s associated token account, as the associated-token program creates it (rent paid by the payer, not by the owner). */
	const openAccount = (owner: PublicKey) => {
		const ata = ataOf(owner);
		if (svm.getAccount(ata)) return ata;
		const data = Buffer.alloc(ACCOUNT_SIZE);
		AccountLayout.encode(
			{ mint: mint.publicKey, owner, amount: 0n, delegateOption: 0, delegate: PublicKey.default, state: AccountState.Initialized, isNativeOption: 0, isNative: 0n, delegatedAmount: 0n, closeAuthorityOption: 0, closeAuthority: PublicKey.default },
			data,
		);
		svm.setAccount(ata, { lamports: Number(TOKEN_ACCOUNT_RENT_EXEMPT), data, owner: TOKEN_PROGRAM_ID, executable: false });
		return ata;
	};
	/** A payment of `amount` to `owner`: its token account opened when missing, the tokens minted in by the Token program. */
	const pay = (owner: PublicKey, amount: bigint) => {
		const ata = openAccount(owner);
		run(svm, authority, [], createMintToInstruction(mint.publicKey, ata, authority.publicKey, amount));
		return ata;
	};
	return { svm, mint: mint.publicKey.toBase58(), mintPk: mint.publicKey, sweeper, pay, openAccount, ataOf };
}

describe("fees, rent and sizes", () => {
	it("uses the runtime's rent-exempt minimums and 5,000 lamports a signature", () => {
		const svm = new LiteSVM();
		expect(SYSTEM_ACCOUNT_RENT_EXEMPT).toBe(svm.minimumBalanceForRentExemption(0n));
		expect(TOKEN_ACCOUNT_RENT_EXEMPT).toBe(svm.minimumBalanceForRentExemption(165n));
		expect(SYSTEM_ACCOUNT_RENT_EXEMPT).toBe(890_880n);
		expect(TOKEN_ACCOUNT_RENT_EXEMPT).toBe(2_039_280n);
		expect(feeFor(6)).toBe(30_000n);
		expect(() => feeFor(0)).toThrow(RangeError);
	});

	it("batch limits are the largest counts that fit 1,232 bytes", () => {
		const sol = maxSolDepositsPerTransaction();
		const token = maxTokenDepositsPerTransaction();
		expect(solSweepSize(sol)).toBeLessThanOrEqual(MAX_TRANSACTION_SIZE);
		expect(solSweepSize(sol + 1)).toBeGreaterThan(MAX_TRANSACTION_SIZE);
		expect(tokenSweepSize(token)).toBeLessThanOrEqual(MAX_TRANSACTION_SIZE);
		expect(tokenSweepSize(token + 1)).toBeGreaterThan(MAX_TRANSACTION_SIZE);
		const plain = maxTokenDepositsPerTransaction(false);
		expect(tokenSweepSize(plain, false)).toBeLessThanOrEqual(MAX_TRANSACTION_SIZE);
		expect(tokenSweepSize(plain + 1, false)).toBeGreaterThan(MAX_TRANSACTION_SIZE);
		// The figures docs/withdrawals.md gives: 102 + 113 bytes a SOL deposit; 336 (230 without the account's creation) + 152 a token deposit.
		expect([solSweepSize(1), solSweepSize(2)]).toEqual([102 + 113, 102 + 2 * 113]);
		expect([tokenSweepSize(1), tokenSweepSize(2)]).toEqual([336 + 152, 336 + 2 * 152]);
		expect([tokenSweepSize(1, false), tokenSweepSize(2, false)]).toEqual([230 + 152, 230 + 2 * 152]);
		expect([sol, token, plain]).toEqual([10, 5, 6]);
		expect(batches([1, 2, 3, 4, 5, 6, 7], 3)).toEqual([[1, 2, 3], [4, 5, 6], [7]]);
	});

	it("the expiry verdict: replaced only when finalized with an error, or not found with the finalized chain past its last valid height", () => {
		const at = (status: Parameters<typeof sendVerdict>[0]["status"], finalizedBlockHeight: number) => sendVerdict({ status, finalizedBlockHeight, lastValidBlockHeight: 100 });
		expect(at(null, 100)).toBe("pending");
		expect(at(null, 101)).toBe("dead");
		expect(at(undefined, 500)).toBe("dead");
		expect(at({ err: null, confirmationStatus: "processed" }, 500)).toBe("pending");
		expect(at({ err: { InstructionError: [0, "Custom"] }, confirmationStatus: "confirmed" }, 500)).toBe("pending");
		expect(at({ err: null, confirmationStatus: "finalized" }, 50)).toBe("landed");
		expect(at({ err: { InstructionError: [0, "Custom"] }, confirmationStatus: "finalized" }, 50)).toBe("failed");
	});
});

describe("SOL sweeps on litesvm", () => {
	it("one deposit sends its whole balance less the fee and ends at exactly zero", async () => {
		const svm = new LiteSVM();
		const d = await deposit(0);
		const destination = Keypair.generate().publicKey;
		svm.airdrop(d.pk, 1_234_567_891n);
		const sweep = buildSolSweep({ ...blockhashOf(svm), deposits: [{ address: d.address, key: d.key, lamports: 1_234_567_891n }], destination: destination.toBase58() });
		expect(sweep.feeLamports).toBe(5000n);
		expect(sweep.outputLamports).toBe(1_234_567_891n - 5000n);
		expect(sweep.feePayer).toBe(d.address);
		send(svm, sweep);
		expect(balance(svm, d.pk)).toBe(0n);
		expect(balance(svm, destination)).toBe(1_234_567_891n - 5000n);
		// The signature recorded is the one the runtime knows the transaction by.
		expect(svm.getTransaction(getBytes(zeroPadValue(toBeArray(decodeBase58(sweep.signature)), 64)))).not.toBeNull();
	});

	it("a full batch: the largest deposit pays every signature, all end at zero, nothing else is spent", async () => {
		const svm = new LiteSVM();
		const n = maxSolDepositsPerTransaction();
		const deposits = [];
		for (let i = 0; i < n; i++) {
			const d = await deposit(10 + i);
			const lamports = 900_000n + BigInt(i) * 1_000_003n;
			svm.airdrop(d.pk, lamports);
			deposits.push({ address: d.address, key: d.key, lamports, pk: d.pk });
		}
		const destination = Keypair.generate().publicKey;
		const sweep = buildSolSweep({ ...blockhashOf(svm), deposits, destination: destination.toBase58() });
		const total = deposits.reduce((a, d) => a + d.lamports, 0n);
		expect(sweep.feeLamports).toBe(5000n * BigInt(n));
		expect(sweep.feePayer).toBe(deposits[n - 1].address);
		send(svm, sweep);
		for (const d of deposits) expect(balance(svm, d.pk)).toBe(0n);
		expect(balance(svm, destination)).toBe(total - sweep.feeLamports);
		expect(sweep.outputLamports).toBe(total - sweep.feeLamports);
		expect(sweep.inputsLamports).toBe(total);
	});

	it("refuses a fee payer that would be left between 0 and the rent-exempt minimum (the runtime refuses it too)", async () => {
		const svm = new LiteSVM();
		const d = await deposit(1);
		const lamports = SYSTEM_ACCOUNT_RENT_EXEMPT + 4999n;
		svm.airdrop(d.pk, lamports);
		const params = { ...blockhashOf(svm), deposits: [{ address: d.address, key: d.key, lamports }], destination: Keypair.generate().publicKey.toBase58() };
		expect(() => buildSolSweep(params)).toThrow(SweepRefused);
		// What the check prevents: the same transfer built by hand is rejected by the runtime.
		const kp = Keypair.fromSeed(d.key);
		const tx = new Transaction({ feePayer: d.pk, recentBlockhash: svm.latestBlockhash() }).add(SystemProgram.transfer({ fromPubkey: d.pk, toPubkey: new PublicKey(params.destination), lamports: lamports - 5000n }));
		tx.sign(kp);
		expect(svm.sendTransaction(tx)).toBeInstanceOf(FailedTransactionMetadata);
		expect(balance(svm, d.pk)).toBe(lamports);
		// One lamport more and it is swept to zero.
		svm.airdrop(d.pk, 1n);
		send(svm, buildSolSweep({ ...params, deposits: [{ ...params.deposits[0], lamports: lamports + 1n }] }));
		expect(balance(svm, d.pk)).toBe(0n);
	});

	it("a transaction signed over an expired blockhash lands nowhere; the same funds re-signed over a new one do", async () => {
		const svm = new LiteSVM();
		const d = await deposit(2);
		svm.airdrop(d.pk, 5_000_000n);
		const destination = Keypair.generate().publicKey.toBase58();
		const first = buildSolSweep({ ...blockhashOf(svm), deposits: [{ address: d.address, key: d.key, lamports: 5_000_000n }], destination });
		svm.expireBlockhash();
		const refused = svm.sendTransaction(VersionedTransaction.deserialize(Buffer.from(first.serialized, "base64")));
		expect(refused).toBeInstanceOf(FailedTransactionMetadata);
		// TransactionErrorFieldless.BlockhashNotFound (litesvm's internal enum, not exported by its index).
		expect((refused as FailedTransactionMetadata).err()).toBe(7);
		expect(balance(svm, d.pk)).toBe(5_000_000n);
		const second = buildSolSweep({ ...blockhashOf(svm), deposits: [{ address: d.address, key: d.key, lamports: 5_000_000n }], destination });
		expect(second.signature).not.toBe(first.signature);
		send(svm, second);
		expect(balance(svm, d.pk)).toBe(0n);
		expect(balance(svm, new PublicKey(destination))).toBe(4_995_000n);
	});

	it("checks keys against addresses without quoting them", async () => {
		const a = await deposit(3);
		const b = await deposit(4);
		const hex = Buffer.from(b.key).toString("hex");
		let message = "";
		try {
			buildSolSweep({ blockhash: Keypair.generate().publicKey.toBase58(), lastValidBlockHeight: 1, deposits: [{ address: a.address, key: b.key, lamports: 10_000_000n }], destination: b.address });
		} catch (err) {
			message = (err as Error).message;
		}
		expect(message).toMatch(/not the key of/);
		expect(message).not.toContain(hex);
		expect(message).not.toContain(Buffer.from(b.key).toString("base64"));
	});
});

describe("token sweeps on litesvm", () => {
	it("creates the destination's token account (idempotently, rent by the sweeper) before the transfers when asked", async () => {
		const w = tokenWorld();
		const d = await deposit(22);
		const destination = Keypair.generate().publicKey;
		const sweep = buildTokenSweep({
			...blockhashOf(w.svm), sweeperKey: w.sweeper.secretKey, mint: w.mint, decimals: DECIMALS, destination: destination.toBase58(),
			deposits: [{ owner: d.address, key: d.key, amount: 5n }],
		});
		const message = VersionedTransaction.deserialize(Buffer.from(sweep.serialized, "base64")).message;
		const keys = message.staticAccountKeys;
		const [create, transfer, close] = message.compiledInstructions;
		const expected = createAssociatedTokenAccountIdempotentInstruction(w.sweeper.publicKey, w.ataOf(destination), destination, w.mintPk);
		expect(keys[create.programIdIndex].equals(ASSOCIATED_TOKEN_PROGRAM_ID)).toBe(true);
		expect(create.accountKeyIndexes.map(i => keys[i].toBase58())).toEqual(expected.keys.map(k => k.pubkey.toBase58()));
		expect(Buffer.from(create.data)).toEqual(expected.data);
		expect(message.isAccountSigner(create.accountKeyIndexes[0]) && message.isAccountWritable(create.accountKeyIndexes[0])).toBe(true);
		expect([transfer, close].map(ix => keys[ix.programIdIndex].toBase58())).toEqual([TOKEN_PROGRAM_ID.toBase58(), TOKEN_PROGRAM_ID.toBase58()]);
		expect(sweep.rentPaidLamports).toBe(TOKEN_ACCOUNT_RENT_EXEMPT);
		// Without it: no associated-token instruction, nothing paid.
		const plain = buildTokenSweep({
			...blockhashOf(w.svm), sweeperKey: w.sweeper.secretKey, mint: w.mint, decimals: DECIMALS, destination: destination.toBase58(), createDestinationAccount: false,
			deposits: [{ owner: d.address, key: d.key, amount: 5n }],
		});
		const plainMessage = VersionedTransaction.deserialize(Buffer.from(plain.serialized, "base64")).message;
		expect(plainMessage.compiledInstructions.map(ix => plainMessage.staticAccountKeys[ix.programIdIndex].toBase58())).toEqual([TOKEN_PROGRAM_ID.toBase58(), TOKEN_PROGRAM_ID.toBase58()]);
		expect(plain.rentPaidLamports).toBe(0n);
	});

	it("the sweeper pays the fee; the deposit's token account is closed and its rent returns to the sweeper", async () => {
		const w = tokenWorld();
		const d = await deposit(20);
		const depositAta = w.pay(d.pk, 25_000_000n);
		const destination = Keypair.generate().publicKey;
		const destinationAta = w.openAccount(destination);
		const before = balance(w.svm, w.sweeper.publicKey);
		const sweep = buildTokenSweep({
			...blockhashOf(w.svm), sweeperKey: w.sweeper.secretKey, mint: w.mint, decimals: DECIMALS, destination: destination.toBase58(), createDestinationAccount: false,
			deposits: [{ owner: d.address, key: d.key, amount: 25_000_000n }],
		});
		expect(sweep.feePayer).toBe(w.sweeper.publicKey.toBase58());
		expect(sweep.feeLamports).toBe(10_000n);
		expect(sweep.destinationTokenAccount).toBe(destinationAta.toBase58());
		send(w.svm, sweep);
		expect(tokenAmount(w.svm, destinationAta)).toBe(25_000_000n);
		expect(tokenAmount(w.svm, depositAta)).toBeNull();
		expect(balance(w.svm, depositAta)).toBe(0n);
		// The deposit owner never held SOL and still holds none.
		expect(balance(w.svm, d.pk)).toBe(0n);
		expect(sweep.rentRecoveredLamports).toBe(TOKEN_ACCOUNT_RENT_EXEMPT);
		expect(balance(w.svm, w.sweeper.publicKey)).toBe(before - sweep.feeLamports + sweep.rentRecoveredLamports);
	});

	it("20 token deposits in batches of the computed size: fees by the sweeper, every token account closed, rent recovered", async () => {
		const w = tokenWorld();
		const destination = Keypair.generate().publicKey;
		const destinationAta = w.openAccount(destination);
		const deposits = [];
		for (let i = 0; i < 20; i++) {
			const d = await deposit(100 + i);
			const amount = 1_000_000n * BigInt(i + 1) + 7n;
			deposits.push({ owner: d.address, key: d.key, amount, ata: w.pay(d.pk, amount), pk: d.pk });
		}
		// The destination's account exists: 6 a transaction (5 when it is created in the first).
		const size = maxTokenDepositsPerTransaction(false);
		const groups = batches(deposits, size);
		expect(groups).toHaveLength(Math.ceil(20 / size));
		const before = balance(w.svm, w.sweeper.publicKey);
		let expected = before;
		const sweeps = groups.map(group => {
			const sweep = buildTokenSweep({
				...blockhashOf(w.svm), sweeperKey: w.sweeper.secretKey, mint: w.mint, decimals: DECIMALS, destination: destination.toBase58(), createDestinationAccount: false, deposits: group,
			});
			expect(sweep.feeLamports).toBe(5000n * BigInt(group.length + 1));
			expect(sweep.size).toBeLessThanOrEqual(MAX_TRANSACTION_SIZE);
			send(w.svm, sweep);
			// Each transaction moves the sweeper's balance by what its own record says.
			expected += sweep.rentRecoveredLamports - sweep.feeLamports;
			expect(balance(w.svm, w.sweeper.publicKey)).toBe(expected);
			return sweep;
		});
		const total = deposits.reduce((a, d) => a + d.amount, 0n);
		expect(tokenAmount(w.svm, destinationAta)).toBe(total);
		for (const d of deposits) {
			expect(balance(w.svm, d.ata)).toBe(0n);
			expect(tokenAmount(w.svm, d.ata)).toBeNull();
			expect(balance(w.svm, d.pk)).toBe(0n);
		}
		const fees = sweeps.reduce((a, s) => a + s.feeLamports, 0n);
		const rentRecovered = sweeps.reduce((a, s) => a + s.rentRecoveredLamports, 0n);
		expect(fees).toBe(5000n * BigInt(20 + groups.length));
		expect(rentRecovered).toBe(20n * TOKEN_ACCOUNT_RENT_EXEMPT);
		expect(balance(w.svm, w.sweeper.publicKey)).toBe(before - fees + rentRecovered);
	});

	it("one deposit more than the limit is refused before signing", async () => {
		const w = tokenWorld();
		const n = maxTokenDepositsPerTransaction() + 1;
		const deposits: TokenDeposit[] = [];
		for (let i = 0; i < n; i++) {
			const d = await deposit(200 + i);
			deposits.push({ owner: d.address, key: d.key, amount: 1n });
		}
		expect(() => buildTokenSweep({ ...blockhashOf(w.svm), sweeperKey: w.sweeper.secretKey, mint: w.mint, decimals: DECIMALS, destination: Keypair.generate().publicKey.toBase58(), deposits })).toThrow(
			expect.objectContaining({ reason: "size" }),
		);
	});

	it("a token sweep fails whole when more tokens arrived after its amount was read: nothing moves but the fee", async () => {
		const w = tokenWorld();
		const d = await deposit(21);
		const ata = w.pay(d.pk, 3_000_000n);
		const destination = Keypair.generate().publicKey;
		const destinationAta = w.openAccount(destination);
		const sweep = buildTokenSweep({
			...blockhashOf(w.svm), sweeperKey: w.sweeper.secretKey, mint: w.mint, decimals: DECIMALS, destination: destination.toBase58(), createDestinationAccount: false,
			deposits: [{ owner: d.address, key: d.key, amount: 3_000_000n }],
		});
		w.pay(d.pk, 1n);
		const before = balance(w.svm, w.sweeper.publicKey);
		expect(() => send(w.svm, sweep)).toThrow(/failed/);
		expect(tokenAmount(w.svm, ata)).toBe(3_000_001n);
		expect(tokenAmount(w.svm, destinationAta)).toBe(0n);
		expect(balance(w.svm, w.sweeper.publicKey)).toBe(before - sweep.feeLamports);
	});
});

describe("withdrawal requests paid exactly on litesvm", () => {
	it("SOL: exactly the amount to the payee; the rest, less the fee, stays at the deposit", async () => {
		const svm = new LiteSVM();
		const d = await deposit(30);
		svm.airdrop(d.pk, 50_000_000n);
		const payee = Keypair.generate().publicKey;
		const payment = buildSolPayment({ ...blockhashOf(svm), deposit: { address: d.address, key: d.key, lamports: 50_000_000n }, payee: payee.toBase58(), amount: 12_345_678n, payeeLamports: 0n });
		send(svm, payment);
		expect(balance(svm, payee)).toBe(12_345_678n);
		expect(balance(svm, d.pk)).toBe(50_000_000n - 12_345_678n - 5000n);
		expect(payment.remainingLamports).toBe(balance(svm, d.pk));
		// A rest between 0 and the rent-exempt minimum is refused; the exact whole (less the fee) is not.
		const rest = balance(svm, d.pk);
		expect(() => buildSolPayment({ ...blockhashOf(svm), deposit: { address: d.address, key: d.key, lamports: rest }, payee: payee.toBase58(), amount: rest - 5000n - 1n })).toThrow(
			expect.objectContaining({ reason: "rent" }),
		);
		expect(() => buildSolPayment({ ...blockhashOf(svm), deposit: { address: d.address, key: d.key, lamports: rest }, payee: Keypair.generate().publicKey.toBase58(), amount: 100n, payeeLamports: 0n })).toThrow(
			expect.objectContaining({ reason: "rent" }),
		);
		send(svm, buildSolPayment({ ...blockhashOf(svm), deposit: { address: d.address, key: d.key, lamports: rest }, payee: payee.toBase58(), amount: rest - 5000n }));
		expect(balance(svm, d.pk)).toBe(0n);
		expect(balance(svm, payee)).toBe(12_345_678n + rest - 5000n);
	});

	it("tokens: exactly the amount, the sweeper paying; the deposit's account stays open with the rest, and closes when paid in full", async () => {
		const w = tokenWorld();
		const d = await deposit(31);
		const ata = w.pay(d.pk, 10_000_000n);
		const payee = Keypair.generate().publicKey;
		const payeeAta = w.openAccount(payee);
		const before = balance(w.svm, w.sweeper.publicKey);
		const common = { sweeperKey: w.sweeper.secretKey, mint: w.mint, decimals: DECIMALS, payee: payee.toBase58(), createDestinationAccount: false };
		const first = buildTokenPayment({ ...blockhashOf(w.svm), ...common, deposit: { owner: d.address, key: d.key, amount: 10_000_000n }, amount: 4_000_001n });
		expect(first.closed).toBe(false);
		expect(first.remainingAmount).toBe(5_999_999n);
		send(w.svm, first);
		expect(tokenAmount(w.svm, payeeAta)).toBe(4_000_001n);
		expect(tokenAmount(w.svm, ata)).toBe(5_999_999n);
		expect(balance(w.svm, w.sweeper.publicKey)).toBe(before - first.feeLamports);
		w.svm.expireBlockhash();
		const second = buildTokenPayment({ ...blockhashOf(w.svm), ...common, deposit: { owner: d.address, key: d.key, amount: 5_999_999n }, amount: 5_999_999n });
		expect(second.closed).toBe(true);
		send(w.svm, second);
		expect(tokenAmount(w.svm, payeeAta)).toBe(10_000_000n);
		expect(tokenAmount(w.svm, ata)).toBeNull();
		expect(balance(w.svm, w.sweeper.publicKey)).toBe(before - first.feeLamports - second.feeLamports + TOKEN_ACCOUNT_RENT_EXEMPT);
		expect(() => buildTokenPayment({ ...blockhashOf(w.svm), ...common, deposit: { owner: d.address, key: d.key, amount: 5n }, amount: 6n })).toThrow(SweepRefused);
	});
});
