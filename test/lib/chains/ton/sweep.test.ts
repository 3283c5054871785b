/**
 * The TON sweep messages (lib/chains/ton/sweep.ts), sent signed to @ton/sandbox: the real TVM
 * (the node's emulator compiled to WASM) in-process, with the default mainnet config's fees.
 * Deposit wallets are the v4R2 wallets the codec derives; the sweeper wallet is a v5R1; the
 * jetton minter and wallets are the reference jetton code shipped in @ton-community/assets-sdk
 * (not the exact USDT-on-TON contract). No database: runs the same in both jest projects.
 */
import { Address, Cell, beginCell, loadMessage, storeMessage, toNano, type Transaction } from "@ton/core";
import { keyPairFromSeed } from "@ton/crypto";
import { Blockchain, type SandboxContract, type TreasuryContract } from "@ton/sandbox";
import { JettonMinter, JettonWallet } from "@ton-community/assets-sdk";
import { tonCodec } from "../../../../lib/chains/ton/codec";
import {
	JETTON_SWEEP_TON, MAX_V4R2_MESSAGES, MAX_V5R1_MESSAGES, OP_JETTON_EXCESSES, OP_JETTON_TRANSFER, SweepRefused, TON_SWEEP_MIN_BALANCE, batches, buildJettonPayment,
	buildJettonSweep, buildTonPayment, buildTonSweep, buildTopUps, landedOutcome, maxTopUpsPerMessage, normalizedHash, OP_JETTON_INTERNAL_TRANSFER, sendVerdict, walletAddress, type LandedTx, type SignedTonMessage,
} from "../../../../lib/chains/ton/sweep";
import { ABANDON_SEED } from "../fixtures";

const T0 = 1_800_000_000;
const TTL = 60;

async function deposit(index: number) {
	const key = await tonCodec.derivePrivateKey(ABANDON_SEED, { isTestnet: true }, index);
	const { address } = await tonCodec.deriveAddress(ABANDON_SEED, { isTestnet: true }, index);
	return { key, address, addr: Address.parse(address) };
}

/** A v5R1 sweeper wallet key (not from the deposit seed: any 32-byte seed). */
const SWEEPER_KEY = new Uint8Array(32).fill(9);
const MERCHANT_KEY = new Uint8Array(32).fill(5);

async function world() {
	const chain = await Blockchain.create();
	chain.now = T0;
	const treasury = await chain.treasury("funder", { balance: toNano("1000000") });
	return { chain, treasury };
}

function computeOk(tx: Transaction): boolean {
	const d = tx.description;
	return d.type === "generic" && !d.aborted && d.computePhase.type === "vm" && d.computePhase.success && (d.actionPhase?.success ?? true);
}

/** Sends the built bytes as a liteserver would receive them; returns the emulated transactions. */
async function send(chain: Blockchain, m: SignedTonMessage) {
	const cell = Cell.fromBase64(m.boc);
	const r = await chain.sendMessage(cell);
	const first = r.transactions[0];
	expect(first.inMessage?.info.type).toBe("external-in");
	// The hash a relayer and an indexer compute for the message the wallet executed (TEP-467, the
	// TON docs' recipe): the inbound message with no source, no import fee, no init, body by reference.
	const inMsg = first.inMessage!;
	const normalized = beginCell().store(storeMessage({ info: { type: "external-in", src: null, dest: inMsg.info.dest as Address, importFee: 0n }, init: null, body: inMsg.body }, { forceRef: true })).endCell();
	expect(normalized.hash().toString("hex")).toBe(m.hash);
	return r.transactions;
}

async function balanceOf(chain: Blockchain, a: Address | string): Promise<bigint> {
	const addr = typeof a === "string" ? Address.parse(a) : a;
	return (await chain.getContract(addr)).balance;
}

async function stateOf(chain: Blockchain, a: Address | string) {
	const addr = typeof a === "string" ? Address.parse(a) : a;
	return (await chain.getContract(addr)).accountState?.type ?? "nonexist";
}

async function pay(treasury: SandboxContract<TreasuryContract>, to: Address, value: bigint) {
	await treasury.send({ to, value, bounce: false });
}

function sum(xs: bigint[]): bigint {
	return xs.reduce((a, b) => a + b, 0n);
}

describe("TON sweep from an undeployed deposit", () => {
	it("deploys, sends the whole balance less the emulator's fees, and destroys the wallet", async () => {
		const { chain, treasury } = await world();
		const d = await deposit(0);
		const merchant = walletAddress(MERCHANT_KEY, "v4r2");
		await pay(treasury, d.addr, toNano("1.5"));
		expect(await stateOf(chain, d.addr)).toBe("uninit");
		const balance = await balanceOf(chain, d.addr);
		const msg = buildTonSweep({ deposit: { key: d.key, address: d.address, seqno: 0, deployed: false, balance }, destination: merchant, validUntil: T0 + TTL });
		expect(msg.deploys).toBe(true);
		const txs = await send(chain, msg);
		const depTx = txs[0];
		expect(computeOk(depTx)).toBe(true);
		const out = depTx.outMessages.get(0)!;
		expect(out.info.type).toBe("internal");
		const delivered = out.info.type === "internal" ? out.info.value.coins : -1n;
		// Everything the deposit had, less what the emulator charged this transaction (storage, import, gas, forward).
		const fwd = out.info.type === "internal" ? out.info.forwardFee : 0n;
		expect(delivered).toBe(balance - depTx.totalFees.coins - fwd);
		const merchantTx = txs.find(t => t.inMessage?.info.dest && Address.isAddress(t.inMessage.info.dest) && (t.inMessage.info.dest as Address).toRawString() === merchant)!;
		expect(merchantTx).toBeDefined();
		expect(await balanceOf(chain, merchant)).toBe(delivered - merchantTx.totalFees.coins);
		expect(await balanceOf(chain, d.addr)).toBe(0n);
		expect(await stateOf(chain, d.addr)).toBe("nonexist");
		console.log(`ton sweep: balance ${balance}, fees ${balance - delivered} (tx ${depTx.totalFees.coins} + fwd ${fwd})`);
	});
});

async function jettonWorld() {
	const w = await world();
	const admin = await w.chain.treasury("admin", { balance: toNano("1000") });
	const minter = w.chain.openContract(JettonMinter.createFromConfig({ admin: admin.address, content: beginCell().storeStringTail("test jetton").endCell() }));
	await minter.sendDeploy(admin.getSender(), toNano("1"));
	const mint = async (owner: Address, amount: bigint) => {
		await minter.sendMint(admin.getSender(), owner, amount, { notify: false, returnExcess: false, value: toNano("0.1") });
	};
	const jettonWalletOf = async (owner: Address) => w.chain.openContract(JettonWallet.createFromAddress(await minter.getWalletAddress(owner)));
	const jettonBalance = async (owner: Address) => {
		const jw = await jettonWalletOf(owner);
		if ((await stateOf(w.chain, jw.address)) !== "active") return 0n;
		return (await jw.getData()).balance;
	};
	return { ...w, admin, minter, mint, jettonWalletOf, jettonBalance };
}

function opOf(body: Cell): number | null {
	const s = body.beginParse();
	return s.remainingBits >= 32 ? s.loadUint(32) : null;
}

describe("jetton sweeps with batched top-ups", () => {
	it("sweeps 20 jetton deposits: one top-up transaction, excesses back to the sweeper, the merchant holds the sum", async () => {
		const { chain, treasury, mint, jettonWalletOf, jettonBalance } = await jettonWorld();
		const sweeper = walletAddress(SWEEPER_KEY, "v5r1");
		const merchant = Address.parseRaw(walletAddress(MERCHANT_KEY, "v4r2"));
		// The sweeper wallet is funded but not deployed: its first top-up message deploys it.
		await pay(treasury, Address.parseRaw(sweeper), toNano("10"));
		const deps = await Promise.all(Array.from({ length: 20 }, (_, i) => deposit(100 + i)));
		const amounts = deps.map((_, i) => 1_000_000n * BigInt(i + 1) + 17n);
		for (let i = 0; i < deps.length; i++) await mint(deps[i].addr, amounts[i]);
		for (let i = 0; i < deps.length; i++) expect(await jettonBalance(deps[i].addr)).toBe(amounts[i]);

		const sweeperBefore = await balanceOf(chain, sweeper);
		const topUps = buildTopUps({ sweeper: { key: SWEEPER_KEY, version: "v5r1", seqno: 0, deployed: false, address: sweeper }, deposits: deps.map(d => ({ address: d.address })), validUntil: T0 + TTL });
		expect(topUps.total).toBe(20n * JETTON_SWEEP_TON);
		const topTxs = await send(chain, topUps);
		// One sweeper transaction with 20 messages out, then one transaction at each deposit.
		expect(topTxs[0].outMessagesCount).toBe(20);
		expect(computeOk(topTxs[0])).toBe(true);
		expect(topTxs.length).toBe(21);
		const topUpFee = topTxs[0].totalFees.coins + sum([...topTxs[0].outMessages.values()].map(m => (m.info.type === "internal" ? m.info.forwardFee : 0n)));
		expect(await balanceOf(chain, sweeper)).toBe(sweeperBefore - topUps.total - topUpFee);
		const afterTopUps = await balanceOf(chain, sweeper);

		let excesses = 0n;
		let excessCount = 0;
		let mostBurned = 0n;
		let excessFees = 0n;
		let feesFirst = "";
		let txCount = 0;
		for (const d of deps) {
			const tonBalance = await balanceOf(chain, d.addr);
			expect(tonBalance).toBe(JETTON_SWEEP_TON);
			const jw = await jettonWalletOf(d.addr);
			const msg = buildJettonSweep({
				deposit: { key: d.key, address: d.address, seqno: 0, deployed: false, jettonWallet: jw.address.toString(), jettonAmount: await jettonBalance(d.addr), tonBalance },
				destination: merchant.toString(), responseDestination: sweeper, validUntil: T0 + TTL,
			});
			const txs = await send(chain, msg);
			txCount += txs.length;
			for (const t of txs) expect(computeOk(t)).toBe(true);
			// deposit -> its jetton wallet -> the merchant's jetton wallet -> excesses to the sweeper
			expect(txs.length).toBe(4);
			const last = txs[txs.length - 1];
			expect(last.inMessage?.info.dest && (last.inMessage.info.dest as Address).toRawString()).toBe(sweeper);
			expect(opOf(last.inMessage!.body)).toBe(OP_JETTON_EXCESSES);
			const excess = last.inMessage!.info.type === "internal" ? last.inMessage!.info.value.coins : 0n;
			expect(excess).toBeGreaterThan(0n);
			excesses += excess;
			excessFees += last.totalFees.coins;
			if (tonBalance - excess > mostBurned) mostBurned = tonBalance - excess;
			if (!feesFirst) feesFirst = txs.map(t => t.totalFees.coins).join(" + ");
			excessCount++;
			expect(opOf(txs[1].inMessage!.body)).toBe(OP_JETTON_TRANSFER);
			expect(await stateOf(chain, d.addr)).toBe("nonexist");
			expect(await jettonBalance(d.addr)).toBe(0n);
		}
		expect(excessCount).toBe(20);
		expect(txCount).toBe(80);
		expect(await jettonBalance(merchant)).toBe(sum(amounts));
		const sweeperAfter = await balanceOf(chain, sweeper);
		const spent = sweeperBefore - sweeperAfter;
		// The sweeper's balance moved by exactly: top-ups and their fee out, excesses in (its own fees for receiving them included).
		expect(spent).toBeGreaterThan(0n);
		const perDeposit = spent / 20n;
		// Exactly: the top-ups and their transaction's fees out, the excesses in, less the sweeper's fees for receiving them.
		expect(spent).toBe(topUps.total + topUpFee - excesses + excessFees);
		expect(mostBurned).toBeLessThan(JETTON_SWEEP_TON);
		console.log(`sweep-ton: jetton sweep x20: top-ups ${topUps.total}, top-up tx fee ${topUpFee} (incl. deploying the sweeper), excesses back ${excesses} (fees of the first sweep's 4 txs: ${feesFirst}; most a deposit burned ${mostBurned}), sweeper spent ${spent} = ${perDeposit} nanotons per swept deposit`);
	});
});

describe("jetton sweep without enough gas", () => {
	it("the reference jetton wallet bounces an underfunded transfer: no jetton moves, the TON comes back to the deposit's address", async () => {
		const { chain, treasury, mint, jettonWalletOf, jettonBalance } = await jettonWorld();
		const d = await deposit(7);
		const merchant = Address.parseRaw(walletAddress(MERCHANT_KEY, "v4r2"));
		await mint(d.addr, 777n);
		await pay(treasury, d.addr, 20_000_000n); // 0.02 TON: below what the jetton wallet demands
		const jw = await jettonWalletOf(d.addr);
		// The builder is told the balance is enough (a stale read): the chain refuses, nothing is lost.
		const msg = buildJettonSweep({
			deposit: { key: d.key, seqno: 0, deployed: false, jettonWallet: jw.address.toString(), jettonAmount: 777n, tonBalance: JETTON_SWEEP_TON },
			destination: merchant.toString(), responseDestination: walletAddress(SWEEPER_KEY, "v5r1"), validUntil: T0 + TTL,
		});
		const txs = await send(chain, msg);
		expect(computeOk(txs[0])).toBe(true);
		expect(computeOk(txs[1])).toBe(false);
		expect(await jettonBalance(d.addr)).toBe(777n);
		expect(await jettonBalance(merchant)).toBe(0n);
		// The bounce lands at the destroyed deposit's address, which keeps it (uninit) for the next sweep.
		const back = await balanceOf(chain, d.addr);
		expect(back).toBeGreaterThan(0n);
		expect(await stateOf(chain, d.addr)).toBe("uninit");
	});
});

describe("exact withdrawals", () => {
	it("pays exactly the amount in TON, fees on top; the rest: bounced by an undeployed bounceable payee, swept again at seqno 0, the replay window", async () => {
		const { chain, treasury } = await world();
		const d = await deposit(1);
		const payee = Address.parseRaw(walletAddress(MERCHANT_KEY, "v4r2"));
		await pay(treasury, d.addr, toNano("2"));
		const amount = 1_234_567_891n;
		const before = await balanceOf(chain, d.addr);
		const msg = buildTonPayment({ wallet: { key: d.key, version: "v4r2", seqno: 0, deployed: false, address: d.address }, balance: before, payee: payee.toString({ bounceable: false }), amount, validUntil: T0 + TTL });
		const txs = await send(chain, msg);
		const out = txs[0].outMessages.get(0)!;
		expect(out.info.type === "internal" && out.info.value.coins).toBe(amount);
		const fwd = out.info.type === "internal" ? out.info.forwardFee : 0n;
		expect(await balanceOf(chain, d.addr)).toBe(before - amount - txs[0].totalFees.coins - fwd);
		expect(await stateOf(chain, d.addr)).toBe("active");
		expect(await balanceOf(chain, payee)).toBe(amount - txs[1].totalFees.coins);
		// The rest is swept by the now deployed wallet (seqno 1, no state init), destroying it; but to
		// the payee's BOUNCEABLE form while the payee is not deployed: the value bounces back to the
		// deposit's address, which keeps it (uninit).
		const rest = await balanceOf(chain, d.addr);
		expect(await stateOf(chain, payee)).toBe("uninit");
		const sweep = buildTonSweep({ deposit: { key: d.key, address: d.address, seqno: 1, deployed: true, balance: rest }, destination: payee.toString({ bounceable: true }), validUntil: T0 + TTL });
		expect(sweep.deploys).toBe(false);
		const swept = await send(chain, sweep);
		expect(computeOk(swept[0])).toBe(true);
		expect(await stateOf(chain, d.addr)).toBe("uninit");
		const bounced = await balanceOf(chain, d.addr);
		expect(bounced).toBeGreaterThan(0n);
		expect(await balanceOf(chain, payee)).toBe(amount - txs[1].totalFees.coins);
		// Swept again to the non-bounceable form: redeployed at seqno 0 by the message's state init, then to zero.
		const again = buildTonSweep({ deposit: { key: d.key, address: d.address, seqno: 0, deployed: false, balance: bounced }, destination: payee.toString({ bounceable: false }), validUntil: T0 + TTL });
		const last = await send(chain, again);
		expect(computeOk(last[0])).toBe(true);
		expect(await stateOf(chain, d.addr)).toBe("nonexist");
		expect(await balanceOf(chain, payee)).toBeGreaterThan(amount);
		// The replay window: a destroyed wallet starts again at seqno 0, so until its validUntil the
		// same bytes sweep a NEW payment too (to the same payee); after it, they are refused.
		await pay(treasury, d.addr, toNano("1"));
		const payeeBefore = await balanceOf(chain, payee);
		const replay = await send(chain, again);
		expect(computeOk(replay[0])).toBe(true);
		expect(await stateOf(chain, d.addr)).toBe("nonexist");
		expect(await balanceOf(chain, payee)).toBeGreaterThan(payeeBefore);
		await pay(treasury, d.addr, toNano("1"));
		chain.now = again.validUntil + 1;
		await expect(chain.sendMessage(Cell.fromBase64(again.boc))).rejects.toThrow();
		expect(await balanceOf(chain, d.addr)).toBe(toNano("1"));
	});

	it("pays exactly the amount in jettons, the rest stays, excesses to the paying wallet", async () => {
		const { chain, treasury, mint, jettonWalletOf, jettonBalance } = await jettonWorld();
		const hot = Address.parseRaw(walletAddress(SWEEPER_KEY, "v5r1"));
		const payee = Address.parseRaw(walletAddress(MERCHANT_KEY, "v4r2"));
		await pay(treasury, hot, toNano("5"));
		await mint(hot, 50_000_000n);
		const jw = await jettonWalletOf(hot);
		const msg = buildJettonPayment({
			wallet: { key: SWEEPER_KEY, version: "v5r1", seqno: 0, deployed: false }, jettonWallet: jw.address.toString(), jettonBalance: 50_000_000n,
			tonBalance: await balanceOf(chain, hot), payee: payee.toString(), amount: 12_345_678n, validUntil: T0 + TTL,
		});
		expect(msg.remainingAmount).toBe(50_000_000n - 12_345_678n);
		const txs = await send(chain, msg);
		for (const t of txs) expect(computeOk(t)).toBe(true);
		expect(await jettonBalance(payee)).toBe(12_345_678n);
		expect(await jettonBalance(hot)).toBe(50_000_000n - 12_345_678n);
		expect(opOf(txs[txs.length - 1].inMessage!.body)).toBe(OP_JETTON_EXCESSES);
		expect((txs[txs.length - 1].inMessage!.info.dest as Address).equals(hot)).toBe(true);
	});
});

describe("expiry and replays", () => {
	it("an expired message is refused by the wallet; the verdict says dead only once a block past validUntil is seen", async () => {
		const { chain, treasury } = await world();
		const d = await deposit(2);
		await pay(treasury, d.addr, toNano("1"));
		const balance = await balanceOf(chain, d.addr);
		const msg = buildTonSweep({ deposit: { key: d.key, seqno: 0, deployed: false, balance }, destination: walletAddress(MERCHANT_KEY, "v4r2"), validUntil: T0 + TTL });
		const verdictAt = (utime: number, found = false) => sendVerdict({ found, walletSeqno: 0, masterchainUtime: utime, seqno: msg.seqno, validUntil: msg.validUntil });
		// Not accepted yet, still valid: pending, whatever the wait.
		expect(verdictAt(T0 + TTL - 1)).toBe("pending");
		expect(verdictAt(T0 + TTL)).toBe("pending");
		chain.now = T0 + TTL; // the wallet refuses at valid_until itself
		await expect(chain.sendMessage(Cell.fromBase64(msg.boc))).rejects.toThrow();
		chain.now = T0 + TTL + 1;
		await expect(chain.sendMessage(Cell.fromBase64(msg.boc))).rejects.toThrow();
		// Nothing happened: still undeployed, balance whole.
		expect(await stateOf(chain, d.addr)).toBe("uninit");
		expect(await balanceOf(chain, d.addr)).toBe(balance);
		expect(verdictAt(T0 + TTL + 1)).toBe("dead");
		// Re-signed over a new validUntil: accepted.
		const again = buildTonSweep({ deposit: { key: d.key, seqno: 0, deployed: false, balance }, destination: walletAddress(MERCHANT_KEY, "v4r2"), validUntil: T0 + 2 * TTL });
		expect(again.hash).not.toBe(msg.hash);
		const txs = await send(chain, again);
		expect(computeOk(txs[0])).toBe(true);
		expect(await stateOf(chain, d.addr)).toBe("nonexist");
		expect(sendVerdict({ found: true, walletSeqno: 0, masterchainUtime: T0 + 2 * TTL + 5, seqno: 0, validUntil: again.validUntil })).toBe("landed");
	});

	it("a message replayed with the same seqno is not executed twice; one superseded by another message of that seqno is not 'dead'", async () => {
		const { chain, treasury } = await world();
		const d = await deposit(3);
		const payee = walletAddress(MERCHANT_KEY, "v4r2");
		await pay(treasury, d.addr, toNano("3"));
		const wallet = { key: d.key, version: "v4r2" as const, seqno: 0, deployed: false };
		const first = buildTonPayment({ wallet, balance: toNano("3"), payee, amount: toNano("1"), validUntil: T0 + TTL });
		// A second message signed with the same seqno (a crash between signing and recording, say).
		const rival = buildTonPayment({ wallet, balance: toNano("3"), payee, amount: toNano("0.5"), validUntil: T0 + TTL });
		await send(chain, first);
		const afterFirst = await balanceOf(chain, d.addr);
		await expect(chain.sendMessage(Cell.fromBase64(first.boc))).rejects.toThrow();
		await expect(chain.sendMessage(Cell.fromBase64(rival.boc))).rejects.toThrow();
		expect(await balanceOf(chain, d.addr)).toBe(afterFirst);
		const seqno = (await chain.runGetMethod(d.addr, "seqno")).stackReader.readNumber();
		expect(seqno).toBe(1);
		const past = T0 + TTL + 1;
		expect(sendVerdict({ found: false, walletSeqno: seqno, masterchainUtime: past, seqno: rival.seqno, validUntil: rival.validUntil })).toBe("superseded");
		expect(sendVerdict({ found: false, walletSeqno: seqno, masterchainUtime: T0 + 10, seqno: rival.seqno, validUntil: rival.validUntil })).toBe("pending");
		expect(sendVerdict({ found: true, walletSeqno: seqno, masterchainUtime: T0 + 10, seqno: first.seqno, validUntil: first.validUntil })).toBe("landed");
		// A destroyed wallet reads as seqno 0 again: an expired message of seqno 3 is superseded, not dead.
		expect(sendVerdict({ found: false, walletSeqno: 0, masterchainUtime: past, seqno: 3, validUntil: T0 + TTL })).toBe("superseded");
	});

	it("the sweeper's next top-up message uses the next seqno and is accepted", async () => {
		const { chain, treasury } = await world();
		const sweeper = walletAddress(SWEEPER_KEY, "v5r1");
		await pay(treasury, Address.parseRaw(sweeper), toNano("3"));
		const deps = await Promise.all([deposit(40), deposit(41)]);
		const a = buildTopUps({ sweeper: { key: SWEEPER_KEY, version: "v5r1", seqno: 0, deployed: false }, deposits: [{ address: deps[0].address }], validUntil: T0 + TTL });
		await send(chain, a);
		const b = buildTopUps({ sweeper: { key: SWEEPER_KEY, version: "v5r1", seqno: 1, deployed: true }, deposits: [{ address: deps[1].address, amount: 123n * 1_000_000n }], validUntil: T0 + TTL });
		expect(b.deploys).toBe(false);
		await send(chain, b);
		expect(await balanceOf(chain, deps[0].addr)).toBe(JETTON_SWEEP_TON);
		expect(await balanceOf(chain, deps[1].addr)).toBe(123_000_000n);
	});
});

describe("limits and refusals", () => {
	it("the normalized hash ignores what a relayer may change (source, import fee, state init, body inline or by reference)", async () => {
		const d = await deposit(6);
		const m = buildTonSweep({ deposit: { key: d.key, seqno: 0, deployed: false, balance: toNano("1") }, destination: walletAddress(MERCHANT_KEY, "v4r2"), validUntil: T0 });
		const parsed = loadMessage(Cell.fromBase64(m.boc).beginParse());
		expect(parsed.init).toBeTruthy();
		const { dest } = parsed.info as { dest: Address };
		const body = parsed.body;
		const variant = beginCell().store(storeMessage({ info: { type: "external-in", src: null, dest, importFee: 12345n }, init: null, body }, { forceRef: false })).endCell();
		expect(normalizedHash(variant)).toBe(m.hash);
		const other = buildTonSweep({ deposit: { key: d.key, seqno: 0, deployed: true, balance: toNano("1") }, destination: walletAddress(MERCHANT_KEY, "v4r2"), validUntil: T0 });
		// Same signed body (the state init is not signed): same hash with or without it.
		expect(other.hash).toBe(m.hash);
		expect(() => normalizedHash(beginCell().storeUint(0, 1).endCell())).toThrow();
	});

	it("refuses dust and an unfunded jetton sweep with SweepRefused", async () => {
		const d = await deposit(5);
		const merchant = walletAddress(MERCHANT_KEY, "v4r2");
		const refusal = (f: () => unknown) => {
			try {
				f();
			} catch (e) {
				expect(e).toBeInstanceOf(SweepRefused);
				return (e as SweepRefused).reason;
			}
			throw new Error("not refused");
		};
		expect(refusal(() => buildTonSweep({ deposit: { key: d.key, seqno: 0, deployed: false, balance: TON_SWEEP_MIN_BALANCE - 1n }, destination: merchant, validUntil: T0 }))).toBe("dust");
		expect(buildTonSweep({ deposit: { key: d.key, seqno: 0, deployed: false, balance: TON_SWEEP_MIN_BALANCE }, destination: merchant, validUntil: T0 }).balance).toBe(TON_SWEEP_MIN_BALANCE);
		const jettonDeposit = { key: d.key, seqno: 0, deployed: false, jettonWallet: merchant, jettonAmount: 5n, tonBalance: JETTON_SWEEP_TON - 1n };
		expect(refusal(() => buildJettonSweep({ deposit: jettonDeposit, destination: merchant, responseDestination: merchant, validUntil: T0 }))).toBe("gas");
		expect(refusal(() => buildTonPayment({ wallet: { key: d.key, version: "v4r2", seqno: 0, deployed: false }, balance: toNano("1"), payee: merchant, amount: toNano("1"), validUntil: T0 }))).toBe("dust");
		expect(refusal(() => buildJettonPayment({ wallet: { key: d.key, version: "v4r2", seqno: 0, deployed: false }, jettonWallet: merchant, jettonBalance: 4n, tonBalance: toNano("1"), payee: merchant, amount: 5n, validUntil: T0 }))).toBe("dust");
		// Wrong key for the address, or an undeployed wallet with a seqno: not signed.
		expect(() => buildTonSweep({ deposit: { key: d.key, address: merchant, seqno: 0, deployed: false, balance: toNano("1") }, destination: merchant, validUntil: T0 })).toThrow(/not the key/);
		expect(() => buildTonSweep({ deposit: { key: d.key, seqno: 2, deployed: false, balance: toNano("1") }, destination: merchant, validUntil: T0 })).toThrow(/seqno 0/);
		// A 64-byte secret key works as its seed does; one whose public half is another key's is refused.
		const pair = keyPairFromSeed(Buffer.from(d.key));
		const full = buildTonSweep({ deposit: { key: new Uint8Array(pair.secretKey), address: d.address, seqno: 0, deployed: false, balance: toNano("1") }, destination: merchant, validUntil: T0 });
		expect(full.hash).toBe(buildTonSweep({ deposit: { key: d.key, seqno: 0, deployed: false, balance: toNano("1") }, destination: merchant, validUntil: T0 }).hash);
		const forged = new Uint8Array(pair.secretKey);
		forged.set(keyPairFromSeed(Buffer.from(MERCHANT_KEY)).publicKey, 32);
		expect(() => buildTonSweep({ deposit: { key: forged, seqno: 0, deployed: false, balance: toNano("1") }, destination: merchant, validUntil: T0 })).toThrow(/not a valid ed25519 secret key/);
		expect(() => buildTonSweep({ deposit: { key: new Uint8Array(31), seqno: 0, deployed: false, balance: toNano("1") }, destination: merchant, validUntil: T0 })).toThrow(/32 or 64 bytes/);
	});

	it("batches: 4 messages per v4R2 external, 255 per v5R1; 255 top-ups run in one transaction", async () => {
		expect([maxTopUpsPerMessage("v4r2"), maxTopUpsPerMessage("v5r1")]).toEqual([MAX_V4R2_MESSAGES, MAX_V5R1_MESSAGES]);
		expect(batches([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
		const { chain, treasury } = await world();
		const sweeper = walletAddress(SWEEPER_KEY, "v5r1");
		await pay(treasury, Address.parseRaw(sweeper), toNano("100"));
		const targets = Array.from({ length: 256 }, (_, i) => ({ address: `0:${(i + 1).toString(16).padStart(64, "0")}`, amount: 1_000_000n }));
		const sw = { key: SWEEPER_KEY, version: "v5r1" as const, seqno: 0, deployed: false };
		expect(() => buildTopUps({ sweeper: sw, deposits: targets, validUntil: T0 + TTL })).toThrow(SweepRefused);
		expect(() => buildTopUps({ sweeper: { ...sw, version: "v4r2" }, deposits: targets.slice(0, 5), validUntil: T0 + TTL })).toThrow(SweepRefused);
		const full = buildTopUps({ sweeper: sw, deposits: targets.slice(0, 255), validUntil: T0 + TTL });
		const r = await chain.sendMessage(Cell.fromBase64(full.boc));
		expect(computeOk(r.transactions[0])).toBe(true);
		expect(r.transactions[0].outMessagesCount).toBe(255);
		console.log(`255 top-ups: ${full.cells} cells, ${full.bits} bits, sweeper tx fee ${r.transactions[0].totalFees.coins}`);
	});
});

describe("landedOutcome: did a landed sweep move its funds (toncenter v3 transaction shapes)", () => {
	const ok = (out: LandedTx["out_msgs"] = [{ opcode: "0x0f8a7ea5" }]): LandedTx => ({ description: { aborted: false, compute_ph: { skipped: false, success: true, exit_code: 0 }, action: { success: true, result_code: 0 } }, out_msgs: out });
	const computeFailed = (exit: number): LandedTx => ({ description: { aborted: true, compute_ph: { skipped: false, success: false, exit_code: exit } }, out_msgs: [{ opcode: "0xffffffff" }] });
	const forwarded = ok([{ opcode: OP_JETTON_INTERNAL_TRANSFER }]);

	it("a TON sweep moved when the deposit's transaction executed and sent its message", () => {
		expect(landedOutcome({ jetton: false, deposit: ok() })).toEqual({ status: "moved" });
		// Accepted, its action skipped (IGNORE_ERRORS): no message left.
		expect(landedOutcome({ jetton: false, deposit: ok([]) })).toMatchObject({ status: "failed", reason: expect.stringMatching(/action skipped/) });
		expect(landedOutcome({ jetton: false, deposit: computeFailed(33) })).toMatchObject({ status: "failed", reason: expect.stringMatching(/exit code 33/) });
		expect(landedOutcome({ jetton: false, deposit: { ...ok(), description: { ...ok().description, action: { success: false, result_code: 37 } } } })).toMatchObject({ status: "failed" });
	});

	it("a jetton sweep moved only when both jetton wallets took it; pending while a hop is not final", () => {
		expect(landedOutcome({ jetton: true, deposit: ok(), jettonWallet: null })).toEqual({ status: "pending" });
		expect(landedOutcome({ jetton: true, deposit: ok(), jettonWallet: forwarded, destination: null })).toEqual({ status: "pending" });
		expect(landedOutcome({ jetton: true, deposit: ok(), jettonWallet: forwarded, destination: ok([]) })).toEqual({ status: "moved" });
		// The deposit's jetton wallet refused (709: not enough TON; -14: out of gas): bounced.
		expect(landedOutcome({ jetton: true, deposit: ok(), jettonWallet: computeFailed(709) })).toMatchObject({ status: "failed", reason: expect.stringMatching(/deposit's jetton wallet did not take the transfer \(exit code 709\)/) });
		// Executed but sent no internal_transfer on: nothing moved either.
		expect(landedOutcome({ jetton: true, deposit: ok(), jettonWallet: ok([{ opcode: "0xd53276db" }]) })).toMatchObject({ status: "failed" });
		expect(landedOutcome({ jetton: true, deposit: ok(), jettonWallet: forwarded, destination: computeFailed(707) })).toMatchObject({ status: "failed", reason: expect.stringMatching(/receiving jetton wallet did not take the transfer \(exit code 707\)/) });
		// The deposit's own message not sent: its jetton wallet is never asked.
		expect(landedOutcome({ jetton: true, deposit: ok([]), jettonWallet: null })).toMatchObject({ status: "failed", reason: expect.stringMatching(/action skipped/) });
	});
});
