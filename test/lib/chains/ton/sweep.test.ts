/**
 * The TON sweep messages (lib/chains/ton/sweep.ts), sent signed to @ton/sandbox: the real TVM
 * (the node's emulator compiled to WASM) in-process, with the default mainnet config's fees.
 * Deposit wallets are the v4R2 wallets the codec derives; the sweeper wallet is a v5R1; the
 * jetton minter and wallets are the reference jetton code shipped in @ton-community/assets-sdk
 * (not the exact USDT-on-TON contract). No database: runs the same in both jest projects.
 */
import { Address, Cell, beginCell, toNano, type Transaction } from "@ton/core";
import { Blockchain, type SandboxContract, type TreasuryContract } from "@ton/sandbox";
import { JettonMinter, JettonWallet } from "@ton-community/assets-sdk";
import { tonCodec } from "../../../../lib/chains/ton/codec";
import {
	JETTON_SWEEP_TON, MAX_V4R2_MESSAGES, MAX_V5R1_MESSAGES, OP_JETTON_EXCESSES, OP_JETTON_TRANSFER, SweepRefused, TON_SWEEP_MIN_BALANCE, batches, buildJettonPayment,
	buildJettonSweep, buildTonPayment, buildTonSweep, buildTopUps, maxTopUpsPerMessage, normalizedHash, sendVerdict, walletAddress, type SignedTonMessage,
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
	expect(normalizedHash(beginCell().store((b) => b.storeBuilder(cell.asBuilder())).endCell())).toBe(m.hash);
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
